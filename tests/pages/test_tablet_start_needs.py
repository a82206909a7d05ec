"""The tablet's first bank while too few seats are taken (RULES.md §6): the seats are assigned on
the floor's page, by the Commissario, while the Capo Partita waits at his tablet. Its banner
asked him to "Check the seats again" (a reload): it asks the server by itself every 5 s now
(tablet-start-needs), and once the game can start the bank's form takes its place, nothing
else on the page swapped (a form he is typing in stays as it is)."""

from __future__ import annotations

import re
import uuid
from html import unescape

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from floor import services as floor_services
from tests.factories import PatronFactory

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


def seat(game, n: int):
    return floor_services.seat_assign(session=game.session, patron=PatronFactory(), seat_number=n, by=game.commissario)


def poll_url(game, seated: int, needed: int, **said) -> str:
    """The banner's poll, with the counts it says and what else it says (interrupted=, bar=,
    and the bar form's patron= and reason= it sends along)."""
    extra = "".join(f"&{name}={value}" for name, value in said.items())
    return f"/tablet/sessions/{game.session.pk}/start-needs/?seated={seated}&needed={needed}{extra}"


def banner(html: str) -> str:
    found = re.search(r'<p class="banner" id="start-needs"[^>]*>.*?</p>', html, re.S)
    return found.group(0) if found else ""


def test_the_banner_polls_while_seats_are_missing_and_not_once_the_game_can_start(client_for, make_game):
    game = make_game("venezia", seated=1, standing=1, bank=None, min_seats_to_start=3)
    page = f"/tablet/sessions/{game.session.pk}/"
    client = client_for(game.capo)
    html = client.get(page).content.decode()
    tag = banner(html).split(">", 1)[0]
    # It asks with the counts it says, that play is not interrupted, and the player the bar
    # form's list shows first, with that form's player and reason; every 5 s, and swaps itself only.
    first = game.seat(1).pk
    assert f'hx-get="{poll_url(game, 1, 3, interrupted=0, bar=first)}"' in unescape(tag)
    assert f'<option value="{first}">' in html.split('id="bar-patron"', 1)[1].split("</select>", 1)[0]
    assert 'hx-include="#bar-patron, #bar-reason"' in tag
    assert 'hx-trigger="every 5s"' in tag and 'hx-target="this"' in tag and 'hx-swap="outerHTML"' in tag
    # Without JavaScript: the link that reloads the page stays.
    assert f'<a class="button-link" href="{page}">Check the seats again</a>' in html
    # The part of the page its answer replaces once the game can start, and the facts beside it.
    assert '<section class="flow" id="flow"' in html and 'id="tablet-facts"' in html
    assert "hx-swap-oob" not in html
    seat(game, 2)
    seat(game, 3)
    html = client.get(page).content.decode()
    assert 'id="start-needs"' not in html and "start-needs/" not in html
    # (the one poll left is the page's own, tablet-live: what others change at the table)
    assert html.count('hx-trigger="every 5s"') == 1 and 'id="tablet-live"' in html
    assert f"/tablet/sessions/{game.session.pk}/bank-open/" in html


def test_the_poll_answers_nothing_while_the_seats_are_as_it_says(client_for, make_game):
    game = make_game("venezia", seated=1, standing=1, bank=None, min_seats_to_start=3)
    client = client_for(game.capo)
    answer = client.get(poll_url(game, 1, 3), **HX)
    assert answer.status_code == 204 and answer.content == b""
    # The table's count changed (the Direzione's table settings): said again.
    assert client.get(poll_url(game, 1, 4), **HX).status_code == 200


