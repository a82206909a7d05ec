"""Idempotency-Key on the floor's POSTs (floor/idempotency.py), on real PostgreSQL.

A replay answers the first answer and writes nothing; a reused key with another request is a
422; failures that may pass on a retry (5xx, 401/403) leave no key behind; two requests with
one key at once run the service once."""

from __future__ import annotations

import datetime as dt
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import OperationalError, connection
from django.utils import timezone
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response
from rest_framework.test import APIClient, APIRequestFactory, force_authenticate

from config.errors import ApplicationError, NotAllowed
from floor import idempotency, services
from floor.idempotency import (
    HEADER,
    REPLAYED_HEADER,
    IdempotentAPIView,
    request_fingerprint,
)
from floor.models import IdempotencyKey, Patron, TableSession
from floor.roles import Role
from tests.concurrency import race
from tests.factories import CasinoFactory, SiteFactory, UserFactory

from .conftest import World, dump

PATRONS = "/api/patrons/"


def patron_body(**overrides) -> dict[str, Any]:
    body = {
        "first_name": "Sofía",
        "last_name": "Navarro",
        "document_type": "id_card",
        "document_number": "12345678Z",
        "nationality": "ES",
    }
    body.update(overrides)
    return body


def post(client: APIClient, url: str, body: Any, key: str | None = None):
    headers = {} if key is None else {HEADER: key}
    return client.post(url, body, format="json", headers=headers)


def everything() -> dict[str, Any]:
    """Every floor and audit row, the tokens, and the keys themselves."""
    return {**dump(), "IdempotencyKey": list(IdempotencyKey.objects.order_by("pk").values())}


# --------------------------------------------------------------------------- every POST of the floor


@dataclass(frozen=True)
class Endpoint:
    name: str
    url: Callable[[World], str]
    body: Callable[[World], Any]
    status: int
    user: str = "commissario"


ENDPOINTS = [
    Endpoint("table create", lambda w: "/api/tables/",
             lambda w: {"casino": w.casino.pk, "site": w.site.pk, "number": 9}, 201, "direzione"),
    Endpoint("gaming day open", lambda w: "/api/gaming-days/", lambda w: {"casino": w.dayless_casino.pk}, 201),
    Endpoint("gaming day close", lambda w: f"/api/gaming-days/{w.other_day.pk}/close/", lambda w: {}, 200),
    Endpoint("session open", lambda w: "/api/sessions/",
             lambda w: {"table": w.free_table.pk, "capo_partita": w.free_capo.pk,
                        "changeur": w.free_changeur.pk, "shoe_number": "S-102", "minimum": 100_00}, 201),
    Endpoint("session interrupt", lambda w: f"/api/sessions/{w.session.pk}/interrupt/",
             lambda w: {"reason": "count"}, 200),
    Endpoint("session resume", lambda w: f"/api/sessions/{w.interrupted.pk}/resume/", lambda w: {}, 200),
    Endpoint("session close", lambda w: f"/api/sessions/{w.session.pk}/close/", lambda w: {}, 200),
    Endpoint("minimum change", lambda w: f"/api/sessions/{w.session.pk}/minimum/",
             lambda w: {"minimum": 200_00, "reason": "high rollers"}, 200),
    Endpoint("staff change", lambda w: f"/api/sessions/{w.session.pk}/staff/",
             lambda w: {"capo_partita": w.free_capo.pk, "reason": "relief"}, 200),
    Endpoint("seat assign", lambda w: f"/api/sessions/{w.session.pk}/seats/",
             lambda w: {"patron": w.free_patron.pk, "seat_number": 2}, 201),
    Endpoint("seat release", lambda w: f"/api/seats/{w.seat.pk}/release/", lambda w: {}, 200),
    Endpoint("patron register", lambda w: PATRONS, lambda w: patron_body(), 201),
]


