"""The succession and the auction over HTTP: thin views, the one error shape with stable
codes, idempotent POSTs, writes only by the session's Capo Partita (the auction also by a
Commissario), never by an auditor; a refusal writes nothing."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.apps import apps
from rest_framework.test import APIClient

from audit.models import AuditEvent
from floor.models import IdempotencyKey
from floor.roles import Role
from tables import services
from tables.models import Bank, Succession
from tests.factories import PatronFactory

BANKER_WINS = ["KH", "5S", "3C", "2D", "2S"]
PUNTA_WINS = ["7H", "6S", "KH", "KD"]


def dump() -> dict[str, Any]:
    """Every row of every tables model (values: an UPDATE shows too) and the audit events."""
    out: dict[str, Any] = {
        model.__name__: list(model.objects.order_by("pk").values())
        for model in apps.get_app_config("tables").get_models()
    }
    out["AuditEvent"] = AuditEvent.objects.count()
    return out


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def post(client: APIClient, url: str, body: dict | None = None, *, key: str | None = None):
    return client.post(url, body or {}, format="json", HTTP_IDEMPOTENCY_KEY=key or uuid.uuid4().hex)


def code(response) -> str:
    return response.json()["error"]["code"]


@pytest.fixture
def game(make_game):
    game = make_game("venezia", seated=4, standing=1, min_seats_to_start=2)
    services.coup_record(
        session=game.session,
        by=game.capo,
        cards=BANKER_WINS,
        punta_draws=True,
        bets=[{"patron": game.seat(2), "amount": 100_00}],
    )
    services.bank_withdraw(bank=game.bank, by=game.capo)
    game.succession = Succession.objects.get(previous_bank=game.bank)
    return game


@pytest.fixture
def capo(game):
    return client_for(game.capo)


def refused(status: int, expected: str, call) -> dict:
    """The call answers `status` with `expected` in the one error shape and writes nothing
    but (for a stored 4xx) its idempotency key."""
    before, keys = dump(), IdempotencyKey.objects.count()
    response = call()
    assert response.status_code == status, (response.status_code, response.json())
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}
    assert body["error"]["code"] == expected, body
    assert dump() == before
    assert IdempotencyKey.objects.count() - keys in (0, 1)
    return body


def test_the_whole_succession_over_http(game, capo, make_user):
    s = game.succession
    url = f"/api/sessions/{game.session.pk}/succession/"
    auditor = client_for(make_user("auditor-1", Role.AUDITOR))
    state = auditor.get(url).json()
    assert state["succession"]["id"] == s.pk and state["succession"]["kind"] == "all_altezza"
    assert state["rotation"] == {"direction": "increasing", "turn_seat": 1, "next_seat": 2}
    assert [o["current"] for o in state["succession"]["offers"]] == [True, False, False, False]
    for n in (2, 3, 4):
        r = post(capo, f"/api/successions/{s.pk}/pass/", {"patron": game.seat(n).pk})
        assert r.status_code == 200, r.json()
    assert r.json()["succession"]["status"] == "offering"  # the standing player may still speak
    commissario = client_for(game.commissario)
    r = post(commissario, f"/api/sessions/{game.session.pk}/auctions/")
    assert r.status_code == 201, r.json()
    auction = r.json()["succession"]["auction"]["id"]
    r = post(capo, f"/api/auctions/{auction}/bids/", {"patron": game.standing[0].pk, "amount": 300_00})
    assert r.status_code == 201 and r.json()["succession"]["auction"]["bids"][0]["seq"] == 1
    r = post(capo, f"/api/auctions/{auction}/bids/", {"patron": game.seat(3).pk, "amount": 300_00})
    assert r.status_code == 201
    r = post(commissario, f"/api/auctions/{auction}/close/")
    assert r.status_code == 200, r.json()
    body = r.json()
    assert body["succession"]["status"] == "taken" and body["bank"]["banker"] == game.seat(3).pk
    assert body["rotation"]["turn_seat"] == 3
    assert Bank.objects.get(pk=body["succession"]["new_bank"]).origin == "auction"
    refused(409, "auction_closed", lambda: post(capo, f"/api/auctions/{auction}/bids/",
                                                {"patron": game.seat(2).pk, "amount": 900_00}))  # fmt: skip


def test_accept_over_http_and_its_replay(game, capo):
    s = game.succession
    body = {"patron": game.seat(2).pk, "amount": s.amount}
    first = post(capo, f"/api/successions/{s.pk}/accept/", body, key="take-1")
    assert first.status_code == 200, first.json()
    assert first.json()["bank"]["banker"] == game.seat(2).pk
    before = dump()
    again = post(capo, f"/api/successions/{s.pk}/accept/", body, key="take-1")
    assert again.status_code == 200 and again.json() == first.json()
    assert again.headers["Idempotent-Replayed"] == "true"
    assert dump() == before
    # A new key: the bank has been taken.
    refused(409, "bank_already_taken", lambda: post(capo, f"/api/successions/{s.pk}/accept/", body))


def test_refusals_have_stable_codes_and_write_nothing(game, capo):
    s = game.succession
    url = f"/api/successions/{s.pk}/accept/"
    refused(409, "not_your_turn", lambda: post(capo, url, {"patron": game.seat(3).pk, "amount": s.amount}))
    refused(400, "amount_not_offered", lambda: post(capo, url, {"patron": game.seat(2).pk, "amount": 1}))
    refused(400, "outgoing_banker", lambda: post(capo, url, {"patron": game.seat(1).pk, "amount": s.amount}))
    stranger = PatronFactory()
    refused(400, "patron_not_at_table", lambda: post(capo, url, {"patron": stranger.pk, "amount": s.amount}))
    refused(400, "invalid_input", lambda: post(capo, url, {"patron": game.seat(2).pk, "amount": "lots"}))
    refused(400, "invalid_input", lambda: post(capo, url, {"patron": 10**9, "amount": s.amount}))
    refused(400, "invalid_input", lambda: post(capo, url, {"patron": game.seat(2).pk, "amount": 10**15}))
    refused(409, "offers_pending", lambda: post(capo, f"/api/sessions/{game.session.pk}/auctions/"))
    refused(
        404, "not_found", lambda: post(capo, "/api/successions/999999/pass/", {"patron": game.seat(2).pk})
    )
    refused(404, "not_found", lambda: post(capo, "/api/auctions/999999/close/"))
    r = capo.post(f"/api/successions/{s.pk}/pass/", {"patron": game.seat(2).pk}, format="json")
    assert r.status_code == 400 and code(r) == "idempotency_key_required"


def test_who_may_write(game, make_user, capo):
    s = game.succession
    auditor = client_for(make_user("auditor-2", Role.AUDITOR))
    other_capo = client_for(make_user("capo-2", Role.CAPO_PARTITA))
    commissario = client_for(game.commissario)
    body = {"patron": game.seat(2).pk}
    for client in (auditor, other_capo, commissario):
        refused(403, "permission_denied", lambda c=client: post(c, f"/api/successions/{s.pk}/pass/", body))
    refused(403, "permission_denied", lambda: post(auditor, f"/api/sessions/{game.session.pk}/auctions/"))
    refused(403, "permission_denied", lambda: post(other_capo, f"/api/sessions/{game.session.pk}/auctions/"))
    for n in (2, 3, 4):
        post(capo, f"/api/successions/{s.pk}/pass/", {"patron": game.seat(n).pk})
    auction = post(capo, f"/api/sessions/{game.session.pk}/auctions/").json()["succession"]["auction"]["id"]
    bid = {"patron": game.seat(2).pk, "amount": 200_00}
    # Bids are recorded by the table's Capo Partita only; a Commissario opens and closes.
    refused(403, "permission_denied", lambda: post(commissario, f"/api/auctions/{auction}/bids/", bid))
    refused(403, "permission_denied", lambda: post(auditor, f"/api/auctions/{auction}/close/"))
    refused(
        409, "auction_already_open", lambda: post(commissario, f"/api/sessions/{game.session.pk}/auctions/")
    )
    refused(
        400, "bid_below_minimum", lambda: post(capo, f"/api/auctions/{auction}/bids/", {**bid, "amount": 1})
    )
    assert auditor.get(f"/api/sessions/{game.session.pk}/succession/").status_code == 200
    anonymous = APIClient()
    assert anonymous.get(f"/api/sessions/{game.session.pk}/succession/").status_code == 401


def test_the_schema_documents_the_endpoints(client, commissario):
    client.force_login(commissario)
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    paths = schema["paths"]
    for path in (
        "/api/sessions/{id}/succession/",
        "/api/successions/{id}/accept/",
        "/api/successions/{id}/pass/",
        "/api/sessions/{id}/auctions/",
        "/api/auctions/{id}/bids/",
        "/api/auctions/{id}/close/",
    ):
        assert path in paths, sorted(paths)
    accept = paths["/api/successions/{id}/accept/"]["post"]
    assert {"400", "403", "409", "422"} <= set(accept["responses"])
    assert any(p["name"] == "Idempotency-Key" and p["required"] for p in accept["parameters"])
    assert "not_your_turn" in accept["description"]
