"""Unclaimed stakes and winnings (RULES.md §6): collected by the Commissario and deposited,
handed back once to the patron who comes back, in the day's books (its audit stream and its
control register), through the API and the desk's day page."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from audit.models import AuditEvent, UnclaimedDeposit
from audit.reports import registers, unclaimed
from audit.selectors import chain_verify
from config.errors import ApplicationError
from floor import services as floor_services
from floor.roles import Role
from tables import services as table_services
from tables.models import Coup
from tests.audit.conftest import raw_sql, staff_said
from tests.audit.test_reports import _count_all
from tests.audit.test_reports import closed as closed  # the fixtures of the day the reports test
from tests.audit.test_reports import direzione2 as direzione2
from tests.audit.test_reports import media as media
from tests.audit.test_reports import world as world
from tests.factories import CasinoFactory, PatronFactory, SiteFactory, UserFactory

pytestmark = pytest.mark.django_db


def url(day) -> str:
    return f"/api/gaming-days/{day.pk}/unclaimed-deposits/"


def books_events(day) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(stream__name=f"day_books:{day.pk}").order_by("seq"))


def body(world, **extra) -> dict:
    coup = Coup.objects.get(session=world.sessions[0], number=3)
    return {"session": world.sessions[0].pk, "kind": "winnings", "amount": 523_40, "deposited_in": "busta 17",
            "coup": coup.pk, "patron": coup.punta_id, "note": "left after the coup", **extra}  # fmt: skip


def deposit(world, **extra) -> UnclaimedDeposit:
    fields = {"session": world.sessions[0], "by": world.commissario, "kind": "stake", "amount": 100_00,
              "deposited_in": "busta 1", **extra}  # fmt: skip
    return unclaimed.unclaimed_deposit_record(**fields)


# --------------------------------------------------------------------------- the happy path


def test_the_commissario_deposits_winnings_and_the_direzione_hands_them_back(world, api, auditor, direzione):
    r = api(world.commissario).post(url(world.day), body(world), format="json")
    assert r.status_code == 201, r.json()
    got = r.json()
    coup = Coup.objects.get(session=world.sessions[0], number=3)
    assert {k: got[k] for k in ("gaming_day", "session", "table_number", "session_number", "coup", "coup_number",
                                "patron", "kind", "amount", "deposited_in", "note", "recorded_by", "returned")} == {
        "gaming_day": world.day.pk, "session": world.sessions[0].pk, "table_number": 1, "session_number": 1,
        "coup": coup.pk, "coup_number": 3, "patron": coup.punta_id, "kind": "winnings", "amount": 523_40,
        "deposited_in": "busta 17", "note": "left after the coup", "recorded_by": world.commissario.pk,
        "returned": False,
    }  # fmt: skip
    [event] = books_events(world.day)
    assert (event.action, event.subject_id, event.actor_id) == ("unclaimed.deposited", str(got["id"]),
                                                                world.commissario.pk)  # fmt: skip
    assert event.payload["new"]["amount"] == 523_40 and event.payload["new"]["deposited_in"] == "busta 17"

    listed = api(auditor).get("/api/unclaimed-deposits/", {"gaming_day": world.day.pk, "returned": "false"})
    assert listed.status_code == 200 and [d["id"] for d in listed.json()["results"]] == [got["id"]]
    assert api(auditor).get("/api/unclaimed-deposits/", {"session": world.sessions[1].pk}).json()["count"] == 0

    back = api(direzione).post(f"/api/unclaimed-deposits/{got['id']}/return/",
                               {"patron": coup.punta_id, "note": "came back the next evening"}, format="json")  # fmt: skip
    assert back.status_code == 200, back.json()
    assert back.json()["returned"] is True and back.json()["returned_by"] == direzione.pk
    assert back.json()["returned_to"] == coup.punta.full_name and back.json()["returned_patron"] == coup.punta_id
    assert [e.action for e in books_events(world.day)] == ["unclaimed.deposited", "unclaimed.returned"]
    assert api(auditor).get("/api/unclaimed-deposits/", {"returned": "true"}).json()["count"] == 1
    assert chain_verify(streams=[f"day_books:{world.day.pk}"]).ok
    assert registers.books_verify(gaming_day_id=world.day.pk) == []
    assert unclaimed.day_totals(gaming_day_id=world.day.pk) == {
        "count": 1, "total": 523_40, "stakes": 0, "winnings": 523_40, "outstanding": 0, "returned": 523_40}  # fmt: skip


def test_the_commissario_may_hand_one_back_too_and_only_once(world, api):
    d = deposit(world)
    path = f"/api/unclaimed-deposits/{d.pk}/return/"
    assert api(world.commissario).post(path, {"returned_to": "Mario Bianchi, CI AB123"}, format="json").status_code == 200
    events = len(books_events(world.day))
    again = api(world.commissario).post(path, {"returned_to": "someone else"}, format="json")
    assert again.status_code == 409 and again.json()["error"]["code"] == "already_returned"
    d.refresh_from_db()
    assert d.returned_to == "Mario Bianchi, CI AB123" and len(books_events(world.day)) == events


# --------------------------------------------------------------------------- refusals


def _other_day_session(world):
    casino = CasinoFactory(code="other")
    day = floor_services.gaming_day_open(casino=casino, by=world.commissario)
    table = floor_services.table_create(casino=casino, site=SiteFactory(casino=casino), number=1, by=world.direzione)
    session = floor_services.table_session_open(
        table=table, by=world.commissario, capo_partita=UserFactory(username="capo_x", roles=[Role.CAPO_PARTITA]),
        changeur=UserFactory(username="changeur_x", roles=[Role.CHANGEUR]), shoe_number="X", minimum=100_00,
    )  # fmt: skip
    return day, session


CREATE_REFUSALS = [
    ("amount zero", {"amount": 0}, 400, "invalid_input"),
    ("amount negative", {"amount": -500}, 400, "invalid_input"),
    ("amount not whole", {"amount": 10.5}, 400, "invalid_input"),
    ("amount a boolean", {"amount": True}, 400, "invalid_input"),
    ("amount past the maximum", {"amount": unclaimed.MAX_DEPOSIT_CENTS + 1}, 400, "invalid_input"),
    ("unknown kind", {"kind": "tip"}, 400, "invalid_input"),
    ("no place", {"deposited_in": "\u200b"}, 400, "deposit_place_required"),  # (DRF strips spaces itself)
    ("place too long", {"deposited_in": "x" * 121}, 400, "invalid_input"),
    ("unknown patron", {"patron": 99999999}, 400, "unknown_patron"),
    ("unknown coup", {"coup": 99999999}, 400, "unknown_coup"),
    ("unknown session", {"session": 99999999}, 400, "unknown_session"),
    ("unknown field", {"amout": 100}, 400, "invalid_input"),
]


@pytest.mark.parametrize(("change", "status", "code"), [c[1:] for c in CREATE_REFUSALS],
                         ids=[c[0] for c in CREATE_REFUSALS])  # fmt: skip
def test_a_refused_deposit_writes_nothing(world, api, change, status, code):
    before = AuditEvent.objects.count()
    r = api(world.commissario).post(url(world.day), body(world, **change), format="json")
    assert (r.status_code, r.json()["error"]["code"]) == (status, code), r.json()
    assert not UnclaimedDeposit.objects.exists() and AuditEvent.objects.count() == before


def test_a_coup_of_another_session_and_a_session_of_another_day_are_refused(world, api):
    other_coup = Coup.objects.get(session=world.sessions[1])
    r = api(world.commissario).post(url(world.day), body(world, coup=other_coup.pk), format="json")
    assert (r.status_code, r.json()["error"]["code"]) == (400, "coup_not_of_session")
    assert r.json()["error"]["details"] == {"coup": other_coup.pk, "session": world.sessions[0].pk}
    _, elsewhere = _other_day_session(world)
    before = AuditEvent.objects.count()
    r = api(world.commissario).post(url(world.day), body(world, session=elsewhere.pk, coup=None), format="json")
    assert (r.status_code, r.json()["error"]["code"]) == (400, "session_not_of_day")
    assert not UnclaimedDeposit.objects.exists() and AuditEvent.objects.count() == before


def test_a_coup_still_in_play_has_no_unclaimed_stakes_yet(world, api):
    session = world.sessions[1]
    session.refresh_from_db()  # (its Capo Partita was relieved)
    coup = table_services.coup_open(session=session, by=session.capo_partita)
    r = api(world.commissario).post(url(world.day), body(world, session=world.sessions[1].pk, coup=coup.pk), format="json")
    assert (r.status_code, r.json()["error"]["code"]) == (409, "coup_in_play")
    assert not UnclaimedDeposit.objects.exists()


@pytest.mark.parametrize("role", [Role.AUDITOR, Role.DIREZIONE, Role.CAPO_PARTITA, Role.CHANGEUR])
def test_only_the_commissario_records_a_deposit(world, api, user_factory, role):
    who = user_factory(f"someone_{role}", role)
    before = AuditEvent.objects.count()
    r = api(who).post(url(world.day), body(world), format="json")
    assert (r.status_code, r.json()["error"]["code"]) == (403, "permission_denied")
    assert not UnclaimedDeposit.objects.exists() and AuditEvent.objects.count() == before
    with pytest.raises(ApplicationError) as exc:  # the service holds the rule for any caller
        deposit(world, by=who)
    assert exc.value.code == "permission_denied"


def test_readers_list_and_only_the_commissario_or_direzione_hand_back(world, api, auditor, capo_partita, outsider):
    d = deposit(world)
    assert api(auditor).get("/api/unclaimed-deposits/").status_code == 200
    for user in (capo_partita, outsider):
        assert api(user).get("/api/unclaimed-deposits/").status_code == 403
    for user in (auditor, capo_partita):
        r = api(user).post(f"/api/unclaimed-deposits/{d.pk}/return/", {"returned_to": "x"}, format="json")
        assert (r.status_code, r.json()["error"]["code"]) == (403, "permission_denied")
    r = api(world.commissario).post(f"/api/unclaimed-deposits/{d.pk}/return/", {}, format="json")
    assert (r.status_code, r.json()["error"]["code"]) == (400, "claimant_required")
    r = api(world.commissario).post(f"/api/unclaimed-deposits/{d.pk}/return/", {"patron": 99999999}, format="json")
    assert (r.status_code, r.json()["error"]["code"]) == (400, "unknown_patron")
    d.refresh_from_db()
    assert not d.returned and [e.action for e in books_events(world.day)] == ["unclaimed.deposited"]


def test_a_list_filter_that_is_no_id_is_refused(world, api, auditor):
    r = api(auditor).get("/api/unclaimed-deposits/", {"session": "1.5"})
    assert (r.status_code, r.json()["error"]["code"]) == (400, "invalid_input")


# --------------------------------------------------------------------------- one transaction


def test_a_deposit_whose_event_fails_leaves_no_row(world, monkeypatch):
    def broken(**kwargs):
        raise RuntimeError("the trail is unreachable")

    monkeypatch.setattr(unclaimed, "record", broken)
    with pytest.raises(RuntimeError):
        deposit(world)
    assert not UnclaimedDeposit.objects.exists() and books_events(world.day) == []


def test_a_return_whose_event_fails_leaves_the_deposit_outstanding(world, monkeypatch):
    d = deposit(world)

    def broken(**kwargs):
        raise RuntimeError("the trail is unreachable")

    monkeypatch.setattr(unclaimed, "record", broken)
    with pytest.raises(RuntimeError):
        unclaimed.unclaimed_deposit_return(deposit=d, by=world.commissario, returned_to="Mario")
    d.refresh_from_db()
    assert not d.returned and d.returned_to == "" and len(books_events(world.day)) == 1


# --------------------------------------------------------------------------- the control register


def test_the_register_carries_the_deposits_and_a_later_one_makes_it_stale(closed, api, direzione, direzione2):
    deposit(closed, kind="stake", amount=100_00)
    _count_all(closed, direzione, direzione2)
    reg_url = f"/api/gaming-days/{closed.day.pk}/control-register/"
    reg = api(direzione).post(reg_url).json()
    assert [line.get("unclaimed") for line in reg["lines"]] == [
        {"count": 1, "stakes": 100_00, "winnings": 0, "total": 100_00}, None]  # fmt: skip
    assert reg["total"] == sum(line["carried"] for line in reg["lines"])  # the cagnotte's total, deposits apart
    assert api(direzione).post(f"/api/control-registers/{reg['id']}/sign/").status_code == 200
    # A deposit recorded after the first signature: the register no longer says the books.
    deposit(closed, kind="winnings", amount=50_00, session=closed.sessions[1])
    r = api(direzione2).post(f"/api/control-registers/{reg['id']}/sign/")
    assert (r.status_code, r.json()["error"]["code"]) == (409, "register_stale")
    assert api(direzione).get(reg_url).json()["agrees_with_counts"] is False
    again = api(direzione).post(reg_url)  # brought up to date: the first signature withdrawn
    assert again.status_code == 200 and again.json()["status"] == "draft"
    assert again.json()["lines"][1]["unclaimed"] == {"count": 1, "stakes": 0, "winnings": 50_00, "total": 50_00}
    assert api(direzione).post(f"/api/control-registers/{reg['id']}/sign/").status_code == 200
    assert api(direzione2).post(f"/api/control-registers/{reg['id']}/sign/").status_code == 200
    # Signed by both: the day's books are final.
    before = AuditEvent.objects.count()
    r = api(closed.commissario).post(url(closed.day), body(closed), format="json")
    assert (r.status_code, r.json()["error"]["code"]) == (409, "books_signed")
    assert UnclaimedDeposit.objects.count() == 2 and AuditEvent.objects.count() == before
    # A patron may still come back for his money.
    first = UnclaimedDeposit.objects.order_by("pk").first()
    back = api(closed.commissario).post(f"/api/unclaimed-deposits/{first.pk}/return/", {"returned_to": "M. Rossi"},
                                        format="json")  # fmt: skip
    assert back.status_code == 200
    assert registers.register_agrees(registers.current_register(gaming_day_id=closed.day.pk))


def test_a_deposit_edited_behind_the_services_is_named_and_no_register_is_written_over_it(
    closed, api, direzione, direzione2
):
    d = deposit(closed)
    _count_all(closed, direzione, direzione2)
    raw_sql("UPDATE audit_unclaimeddeposit SET amount = 1 WHERE id = %s", (d.pk,))
    assert registers.books_verify(gaming_day_id=closed.day.pk) == [
        {"code": "deposit_not_as_recorded", "deposit": d.pk, "table_number": 1}]  # fmt: skip
    before = AuditEvent.objects.count()
    r = api(direzione).post(f"/api/gaming-days/{closed.day.pk}/control-register/")
    assert (r.status_code, r.json()["error"]["code"]) == (409, "deposit_not_as_recorded")
    assert r.json()["error"]["details"] == {"deposits": [d.pk]} and AuditEvent.objects.count() == before


# --------------------------------------------------------------------------- reads stay flat


def _queries(run) -> int:
    with CaptureQueriesContext(connection) as ctx:
        run()
    return len(ctx.captured_queries)


def test_the_list_and_the_page_take_as_many_queries_for_many_deposits_as_for_one(world, api, auditor, client):
    client.force_login(world.commissario)
    deposit(world, patron=PatronFactory())
    api(auditor).get("/api/unclaimed-deposits/")  # (the first read caches the reader's roles)
    client.get(f"/desk/days/{world.day.pk}/")
    listing = _queries(lambda: api(auditor).get("/api/unclaimed-deposits/").json())
    page = _queries(lambda: client.get(f"/desk/days/{world.day.pk}/"))
    for n in range(6):
        d = deposit(world, session=world.sessions[n % 2], patron=PatronFactory(), amount=10_00 + n)
        if n % 2:
            unclaimed.unclaimed_deposit_return(deposit=d, by=world.direzione, returned_to="Mario")
    assert api(auditor).get("/api/unclaimed-deposits/").json()["count"] == 7
    assert _queries(lambda: api(auditor).get("/api/unclaimed-deposits/").json()) == listing
    assert _queries(lambda: client.get(f"/desk/days/{world.day.pk}/")) == page


# --------------------------------------------------------------------------- the desk's page


def _section(html: str) -> str:
    return html.split('<section class="unclaimed"', 1)[1].split("</section>", 1)[0]


def test_the_commissario_records_and_hands_back_on_the_day_page(world, client, auditor):
    client.force_login(world.commissario)
    page = client.get(f"/desk/days/{world.day.pk}/").content.decode()
    assert f'action="/desk/days/{world.day.pk}/unclaimed/"' in _section(page)
    patron = PatronFactory()
    floor_services.seat_assign(session=world.sessions[1], patron=patron, standing=True, by=world.commissario)
    r = client.post(f"/desk/days/{world.day.pk}/unclaimed/", {
        "session": world.sessions[0].pk, "kind": "stake", "amount": "150,50", "coup": "2", "patron": str(patron.pk),
        "deposited_in": "ricevuta 44", "note": "", "idempotency_key": "a" * 32,
    }, HTTP_ACCEPT_LANGUAGE="it")  # fmt: skip
    html = r.content.decode()
    assert r.status_code == 200, html
    d = UnclaimedDeposit.objects.get()
    assert (d.amount, d.kind, d.coup.number, d.patron, d.deposited_in) == (150_50, "stake", 2, patron, "ricevuta 44")
    assert "Deposito registrato: €\xa0150,50, tavolo 1." in html
    section = _section(html)
    assert "Puntate e vincite non riscosse" in section and "ricevuta 44" in section
    assert re.search(r'data-total="outstanding">€\xa0150,50', section)
    # A refusal, in the page's words, and nothing written.
    r = client.post(f"/desk/days/{world.day.pk}/unclaimed/", {
        "session": world.sessions[0].pk, "kind": "stake", "amount": "0", "deposited_in": "x",
    }, HTTP_ACCEPT_LANGUAGE="it")  # fmt: skip
    assert r.status_code == 400 and "Inserire un importo maggiore di zero" in r.content.decode()
    r = client.post(f"/desk/unclaimed/{d.pk}/return/", {"returned_to": "", "patron": str(patron.pk)})
    assert r.status_code == 200
    d.refresh_from_db()
    assert d.returned_to == patron.full_name and d.returned_by == world.commissario
    assert re.search(r'data-total="returned">€\xa0150.50', _section(r.content.decode()))
    # The auditor reads; he has no form, and a post of his is refused.
    client.force_login(auditor)
    section = _section(client.get(f"/desk/days/{world.day.pk}/").content.decode())
    assert "<form" not in section and "ricevuta 44" in section
    assert client.post(f"/desk/days/{world.day.pk}/unclaimed/", {"session": world.sessions[0].pk}).status_code == 403
    assert UnclaimedDeposit.objects.count() == 1


ENGLISH = re.compile(r"\b(the|of|and|by|to|stake|stakes|winnings|deposited|outstanding|handed|back|table|session|"
                     r"record|kind|amount|patron|optional|coup)\b", re.IGNORECASE)  # fmt: skip


def test_the_section_in_italian_is_all_italian(world, client):
    d = deposit(world, note="nota", patron=PatronFactory(first_name="Anna", last_name="Neri"))
    deposit(world, kind="winnings")
    unclaimed.unclaimed_deposit_return(deposit=d, by=world.direzione, returned_to="Anna Neri")
    client.force_login(world.commissario)
    section = _section(client.get(f"/desk/days/{world.day.pk}/", HTTP_ACCEPT_LANGUAGE="it").content.decode())
    words = re.sub(r"<[^>]+>", " ", re.sub(r'<(option|input)[^>]*value="[^"]*"', "<x", section))
    found = ENGLISH.findall(words)
    assert found == [], found
    for said in ("Registra un deposito", "puntata", "vincita", "da riscuotere", "restituito", "2 depositi"):
        assert said in section, said


# --------------------------------------------------------------------------- the end-of-day report

SECTION = "Unclaimed stakes and winnings (RULES.md §6)"
HEADER = ["deposit", "table", "session", "coup", "patron", "kind", "amount_eur", "deposited_in", "note",
          "recorded_by", "recorded_at", "returned_to", "returned_by", "returned_at", "returned_note"]  # fmt: skip
NONE_NOTE = "No unclaimed stake or winnings was deposited on this day."


def _three_deposits(world, direzione):
    """Winnings of a coup whose patron is known; a stake of the other table with neither coup
    nor patron; a stake handed back before the close."""
    coup = Coup.objects.get(session=world.sessions[0], number=3)
    won = deposit(world, kind="winnings", amount=523_40, deposited_in="busta 17", coup=coup, patron=coup.punta,
                  note="left after the coup")  # fmt: skip
    stake = deposit(world, session=world.sessions[1], amount=100_00, deposited_in="ricevuta 4")
    back = deposit(world, amount=50_00, deposited_in="busta 18")
    back = unclaimed.unclaimed_deposit_return(deposit=back, by=direzione, returned_to="M. Rossi", note="same night")
    return coup, won, stake, back


def _report_files(report):
    from tests.audit.test_reports import _file

    return {fmt: _file(report, fmt).read_bytes() for fmt in ("csv", "xlsx", "pdf")}


def _xlsx_section(data: bytes):
    """The section's sheet (found by the Summary's listing), its rows and the Summary's facts."""
    import io

    import openpyxl

    wb = openpyxl.load_workbook(io.BytesIO(data))
    listing = {row[0]: row[1:] for row in wb["Summary"].iter_rows(values_only=True) if row and row[0]}
    sheet, rows = listing[SECTION][:2]
    return list(wb[sheet].iter_rows(values_only=True)), rows, listing


