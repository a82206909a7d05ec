"""The changeurs' handovers whose drawer is not counted (tables.selectors.handovers_not_counted),
named where the supervisors are told of the sessions' drawers not counted: the floor's list of
the open day's drawers (the session running or closed), the floor's list of the last closed
day's drawers left to count, the desk's day page ("Cash drawer" column) and its register's sign
form. Not counted: a staff change that relieved the changeur with no count of it (a change of
the Capo Partita alone hands no drawer over); each is linked to its count's form on the
session's page, and leaves every list once counted."""

from __future__ import annotations

import re
import uuid
from html import unescape

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from floor import services as floor_services
from floor.models import StaffChange
from floor.roles import Role
from tables import services
from tests.pages.test_floor_drawers import drawers, late
from tests.pages.test_italian import Evening

pytestmark = pytest.mark.django_db


def relieve(game, commissario, changeur) -> StaffChange:
    floor_services.table_session_staff_change(session=game.session, by=commissario, changeur=changeur, reason="break")
    return StaffChange.objects.filter(session=game.session).latest("at", "pk")


def link(change) -> str:
    return f'href="/tablet/sessions/{change.session_id}/#handover-title-{change.pk}"'


def count(change, commissario):
    return services.cash_count_record(session=change.session_id, by=commissario, float_issued=0, counted=0,
                                      staff_change=change)  # fmt: skip


def handovers(html: str, casino_id: int) -> str:
    found = re.search(r'<section class="drawers handovers-uncounted".*?</section>', drawers(html, casino_id), re.S)
    return found.group(0) if found else ""


@pytest.fixture
def relieved(game, commissario, make_user):
    """The session runs; its changeur, Mario Rossi, is relieved."""
    outgoing = game.session.changeur
    outgoing.first_name, outgoing.last_name = "Mario", "Rossi"
    outgoing.save()
    game.change = relieve(game, commissario, make_user("changeur_relief", Role.CHANGEUR))
    return game


# --------------------------------------------------------------------------- the floor, the day open


def test_the_floor_names_the_handover_not_counted_while_the_session_runs(relieved, client_for, commissario,
                                                                          make_user, auditor):  # fmt: skip
    change, casino = relieved.change, relieved.session.table.casino_id
    # A change of the Capo Partita alone hands no drawer over: not listed.
    floor_services.table_session_staff_change(session=relieved.session, by=commissario, reason="break",
                                              capo_partita=make_user("capo_relief", Role.CAPO_PARTITA))  # fmt: skip
    for who in (commissario, auditor):
        part = unescape(handovers(client_for(who).get("/floor/").content.decode(), casino))
        assert "Changeurs' handovers: drawers not counted" in part
        at = re.escape(change.at.astimezone().strftime("%H:%M"))
        assert re.search(rf'<a class="button-link" {link(change)}>Table {relieved.session.table.number}, session '
                         rf"{relieved.session.number}: the drawer Mario Rossi handed over at {at}</a>", part), part  # fmt: skip
        assert part.count("<li>") == 1
    count(change, commissario)
    assert handovers(client_for(commissario).get("/floor/").content.decode(), casino) == ""


def test_an_htmx_relief_lists_the_handover_at_once(game, client_for, make_user):
    """The relief of the changeur on the table's card: its handover, not counted, is in the
    answer's drawers' list (out of band), as a close's drawer is."""
    client = client_for(game.commissario)
    session, casino = game.session, game.session.table.casino_id
    relief = make_user("changeur_relief", Role.CHANGEUR)
    answer = client.post(f"/floor/tables/{session.table_id}/staff/", {
        "session": session.pk, "current_capo_partita": str(session.capo_partita_id),
        "current_changeur": str(session.changeur_id), "capo_partita": str(session.capo_partita_id),
        "changeur": str(relief.pk), "reason": "break", "idempotency_key": str(uuid.uuid4()),
    }, HTTP_HX_REQUEST="true")  # fmt: skip
    assert answer.status_code == 200, answer.content.decode()[:2000]
    html = answer.content.decode()
    part = drawers(html, casino)
    assert 'hx-swap-oob="true"' in part.split(">", 1)[0]
    assert link(StaffChange.objects.get(session=session)) in handovers(html, casino)
    assert "day-close" not in html or "hx-swap-oob" not in html.split("day-close", 1)[1][:200]