def test_the_poll_says_the_new_count_while_still_too_few(client_for, make_game):
    game = make_game("venezia", seated=1, standing=1, bank=None, min_seats_to_start=3)
    client = client_for(game.capo)
    seat(game, 2)
    answer = client.get(poll_url(game, 1, 3), **HX)
    html = answer.content.decode()
    assert answer.status_code == 200 and "HX-Retarget" not in answer and "HX-Reselect" not in answer
    # The banner alone, with the new count, asking on with it.
    assert html.strip() == banner(html)
    assert ("The bank cannot open yet: the game starts when at least 3 seats are taken, and 2 are taken. "
            "The Commissario seats the players from the floor.") in html  # fmt: skip
    assert f'hx-get="{poll_url(game, 2, 3, interrupted=0)}"' in unescape(html) and 'hx-trigger="every 5s"' in html
    # The bar form's first player it named, named again (its form is not swapped meanwhile).
    again = client.get(poll_url(game, 1, 3, bar=game.seat(1).pk, patron=game.seat(1).pk, reason="x"), **HX)
    assert f'hx-get="{poll_url(game, 2, 3, interrupted=0, bar=game.seat(1).pk)}"' in unescape(again.content.decode())
    assert 'hx-include="#bar-patron, #bar-reason"' in again.content.decode()
    assert "<form" not in html and "bank-open" not in html
    italian = client.get(poll_url(game, 1, 3), HTTP_ACCEPT_LANGUAGE="it", **HX).content.decode()
    assert "e ne sono occupati 2. Il Commissario fa sedere i giocatori dalla sala." in italian


def test_once_the_game_can_start_the_poll_brings_the_bank_form_in_place_of_the_flow(client_for, make_game):
    game = make_game("venezia", seated=1, standing=1, bank=None, min_seats_to_start=3)
    client = client_for(game.capo)
    seat(game, 2)
    third = seat(game, 3).patron
    answer = client.get(poll_url(game, 2, 3), **HX)
    assert answer.status_code == 200
    # The flow section the banner is in, swapped for the new one: nothing else of the panel.
    assert (answer["HX-Retarget"], answer["HX-Reselect"], answer["HX-Reswap"]) == ("#flow", "#flow", "outerHTML")
    html = answer.content.decode()
    flow = re.search(r'<section class="flow" id="flow".*?</section>', html, re.S).group(0)
    assert f'action="/tablet/sessions/{game.session.pk}/bank-open/"' in flow and third.full_name in flow
    assert "first-bank-pass" in flow and "The first bank goes to the player at seat 1" in flow
    assert 'id="start-needs"' not in flow and "start-needs/" not in flow
    assert flow.count('hx-trigger="every 5s"') == 1 and 'id="tablet-live"' in flow  # the page's own poll
    # The header's facts (the next seat) come with it, out of band: they hold no control.
    facts = re.search(r'<dl class="facts" id="tablet-facts"[^>]*>.*?</dl>', html, re.S).group(0)
    assert 'hx-swap-oob="true"' in facts.split(">", 1)[0] and "next seat 1" in facts
    assert "<form" not in facts and "<button" not in facts


def _oob(html: str) -> dict[str, str]:
    """The elements an answer swaps out of band, by id, with their markup."""
    found = {}
    for tag, ident in re.findall(r'<(\w+)[^>]*\bid="([^"]+)"[^>]*\bhx-swap-oob="true"[^>]*>', html):
        found[ident] = re.search(rf'<{tag}[^>]*\bid="{ident}".*?</{tag}>', html, re.S).group(0)
    return found