def test_the_report_lists_the_days_deposits_alike_in_its_summary_csv_xlsx_and_pdf(
    world, media, direzione, tmp_path, django_capture_on_commit_callbacks
):
    from decimal import Decimal

    from audit.models import DayReport
    from tests.audit.test_exports import csv_blocks, pdf_text
    from tests.audit.test_reports import close

    coup, won, stake, back = _three_deposits(world, direzione)
    close(world, django_capture_on_commit_callbacks)
    report = DayReport.objects.get(gaming_day=world.day, version=1)
    assert report.status == "done", report.error
    held = report.summary["unclaimed"]
    assert {k: v for k, v in held.items() if k != "as_recorded"} == {
        "count": 3, "stakes": 150_00, "winnings": 523_40, "total": 673_40, "outstanding": 623_40, "returned": 50_00}
    assert sorted(held["as_recorded"]) == sorted(str(d.pk) for d in (won, stake, back))
    # Its deposits live in the day's books stream: version 1 seals it for them.
    assert f"day_books:{world.day.pk}" in report.sealed_streams
    files = _report_files(report)
    name = coup.punta.full_name
    # Who recorded and handed back each deposit, as the report names every member of staff.
    user, boss = staff_said(world.commissario), staff_said(direzione)
    # By table, session and time: the winnings and the returned stake at table 1, the stake at table 2.
    expected = [
        [str(won.pk), "1", "1", "3", name, "winnings", "523.40", "busta 17", "left after the coup", user, "", "", ""],
        [str(back.pk), "1", "1", "", "", "stake", "50.00", "busta 18", "", user, "M. Rossi", boss, "same night"],
        [str(stake.pk), "2", "1", "", "", "stake", "100.00", "ricevuta 4", "", user, "", "", ""],
    ]  # fmt: skip

    def without_times(row):
        return row[:10] + row[11:13] + row[14:]

    preamble, blocks = csv_blocks(files["csv"])
    block = blocks[SECTION]
    assert block[0] == ["# Collected by the Commissario and deposited: 3, 673.40 EUR (stakes 150.00 EUR, winnings "
                        "523.40 EUR); outstanding 623.40 EUR, handed back 50.00 EUR. As the books stood when this "
                        "version was built: a deposit handed back since shows here as outstanding."]  # fmt: skip
    assert block[1] == HEADER
    assert [without_times(row) for row in block[2:]] == expected
    assert all(row[10] for row in block[2:]) and [bool(row[13]) for row in block[2:]] == [False, True, False]
    for fact in (["# Unclaimed stakes and winnings deposited", "3"], ["# Unclaimed stakes", "150.00 EUR"],
                 ["# Unclaimed winnings", "523.40 EUR"], ["# Unclaimed, outstanding when built", "623.40 EUR"],
                 ["# Unclaimed, handed back when built", "50.00 EUR"]):  # fmt: skip
        assert fact in preamble, fact

    rows, count, listing = _xlsx_section(files["xlsx"])
    assert count == 3 and rows[0] == ("Deposit", "Table", "Session", "Coup", "Patron", "Kind", "Amount",
                                      "Deposited in", "Note", "Recorded by", "Recorded at", "Handed back to",
                                      "Handed back by", "Handed back at", "Return note")  # fmt: skip

    def xlsx_text(row):
        cells = ["" if v is None else f"{Decimal(str(v)):.2f}" if i == 6 else str(v) for i, v in enumerate(row)]
        return without_times(cells)

    assert [xlsx_text(row) for row in rows[1:]] == expected
    assert [type(row[10]).__name__ for row in rows[1:]] == ["datetime"] * 3
    assert [row[13] is not None for row in rows[1:]] == [False, True, False]
    assert listing["Unclaimed stakes and winnings deposited"][0] == 3
    assert Decimal(str(listing["Unclaimed, outstanding when built"][0])) == Decimal("623.40")

    text = pdf_text(files["pdf"], tmp_path, drawn_order=True)
    if text is None:
        pytest.skip("pypdf is not installed")
    for said in (SECTION, "Handed back to", "busta 17", "ricevuta 4", "left after the coup", "M. Rossi", "523.40",
                 "same night", name, "Unclaimed, outstanding when built 623.40 EUR",
                 "Unclaimed stakes and winnings deposited 3", "outstanding 623.40 EUR, handed back 50.00 EUR"):
        assert said in text, said


