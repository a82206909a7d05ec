"""POST /api/coups/{id}/annul/: a coup annulled before its first card by the Capo Partita, or
once its cards have started by the Commissario, as the tablet sees it."""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from tables.models import Bank, Coup, Posting, ShoeCard

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
    # Once a card is out the Capo Partita no longer annuls: the Commissario does.
    err = refused_api(403, "not_commissario", lambda: tablet.post(f"/api/coups/{cid}/annul/", {"reason": "late"}))
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


def _dealing(game, tablet, cards) -> int:
    cid = _open_with_a_bet(game, tablet)
    tablet.ok(tablet.post(f"/api/coups/{cid}/rien-ne-va-plus/"))
    for card in cards:
        tablet.ok(tablet.post(f"/api/coups/{cid}/cards/", {"card": card}))
    return cid


def test_the_commissario_annuls_a_dealing_coup_and_the_session_closes(game, tablet, commissario):
    sid = game.session.pk
    cid = _dealing(game, tablet, BANKER_WINS[:3])
    floor = Tablet(commissario)
    answer = floor.ok(floor.post(f"/api/coups/{cid}/annul/", {"reason": "settlement refused"}))
    coup, state = answer["coup"], answer["game"]
    assert (coup["id"], coup["state"], coup["annul_reason"]) == (cid, "annulled", "settlement refused")
    assert coup["cards"] == BANKER_WINS[:3] and coup["next"] is None and coup["winner"] is None
    assert state["coup"] is None and state["can_open_coup"] and state["balances"] == []
    assert state["bank"]["amount"] == 1000_00 and state["bank"]["coups_completed"] == 0
    assert state["shoe"]["cards_out"] == 3  # the cards stay out of the shoe
    assert ShoeCard.objects.filter(coup_id=cid).count() == 3
    event = AuditEvent.objects.get(action="coup.annulled")
    assert (event.payload["was"], event.payload["cards"], event.actor_id) == ("dealing", BANKER_WINS[:3], commissario.pk)
    assert not Posting.objects.filter(session_id=sid).exists()
    # The next coup opens on the same bank; then the session closes.
    nxt = tablet.ok(tablet.post(f"/api/sessions/{sid}/coups/"), 201)["coup"]
    assert nxt["number"] == coup["number"] + 1 and nxt["bank_amount"] == 1000_00
    tablet.ok(tablet.post(f"/api/coups/{nxt['id']}/annul/", {"reason": "closing"}))
    assert floor.ok(floor.post(f"/api/sessions/{sid}/close/"))["status"] == "closed"
    assert Bank.objects.get(pk=game.bank.pk).amount == 1000_00


def test_the_direzione_annuls_a_dealing_coup_in_a_dispute(game, tablet, direzione, refused_api):
    """Disputes go to the Direzione Giochi, whose decision is final (RULES.md §6): he annuls a
    coup whose cards have started himself, recorded as his. Before its cards the coup is its
    Capo Partita's to annul, as for the Commissario."""
    sid = game.session.pk
    board = Tablet(direzione)
    early = _open_with_a_bet(game, tablet)
    refused_api(
        403, "not_session_capo_partita", lambda: board.post(f"/api/coups/{early}/annul/", {"reason": "dispute"})
    )
    assert Coup.objects.get(pk=early).state == "betting"
    tablet.ok(tablet.post(f"/api/coups/{early}/annul/", {"reason": "wrong bet"}))
    cid = _dealing(game, tablet, BANKER_WINS[:3])
    answer = board.ok(board.post(f"/api/coups/{cid}/annul/", {"reason": "dispute over the third card"}))
    assert (answer["coup"]["state"], answer["coup"]["annul_reason"]) == ("annulled", "dispute over the third card")
    event = AuditEvent.objects.filter(action="coup.annulled").latest("id")
    assert (event.payload["coup"], event.actor_id, event.payload["was"]) == (cid, direzione.pk, "dealing")
    assert not Posting.objects.filter(session_id=sid).exists()
    assert answer["game"]["bank"]["amount"] == 1000_00


def test_the_capo_partita_is_refused_a_dealing_coup_and_nothing_is_written(game, tablet, refused_api):
    cid = _dealing(game, tablet, BANKER_WINS[:2])
    err = refused_api(403, "not_commissario", lambda: tablet.post(f"/api/coups/{cid}/annul/", {"reason": "stuck"}))
    assert err["details"] == {"coup": cid, "state": "dealing"}
    assert Coup.objects.get(pk=cid).state == "dealing"


def test_the_changeur_and_the_auditor_are_refused(game, tablet, changeur, auditor, refused_api):
    cid = _dealing(game, tablet, BANKER_WINS[:2])
    for user in (changeur, auditor):
        refused_api(403, "permission_denied", lambda u=user: Tablet(u).post(f"/api/coups/{cid}/annul/", {"reason": "x"}))


def test_the_commissario_is_refused_a_settled_coup_and_a_missing_reason(game, tablet, commissario, refused_api):
    cid = _dealing(game, tablet, BANKER_WINS[:2])
    floor = Tablet(commissario)
    refused_api(400, "invalid_input", lambda: floor.post(f"/api/coups/{cid}/annul/", {}))
    refused_api(400, "invalid_input", lambda: floor.post(f"/api/coups/{cid}/annul/", {"reason": "  "}))
    for card in BANKER_WINS[2:4]:
        tablet.ok(tablet.post(f"/api/coups/{cid}/cards/", {"card": card}))
    tablet.ok(tablet.post(f"/api/coups/{cid}/declaration/", {"draws": True}))
    tablet.ok(tablet.post(f"/api/coups/{cid}/cards/", {"card": BANKER_WINS[4]}))
    tablet.ok(tablet.post(f"/api/coups/{cid}/banker-decision/", {"draws": False}))
    assert Coup.objects.get(pk=cid).state == "settled"
    err = refused_api(409, "coup_not_annullable", lambda: floor.post(f"/api/coups/{cid}/annul/", {"reason": "x"}))
    assert err["details"]["state"] == "settled"


def test_the_schema_documents_who_may_annul(capo_partita):
    schema = Tablet(capo_partita).client.get("/api/schema/", {"format": "json"}).json()
    op = schema["paths"]["/api/coups/{id}/annul/"]["post"]
    assert "not_commissario" in op["responses"]["403"]["description"]
    assert "coup_not_annullable" in op["responses"]["409"]["description"]
    assert "Commissario" in op["description"] and {"200", "400", "401", "404"} <= set(op["responses"])
    assert "Direzione Giochi" in op["description"] and "Direzione Giochi" in op["responses"]["403"]["description"]