def test_the_running_session_s_card_links_its_handover_to_count(relieved, client_for, commissario, direzione,
                                                                 auditor, make_user):  # fmt: skip
    """The table's card had no link of its own to a handover still to count (only the floor's
    list below the tables had): it links each, to its count's form, for the Commissario and
    the Direzione (who count it), a touch target; not for the auditor; gone once counted."""
    change = relieved.change
    at = re.escape(change.at.astimezone().strftime("%H:%M"))
    for who in (commissario, direzione):
        part = unescape(card(client_for(who).get("/floor/").content.decode(), relieved))
        assert re.search(rf'<a class="button-link" {link(change)}>Count the drawer Mario Rossi handed over at {at}</a>',
                         part), part  # fmt: skip
    assert "Count the drawer" not in client_for(auditor).get("/floor/").content.decode()
    # The relief of the new changeur from the card (htmx): the card answered links both, and the
    # other tables' cards swapped with it keep theirs.
    client = client_for(commissario)
    session = relieved.session
    session.refresh_from_db()
    answer = client.post(f"/floor/tables/{session.table_id}/staff/", {
        "session": session.pk, "current_capo_partita": str(session.capo_partita_id),
        "current_changeur": str(session.changeur_id), "capo_partita": str(session.capo_partita_id),
        "changeur": str(make_user("changeur_third", Role.CHANGEUR).pk), "reason": "break",
        "idempotency_key": str(uuid.uuid4()),
    }, HTTP_HX_REQUEST="true")  # fmt: skip
    assert answer.status_code == 200
    second = StaffChange.objects.filter(session=session).latest("at", "pk")
    part = card(answer.content.decode(), relieved)
    assert link(change) in part and link(second) in part and part.count("Count the drawer") == 2
    count(change, commissario)
    part = card(client.get("/floor/").content.decode(), relieved)
    assert link(change) not in part and link(second) in part
    it = unescape(client.get("/floor/", HTTP_ACCEPT_LANGUAGE="it").content.decode())
    assert "Conta il cassetto consegnato da" in card(it, relieved)


def test_the_other_cards_swapped_with_a_relief_keep_their_handover_links(relieved, make_game, client_for,
                                                                         commissario, make_user):  # fmt: skip
    """A relief's answer swaps every table's card (its staff lists): each keeps its links, in
    as many queries however many handovers there are to link."""
    other = make_game("venezia")
    client = client_for(commissario)

    def relief(game, username: str) -> tuple[int, str]:
        session = game.session
        session.refresh_from_db()
        with CaptureQueriesContext(connection) as captured:
            answer = client.post(f"/floor/tables/{session.table_id}/staff/", {
                "session": session.pk, "current_capo_partita": str(session.capo_partita_id),
                "current_changeur": str(session.changeur_id), "capo_partita": str(session.capo_partita_id),
                "changeur": str(make_user(username, Role.CHANGEUR).pk), "reason": "break",
                "idempotency_key": str(uuid.uuid4()),
            }, HTTP_HX_REQUEST="true")  # fmt: skip
        assert answer.status_code == 200
        return len(captured), answer.content.decode()

    few, html = relief(other, "changeur_other")
    assert 'hx-swap-oob="true"' in card(html, relieved).split(">", 1)[0]
    assert link(relieved.change) in card(html, relieved)
    for n in range(3):
        relieve(relieved, commissario, make_user(f"relief_{n}", Role.CHANGEUR))
    many, html = relief(other, "changeur_other_2")
    assert card(html, relieved).count("Count the drawer") == 4 and card(html, other).count("Count the drawer") == 2
    assert many == few


# --------------------------------------------------------------------------- the floor, the day closed


def test_once_the_day_is_closed_the_floor_lists_the_handover_left_to_count(relieved, client_for, commissario):
    """Every session's drawer counted, the handover not: the last day is still listed, with the
    handover's link; counted (late), the day leaves the list."""
    floor_services.table_session_close(session=relieved.session, by=commissario)
    services.cash_count_record(session=relieved.session, by=commissario, float_issued=0, counted=0)
    day = relieved.session.gaming_day
    floor_services.gaming_day_close(gaming_day=day, by=commissario, open_sessions="refuse")
    client, casino = client_for(commissario), day.casino_id
    part = late(client.get("/floor/").content.decode(), casino)
    assert link(relieved.change) in part and f"/tablet/sessions/{relieved.session.pk}/#drawer-title" not in part
    assert "the drawer Mario Rossi handed over at" in unescape(part)
    count(relieved.change, commissario)
    assert late(client.get("/floor/").content.decode(), casino) == ""


# --------------------------------------------------------------------------- the desk


