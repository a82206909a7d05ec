"""audit.services.batch(): record() calls buffered and written once per batch (one head lock
and one head update per stream, one INSERT), with exactly the events, order and hashes that
record() would have written one by one."""

from __future__ import annotations

import datetime as dt
import threading
from itertools import count
from unittest import mock

import pytest
from django.db import connection, connections, transaction
from django.test.utils import CaptureQueriesContext

from audit import services
from audit.hashing import event_hash
from audit.models import AuditEvent, AuditStream
from audit.selectors import chain_verify
from audit.services import batch, record
from config import prepared

from .conftest import make_user

T0 = dt.datetime(2031, 5, 4, 21, 0, tzinfo=dt.UTC)


def clock():
    """timezone.now() for audit.services: T0, T0 + 1 ms, ... (one tick per call)."""
    ticks = count()
    return mock.patch.object(
        services.timezone, "now", side_effect=lambda: T0 + dt.timedelta(milliseconds=next(ticks))
    )


def columns(stream: str) -> list[tuple]:
    return list(
        AuditEvent.objects.filter(stream__name=stream)
        .order_by("seq")
        .values_list("seq", "at", "actor_id", "actor_name", "action", "subject_type", "subject_id",
                     "payload_json", "prev_hash", "hash")
    )  # fmt: skip


def some_events(user, stream: str) -> None:
    record(stream=stream, actor=user, action="coup.opened", subject=user, data={"n": 1})
    record(stream=stream, actor=None, action="bet.placed", data={"amount": 50_00, "who": ["a", "b"]})
    record(stream=stream, actor=user, action="coup.settled", data={})


@pytest.mark.django_db
def test_a_batch_writes_what_record_would_have_written_one_by_one():
    user = make_user("capo")
    with clock(), transaction.atomic():
        some_events(user, "one:by-one")
    with clock(), transaction.atomic(), batch():
        some_events(user, "batched")
    one, batched = columns("one:by-one"), columns("batched")
    assert [row[:-2] for row in batched] == [row[:-2] for row in one]  # same content, times included
    # The stream name is hashed, so the hashes differ between the two streams: recompute.
    prev = "0" * 64
    for seq, at, actor_id, actor_name, action, stype, sid, payload, prev_hash, digest in batched:
        assert prev_hash == prev
        assert digest == event_hash(stream="batched", seq=seq, at=at, actor_id=actor_id, actor_name=actor_name,
                                    action=action, subject_type=stype, subject_id=sid, payload_json=payload,
                                    prev_hash=prev_hash)  # fmt: skip
        prev = digest
    assert [row[0] for row in batched] == [1, 2, 3]
    assert AuditStream.objects.get(name="batched").head_hash == prev
    assert chain_verify().ok


@pytest.mark.django_db
def test_same_hashes_as_unbatched_on_the_same_stream_and_time():
    user = make_user("capo")
    with clock(), transaction.atomic():
        sid = transaction.savepoint()
        some_events(user, "s")
        unbatched = columns("s")
        transaction.savepoint_rollback(sid)
    assert not AuditEvent.objects.exists()
    with clock(), transaction.atomic(), batch():
        some_events(user, "s")
    assert columns("s") == unbatched


@pytest.mark.django_db
def test_one_lock_one_insert_one_update_per_stream():
    user = make_user("capo")
    with transaction.atomic():
        record(stream="a", actor=None, action="x")  # the streams exist
        record(stream="b", actor=None, action="x")
    with CaptureQueriesContext(connection) as ctx, transaction.atomic(), batch():
        for i in range(10):
            record(stream="a" if i % 3 else "b", actor=user, action="x", data={"i": i})
        assert all("SAVEPOINT" in q["sql"] for q in ctx.captured_queries)  # nothing before the end
    sql = [q["sql"] for q in ctx.captured_queries if "SAVEPOINT" not in q["sql"]]
    # lock both heads; then insert all and update each head, in one round trip where the
    # database allows it (config.prepared.write), else one by one
    assert len(sql) == 1 + (1 if prepared._joined(connection) else 1 + 2), sql
    assert sum("FOR UPDATE" in s for s in sql) == 1
    assert [e.payload["i"] for e in AuditEvent.objects.filter(stream__name="a").order_by("seq")[1:]] == [
        i for i in range(10) if i % 3
    ]
    assert AuditStream.objects.get(name="a").seq == 1 + 6
    assert AuditStream.objects.get(name="b").seq == 1 + 4
    assert chain_verify().ok


