"""The count of a closed session's cash drawer (tables.services.cash_count, tables/api/cash.py):
the Commissario or the Direzione counts it against the changeur's register, the server computes
the expected cash and the difference, a mistake is corrected by a new count with its reason,
each with its event; every refusal writes nothing."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from audit.models import AuditEvent
from audit.reports import registers
from audit.services import books_stream
from floor import services as floor_services
from floor.roles import Role
from tables import report_selectors, services
from tables.models import CashCount
from tables.report_selectors import cash_count_payload

from .conftest import Tablet

pytestmark = pytest.mark.django_db


@pytest.fixture
def game(make_game):
    return make_game("venezia")


def url(game) -> str:
    return f"/api/sessions/{game.session.pk}/cash-count/"


def correct_url(count_id: int) -> str:
    return f"/api/cash-counts/{count_id}/correct/"


def events(game, action: str) -> list[dict]:
    return [
        e.payload
        for e in AuditEvent.objects.filter(stream__name=game.session.audit_stream, action=action).order_by(
            "seq"
        )
    ]


def register(game, changeur) -> None:
    """Buy-ins 700 + 300, a cash-out 250, a voided buy-in of 90: net 750.00 EUR."""
    tablet = Tablet(changeur)
    cash = f"/api/sessions/{game.session.pk}/cash-exchanges/"
    tablet.post(cash, {"direction": "buy_in", "amount": 700_00})
    tablet.post(cash, {"direction": "buy_in", "amount": 300_00})
    tablet.post(cash, {"direction": "cash_out", "amount": 250_00})
    wrong = tablet.post(cash, {"direction": "buy_in", "amount": 90_00}).json()["exchange"]
    assert (
        tablet.post(f"/api/cash-exchanges/{wrong['id']}/void/", {"reason": "typed twice"}).status_code == 200
    )


@pytest.fixture
def closed(game, changeur, commissario):
    register(game, changeur)
    floor_services.table_session_close(session=game.session, by=commissario)
    return game


# --------------------------------------------------------------------------- the happy path


def test_the_commissario_counts_the_drawer_with_the_exact_figures_and_its_event(
    closed, commissario, changeur
):
    r = Tablet(commissario).post(
        url(closed), {"float_issued": 2_000_00, "counted": 2_740_50, "note": "slip 17"}
    )
    assert r.status_code == 201, r.json()
    body = r.json()
    count = body["in_force"]
    assert body["session"] == closed.session.pk and body["history"] == [count]
    assert (count["float_issued"], count["net"], count["expected"], count["counted"], count["difference"]) == (
        2_000_00, 750_00, 2_750_00, 2_740_50, -9_50
    )  # fmt: skip
    assert (count["counted_by"], count["note"], count["corrects"], count["corrected_by"], count["in_force"]) == (
        commissario.pk, "slip 17", None, None, True
    )  # fmt: skip
    row = CashCount.objects.get()
    assert (row.session_id, row.float_issued, row.net, row.expected, row.counted, row.counted_by_id) == (
        closed.session.pk, 2_000_00, 750_00, 2_750_00, 2_740_50, commissario.pk
    )  # fmt: skip
    said = events(closed, "cash.drawer_counted")
    assert said == [{"old": None, "new": {
        "count": row.pk, "session": closed.session.pk, "float_issued": 2_000_00, "net": 750_00,
        "expected": 2_750_00, "counted": 2_740_50, "difference": -9_50, "counted_by": commissario.pk,
        "counted_at": row.counted_at.isoformat(), "note": "slip 17", "corrects": None,
    }}]  # fmt: skip
    event = AuditEvent.objects.get(action="cash.drawer_counted")
    assert event.actor_id == commissario.pk and event.subject_id == str(row.pk)
    # whoever reads the register reads it: its changeur too
    assert Tablet(changeur).get(url(closed)).json() == body


def test_the_direzione_counts_a_drawer_without_a_float_and_finds_a_surplus(closed, direzione):
    r = Tablet(direzione).post(url(closed), {"float_issued": 0, "counted": 760_00})
    assert r.status_code == 201, r.json()
    assert (r.json()["in_force"]["expected"], r.json()["in_force"]["difference"]) == (750_00, 10_00)


def test_a_session_with_no_exchange_expects_its_float(game, commissario):
    floor_services.table_session_close(session=game.session, by=commissario)
    r = Tablet(commissario).post(url(game), {"float_issued": 500_00, "counted": 500_00})
    assert (
        r.status_code == 201 and r.json()["in_force"]["net"] == 0 and r.json()["in_force"]["difference"] == 0
    )


def test_a_correction_supersedes_the_count_in_force_and_keeps_it(closed, commissario, direzione, auditor):
    first = Tablet(commissario).post(url(closed), {"float_issued": 2_000_00, "counted": 2_740_50}).json()
    first_id = first["in_force"]["id"]
    r = Tablet(direzione).post(
        correct_url(first_id), {"counted": 2_750_00, "reason": "a 10 found under the tray"}
    )
    assert r.status_code == 201, r.json()
    body = r.json()
    new = body["in_force"]
    assert (new["float_issued"], new["expected"], new["counted"], new["difference"]) == (
        2_000_00,
        2_750_00,
        2_750_00,
        0,
    )
    assert (new["corrects"], new["note"], new["counted_by"]) == (
        first_id,
        "a 10 found under the tray",
        direzione.pk,
    )
    old = body["history"][0]
    assert (old["id"], old["counted"], old["in_force"], old["corrected_by"]) == (
        first_id,
        2_740_50,
        False,
        new["id"],
    )
    assert [c["id"] for c in body["history"]] == [first_id, new["id"]]
    assert CashCount.objects.count() == 2  # the first row kept, unchanged
    assert CashCount.objects.get(pk=first_id).counted == 2_740_50
    said = events(closed, "cash.drawer_count_corrected")
    assert len(said) == 1 and said[0]["reason"] == "a 10 found under the tray"
    assert (said[0]["old"]["count"], said[0]["old"]["counted"], said[0]["old"]["difference"]) == (
        first_id, 2_740_50, -9_50
    )  # fmt: skip
    assert (said[0]["new"]["count"], said[0]["new"]["corrects"], said[0]["new"]["counted"]) == (
        new["id"], first_id, 2_750_00
    )  # fmt: skip
    assert Tablet(auditor).get(url(closed)).json() == body
    # the float alone, on the count now in force
    r = Tablet(commissario).post(correct_url(new["id"]), {"float_issued": 1_990_50, "reason": "slip misread"})
    assert r.status_code == 201, r.json()
    third = r.json()["in_force"]
    assert (third["float_issued"], third["expected"], third["counted"], third["difference"]) == (
        1_990_50, 2_740_50, 2_750_00, 9_50
    )  # fmt: skip


def test_a_replay_with_the_same_key_counts_once(closed, commissario):
    tablet = Tablet(commissario)
    body = {"float_issued": 100_00, "counted": 850_00}
    first = tablet.post(url(closed), body, key="drawer-1")
    again = tablet.post(url(closed), body, key="drawer-1")
    assert first.status_code == again.status_code == 201 and first.json() == again.json()
    assert CashCount.objects.count() == 1 and len(events(closed, "cash.drawer_counted")) == 1
    r = tablet.post(url(closed), body, key=False)
    assert (r.status_code, r.json()["error"]["code"]) == (400, "idempotency_key_required")


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("who", ["changeur", "capo_partita", "auditor", "outsider"])
def test_only_the_commissario_or_the_direzione_counts(closed, who, request, refused_api):
    user = request.getfixturevalue(who)
    error = refused_api(403, "permission_denied",
                        lambda: Tablet(user).post(url(closed), {"float_issued": 0, "counted": 750_00}))  # fmt: skip
    assert CashCount.objects.count() == 0 and error


@pytest.mark.parametrize("who", ["changeur", "capo_partita", "auditor"])
def test_only_the_commissario_or_the_direzione_corrects(closed, commissario, who, request, refused_api):
    count = services.cash_count_record(session=closed.session, by=commissario, float_issued=0, counted=750_00)
    user = request.getfixturevalue(who)
    refused_api(403, "permission_denied",
                lambda: Tablet(user).post(correct_url(count.pk), {"counted": 1, "reason": "x"}))  # fmt: skip
    assert CashCount.objects.count() == 1


def test_the_service_refuses_the_changeur_and_the_capo_partita(closed, changeur, capo_partita, refused):
    for user in (changeur, capo_partita):
        refused("permission_denied", services.cash_count_record, session=closed.session, by=user, float_issued=0,
                counted=1)  # fmt: skip


@pytest.mark.parametrize("interrupted", [False, True])
def test_a_session_still_in_play_is_not_counted(game, commissario, interrupted, refused_api):
    if interrupted:
        floor_services.table_session_interrupt(session=game.session, by=commissario, reason="pause")
    error = refused_api(409, "session_not_closed",
                        lambda: Tablet(commissario).post(url(game), {"float_issued": 0, "counted": 0}))  # fmt: skip
    assert error["details"]["status"] == ("interrupted" if interrupted else "open")


def test_a_second_count_is_refused_the_first_stands(closed, commissario, direzione, refused_api):
    first = Tablet(commissario).post(url(closed), {"float_issued": 0, "counted": 750_00}).json()["in_force"]
    error = refused_api(409, "already_counted",
                        lambda: Tablet(direzione).post(url(closed), {"float_issued": 0, "counted": 700_00}))  # fmt: skip
    assert error["details"]["in_force"] == first["id"]
    assert list(CashCount.objects.values_list("counted", flat=True)) == [750_00]


def test_the_database_holds_one_original_count_per_session(closed, commissario):
    services.cash_count_record(session=closed.session, by=commissario, float_issued=0, counted=1)
    with pytest.raises(IntegrityError), transaction.atomic():
        CashCount.objects.create(session=closed.session, float_issued=0, net=750_00, expected=750_00, counted=1,
                                 counted_by=commissario, counted_at=timezone.now())  # fmt: skip


@pytest.mark.parametrize(
    ("field", "value"),
    [("float_issued", -1), ("counted", -1), ("counted", 10.5), ("counted", "12,50"), ("counted", True),
     ("float_issued", None), ("counted", 1_000_000_01), ("float_issued", 10**30), ("counted", "1e3")],
)  # fmt: skip
def test_bad_figures_are_refused_naming_the_field(closed, commissario, field, value, refused_api):
    body = {"float_issued": 0, "counted": 750_00, field: value}
    error = refused_api(400, "invalid_input", lambda: Tablet(commissario).post(url(closed), body))
    assert field in error["details"]


@pytest.mark.parametrize(
    "body",
    [{"counted": 1}, {"float_issued": 0}, {}, [], "x", {"float_issued": 0, "counted": 1, "difference": 0}],
)
def test_a_missing_figure_or_a_strange_body_is_refused(closed, commissario, body, refused_api):
    refused_api(400, "invalid_input", lambda: Tablet(commissario).post(url(closed), body))


def test_the_service_refuses_bad_figures_too(closed, commissario, refused):
    refused("bad_figure", services.cash_count_record, session=closed.session, by=commissario, float_issued=-1,
            counted=0)  # fmt: skip
    refused("bad_figure", services.cash_count_record, session=closed.session, by=commissario, float_issued=0,
            counted="10")  # fmt: skip
    refused("figure_above_maximum", services.cash_count_record, session=closed.session, by=commissario,
            float_issued=0, counted=1_000_000_01)  # fmt: skip


def test_an_unknown_session_or_count_is_a_404(commissario, auditor):
    assert (
        Tablet(commissario)
        .post("/api/sessions/999999/cash-count/", {"float_issued": 0, "counted": 0})
        .status_code
        == 404
    )
    assert Tablet(auditor).get("/api/sessions/999999/cash-count/").status_code == 404
    assert Tablet(commissario).post(correct_url(999999), {"counted": 0, "reason": "x"}).status_code == 404
    assert CashCount.objects.count() == 0


def test_a_correction_needs_its_reason(closed, commissario, refused_api):
    count = services.cash_count_record(session=closed.session, by=commissario, float_issued=0, counted=750_00)
    refused_api(400, "invalid_input", lambda: Tablet(commissario).post(correct_url(count.pk), {"counted": 1}))
    refused_api(400, "invalid_input",
                lambda: Tablet(commissario).post(correct_url(count.pk), {"counted": 1, "reason": ""}))  # fmt: skip
    refused_api(400, "reason_required",
                lambda: Tablet(commissario).post(correct_url(count.pk), {"counted": 1, "reason": "\u200b "}))  # fmt: skip
    assert CashCount.objects.count() == 1


@pytest.mark.parametrize("body", [{"reason": "nothing given"}, {"counted": None, "float_issued": None, "reason": "x"},
                                  {"counted": 750_00, "reason": "the same"},
                                  {"counted": 750_00, "float_issued": 0, "reason": "the same"}])  # fmt: skip
def test_a_correction_that_changes_nothing_is_refused(closed, commissario, body, refused_api):
    count = services.cash_count_record(session=closed.session, by=commissario, float_issued=0, counted=750_00)
    refused_api(400, "nothing_to_correct", lambda: Tablet(commissario).post(correct_url(count.pk), body))
    assert CashCount.objects.count() == 1


def test_a_corrected_count_is_not_corrected_again(closed, commissario, refused_api):
    count = services.cash_count_record(session=closed.session, by=commissario, float_issued=0, counted=750_00)
    newer = services.cash_count_correct(count=count, by=commissario, counted=751_00, reason="recount")
    error = refused_api(409, "already_corrected",
                        lambda: Tablet(commissario).post(correct_url(count.pk), {"counted": 1, "reason": "x"}))  # fmt: skip
    assert (error["details"]["correction"], error["details"]["in_force"]) == (newer.pk, newer.pk)


def _close_day(game, commissario):
    floor_services.gaming_day_close(gaming_day=game.session.gaming_day, by=commissario, open_sessions="refuse")


def books_events(game, *actions: str) -> list:
    return list(
        AuditEvent.objects.filter(stream__name=books_stream(game.session.gaming_day_id), action__in=actions)
        .order_by("seq")
    )


def test_a_drawer_not_counted_by_the_close_is_counted_and_corrected_late_into_the_days_books(
    closed, commissario, direzione
):
    """The day closed with the drawer not counted (the automatic close at GAMING_DAY_CLOSE_HOUR
    does the same): the count and its correction go on, with the same answers and payloads,
    their events in the day's books stream; the session's stream, which the report sealed at
    the close, takes nothing."""
    _close_day(closed, commissario)
    session_events = AuditEvent.objects.filter(stream__name=closed.session.audit_stream).count()
    r = Tablet(commissario).post(url(closed), {"float_issued": 500_00, "counted": 1_240_00, "note": "late"})
    assert r.status_code == 201, r.json()
    first = CashCount.objects.get()
    assert (r.json()["in_force"]["id"], first.expected, first.counted, first.net) == (
        first.pk, 1_250_00, 1_240_00, 750_00
    )  # fmt: skip
    r = Tablet(direzione).post(correct_url(first.pk), {"counted": 1_250_00, "reason": "a 10 in the tray"})
    assert r.status_code == 201, r.json()
    second = CashCount.objects.get(corrects=first)
    assert r.json()["in_force"]["id"] == second.pk and second.difference == 0
    said = books_events(closed, "cash.drawer_counted", "cash.drawer_count_corrected")
    assert [(e.action, e.actor_id, e.subject_id) for e in said] == [
        ("cash.drawer_counted", commissario.pk, str(first.pk)),
        ("cash.drawer_count_corrected", direzione.pk, str(second.pk)),
    ]
    assert said[0].payload == {"old": None, "new": cash_count_payload(first)}
    assert said[1].payload == {"old": cash_count_payload(first), "new": cash_count_payload(second),
                               "reason": "a 10 in the tray"}  # fmt: skip
    assert AuditEvent.objects.filter(stream__name=closed.session.audit_stream).count() == session_events
    assert events(closed, "cash.drawer_counted") == events(closed, "cash.drawer_count_corrected") == []


def test_while_the_day_is_open_the_events_stay_in_the_sessions_stream(closed, commissario):
    count = services.cash_count_record(session=closed.session, by=commissario, float_issued=0, counted=750_00)
    services.cash_count_correct(count=count, by=commissario, counted=751_00, reason="recount")
    assert len(events(closed, "cash.drawer_counted")) == len(events(closed, "cash.drawer_count_corrected")) == 1
    assert books_events(closed, "cash.drawer_counted", "cash.drawer_count_corrected") == []


def _sign_the_register(game, direzione, make_user):
    """The day's books signed by both: the table's cagnotte counted, the register prepared and
    signed twice. Returns the cagnotte count, the register and the second signatory."""
    day, table = game.session.gaming_day, game.session.table
    second = make_user("direzione_two", Role.DIREZIONE)
    box = registers.cagnotte_count_record(
        gaming_day=day, table=table, by=direzione, witness=second,
        counted=report_selectors.expected_cagnotte(gaming_day_id=day.pk, table_id=table.pk),
    )  # fmt: skip
    reg = registers.control_register_prepare(gaming_day=day, by=direzione)
    registers.control_register_sign(register=reg, by=direzione)
    registers.control_register_sign(register=reg, by=second)
    return box, reg, second


def test_no_count_nor_correction_once_the_days_register_is_signed_by_both(
    closed, make_game, commissario, direzione, make_user, refused_api, refused
):
    """The report version the second signature asks for holds the day's drawers: after it no
    count (a drawer is not among the register's figures: nothing would bring it into a later
    version). Refused with the unclaimed deposits' code, writing nothing."""
    count = services.cash_count_record(session=closed.session, by=commissario, float_issued=0, counted=750_00)
    other = make_game("venezia")  # a second table of the same day, closed without its count
    assert other.session.gaming_day_id == closed.session.gaming_day_id
    floor_services.table_session_close(session=other.session, by=commissario)
    _close_day(closed, commissario)
    registers.cagnotte_count_record(
        gaming_day=closed.session.gaming_day, table=other.session.table, by=direzione,
        witness=make_user("witness", Role.AUDITOR), counted=0,
    )  # fmt: skip
    _box, reg, _second = _sign_the_register(closed, direzione, make_user)
    error = refused_api(409, "books_signed", lambda: Tablet(commissario).post(
        f"/api/sessions/{other.session.pk}/cash-count/", {"float_issued": 0, "counted": 1}))  # fmt: skip
    assert error["details"] == {"gaming_day": closed.session.gaming_day_id, "session": other.session.pk,
                                "register": reg.pk}  # fmt: skip
    refused_api(409, "books_signed",
                lambda: Tablet(direzione).post(correct_url(count.pk), {"counted": 1, "reason": "x"}))  # fmt: skip
    refused("books_signed", services.cash_count_record, session=other.session, by=direzione, float_issued=0,
            counted=1)  # fmt: skip


