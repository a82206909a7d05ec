"""chain_verify on several connections sharing one snapshot: the same verdict as one
connection and as the event-by-event path, the same first break whichever thread finds
it, every extra connection closed, and none at all inside a caller's transaction."""

from __future__ import annotations

import threading

import psycopg
import pytest
from django.db import connection, connections

from audit import selectors
from audit.models import AuditEvent, AuditStream
from audit.selectors import chain_verify
from config.errors import ApplicationError

from .conftest import append

pytestmark = pytest.mark.django_db(transaction=True)

PARALLEL = 3  # the coordinator's connection and two more


def verdict(result):
    return (result.ok, result.streams_checked, result.events_checked, result.first_broken)


@pytest.fixture
def opened(monkeypatch) -> list:
    """The extra connections chain_verify opens (each checked closed by the tests)."""
    conns: list = []
    real = selectors._worker_connection

    def spy(*args):
        conn = real(*args)
        conns.append(conn)
        return conn

    monkeypatch.setattr(selectors, "_worker_connection", spy)
    return conns


def all_paths(opened: list, **kwargs):
    """The parallel, single-connection and event-by-event verdicts, which must agree.
    Returns the parallel one, after checking that it did use (and close) its connections."""
    before = len(opened)
    parallel = chain_verify(workers=PARALLEL, **kwargs)
    assert len(opened) - before == PARALLEL - 1, "the parallel path was not taken"
    assert all(conn.closed for conn in opened)
    single = chain_verify(workers=1, **kwargs)
    slow = chain_verify(fast=False, **kwargs)
    assert verdict(parallel) == verdict(single) == verdict(slow)
    return parallel


@pytest.fixture
def trail() -> dict[str, list[AuditEvent]]:
    """Streams spread over many chunks (with chunk_size 1 to 3), and an empty head."""
    events = {name: append(name, n) for name, n in (("a", 9), ("b", 13), ("c", 7), ("d", 5))}
    AuditStream.objects.create(name="empty")
    return events


@pytest.mark.parametrize("size", [1, 2, 3])
def test_an_intact_trail_gives_the_same_verdict_on_every_path(trail, opened, size):
    result = all_paths(opened, chunk_size=size)
    assert result.ok and (result.streams_checked, result.events_checked) == (5, 34)


TAMPERS = {
    "payload": ("UPDATE audit_auditevent SET payload_json = '{\"i\":99}' WHERE id = %(id)s", "hash_mismatch"),
    "action": ("UPDATE audit_auditevent SET action = 'x' WHERE id = %(id)s", "hash_mismatch"),
    "time": ("UPDATE audit_auditevent SET at = at + interval '1 microsecond' WHERE id = %(id)s", "hash_mismatch"),
    "actor": ("UPDATE audit_auditevent SET actor_name = 'mallory' WHERE id = %(id)s", "hash_mismatch"),
    "link": ("UPDATE audit_auditevent SET prev_hash = repeat('a', 64) WHERE id = %(id)s", "broken_link"),
    "deleted": ("DELETE FROM audit_auditevent WHERE id = %(id)s", "missing_event"),
    "renumbered": ("UPDATE audit_auditevent SET seq = seq + 1000 WHERE id = %(id)s", "missing_event"),
}


@pytest.mark.parametrize("size", [2, 3])
@pytest.mark.parametrize("victim", [0, 6, 12])
@pytest.mark.parametrize("kind", sorted(TAMPERS))
def test_the_first_break_is_named_the_same_by_every_path(trail, opened, tamper, kind, victim, size):
    sql, reason = TAMPERS[kind]
    tamper(sql, {"id": trail["b"][victim].pk})
    # A later break too, in a stream another connection may well check first.
    tamper("UPDATE audit_auditevent SET action = 'y' WHERE id = %s", (trail["d"][1].pk,))

    broken = all_paths(opened, chunk_size=size).first_broken

    # all_paths holds the seq, id and message to the event-by-event path's.
    assert (broken.stream, broken.reason) == ("b", reason)
    if kind not in {"deleted", "renumbered"}:
        assert (broken.seq, broken.event_id) == (victim + 1, trail["b"][victim].pk)


@pytest.mark.parametrize("change", ["head_hash = repeat('b', 64)", "seq = seq - 1", "seq = seq + 1"])
def test_an_altered_head_is_named_the_same_by_every_path(trail, opened, tamper, change):
    tamper(f"UPDATE audit_auditstream SET {change} WHERE name = 'c'")
    broken = all_paths(opened, chunk_size=2).first_broken
    assert broken.stream == "c" and broken.reason in {"head_mismatch", "missing_event"}