def test_once_the_game_can_start_the_players_table_comes_with_the_form(client_for, make_game):
    """The players seated meanwhile were in the bank form's list but not in the side's Players
    table (their seats, their Regola toggles) until the next action: it comes out of band too.
    It holds buttons only: nothing the croupier types in is swapped (the side's forms with
    their text fields, the register, stay as they are)."""
    game = make_game("venezia", seated=1, standing=1, bank=None, min_seats_to_start=3)
    client = client_for(game.capo)
    page = client.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    # The page's own table, by the id its answer names, and not swapped by itself.
    assert '<table class="list players" id="tablet-players">' in page and '<div id="tablet-notices">' in page
    second, third = seat(game, 2).patron, seat(game, 3).patron
    html = client.get(poll_url(game, 2, 3), **HX).content.decode()
    swapped = _oob(html)
    assert set(swapped) == {"tablet-facts", "tablet-notices", "tablet-players"}
    players = swapped["tablet-players"]
    assert second.full_name in players and third.full_name in players
    rows = re.findall(r"<tr>\s*<td>(\d+)</td>\s*<td>([^<]*)", players)
    assert [(n, name) for n, name in rows if name in (second.full_name, third.full_name)] == [
        ("2", second.full_name), ("3", third.full_name)]  # fmt: skip
    # Their Regola toggles, to mark them now.
    assert players.count(f'action="/tablet/sessions/{game.session.pk}/regola/"') == 4  # 3 seated, 1 standing
    assert f'<input type="hidden" name="patron" value="{third.pk}">' in players
    # No field a croupier types in: buttons and hidden fields only.
    assert not re.search(r'<input(?![^>]*type="hidden")', players) and "<select" not in players
    assert "<textarea" not in players
    # The side's forms with their text fields are not swapped.
    assert 'id="bar-reason"' not in "".join(swapped.values()) and 'id="void-reason"' not in "".join(swapped.values())
    # Nothing to say above the panel: the session runs.
    assert swapped["tablet-notices"].split(">", 1)[1].strip() == "</div>"
    # Italian: the table with the page's words.
    italian = _oob(client.get(poll_url(game, 2, 3), HTTP_ACCEPT_LANGUAGE="it", **HX).content.decode())
    assert third.full_name in italian["tablet-players"] and ">posto<" in italian["tablet-players"]


def test_a_session_closed_while_he_waits_says_so_above_the_panel(client_for, make_game, commissario):
    """Closed meanwhile: the flow section says the session is closed, and the read-only banner
    at the top of the panel appears with it (only the flow changed), the Players table with
    the final balances."""
    game = make_game("venezia", seated=1, standing=1, bank=None, min_seats_to_start=3)
    client = client_for(game.capo)
    floor_services.table_session_close(session=game.session, by=commissario)
    answer = client.get(poll_url(game, 1, 3), **HX)
    assert answer.status_code == 200 and answer["HX-Retarget"] == "#flow"
    html = answer.content.decode()
    flow = re.search(r'<section class="flow" id="flow".*?</section>', html, re.S).group(0)
    assert "The session is closed" in flow and "bank-open/" not in flow and 'id="start-needs"' not in flow
    swapped = _oob(html)
    assert set(swapped) == {"tablet-facts", "tablet-notices", "tablet-players"}
    assert '<p class="banner">This table session is closed: its final balances are listed.</p>' in (
        swapped["tablet-notices"])
    assert "regola/" not in swapped["tablet-players"]  # read only now: no toggle
    italian = _oob(client.get(poll_url(game, 1, 3), HTTP_ACCEPT_LANGUAGE="it", **HX).content.decode())
    assert "chiusa" in italian["tablet-notices"]


def test_an_interruption_keeps_the_poll_waiting_and_the_resume_brings_the_form(client_for, make_game, commissario):
    game = make_game("venezia", seated=1, standing=1, bank=None, min_seats_to_start=3)
    client = client_for(game.capo)
    floor_services.table_session_interrupt(session=game.session, by=commissario, reason="a dispute")
    # Interrupted: the seats cannot start it meanwhile; the poll that says so asks on, nothing swapped.
    assert client.get(poll_url(game, 1, 3, interrupted="commissario"), **HX).status_code == 204
    seat(game, 2)
    seat(game, 3)
    assert client.get(poll_url(game, 1, 3, interrupted="commissario"), **HX).status_code == 204
    floor_services.table_session_resume(session=game.session, by=commissario)
    answer = client.get(poll_url(game, 1, 3, interrupted="commissario"), **HX)
    assert answer["HX-Retarget"] == "#flow" and "bank-open/" in answer.content.decode()
    # The page loaded while interrupted said so above the panel: resumed, that goes with it.
    assert "interrupted" not in _oob(answer.content.decode())["tablet-notices"]