def test_a_correction_of_the_signed_register_opens_the_books_again_until_it_is_signed(
    closed, commissario, direzione, make_user, refused
):
    """As a cagnotte count corrected after the signature: the register's correction, until its
    own two signatures, takes late counts, which the version its signature asks for lists."""
    _close_day(closed, commissario)
    box, reg, second = _sign_the_register(closed, direzione, make_user)
    refused("books_signed", services.cash_count_record, session=closed.session, by=commissario, float_issued=0,
            counted=750_00)  # fmt: skip
    registers.cagnotte_count_correct(count=box, by=direzione, witness=second, counted=box.counted + 1_00,
                                     note="recount")  # fmt: skip
    new = registers.control_register_correct(register=reg, by=direzione, reason="box recounted")
    count = services.cash_count_record(session=closed.session, by=commissario, float_issued=0, counted=750_00)
    assert [e.subject_id for e in books_events(closed, "cash.drawer_counted")] == [str(count.pk)]
    registers.control_register_sign(register=new, by=direzione)
    registers.control_register_sign(register=new, by=second)
    refused("books_signed", services.cash_count_correct, count=count, by=commissario, counted=1, reason="x")


def test_a_note_too_long_is_refused(closed, commissario, refused_api):
    refused_api(400, "invalid_input", lambda: Tablet(commissario).post(
        url(closed), {"float_issued": 0, "counted": 1, "note": "x" * 301}))  # fmt: skip