def test_a_day_without_deposits_says_there_are_none(closed, tmp_path):
    from audit.models import DayReport
    from tests.audit.test_exports import csv_blocks, pdf_text

    report = DayReport.objects.get(gaming_day=closed.day, version=1)
    assert report.summary["unclaimed"] == {"count": 0, "stakes": 0, "winnings": 0, "total": 0, "outstanding": 0,
                                           "returned": 0, "as_recorded": {}}  # fmt: skip
    assert f"day_books:{closed.day.pk}" not in report.sealed_streams  # version 1 seals no books without them
    files = _report_files(report)
    preamble, blocks = csv_blocks(files["csv"])
    assert blocks[SECTION] == [[f"# {NONE_NOTE}"], HEADER]
    assert ["# Unclaimed stakes and winnings deposited", "0"] in preamble
    assert ["# Unclaimed, outstanding when built", "0.00 EUR"] in preamble
    rows, count, listing = _xlsx_section(files["xlsx"])
    # No rows: under the header, what the PDF says (its "No rows.", after the note the CSV has too).
    assert count == 0 and len(rows) == 2 and rows[0][0] == "Deposit"
    assert rows[1][0] == f"No rows. {NONE_NOTE}" and set(rows[1][1:]) <= {None}
    assert listing["Unclaimed stakes and winnings deposited"][0] == 0
    text = pdf_text(files["pdf"], tmp_path, drawn_order=True)
    if text is not None:
        assert f"{SECTION} {NONE_NOTE}" in text and "Return note No rows." in text


