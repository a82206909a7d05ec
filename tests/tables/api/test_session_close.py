"""Closing a table session through the floor's endpoint runs the tables' hook (floor/hooks.py,
registered by tables/apps.py): refused while a coup is in play, else the bank ends."""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from floor.hooks import before_session_close_hooks
from tables.models import Bank
from tables.session_close import before_table_session_close

from .conftest import TIE, Tablet, error

pytestmark = pytest.mark.django_db


def test_the_hook_is_registered_once():
    assert before_session_close_hooks().count(before_table_session_close) == 1


def test_close_refused_while_a_coup_is_in_play(game, tablet, commissario, refused_api):
    floor = Tablet(commissario)
    cid = tablet.ok(tablet.post(f"/api/sessions/{game.session.pk}/coups/"), 201)["coup"]["id"]
    err = refused_api(409, "coup_in_progress", lambda: floor.post(f"/api/sessions/{game.session.pk}/close/"))
    assert err["details"]["coup"] == cid
    game.refresh()
    assert game.session.status == "open" and game.bank.status == "active"
    assert game.session.seats.filter(left_at__isnull=True).count() == 9  # nothing released


def test_close_ends_the_active_bank(game, tablet, commissario):
    sid = game.session.pk
    body = {"cards": TIE, "punta_draws": False, "bets": [{"patron": game.seat(2).pk, "amount": 10_00}]}
    tablet.ok(tablet.post(f"/api/sessions/{sid}/coups/record/", body), 201)
    floor = Tablet(commissario)
    answer = floor.ok(floor.post(f"/api/sessions/{sid}/close/"))
    assert answer["status"] == "closed"
    bank = Bank.objects.get(pk=game.bank.pk)
    assert (bank.status, bank.end_reason, bank.ended_by_id) == ("ended", "session_closed", commissario.pk)
    event = AuditEvent.objects.filter(action="bank.session_closed").get()
    assert event.payload["number"] == bank.number
    state = tablet.ok(tablet.get(f"/api/sessions/{sid}/game/"))
    assert state["bank"] is None and state["cannot_open_because"][0] == "session_closed"
    assert error(tablet.post(f"/api/sessions/{sid}/coups/")) == "session_closed"
    assert error(floor.post(f"/api/sessions/{sid}/close/")) == "session_closed"


def test_close_ends_the_shoe_in_play_so_the_report_gives_its_end(game, tablet, commissario):
    # the day report's "Shoes used" left the end of a shoe still in the sabot at the close blank
    from tables.models import Shoe, ShoeCard

    sid = game.session.pk
    body = {"cards": TIE, "punta_draws": False, "bets": [{"patron": game.seat(2).pk, "amount": 10_00}]}
    tablet.ok(tablet.post(f"/api/sessions/{sid}/coups/record/", body), 201)
    floor = Tablet(commissario)
    floor.ok(floor.post(f"/api/sessions/{sid}/close/"))
    game.refresh()
    shoe = Shoe.objects.get(session=game.session)
    assert (shoe.finished_at, shoe.finished_by_id) == (game.session.closed_at, commissario.pk)
    event = AuditEvent.objects.filter(action="shoe.finished").get()
    assert event.payload == {
        "seq": 1, "number": shoe.number, "cards_left": shoe.decks * 52 - ShoeCard.objects.filter(shoe=shoe).count(), "reason": "session_closed",
        "at": game.session.closed_at.isoformat(),
    }
    assert Shoe.objects.filter(session=game.session, finished_at__isnull=True).count() == 0


def test_close_without_a_bank_or_a_shoe(make_game, commissario):
    game = make_game("venezia", bank=None, shoe=False)
    floor = Tablet(commissario)
    assert floor.ok(floor.post(f"/api/sessions/{game.session.pk}/close/"))["status"] == "closed"
    assert not Bank.objects.filter(session=game.session).exists()


def test_interrupted_session_with_a_settled_coup_closes(game, tablet, commissario):
    sid = game.session.pk
    body = {"cards": TIE, "punta_draws": False, "bets": [{"patron": game.seat(2).pk, "amount": 10_00}]}
    tablet.ok(tablet.post(f"/api/sessions/{sid}/coups/record/", body), 201)
    floor = Tablet(commissario)
    floor.ok(floor.post(f"/api/sessions/{sid}/interrupt/", {"reason": "dispute"}))
    floor.ok(floor.post(f"/api/sessions/{sid}/close/"))
    assert Bank.objects.get(pk=game.bank.pk).end_reason == "session_closed"
