"""POST /api/coups/{id}/annul/: a coup annulled before its first card, as the tablet sees it."""

from __future__ import annotations

import pytest

from tables.models import Coup, Posting

from .conftest import BANKER_WINS, Tablet

pytestmark = pytest.mark.django_db


def _open_with_a_bet(game, tablet) -> int:
    sid = game.session.pk
    cid = tablet.ok(tablet.post(f"/api/sessions/{sid}/coups/"), 201)["coup"]["id"]
    tablet.ok(tablet.post(f"/api/coups/{cid}/bets/", {"patron": game.seat(2).pk, "amount": 250_00}), 201)
    return cid


def test_annul_answers_the_coup_and_the_game(game, tablet):
    cid = _open_with_a_bet(game, tablet)
    answer = tablet.ok(tablet.post(f"/api/coups/{cid}/annul/", {"reason": "dispute at seat 2"}))
    coup, state = answer["coup"], answer["game"]
    assert (coup["id"], coup["state"], coup["annul_reason"]) == (cid, "annulled", "dispute at seat 2")
    assert coup["next"] is None and coup["hands"] is None and coup["winner"] is None
    assert state["coup"] is None and state["last_coup"]["id"] == cid
    assert state["can_open_coup"] and state["bank"]["amount"] == 1000_00
    assert state["balances"] == []
    detail = tablet.ok(tablet.get(f"/api/coups/{cid}/"))
    assert detail["state"] == "annulled" and detail["annul_reason"] == "dispute at seat 2"
    assert detail["annulled_at"] and detail["postings"] == []
    listed = tablet.ok(tablet.get(f"/api/sessions/{game.session.pk}/coups/", state="annulled"))
    assert [c["id"] for c in listed["results"]] == [cid]


def test_annul_is_idempotent(game, tablet):
    cid = _open_with_a_bet(game, tablet)
    first = tablet.post(f"/api/coups/{cid}/annul/", {"reason": "dispute"}, key="annul-1")
    again = tablet.post(f"/api/coups/{cid}/annul/", {"reason": "dispute"}, key="annul-1")
    assert first.status_code == again.status_code == 200 and again.json() == first.json()
    assert Coup.objects.filter(state="annulled").count() == 1


def test_annul_refusals_write_nothing(game, tablet, refused_api):
    cid = _open_with_a_bet(game, tablet)
    refused_api(400, "invalid_input", lambda: tablet.post(f"/api/coups/{cid}/annul/", {}))
    refused_api(400, "invalid_input", lambda: tablet.post(f"/api/coups/{cid}/annul/", {"reason": ""}))
    refused_api(400, "invalid_input", lambda: tablet.post(f"/api/coups/{cid}/annul/", {"reason": "x" * 201}))
    refused_api(400, "invalid_input", lambda: tablet.post(f"/api/coups/{cid}/annul/", {"reason": "  "}))
    tablet.ok(tablet.post(f"/api/coups/{cid}/rien-ne-va-plus/"))
    tablet.ok(tablet.post(f"/api/coups/{cid}/cards/", {"card": BANKER_WINS[0]}))
    err = refused_api(409, "coup_not_annullable", lambda: tablet.post(f"/api/coups/{cid}/annul/", {"reason": "late"}))
    assert err["details"]["state"] == "dealing"


def test_an_interrupted_table_annuls_then_closes(game, tablet, commissario, refused_api):
    sid = game.session.pk
    cid = _open_with_a_bet(game, tablet)
    floor = Tablet(commissario)
    floor.ok(floor.post(f"/api/sessions/{sid}/interrupt/", {"reason": "power cut"}))
    refused_api(409, "session_interrupted",
                lambda: tablet.post(f"/api/coups/{cid}/bets/", {"patron": game.seat(3).pk, "amount": 10_00}))  # fmt: skip
    refused_api(409, "coup_in_progress", lambda: floor.post(f"/api/sessions/{sid}/close/"))
    tablet.ok(tablet.post(f"/api/coups/{cid}/annul/", {"reason": "power cut"}))
    assert floor.ok(floor.post(f"/api/sessions/{sid}/close/"))["status"] == "closed"
    assert not Posting.objects.filter(session_id=sid).exists()
    refused_api(409, "session_closed", lambda: tablet.post(f"/api/coups/{cid}/annul/", {"reason": "again"}))
