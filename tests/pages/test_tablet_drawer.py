"""The drawer of a closed session on its page (tables.services.cash_count): the Commissario
counts it (float issued and cash counted in euros, a note) and sees the count in force with the
expected cash and the difference; a correction with its reason; the changeur, the Capo Partita
and the auditor get no form and are refused; the floor dashboard names the closed sessions and
whether their drawers are counted; the whole of it in Italian."""

from __future__ import annotations

import re
import uuid
from html import unescape

import pytest

from audit.models import AuditEvent
from floor import services as floor_services
from tables import services
from tables.models import CashCount
from tests.pages.test_italian import Evening

pytestmark = pytest.mark.django_db

FORM = 'name="counted"'


def post(client, game, action: str, **data):
    data.setdefault("idempotency_key", str(uuid.uuid4()))
    return client.post(f"/tablet/sessions/{game.session.pk}/{action}/", data)


def page(client, game) -> str:
    r = client.get(f"/tablet/sessions/{game.session.pk}/")
    assert r.status_code == 200
    return r.content.decode()


@pytest.fixture
def closed(game, changeur, commissario):
    """Buy-ins 900.00, a cash-out 150.00: the register's net 750.00; the session closed."""
    services.cash_exchange_record(session=game.session, by=changeur, direction="buy_in", amount=900_00)
    services.cash_exchange_record(session=game.session, by=changeur, direction="cash_out", amount=150_00)
    floor_services.table_session_close(session=game.session, by=commissario)
    return game


@pytest.mark.parametrize(
    ("field", "named"),
    [("float_issued", "Float issued"), ("counted", "Counted"), ("chips_float", "Chips&#x27; float"),
     ("chips_counted", "Chips counted")],
)
def test_a_bad_figure_in_the_drawer_count_names_its_field(closed, client_for, commissario, field, named):
    """The count has four amounts: a figure that is no amount was answered "Enter an amount in
    euros" alone, at the top of the page, far from the form (found walking the end of a day):
    the refusal names the field to correct, in the count and in its correction."""
    client = client_for(commissario)
    figures = {"float_issued": "1000", "counted": "1750", "chips_float": "2000", "chips_counted": "1250"}
    r = post(client, closed, "cash-count", **{**figures, field: "17,50x"})
    assert r.status_code == 400 and not CashCount.objects.exists()
    assert f"{named}: enter an amount in euros, e.g. 1,500 or 150.50." in r.content.decode()
    assert post(client, closed, "cash-count", **figures).status_code == 200
    count = CashCount.objects.get()
    r = post(client, closed, "cash-count-correct", count=str(count.pk), reason="recount", **{field: "1.2.3,4"})
    assert r.status_code == 400 and CashCount.objects.count() == 1
    assert f"{named}: enter an amount in euros" in r.content.decode()


def test_a_bad_drawer_figure_is_named_in_italian(closed, client_for, commissario):
    client = client_for(commissario)
    r = client.post(f"/tablet/sessions/{closed.session.pk}/cash-count/",
                    {"float_issued": "1000", "counted": "mille", "idempotency_key": str(uuid.uuid4())},
                    HTTP_ACCEPT_LANGUAGE="it")  # fmt: skip
    assert r.status_code == 400 and "Contato: inserire un importo in euro, ad es. 1.500 o 150,50." in r.content.decode()


def test_the_commissario_counts_the_drawer_on_the_closed_sessions_page(closed, client_for, commissario):
    client = client_for(commissario)
    html = page(client, closed)
    assert "The drawer is not counted yet." in html and FORM in html and "€\xa0+750" in html
    r = post(client, closed, "cash-count", float_issued="1.000", counted="1 745,50", note="slip 12")
    assert r.status_code == 400 and not CashCount.objects.exists()  # "1.000" on an English page: refused
    r = post(client, closed, "cash-count", float_issued="1,000", counted="1745.50", note="slip 12")
    assert r.status_code == 200, r.content.decode()
    said = r.content.decode()
    assert "Drawer counted. Expected €\xa01\u202f750, counted €\xa01\u202f745.50: a shortfall of €\xa04.50." in said
    count = CashCount.objects.get()
    assert (count.float_issued, count.net, count.expected, count.counted, count.note, count.counted_by_id) == (
        1_000_00, 750_00, 1_750_00, 1_745_50, "slip 12", commissario.pk
    )  # fmt: skip
    assert (
        AuditEvent.objects.filter(
            stream__name=closed.session.audit_stream, action="cash.drawer_counted"
        ).count()
        == 1
    )
    html = page(client, closed)
    drawer = html.split('id="drawer-title"', 1)[1].split("</dl>", 1)[0]
    assert (
        "1\u202f000" in drawer and "+750" in drawer and "1\u202f745.50" in drawer
    )
    # the net taken is signed (cash may go out); what the drawer should hold is an amount
    assert "<dd>€\xa01\u202f750</dd>" in drawer and "+1\u202f750" not in drawer
    assert "-4.50 (shortfall)" in drawer
    assert FORM not in html.split('id="drawer-title"', 1)[1].split("Correct this count", 1)[0]
    # the second count is refused: the page offers the correction instead
    r = post(client, closed, "cash-count", float_issued="0", counted="1")
    assert r.status_code == 409 and CashCount.objects.count() == 1
    r = post(client, closed, "cash-count-correct", count=str(count.pk), counted="1750", reason="")
    assert r.status_code == 400 and CashCount.objects.count() == 1
    r = post(
        client,
        closed,
        "cash-count-correct",
        count=str(count.pk),
        counted="1750",
        reason="a fiver in the tray",
    )
    assert r.status_code == 200 and "the drawer is exact" in r.content.decode()
    new = CashCount.objects.get(corrects=count)
    assert (new.float_issued, new.counted, new.note) == (1_000_00, 1_750_00, "a fiver in the tray")
    html = page(client, closed)
    assert "Counts corrected since" in html and "<del>1\u202f745.50</del>" in html


