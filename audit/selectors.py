"""Reading the audit trail: listing events, verifying the chains, sealing a gaming day."""

from __future__ import annotations

import hashlib
import time
from binascii import hexlify
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from operator import itemgetter
from typing import Any, NamedTuple

from django.core.exceptions import ValidationError
from django.db import connection, models, transaction
from django.db.models import F, Func
from psycopg.adapt import Loader

from config.errors import ApplicationError

from .hashing import RECORD_SEPARATOR, TIME_SQL, canonical_time, document_bytes, document_sql
from .models import GENESIS_HASH, AuditEvent, AuditStream

_GENESIS = GENESIS_HASH.encode()
_RS = RECORD_SEPARATOR.encode()

# Reasons a chain is broken, in the order they are checked for each event.
MISSING_EVENT = "missing_event"  # a gap in seq 1..n (an event was deleted or renumbered)
BROKEN_LINK = "broken_link"  # prev_hash is not the previous event's hash
HASH_MISMATCH = "hash_mismatch"  # the stored hash is not the hash of the stored content
HEAD_MISMATCH = "head_mismatch"  # the stream head (seq, head_hash) is not the last event

# Events per chunk: the fast path hashes a chunk from one text blob built by PostgreSQL,
# the slow path reads rows through a server-side cursor this many at a time. Large enough
# that round trips cost little, small enough that memory stays flat (~0.5 MB a chunk) and
# that PostgreSQL builds the next chunk while Python hashes this one.
VERIFY_CHUNK_SIZE = 2000
# Chunks planned per fast-path query (one query returns one row per chunk, streamed).
_CHUNKS_PER_QUERY = 500
_MIN_BIGINT, _MAX_BIGINT = -(2**63), 2**63 - 1


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
    """The event time rendered by PostgreSQL as `hashing.canonical_time` renders it
    (hashing.TIME_SQL): the slow path reads it as text, so even a timestamp Python cannot
    represent (BC, infinity) is hashed, not a crash."""

    output_field = models.CharField()

    def as_sql(self, compiler, conn, **extra_context):  # pragma: no cover - not reached
        raise NotImplementedError("only used on PostgreSQL")

    def as_postgresql(self, compiler, conn, **extra_context):
        sql, params = compiler.compile(self.source_expressions[0])
        return TIME_SQL.format(sql), params


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


class _Head(NamedTuple):
    id: int
    name: str
    seq: int
    head_hash: str


class _Chunk(NamedTuple):
    """Events `start`..`start + size - 1` of a stream, fetched as every event whose seq is
    in (`lo`, `hi`]. A stream's chunks partition the whole bigint line: the first is open
    below, the last open above, so no stored event of the stream escapes the check, whatever
    its seq."""

    head: _Head
    start: int
    size: int
    lo: int
    hi: int
    last: bool


def _plan(head: _Head, chunk_size: int) -> Iterator[_Chunk]:
    start = 1
    while True:
        size = min(chunk_size, head.seq - start + 1)
        last = start + size - 1 >= head.seq
        yield _Chunk(head, start, size, _MIN_BIGINT if start == 1 else start - 1, _MAX_BIGINT if last else start + size - 1, last)  # fmt: skip
        if last:
            return
        start += size


def _check_rows(head: _Head, rows: Iterable[tuple], expected: int, prev: str) -> tuple[BrokenEvent | None, int]:
    """The straightforward check, event by event, of `rows` (id, seq, at text or datetime,
    actor id, actor name, action, subject type, subject id, payload_json, prev_hash, hash;
    in seq order), which must be the stream's events from seq `expected` on, the first
    linked to `prev`; then of the head. Returns (first break or None, events that passed).

    This is the only check on SQLite, and on PostgreSQL it names the break once the fast
    path has found a chunk that does not verify. It recomputes each document in Python
    with `hashing.document_bytes`, the writer's own definition."""
    sha256 = hashlib.sha256
    name = head.name
    checked, last_id = 0, None
    for event_id, seq, at, actor_id, actor_name, action, subject_type, subject_id, payload_json, prev_hash, digest in rows:  # fmt: skip
        if seq != expected:
            missing = (
                f"events {expected}..{seq - 1} are missing" if seq > expected
                else "an event was inserted or renumbered"
            )  # fmt: skip
            return BrokenEvent(
                name, seq, event_id, MISSING_EVENT,
                f"expected seq {expected}, found seq {seq}{' again' if seq < expected else ''}: {missing}",
            ), checked  # fmt: skip
        if prev_hash != prev:
            return BrokenEvent(
                name, seq, event_id, BROKEN_LINK,
                f"prev_hash {str(prev_hash)[:12]}… is not the hash of seq {seq - 1} ({prev[:12]}…)",
            ), checked  # fmt: skip
        at_text = at if isinstance(at, str) or at is None else canonical_time(at)
        try:
            content = document_bytes(
                name, seq, at_text, actor_id, actor_name, action, subject_type, subject_id, payload_json, prev_hash
            )
        except (TypeError, ValueError):  # a NULL or unencodable column: nothing can hash to it
            content = None
        if content is None or sha256(content).hexdigest() != digest:
            return BrokenEvent(
                name, seq, event_id, HASH_MISMATCH,
                "the stored hash is not the hash of the stored content: the event was altered",
            ), checked  # fmt: skip
        checked += 1
        prev, last_id, expected = digest, event_id, expected + 1
    last_seq = expected - 1
    if head.seq > last_seq:
        return BrokenEvent(
            name, last_seq + 1, None, MISSING_EVENT,
            f"the head is at seq {head.seq} but the chain ends at seq {last_seq}",
        ), checked  # fmt: skip
    if head.seq != last_seq or head.head_hash != prev:
        return BrokenEvent(
            name, head.seq, last_id, HEAD_MISMATCH,
            f"the head (seq {head.seq}, {head.head_hash[:12]}…) is not the last event (seq {last_seq}, {prev[:12]}…)",
        ), checked  # fmt: skip
    return None, checked