@pytest.mark.django_db
@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda e: e.name)
def test_every_floor_post_replays_its_first_answer_and_writes_nothing(endpoint, world, role_user, api_client_for):
    client = api_client_for(role_user(endpoint.user))
    url, body = endpoint.url(world), endpoint.body(world)
    before_first = everything()

    first = post(client, url, body, key="tablet-7:op-1")
    assert first.status_code == endpoint.status, first.json()
    assert REPLAYED_HEADER not in first
    after_first = everything()
    assert after_first != before_first  # the first request did its work...
    assert len(after_first["IdempotencyKey"]) == 1  # ...and its answer was stored

    replay = post(client, url, body, key="tablet-7:op-1")
    assert replay.status_code == endpoint.status
    assert replay.json() == first.json()
    assert replay[REPLAYED_HEADER] == "true"
    assert everything() == after_first  # no row, no audit event, not even a key touched


@pytest.mark.django_db
def test_the_stored_row_describes_the_request_and_its_answer(world, commissario, api_client_for):
    response = post(api_client_for(commissario), PATRONS, patron_body(), key="k-1")
    row = IdempotencyKey.objects.get()
    assert (row.user, row.key, row.method, row.path) == (commissario, "k-1", "POST", PATRONS)
    assert row.completed is True
    assert row.status_code == 201
    assert row.response_body == response.json()
    assert row.fingerprint == request_fingerprint(method="POST", path=PATRONS, data=patron_body())


@pytest.mark.django_db
def test_the_answer_is_encoded_once_to_be_stored(world, commissario, api_client_for, monkeypatch):
    """The JSON text written to check the answer (storable_body) is the one stored: the
    column's value is handed to the UPDATE with that text, not encoded a second time. The
    row and the replay are as ever; an answer whose text had a value replaced (a NUL echoed)
    is stored through the field as before."""
    from config import prepared

    handed = []
    update = prepared.update

    def spy(obj, fields, using="default", **kwargs):
        if isinstance(obj, IdempotencyKey):
            handed.append(kwargs.get("adapted"))
        return update(obj, fields, using, **kwargs)

    monkeypatch.setattr(prepared, "update", spy)
    client = api_client_for(commissario)
    first = post(client, PATRONS, patron_body(), key="once")
    assert first.status_code == 201
    if connection.vendor == "postgresql":
        (column,) = handed[0].values()
        assert json.loads(column.dumps(column.obj)) == column.obj == first.json()
    assert IdempotencyKey.objects.get(key="once").response_body == first.json()
    replay = post(client, PATRONS, patron_body(), key="once")
    assert (replay.json(), replay[REPLAYED_HEADER]) == (first.json(), "true")
    nul = post(client, PATRONS, patron_body(document_type="id\x00card"), key="nul")
    assert nul.status_code == 400 and handed[-1] is None
    assert IdempotencyKey.objects.get(key="nul").response_body == nul.json()


@pytest.mark.django_db
def test_the_fingerprint_ignores_key_order_and_whitespace():
    a = request_fingerprint(method="post", path="/x/", data={"a": 1, "b": [1, 2]})
    assert a == request_fingerprint(method="POST", path="/x/", data={"b": [1, 2], "a": 1})
    assert a != request_fingerprint(method="POST", path="/x/", data={"a": 1, "b": [2, 1]})
    assert a != request_fingerprint(method="POST", path="/y/", data={"a": 1, "b": [1, 2]})
    assert a != request_fingerprint(method="POST", path="/x/?a=1", data={"a": 1, "b": [1, 2]})


# --------------------------------------------------------------------------- 4xx answers are answers too


@pytest.mark.django_db
def test_a_business_refusal_is_replayed_even_after_the_state_changed(world, commissario, api_client_for):
    client = api_client_for(commissario)
    url = f"/api/sessions/{world.session.pk}/seats/"
    body = {"patron": world.free_patron.pk, "seat_number": 1}  # seat 1 is taken
    first = post(client, url, body, key="seat-1")
    assert first.status_code == 409
    assert first.json()["error"]["code"] == "seat_taken"

    services.seat_release(seat=world.seat, by=commissario)  # now the seat is free
    before = everything()
    replay = post(client, url, body, key="seat-1")
    assert replay.status_code == 409
    assert replay.json() == first.json()
    assert replay[REPLAYED_HEADER] == "true"
    assert everything() == before  # the free seat was not taken by the replay

    fresh = post(client, url, body, key="seat-2")  # a new key is a new operation
    assert fresh.status_code == 201