def test_a_blank_float_is_none_and_bad_figures_write_nothing(closed, client_for, direzione):
    client = client_for(direzione)
    for fields in ({"float_issued": "-5", "counted": "10"}, {"counted": ""}, {"counted": "abc"},
                   {"counted": "20000000"}):  # fmt: skip
        events = AuditEvent.objects.count()
        r = post(client, closed, "cash-count", **fields)
        assert r.status_code == 400, (fields, r.status_code)
        assert not CashCount.objects.exists() and AuditEvent.objects.count() == events
    r = post(client, closed, "cash-count", float_issued="", counted="750")
    assert r.status_code == 200 and CashCount.objects.get().float_issued == 0


@pytest.mark.parametrize("who", ["changeur", "capo_partita", "auditor"])
def test_no_one_else_is_offered_the_form_nor_may_post_it(closed, client_for, who, request, commissario):
    user = request.getfixturevalue(who)
    client = client_for(user)
    if who != "capo_partita":  # (the Capo Partita's page shows no register at all)
        html = page(client, closed)
        assert "The drawer is not counted yet." in html and FORM not in html
    r = post(client, closed, "cash-count", float_issued="0", counted="750")
    assert r.status_code == 403 and not CashCount.objects.exists()
    count = services.cash_count_record(session=closed.session, by=commissario, float_issued=0, counted=750_00)
    r = post(client, closed, "cash-count-correct", count=str(count.pk), counted="1", reason="x")
    assert r.status_code == 403 and CashCount.objects.count() == 1


def test_a_session_in_play_offers_no_count(game, client_for, commissario):
    client = client_for(commissario)
    assert 'id="drawer-title"' not in page(client, game)
    r = post(client, game, "cash-count", float_issued="0", counted="0")
    assert r.status_code == 409 and not CashCount.objects.exists()


def test_the_dashboard_names_the_closed_sessions_drawers(closed, client_for, commissario):
    client = client_for(commissario)
    html = client.get("/floor/").content.decode()
    assert "Closed sessions: the changeur's drawers" in html
    section = html.split("Closed sessions: the changeur's drawers", 1)[1].split("</section>", 1)[0]
    assert (
        f"/tablet/sessions/{closed.session.pk}/#drawer-title" in section and "drawer not counted" in section
    )
    services.cash_count_record(session=closed.session, by=commissario, float_issued=0, counted=750_00)
    section = client.get("/floor/").content.decode().split("Closed sessions: the changeur's drawers", 1)[1]
    assert "drawer counted" in section.split("</section>", 1)[0]


def test_the_drawer_in_italian_is_all_italian(closed, commissario, changeur):
    evening = Evening()
    boss = evening.client(commissario)
    tablet = f"/tablet/sessions/{closed.session.pk}/"
    html = evening.get(boss, tablet).content.decode()
    assert "Il cassetto non è ancora contato." in html and "Fondo cassa consegnato" in html
    evening.post(boss, tablet + "cash-count/", float_issued="-1", counted="10")
    evening.post(boss, tablet + "cash-count/", float_issued="1.000", counted="1.745,50", note="distinta 12")
    evening.post(boss, tablet + "cash-count/", float_issued="0", counted="1")
    count = CashCount.objects.get()
    assert (count.float_issued, count.counted) == (1_000_00, 1_745_50)
    evening.post(boss, tablet + "cash-count-correct/", count=str(count.pk), reason="ricontato")
    r = evening.post(
        boss, tablet + "cash-count-correct/", count=str(count.pk), counted="1750", reason="ricontato"
    )
    assert "il cassetto è esatto" in r.content.decode()
    html = evening.get(boss, tablet).content.decode()
    assert "Conteggio del cassetto" in html and "differenza" in html
    evening.get(boss, "/floor/")
    evening.post(evening.client(changeur), tablet + "cash-count/", float_issued="0", counted="1")
    evening.get(evening.client(changeur), tablet)
    assert evening.problems == []


def _sign_books(game, direzione, make_user) -> None:
    """The closed day's books signed by both (the API tests' way: cagnotte counted, register
    prepared and signed twice)."""
    from tests.tables.api.test_cash_count import _sign_the_register

    _sign_the_register(game, direzione, make_user)


LATE = "a count or a correction entered now goes into the day's books"
FINAL = "its books are final, the drawer is no longer counted"


def test_after_the_close_the_drawer_is_counted_late_until_the_books_are_signed(
    closed, client_for, commissario, direzione, make_user
):
    """The day closed with the drawer not counted: its page still offers the count, saying where
    it goes; the desk's page of the day names the drawer not counted and links it. Once the
    control register is signed by both, no form, and a post is refused, writing nothing."""
    from audit.services import books_stream

    day = closed.session.gaming_day
    floor_services.gaming_day_close(gaming_day=day, by=commissario, open_sessions="close")
    client = client_for(commissario)
    html = page(client, closed)
    assert FORM in html and LATE in html
    desk = client.get(f"/desk/days/{day.pk}/").content.decode()
    row = desk.split(f'data-session="{closed.session.pk}"', 1)[1].split("</tr>", 1)[0]
    assert f"/tablet/sessions/{closed.session.pk}/#drawer-title" in row and "drawer not counted" in row
    r = post(client, closed, "cash-count", float_issued="0", counted="750")
    assert r.status_code == 200, r.content.decode()
    count = CashCount.objects.get()
    assert AuditEvent.objects.filter(stream__name=books_stream(day.pk), action="cash.drawer_counted",
                                     subject_id=str(count.pk)).exists()  # fmt: skip
    row = client.get(f"/desk/days/{day.pk}/").content.decode().split(f'data-session="{closed.session.pk}"', 1)[1]
    assert "drawer counted" in row.split("</tr>", 1)[0] and "drawer not counted" not in row.split("</tr>", 1)[0]
    assert "Correct this count" in page(client, closed)

    _sign_books(closed, direzione, make_user)
    html = page(client, closed)
    assert FINAL in html and LATE not in html and "Correct this count" not in html and FORM not in html
    events = AuditEvent.objects.count()
    r = post(client, closed, "cash-count-correct", count=str(count.pk), counted="751", reason="recount")
    assert r.status_code == 409 and FINAL in r.content.decode()
    assert CashCount.objects.count() == 1 and AuditEvent.objects.count() == events