def test_version_2_lists_a_deposit_recorded_after_the_close_and_not_a_return_after_its_build(
    world, media, api, auditor, direzione, direzione2, django_capture_on_commit_callbacks
):
    """Version 1 lists what was deposited by its build; a deposit recorded after the close goes
    into the control register and so into version 2, built at its second signature. A patron
    handed his money after that build: version 2 still says what the day's books were (the
    return is a later event of its sealed books stream, not a difference)."""
    from audit.models import DayReport
    from tests.audit.test_reports import close

    first = deposit(world, amount=70_00)
    close(world, django_capture_on_commit_callbacks)
    late = deposit(world, kind="winnings", amount=30_00, session=world.sessions[1], deposited_in="busta 20")
    _count_all(world, direzione, direzione2)
    reg = registers.control_register_prepare(gaming_day=world.day, by=direzione)
    reg = registers.control_register_sign(register=reg, by=direzione)
    with django_capture_on_commit_callbacks(execute=True):
        registers.control_register_sign(register=reg, by=direzione2)
    v1, v2 = DayReport.objects.filter(gaming_day=world.day).order_by("version")
    assert v2.status == "done", v2.error
    assert sorted(v1.summary["unclaimed"]["as_recorded"]) == [str(first.pk)]
    assert sorted(v2.summary["unclaimed"]["as_recorded"], key=int) == [str(first.pk), str(late.pk)]
    assert (v2.summary["unclaimed"]["total"], v2.summary["unclaimed"]["outstanding"]) == (100_00, 100_00)

    unclaimed.unclaimed_deposit_return(deposit=late, by=direzione, returned_to="M. Bianchi")
    for report in (v1, v2):
        body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
        assert body["ok"] is True and body["reasons"] == [], body["reasons"]
        assert body["later_events"][f"day_books:{world.day.pk}"] >= 1
    v2.refresh_from_db()
    assert v2.summary["unclaimed"]["outstanding"] == 100_00  # as built
    from tests.audit.test_exports import csv_blocks
    from tests.audit.test_reports import _file

    _preamble, blocks = csv_blocks(_file(v2, "csv").read_bytes())
    assert [(row[0], row[11]) for row in blocks[SECTION][2:]] == [(str(first.pk), ""), (str(late.pk), "")]