@pytest.mark.django_db
def test_invalid_input_is_stored_and_replayed(world, commissario, api_client_for):
    client = api_client_for(commissario)
    first = post(client, PATRONS, patron_body(nationality="ESP"), key="bad-1")
    assert first.status_code == 400
    assert first.json()["error"]["code"] == "invalid_input"
    before = everything()
    replay = post(client, PATRONS, patron_body(nationality="ESP"), key="bad-1")
    assert (replay.status_code, replay.json(), replay[REPLAYED_HEADER]) == (400, first.json(), "true")
    assert everything() == before


@pytest.mark.django_db
def test_a_refusal_echoing_a_nul_character_is_stored_not_a_500(world, commissario, api_client_for):
    # jsonb refuses U+0000: the stored answer replaces it, and the first answer says the same.
    client = api_client_for(commissario)
    first = post(client, PATRONS, patron_body(document_type="id\x00card"), key="nul")
    assert first.status_code == 400
    replay = post(client, PATRONS, patron_body(document_type="id\x00card"), key="nul")
    assert replay.status_code == 400
    assert replay.json() == first.json()
    assert "\x00" not in str(first.json())


@pytest.mark.django_db
@pytest.mark.parametrize("echoed", ["\\ud800", "x\\udfffy", "\\ud83c"])
def test_a_refusal_echoing_a_lone_surrogate_is_stored_not_a_500(echoed, world, commissario, api_client_for):
    # "\ud800" is valid JSON, and a ChoiceField echoes it in its message; jsonb refuses it.
    client = api_client_for(commissario)
    raw = json.dumps(patron_body()).replace('"id_card"', f'"{echoed}"')
    first = client.post(PATRONS, raw, content_type="application/json", headers={HEADER: "lone"})
    assert first.status_code == 400, first.content
    assert first.json()["error"]["code"] == "invalid_input"
    before = everything()
    replay = client.post(PATRONS, raw, content_type="application/json", headers={HEADER: "lone"})
    assert (replay.status_code, replay[REPLAYED_HEADER]) == (400, "true")
    assert replay.json() == first.json()
    assert everything() == before


@pytest.mark.django_db
def test_an_answer_with_a_surrogate_pair_is_stored_unchanged(world, commissario, api_client_for):
    client = api_client_for(commissario)
    first = post(client, PATRONS, patron_body(document_type="id\U0001F0A1card"), key="pair")
    assert first.status_code == 400
    assert "\U0001F0A1" in json.dumps(first.json(), ensure_ascii=False)
    replay = post(client, PATRONS, patron_body(document_type="id\U0001F0A1card"), key="pair")
    assert replay.json() == first.json()


@pytest.mark.django_db
def test_a_failing_service_leaves_no_partial_write_behind_a_stored_refusal(
    world, commissario, api_client_for, monkeypatch
):
    """The handler runs in a savepoint: a refusal raised after a write undoes the write, and
    only the refusal is stored."""
    real = services.patron_register

    def register_then_refuse(**kwargs):
        real(**kwargs)
        raise ApplicationError("late_refusal", "Refused after writing.")

    monkeypatch.setattr(services, "patron_register", register_then_refuse)
    response = post(api_client_for(commissario), PATRONS, patron_body(), key="late")
    assert response.status_code == 400
    assert not Patron.objects.filter(document_number="12345678Z").exists()
    assert IdempotencyKey.objects.get(key="late").status_code == 400


# --------------------------------------------------------------------------- reuse, scope, format


