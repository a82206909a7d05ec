"""The tablet page follows what others change at its table without a tap of the Capo Partita
(tablet-live, every 5 s): play interrupted or resumed from the floor (or the API, or by the
Direzione), the session closed, the minimum or the maximum changed. Its page said nothing
until the next tap was refused, and a page loaded while play was interrupted never polled at
all: resumed from another device, it stayed dead until a reload."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from floor import services as floor_services
from floor.roles import Role
from tests.factories import PatronFactory

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


def live_url(game, status="open", by="", minimum=100_00, maximum="") -> str:
    return (f"/tablet/sessions/{game.session.pk}/live/"
            f"?status={status}&by={by}&minimum={minimum}&maximum={maximum}")  # fmt: skip


def poll_tag(html: str) -> str:
    found = re.search(r'<div id="tablet-live"[^>]*>', html)
    return unescape(found.group(0)) if found else ""


def _oob(html: str) -> dict[str, str]:
    """The elements an answer swaps out of band, by id, with their markup."""
    found = {}
    for tag, ident in re.findall(r'<(\w+)[^>]*\bid="([^"]+)"[^>]*\bhx-swap-oob="true"[^>]*>', html):
        found[ident] = re.search(rf'<{tag}[^>]*\bid="{ident}".*?</{tag}>', html, re.S).group(0)
    return found


def test_the_page_polls_saying_what_it_shows_while_play_runs_and_while_it_is_interrupted(
    client_for, make_game, commissario
):
    game = make_game("venezia", maximum=5000_00)
    client = client_for(game.capo)
    page = f"/tablet/sessions/{game.session.pk}/"
    tag = poll_tag(client.get(page).content.decode())
    assert f'hx-get="{live_url(game, maximum=5000_00)}"' in tag
    assert 'hx-trigger="every 5s"' in tag and 'hx-swap="none"' in tag and "data-poll" in tag and "hidden" in tag
    # It is in the flow section: a section kept as it was keeps its question.
    flow = re.search(r'<section class="flow" id="flow".*?</section>', client.get(page).content.decode(), re.S)
    assert 'id="tablet-live"' in flow.group(0)
    floor_services.table_session_interrupt(session=game.session, by=commissario, reason="a dispute")
    # Interrupted: the page polls too (it did not), saying so.
    tag = poll_tag(client.get(page).content.decode())
    assert f'hx-get="{live_url(game, "interrupted", "commissario", maximum=5000_00)}"' in tag
    floor_services.table_session_close(session=game.session, by=commissario)
    # Closed: nothing more to follow.
    assert poll_tag(client.get(page).content.decode()) == ""


def test_the_poll_answers_nothing_while_the_page_shows_the_session_as_it_is(client_for, make_game, commissario):
    game = make_game("venezia")
    client = client_for(game.capo)
    answer = client.get(live_url(game), **HX)
    assert answer.status_code == 204 and answer.content == b""
    floor_services.table_session_interrupt(session=game.session, by=commissario, reason="a dispute")
    assert client.get(live_url(game, "interrupted", "commissario"), **HX).status_code == 204
    # The address opened as a page: the tablet.
    plain = client.get(live_url(game))
    assert (plain.status_code, plain["Location"]) == (302, f"/tablet/sessions/{game.session.pk}/")


def test_an_interruption_made_elsewhere_comes_to_a_page_showing_play(client_for, make_game, commissario):
    game = make_game("venezia")
    client = client_for(game.capo)
    floor_services.table_session_interrupt(session=game.session, by=commissario, reason="a dispute")
    answer = client.get(live_url(game), **HX)
    html = answer.content.decode()
    assert answer.status_code == 200 and answer["HX-Reswap"] == "none"
    swapped = _oob(html)
    assert set(swapped) == {"tablet-facts", "tablet-notices", "flow", "tablet-players", "tablet-tools"}
    assert '<p class="banner warn" role="alert">Play is interrupted by the Commissario.</p>' in (
        swapped["tablet-notices"])
    # The flow section: no play to record meanwhile, and its poll says it is interrupted now.
    flow = swapped["flow"]
    assert "The next coup opens once play resumes." in flow and "coup-open/" not in flow
    assert f'hx-get="{live_url(game, "interrupted", "commissario")}"' in poll_tag(flow)
    # The side's tools go (the services would refuse them), his Regola toggles too.
    assert "bar/" not in swapped["tablet-tools"] and "regola/" not in swapped["tablet-players"]
    # Nothing else of the panel: not the outcome, nor the register.
    assert 'id="result"' not in "".join(swapped.values())
    italian = _oob(client.get(live_url(game), HTTP_ACCEPT_LANGUAGE="it", **HX).content.decode())
    assert "Il gioco è interrotto dal Commissario." in italian["tablet-notices"]


def test_a_resume_made_elsewhere_brings_back_the_play_panel(client_for, make_game, commissario):
    """The page loaded while play was interrupted (its notice, no form): resumed from another
    device, its poll brings the play back, the coup's form and the side's tools."""
    game = make_game("venezia")
    client = client_for(game.capo)
    floor_services.table_session_interrupt(session=game.session, by=commissario, reason="a dispute")
    page = client.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    assert "Play is interrupted by the Commissario." in page and "coup-open/" not in page
    floor_services.table_session_resume(session=game.session, by=commissario)
    answer = client.get(live_url(game, "interrupted", "commissario"), **HX)
    assert answer.status_code == 200
    swapped = _oob(answer.content.decode())
    assert f'action="/tablet/sessions/{game.session.pk}/coup-open/"' in swapped["flow"]
    assert f'hx-get="{live_url(game)}"' in poll_tag(swapped["flow"])
    assert "interrupted" not in swapped["tablet-notices"]
    assert f"/tablet/sessions/{game.session.pk}/bar/" in swapped["tablet-tools"]
    assert 'id="bar-reason"' in swapped["tablet-tools"]
    assert client.get(live_url(game), **HX).status_code == 204


def test_the_direzione_s_suspension_is_told_from_the_commissario_s(client_for, make_game, make_user):
    game = make_game("venezia")
    client = client_for(game.capo)
    direzione = make_user("direzione_live", Role.DIREZIONE)
    floor_services.table_session_interrupt(session=game.session, by=direzione, reason="a dispute")
    # The page says the Commissario's interruption: the Direzione's is another notice.
    html = client.get(live_url(game, "interrupted", "commissario"), **HX).content.decode()
    assert "only the Direzione resumes it" in _oob(html)["tablet-notices"]
    assert client.get(live_url(game, "interrupted", "direzione"), **HX).status_code == 204


def test_a_session_closed_elsewhere_says_so_and_the_poll_ends(client_for, make_game, commissario):
    game = make_game("venezia", bank=None)
    client = client_for(game.capo)
    floor_services.table_session_close(session=game.session, by=commissario)
    answer = client.get(live_url(game), **HX)
    swapped = _oob(answer.content.decode())
    assert '<p class="banner">This table session is closed: its final balances are listed.</p>' in (
        swapped["tablet-notices"])
    assert "The session is closed" in swapped["flow"] and 'id="tablet-live"' not in swapped["flow"]
    assert "bank-open/" not in swapped["flow"] and "bar/" not in swapped["tablet-tools"]
    italian = _oob(client.get(live_url(game), HTTP_ACCEPT_LANGUAGE="it", **HX).content.decode())
    assert "chiusa" in italian["tablet-notices"]


def test_limits_changed_on_the_floor_come_to_the_header_and_the_bank_form(client_for, make_game, commissario):
    game = make_game("venezia", bank=None)
    client = client_for(game.capo)
    page = client.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    assert re.search(r'id="bank-amount"[^>]*value="100"', page)
    floor_services.table_minimum_change(
        session=game.session, by=commissario, minimum=250_00, maximum=4000_00, reason="Saturday evening"
    )
    answer = client.get(live_url(game), **HX)
    assert answer.status_code == 200
    swapped = _oob(answer.content.decode())
    facts = swapped["tablet-facts"]
    assert "<dt>minimum</dt><dd>€\xa0250</dd>" in facts and "<dt>maximum</dt><dd>€\xa04\u202f000</dd>" in facts
    # The bank's form, its amount at the new minimum.
    assert re.search(r'id="bank-amount"[^>]*value="250"', swapped["flow"])
    assert f'hx-get="{live_url(game, minimum=250_00, maximum=4000_00)}"' in poll_tag(swapped["flow"])
    assert client.get(live_url(game, minimum=250_00, maximum=4000_00), **HX).status_code == 204
    # The maximum lifted: said again.
    floor_services.table_minimum_change(
        session=game.session, by=commissario, minimum=250_00, maximum=None, reason="no maximum"
    )
    facts = _oob(client.get(live_url(game, minimum=250_00, maximum=4000_00), **HX).content.decode())["tablet-facts"]
    assert "maximum" not in facts
    italian = _oob(client.get(live_url(game), HTTP_ACCEPT_LANGUAGE="it", **HX).content.decode())
    assert "<dt>minimo</dt>" in italian["tablet-facts"]


def test_the_poll_is_for_those_who_read_the_page(client_for, make_game, make_user, commissario, auditor, direzione):
    game = make_game("venezia")
    for reader in (commissario, auditor, direzione):
        assert client_for(reader).get(live_url(game), **HX).status_code == 204
    other = client_for(make_user("capo_other", Role.CAPO_PARTITA)).get(live_url(game), **HX)
    assert other.status_code == 403 and other["HX-Retarget"] == "#main"
    assert client_for(make_user("nobody")).get(live_url(game), **HX).status_code == 403
    # A reader's panel, when it comes, is his: read only, no tool.
    floor_services.table_session_interrupt(session=game.session, by=commissario, reason="a dispute")
    swapped = _oob(client_for(auditor).get(live_url(game), **HX).content.decode())
    assert "Read only: an auditor reads the play and writes nothing." in swapped["tablet-notices"]
    assert "<form" not in swapped["tablet-tools"]


def test_the_poll_reads_as_many_queries_however_long_the_session(client_for, make_game, commissario):
    """Every 5 s per tablet: one query for the session, its limits and its running
    interruption (besides the user's), whatever the seats and the coups, interrupted or not;
    the answer that brings a change reads the panel's, as many with few players as with many."""
    from tables import services

    game = make_game("venezia", seated=6, standing=0)
    client = client_for(game.capo)

    def queries(**said) -> tuple[int, int]:
        with CaptureQueriesContext(connection) as captured:
            answer = client.get(live_url(game, **said), **HX)
        return len(captured), answer.status_code

    quiet, status = queries()
    assert status == 204
    for n in range(7, 9):
        floor_services.seat_assign(session=game.session, patron=PatronFactory(), seat_number=n, by=commissario)
    for _n in range(3):
        floor_services.seat_assign(session=game.session, patron=PatronFactory(), standing=True, by=commissario)
    services.coup_record(session=game.session, by=game.capo, cards=["7H", "7S", "KH", "KD"], punta_draws=False,
                         bets=[{"patron": game.seat(2), "amount": 300_00}])  # fmt: skip
    assert queries() == (quiet, 204)
    floor_services.table_session_interrupt(session=game.session, by=commissario, reason="a dispute")
    assert queries(status="interrupted", by="commissario") == (quiet, 204)
    with CaptureQueriesContext(connection) as captured:
        client.get(live_url(game, "interrupted", "commissario"), **HX)
    mine = [q["sql"] for q in captured.captured_queries if '"floor_tablesession"' in q["sql"]]
    assert len(mine) == 1 and '"floor_sessioninterruption"' in mine[0]
    told, status = queries()
    assert status == 200 and told > quiet
    for _n in range(3):
        floor_services.seat_assign(session=game.session, patron=PatronFactory(), standing=True, by=commissario)
    assert queries() == (told, 200)
