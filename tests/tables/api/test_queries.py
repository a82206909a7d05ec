"""Each coup request runs a constant number of queries however many bettors there are (2 vs
8), and the game state does not grow with the coups played."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.tables.test_queries import BET_QUERIES, STATE_ONE_BY_ONE, STATE_QUERIES, _one_by_one

from .conftest import BANKER_WINS, Tablet

pytestmark = pytest.mark.django_db


def count(call) -> tuple[int, object]:
    with CaptureQueriesContext(connection) as ctx:
        response = call()
    assert response.status_code < 300, response.json()
    return len(ctx.captured_queries), response


def bettors(game, n):
    return [*game.seated[1:], *game.standing][:n]


def measure(make_game, n: int) -> dict[str, int]:
    game = make_game("venezia", standing=1)
    tablet = Tablet(game.capo, check_game=False)  # its extra GET would count in the writes' queries
    sid = game.session.pk
    tablet.ok(tablet.post(f"/api/sessions/{sid}/regola/", {"patron": game.seat(8).pk, "declared": True}))
    tablet.ok(tablet.post(f"/api/sessions/{sid}/bars/", {"patron": game.seat(7).pk, "reason": "x"}), 201)
    out = {}
    out["open"], r = count(lambda: tablet.post(f"/api/sessions/{sid}/coups/"))
    cid = r.json()["coup"]["id"]
    people = bettors(game, n)
    for patron in people[:-1]:
        tablet.ok(tablet.post(f"/api/coups/{cid}/bets/", {"patron": patron.pk, "amount": 50_00}), 201)
    out["bet"], _ = count(lambda: tablet.post(f"/api/coups/{cid}/bets/", {"patron": people[-1].pk, "amount": 50_00}))
    out["game_betting"], _ = count(lambda: tablet.get(f"/api/sessions/{sid}/game/"))
    out["rien_ne_va_plus"], _ = count(lambda: tablet.post(f"/api/coups/{cid}/rien-ne-va-plus/"))
    for i, card in enumerate(BANKER_WINS[:4]):
        out[f"card{i}"], _ = count(lambda card=card: tablet.post(f"/api/coups/{cid}/cards/", {"card": card}))
    out["declaration"], _ = count(lambda: tablet.post(f"/api/coups/{cid}/declaration/", {"draws": True}))
    out["card4"], _ = count(lambda: tablet.post(f"/api/coups/{cid}/cards/", {"card": BANKER_WINS[4]}))
    out["game_dealing"], _ = count(lambda: tablet.get(f"/api/sessions/{sid}/game/"))
    out["banker_decision_settles"], _ = count(
        lambda: tablet.post(f"/api/coups/{cid}/banker-decision/", {"draws": False})
    )
    out["coup_detail"], _ = count(lambda: tablet.get(f"/api/coups/{cid}/"))
    out["balances"], _ = count(lambda: tablet.get(f"/api/sessions/{sid}/balances/"))
    body = {"cards": BANKER_WINS, "punta_draws": True, "bets": [{"patron": p.pk, "amount": 50_00} for p in people]}
    record, _ = count(lambda: tablet.post(f"/api/sessions/{sid}/coups/record/", body))
    # The one-shot places each bet through the service's per-bet step (tests/tables/test_queries.py);
    # everything else in it (the API's patron lookup included: one query for all) is constant.
    out["record_less_bets"] = record - n * BET_QUERIES
    out["coups_list"], _ = count(lambda: tablet.get(f"/api/sessions/{sid}/coups/"))
    out["banks_list"], _ = count(lambda: tablet.get(f"/api/sessions/{sid}/banks/"))
    return out


def test_constant_queries_2_vs_8_bettors(make_game):
    two = measure(make_game, 2)
    eight = measure(make_game, 8)
    assert two == eight, {k: (two[k], eight[k]) for k in two if two[k] != eight[k]}
    # The game GET: the tablet's state (the test client's user needs no token query), and for
    # the table staff one query more: may he read this session (floor.permissions)?
    assert eight["game_dealing"] == eight["game_betting"] == STATE_QUERIES + _one_by_one(STATE_ONE_BY_ONE) + 1


def ties():
    """7 v 7 with two tens, both stand: a tie (the bank stays), from ever new cards of the shoe."""
    suits = "SHDC"
    for i in range(24):
        a, b = suits[i % 4], suits[(i + 1) % 4]
        ten = ["10", "J", "Q", "K"][(i // 4) % 4]
        yield [f"7{a}", f"7{b}", f"{ten}{a}", f"{ten}{b}"]


def test_game_state_does_not_grow_with_coups(game, tablet):
    sid = game.session.pk
    cards = ties()

    def body():
        return {"cards": next(cards), "punta_draws": False, "bets": [{"patron": game.seat(2).pk, "amount": 10_00}]}

    tablet.ok(tablet.post(f"/api/sessions/{sid}/coups/record/", body()), 201)
    one, _ = count(lambda: tablet.get(f"/api/sessions/{sid}/game/"))
    b = body()
    record_one, _ = count(lambda: tablet.post(f"/api/sessions/{sid}/coups/record/", b))
    for _ in range(5):
        tablet.ok(tablet.post(f"/api/sessions/{sid}/coups/record/", body()), 201)
    many, _ = count(lambda: tablet.get(f"/api/sessions/{sid}/game/"))
    b = body()
    record_many, _ = count(lambda: tablet.post(f"/api/sessions/{sid}/coups/record/", b))
    list_many, _ = count(lambda: tablet.get(f"/api/sessions/{sid}/coups/"))
    assert (many, record_many) == (one, record_one)
    assert list_many <= 8
