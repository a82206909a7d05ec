"""Every POST of the coup API replayed with its Idempotency-Key: the first answer again
(`Idempotent-Replayed: true`), nothing written; the one-shot coup is recorded once."""

from __future__ import annotations

import uuid

import pytest

from tables.models import Coup

from .conftest import BANKER_WINS, dump, error

pytestmark = pytest.mark.django_db


def once_then_replay(tablet, url, body=None, code=200) -> dict:
    key = uuid.uuid4().hex
    first = tablet.post(url, body, key=key)
    assert first.status_code == code, (url, first.json())
    before = dump()
    again = tablet.post(url, body, key=key)
    assert again.status_code == code and again.json() == first.json(), url
    assert again.headers["Idempotent-Replayed"] == "true"
    assert dump() == before, url
    return first.json()


def test_every_post_replayed(game, tablet):
    sid = game.session.pk
    p = game.seat
    once_then_replay(tablet, f"/api/sessions/{sid}/regola/", {"patron": p(8).pk, "declared": True})
    once_then_replay(tablet, f"/api/sessions/{sid}/bars/", {"patron": p(7).pk, "reason": "x"}, 201)
    once_then_replay(tablet, f"/api/sessions/{sid}/void-cards/", {"card": "QS", "reason": "dropped"}, 201)
    cid = once_then_replay(tablet, f"/api/sessions/{sid}/coups/", None, 201)["coup"]["id"]
    once_then_replay(tablet, f"/api/coups/{cid}/bets/", {"patron": p(2).pk, "amount": 100_00}, 201)
    once_then_replay(tablet, f"/api/coups/{cid}/rien-ne-va-plus/")
    for card in BANKER_WINS[:4]:
        once_then_replay(tablet, f"/api/coups/{cid}/cards/", {"card": card})
    once_then_replay(tablet, f"/api/coups/{cid}/declaration/", {"draws": True})
    once_then_replay(tablet, f"/api/coups/{cid}/cards/", {"card": BANKER_WINS[4]})
    answer = once_then_replay(tablet, f"/api/coups/{cid}/banker-decision/", {"draws": False})
    assert answer["coup"]["state"] == "settled"
    # A replay of a refused request is the same refusal, and writes nothing either.
    refusal = once_then_replay(tablet, f"/api/coups/{cid}/cards/", {"card": "9D"}, 400)
    assert refusal["error"]["code"] == "too_many_cards"
    once_then_replay(tablet, f"/api/banks/{game.bank.pk}/withdraw/")
    once_then_replay(tablet, f"/api/sessions/{sid}/banks/", {"patron": p(2).pk, "amount": 500_00}, 201)
    once_then_replay(tablet, f"/api/sessions/{sid}/shoes/", {"number": "S-2"}, 201)
    cid = once_then_replay(tablet, f"/api/sessions/{sid}/coups/", None, 201)["coup"]["id"]
    once_then_replay(tablet, f"/api/coups/{cid}/banco/", {"patron": p(3).pk}, 201)
    tablet.ok(tablet.post(f"/api/coups/{cid}/rien-ne-va-plus/"))
    # banker (seat 2) alla Regola stands on 3 against a 2: a reconstruction is pending.
    tablet.ok(tablet.post(f"/api/sessions/{sid}/regola/", {"patron": p(2).pk, "declared": True}))
    body = {"cards": ["2H", "AS", "3C", "2D", "2S"], "punta_draws": True, "banker_draws": False,
            "bets": [{"patron": p(4).pk, "amount": 100_00}]}  # fmt: skip
    for card in ["7H", "7S", "KH", "KD"]:  # 7 v 7, both stand: a tie, the bank stays
        tablet.ok(tablet.post(f"/api/coups/{cid}/cards/", {"card": card}))
    tablet.ok(tablet.post(f"/api/coups/{cid}/declaration/", {"draws": False}))
    last = tablet.ok(tablet.post(f"/api/coups/{cid}/banker-decision/", {"draws": False}))
    assert last["coup"]["state"] == "settled"
    answer = once_then_replay(tablet, f"/api/sessions/{sid}/coups/record/", body, 201)
    assert answer["coup"]["state"] == "pending"
    pending = answer["coup"]["id"]
    once_then_replay(tablet, f"/api/coups/{pending}/reconstruction/card/", {"card": "6D"})
    # The punta alla Regola stood on 4; the banker (no longer marked) reaches a free cell.
    tablet.ok(tablet.post(f"/api/sessions/{sid}/regola/", {"patron": p(2).pk, "declared": False}))
    tablet.ok(tablet.post(f"/api/sessions/{sid}/regola/", {"patron": p(5).pk, "declared": True}))
    body = {"cards": ["2H", "KS", "2C", "5D", "9D"], "punta_draws": False, "bets": [{"patron": p(5).pk, "amount": 100_00}]}
    answer = tablet.ok(tablet.post(f"/api/sessions/{sid}/coups/record/", body), 201)
    assert answer["coup"]["needs"] == {"decision": "banker"}
    once_then_replay(tablet, f"/api/coups/{answer['coup']['id']}/reconstruction/decision/",
                     {"side": "banker", "draws": True})  # fmt: skip


def test_the_one_shot_replayed_records_the_coup_once(game, tablet):
    url = f"/api/sessions/{game.session.pk}/coups/record/"
    body = {"cards": BANKER_WINS, "punta_draws": True, "bets": [{"patron": game.seat(2).pk, "amount": 100_00}]}
    first = tablet.post(url, body, key="tablet-1:coup-1")
    for _ in range(3):
        again = tablet.post(url, body, key="tablet-1:coup-1")
        assert again.json() == first.json() and again.headers["Idempotent-Replayed"] == "true"
    assert Coup.objects.filter(session=game.session).count() == 1
    # A new key is a new coup; the old key with another body is refused.
    tablet.ok(tablet.post(url, body, key="tablet-1:coup-2"), 201)
    assert Coup.objects.filter(session=game.session).count() == 2
    before = dump()
    reused = tablet.post(url, {**body, "punta_draws": False}, key="tablet-1:coup-1")
    assert (reused.status_code, error(reused)) == (422, "idempotency_key_reused")
    assert dump() == before