NEVER = "The drawer was not counted before the day's books were signed."


def test_a_drawer_never_counted_says_so_once_the_books_are_signed(
    closed, client_for, commissario, direzione, auditor, make_user
):
    """Once the register is signed by both, a drawer not counted never will be: its page said
    "The drawer is not counted yet" beside "no longer counted" to the Commissario, and "not
    counted yet" alone to the auditor, as if a count might still come."""
    floor_services.gaming_day_close(gaming_day=closed.session.gaming_day, by=commissario, open_sessions="close")
    assert "The drawer is not counted yet." in page(client_for(auditor), closed)  # (the books still open)
    _sign_books(closed, direzione, make_user)
    for reader in (commissario, auditor):
        html = page(client_for(reader), closed)
        assert NEVER in html and "not counted yet" not in html and FINAL in html and FORM not in html
        assert LATE not in html


def test_the_register_s_signature_names_the_drawers_not_counted(closed, client_for, commissario, direzione):
    """The second signature ends the late count: the desk's sign form said nothing of the
    drawers still not counted (named only in the sessions' table above), so the books were
    signed over them unawares. It names their tables; once counted, nothing."""
    from audit.reports import registers
    from tables import report_selectors

    day, table = closed.session.gaming_day, closed.session.table
    floor_services.gaming_day_close(gaming_day=day, by=commissario, open_sessions="close")
    registers.cagnotte_count_record(
        gaming_day=day, table=table, by=direzione, witness=commissario,
        counted=report_selectors.expected_cagnotte(gaming_day_id=day.pk, table_id=table.pk),
    )  # fmt: skip
    registers.control_register_prepare(gaming_day=day, by=direzione)
    desk = client_for(direzione)
    warning = (f"The cash drawer of table {table.number} is not counted: once the register is signed by both, "
               "it can no longer be counted.")  # fmt: skip
    html = desk.get(f"/desk/days/{day.pk}/").content.decode()
    assert warning in html and html.index(warning) < html.index("Sign first")
    it = desk.get(f"/desk/days/{day.pk}/", HTTP_ACCEPT_LANGUAGE="it").content.decode()
    assert f"Il cassetto del cambio del tavolo {table.number} non è contato" in it
    assert post(client_for(commissario), closed, "cash-count", float_issued="0", counted="750").status_code == 200
    assert "drawers-uncounted" not in desk.get(f"/desk/days/{day.pk}/").content.decode()


# --------------------------------------------------------------------------- the chips


def _chips(html: str) -> str:
    return html.split('id="drawer-title"', 1)[1].split('class="hint"', 1)[0]


def test_the_chips_are_counted_on_the_page_and_shown_against_the_register(closed, client_for, commissario):
    """The register's net 750.00: the chips handed out. A tray of 3,000.00 should hold 2,250.00;
    2,240.00 found is 10.00 short."""
    client = client_for(commissario)
    assert 'name="chips_float"' in page(client, closed) and 'name="chips_counted"' in page(client, closed)
    r = post(client, closed, "cash-count", float_issued="1,000", counted="1750", chips_float="3,000",
             chips_counted="2240")  # fmt: skip
    assert r.status_code == 200, r.content.decode()
    assert ("the drawer is exact. Chips: expected €\xa02\u202f250, counted €\xa02\u202f240: a shortfall of €\xa010."
            in r.content.decode())  # fmt: skip
    count = CashCount.objects.get()
    assert (count.chips_float, count.chips_expected, count.chips_counted) == (3_000_00, 2_250_00, 2_240_00)
    chips = unescape(_chips(page(client, closed)).split('class="facts drawer-chips"', 1)[1])
    for term, figure in (("chips' float", "€\xa03\u202f000"), ("chips handed out, net", "€\xa0+750"),
                         ("chips expected in the tray", "€\xa02\u202f250"), ("chips counted", "€\xa02\u202f240"),
                         ("chips' difference", "€\xa0-10 (shortfall)")):  # fmt: skip
        assert f"<dt>{term}</dt><dd>{figure}</dd>" in chips, term
    r = post(client, closed, "cash-count-correct", count=str(count.pk), chips_counted="2250", reason="a plaque")
    assert r.status_code == 200 and "the tray is exact" in r.content.decode()
    assert "€\xa00 (exact)" in _chips(page(client, closed))


def test_the_chips_are_said_beside_a_cash_surplus_or_shortfall_too(closed, client_for, commissario):
    """The answer says the tray whatever the cash's difference: it said it after an exact drawer
    only, so a tray 10.00 short beside a cash surplus went unsaid."""
    client = client_for(commissario)
    r = post(client, closed, "cash-count", float_issued="1,000", counted="1760", chips_float="3,000",
             chips_counted="2240")  # fmt: skip
    assert r.status_code == 200, r.content.decode()
    assert ("a surplus of €\xa010. Chips: expected €\xa02\u202f250, counted €\xa02\u202f240: a shortfall of €\xa010."
            in r.content.decode())  # fmt: skip
    count = CashCount.objects.get()
    r = post(client, closed, "cash-count-correct", count=str(count.pk), counted="1740", reason="a note found")
    assert r.status_code == 200, r.content.decode()
    assert "a shortfall of €\xa010. Chips: expected €\xa02\u202f250, counted €\xa02\u202f240: a shortfall of €\xa010." in (
        r.content.decode())