def _check_stream_slowly(head: _Head, chunk: _Chunk | None, prev: str, chunk_size: int) -> tuple[BrokenEvent | None, int]:
    """`_check_rows` over the stream's stored events from `chunk` on (None: all of them)."""
    events = AuditEvent.objects.filter(stream_id=head.id).order_by("seq", "id")
    if chunk is not None and chunk.lo != _MIN_BIGINT:
        events = events.filter(seq__gt=chunk.lo)
    at_field = "at"
    if connection.vendor == "postgresql":
        events, at_field = events.annotate(at_text=_CanonicalTime(F("at"))), "at_text"
    rows = events.values_list(
        "id", "seq", at_field, "actor_id", "actor_name", "action", "subject_type", "subject_id",
        "payload_json", "prev_hash", "hash",
    ).iterator(chunk_size=chunk_size)  # fmt: skip
    return _check_rows(head, rows, 1 if chunk is None else chunk.start, prev)


class _RawText(Loader):
    """Text results as the bytes PostgreSQL sent (UTF-8): the blob is hashed as it comes,
    never decoded to str and encoded back."""

    def load(self, data):
        return bytes(data)


# One row per planned chunk: its index in the plan, the number of events in its seq range,
# their documents built by PostgreSQL from the columns (in seq order, RECORD_SEPARATOR
# between them) and their stored hashes, concatenated. The lateral subquery reads the
# chunk's range from the (stream, seq) unique index, already in seq order; the LIMIT keeps
# a chunk bounded even if a tampered head understates the events behind it. string_agg
# takes its input in the subquery's order (PostgreSQL does, though SQL does not promise
# it): if it ever did not, the chunk would fail the checks and go to the slow path, which
# orders explicitly; never a false pass.
_FAST_SQL = f"""
SELECT c.i, a.n, a.documents, a.hashes
FROM unnest(%s::int[], %s::bigint[], %s::text[], %s::bigint[], %s::bigint[], %s::bigint[])
     AS c(i, stream_id, name, lo, hi, lim)
CROSS JOIN LATERAL (
    SELECT count(*) AS n,
           string_agg({document_sql("c.name", "e")}, E'\\x1e') AS documents,
           string_agg(e.hash, '') AS hashes
    FROM (SELECT * FROM audit_auditevent e
          WHERE e.stream_id = c.stream_id AND e.seq > c.lo AND e.seq <= c.hi
          ORDER BY e.seq LIMIT c.lim) e
) a
"""  # noqa: S608 - no user input: the only interpolation is a constant expression