# --------------------------------------------------------------------------- reads


def test_a_session_not_counted_reads_null(closed, auditor):
    assert Tablet(auditor).get(url(closed)).json() == {
        "session": closed.session.pk,
        "in_force": None,
        "handovers": [],
        "history": [],
    }


def test_another_tables_changeur_does_not_read_it(closed, make_game, make_user):
    other = make_game("venezia")
    r = Tablet(other.session.changeur).get(url(closed))
    assert (r.status_code, r.json()["error"]["code"]) == (403, "permission_denied")


def test_the_read_takes_the_same_queries_however_many_corrections(closed, commissario, auditor):
    client = Tablet(auditor)
    count = services.cash_count_record(session=closed.session, by=commissario, float_issued=0, counted=700_00)
    client.get(url(closed))  # (warm: the user's roles)
    with CaptureQueriesContext(connection) as one:
        assert client.get(url(closed)).status_code == 200
    for n in range(5):
        count = services.cash_count_correct(
            count=count, by=commissario, counted=701_00 + 100 * n, reason=f"recount {n}"
        )
    with CaptureQueriesContext(connection) as six:
        body = client.get(url(closed)).json()
    assert len(body["history"]) == 6 and body["in_force"]["counted"] == 705_00
    assert len(six) == len(one), [q["sql"] for q in six.captured_queries]