@pytest.mark.django_db
def test_a_held_head_is_not_read_again_and_chains_as_usual():
    """A caller that read the head itself (services.HEAD, locked) hands it to the batch
    (held_head): the batch writes the same chain without reading the head a second time."""
    with transaction.atomic():
        record(stream="held", actor=None, action="x", data={"i": 0})
    with CaptureQueriesContext(connection) as ctx, transaction.atomic(), batch():
        services.held_head(services.HEAD.first("held"))
        services.held_head(None)  # no such stream yet: ignored
        events = [record(stream="held", actor=None, action="x", data={"i": i}) for i in (1, 2)]
    heads_read = [q["sql"] for q in ctx.captured_queries if 'FROM "audit_auditstream"' in q["sql"]]
    assert len(heads_read) == 1  # the caller's read only
    assert [e.seq for e in events] == [2, 3] and all(e.pk for e in events)
    assert AuditStream.objects.get(name="held").seq == 3
    assert chain_verify().ok


@pytest.mark.django_db
def test_held_head_outside_a_batch_is_refused():
    with transaction.atomic(), pytest.raises(RuntimeError, match=r"open audit\.batch"):
        services.held_head(None)


@pytest.mark.django_db
def test_new_streams_and_contiguous_seq_after_earlier_events():
    with transaction.atomic():
        for i in range(3):
            record(stream="old", actor=None, action="x", data={"i": i})
    with transaction.atomic(), batch():
        events = [record(stream=name, actor=None, action="y") for name in ("old", "new", "old", "new")]
    assert [(e.stream.name, e.seq) for e in events] == [("old", 4), ("new", 1), ("old", 5), ("new", 2)]
    assert all(e.pk for e in events)
    assert list(AuditEvent.objects.filter(stream__name="old").values_list("seq", flat=True)) == [
        1,
        2,
        3,
        4,
        5,
    ]
    assert chain_verify().ok


@pytest.mark.django_db
def test_nested_batches_flush_once_at_the_outermost_end():
    with transaction.atomic(), batch():
        record(stream="n", actor=None, action="outer.1")
        with batch():
            record(stream="n", actor=None, action="inner")
        assert not AuditEvent.objects.exists()
        try:
            with batch():
                record(stream="n", actor=None, action="inner.failed")
                raise KeyError("x")
        except KeyError:
            pass
        record(stream="n", actor=None, action="outer.2")
    assert list(AuditEvent.objects.order_by("seq").values_list("action", flat=True)) == [
        "outer.1",
        "inner",
        "outer.2",
    ]
    assert chain_verify().ok


@pytest.mark.django_db
def test_an_exception_inside_the_batch_writes_nothing():
    with transaction.atomic():
        record(stream="e", actor=None, action="before")
    with transaction.atomic():
        with pytest.raises(ValueError, match="boom"), batch():
            record(stream="e", actor=None, action="lost.1")
            record(stream="e", actor=None, action="lost.2")
            raise ValueError("boom")
        # The caller's transaction goes on; the batch's events were never written.
        assert AuditEvent.objects.count() == 1
        record(stream="e", actor=None, action="after")
    assert list(AuditEvent.objects.order_by("seq").values_list("action", "seq")) == [
        ("before", 1),
        ("after", 2),
    ]
    assert AuditStream.objects.get(name="e").seq == 2
    assert chain_verify().ok


