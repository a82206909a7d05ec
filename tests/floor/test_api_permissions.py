"""The permission matrix: every role against every floor endpoint.

Allowed: the expected success status. Refused: 403 `permission_denied` (401/403
`not_authenticated` when anonymous) in the one error shape, and nothing written at all."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from .conftest import World, dump

pytestmark = pytest.mark.django_db

ROLES = ("commissario", "capo_partita", "changeur", "auditor", "direzione", "outsider", "anonymous")
READERS = frozenset({"commissario", "capo_partita", "changeur", "auditor", "direzione"})
COMMISSARIO = frozenset({"commissario"})
DIREZIONE = frozenset({"direzione"})
# Management may suspend play at any moment (RULES.md §6; seed 001): the Direzione interrupts
# and resumes a table as the Commissario does.
SUSPENDERS = COMMISSARIO | DIREZIONE


@dataclass(frozen=True)
class Endpoint:
    name: str
    method: str
    url: Callable[[World], str]
    allowed: frozenset[str]
    status: int = 200
    body: Callable[[World], dict[str, Any]] = lambda w: {}

    @property
    def writes(self) -> bool:
        return self.method != "get"


ENDPOINTS = [
    Endpoint("me", "get", lambda w: "/api/me/", READERS),
    Endpoint("casinos", "get", lambda w: "/api/casinos/", READERS),
    Endpoint("tables", "get", lambda w: "/api/tables/", READERS),
    Endpoint("table", "get", lambda w: f"/api/tables/{w.table.pk}/", READERS),
    Endpoint(
        "table-create", "post", lambda w: "/api/tables/", DIREZIONE, 201,
        lambda w: {"casino": w.casino.pk, "site": w.site.pk, "number": 7, "seats": 9},
    ),
    Endpoint(
        "table-edit", "patch", lambda w: f"/api/tables/{w.free_table.pk}/", DIREZIONE, 200,
        lambda w: {"cagnotte_rate_bp": 400},
    ),
    Endpoint("gaming-days", "get", lambda w: "/api/gaming-days/", READERS),
    Endpoint(
        "gaming-day-open", "post", lambda w: "/api/gaming-days/", COMMISSARIO, 201,
        lambda w: {"casino": w.dayless_casino.pk},
    ),
    Endpoint("gaming-day-close", "post", lambda w: f"/api/gaming-days/{w.other_day.pk}/close/", COMMISSARIO),
    Endpoint("sessions", "get", lambda w: "/api/sessions/", READERS),
    Endpoint(
        "session-open", "post", lambda w: "/api/sessions/", COMMISSARIO, 201,
        lambda w: {
            "table": w.free_table.pk, "capo_partita": w.free_capo.pk,
            "changeur": w.free_changeur.pk, "shoe_number": "S-102", "minimum": 5000,
        },
    ),
    Endpoint("session", "get", lambda w: f"/api/sessions/{w.session.pk}/", READERS),
    Endpoint(
        "session-interrupt", "post", lambda w: f"/api/sessions/{w.session.pk}/interrupt/", SUSPENDERS, 200,
        lambda w: {"reason": "dispute"},
    ),
    Endpoint("session-resume", "post", lambda w: f"/api/sessions/{w.interrupted.pk}/resume/", SUSPENDERS),
    Endpoint("session-close", "post", lambda w: f"/api/sessions/{w.session.pk}/close/", COMMISSARIO),
    Endpoint(
        "session-minimum", "post", lambda w: f"/api/sessions/{w.session.pk}/minimum/", COMMISSARIO, 200,
        lambda w: {"minimum": 20000, "reason": "busy"},
    ),
    Endpoint("minimum-changes", "get", lambda w: f"/api/sessions/{w.session.pk}/minimum-changes/", READERS),
    Endpoint(
        "session-staff", "post", lambda w: f"/api/sessions/{w.session.pk}/staff/", COMMISSARIO, 200,
        lambda w: {"capo_partita": w.free_capo.pk, "reason": "relief"},
    ),
    Endpoint("staff-changes", "get", lambda w: f"/api/sessions/{w.session.pk}/staff-changes/", READERS),
    Endpoint("seats", "get", lambda w: f"/api/sessions/{w.session.pk}/seats/", READERS),
    Endpoint(
        "seat-assign", "post", lambda w: f"/api/sessions/{w.session.pk}/seats/", COMMISSARIO, 201,
        lambda w: {"patron": w.free_patron.pk, "seat_number": 2},
    ),
    Endpoint("seat-release", "post", lambda w: f"/api/seats/{w.seat.pk}/release/", COMMISSARIO),
    Endpoint("patrons", "get", lambda w: "/api/patrons/", READERS),
    Endpoint("patron", "get", lambda w: f"/api/patrons/{w.seated.pk}/", READERS),
    Endpoint(
        "patron-register", "post", lambda w: "/api/patrons/", COMMISSARIO, 201,
        lambda w: {
            "first_name": "Mikko", "last_name": "Virtanen", "document_type": "passport",
            "document_number": "FP1234567", "nationality": "FI",
        },
    ),
    Endpoint("logout", "post", lambda w: "/api/auth/logout/", READERS | {"outsider"}, 204),
]


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda e: e.name)
def test_permission_matrix(endpoint: Endpoint, role: str, world, role_user, api_client_for):
    client = api_client_for(role_user(role))
    before = dump()
    response = getattr(client, endpoint.method)(endpoint.url(world), endpoint.body(world), format="json")
    after = dump()

    if role in endpoint.allowed:
        assert response.status_code == endpoint.status, response.content
        if endpoint.writes and endpoint.name != "logout":
            assert after != before
            assert len(after["AuditEvent"]) > len(before["AuditEvent"]), "a write leaves an audit event"
        return

    body = response.json()
    if role == "anonymous":
        assert response.status_code == 401
        assert response.headers["WWW-Authenticate"] == "Token"
        assert body["error"]["code"] == "not_authenticated"
    else:
        assert response.status_code == 403
        assert body["error"]["code"] == "permission_denied"
    assert set(body["error"]) == {"code", "message", "details"}
    assert after == before, "a refused request writes nothing"


def test_matrix_covers_every_floor_api_route():
    from floor.urls import api

    names = {p.name for p in api}
    covered = {
        "auth-logout", "me", "casino-list", "table-list", "table-detail", "gaming-day-list", "gaming-day-close",
        "session-list", "session-detail", "session-interrupt", "session-resume", "session-close",
        "session-minimum", "session-minimum-changes", "session-staff", "session-staff-changes", "session-seats", "seat-release", "patron-list",
        "patron-detail",
    }
    # The token endpoint is open to everyone by design (tested in test_auth.py).
    assert names - covered == {"auth-token"}