def test_the_schema_documents_the_drawer_endpoints(auditor):
    schema = Tablet(auditor).client.get("/api/schema/", {"format": "json"}).json()
    count = schema["paths"]["/api/sessions/{id}/cash-count/"]
    assert {"401", "403", "404"} <= set(count["get"]["responses"])
    for op in (count["post"], schema["paths"]["/api/cash-counts/{id}/correct/"]["post"]):
        headers = [p for p in op.get("parameters", []) if p["in"] == "header"]
        assert [(h["name"], h["required"]) for h in headers] == [("Idempotency-Key", True)]
        assert {"400", "401", "403", "404", "409"} <= set(op["responses"])
    assert "`session_not_closed`" in count["post"]["responses"]["409"]["description"]
    assert "`already_counted`" in count["post"]["responses"]["409"]["description"]
    assert "`nothing_to_correct`" in schema["paths"]["/api/cash-counts/{id}/correct/"]["post"]["description"]


# --------------------------------------------------------------------------- the chips


def test_the_chips_are_counted_with_the_cash_and_held_to_the_register(closed, commissario):
    """The register's net 750.00: chips for 750.00 went out of the tray for the cash taken. A tray
    that started with 5,000.00 of chips should hold 4,250.00; 4,200.00 found is 50.00 short."""
    r = Tablet(commissario).post(url(closed), {"float_issued": 2_000_00, "counted": 2_750_00,
                                               "chips_float": 5_000_00, "chips_counted": 4_200_00})  # fmt: skip
    assert r.status_code == 201, r.json()
    count = r.json()["in_force"]
    assert (count["net"], count["difference"]) == (750_00, 0)
    assert (count["chips_float"], count["chips_expected"], count["chips_counted"], count["chips_difference"]) == (
        5_000_00, 4_250_00, 4_200_00, -50_00
    )  # fmt: skip
    row = CashCount.objects.get()
    assert (row.chips_float, row.chips_expected, row.chips_counted, row.chips_difference) == (
        5_000_00, 4_250_00, 4_200_00, -50_00
    )  # fmt: skip
    new = events(closed, "cash.drawer_counted")[0]["new"]
    assert (new["chips_float"], new["chips_expected"], new["chips_counted"], new["chips_difference"]) == (
        5_000_00, 4_250_00, 4_200_00, -50_00
    )  # fmt: skip
    assert new == cash_count_payload(row)