def test_chips_incomplete_on_the_page_write_nothing_and_a_correction_adds_them(closed, client_for, direzione):
    client = client_for(direzione)
    for fields in ({"chips_float": "100"}, {"chips_counted": "0"}, {"chips_float": "-1", "chips_counted": "0"}):
        events = AuditEvent.objects.count()
        r = post(client, closed, "cash-count", counted="750", **fields)
        assert r.status_code == 400, (fields, r.status_code)
        assert not CashCount.objects.exists() and AuditEvent.objects.count() == events
    r = post(client, closed, "cash-count", counted="750", chips_float="100")
    assert "the chips' float and the chips counted, or neither" in unescape(r.content.decode())
    r = post(client, closed, "cash-count", counted="750", chips_float="", chips_counted="")
    assert r.status_code == 200 and "Chips:" not in r.content.decode()
    count = CashCount.objects.get()
    assert count.chips_float is count.chips_counted is None
    html = unescape(page(client, closed))
    assert "The chips in the changeur's tray were not counted." in html
    assert "to add them, give both the chips' float and the chips counted" in html
    r = post(client, closed, "cash-count-correct", count=str(count.pk), chips_counted="250", reason="tray")
    assert r.status_code == 400 and CashCount.objects.count() == 1
    r = post(client, closed, "cash-count-correct", count=str(count.pk), chips_float="1000", chips_counted="250",
             reason="the tray counted")  # fmt: skip
    assert r.status_code == 200 and "the tray is exact" in r.content.decode()
    new = CashCount.objects.get(corrects=count)
    assert (new.counted, new.chips_float, new.chips_expected, new.chips_counted) == (750_00, 1_000_00, 250_00, 250_00)


def _corrected(html: str) -> list[tuple[str, str]]:
    """The table of the corrected counts: each count's cash row and chips row, as text."""
    table = html.split('<table class="list drawer-counts">', 1)[1].split("</table>", 1)[0]
    counts = re.findall(r'<tbody class="drawer-count">(.*?)</tbody>', table, re.S)
    return [tuple(re.findall(r"<tr[^>]*>(.*?)</tr>", c, re.S)) for c in counts]


def test_the_corrected_counts_show_their_chips_too(closed, client_for, commissario):
    """The table of the counts corrected since showed the cash alone: a count corrected for its
    chips showed the same cash figures twice, and the chips counted wrong were on no page. Each
    count's chips (float, expected, counted, difference) are under its cash; "—" for a count
    that did not count them (never 0, which would say an empty tray was counted)."""
    first = services.cash_count_record(session=closed.session, by=commissario, float_issued=1_000_00,
                                       counted=1_745_50)  # fmt: skip
    second = services.cash_count_correct(count=first, by=commissario, chips_float=3_000_00, chips_counted=2_240_00,
                                         reason="the tray counted")  # fmt: skip
    services.cash_count_correct(count=second, by=commissario, chips_counted=2_250_00, reason="a plaque")
    client = client_for(commissario)
    rows = _corrected(page(client, closed))
    assert len(rows) == 2
    (cash, chips), (cash_2, chips_2) = rows
    figures = lambda row: re.findall(r'<td class="num">(.*?)</td>', row)  # noqa: E731
    assert figures(cash) == ["1\u202f000", "1\u202f750", "<del>1\u202f745.50</del>", "-4.50"]
    assert "cash" in cash and "chips" in chips
    assert figures(chips) == ["—"] * 4  # not counted: no figure, no 0
    assert figures(cash_2) == ["1\u202f000", "1\u202f750", "<del>1\u202f745.50</del>", "-4.50"]
    assert figures(chips_2) == ["3\u202f000", "2\u202f250", "<del>2\u202f240</del>", "-10"]
    assert "a plaque" not in "".join(cash + chips + cash_2 + chips_2)  # (the one in force is not listed)
    it = unescape(client.get(f"/tablet/sessions/{closed.session.pk}/", HTTP_ACCEPT_LANGUAGE="it").content.decode())
    (cash, chips), (cash_2, chips_2) = _corrected(it)
    assert ">denaro</th>" in cash and ">fiches</th>" in chips_2 and figures(chips_2)[2] == "<del>2\u202f240</del>"
    head = it.split('<table class="list drawer-counts">', 1)[1].split("</thead>", 1)[0]
    assert all(f">{word}</th>" in head for word in ("fondo", "atteso", "contato", "differenza")), head


def test_the_chips_in_italian_are_all_italian(closed, commissario):
    evening = Evening()
    boss = evening.client(commissario)
    tablet = f"/tablet/sessions/{closed.session.pk}/"
    html = evening.get(boss, tablet).content.decode()
    assert "Fondo fiches (euro" in html and "Fiches contate nella vaschetta (euro)" in html
    r = evening.post(boss, tablet + "cash-count/", float_issued="0", counted="750", chips_float="3.000")
    assert r.status_code == 400 and "fondo fiches e le fiches contate" in r.content.decode()
    r = evening.post(boss, tablet + "cash-count/", float_issued="0", counted="750", chips_float="3.000",
                     chips_counted="2.260")  # fmt: skip
    assert "Fiches: attese €\xa02\u202f250, contate €\xa02\u202f260: un'eccedenza di €\xa010." in unescape(r.content.decode())
    html = evening.get(boss, tablet).content.decode()
    assert "fondo fiches" in html and "differenza delle fiches" in html and "+10 (eccedenza)" in html
    count = CashCount.objects.get()
    evening.post(boss, tablet + "cash-count-correct/", count=str(count.pk), chips_counted="2.250", reason="ricontate")
    assert evening.problems == []