@pytest.mark.django_db
def test_the_same_key_with_another_body_is_refused_and_writes_nothing(world, commissario, api_client_for):
    client = api_client_for(commissario)
    assert post(client, PATRONS, patron_body(), key="k").status_code == 201
    before = everything()

    other = post(client, PATRONS, patron_body(document_number="X9999999"), key="k")
    assert other.status_code == 422
    assert other.json()["error"]["code"] == "idempotency_key_reused"
    assert other.json()["error"]["details"] == {"method": "POST", "path": PATRONS}
    assert REPLAYED_HEADER not in other
    assert everything() == before

    elsewhere = post(client, f"/api/sessions/{world.session.pk}/interrupt/", {"reason": "count"}, key="k")
    assert elsewhere.status_code == 422
    assert elsewhere.json()["error"]["details"]["path"] == PATRONS
    assert everything() == before


@pytest.mark.django_db
def test_two_users_may_use_the_same_key(world, commissario, api_client_for):
    other = UserFactory(roles=[Role.COMMISSARIO])
    mine = post(api_client_for(commissario), PATRONS, patron_body(), key="shared")
    theirs = post(api_client_for(other), PATRONS, patron_body(document_number="X9999999"), key="shared")
    assert (mine.status_code, theirs.status_code) == (201, 201)
    assert REPLAYED_HEADER not in theirs
    assert Patron.objects.filter(document_number__in=["12345678Z", "X9999999"]).count() == 2
    assert IdempotencyKey.objects.filter(key="shared").count() == 2


@pytest.mark.django_db
def test_without_a_key_an_optional_view_works_as_before(world, commissario, api_client_for):
    client = api_client_for(commissario)
    first = post(client, PATRONS, patron_body())
    assert first.status_code == 201
    again = post(client, PATRONS, patron_body())
    assert again.status_code == 409  # no protection: the retry runs and the service refuses
    assert again.json()["error"]["code"] == "patron_already_registered"
    assert REPLAYED_HEADER not in again
    assert not IdempotencyKey.objects.exists()


@pytest.mark.django_db
def test_a_200_character_key_is_accepted(world, commissario, api_client_for):
    key = "k" * 199 + "~"
    assert post(api_client_for(commissario), PATRONS, patron_body(), key=key).status_code == 201
    assert IdempotencyKey.objects.get().key == key


@pytest.mark.django_db
@pytest.mark.parametrize(
    "key",
    ["", "k" * 201, "clé", "tab\there", "\x7f", "dup-a,dup-b"],
    ids=["empty", "201", "accent", "tab", "del", "comma: the header sent twice, as the server joins it"],
)
def test_a_malformed_key_is_a_400_and_writes_nothing(key, world, commissario, api_client_for):
    before = everything()
    response = post(api_client_for(commissario), PATRONS, patron_body(), key=key)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "bad_idempotency_key"
    assert everything() == before


@pytest.mark.django_db
@pytest.mark.parametrize(("user", "status"), [("outsider", 403), ("anonymous", 401), ("auditor", 403)])
def test_authentication_and_permission_failures_are_not_stored(user, status, world, role_user, api_client_for):
    before = everything()
    response = post(api_client_for(role_user(user)), PATRONS, patron_body(), key="k")
    assert response.status_code == status
    assert everything() == before


@pytest.mark.django_db
def test_a_403_raised_by_the_service_is_not_stored(world, commissario, api_client_for, monkeypatch):
    """A permission refusal may pass once a role is granted: the same key must run again."""

    def refuse(**kwargs):
        raise NotAllowed("not_allowed_here", "Not at this casino.")

    monkeypatch.setattr(services, "patron_register", refuse)
    before = everything()
    assert post(api_client_for(commissario), PATRONS, patron_body(), key="k").status_code == 403
    assert everything() == before


# --------------------------------------------------------------------------- failures stay retryable


@pytest.mark.django_db
def test_a_503_stores_nothing_and_the_retry_runs(world, commissario, api_client_for, monkeypatch):
    real = services.patron_register

    def register_then_lose_the_database(**kwargs):
        real(**kwargs)
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(services, "patron_register", register_then_lose_the_database)
    client = api_client_for(commissario)
    before = everything()
    failed = post(client, PATRONS, patron_body(), key="retry-me")
    assert failed.status_code == 503
    assert failed.json()["error"]["code"] == "service_unavailable"
    assert failed.json()["error"]["message"].endswith("retry with the same key.")
    assert everything() == before  # neither the patron nor the key

    monkeypatch.setattr(services, "patron_register", real)
    retried = post(client, PATRONS, patron_body(), key="retry-me")
    assert retried.status_code == 201
    assert REPLAYED_HEADER not in retried
    assert Patron.objects.filter(document_number="12345678Z").count() == 1