def _fast_batch(chunks: list[_Chunk], prevs: dict[int, bytes]) -> tuple[int, int | None]:
    """Check `chunks` (in plan order) with one streamed query. Returns (events verified,
    index of the first chunk that did not verify, or None). `prevs` carries each stream's
    last verified hash from chunk to chunk and from batch to batch.

    Per chunk, in C loops only (no Python code runs per event): the number of events and
    of documents is `size`; every document starts with "<stream name>\\x1f<seq>\\x1f" for
    seq start, start+1, ... (contiguous seqs, all of this stream); SHA-256 of each document
    is its stored hash; the prev_hash that ends each document is the previous event's hash
    (the stream's last verified one for the first); and for the stream's last chunk, the
    last hash is the head's. PostgreSQL builds the next chunk while Python hashes this one
    (the rows are streamed), so the two costs overlap."""
    sha256 = hashlib.sha256
    digest = type(sha256()).digest
    prev_hash_of = itemgetter(slice(-64, None))
    params = (
        list(range(len(chunks))),
        [c.head.id for c in chunks],
        [c.head.name for c in chunks],
        [c.lo for c in chunks],
        [c.hi for c in chunks],
        [c.size + 1 for c in chunks],  # one more than expected: an excess is seen, not cut
    )
    verified = 0
    with connection.cursor() as wrapper:
        cursor = wrapper.cursor  # the driver's cursor: rows are streamed, not buffered
        cursor.adapters.register_loader("text", _RawText)
        for index, (i, n, documents, hashes) in enumerate(cursor.stream(_FAST_SQL, params)):
            chunk = chunks[index]
            head, size = chunk.head, chunk.size
            prev = prevs.get(head.id, _GENESIS)
            ok = i == index  # PostgreSQL returns the nested loop's rows in plan order
            if size == 0:
                ok = ok and n == 0
            else:
                parts = documents.split(_RS) if documents is not None else []
                prefix = head.name.encode().replace(b"%", b"%%") + b"\x1f%d\x1f"
                ok = (
                    ok
                    and n == size
                    and len(parts) == size
                    and hashes is not None
                    and len(hashes) == 64 * size
                    and hexlify(b"".join(map(digest, map(sha256, parts)))) == hashes
                    and b"".join(map(prev_hash_of, parts)) == prev + hashes[:-64]
                    and all(map(bytes.startswith, parts, map(prefix.__mod__, range(chunk.start, chunk.start + size))))
                )  # fmt: skip
                if ok:
                    prev = hashes[-64:]
            if ok and chunk.last:
                ok = prev == head.head_hash.encode()
            if not ok:
                return verified, index
            prevs[head.id] = prev
            verified += size
    return verified, None


def _batches(heads: Iterable[_Head], chunk_size: int) -> Iterator[list[_Chunk]]:
    batch: list[_Chunk] = []
    for head in heads:
        for chunk in _plan(head, chunk_size):
            batch.append(chunk)
            if len(batch) == _CHUNKS_PER_QUERY:
                yield batch
                batch = []
    if batch:
        yield batch


def _verify_fast(heads: Iterable[_Head], chunk_size: int) -> tuple[int, int, BrokenEvent | None]:
    n_streams = n_events = 0
    prevs: dict[int, bytes] = {}
    settled: set[int] = set()  # streams the slow path has already checked to their head
    for planned in _batches(heads, chunk_size):
        batch = [chunk for chunk in planned if chunk.head.id not in settled]
        while batch:
            verified, failed = _fast_batch(batch, prevs)
            n_events += verified
            if failed is None:
                n_streams += sum(chunk.start == 1 for chunk in batch)
                break
            # Name the break: that stream, event by event from the chunk that failed (its
            # earlier chunks, and every chunk before it in the batch, verified).
            chunk = batch[failed]
            n_streams += sum(c.start == 1 for c in batch[: failed + 1])
            prev = prevs.get(chunk.head.id, _GENESIS).decode()
            broken, checked = _check_stream_slowly(chunk.head, chunk, prev, chunk_size)
            n_events += checked
            if broken is not None:
                return n_streams, n_events, broken
            # Nothing found event by event (the two renderings of a document disagreed,
            # which a test rules out): the event-by-event verdict stands; go on.
            settled.add(chunk.head.id)
            batch = [c for c in batch[failed + 1 :] if c.head.id != chunk.head.id]
    return n_streams, n_events, None


def chain_verify(
    *, streams: Iterable[str] | None = None, chunk_size: int = VERIFY_CHUNK_SIZE, fast: bool | None = None
) -> VerifyResult:
    """Recompute every chain (or those of `streams`) and report the first broken event.

    Per stream, in seq order: seq runs 1..n without a gap, each prev_hash is the previous
    event's hash (GENESIS_HASH for seq 1), each hash is the hash of the event's document
    (hashing.py), and the head (seq, head_hash) is the last event. Streams are checked in
    id order and the check stops at the first break. Memory stays flat in the number of
    events (and of streams): heads are read by a server-side cursor, events a chunk at a
    time.

    On PostgreSQL (`fast` None or True) whole chunks are checked from documents PostgreSQL
    builds from the columns (`_fast_batch`); the first chunk that does not verify is checked
    again event by event (`_check_rows`), which names the break. On SQLite, or with
    `fast=False`, every stream is checked event by event. Both give the same answer (the
    tests hold them to it)."""
    started = time.perf_counter()
    fast = connection.vendor == "postgresql" if fast is None else fast
    with _snapshot():
        heads = (
            _Head(*row)
            for row in _stream_rows(streams).values_list("id", "name", "seq", "head_hash").iterator(chunk_size=chunk_size)
        )  # fmt: skip
        if fast:
            n_streams, n_events, broken = _verify_fast(heads, chunk_size)
        else:
            n_streams = n_events = 0
            broken = None
            for head in heads:
                n_streams += 1
                broken, checked = _check_stream_slowly(head, None, GENESIS_HASH, chunk_size)
                n_events += checked
                if broken is not None:
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