def test_play_interrupted_while_he_waits_says_so_above_the_panel_once(client_for, make_game, commissario):
    """The Commissario interrupts play from the floor while the Capo Partita waits: the poll
    brings the notices ("Play is interrupted") out of band with the banner, which then says so
    (interrupted=commissario) and is answered 204 until that changes; resumed, still too few,
    the notices come again without it. The banner's counts stay those it said; nothing else
    is swapped."""
    game = make_game("venezia", seated=1, standing=1, bank=None, min_seats_to_start=3)
    client = client_for(game.capo)
    first = game.seat(1).pk
    floor_services.table_session_interrupt(session=game.session, by=commissario, reason="a dispute")
    answer = client.get(poll_url(game, 1, 3, interrupted=0, bar=first), **HX)
    html = answer.content.decode()
    assert answer.status_code == 200 and "HX-Retarget" not in answer and "HX-Reselect" not in answer
    swapped = _oob(html)
    assert set(swapped) == {"tablet-notices"}
    assert '<p class="banner warn" role="alert">Play is interrupted by the Commissario.</p>' in swapped["tablet-notices"]
    # The banner, in place (its own target): the counts it said, interrupted as it is now.
    said = banner(html)
    assert html.strip().startswith(said) and "The bank cannot open yet" in said and "and 1 is taken" in said
    assert f'hx-get="{poll_url(game, 1, 3, interrupted="commissario", bar=first)}"' in unescape(said)
    assert 'hx-trigger="every 5s"' in said and "<form" not in html and "<input" not in html
    # Said: nothing again, every 5 s, whatever the seats meanwhile.
    assert client.get(poll_url(game, 1, 3, interrupted="commissario", bar=first), **HX).status_code == 204
    seat(game, 2)
    assert client.get(poll_url(game, 1, 3, interrupted="commissario"), **HX).status_code == 204
    # An older banner that says nothing of it is told too.
    assert "Play is interrupted" in _oob(client.get(poll_url(game, 1, 3), **HX).content.decode())["tablet-notices"]
    italian = _oob(client.get(poll_url(game, 1, 3), HTTP_ACCEPT_LANGUAGE="it", **HX).content.decode())
    assert "Il gioco è interrotto dal Commissario." in italian["tablet-notices"]
    # Resumed, still too few: the interruption's banner goes, the banner says the seats now.
    floor_services.table_session_resume(session=game.session, by=commissario)
    answer = client.get(poll_url(game, 1, 3, interrupted="commissario", bar=first), **HX)
    html = answer.content.decode()
    assert answer.status_code == 200 and "HX-Retarget" not in answer
    swapped = _oob(html)
    assert set(swapped) == {"tablet-notices"} and swapped["tablet-notices"].split(">", 1)[1].strip() == "</div>"
    assert "and 2 are taken" in banner(html)
    assert f'hx-get="{poll_url(game, 2, 3, interrupted=0, bar=first)}"' in unescape(banner(html))
    assert client.get(poll_url(game, 2, 3, interrupted=0, bar=first), **HX).status_code == 204


def test_a_suspension_by_the_direzione_is_said_in_its_words(client_for, make_game, make_user):
    from floor.roles import Role

    game = make_game("venezia", seated=1, standing=1, bank=None, min_seats_to_start=3)
    client = client_for(game.capo)
    direzione = make_user("direzione_poll", Role.DIREZIONE)
    floor_services.table_session_interrupt(session=game.session, by=direzione, reason="a dispute")
    html = client.get(poll_url(game, 1, 3, interrupted=0), **HX).content.decode()
    assert "only the Direzione resumes it" in _oob(html)["tablet-notices"]
    assert f'hx-get="{poll_url(game, 1, 3, interrupted="direzione")}"' in unescape(banner(html))
    assert client.get(poll_url(game, 1, 3, interrupted="direzione"), **HX).status_code == 204
    # The Commissario's banner it showed is not the Direzione's: said again.
    assert client.get(poll_url(game, 1, 3, interrupted="commissario"), **HX).status_code == 200


def _bar_select(html: str) -> str:
    return _oob(html).get("bar-patron", "")


