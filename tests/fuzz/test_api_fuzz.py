"""Fuzzing the API from its own OpenAPI schema (issue #8): schemathesis reads /api/schema/
from the WSGI app in-process, so every request runs inside this test's PostgreSQL
transaction, against the floor of conftest.py, authenticated as each role by token.

What must hold, for every operation, as every role, for valid and invalid input alike:
  - the schema is a valid OpenAPI document;
  - no response is a 5xx (bad input is a 4xx, never a crash: ARCHITECTURE.md);
  - every 4xx has the one error shape {"error": {"code", "message", "details"}}
    (config/errors.py, documented as config/api.py's ErrorSerializer).

An operation with an id in its path is fuzzed with the ids of the seeded floor's objects
(so that the bodies reach the services), with valid and invalid bodies and queries, then
with generated ids (unknown, huge, negative). A role that the view refuses outright
(every answer a 403 `permission_denied` with a seeded id) is not fuzzed further on that
operation. Each request runs in a savepoint rolled back afterwards: every example meets the
same floor, however much the one before it changed.

FUZZ_EXAMPLES (default 2) bounds the examples per operation, mode and id variant; the suite
runs that. The longer run:  FUZZ_EXAMPLES=200 FUZZ_RANDOM=1 python -m pytest tests/fuzz -q
(FUZZ_RANDOM=1 draws new examples every run; by default the draws are derandomized, so the
suite's run is the same every time)."""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager

import jsonschema_rs
import pytest
import schemathesis
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections, transaction
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from floor.authentication import issue_token

from .conftest import FuzzFloor

# A Capo Partita runs one table (RULES.md §6): the main coup's, the succession's and the asta's.
ROLES = ["commissario", "capo_partita", "capo_seguito", "capo_asta", "changeur", "auditor", "direzione"]
SCHEMA_PATH = "/api/schema/?format=json"
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "2"))
RANDOM = os.environ.get("FUZZ_RANDOM", "") == "1"
ERROR_KEYS = {"code", "message", "details"}


def error_shape(ctx, response, case) -> None:
    """Every 4xx is {"error": {"code": str, "message": str, "details": object}} and nothing else."""
    if not 400 <= response.status_code < 500:
        return
    try:
        body = json.loads(response.content)
    except ValueError as exc:
        raise AssertionError(f"{response.status_code} body is not JSON: {response.content[:200]!r}") from exc
    assert isinstance(body, dict) and set(body) == {"error"}, f"not the error shape: {body!r}"
    error = body["error"]
    assert isinstance(error, dict) and set(error) == ERROR_KEYS, f"not the error shape: {body!r}"
    assert isinstance(error["code"], str) and re.fullmatch(r"[a-z][a-z0-9_]*", error["code"]), body
    assert isinstance(error["message"], str) and error["message"], body
    assert isinstance(error["details"], dict), body


CHECKS = [not_a_server_error, error_shape, response_schema_conformance]


@contextmanager
def in_process_requests() -> Iterator[None]:
    """Serve the app in this thread on the test's connection. Django closes the connection
    around each request (close_old_connections), which would end the test's transaction:
    its own test client disconnects these handlers the same way."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


def known_ids(floor: FuzzFloor) -> dict[str, list[int]]:
    """For each path prefix, the ids of the floor's objects it may name."""
    return {
        "/api/auctions/": [floor.auction.pk],
        "/api/banks/": [floor.bank.pk],
        "/api/cagnotte-counts/": [floor.cagnotte_count.pk],
        "/api/cash-counts/": [floor.cash_count.pk],
        "/api/cash-exchanges/": [floor.cash_exchange.pk],
        "/api/control-registers/": [floor.control_register.pk],
        "/api/coups/": [floor.coup.pk],
        "/api/gaming-days/": [floor.open_day.pk, floor.closed_day.pk],
        "/api/patrons/": [floor.patron.pk],
        "/api/reports/": [floor.report.pk],
        "/api/seats/": [floor.seat.pk],
        "/api/sessions/": [floor.session.pk],
        "/api/successions/": [floor.succession.pk],
        "/api/tables/": [floor.table.pk],
        "/api/unclaimed-deposits/": [floor.unclaimed_deposit.pk],
    }


# The succession and the asta are read and answered on their own tables.
SESSION_OVERRIDES = {
    "/api/sessions/{id}/succession/": "succession_session",
    "/api/sessions/{id}/auctions/": "auction_session",
    "/api/sessions/{id}/cash-count/": "drawer_session",
}


