"""Reading the audit trail: listing events, verifying the chains, sealing a gaming day."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connection, models, transaction
from django.db.models import F, Func

from config.errors import ApplicationError

from .hashing import canonical_time, document_bytes
from .models import GENESIS_HASH, AuditEvent, AuditStream

# Reasons a chain is broken, in the order they are checked for each event.
MISSING_EVENT = "missing_event"  # a gap in seq 1..n (an event was deleted or renumbered)
BROKEN_LINK = "broken_link"  # prev_hash is not the previous event's hash
HASH_MISMATCH = "hash_mismatch"  # the stored hash is not the hash of the stored content
HEAD_MISMATCH = "head_mismatch"  # the stream head (seq, head_hash) is not the last event

# Rows fetched per round trip by the server-side cursor: large enough that the round trips
# cost little, small enough that memory stays flat whatever the number of events.
VERIFY_CHUNK_SIZE = 5000


@dataclass(frozen=True)
class BrokenEvent:
    """Where a chain first breaks. `seq`/`event_id` name the stored event at which the
    break was found (for a gap: the first event after it; for a missing tail or a bad
    head: the head's seq, and the last event's id if there is one)."""

    stream: str
    seq: int
    event_id: int | None
    reason: str
    message: str


@dataclass(frozen=True)
class VerifyResult:
    ok: bool
    streams_checked: int
    events_checked: int
    seconds: float
    first_broken: BrokenEvent | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class _CanonicalTime(Func):
    """The event time rendered by PostgreSQL exactly as `hashing.canonical_time` renders
    it: skipping the datetime round trip halves the per-event cost of verification. If the
    two renderings ever differed, verification would fail loudly (hash_mismatch), never
    pass silently; a test pins them equal."""

    output_field = models.CharField()

    def as_sql(self, compiler, conn, **extra_context):  # pragma: no cover - not reached
        raise NotImplementedError("only used on PostgreSQL")

    def as_postgresql(self, compiler, conn, **extra_context):
        sql, params = compiler.compile(self.source_expressions[0])
        return f"to_char({sql} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')", params


@contextmanager
def _snapshot() -> Iterator[None]:
    """One consistent, read-only view of every chain and head.

    Outside a transaction (the command, the API) this opens a REPEATABLE READ READ ONLY
    transaction on PostgreSQL: an append committing mid-run is not half-seen (its event
    without its head, which would read as a head_mismatch), and the database itself
    guarantees the check writes nothing. Inside a caller's transaction, that transaction's
    view is used as it is."""
    if connection.in_atomic_block:
        yield
        return
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        yield


def _stream_rows(names: Iterable[str] | None) -> models.QuerySet:
    heads = AuditStream.objects.order_by("id")
    if names is None:
        return heads
    wanted = sorted(set(names))
    heads = heads.filter(name__in=wanted)
    known = set(heads.values_list("name", flat=True))
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise ApplicationError(
            "unknown_stream", "No audit stream has this name.", details={"streams": unknown}
        )
    return heads


def chain_verify(*, streams: Iterable[str] | None = None, chunk_size: int = VERIFY_CHUNK_SIZE) -> VerifyResult:
    """Recompute every chain (or those of `streams`) and report the first broken event.

    Per stream, in seq order: seq runs 1..n without a gap, each prev_hash is the previous
    event's hash (GENESIS_HASH for seq 1), each hash is the hash of the event's content,
    and the head (seq, head_hash) is the last event. Streams are checked in id order and
    the check stops at the first break. Heads and events are both read in id order by
    server-side cursors and merged, so memory does not grow with the number of events."""
    started = time.perf_counter()
    sha256 = hashlib.sha256  # a local: the hot loop below runs once per event
    on_postgresql = connection.vendor == "postgresql"
    n_streams = n_events = 0
    broken: BrokenEvent | None = None
    with _snapshot():
        heads = _stream_rows(streams)
        events = AuditEvent.objects.order_by("stream_id", "seq")
        if streams is not None:
            events = events.filter(stream__in=heads)
        at_field = "at_text" if on_postgresql else "at"
        if on_postgresql:
            events = events.annotate(at_text=_CanonicalTime(F("at")))
        rows = events.values_list(
            "stream_id", "id", "seq", at_field, "actor_id", "actor_name", "action",
            "subject_type", "subject_id", "payload", "prev_hash", "hash",
        ).iterator(chunk_size=chunk_size)  # fmt: skip
        head_rows = heads.values_list("id", "name", "seq", "head_hash").iterator(chunk_size=chunk_size)

        pending = next(rows, None)
        for stream_id, name, head_seq, head_hash in head_rows:
            n_streams += 1
            expected, prev, last_id = 1, GENESIS_HASH, None
            # The hot loop: locals only, one tuple unpack, one encode, one sha256 per event.
            while pending is not None and pending[0] == stream_id:
                (_, event_id, seq, at, actor_id, actor_name, action,
                 subject_type, subject_id, payload, prev_hash, digest) = pending  # fmt: skip
                if seq != expected:
                    broken = BrokenEvent(
                        name, seq, event_id, MISSING_EVENT,
                        f"expected seq {expected}, found seq {seq}: events {expected}..{seq - 1} are missing",
                    )  # fmt: skip
                    break
                if prev_hash != prev:
                    broken = BrokenEvent(
                        name, seq, event_id, BROKEN_LINK,
                        f"prev_hash {prev_hash[:12]}… is not the hash of seq {seq - 1} ({prev[:12]}…)",
                    )  # fmt: skip
                    break
                if not on_postgresql:
                    at = canonical_time(at)
                content = document_bytes(
                    name, seq, at, actor_id, actor_name, action, subject_type, subject_id, payload, prev_hash
                )
                if sha256(content).hexdigest() != digest:
                    broken = BrokenEvent(
                        name, seq, event_id, HASH_MISMATCH,
                        "the stored hash is not the hash of the stored content: the event was altered",
                    )  # fmt: skip
                    break
                n_events += 1
                prev, last_id, expected = digest, event_id, expected + 1
                pending = next(rows, None)
            if broken is not None:
                break
            last_seq = expected - 1
            if head_seq > last_seq:
                broken = BrokenEvent(
                    name, last_seq + 1, None, MISSING_EVENT,
                    f"the head is at seq {head_seq} but the chain ends at seq {last_seq}",
                )  # fmt: skip
                break
            if head_seq != last_seq or head_hash != prev:
                broken = BrokenEvent(
                    name, head_seq, last_id, HEAD_MISMATCH,
                    f"the head (seq {head_seq}, {head_hash[:12]}…) is not the last event "
                    f"(seq {last_seq}, {prev[:12]}…)",
                )  # fmt: skip
                break
    return VerifyResult(
        ok=broken is None,
        streams_checked=n_streams,
        events_checked=n_events,
        seconds=time.perf_counter() - started,
        first_broken=broken,
    )


def day_seal(*, streams: Iterable[str]) -> str:
    """The seal of a gaming day: SHA-256 (hex) over the lines "name:seq:head_hash" of the
    given streams, sorted and joined by newlines. It depends only on the heads, so any
    later append to, or tampering with, one of these heads changes it. Unknown names are
    refused rather than sealed as absent."""
    lines = sorted(f"{name}:{seq}:{head}" for name, seq, head in _stream_rows(streams).values_list(
        "name", "seq", "head_hash"
    ))  # fmt: skip
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def stream_list(*, filters: Mapping[str, Any] | None = None) -> models.QuerySet[AuditStream]:
    from .filters import AuditStreamFilter

    return _filtered(AuditStreamFilter, AuditStream.objects.order_by("name"), filters)


def stream_events(
    *, streams: Iterable[str] | None = None, filters: Mapping[str, Any] | None = None
) -> models.QuerySet[AuditEvent]:
    """Events, newest first, with their stream name loaded in the same query.

    `filters` takes the query parameters of the API (see `filters.AuditEventFilter`);
    invalid values raise ValidationError, which the API turns into a 400."""
    from .filters import AuditEventFilter

    events = AuditEvent.objects.select_related("stream").order_by("-id")
    if streams is not None:
        events = events.filter(stream__name__in=list(streams))
    return _filtered(AuditEventFilter, events, filters)


def _filtered(filterset_class, queryset: models.QuerySet, filters: Mapping[str, Any] | None):
    if not filters:
        return queryset
    filterset = filterset_class(filters, queryset=queryset)
    if not filterset.is_valid():
        raise ValidationError(filterset.errors)
    return filterset.qs


__all__ = [
    "BROKEN_LINK",
    "HASH_MISMATCH",
    "HEAD_MISMATCH",
    "MISSING_EVENT",
    "BrokenEvent",
    "VerifyResult",
    "chain_verify",
    "day_seal",
    "stream_events",
    "stream_list",
]
