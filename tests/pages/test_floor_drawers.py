"""The closed sessions' drawers on the floor dashboard (tables.services.cash_count): the list of
the day's closed sessions follows an htmx close at once, as the close of the day does."""

from __future__ import annotations

import re
import uuid

import pytest

from tables import services

pytestmark = pytest.mark.django_db



def close(client, game, **headers):
    return client.post(
        f"/floor/tables/{game.session.table.pk}/close/",
        {"session": game.session.pk, "confirm": "yes", "idempotency_key": str(uuid.uuid4())},
        **headers,
    )


def drawers(html: str, casino_id: int) -> str:
    """The casino's drawers' part of the floor (or of an htmx answer), as sent."""
    found = re.search(rf'<div id="floor-drawers-{casino_id}"[^>]*>.*?</div>', html, re.S)
    assert found, html[:2000]
    return found.group(0)


def link(game) -> str:
    return f'href="/tablet/sessions/{game.session.pk}/#drawer-title"'


# --------------------------------------------------------------------------- the htmx close


def test_an_htmx_close_lists_the_session_with_its_drawer_at_once(client_for, game, make_game):
    """The answer to a session closed on its card swapped in the table's card and the close of
    the day, not the list of the closed sessions: the drawer just closed was not linked from the
    floor until the page was reloaded. The list now comes with the answer, out of band."""
    other = make_game("venezia")
    client = client_for(game.commissario)
    casino = game.session.table.casino_id
    page = client.get("/floor/").content.decode()
    assert 'class="drawers"' not in drawers(page, casino)  # (there, empty: a target for the swap)
    answer = close(client, game, HTTP_HX_REQUEST="true")
    assert answer.status_code == 200
    html = answer.content.decode()
    assert html.lstrip().startswith("<article")  # the card first, as before
    part = drawers(html, casino)
    assert 'hx-swap-oob="true"' in part.split(">", 1)[0]
    assert link(game) in part and "drawer not counted" in part and link(other) not in part
    services.cash_count_record(session=game.session, by=game.commissario, float_issued=0, counted=0)
    part = drawers(close(client, other, HTTP_HX_REQUEST="true").content.decode(), casino)
    assert link(game) in part and link(other) in part and "drawer counted" in part


def test_a_refused_or_other_htmx_answer_carries_no_list(client_for, game):
    client = client_for(game.commissario)
    refused = client.post(f"/floor/tables/{game.session.table.pk}/close/",
                          {"session": game.session.pk, "idempotency_key": str(uuid.uuid4())},
                          HTTP_HX_REQUEST="true")  # fmt: skip
    assert refused.status_code == 400 and "floor-drawers-" not in refused.content.decode()
    interrupted = client.post(f"/floor/tables/{game.session.table.pk}/interrupt/",
                              {"session": game.session.pk, "reason": "break", "idempotency_key": str(uuid.uuid4())},
                              HTTP_HX_REQUEST="true")  # fmt: skip
    assert interrupted.status_code == 200 and "floor-drawers-" not in interrupted.content.decode()


def test_a_close_without_htmx_answers_the_whole_floor_as_before(client_for, game):
    """Without htmx the close answers the floor page itself (no redirect: the outcome is said
    in it), the list there, not out of band."""
    client = client_for(game.commissario)
    answer = close(client, game)
    assert answer.status_code == 200 and answer.get("Location") is None
    html = answer.content.decode()
    assert "<html" in html and "Session closed." in html
    part = drawers(html, game.session.table.casino_id)
    assert "hx-swap-oob" not in part and link(game) in part and "drawer not counted" in part