def test_a_deposit_edited_in_sql_before_the_build_is_named_by_the_reports_verification(
    world, media, api, auditor, django_capture_on_commit_callbacks
):
    """The report printed the edited amount; once the row is put back the books' own check
    passes, and only the report's rows held to the trail as of its build name it. An honest
    report whose deposit is edited afterwards: the books' check names the row, the report's
    rows are as the trail said."""
    from audit.models import DayReport
    from audit.views import _explain
    from tests.audit.test_reports import close

    d = deposit(world, amount=100_00)
    honest = deposit(world, session=world.sessions[1], amount=20_00)
    raw_sql("UPDATE audit_unclaimeddeposit SET amount = 1 WHERE id = %s", (d.pk,))
    close(world, django_capture_on_commit_callbacks)
    report = DayReport.objects.get(gaming_day=world.day, version=1)
    assert report.status == "done", report.error
    assert report.summary["unclaimed"]["stakes"] == 20_01  # as the row said at the build

    def verify() -> dict:
        return api(auditor).post(f"/api/reports/{report.pk}/verify/").json()

    mismatch = {"code": "unclaimed_mismatch", "deposit": d.pk, "table": 1, "listed_in_report": True,
                "recorded_in_trail": True}  # fmt: skip
    books = {"code": "books_mismatch", "problem": "deposit_not_as_recorded", "deposit": d.pk, "table_number": 1}
    assert verify()["reasons"] == [mismatch, books]
    raw_sql("UPDATE audit_unclaimeddeposit SET amount = 10000 WHERE id = %s", (d.pk,))
    body = verify()
    assert body["ok"] is False and body["reasons"] == [mismatch]
    assert _explain(body)["lines"] == [
        f"Table 1, unclaimed deposit {d.pk}: the report lists it otherwise than the audit trail recorded it when the "
        "report was built."]  # fmt: skip
    # After the build: the row, not the report.
    raw_sql("UPDATE audit_unclaimeddeposit SET deposited_in = 'busta 99' WHERE id = %s", (honest.pk,))
    assert verify()["reasons"] == [mismatch, {**books, "deposit": honest.pk, "table_number": 2}]
    # A deposit the trail recorded and the report does not list (its row deleted before the build).
    report.summary["unclaimed"]["as_recorded"].pop(str(honest.pk))
    from audit.reports.services import _unclaimed_as_built

    assert _unclaimed_as_built(report)[-1] == {"code": "unclaimed_mismatch", "deposit": honest.pk, "table": 2,
                                               "listed_in_report": False, "recorded_in_trail": True}  # fmt: skip