def test_a_count_without_chips_reads_null_and_its_event_has_no_chips_keys(closed, commissario):
    r = Tablet(commissario).post(url(closed), {"float_issued": 0, "counted": 750_00, "chips_float": None,
                                               "chips_counted": None})  # fmt: skip
    assert r.status_code == 201, r.json()
    count = r.json()["in_force"]
    assert [count[k] for k in ("chips_float", "chips_expected", "chips_counted", "chips_difference")] == [None] * 4
    assert not any(key.startswith("chips") for key in events(closed, "cash.drawer_counted")[0]["new"])


def test_a_chips_float_below_the_chips_handed_out_is_recorded_and_shows(closed, commissario):
    """Chips for 750.00 handed out of a tray said to have started with 500.00: the slip or the
    register is wrong. Recorded, not refused: the expected is below 0 and the difference says how far."""
    r = Tablet(commissario).post(url(closed), {"float_issued": 0, "counted": 750_00, "chips_float": 500_00,
                                               "chips_counted": 0})  # fmt: skip
    assert r.status_code == 201, r.json()
    assert (r.json()["in_force"]["chips_expected"], r.json()["in_force"]["chips_difference"]) == (-250_00, 250_00)


@pytest.mark.parametrize(("given", "missing"), [
    ({"chips_float": 100_00}, "chips_counted"), ({"chips_counted": 0}, "chips_float"),
    ({"chips_float": 100_00, "chips_counted": None}, "chips_counted"),
])  # fmt: skip
def test_chips_incomplete_are_refused_naming_the_missing_figure_and_write_nothing(
    closed, commissario, given, missing, refused_api
):
    events_before = AuditEvent.objects.count()
    body = {"float_issued": 0, "counted": 750_00, **given}
    error = refused_api(400, "chips_incomplete", lambda: Tablet(commissario).post(url(closed), body))
    assert error["details"] == {"field": missing}
    assert not CashCount.objects.exists() and AuditEvent.objects.count() == events_before


