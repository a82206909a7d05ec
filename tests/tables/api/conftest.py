"""Fixtures for the coup API: a tablet (the assigned Capo Partita's client, which sends a
fresh Idempotency-Key with every POST unless told one), and `dump()` of everything a
refusal must not touch."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.apps import apps
from rest_framework.test import APIClient

from audit.models import AuditEvent
from floor.idempotency import REPLAYED_HEADER
from floor.models import IdempotencyKey, Seat, TableSession

# Shoe order (punta, banker, punta, banker, ...), RULES.md §2.3; as in tests/tables/test_coups.py.
BANKER_WINS = ["KH", "5S", "3C", "2D", "2S"]  # punta 3 draws a 2 -> 5; banker 7 stands
PUNTA_WINS = ["7H", "6S", "KH", "KD"]  # punta 7 stands, banker 6 stands
TIE = ["7H", "7S", "KH", "KD"]
PUNTA_NATURAL = ["9H", "KS", "KC", "5D"]
BANKER_NATURAL = ["2H", "8S", "KC", "KD"]


def dump() -> dict[str, Any]:
    """Every row of every tables model (values, so an UPDATE shows too), the audit events,
    the idempotency keys, the sessions and the seats: "nothing written" is equality."""
    out: dict[str, Any] = {
        model.__name__: list(model.objects.order_by("pk").values())
        for model in apps.get_app_config("tables").get_models()
    }
    out["AuditEvent"] = AuditEvent.objects.count()
    out["IdempotencyKey"] = list(IdempotencyKey.objects.order_by("pk").values("pk", "key", "completed"))
    out["TableSession"] = list(TableSession.objects.order_by("pk").values("pk", "status", "closed_at"))
    out["Seat"] = list(Seat.objects.order_by("pk").values("pk", "left_at"))
    return out


class Tablet:
    """An API client for one user. post() sends a new Idempotency-Key unless `key` is given
    (key=False sends none).

    With `check_game` (the default), every successful write answer that carries the game
    state (or a bank) is compared with a fresh GET of it: the services hand the rows they
    hold to the answer (selectors.GameRows), and that answer must be exactly what a new read
    gives."""

    def __init__(self, user=None, *, check_game: bool = True):
        self.user = user
        self.check_game = check_game
        self.client = APIClient()
        if user is not None:
            self.client.force_authenticate(user)

    def post(self, url: str, body: Any = None, *, key: str | bool | None = None, **extra):
        headers = {}
        if key is not False:
            headers["HTTP_IDEMPOTENCY_KEY"] = key or uuid.uuid4().hex
        response = self.client.post(url, body if body is not None else {}, format="json", **headers, **extra)
        if self.check_game and response.status_code < 300 and not response.headers.get(REPLAYED_HEADER):
            answer = response.json()
            game = answer.get("game") if isinstance(answer, dict) else None
            if isinstance(game, dict) and "session" in game:
                fresh = self.client.get(f"/api/sessions/{game['session']['id']}/game/")
                assert fresh.status_code == 200, fresh.json()
                assert fresh.json() == game, f"{url}: the answer's game state differs from a fresh read"
            bank = answer.get("bank") if isinstance(answer, dict) else None
            if isinstance(bank, dict) and "session" in bank:
                listed = self.client.get(f"/api/sessions/{bank['session']}/banks/", {"page_size": 500}).json()
                same = [b for b in listed["results"] if b["id"] == bank["id"]]
                assert same == [bank], f"{url}: the answer's bank differs from the banks list"
        return response

    def get(self, url: str, **params):
        return self.client.get(url, params)

    # -- the coup, step by step ---------------------------------------------------------
    def ok(self, response, code: int = 200):
        assert response.status_code == code, (response.status_code, response.json())
        return response.json()


def error(response) -> str:
    body = response.json()
    return body["error"]["code"]


@pytest.fixture
def tablet(capo_partita) -> Tablet:
    return Tablet(capo_partita)


STORED_REFUSALS = {400, 404, 409, 422}


@pytest.fixture
def refused_api():
    """`refused_api(status, code, call)`: the call answers status + code and writes nothing:
    no tables row, no audit event, no session or seat change. The one row a refusal may
    leave is its own idempotency key, holding that very answer (floor/idempotency.py stores
    business refusals so that a retry gets the same answer); 401/403 store nothing."""

    def check(status: int, code: str, call):
        before = dump()
        response = call()
        assert response.status_code == status, (response.status_code, response.json())
        assert error(response) == code, response.json()
        after = dump()
        keys_before, keys_after = before.pop("IdempotencyKey"), after.pop("IdempotencyKey")
        assert after == before
        new = [k for k in keys_after if k not in keys_before]
        sent = response.wsgi_request.headers.get("Idempotency-Key")
        if sent is not None and status in STORED_REFUSALS and code != "bad_idempotency_key":
            assert [k["key"] for k in new] == [sent]
            stored = IdempotencyKey.objects.get(key=sent)
            assert (stored.status_code, stored.response_body) == (status, response.json())
        else:
            assert new == []
        return response.json()["error"]

    return check