def test_the_late_count_in_italian_is_all_italian(closed, commissario, direzione, make_user):
    floor_services.gaming_day_close(gaming_day=closed.session.gaming_day, by=commissario, open_sessions="close")
    evening = Evening()
    boss = evening.client(commissario)
    tablet = f"/tablet/sessions/{closed.session.pk}/"
    assert "vanno nei libri della giornata" in evening.get(boss, tablet).content.decode()
    evening.get(boss, f"/desk/days/{closed.session.gaming_day_id}/")
    _sign_books(closed, direzione, make_user)
    html = evening.get(boss, tablet).content.decode()
    assert "il cassetto non si conta più" in html and "non è stato contato prima della firma" in html
    r = evening.post(boss, tablet + "cash-count/", float_issued="0", counted="750")
    assert r.status_code == 409 and "il cassetto non si conta più" in r.content.decode()
    assert evening.problems == []


def test_a_session_closed_without_cash_says_none_was_exchanged(game, client_for, commissario):
    """Its page said "No cash exchanged at this table yet." once closed, as if some might come."""
    client = client_for(commissario)
    assert "No cash exchanged at this table yet." in page(client, game)
    floor_services.table_session_close(session=game.session, by=commissario)
    html = page(client, game)
    assert "No cash was exchanged in this session." in html and "No cash exchanged at this table yet." not in html
    it = client.get(f"/tablet/sessions/{game.session.pk}/", HTTP_ACCEPT_LANGUAGE="it").content.decode()
    assert "Nessun cambio in questa sessione." in it


# --------------------------------------------------------------------------- the changeur's handover


@pytest.fixture
def relieved(game, changeur, commissario, make_user):
    """The first changeur takes buy-ins 900.00 and a cash-out 150.00 (net 750.00) and is relieved
    while the session runs; his successor takes a buy-in of 100.00 (the session's net 850.00)."""
    from floor.models import StaffChange
    from floor.roles import Role

    services.cash_exchange_record(session=game.session, by=changeur, direction="buy_in", amount=900_00)
    services.cash_exchange_record(session=game.session, by=changeur, direction="cash_out", amount=150_00)
    successor = make_user("changeur_relief", Role.CHANGEUR)
    floor_services.table_session_staff_change(session=game.session, by=commissario, changeur=successor,
                                              reason="break")  # fmt: skip
    services.cash_exchange_record(session=game.session, by=successor, direction="buy_in", amount=100_00)
    game.change = StaffChange.objects.get(session=game.session)
    game.successor = successor
    return game


HANDOVER_FORM = 'name="staff_change"'


def _handover(html: str, change) -> str:
    return html.split(f'id="handover-title-{change.pk}"', 1)[1].split("</section>", 1)[0]


def test_the_commissario_counts_the_handover_while_the_session_runs(relieved, client_for, commissario):
    client = client_for(commissario)
    html = page(client, relieved)
    part = _handover(html, relieved.change)
    assert "This drawer is not counted yet" in part and HANDOVER_FORM in part
    assert 'id="drawer-title"' not in html  # the final count: once the session is closed
    r = post(client, relieved, "cash-count", staff_change=str(relieved.change.pk), float_issued="1000",
             counted="1745")  # fmt: skip
    assert r.status_code == 200, r.content.decode()
    assert "Handover counted. Expected €\xa01\u202f750, counted €\xa01\u202f745: a shortfall of €\xa05." in unescape(
        r.content.decode())
    count = CashCount.objects.get()
    # The successor's buy-in, after the relief, is not in the handed-over drawer.
    assert (count.staff_change_id, count.net, count.difference) == (relieved.change.pk, 750_00, -5_00)
    part = _handover(page(client, relieved), relieved.change)
    assert "-5 (shortfall)" in part and HANDOVER_FORM not in part and "Correct this count" in part
    r = post(client, relieved, "cash-count-correct", count=str(count.pk), counted="1750", reason="a fiver found")
    assert r.status_code == 200 and "the drawer is exact" in r.content.decode()
    # Said as the handover's, as its count was: not the session's drawer corrected.
    assert "Handover count corrected. Expected" in r.content.decode()
    new = CashCount.objects.get(corrects=count)
    assert (new.staff_change_id, new.net, new.difference) == (relieved.change.pk, 750_00, 0)
    assert "Counts corrected since" in _handover(page(client, relieved), relieved.change)
    # Counted again: refused, nothing written.
    r = post(client, relieved, "cash-count", staff_change=str(relieved.change.pk), float_issued="0", counted="1")
    assert r.status_code == 409 and CashCount.objects.count() == 2


def test_the_final_count_says_what_arose_since_the_handover(relieved, client_for, commissario):
    services.cash_count_record(session=relieved.session, by=commissario, float_issued=1_000_00, counted=1_745_00,
                               staff_change=relieved.change)  # fmt: skip
    floor_services.table_session_close(session=relieved.session, by=commissario)
    client = client_for(commissario)
    r = post(client, relieved, "cash-count", float_issued="1000", counted="1840")
    assert r.status_code == 200, r.content.decode()
    final = CashCount.objects.get(staff_change__isnull=True)
    assert (final.net, final.difference) == (850_00, -10_00)
    html = page(client, relieved)
    drawer = html.split('id="drawer-title"', 1)[1].split("</dl>", 1)[0]
    # -10.00 in all, -5.00 of it at the handover: -5.00 since.
    assert "-10 (shortfall)" in drawer and "of which since the handover" in drawer and "<dd>€\xa0-5</dd>" in drawer
    assert "-5 (shortfall)" in _handover(html, relieved.change)