@pytest.mark.parametrize(
    ("field", "value"),
    [("chips_float", -1), ("chips_counted", -1), ("chips_counted", 10.5), ("chips_float", "12,50"),
     ("chips_counted", True), ("chips_float", 1_000_000_01), ("chips_counted", 10**30)],
)  # fmt: skip
def test_bad_chips_figures_are_refused_naming_the_field(closed, commissario, field, value, refused_api):
    body = {"float_issued": 0, "counted": 750_00, "chips_float": 0, "chips_counted": 0, field: value}
    error = refused_api(400, "invalid_input", lambda: Tablet(commissario).post(url(closed), body))
    assert field in error["details"] and not CashCount.objects.exists()


def test_the_service_bounds_the_chips_as_the_cash(closed, commissario, refused):
    base = {"session": closed.session, "by": commissario, "float_issued": 0, "counted": 0}
    refused("bad_figure", services.cash_count_record, **base, chips_float=-1, chips_counted=0)
    refused("bad_figure", services.cash_count_record, **base, chips_float=0, chips_counted="10")
    refused("figure_above_maximum", services.cash_count_record, **base, chips_float=1_000_000_01, chips_counted=0)
    refused("chips_incomplete", services.cash_count_record, **base, chips_counted=0)
    assert not CashCount.objects.exists()