def _desk_ready(game, commissario, direzione):
    from audit.reports import registers
    from tables import report_selectors

    day, table = game.session.gaming_day, game.session.table
    floor_services.table_session_close(session=game.session, by=commissario)
    services.cash_count_record(session=game.session, by=commissario, float_issued=0, counted=0)
    floor_services.gaming_day_close(gaming_day=day, by=commissario, open_sessions="refuse")
    registers.cagnotte_count_record(
        gaming_day=day, table=table, by=direzione, witness=commissario,
        counted=report_selectors.expected_cagnotte(gaming_day_id=day.pk, table_id=table.pk),
    )  # fmt: skip
    registers.control_register_prepare(gaming_day=day, by=direzione)
    return day


def test_the_desk_names_the_handover_in_the_drawer_column_and_at_the_signature(
    relieved, client_for, commissario, direzione
):
    """The session's drawer counted, its handover not: the desk's day page said "drawer counted"
    and its sign form warned of nothing, and the books were signed over a drawer never counted.
    The column and the sign form name the changeur relieved and when, linked to the form."""
    day = _desk_ready(relieved, commissario, direzione)
    desk = client_for(direzione)
    html = unescape(desk.get(f"/desk/days/{day.pk}/").content.decode())
    row = re.search(rf'<tr data-session="{relieved.session.pk}">(.*?)</tr>', html, re.S).group(1)
    at = relieved.change.at.astimezone().strftime("%H:%M")
    assert "drawer counted" in row and link(relieved.change) in row
    assert f"Mario Rossi's handover at {at} not counted" in row
    warning = ("A changeur's drawer handed over is not counted: once the register is signed by both, it can no "
               "longer be counted.")  # fmt: skip
    assert warning in html and html.index(warning) < html.index("Sign first")
    banner = html.split('class="banner warn handovers-uncounted"', 1)[1].split("</div>", 1)[0]
    assert link(relieved.change) in banner and "the drawer Mario Rossi handed over at" in banner
    assert "drawers-uncounted" not in html.replace("handovers-uncounted", "")  # the session's drawer is counted
    it = unescape(desk.get(f"/desk/days/{day.pk}/", HTTP_ACCEPT_LANGUAGE="it").content.decode())
    assert "Il cassetto consegnato da un changeur al cambio turno non è contato" in it
    assert f"cassetto consegnato da Mario Rossi alle {at} non contato" in it
    count(relieved.change, commissario)
    html = desk.get(f"/desk/days/{day.pk}/").content.decode()
    assert "handovers-uncounted" not in html and "handover-uncounted" not in html


def test_the_desk_shows_every_handover_of_the_day_counted_or_not(relieved, client_for, commissario, direzione,
                                                                 auditor, make_user):  # fmt: skip
    """The "Cash drawer" column named only the handovers not counted: a drawer relieved and
    counted was nowhere on the day's page, so an auditor could not see every relieved drawer of
    the day. Each counted one says the changeur relieved, when, the difference of its count in
    force, and the chips' when counted; linked to its count on the session's page."""
    second = relieve(relieved, commissario, make_user("changeur_third", Role.CHANGEUR))
    first = services.cash_count_record(session=relieved.session, by=commissario, float_issued=100_00, counted=95_00,
                                       chips_float=1_000_00, chips_counted=1_010_00, staff_change=relieved.change)  # fmt: skip
    services.cash_count_correct(count=first, by=commissario, counted=96_50, reason="a coin found")
    day = _desk_ready(relieved, commissario, direzione)
    html = unescape(client_for(auditor).get(f"/desk/days/{day.pk}/").content.decode())
    row = re.search(rf'<tr data-session="{relieved.session.pk}">(.*?)</tr>', html, re.S).group(1)
    at = relieved.change.at.astimezone().strftime("%H:%M")
    assert re.search(rf'<a class="handover-counted" {link(relieved.change)}>Mario Rossi\'s handover at {at} counted: '
                     r"difference €\xa0-3.50, chips €\xa0\+10.00, count corrected</a>", row), row  # fmt: skip
    assert link(second) in row and "handover at" in row.split(link(second), 1)[1].split("</a>")[0]
    assert "not counted" in row.split(link(second), 1)[1].split("</a>")[0]
    # Counted, without its chips: its cash alone. The banner names no handover any more.
    services.cash_count_record(session=relieved.session, by=commissario, float_issued=0, counted=0,
                               staff_change=second)  # fmt: skip
    html = unescape(client_for(auditor).get(f"/desk/days/{day.pk}/").content.decode())
    counted = re.findall(r'<a class="handover-counted" [^>]*>(.*?)</a>', html)
    assert len(counted) == 2 and counted[1].endswith("counted: difference €\xa00.00")
    assert "handovers-uncounted" not in html and "handover-uncounted" not in html
    it = unescape(client_for(auditor).get(f"/desk/days/{day.pk}/", HTTP_ACCEPT_LANGUAGE="it").content.decode())
    assert f"cassetto consegnato da Mario Rossi alle {at} contato: differenza €\xa0-3,50, fiches €\xa0+10,00, conteggio " \
           "corretto" in it