def test_the_workers_see_the_coordinators_snapshot(trail, monkeypatch):
    # An append commits after the snapshot was exported, before a worker imports it: no
    # connection sees it, so the trail verifies as it was (its event without its head, or
    # the reverse, would read as a break).
    before = AuditEvent.objects.count()
    real = selectors._worker_connection
    lock, appended, seen = threading.Lock(), [], []

    def late_append_then_connect(*args):
        with lock:
            if not appended:
                appended.append(True)
                try:
                    append("a", 3)
                finally:
                    connections.close_all()
        conn = real(*args)
        seen.append(conn.execute("SELECT count(*) FROM audit_auditevent").fetchone()[0])
        return conn

    monkeypatch.setattr(selectors, "_worker_connection", late_append_then_connect)
    result = chain_verify(workers=PARALLEL, chunk_size=2)

    assert seen == [before] * (PARALLEL - 1)
    assert result.ok and result.events_checked == before
    assert AuditEvent.objects.count() == before + 3
    assert chain_verify(workers=PARALLEL, chunk_size=2).events_checked == before + 3


def test_no_connection_is_left_open(trail, opened):
    def backends() -> int:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
            return cursor.fetchone()[0]

    start = backends()
    for _ in range(3):
        assert chain_verify(workers=PARALLEL, chunk_size=1).ok
    assert len(opened) == 3 * (PARALLEL - 1) and all(conn.closed for conn in opened)
    assert threading.active_count() == 1
    for _ in range(50):  # a closed backend leaves pg_stat_activity a moment later
        if backends() == start:
            break
        threading.Event().wait(0.05)
    assert backends() == start


def test_a_worker_that_cannot_connect_leaves_its_share_to_the_others(trail, tamper, monkeypatch):
    def refuse(*args):
        raise psycopg.OperationalError("no more connections")

    monkeypatch.setattr(selectors, "_worker_connection", refuse)
    assert chain_verify(workers=PARALLEL, chunk_size=2).events_checked == 34
    tamper("UPDATE audit_auditevent SET action = 'x' WHERE id = %s", (trail["c"][3].pk,))
    broken = chain_verify(workers=PARALLEL, chunk_size=2).first_broken
    assert (broken.stream, broken.seq, broken.reason) == ("c", 4, "hash_mismatch")


def test_workers_must_be_positive(trail):
    with pytest.raises(ValueError, match="at least 1"):
        chain_verify(workers=0)


@pytest.mark.django_db
def test_inside_a_transaction_one_connection_does_it_all(monkeypatch):
    # Another connection could not see the caller's uncommitted events.
    def must_not_connect(*args):
        raise AssertionError("no extra connection inside a caller's transaction")

    monkeypatch.setattr(selectors, "_worker_connection", must_not_connect)
    for name in ("a", "b", "c"):
        append(name, 9)
    result = chain_verify(workers=PARALLEL, chunk_size=1)
    assert result.ok and result.events_checked == 27


@pytest.mark.parametrize("streams", [None, ["a", "c"]])
def test_a_run_reads_one_read_only_snapshot_with_the_events_locked(trail, monkeypatch, streams):
    # What `_snapshot` sets up (its SET TRANSACTION and LOCK go in one round trip), seen from
    # inside the run; and the named heads (read in one query) are those asked for.
    inside = []
    real = selectors._doc_problem

    def look():
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT current_setting('transaction_isolation'), current_setting('transaction_read_only'), "
                "(SELECT mode FROM pg_locks WHERE pid = pg_backend_pid() AND relation = 'audit_auditevent'::regclass"
                " AND granted ORDER BY mode LIMIT 1)"
            )
            inside.append(cursor.fetchone())
        return real()

    monkeypatch.setattr(selectors, "_doc_problem", look)
    result = chain_verify(streams=streams, workers=1)
    assert inside == [("repeatable read", "on", "AccessShareLock")]
    assert result.ok and result.streams_checked == (5 if streams is None else 2)
    assert result.events_checked == (34 if streams is None else 16)


def test_unknown_names_are_refused_all_at_once(trail):
    with pytest.raises(ApplicationError) as refused:
        chain_verify(streams=["a", "nope", "zz", "nope"])
    assert refused.value.code == "unknown_stream" and refused.value.details == {"streams": ["nope", "zz"]}


@pytest.mark.parametrize("workers", [1, PARALLEL])
def test_a_break_early_in_a_long_query_is_named_not_raised(opened, tamper, monkeypatch, workers):
    """The chunk query streams many chunks; the first one breaks. Leaving the stream there
    made psycopg cancel the statement still running, and a cancelled statement aborts the
    transaction: the event-by-event pass that names the break then failed ("current
    transaction is aborted"), an error instead of a verdict (now and then, by timing). The
    rest of the stream is read and not checked: no statement is ever cancelled."""
    cancels = []
    real = psycopg.Connection._try_cancel

    def spy(self, *args, **kwargs):
        cancels.append(self)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(psycopg.Connection, "_try_cancel", spy)
    events = append("first", 3)
    for n in range(40):  # 520 chunks of 5 kB: more than the socket holds while PostgreSQL sends
        append(f"s{n:02d}", 13, blob="x" * 5000)
    tamper("UPDATE audit_auditevent SET action = 'x' WHERE id = %s", (events[0].pk,))
    for _ in range(5):
        result = chain_verify(workers=workers, chunk_size=1)
        assert not result.ok
        assert (result.first_broken.stream, result.first_broken.seq, result.first_broken.reason) == (
            "first", 1, "hash_mismatch")  # fmt: skip
    assert cancels == []