@pytest.mark.parametrize("who", ["changeur", "successor", "auditor"])
def test_no_one_else_is_offered_the_handover_form_nor_may_post_it(relieved, client_for, who, request):
    user = relieved.successor if who == "successor" else request.getfixturevalue(who)
    client = client_for(user)
    html = page(client, relieved)
    if 'id="handover-title-' in html:  # (a relieved changeur reads the register no more)
        assert HANDOVER_FORM not in html
    r = post(client, relieved, "cash-count", staff_change=str(relieved.change.pk), float_issued="0", counted="750")
    assert r.status_code == 403 and not CashCount.objects.exists()


def test_a_bad_handover_on_the_page_writes_nothing(relieved, client_for, commissario, make_game):
    client = client_for(commissario)
    events = AuditEvent.objects.count()
    for staff_change in ("abc", "999999999"):
        r = post(client, relieved, "cash-count", staff_change=staff_change, float_issued="0", counted="750")
        assert r.status_code == 400, (staff_change, r.status_code)
    assert "This handover is not of this table session." in unescape(r.content.decode())
    assert not CashCount.objects.exists() and AuditEvent.objects.count() == events


def test_the_handover_in_italian_is_all_italian(relieved, commissario):
    evening = Evening()
    boss = evening.client(commissario)
    tablet = f"/tablet/sessions/{relieved.session.pk}/"
    html = evening.get(boss, tablet).content.decode()
    assert "Questo cassetto non è ancora contato" in html and "Registra il conteggio al cambio turno" in html
    assert "Il netto incassato del registro fino al cambio turno: €\xa0+750; il cassetto deve contenerlo" in html
    r = evening.post(boss, tablet + "cash-count/", staff_change=str(relieved.change.pk), float_issued="1.000",
                     counted="1.745")  # fmt: skip
    assert "Cassetto del cambio turno contato." in unescape(r.content.decode())
    count = CashCount.objects.get()
    r = evening.post(boss, tablet + "cash-count-correct/", count=str(count.pk), counted="1.750", reason="recount")
    assert "Conteggio del cassetto al cambio turno corretto." in unescape(r.content.decode())
    evening.post(boss, tablet + "cash-count/", staff_change="999999999", float_issued="0", counted="1")
    html = evening.get(boss, tablet).content.decode()
    assert "netto incassato fino al cambio turno" in html
    floor_services.table_session_close(session=relieved.session, by=commissario)
    evening.post(boss, tablet + "cash-count/", float_issued="1.000", counted="1.840")
    assert "di cui dopo il cambio turno" in evening.get(boss, tablet).content.decode()
    assert evening.problems == []


def test_a_handover_counted_is_not_the_sessions_drawer(relieved, client_for, commissario):
    """Closed with only its handover counted: the session's drawer reads not counted, on its page
    and on the floor's dashboard, and the final count is offered."""
    services.cash_count_record(session=relieved.session, by=commissario, float_issued=0, counted=750_00,
                               staff_change=relieved.change)  # fmt: skip
    floor_services.table_session_close(session=relieved.session, by=commissario)
    client = client_for(commissario)
    html = page(client, relieved)
    drawer = html.split('id="drawer-title"', 1)[1]
    assert "The drawer is not counted yet." in drawer and FORM in drawer.split("</form>", 1)[0]
    section = client.get("/floor/").content.decode().split("Closed sessions: the changeur's drawers", 1)[1]
    assert "drawer not counted" in section.split("</section>", 1)[0]


def test_the_handover_s_chips_are_shown_whole_as_the_final_count_s(relieved, client_for, commissario):
    """The handover's panel showed the chips as their difference alone, and its corrected counts
    without their chips: the tray handed over reads as the final one's, every figure (float,
    handed out up to the handover, expected, counted, difference), and a corrected count's
    chips under its cash. A tray of 3,000.00 less the 750.00 handed out up to the handover
    should hold 2,250.00; 2,240.00 found is 10.00 short."""
    count = services.cash_count_record(session=relieved.session, by=commissario, float_issued=1_000_00,
                                       counted=1_750_00, chips_float=3_000_00, chips_counted=2_240_00,
                                       staff_change=relieved.change)  # fmt: skip
    client = client_for(commissario)
    part = unescape(_handover(page(client, relieved), relieved.change))
    chips = part.split('class="facts drawer-chips"', 1)[1].split("</dl>", 1)[0]
    for term, figure in (("chips' float", "€\xa03\u202f000"), ("chips handed out, net", "€\xa0+750"),
                         ("chips expected in the tray", "€\xa02\u202f250"), ("chips counted", "€\xa02\u202f240"),
                         ("chips' difference", "€\xa0-10 (shortfall)")):  # fmt: skip
        assert f"<dt>{term}</dt><dd>{figure}</dd>" in chips, term
    services.cash_count_correct(count=count, by=commissario, chips_counted=2_250_00, reason="a plaque")
    html = page(client, relieved)
    assert "€\xa00 (exact)" in _handover(html, relieved.change).split('class="facts drawer-chips"', 1)[1]
    (cash, chips_row), = _corrected(_handover(html, relieved.change))
    figures = lambda row: re.findall(r'<td class="num">(.*?)</td>', row)  # noqa: E731
    assert figures(cash) == ["1\u202f000", "1\u202f750", "<del>1\u202f750</del>", "0"]
    assert figures(chips_row) == ["3\u202f000", "2\u202f250", "<del>2\u202f240</del>", "-10"]