@pytest.mark.django_db
def test_the_write_and_the_stored_answer_commit_together(world, commissario, api_client_for, monkeypatch):
    """If storing the answer fails, the service's writes are rolled back with it."""
    real_update = idempotency.prepared.update

    def crash(obj, *args, **kwargs):
        if isinstance(obj, IdempotencyKey) and obj.completed:
            raise OperationalError("crash while storing the answer")
        return real_update(obj, *args, **kwargs)

    monkeypatch.setattr(idempotency.prepared, "update", crash)
    client = api_client_for(commissario)
    before = everything()
    assert post(client, PATRONS, patron_body(), key="k").status_code == 503
    assert everything() == before

    monkeypatch.setattr(idempotency.prepared, "update", real_update)
    assert post(client, PATRONS, patron_body(), key="k").status_code == 201


@pytest.mark.django_db
def test_an_unexpected_exception_is_a_500_and_stores_nothing(world, commissario, api_client_for, monkeypatch):
    def boom(**kwargs):
        raise RuntimeError("bug")

    monkeypatch.setattr(services, "patron_register", boom)
    before = everything()
    with pytest.raises(RuntimeError):
        post(api_client_for(commissario), PATRONS, patron_body(), key="k")
    assert everything() == before


# --------------------------------------------------------------------------- a view that requires the key


class _Counter(IdempotentAPIView):
    """Test-only: counts its runs, so a replay that ran the handler would show."""

    idempotency_required = True
    permission_classes = (IsAuthenticated,)
    calls = 0

    def post(self, request):
        type(self).calls += 1
        return Response({"calls": type(self).calls, "echo": request.data}, status=201)


class _CounterChild(_Counter):
    def post(self, request):  # calling the (wrapped) parent must not nest a second key use
        return super().post(request)


class _AnonymousCounter(_Counter):
    permission_classes = (AllowAny,)
    authentication_classes = ()


def _call(view, user, body, key=None):
    headers = {} if key is None else {"HTTP_IDEMPOTENCY_KEY": key}
    request = APIRequestFactory().post("/test/counter/", body, format="json", **headers)
    if user is not None:
        force_authenticate(request, user=user)
    return view.as_view()(request)


@pytest.mark.django_db
@pytest.mark.parametrize("view", [_Counter, _CounterChild], ids=["view", "subclass"])
def test_a_required_key_view(view, commissario):
    view.calls = 0
    missing = _call(view, commissario, {"a": 1})
    assert missing.status_code == 400
    assert missing.data["error"]["code"] == "idempotency_key_required"
    assert view.calls == 0

    first = _call(view, commissario, {"a": 1}, key="c-1")
    replay = _call(view, commissario, {"a": 1}, key="c-1")
    assert (first.status_code, first.data) == (201, {"calls": 1, "echo": {"a": 1}})
    assert (replay.status_code, replay.data, replay[REPLAYED_HEADER]) == (201, first.data, "true")
    assert view.calls == 1
    assert IdempotencyKey.objects.filter(user=commissario, key="c-1").count() == 1


@pytest.mark.django_db
def test_an_anonymous_request_cannot_own_a_key():
    _AnonymousCounter.calls = 0
    response = _call(_AnonymousCounter, None, {"a": 1}, key="c-1")
    # 403, not 401: a view without authentication classes has no WWW-Authenticate to offer.
    assert (response.status_code, response.data["error"]["code"]) == (403, "not_authenticated")
    assert _AnonymousCounter.calls == 0
    assert not IdempotencyKey.objects.exists()


# --------------------------------------------------------------------------- documentation and housekeeping


