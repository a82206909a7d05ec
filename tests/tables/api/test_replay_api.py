"""POST /api/coups/{id}/bets/withdraw/: chemmy-fi's replay of a tie (RULES.md §3.2)."""

from __future__ import annotations

import pytest

from .conftest import TIE

pytestmark = pytest.mark.django_db


def _replay(make_game, tablet, profile):
    game = make_game(profile)
    sid = game.session.pk
    body = {"cards": TIE, "punta_draws": False, "bets": [{"patron": game.seat(2).pk, "amount": 300_00}]}
    tablet.ok(tablet.post(f"/api/sessions/{sid}/coups/record/", body), 201)
    coup = tablet.ok(tablet.post(f"/api/sessions/{sid}/coups/"), 201)["coup"]
    assert [(b["patron"]["id"], b["amount"], b["carried"]) for b in coup["bets"]] == [(game.seat(2).pk, 300_00, True)]
    return game, coup["id"]


def test_chemmy_fi_withdraw_then_bet_again(make_game, tablet):
    game, cid = _replay(make_game, tablet, "chemmy-fi")
    answer = tablet.ok(tablet.post(f"/api/coups/{cid}/bets/withdraw/", {"patron": game.seat(2).pk}))
    assert answer["coup"]["bets"] == [] and answer["coup"]["covered"] == 0
    answer = tablet.ok(tablet.post(f"/api/coups/{cid}/bets/", {"patron": game.seat(2).pk, "amount": 50_00}), 201)
    assert [(b["amount"], b["carried"]) for b in answer["coup"]["bets"]] == [(50_00, False)]


def test_chemmy_fi_change_by_a_new_bet(make_game, tablet):
    game, cid = _replay(make_game, tablet, "chemmy-fi")
    answer = tablet.ok(tablet.post(f"/api/coups/{cid}/bets/", {"patron": game.seat(2).pk, "amount": 80_00}), 201)
    assert [(b["amount"], b["carried"]) for b in answer["coup"]["bets"]] == [(80_00, False)]


def test_classic_carried_bets_stand(make_game, tablet, refused_api):
    game, cid = _replay(make_game, tablet, "classic")
    refused_api(409, "bet_not_withdrawable",
                lambda: tablet.post(f"/api/coups/{cid}/bets/withdraw/", {"patron": game.seat(2).pk}))  # fmt: skip
    refused_api(400, "no_bet", lambda: tablet.post(f"/api/coups/{cid}/bets/withdraw/", {"patron": game.seat(3).pk}))