def test_the_final_count_says_what_of_the_chips_arose_since_the_handover(relieved, client_for, commissario):
    """A tray 10.00 short at the handover and as short at the end read as the successor's
    shortfall: the final count's chips say the part since the handover (none), as its cash."""
    services.cash_count_record(session=relieved.session, by=commissario, float_issued=1_000_00, counted=1_750_00,
                               chips_float=3_000_00, chips_counted=2_240_00, staff_change=relieved.change)  # fmt: skip
    floor_services.table_session_close(session=relieved.session, by=commissario)
    services.cash_count_record(session=relieved.session, by=commissario, float_issued=1_000_00, counted=1_850_00,
                               chips_float=3_000_00, chips_counted=2_140_00)  # fmt: skip
    html = unescape(page(client_for(commissario), relieved))
    final = html.split('id="drawer-title"', 1)[1]
    chips = final.split('class="facts drawer-chips"', 1)[1].split("</dl>", 1)[0]
    assert "<dt>chips' difference</dt><dd>€\xa0-10 (shortfall)</dd>" in chips
    assert "<dt>of which since the handover</dt><dd>€\xa00</dd>" in chips
    # The handover's own chips: no earlier handover, nothing derived.
    assert "since" not in _handover(html, relieved.change).split('class="facts drawer-chips"', 1)[1].split("</dl>")[0]


def test_a_handover_counted_without_its_chips_says_so(relieved, client_for, commissario):
    services.cash_count_record(session=relieved.session, by=commissario, float_issued=0, counted=750_00,
                               staff_change=relieved.change)  # fmt: skip
    part = unescape(_handover(page(client_for(commissario), relieved), relieved.change))
    assert "The chips in the changeur's tray were not counted." in part and "drawer-chips" in part
    it = unescape(client_for(commissario).get(f"/tablet/sessions/{relieved.session.pk}/",
                                              HTTP_ACCEPT_LANGUAGE="it").content.decode())  # fmt: skip
    assert "The chips in the changeur's tray" not in it


def test_a_handover_not_counted_says_what_its_drawer_should_hold_and_where_a_late_count_goes(
    relieved, client_for, commissario, auditor, direzione, make_user
):
    """A handover not counted said only that it was "held to the register's lines up to the
    handover", the session's net above running on past it (here 850.00, the handover's 750.00):
    it says its net, as the final count does. After the day's close, its count went into the
    day's books unsaid (said only below, by the final count's)."""
    client = client_for(commissario)
    part = _handover(page(client, relieved), relieved.change)
    assert "The register's net cash taken up to the handover: €\xa0+750; the drawer should hold" in part
    floor_services.table_session_close(session=relieved.session, by=commissario)
    services.cash_count_record(session=relieved.session, by=commissario, float_issued=0, counted=850_00)
    floor_services.gaming_day_close(gaming_day=relieved.session.gaming_day, by=commissario, open_sessions="refuse")
    part = _handover(page(client, relieved), relieved.change)
    assert LATE in part and HANDOVER_FORM in part
    assert LATE not in _handover(page(client_for(auditor), relieved), relieved.change)
    _sign_books(relieved, direzione, make_user)
    part = _handover(page(client, relieved), relieved.change)
    assert "not counted at the handover before the day's books were signed. The register's net cash " \
           "taken up to the handover: €\xa0+750." in part and LATE not in part and HANDOVER_FORM not in part


def _page_queries(client, game) -> tuple[int, str]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        html = page(client, game)
    return len(captured), unescape(html)


def test_the_handovers_not_counted_read_their_nets_in_one_query_however_many(
    relieved, client_for, commissario, make_user
):
    """Each handover not counted says the register's net up to it: one query each made the
    page grow with the reliefs. One handover not counted, then three (a line voided after its
    handover, a line recorded at a handover's very time): as many queries, the same nets as
    the register's totals up to each handover (the voids as they stand, the lines at or before
    the change's time)."""
    from floor.models import StaffChange
    from floor.roles import Role
    from tables.models import CashExchange
    from tables.selectors import cash_exchange_totals

    client = client_for(commissario)
    few, html = _page_queries(client, relieved)
    assert "up to the handover: €\xa0+750;" in html
    for n in (2, 3):
        incoming = make_user(f"changeur_relief_{n}", Role.CHANGEUR)
        floor_services.table_session_staff_change(session=relieved.session, by=commissario, changeur=incoming,
                                                  reason="break")  # fmt: skip
        services.cash_exchange_record(session=relieved.session, by=incoming, direction="buy_in", amount=n * 10_00)
    changes = list(StaffChange.objects.filter(session=relieved.session).order_by("at", "pk"))
    # A line at the second handover's very time is the relieved changeur's; the first line, voided
    # now, leaves every handover's net.
    last = CashExchange.objects.filter(session=relieved.session).order_by("-number").first()
    CashExchange.objects.filter(pk=last.pk).update(at=changes[2].at)
    first = CashExchange.objects.filter(session=relieved.session).order_by("number").first()
    services.cash_exchange_void(exchange=first, by=commissario, reason="miscounted")
    many, html = _page_queries(client, relieved)
    expected = [cash_exchange_totals(session=relieved.session, until=c.at)["net"] for c in changes]
    assert expected == [-150_00, -50_00, 0]
    for change, net in zip(changes, ("-150", "-50", "0"), strict=True):
        assert f"up to the handover: €\xa0{net};" in _handover(html, change)
    assert many == few


# --------------------------------------------------------------------------- the changeur relieved


def _banner(html: str) -> str:
    return unescape(re.search(r'<p class="banner">(.*?)</p>', html, re.S).group(1))


