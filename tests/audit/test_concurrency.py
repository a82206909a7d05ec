"""Appends from real threads, each with its own PostgreSQL connection: one stream is
serialized by its head lock, different streams never wait on each other."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection, connections, transaction

from audit.models import AuditEvent, AuditStream
from audit.selectors import chain_verify
from audit.services import record

pytestmark = pytest.mark.django_db(transaction=True)

WAIT = 10.0  # seconds: generous, only reached when something is wrong


def in_own_connection(fn):
    """Run fn in this thread's own connection and close it after (threads do not share)."""

    def run(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        finally:
            connections.close_all()

    return run


@in_own_connection
def append_one(stream: str, i: int) -> int:
    with transaction.atomic():
        return record(stream=stream, actor=None, action="coup.recorded", data={"i": i}).seq


def test_threads_appending_to_one_stream_get_seq_1_to_n_and_a_valid_chain():
    n = 40
    with ThreadPoolExecutor(max_workers=8) as pool:
        seqs = list(pool.map(append_one, ["table:1"] * n, range(n)))

    assert sorted(seqs) == list(range(1, n + 1))
    assert list(AuditEvent.objects.order_by("seq").values_list("seq", flat=True)) == list(range(1, n + 1))
    # Every append is in the chain exactly once, whatever the interleaving.
    assert sorted(event.payload["i"] for event in AuditEvent.objects.all()) == list(range(n))
    result = chain_verify()
    assert result.ok and result.events_checked == n


def test_threads_creating_the_same_new_stream_race_safely():
    # First appends to a stream nobody has written yet: the head is created once.
    with ThreadPoolExecutor(max_workers=6) as pool:
        seqs = list(pool.map(append_one, ["table:new"] * 6, range(6)))
    assert sorted(seqs) == [1, 2, 3, 4, 5, 6]
    assert AuditStream.objects.filter(name="table:new").count() == 1
    assert chain_verify().ok


def backend_waits_on_a_lock(pid: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (pid,))
        row = cursor.fetchone()
    return row is not None and row[0] == "Lock"


def test_a_held_stream_blocks_its_own_appends_but_not_another_stream():
    for name in ("table:A", "table:B"):
        with transaction.atomic():
            record(stream=name, actor=None, action="session.opened")

    holding, release = threading.Event(), threading.Event()
    pids: dict[str, int] = {}
    done: dict[str, float] = {}

    @in_own_connection
    def hold_a():
        with transaction.atomic():
            record(stream="table:A", actor=None, action="coup.recorded", data={"by": "holder"})
            holding.set()
            release.wait(WAIT)  # the transaction, and the lock on A's head, stay open

    @in_own_connection
    def append(name: str):
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            pids[name] = cursor.fetchone()[0]
        with transaction.atomic():
            record(stream=name, actor=None, action="coup.recorded", data={"by": name})
        done[name] = time.monotonic()

    holder = threading.Thread(target=hold_a)
    holder.start()
    assert holding.wait(WAIT)
    waiter_a = threading.Thread(target=append, args=("table:A",))
    waiter_a.start()
    try:
        # B completes while A's head is held...
        other_b = threading.Thread(target=append, args=("table:B",))
        other_b.start()
        other_b.join(WAIT)
        assert "table:B" in done

        # ...and the append to A is waiting on a lock, not finished.
        deadline = time.monotonic() + WAIT
        while not ("table:A" in pids and backend_waits_on_a_lock(pids["table:A"])):
            assert time.monotonic() < deadline, "the second append to A never waited on the head lock"
            time.sleep(0.01)
        assert "table:A" not in done
    finally:
        released_at = time.monotonic()
        release.set()
        holder.join(WAIT)
        waiter_a.join(WAIT)

    assert done["table:A"] >= released_at  # A went on only once the holder committed
    a_events = [(e.seq, e.payload) for e in AuditEvent.objects.filter(stream__name="table:A").order_by("seq")]
    assert a_events == [(1, {}), (2, {"by": "holder"}), (3, {"by": "table:A"})]
    assert chain_verify().ok