def _drawer_cell(html: str, game) -> str:
    return re.search(rf'<tr data-session="{game.session.pk}">.*?<td class="drawer">(.*?)</td>', html, re.S).group(1)


def test_the_desk_says_each_final_count_beside_its_handovers_in_the_same_queries(
    relieved, make_game, client_for, commissario, auditor
):
    """The "Cash drawer" column said a handover's difference but of the session's final count
    only "drawer counted": a manager could not read a drawer's whole story in one place. The
    final count in force says its difference, its chips' when counted, and that it is a
    correction when it is one, in the handovers' words; in as many queries for one session
    counted as for three."""
    client = client_for(auditor)
    day = relieved.session.gaming_day
    count(relieved.change, commissario)
    floor_services.table_session_close(session=relieved.session, by=commissario)
    final = services.cash_count_record(session=relieved.session, by=commissario, float_issued=100_00, counted=95_00,
                                       chips_float=1_000_00, chips_counted=1_010_00)  # fmt: skip
    services.cash_count_correct(count=final, by=commissario, counted=96_50, reason="a coin found")
    few, html = _queries(client, f"/desk/days/{day.pk}/")
    cell = _drawer_cell(html, relieved)
    assert re.search(rf'<a href="/tablet/sessions/{relieved.session.pk}/#drawer-title"><span class="drawer-counted">'
                     r"drawer counted: difference €\xa0-3.50, chips €\xa0\+10.00, count corrected</span></a>", cell), cell  # fmt: skip
    assert "counted: difference €\xa00.00</a>" in cell.split(link(relieved.change), 1)[1]  # its handover beside it
    # Two more sessions: one counted (no chips, no correction), one closed and not counted.
    counted, uncounted = make_game("venezia"), make_game("venezia")
    for other in (counted, uncounted):
        floor_services.table_session_close(session=other.session, by=commissario)
    services.cash_count_record(session=counted.session, by=commissario, float_issued=50_00, counted=52_00)
    many, html = _queries(client, f"/desk/days/{day.pk}/")
    assert many == few
    assert "drawer counted: difference €\xa0-3.50, chips €\xa0+10.00, count corrected" in _drawer_cell(html, relieved)
    cell = _drawer_cell(html, counted)
    assert '<span class="drawer-counted">drawer counted: difference €\xa0+2.00</span>' in cell and "corrected" not in cell
    assert "<strong>drawer not counted</strong>" in _drawer_cell(html, uncounted)
    it = unescape(client.get(f"/desk/days/{day.pk}/", HTTP_ACCEPT_LANGUAGE="it").content.decode())
    assert "cassetto contato: differenza €\xa0-3,50, fiches €\xa0+10,00, conteggio corretto" in it
    assert "cassetto contato: differenza €\xa0+2,00</span>" in it


def test_the_handovers_in_italian(relieved, commissario):
    evening = Evening()
    html = unescape(evening.get(evening.client(commissario), "/floor/").content.decode())
    assert "Cambi turno dei changeur: cassetti non contati" in html
    assert f"Tavolo {relieved.session.table.number}, sessione {relieved.session.number}: il cassetto consegnato da " \
           "Mario Rossi alle" in html
    assert evening.problems == []


# --------------------------------------------------------------------------- the queries


def _queries(client, url: str) -> tuple[int, str]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200
    return len(captured), unescape(response.content.decode())


def listed(html: str) -> int:
    """The handovers in the floor's lists (the tables' cards link them in other words)."""
    return len(re.findall(r"session \d+: the drawer [^<]* handed over at", html))


def card(html: str, game) -> str:
    return re.search(rf'<article class="table-card" id="table-{game.session.table_id}".*?</article>', html,
                     re.S).group(0)  # fmt: skip