@pytest.mark.django_db
def test_the_schema_documents_the_header_and_the_422(api_client_for, auditor):
    paths = api_client_for(auditor).get("/api/schema/?format=json").json()["paths"]
    for path, method in [(PATRONS, "post"), ("/api/sessions/{id}/minimum/", "post"), ("/api/seats/{id}/release/", "post")]:
        operation = paths[path][method]
        header = next(p for p in operation["parameters"] if p["name"] == HEADER)
        assert header["in"] == "header"
        assert header.get("required", False) is False
        assert operation["responses"]["422"]["content"]["application/json"]["schema"]["$ref"].endswith("/Error")
    assert all(p["name"] != HEADER for p in paths[PATRONS]["get"].get("parameters", []))
    assert "422" not in paths[PATRONS]["get"]["responses"]
    assert all(p["name"] != HEADER for p in paths["/api/auth/token/"]["post"].get("parameters", []))


def _keys_aged(user, **days: int) -> None:
    """Completed keys of `user`, each named and as many days old as given."""
    now = timezone.now()
    for key, age in days.items():
        IdempotencyKey.objects.create(
            user=user, key=key, fingerprint="0" * 64, method="POST", path="/x/", status_code=201,
            response_body={}, completed=True, created_at=now - dt.timedelta(days=age),
        )


@pytest.mark.django_db
def test_idempotency_purge_deletes_only_old_keys(commissario):
    _keys_aged(commissario, old=8, recent=6)
    call_command("idempotency_purge", "--days", "7")
    assert list(IdempotencyKey.objects.values_list("key", flat=True)) == ["recent"]
    with pytest.raises(CommandError):
        call_command("idempotency_purge", "--days", "0")


@pytest.mark.django_db
def test_idempotency_purge_keeps_the_keys_the_tablets_may_still_send(commissario, settings):
    """The tablets' queues send entries up to IDEMPOTENCY_KEY_DAYS old by themselves: the purge
    keeps that many days by default and refuses fewer, which would let such an entry run again."""
    settings.IDEMPOTENCY_KEY_DAYS = 10
    _keys_aged(commissario, old=11, recent=9)
    with pytest.raises(CommandError, match="IDEMPOTENCY_KEY_DAYS"):
        call_command("idempotency_purge", "--days", "7")
    assert IdempotencyKey.objects.count() == 2
    call_command("idempotency_purge")
    assert list(IdempotencyKey.objects.values_list("key", flat=True)) == ["recent"]


@pytest.mark.django_db
def test_celery_beat_purges_the_keys_daily_with_the_same_window(commissario, settings):
    from floor.tasks import idempotency_keys_purge

    entry = settings.CELERY_BEAT_SCHEDULE["idempotency-keys-purge"]
    assert entry == {"task": "floor.tasks.idempotency_keys_purge", "schedule": 86400.0}
    settings.IDEMPOTENCY_KEY_DAYS = 10
    _keys_aged(commissario, old=11, recent=9)
    assert idempotency_keys_purge.delay().get(timeout=10) == 1  # eager in the tests' settings
    assert list(IdempotencyKey.objects.values_list("key", flat=True)) == ["recent"]


# --------------------------------------------------------------------------- concurrency, real threads