@pytest.mark.django_db
def test_bad_input_is_refused_at_record_time_inside_a_batch():
    with transaction.atomic(), batch():
        with pytest.raises(TypeError):
            record(stream="r", actor=None, action="x", data={"f": 1.5})
        record(stream="r", actor=None, action="ok")
    assert list(AuditEvent.objects.values_list("action", flat=True)) == ["ok"]


def test_a_batch_outside_a_transaction_is_refused():
    with pytest.raises(RuntimeError), batch():
        pass  # pragma: no cover


@pytest.mark.django_db(transaction=True)
def test_a_batch_and_plain_records_on_the_same_stream_from_two_threads():
    """The batch takes the head lock only when it ends: events recorded meanwhile by another
    transaction come first in the chain, and the batch's follow them, contiguous."""
    buffered, plain_done = threading.Event(), threading.Event()
    errors = []

    def batched():
        try:
            with transaction.atomic(), batch():
                for i in range(3):
                    record(stream="shared", actor=None, action="batched", data={"i": i})
                buffered.set()
                assert plain_done.wait(10)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    def plain():
        try:
            assert buffered.wait(10)
            for i in range(2):
                with transaction.atomic():
                    record(stream="shared", actor=None, action="plain", data={"i": i})
            plain_done.set()
        except BaseException as exc:  # pragma: no cover
            errors.append(exc)
            plain_done.set()
        finally:
            connections.close_all()

    threads = [threading.Thread(target=batched), threading.Thread(target=plain)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert not errors, errors
    rows = list(AuditEvent.objects.filter(stream__name="shared").order_by("seq").values_list("seq", "action"))
    assert rows == [(1, "plain"), (2, "plain"), (3, "batched"), (4, "batched"), (5, "batched")]
    ats = list(AuditEvent.objects.order_by("seq").values_list("at", flat=True))
    assert ats == sorted(ats)
    result = chain_verify()
    assert result.ok and result.events_checked == 5


@pytest.mark.django_db(transaction=True)
def test_a_plain_record_waits_for_a_flushed_batch_to_commit():
    """Once flushed, the batch holds the head lock until its transaction ends."""
    flushed, release = threading.Event(), threading.Event()
    errors = []

    def batched():
        try:
            with transaction.atomic():
                with batch():
                    record(stream="w", actor=None, action="batched")
                flushed.set()
                release.wait(10)
        except BaseException as exc:  # pragma: no cover
            errors.append(exc)
        finally:
            connections.close_all()

    t = threading.Thread(target=batched)
    t.start()
    assert flushed.wait(10)
    done = threading.Event()

    def plain():
        try:
            with transaction.atomic():
                record(stream="w", actor=None, action="plain")
            done.set()
        finally:
            connections.close_all()

    p = threading.Thread(target=plain)
    p.start()
    assert not done.wait(0.5)  # blocked on the head lock
    release.set()
    t.join(10)
    p.join(10)
    assert not errors and done.is_set()
    assert list(AuditEvent.objects.order_by("seq").values_list("action", flat=True)) == ["batched", "plain"]
    assert chain_verify().ok


def test_a_new_event_is_the_models_own_instance():
    """record() builds its event positionally (services._new_event): the same attributes as
    AuditEvent(**values), the defaults included."""
    from audit.models import AuditEvent
    from audit.services import _new_event

    values = {"actor_id": 3, "actor_name": "capo", "action": "coup.opened", "subject_type": "tables.coup",
              "subject_id": "12", "payload_json": '{"a":1}'}  # fmt: skip
    for given in (values, {"action": "x"}):
        ours, theirs = _new_event(**given), AuditEvent(**given)
        assert {k: v for k, v in vars(ours).items() if k != "_state"} == {
            k: v for k, v in vars(theirs).items() if k != "_state"
        }
        assert ours._state.adding and ours._state.db is None
