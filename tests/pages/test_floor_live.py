"""The floor follows what others change without a reload: the casino's section its gaming day
(opened or closed from another tab, by another Commissario, through the API) and the tables
in play (floor-casino-live), each card its table's state (floor-table-live: play interrupted or
resumed, the session opened or closed, its limits, the day). The cards kept their open form
once the day was closed elsewhere, and their Interrupt form once play was interrupted
elsewhere, until a reload or a refused action."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from floor import services as floor_services
from floor.roles import Role
from tests.factories import SiteFactory

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


def _element(html: str, tag: str, start: int) -> str:
    """The element opening at `start`, to its own closing tag (the same tags nested in it)."""
    depth, at = 0, start
    for found in re.finditer(rf"<(/?){tag}\b", html[start:]):
        depth += -1 if found.group(1) else 1
        if depth == 0:
            at = start + found.end()
            return html[start : html.index(">", at) + 1]
    raise AssertionError(f"<{tag}> not closed")


def _oob(html: str) -> dict[str, str]:
    """The elements an answer swaps out of band, by id, with their markup."""
    return {
        found.group(2): _element(html, found.group(1), found.start())
        for found in re.finditer(r'<(\w+)[^>]*\bid="([^"]+)"[^>]*\bhx-swap-oob="true"[^>]*>', html)
    }


def casino_poll(html: str, casino) -> str:
    head = re.search(rf'<div id="casino-head-{casino.pk}".*', html, re.S).group(0)
    return unescape(re.search(r'<div hidden data-poll hx-get="([^"]+)"', head).group(1))


def card_poll(html: str, table) -> str:
    card = re.search(rf'<article class="table-card" id="table-{table.pk}".*?</article>', html, re.S).group(0)
    return unescape(re.search(r'<div class="live" data-poll hx-get="([^"]+)"', card).group(1))


# ----------------------------------------------------------------------------- the casino's day


def test_the_casino_section_polls_saying_its_day_and_its_tables_in_play(client_for, make_game, commissario, casino):
    game = make_game("venezia")
    client = client_for(commissario)
    html = client.get("/floor/").content.decode()
    day = game.session.gaming_day
    url = casino_poll(html, casino)
    assert url == f"/floor/casinos/{casino.pk}/live/?day={day.pk}&play={game.session.table.number}"
    head = re.search(rf'<div id="casino-head-{casino.pk}"[^>]*>', html).group(0)
    assert "hx-swap-oob" not in head
    assert 'hx-trigger="every 5s"' in html.split(f'id="casino-head-{casino.pk}"', 1)[1]
    assert client.get(url, **HX).status_code == 204


def test_a_day_closed_elsewhere_brings_the_open_form_and_one_opened_its_close(client_for, commissario, casino, site):
    client = client_for(commissario)
    day = floor_services.gaming_day_open(casino=casino, by=commissario)
    floor_services.table_create(casino=casino, site=site, number=4, by=commissario)
    said = f"/floor/casinos/{casino.pk}/live/?day={day.pk}&play="
    assert client.get(said, **HX).status_code == 204
    floor_services.gaming_day_close(gaming_day=day, by=commissario, open_sessions="refuse")
    answer = client.get(said, **HX)
    assert answer.status_code == 200 and answer["HX-Reswap"] == "none"
    swapped = _oob(answer.content.decode())
    assert set(swapped) == {f"casino-head-{casino.pk}"}
    head = swapped[f"casino-head-{casino.pk}"]
    assert "no gaming day open" in head and f'id="day-open-{casino.pk}"' in head
    assert "No gaming day is open: the tables open once it is." in head
    assert "Close the gaming day" not in head
    assert "?day=0&play=" in unescape(head)
    assert client.get(f"/floor/casinos/{casino.pk}/live/?day=0&play=", **HX).status_code == 204
    italian = client.get(f"/floor/casinos/{casino.pk}/live/?day={day.pk}&play=", HTTP_ACCEPT_LANGUAGE="it", **HX)
    assert "Apri la giornata di gioco" in italian.content.decode()


def test_a_day_opened_elsewhere_brings_its_close(client_for, commissario, casino, site):
    client = client_for(commissario)
    floor_services.table_create(casino=casino, site=site, number=4, by=commissario)
    said = casino_poll(client.get("/floor/").content.decode(), casino)
    assert said == f"/floor/casinos/{casino.pk}/live/?day=0&play="
    assert client.get(said, **HX).status_code == 204
    day = floor_services.gaming_day_open(casino=casino, by=commissario)
    head = _oob(client.get(said, **HX).content.decode())[f"casino-head-{casino.pk}"]
    assert f'id="day-open-{casino.pk}"' not in head and "Close the gaming day" in head
    assert f"gaming day {day.date:%Y-%m-%d}" in head and "No gaming day is open" not in head
    assert f"?day={day.pk}&play=" in unescape(head)
    italian = client.get(said, HTTP_ACCEPT_LANGUAGE="it", **HX)
    assert "Chiudi la giornata di gioco" in italian.content.decode()


def test_a_table_closed_elsewhere_offers_the_close_of_the_day(client_for, make_game, commissario, casino):
    game = make_game("venezia", bank=None)
    client = client_for(commissario)
    day = game.session.gaming_day
    said = f"/floor/casinos/{casino.pk}/live/?day={day.pk}&play={game.session.table.number}"
    floor_services.table_session_close(session=game.session, by=commissario)
    head = _oob(client.get(said, **HX).content.decode())[f"casino-head-{casino.pk}"]
    assert "still in play" not in head and 'name="confirm"' in head
    # The session closed, with its drawer to count, listed with it.
    assert "Closed sessions: the changeur's drawers" in head


def test_the_casino_poll_is_for_the_floor_s_readers(client_for, commissario, auditor, direzione, casino, make_user):
    day = floor_services.gaming_day_open(casino=casino, by=commissario)
    url = f"/floor/casinos/{casino.pk}/live/?day=0&play="
    for reader in (auditor, direzione):
        head = _oob(client_for(reader).get(url, **HX).content.decode())[f"casino-head-{casino.pk}"]
        # Read only: no form of the day.
        assert f"gaming day {day.date:%Y-%m-%d}" in head and "<form" not in head
    for outsider in (make_user("capo_x", Role.CAPO_PARTITA), make_user("nobody")):
        assert client_for(outsider).get(url, **HX).status_code == 403
    plain = client_for(commissario).get(url)
    assert (plain.status_code, plain["Location"]) == (302, "/floor/")


def test_the_casino_poll_reads_as_many_queries_however_many_tables(
    client_for, make_game, commissario, casino, site
):
    first = make_game("venezia")
    client = client_for(commissario)
    day = first.session.gaming_day

    def queries(url: str) -> tuple[int, int]:
        with CaptureQueriesContext(connection) as captured:
            answer = client.get(url, **HX)
        return len(captured), answer.status_code

    quiet, status = queries(f"/floor/casinos/{casino.pk}/live/?day={day.pk}&play=1")
    assert status == 204
    told, status = queries(f"/floor/casinos/{casino.pk}/live/?day=0&play=")
    assert status == 200
    make_game("venezia", bank=None)
    closed = make_game("venezia", bank=None)
    floor_services.table_session_close(session=closed.session, by=commissario)
    floor_services.table_create(casino=casino, site=site, number=9, by=commissario)
    assert queries(f"/floor/casinos/{casino.pk}/live/?day={day.pk}&play=1,2") == (quiet, 204)
    assert queries(f"/floor/casinos/{casino.pk}/live/?day=0&play=") == (told, 200)


# ----------------------------------------------------------------------------- a table's card


def test_the_card_polls_saying_what_its_forms_follow(client_for, make_game, commissario):
    game = make_game("venezia", maximum=5000_00)
    client = client_for(commissario)
    table = game.session.table
    url = card_poll(client.get("/floor/").content.decode(), table)
    assert url == (f"/floor/tables/{table.pk}/live/?session={game.session.pk}&status=open&by="
                   f"&limits=10000-500000&day=1")  # fmt: skip
    # The same: the part it refreshes, as before.
    answer = client.get(url, **HX)
    assert answer.status_code == 200 and "HX-Reswap" not in answer and "<svg" in answer.content.decode()
    assert "hx-swap-oob" not in answer.content.decode()


def test_an_interruption_made_elsewhere_brings_the_card_with_its_resume(client_for, make_game, commissario):
    game = make_game("venezia")
    client = client_for(commissario)
    table = game.session.table
    url = card_poll(client.get("/floor/").content.decode(), table)
    floor_services.table_session_interrupt(session=game.session, by=commissario, reason="a dispute")
    answer = client.get(url, **HX)
    assert answer.status_code == 200 and answer["HX-Reswap"] == "none"
    swapped = _oob(answer.content.decode())
    assert set(swapped) == {f"table-{table.pk}"}
    card = swapped[f"table-{table.pk}"]
    assert "Resume play" in card and "Interrupt play" not in card
    assert card_poll(card, table).endswith("&status=interrupted&by=commissario&limits=10000-&day=1")
    # Resumed elsewhere: the Interrupt form again.
    floor_services.table_session_resume(session=game.session, by=commissario)
    card = _oob(client.get(card_poll(card, table), **HX).content.decode())[f"table-{table.pk}"]
    assert "Interrupt play" in card and "Resume play" not in card
    italian = client.get(url.replace("status=open", "status=interrupted"), HTTP_ACCEPT_LANGUAGE="it", **HX)
    assert "Interrompi il gioco" in italian.content.decode()


def test_the_direzione_s_suspension_comes_to_the_commissario_s_card_without_a_resume(
    client_for, make_game, commissario, direzione
):
    game = make_game("venezia")
    table = game.session.table
    client = client_for(commissario)
    url = card_poll(client.get("/floor/").content.decode(), table)
    floor_services.table_session_interrupt(session=game.session, by=direzione, reason="a dispute")
    card = _oob(client.get(url, **HX).content.decode())[f"table-{table.pk}"]
    assert "only the Direzione resumes it" in card and "Resume play" not in card
    # The Direzione's own card offers the resume.
    card = _oob(client_for(direzione).get(url, **HX).content.decode())[f"table-{table.pk}"]
    assert "Resume play" in card and "<form" in card and "Change the limits" not in card


def test_a_day_closed_elsewhere_takes_the_open_form_from_a_closed_table_s_card(
    client_for, commissario, casino, site
):
    day = floor_services.gaming_day_open(casino=casino, by=commissario)
    table = floor_services.table_create(casino=casino, site=site, number=4, by=commissario)
    client = client_for(commissario)
    page = client.get("/floor/").content.decode()
    url = card_poll(page, table)
    assert url == f"/floor/tables/{table.pk}/live/?session=&status=&by=&limits=&day=1"
    assert "Open a session" in re.search(rf'id="table-{table.pk}".*?</article>', page, re.S).group(0)
    assert client.get(url, **HX).status_code == 200  # its fragment, as before
    floor_services.gaming_day_close(gaming_day=day, by=commissario, open_sessions="refuse")
    card = _oob(client.get(url, **HX).content.decode())[f"table-{table.pk}"]
    assert "Open a session" not in card and card_poll(card, table).endswith("&day=0")


def test_a_day_opened_elsewhere_brings_the_open_form_to_a_closed_table_s_card(client_for, commissario, casino, site):
    table = floor_services.table_create(casino=casino, site=site, number=4, by=commissario)
    client = client_for(commissario)
    page = client.get("/floor/").content.decode()
    url = card_poll(page, table)
    assert url.endswith("&day=0") and "Open a session" not in _element(page, "article", page.index(f'<article class="table-card" id="table-{table.pk}"'))
    floor_services.gaming_day_open(casino=casino, by=commissario)
    card = _oob(client.get(url, **HX).content.decode())[f"table-{table.pk}"]
    assert "Open a session" in card and card_poll(card, table).endswith("&day=1")


def test_a_session_opened_or_closed_elsewhere_brings_the_card(client_for, make_game, commissario):
    game = make_game("venezia", bank=None)
    table = game.session.table
    client = client_for(commissario)
    url = card_poll(client.get("/floor/").content.decode(), table)
    floor_services.table_session_close(session=game.session, by=commissario)
    card = _oob(client.get(url, **HX).content.decode())[f"table-{table.pk}"]
    assert "Open a session" in card and "Interrupt play" not in card


def test_limits_changed_elsewhere_bring_the_card_with_them_in_its_form(client_for, make_game, commissario):
    game = make_game("venezia")
    table = game.session.table
    client = client_for(commissario)
    url = card_poll(client.get("/floor/").content.decode(), table)
    floor_services.table_minimum_change(session=game.session, by=commissario, minimum=250_00, maximum=3000_00,
                                        reason="Saturday evening")  # fmt: skip
    card = _oob(client.get(url, **HX).content.decode())[f"table-{table.pk}"]
    assert re.search(rf'id="nm-{game.session.pk}"[^>]*value="250"', card)
    assert 'name="shown_maximum" value="3\u202f000"' in card


def test_an_older_card_s_poll_and_the_readers(client_for, make_game, commissario, auditor, make_user):
    game = make_game("venezia")
    table = game.session.table
    floor_services.table_session_interrupt(session=game.session, by=commissario, reason="a dispute")
    # A card loaded before its poll said anything: its fragment, as before.
    answer = client_for(commissario).get(f"/floor/tables/{table.pk}/live/", **HX)
    assert "HX-Reswap" not in answer and "hx-swap-oob" not in answer.content.decode()
    url = f"/floor/tables/{table.pk}/live/?session={game.session.pk}&status=open&by=&limits=10000-&day=1"
    card = _oob(client_for(auditor).get(url, **HX).content.decode())[f"table-{table.pk}"]
    assert "<form" not in card  # the auditor reads
    assert client_for(make_user("capo_y", Role.CAPO_PARTITA)).get(url, **HX).status_code == 403


def test_the_card_poll_reads_as_many_queries_however_many_tables(client_for, make_game, commissario, casino):
    first = make_game("venezia")
    table = first.session.table
    client = client_for(commissario)
    said = f"/floor/tables/{table.pk}/live/?session={first.session.pk}&status=open&by=&limits=10000-&day=1"
    changed = said.replace("status=open", "status=interrupted")

    def queries(url: str) -> tuple[int, int, bool]:
        with CaptureQueriesContext(connection) as captured:
            answer = client.get(url, **HX)
        return len(captured), answer.status_code, "HX-Reswap" in answer

    quiet = queries(said)
    told = queries(changed)
    assert quiet[2] is False and told[2] is True
    for _n in range(3):
        make_game("venezia")
    elsewhere = SiteFactory(name="Ca' Noghera")
    floor_services.gaming_day_open(casino=elsewhere.casino, by=commissario)
    assert queries(said) == quiet
    assert queries(changed) == told