def test_once_the_game_can_start_the_bar_form_s_players_come_if_nothing_was_changed_in_it(client_for, make_game):
    """The side's "Faux tirage: bar a player" form holds a text field (its reason): it is not
    swapped. Its player list alone (#bar-patron) comes out of band with the bank's form, with
    the players seated meanwhile, when the banner sent that form as it was shown: its reason
    empty, its player the one it showed first. Else it stays as he left it."""
    game = make_game("venezia", seated=1, standing=1, bank=None, min_seats_to_start=3)
    client = client_for(game.capo)
    first = game.seat(1).pk
    second, third = seat(game, 2).patron, seat(game, 3).patron
    html = client.get(poll_url(game, 2, 3, interrupted=0, bar=first, patron=first, reason=""), **HX).content.decode()
    assert set(_oob(html)) == {"tablet-facts", "tablet-notices", "tablet-players", "bar-patron"}
    select = _bar_select(html)
    assert select.startswith('<select id="bar-patron" name="patron" required hx-swap-oob="true">')
    options = re.findall(r'<option value="(\d+)">([^<]*)</option>', select)
    assert (str(second.pk), second.full_name) in options and (str(third.pk), third.full_name) in options
    assert options[0][0] == str(first) and len(options) == 4  # 3 seated, 1 standing
    # Not its form, not its reason field: the <select> alone.
    assert "<form" not in select and 'id="bar-reason"' not in select and "<input" not in select
    # A reason typed, another player chosen, or a banner that does not name the form: it stays.
    for said in (
        {"bar": first, "patron": first, "reason": "typed"},
        {"bar": first, "patron": second.pk, "reason": ""},
        {"bar": first, "reason": ""},  # no player sent, yet the banner named one
        {"patron": first, "reason": ""},
        {"bar": first, "patron": first},  # no reason field sent: not the form as shown
    ):
        html = client.get(poll_url(game, 2, 3, interrupted=0, **said), **HX).content.decode()
        assert "bank-open/" in html and "bar-patron" not in _oob(html), said


def test_the_bar_form_s_empty_list_comes_filled(client_for, make_game):
    """Nobody the form could list when the page came (its list empty, no player sent with it):
    the players seated meanwhile come to it."""
    game = make_game("venezia", seated=0, standing=0, bank=None, min_seats_to_start=2)
    client = client_for(game.capo)
    page = client.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    assert f'hx-get="{poll_url(game, 0, 2, interrupted=0, bar="")}"' in unescape(banner(page))
    one, two = seat(game, 1).patron, seat(game, 2).patron
    select = _bar_select(client.get(poll_url(game, 0, 2, interrupted=0, bar="", reason=""), **HX).content.decode())
    assert one.full_name in select and two.full_name in select


def test_a_reader_s_banner_names_no_bar_form(client_for, make_game, commissario):
    """The Commissario reading the tablet has no bar form: his banner sends none, and his poll
    brings no player list."""
    game = make_game("venezia", seated=1, standing=1, bank=None, min_seats_to_start=3)
    client = client_for(commissario)
    page = client.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    tag = banner(page).split(">", 1)[0]
    assert 'id="bar-patron"' not in page and "bar=" not in tag and "hx-include" not in tag
    assert f'hx-get="{poll_url(game, 1, 3, interrupted=0)}"' in unescape(tag)
    floor_services.table_session_interrupt(session=game.session, by=commissario, reason="a dispute")
    swapped = _oob(client.get(poll_url(game, 1, 3, interrupted=0), **HX).content.decode())
    # His notices keep why he reads only, beside the interruption.
    assert "Play is interrupted by the Commissario." in swapped["tablet-notices"]
    assert "The Capo Partita records the play" in swapped["tablet-notices"]


def test_the_poll_opened_as_a_page_leads_to_the_tablet_and_an_outsider_is_refused(client_for, make_game, make_user):
    from floor.roles import Role

    game = make_game("venezia", seated=1, standing=1, bank=None, min_seats_to_start=3)
    answer = client_for(game.capo).get(poll_url(game, 1, 3))
    assert (answer.status_code, answer["Location"]) == (302, f"/tablet/sessions/{game.session.pk}/")
    other = client_for(make_user("capo_other", Role.CAPO_PARTITA)).get(poll_url(game, 1, 3), **HX)
    assert other.status_code == 403 and other["HX-Retarget"] == "#main"


