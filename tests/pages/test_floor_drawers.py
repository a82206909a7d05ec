"""The closed sessions' drawers on the floor dashboard (tables.services.cash_count): the list of
the day's closed sessions follows an htmx close at once, as the close of the day does; once
the day is closed, the Commissario and the Direzione find there the drawers still to count
(late, into the day's books) until the day's control register is signed by both."""

from __future__ import annotations

import datetime as dt
import re
import uuid

import pytest

from floor import services as floor_services
from floor.roles import Role
from tables import services
from tests.pages.test_italian import Evening

pytestmark = pytest.mark.django_db

LATE = "The gaming day is closed: its drawers may still be counted, into the day's books, until its control register is signed by both."


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


# --------------------------------------------------------------------------- the day closed


@pytest.fixture
def day_closed(game, changeur, commissario):
    """The register's net 750.00; the session closed, then its day, its drawer not counted."""
    services.cash_exchange_record(session=game.session, by=changeur, direction="buy_in", amount=750_00)
    floor_services.table_session_close(session=game.session, by=commissario)
    floor_services.gaming_day_close(gaming_day=game.session.gaming_day, by=commissario, open_sessions="refuse")
    return game


def late(html: str, casino_id: int) -> str:
    found = re.search(r'<section class="drawers drawers-late".*?</section>', drawers(html, casino_id), re.S)
    return found.group(0) if found else ""


def test_once_the_day_is_closed_the_floor_lists_the_drawers_left_to_count(
    day_closed, client_for, commissario, direzione, auditor
):
    """After the close the floor listed no drawer: a late count could be started only from the
    desk's page of the day. The last day's drawers not counted are listed, each a link to its
    drawer, to those who count them; not to the auditor, who writes nothing."""
    game, casino = day_closed, day_closed.session.table.casino_id
    date = game.session.gaming_day.date.isoformat()
    for who in (commissario, direzione):
        html = client_for(who).get("/floor/").content.decode()
        part = late(html, casino)
        assert f"Gaming day {date}: drawers not counted" in part and LATE in part
        assert re.search(rf'<a class="button-link" {link(game)}>Table {game.session.table.number}, session '
                         rf'{game.session.number}</a>', part), part  # fmt: skip
        assert "no gaming day open" in html
    assert late(client_for(auditor).get("/floor/").content.decode(), casino) == ""
    # counted (late): nothing left to list
    services.cash_count_record(session=game.session, by=commissario, float_issued=0, counted=750_00)
    assert late(client_for(commissario).get("/floor/").content.decode(), casino) == ""


def test_only_the_drawers_not_counted_are_listed_and_none_once_the_books_are_signed(
    client_for, make_game, commissario, direzione, make_user
):
    from tests.pages.test_tablet_drawer import _sign_books

    counted, left = make_game("venezia"), make_game("venezia")
    for g in (counted, left):
        floor_services.table_session_close(session=g.session, by=commissario)
    services.cash_count_record(session=counted.session, by=commissario, float_issued=0, counted=0)
    day = counted.session.gaming_day
    floor_services.gaming_day_close(gaming_day=day, by=commissario, open_sessions="refuse")
    client, casino = client_for(commissario), day.casino_id
    part = late(client.get("/floor/").content.decode(), casino)
    assert link(left) in part and link(counted) not in part
    from audit.reports import registers

    registers.cagnotte_count_record(gaming_day=day, table=left.session.table, by=direzione,
                                    witness=make_user("witness", Role.AUDITOR), counted=0)  # fmt: skip
    _sign_books(counted, direzione, make_user)  # the books final: the drawer is no longer counted
    assert late(client.get("/floor/").content.decode(), casino) == ""
    assert close_count(client, left).status_code == 409  # (as the page no longer offers it)


def close_count(client, game):
    return client.post(f"/tablet/sessions/{game.session.pk}/cash-count/",
                       {"float_issued": "0", "counted": "0", "idempotency_key": str(uuid.uuid4())})  # fmt: skip


def test_a_correction_of_the_signed_register_lists_them_again_until_it_is_signed(
    day_closed, client_for, commissario, direzione, make_user
):
    """The register's correction opens the books again, until its own two signatures (a late
    count is taken meanwhile: tables.services.cash_count): the floor lists the drawer again."""
    from audit.reports import registers
    from tests.tables.api.test_cash_count import _sign_the_register

    client, casino = client_for(commissario), day_closed.session.table.casino_id
    box, register, second = _sign_the_register(day_closed, direzione, make_user)
    assert late(client.get("/floor/").content.decode(), casino) == ""
    registers.cagnotte_count_correct(count=box, by=direzione, witness=second, counted=box.counted + 1_00,
                                     note="recount")  # fmt: skip
    new = registers.control_register_correct(register=register, by=direzione, reason="box recounted")
    assert link(day_closed) in late(client.get("/floor/").content.decode(), casino)
    registers.control_register_sign(register=new, by=direzione)
    assert link(day_closed) in late(client.get("/floor/").content.decode(), casino)  # (one signature)
    registers.control_register_sign(register=new, by=second)
    assert late(client.get("/floor/").content.decode(), casino) == ""


def test_the_next_day_open_lists_its_own_sessions_only(day_closed, client_for, commissario, direzione, make_user):
    """The next day opens once the register of the one before is signed (art. 72): the floor
    then lists the new day's closed sessions, not the drawers left behind (on the desk's page)."""
    from tests.pages.test_tablet_drawer import _sign_books

    _sign_books(day_closed, direzione, make_user)
    casino = day_closed.session.table.casino
    floor_services.gaming_day_open(casino=casino, by=commissario,
                                   date=day_closed.session.gaming_day.date + dt.timedelta(days=1))  # fmt: skip
    html = client_for(commissario).get("/floor/").content.decode()
    assert late(html, casino.pk) == "" and link(day_closed) not in html


def test_the_drawers_left_to_count_in_italian(day_closed, commissario):
    evening = Evening()
    html = evening.get(evening.client(commissario), "/floor/").content.decode()
    date = day_closed.session.gaming_day.date.isoformat()
    assert f"Giornata di gioco {date}: cassetti non contati" in html
    assert "i suoi cassetti si possono ancora contare" in html
    assert evening.problems == []
