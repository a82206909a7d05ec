"""A new user can play a coup from the API docs: every endpoint is there, with its request
and answer, the one-shot with worked examples, and the schema validates without a warning."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from .conftest import Tablet

pytestmark = pytest.mark.django_db

PATHS = {
    "/api/sessions/{id}/game/": ["get"],
    "/api/sessions/{id}/balances/": ["get"],
    "/api/sessions/{id}/shoes/": ["post"],
    "/api/sessions/{id}/void-cards/": ["post"],
    "/api/sessions/{id}/banks/": ["get", "post"],
    "/api/banks/{id}/withdraw/": ["post"],
    "/api/sessions/{id}/coups/": ["get", "post"],
    "/api/sessions/{id}/coups/record/": ["post"],
    "/api/coups/{id}/": ["get"],
    "/api/coups/{id}/banco/": ["post"],
    "/api/coups/{id}/bets/": ["post"],
    "/api/coups/{id}/rien-ne-va-plus/": ["post"],
    "/api/coups/{id}/cards/": ["post"],
    "/api/coups/{id}/declaration/": ["post"],
    "/api/coups/{id}/banker-decision/": ["post"],
    "/api/coups/{id}/reconstruction/card/": ["post"],
    "/api/coups/{id}/reconstruction/decision/": ["post"],
    "/api/sessions/{id}/regola/": ["post"],
    "/api/sessions/{id}/bars/": ["post"],
}


def test_schema_documents_every_coup_endpoint(capo_partita):
    tablet = Tablet(capo_partita)
    response = tablet.client.get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    schema = response.json()
    for raw, methods in PATHS.items():
        path = raw
        assert path in schema["paths"], path
        for method in methods:
            op = schema["paths"][path][method]
            assert {"401", "403"} <= set(op["responses"]), (path, method)
            if method == "post":
                headers = [p for p in op.get("parameters", []) if p["in"] == "header"]
                assert [(h["name"], h["required"]) for h in headers] == [("Idempotency-Key", True)], path
                assert {"400", "404", "409", "422"} <= set(op["responses"]), path
    record = schema["paths"]["/api/sessions/{id}/coups/record/"]["post"]
    examples = record["requestBody"]["content"]["application/json"]["examples"]
    assert len(examples) >= 4
    assert tablet.client.get("/api/docs/").status_code == 200


def test_the_coup_api_adds_no_schema_warning():
    from drf_spectacular.drainage import GENERATOR_STATS
    from drf_spectacular.generators import SchemaGenerator
    from drf_spectacular.validation import validate_schema

    GENERATOR_STATS.reset()
    with GENERATOR_STATS.silence():
        schema = SchemaGenerator().get_schema(request=None, public=True)
    validate_schema(schema)
    ours = [w for w in [*GENERATOR_STATS._warn_cache, *GENERATOR_STATS._error_cache]
            if "tables/api/coups" in w or "Game" in w or "Coup" in w]  # fmt: skip
    GENERATOR_STATS.reset()
    assert ours == []


def test_spectacular_validates_without_warnings(tmp_path):
    """The project-wide gate (`manage.py spectacular --validate --fail-on-warn`)."""
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yml"))


def test_a_banks_answer_is_its_serializers_data(make_game):
    """The write answers build the bank directly (coups_serializers.bank_data): the same keys,
    order and values as CoupBankSerializer, active and ended, in any current time zone."""
    from django.utils import timezone

    from tables.api.coups_serializers import CoupBankSerializer, bank_data

    game = make_game("venezia")
    bank = game.bank
    for zone in ("Europe/Rome", "UTC", "America/New_York"):
        with timezone.override(zone):
            expected = dict(CoupBankSerializer(bank).data)
            assert list(bank_data(bank).items()) == list(expected.items())
    bank.status, bank.end_reason, bank.ended_at = "ended", "withdrawn", timezone.now()
    for zone in ("Europe/Rome", "UTC"):
        with timezone.override(zone):
            assert list(bank_data(bank).items()) == list(dict(CoupBankSerializer(bank).data).items())