@pytest.mark.parametrize("chips", [{"chips_float": 1, "chips_counted": None, "chips_expected": None},
                                   {"chips_float": -1, "chips_counted": 0, "chips_expected": -1 - 750_00},
                                   {"chips_float": 0, "chips_counted": 1_000_000_01, "chips_expected": -750_00},
                                   {"chips_float": 0, "chips_counted": 0, "chips_expected": 0}])  # fmt: skip
def test_the_database_holds_the_chips_together_in_range_and_adding_up(closed, commissario, chips):
    with pytest.raises(IntegrityError), transaction.atomic():
        CashCount.objects.create(session=closed.session, float_issued=0, net=750_00, expected=750_00, counted=1,
                                 counted_by=commissario, counted_at=timezone.now(), **chips)  # fmt: skip


def test_the_chips_are_corrected_as_the_cash_and_stay_counted(closed, commissario, direzione, refused_api):
    first = Tablet(commissario).post(url(closed), {"float_issued": 0, "counted": 750_00, "chips_float": 5_000_00,
                                                   "chips_counted": 4_200_00}).json()["in_force"]  # fmt: skip
    r = Tablet(direzione).post(correct_url(first["id"]), {"chips_counted": 4_250_00, "reason": "a plaque in the box"})
    assert r.status_code == 201, r.json()
    new = r.json()["in_force"]
    assert (new["float_issued"], new["counted"], new["chips_float"], new["chips_expected"], new["chips_counted"],
            new["chips_difference"]) == (0, 750_00, 5_000_00, 4_250_00, 4_250_00, 0)  # fmt: skip
    said = events(closed, "cash.drawer_count_corrected")[0]
    assert (said["old"]["chips_counted"], said["new"]["chips_counted"]) == (4_200_00, 4_250_00)
    # the chips' float alone: the chips counted restated, never dropped
    r = Tablet(commissario).post(correct_url(new["id"]), {"chips_float": 5_100_00, "counted": None, "reason": "slip"})
    assert r.status_code == 201, r.json()
    third = r.json()["in_force"]
    assert (third["chips_float"], third["chips_expected"], third["chips_counted"], third["chips_difference"]) == (
        5_100_00, 4_350_00, 4_250_00, -100_00
    )  # fmt: skip
    # the same chips again: nothing to correct
    refused_api(400, "nothing_to_correct", lambda: Tablet(commissario).post(
        correct_url(third["id"]), {"chips_float": 5_100_00, "chips_counted": 4_250_00, "reason": "same"}))  # fmt: skip
    refused_api(400, "invalid_input", lambda: Tablet(commissario).post(
        correct_url(third["id"]), {"chips_counted": -1, "reason": "x"}))  # fmt: skip
    assert CashCount.objects.count() == 3