@pytest.fixture
def slow_patron_register(monkeypatch):
    """The service, counted and slowed down inside its transaction: the other request surely
    arrives while the first holds the key."""
    real = services.patron_register
    calls: list[int] = []
    lock = threading.Lock()

    def slow(**kwargs):
        with lock:
            calls.append(1)
        patron = real(**kwargs)
        time.sleep(0.5)
        return patron

    monkeypatch.setattr(services, "patron_register", slow)
    return calls


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="row locks need PostgreSQL")
def test_two_identical_registrations_with_one_key_at_once_run_once(slow_patron_register):
    commissario = UserFactory(roles=[Role.COMMISSARIO])
    register = lambda client: post(client, PATRONS, patron_body(), key="tablet-3:42")  # noqa: E731

    responses = race([register, register], [commissario, commissario])
    assert [r.status_code for r in responses] == [201, 201], responses
    assert responses[0].json() == responses[1].json()
    assert sorted(r.get(REPLAYED_HEADER, "") for r in responses) == ["", "true"]
    assert len(slow_patron_register) == 1
    assert Patron.objects.count() == 1
    assert IdempotencyKey.objects.get().status_code == 201


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="row locks need PostgreSQL")
def test_two_identical_session_opens_with_one_key_at_once_open_one_session():
    commissario = UserFactory(roles=[Role.COMMISSARIO])
    capo, changeur = UserFactory(roles=[Role.CAPO_PARTITA]), UserFactory(roles=[Role.CHANGEUR])
    casino = CasinoFactory()
    site = SiteFactory(casino=casino)
    table = services.table_create(casino=casino, site=site, number=1, by=UserFactory(roles=[Role.DIREZIONE]))
    services.gaming_day_open(casino=casino, by=commissario)
    body = {"table": table.pk, "capo_partita": capo.pk, "changeur": changeur.pk, "shoe_number": "S-1",
            "minimum": 100_00}
    open_session = lambda client: post(client, "/api/sessions/", body, key="open-1")  # noqa: E731

    responses = race([open_session, open_session], [commissario, commissario])
    # Without the key the second would get 409 table_session_already_open.
    assert [r.status_code for r in responses] == [201, 201], responses
    assert responses[0].json() == responses[1].json()
    assert sorted(r.get(REPLAYED_HEADER, "") for r in responses) == ["", "true"]
    assert TableSession.objects.filter(table=table).count() == 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="row locks need PostgreSQL")
def test_when_the_first_fails_with_503_the_waiting_twin_runs(monkeypatch):
    commissario = UserFactory(roles=[Role.COMMISSARIO])
    real = services.patron_register
    calls: list[int] = []
    lock = threading.Lock()

    def first_fails(**kwargs):
        with lock:
            calls.append(1)
            first = len(calls) == 1
        patron = real(**kwargs)
        if first:
            time.sleep(0.5)  # the twin is now waiting on the key
            raise OperationalError("connection lost")
        return patron

    monkeypatch.setattr(services, "patron_register", first_fails)
    register = lambda client: post(client, PATRONS, patron_body(), key="k")  # noqa: E731

    responses = race([register, register], [commissario, commissario])
    assert sorted(r.status_code for r in responses) == [201, 503], responses
    winner = next(r for r in responses if r.status_code == 201)
    assert REPLAYED_HEADER not in winner  # it ran the service itself, after the rollback
    assert len(calls) == 2
    assert Patron.objects.count() == 1
    assert IdempotencyKey.objects.get().status_code == 201


@pytest.mark.django_db
def test_stored_answers_and_shoe_states_are_compressed_with_lz4():
    """floor 0010 and tables 0008: the large JSON values written by every coup compress with
    lz4 (PostgreSQL built with it), not pglz; the answers read back as stored."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL")
    with connection.cursor() as cursor:
        cursor.execute("SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'")
        if not cursor.fetchone()[0]:
            pytest.skip("PostgreSQL built without lz4")
        cursor.execute(
            "SELECT attrelid::regclass::text, attname, attcompression FROM pg_attribute "
            "WHERE (attrelid, attname) IN (('floor_idempotencykey'::regclass, 'response_body'), "
            "('tables_shoe'::regclass, 'state')) ORDER BY 1"
        )
        assert cursor.fetchall() == [("floor_idempotencykey", "response_body", "l"), ("tables_shoe", "state", "l")]


@pytest.mark.django_db
def test_a_503_to_a_request_without_a_key_says_retry_not_with_the_same_key(commissario, api_client_for, monkeypatch):
    # A login or a read takes no Idempotency-Key: "retry with the same key" named one it had not sent.
    from floor import apis

    def lose_the_database(*args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(apis.MeApi, "get", lose_the_database)
    answer = api_client_for(commissario).get("/api/me/")
    assert answer.status_code == 503
    error = answer.json()["error"]
    assert (error["code"], error["message"]) == ("service_unavailable", "The database is not reachable; retry.")