def test_the_relieved_changeur_reads_when_by_whom_and_his_drawer_s_count(
    relieved, changeur, client_for, commissario, make_user
):
    """The changeur relieved read "Read only: the changeur follows the play", as if he had never
    served the table: he reads when he was relieved, by whom, and whether his drawer is counted
    (and its difference, the chips' too: he signs his count sheet). Relieved, back, relieved
    again: the latest relief. As many queries however many reliefs and counts."""
    from floor.models import StaffChange
    from floor.roles import Role
    from tables.templatetags.chemin_ui import clock

    relieved.successor.first_name, relieved.successor.last_name = "Anna", "Bianchi"
    relieved.successor.save()
    client = client_for(changeur)
    few, html = _page_queries(client, relieved)
    at = clock(relieved.change.at)
    assert _banner(html) == (f"You were relieved as this table's changeur at {at} by Anna Bianchi. Your drawer is "
                             "not counted yet: it is counted by the Commissario or the Direzione.")  # fmt: skip
    assert "the changeur follows the play" not in html
    count = services.cash_count_record(session=relieved.session, by=commissario, float_issued=1_000_00,
                                       counted=1_745_00, chips_float=3_000_00, chips_counted=2_240_00,
                                       staff_change=relieved.change)  # fmt: skip
    assert _banner(page(client, relieved)) == (
        f"You were relieved as this table's changeur at {at} by Anna Bianchi. Your drawer was counted at "
        f"{clock(count.counted_at)}: a difference of €\xa0-5 (shortfall). The chips in your tray: a difference of "
        "€\xa0-10 (shortfall)."
    )
    # Back at the table, then relieved again, by Carla Verdi: that relief, its drawer not counted.
    floor_services.table_session_staff_change(session=relieved.session, by=commissario, changeur=changeur,
                                              reason="back")  # fmt: skip
    assert "relieved" not in _banner(page(client, relieved))  # he serves the table again
    third = make_user("changeur_third", Role.CHANGEUR, first_name="Carla", last_name="Verdi")
    floor_services.table_session_staff_change(session=relieved.session, by=commissario, changeur=third,
                                              reason="break")  # fmt: skip
    latest = StaffChange.objects.filter(session=relieved.session).latest("at", "pk")
    many, html = _page_queries(client, relieved)
    assert _banner(html) == (f"You were relieved as this table's changeur at {clock(latest.at)} by Carla Verdi. "
                             "Your drawer is not counted yet: it is counted by the Commissario or the Direzione.")  # fmt: skip
    assert many == few
    # Counted exact, the session closed: said after the close's words.
    services.cash_count_record(session=relieved.session, by=commissario, float_issued=0, counted=850_00,
                               staff_change=latest)  # fmt: skip
    floor_services.table_session_close(session=relieved.session, by=commissario)
    assert _banner(page(client, relieved)).startswith(
        "This table session is closed: its final balances are listed. You were relieved as this table's changeur "
        f"at {clock(latest.at)} by Carla Verdi. Your drawer was counted at "
    )
    assert "a difference of €\xa00 (exact)." in _banner(page(client, relieved))
    # Another changeur's page (the successor's, relieved in turn) is his own relief's.
    assert "by Anna Bianchi" not in _banner(page(client_for(relieved.successor), relieved))


def test_the_relieved_changeur_s_words_late_and_never_counted(relieved, changeur, client_for, commissario,
                                                             direzione, make_user):  # fmt: skip
    """Counted the next day (late): the date is said. Never counted once the books are signed: so said."""
    from datetime import timedelta

    from tables.templatetags.chemin_ui import clock

    count = services.cash_count_record(session=relieved.session, by=commissario, float_issued=0, counted=760_00,
                                       staff_change=relieved.change)  # fmt: skip
    CashCount.objects.filter(pk=count.pk).update(counted_at=relieved.change.at + timedelta(days=1))
    count.refresh_from_db()
    banner = _banner(page(client_for(changeur), relieved))
    assert banner.endswith(f"Your drawer was counted on {clock(count.counted_at, 'Y-m-d')} at "
                           f"{clock(count.counted_at)}: a difference of €\xa0+10 (surplus).")  # fmt: skip
    CashCount.objects.filter(pk=count.pk).delete()
    floor_services.table_session_close(session=relieved.session, by=commissario)
    services.cash_count_record(session=relieved.session, by=commissario, float_issued=0, counted=850_00)
    floor_services.gaming_day_close(gaming_day=relieved.session.gaming_day, by=commissario, open_sessions="refuse")
    _sign_books(relieved, direzione, make_user)
    assert _banner(page(client_for(changeur), relieved)).endswith(
        "Your drawer was not counted before the day's books were signed.")


def test_the_relieved_changeur_s_words_in_italian(relieved, changeur, commissario):
    """In Italian the words name no gender: the relieved changeur read "Sei stato sostituito"
    ("you were relieved", said to a man), which the demo's changeur, Elena, is not. The successor
    is the subject: "X ti ha sostituito", right for anyone."""
    from tables.templatetags.chemin_ui import clock

    relieved.successor.first_name, relieved.successor.last_name = "Anna", "Bianchi"
    relieved.successor.save()
    evening = Evening()
    tablet = f"/tablet/sessions/{relieved.session.pk}/"
    html = unescape(evening.get(evening.client(changeur), tablet).content.decode())
    assert (f"Anna Bianchi ti ha sostituito come changeur di questo tavolo alle {clock(relieved.change.at)}."
            in html)  # fmt: skip
    assert "Sei stato" not in html and "sostituit" not in html.replace("ti ha sostituito", "")
    assert "Il tuo cassetto non è ancora contato: lo conta il Commissario o la Direzione." in html
    services.cash_count_record(session=relieved.session, by=commissario, float_issued=0, counted=740_00,
                               chips_float=1_000_00, chips_counted=250_00, staff_change=relieved.change)  # fmt: skip
    html = unescape(evening.get(evening.client(changeur), tablet).content.decode())
    assert "Il tuo cassetto è stato contato alle" in html and "una differenza di €\xa0-10 (ammanco)." in html
    assert "Le fiches della tua vaschetta: una differenza di €\xa00 (esatto)." in html
    assert evening.problems == []