def test_the_poll_reads_as_many_queries_however_many_seats(client_for, make_game):
    """Every 5 s per waiting tablet: one query for the seats and the banks (the session and
    the user's besides), not the game state, whatever the seats taken; the answer that brings
    the form reads the panel's, once, as many with few players as with many."""
    game = make_game("venezia", seated=1, standing=0, bank=None, min_seats_to_start=6)
    client = client_for(game.capo)

    def queries_said(seated: int, needed: int, **said) -> tuple[int, int]:
        with CaptureQueriesContext(connection) as captured:
            answer = client.get(poll_url(game, seated, needed, **said), **HX)
        return len(captured), answer.status_code

    def queries(seated: int, needed: int) -> tuple[int, int]:
        return queries_said(seated, needed)

    few, status = queries(1, 6)
    assert status == 204
    for n in range(2, 6):
        seat(game, n)
    assert queries(5, 6) == (few, 204)
    assert queries(1, 6)[0] == few  # the count changed: the banner again, in as many
    with CaptureQueriesContext(connection) as captured:
        client.get(poll_url(game, 5, 6), **HX)
    waits = [q["sql"] for q in captured.captured_queries if '"tables_bank"' in q["sql"]]
    assert len(waits) == 1 and '"floor_seat"' in waits[0]  # one query, the seats' and the banks'
    seat(game, 6)
    ready, status = queries(5, 6)
    assert status == 200 and ready > few
    # The bar form's list with it: as many.
    first = game.seat(1).pk
    assert queries_said(5, 6, interrupted=0, bar=first, patron=first, reason="") == (ready, 200)
    for n in range(7, 9):
        seat(game, n)
    for _n in range(3):
        floor_services.seat_assign(session=game.session, patron=PatronFactory(), standing=True, by=game.commissario)
    assert queries(5, 6) == (ready, 200)


def test_the_banner_s_poll_survives_a_refused_bank_open(client_for, make_game):
    """A bank tried anyway (an old page, the queue sending it): refused, the panel comes back
    with the banner, polling on."""
    game = make_game("venezia", seated=1, standing=1, bank=None, min_seats_to_start=3)
    client = client_for(game.capo)
    answer = client.post(f"/tablet/sessions/{game.session.pk}/bank-open/", {
        "patron": game.seat(1).pk, "amount": "100", "idempotency_key": str(uuid.uuid4()),
    }, **HX)  # fmt: skip
    html = answer.content.decode()
    said = poll_url(game, 1, 3, interrupted=0, bar=game.seat(1).pk)
    assert answer.status_code == 400 and f'hx-get="{said}"' in unescape(banner(html))


def test_the_interrupted_poll_reads_as_many_queries_however_many_seats(client_for, make_game, commissario):
    """Interrupted and said so: the session, the user's and the interruption's, as many as the
    poll that waits for seats; the answer that says it (or the resume) reads the panel's,
    once, as many with few players as with many."""
    game = make_game("venezia", seated=1, standing=0, bank=None, min_seats_to_start=8)
    client = client_for(game.capo)

    def queries(**said) -> tuple[int, int]:
        with CaptureQueriesContext(connection) as captured:
            answer = client.get(poll_url(game, 1, 8, **said), **HX)
        return len(captured), answer.status_code

    waiting, status = queries(interrupted=0)
    assert status == 204
    floor_services.table_session_interrupt(session=game.session, by=commissario, reason="a dispute")
    assert queries(interrupted="commissario") == (waiting, 204)
    told, status = queries(interrupted=0)
    assert status == 200 and told > waiting
    for n in range(2, 7):
        seat(game, n)
    for _n in range(3):
        floor_services.seat_assign(session=game.session, patron=PatronFactory(), standing=True, by=game.commissario)
    assert queries(interrupted="commissario") == (waiting, 204)
    assert queries(interrupted=0) == (told, 200)
    floor_services.table_session_resume(session=game.session, by=commissario)
    resumed, status = queries(interrupted="commissario")
    assert status == 200 and resumed > waiting