def test_the_floor_and_the_desk_read_the_handovers_in_the_same_queries_however_many(
    relieved, make_game, client_for, commissario, direzione, auditor, make_user
):
    """One handover not counted, then four over three sessions (one of them counted, one a
    change of the Capo Partita alone): as many queries for the floor (the day open, then
    closed; the tables' cards link them, to the Commissario) and for the desk's day page."""
    client, desk = client_for(commissario), client_for(direzione)
    day = relieved.session.gaming_day
    few, html = _queries(client, "/floor/")
    assert listed(html) == 1 and html.count("Count the drawer") == 1
    auditor_few, _html = _queries(client_for(auditor), "/floor/")
    others = [make_game("venezia"), make_game("venezia")]
    changes = [relieve(relieved, commissario, make_user("relief_2", Role.CHANGEUR))]
    for n, other in enumerate(others, 3):
        changes.append(relieve(other, commissario, make_user(f"relief_{n}", Role.CHANGEUR)))
        changes.append(relieve(other, commissario, make_user(f"relief_{n}b", Role.CHANGEUR)))
    floor_services.table_session_staff_change(session=others[0].session, by=commissario, reason="break",
                                              capo_partita=make_user("capo_relief", Role.CAPO_PARTITA))  # fmt: skip
    count(changes[-1], commissario)
    many, html = _queries(client, "/floor/")
    assert listed(html) == 5
    # Each linked from its running session's card too (the counted one not).
    for game, n in ((relieved, 2), (others[0], 2), (others[1], 1)):
        assert card(html, game).count("Count the drawer") == n
    assert many == few
    auditor_many, html = _queries(client_for(auditor), "/floor/")
    assert "Count the drawer" not in html and auditor_many == auditor_few
    # The day closed: the desk's page and the floor's list of the drawers left to count.
    for game in (relieved, *others):
        floor_services.table_session_close(session=game.session, by=commissario)
    floor_services.gaming_day_close(gaming_day=day, by=commissario, open_sessions="refuse")
    late_many, html = _queries(client, "/floor/")
    assert listed(html) == 5
    desk_many, html = _queries(desk, f"/desk/days/{day.pk}/")
    assert len(re.findall(r"'s handover at \d\d:\d\d not counted", html)) == 5
    for change in (relieved.change, *changes[:-1]):
        count(change, commissario)
    late_few, html = _queries(client, "/floor/")
    assert listed(html) == 0 and "drawers not counted" in html  # the sessions' drawers left
    desk_few, html = _queries(desk, f"/desk/days/{day.pk}/")
    assert "not counted</strong></a>" not in html.replace("drawer not counted</strong></a>", "")
    assert len(re.findall(r"'s handover at \d\d:\d\d counted: difference", html)) == 6
    assert (late_many, desk_many) == (late_few, desk_few)


# --------------------------------------------------------------------------- the card's poll


def live(client, game) -> tuple[int, str]:
    """The card's part its poll refreshes every 5 s (floor-table-live), and its queries."""
    with CaptureQueriesContext(connection) as captured:
        response = client.get(f"/floor/tables/{game.session.table_id}/live/", HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    return len(captured), unescape(response.content.decode())


def test_the_card_s_poll_links_a_relief_made_elsewhere_and_drops_a_handover_counted_elsewhere(
    game, client_for, commissario, direzione, auditor, make_user
):
    """The card's links sat outside its live part: a relief made elsewhere (another
    Commissario's page, the API) was linked, and a handover counted elsewhere unlinked, only
    when the whole card was rendered again. The card's poll brings them now, to those who count
    a drawer (a touch target each); not to the auditor."""
    client, desk, reader = client_for(commissario), client_for(direzione), client_for(auditor)
    assert "Count the drawer" not in live(client, game)[1]
    change = relieve(game, commissario, make_user("changeur_relief", Role.CHANGEUR))
    at = re.escape(change.at.astimezone().strftime("%H:%M"))
    name = change.old_changeur.get_full_name() or change.old_changeur.username
    for who in (client, desk):
        html = live(who, game)[1]
        assert re.search(rf'<ul class="drawer-links card-handovers">\s*<li><a class="button-link" {link(change)}>'
                         rf"Count the drawer {re.escape(name)} handed over at {at}</a></li>", html), html  # fmt: skip
    assert "Count the drawer" not in live(reader, game)[1] and "card-handovers" not in live(reader, game)[1]
    count(change, direzione)
    html = live(client, game)[1]
    assert link(change) not in html and "card-handovers" not in html


def test_the_card_s_poll_reads_the_handovers_in_one_query_however_many(game, client_for, commissario, make_user):
    client = client_for(commissario)
    first = relieve(game, commissario, make_user("relief_1", Role.CHANGEUR))
    one, html = live(client, game)
    assert html.count("Count the drawer") == 1 and link(first) in html
    changes = [relieve(game, commissario, make_user(f"relief_{n}", Role.CHANGEUR)) for n in range(2, 6)]
    several, html = live(client, game)
    assert html.count("Count the drawer") == 5 and all(link(change) in html for change in changes)
    assert several == one
    with CaptureQueriesContext(connection) as captured:
        client.get(f"/floor/tables/{game.session.table_id}/live/", HTTP_HX_REQUEST="true")
    assert sum('"floor_staffchange"' in q["sql"] for q in captured.captured_queries) == 1