def error_code(response) -> str:
    try:
        return json.loads(response.content)["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return ""


def id_variants(operation, floor: FuzzFloor) -> list[dict[str, int] | None]:
    """None: ids generated from the schema; then one variant per seeded object the path names."""
    variants: list[dict[str, int] | None] = [None]
    if not any(p.name == "id" for p in operation.path_parameters):
        return variants
    if operation.path in SESSION_OVERRIDES:
        return [*variants, {"id": getattr(floor, SESSION_OVERRIDES[operation.path]).pk}]
    for prefix, ids in known_ids(floor).items():
        if operation.path.startswith(prefix):
            return [*variants, *({"id": pk} for pk in ids)]
    raise AssertionError(f"no seeded object for {operation.path}: add it to the fuzz floor")


def modes(operation, path_parameters) -> list[GenerationMode]:
    """Invalid input needs a body or a query to make invalid (the auth header is ours). With
    generated ids, invalid ones (not integers) only meet the URL resolver's 404: valid ones,
    unknown, huge or negative, are the ones that reach the views."""
    if path_parameters is None and operation.path_parameters:
        return [GenerationMode.POSITIVE]
    if operation.body or operation.query:
        return [GenerationMode.POSITIVE, GenerationMode.NEGATIVE]
    return [GenerationMode.POSITIVE]


def fuzz_operation(operation, *, mode, path_parameters, headers, seen: list[tuple[int, str]]) -> str | None:
    """Run one operation's examples, noting each answer's (status, error code) in `seen`;
    the failure report, or None."""
    strategy = operation.as_strategy(generation_mode=mode, path_parameters=path_parameters)

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=not RANDOM,
        suppress_health_check=list(HealthCheck),
        print_blob=True,
    )
    @given(case=strategy)
    def run(case):
        with transaction.atomic():
            response = case.call(headers=headers)
            transaction.set_rollback(True)
        seen.append((response.status_code, error_code(response)))
        case.validate_response(response, checks=CHECKS, headers=headers)

    try:
        run()
    except (Exception, BaseExceptionGroup) as exc:  # a failing example (schemathesis raises a
        # FailureGroup, a BaseExceptionGroup): collect it, go on with the other operations
        return f"{operation.method.upper()} {operation.path} [{mode.value}, ids={path_parameters}]\n{exc}"
    return None


def load_schema(headers: dict[str, str]):
    return schemathesis.openapi.from_wsgi(SCHEMA_PATH, get_wsgi_application(), headers=headers)


@pytest.mark.django_db
def test_the_schema_is_valid_openapi(commissario):
    key, _ = issue_token(commissario)
    with in_process_requests():
        schema = load_schema({"Authorization": f"Token {key}"})
    schema.validate()  # raises on a document that breaks the OpenAPI 3 meta-schema
    assert schema.raw_schema["openapi"].startswith("3.")
    # ... as it does on a copy of ours with a broken operation: the check can fail.
    broken = copy.deepcopy(schema.raw_schema)
    broken["paths"]["/api/me/"]["get"]["responses"] = {"200": {"content": "not a map"}}
    with pytest.raises(jsonschema_rs.ValidationError):
        schemathesis.openapi.from_dict(broken).validate()
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 60  # every app's API is in it, none failed to parse
    # Every documented 4xx is the error shape.
    error_ref = "#/components/schemas/Error"
    for operation in operations:
        for status, response in operation.definition.raw.get("responses", {}).items():
            if status.startswith("4"):
                content = response["content"]["application/json"]["schema"]
                assert content == {"$ref": error_ref}, (operation.label, status, content)


@pytest.mark.django_db
@pytest.mark.parametrize("role", ROLES)
def test_fuzz_every_operation_as(role, request, fuzz_floor):
    user = fuzz_floor.capos[role] if role in fuzz_floor.capos else request.getfixturevalue(role)
    key, _ = issue_token(user)
    headers = {"Authorization": f"Token {key}"}
    failures: list[str] = []
    with in_process_requests():
        schema = load_schema(headers)
        for result in schema.get_all_operations():
            operation = result.ok()
            # The seeded ids first: a role the view refuses outright (DRF's permission class,
            # before any body or id is looked at) gets nothing more out of the other variants.
            variants = id_variants(operation, fuzz_floor)
            runs = [(ids, mode) for ids in [*variants[1:], variants[0]] for mode in modes(operation, ids)]
            for number, (path_parameters, mode) in enumerate(runs):
                seen: list[tuple[int, str]] = []
                failure = fuzz_operation(
                    operation, mode=mode, path_parameters=path_parameters, headers=headers, seen=seen
                )
                if failure:
                    failures.append(failure)
                if number == 0 and seen and all(answer == (403, "permission_denied") for answer in seen):
                    break
    assert not failures, f"{len(failures)} failing operations as {role}:\n\n" + "\n\n".join(failures)