def test_chips_are_added_in_a_correction_of_a_count_without_them_both_figures_then(
    closed, commissario, refused_api
):
    count = services.cash_count_record(session=closed.session, by=commissario, float_issued=0, counted=750_00)
    for body, missing in (({"chips_float": 1_000_00}, "chips_counted"), ({"chips_counted": 250_00}, "chips_float")):
        error = refused_api(400, "chips_incomplete", lambda body=body: Tablet(commissario).post(
            correct_url(count.pk), {**body, "reason": "the tray counted"}))  # fmt: skip
        assert error["details"] == {"field": missing}
    assert CashCount.objects.count() == 1
    r = Tablet(commissario).post(correct_url(count.pk), {"chips_float": 1_000_00, "chips_counted": 250_00,
                                                         "reason": "the tray counted"})  # fmt: skip
    assert r.status_code == 201, r.json()
    new = r.json()["in_force"]
    assert (new["counted"], new["chips_expected"], new["chips_difference"]) == (750_00, 250_00, 0)
    said = events(closed, "cash.drawer_count_corrected")[0]
    assert not any(key.startswith("chips") for key in said["old"]) and said["new"]["chips_counted"] == 250_00


def test_the_schema_documents_the_chips(auditor):
    schema = Tablet(auditor).client.get("/api/schema/", {"format": "json"}).json()
    post = schema["paths"]["/api/sessions/{id}/cash-count/"]["post"]
    assert "`chips_incomplete`" in post["description"]
    assert "`chips_incomplete`" in schema["paths"]["/api/cash-counts/{id}/correct/"]["post"]["description"]
    props = schema["components"]["schemas"]["CashCount"]["properties"]
    assert {"chips_float", "chips_expected", "chips_counted", "chips_difference"} <= set(props)
