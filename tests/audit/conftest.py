"""Fixtures of the audit tests: users per role, API clients, chains to verify, and the
raw-SQL helpers the tamper tests use to play the attacker who owns the database."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connection, transaction
from rest_framework.test import APIClient

from audit.models import AuditEvent, AuditStream
from audit.services import record

TRIGGER = "audit_event_append_only"
HEAD_TRIGGER = "audit_stream_head_forward"  # migration 0007: a head is not renamed nor moved back


def make_user(username: str, *roles: str, **extra):
    user = get_user_model().objects.create_user(username=username, password="x-long-password", **extra)
    for role in roles:
        group, _ = Group.objects.get_or_create(name=role)
        user.groups.add(group)
    return user


def staff_said(user) -> str:
    """A member of staff as the end-of-day report names him: "Full Name (username)", the
    username alone without a name (audit.reports.builder._who), computed here independently."""
    full = f"{user.first_name} {user.last_name}".strip()
    return f"{full} ({user.username})" if full else user.username



def named(user, first: str, last: str):
    """`user` given a first and a last name (the report names him "First Last (username)")."""
    user.first_name, user.last_name = first, last
    user.save()
    return user


@pytest.fixture
def user_factory(db) -> Callable[..., object]:
    return make_user


# The role fixtures (auditor, direzione, commissario, capo_partita, changeur, outsider)
# come from tests/conftest.py.


@pytest.fixture
def api() -> Callable[[object | None], APIClient]:
    def client_for(user=None) -> APIClient:
        client = APIClient()
        if user is not None:
            client.force_authenticate(user)
        return client

    return client_for


def append(stream: str, n: int = 1, *, actor=None, action: str = "coup.recorded", **data) -> list[AuditEvent]:
    """Append n events to `stream`, each in its own transaction (savepoint in a test)."""
    events = []
    for i in range(n):
        with transaction.atomic():
            events.append(record(stream=stream, actor=actor, action=action, data={"i": i, **data}))
    return events


@pytest.fixture
def chain(db) -> Callable[..., list[AuditEvent]]:
    return append


@contextmanager
def trigger_disabled() -> Iterator[None]:
    """The attacker with table ownership: switch the append-only triggers off, then on."""
    with connection.cursor() as cursor:
        # The foreign keys are DEFERRABLE INITIALLY DEFERRED: inside the test's transaction
        # their checks are still queued, and ALTER TABLE refuses to run over queued checks.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute(f"ALTER TABLE audit_auditevent DISABLE TRIGGER {TRIGGER}")
        cursor.execute(f"ALTER TABLE audit_auditstream DISABLE TRIGGER {HEAD_TRIGGER}")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"ALTER TABLE audit_auditevent ENABLE TRIGGER {TRIGGER}")
            cursor.execute(f"ALTER TABLE audit_auditstream ENABLE TRIGGER {HEAD_TRIGGER}")
            cursor.execute("SET CONSTRAINTS ALL DEFERRED")


def reseal(name: str) -> None:
    """The attacker who also holds the application's key (audit/seals.py): the head sealed
    again where he left it, so that only the checks beyond the chains can catch him."""
    from audit.seals import head_seal

    seq, head_hash = AuditStream.objects.filter(name=name).values_list("seq", "head_hash").get()
    raw_sql("UPDATE audit_auditstream SET head_seal = %s WHERE name = %s", (head_seal(name, seq, head_hash), name))


def raw_sql(sql: str, params: tuple = ()) -> int:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


@pytest.fixture
def tamper() -> Callable[[str, tuple], int]:
    """Run raw SQL on the audit tables with the trigger disabled (and re-enabled after)."""

    def run(sql: str, params: tuple = ()) -> int:
        with trigger_disabled():
            return raw_sql(sql, params)

    return run


@pytest.fixture(autouse=True)
def _postgresql_only():
    # The trigger, the locks and the snapshot are PostgreSQL behaviour: these tests mean
    # nothing on the SQLite demo database.
    if connection.vendor != "postgresql":
        pytest.skip("audit tests run on PostgreSQL (set DATABASE_URL)")
