"""POST /api/coups/{id}/cards/correct/: the last card, tapped wrongly, recorded again as the
right card; answered like the card endpoint (the coup with `next`, the game state)."""

from __future__ import annotations

import uuid

import pytest

from tables.models import ShoeCard

from .conftest import Tablet, dump

pytestmark = pytest.mark.django_db


def _dealing(tablet, game, cards) -> int:
    cid = tablet.ok(tablet.post(f"/api/sessions/{game.session.pk}/coups/"), 201)["coup"]["id"]
    tablet.ok(tablet.post(f"/api/coups/{cid}/bets/", {"patron": game.seat(2).pk, "amount": 100_00}), 201)
    tablet.ok(tablet.post(f"/api/coups/{cid}/rien-ne-va-plus/"))
    for card in cards:
        tablet.ok(tablet.post(f"/api/coups/{cid}/cards/", {"card": card}))
    return cid


def test_the_last_card_corrected_and_the_replay_answers_the_same(game, tablet):
    cid = _dealing(tablet, game, ["KH", "5S", "3C", "2D"])
    url = f"/api/coups/{cid}/cards/correct/"
    key = uuid.uuid4().hex
    first = tablet.post(url, {"was": "2D", "card": "2H"}, key=key)
    body = tablet.ok(first)
    assert body["coup"]["cards"] == ["KH", "5S", "3C", "2H"]
    assert body["coup"]["hands"]["banker"]["cards"] == ["5S", "2H"]
    assert body["coup"]["next"] == {"need": "punta_declaration", "side": "punta", "natural": False}
    assert body["game"]["coup"]["id"] == cid
    before = dump()
    again = tablet.post(url, {"was": "2D", "card": "2H"}, key=key)
    assert again.status_code == 200 and again.json() == body and again.headers["Idempotent-Replayed"] == "true"
    assert dump() == before
    assert ShoeCard.objects.get(coup_id=cid, position=4).code == "2H"


def test_refusals_are_the_documented_codes_and_write_nothing(game, tablet, refused_api, make_game):
    cid = _dealing(tablet, game, ["KH", "5S", "3C"])
    url = f"/api/coups/{cid}/cards/correct/"
    error = refused_api(409, "card_not_last", lambda: tablet.post(url, {"was": "5S", "card": "6S"}))
    assert error["details"]["last"] == "3C"
    refused_api(400, "card_unchanged", lambda: tablet.post(url, {"was": "3C", "card": "3c"}))
    refused_api(400, "bad_card", lambda: tablet.post(url, {"was": "3C", "card": "1X"}))
    refused_api(400, "invalid_input", lambda: tablet.post(url, {"was": "3C"}))
    other = Tablet(make_game("venezia").capo)
    refused_api(403, "permission_denied", lambda: other.post(url, {"was": "3C", "card": "4C"}))
