"""Reading the audit trail: listing events, verifying the chains, sealing a gaming day."""

from __future__ import annotations

import hashlib
import logging
import os
import queue
import threading
import time
from binascii import hexlify
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from itertools import repeat
from operator import itemgetter
from typing import Any, NamedTuple

from django.core.exceptions import ValidationError
from django.db import connection, models, transaction
from django.db.models import F, Func
from psycopg.adapt import Loader

from config.errors import ApplicationError

from .hashing import RECORD_SEPARATOR, TIME_SQL, canonical_time, document_bytes, document_sql
from .models import GENESIS_HASH, AuditEvent, AuditStream

logger = logging.getLogger(__name__)

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
# Connections that check chunks at once on the fast path (chain_verify's `workers`): one
# core stays for Python (the hashing holds the GIL, so it runs on one core whatever the
# number of threads), each other core gets a PostgreSQL backend building documents; at
# most 4. On 2 cores that is 1: measured, a second connection there only adds its cost
# (bench/audit.py prints both figures).
DEFAULT_VERIFY_WORKERS = max(1, min(4, (os.cpu_count() or 1) - 1))
# Extra connections only for a batch of at least this many chunks per connection.
_MIN_CHUNKS_PER_CONNECTION = 4
# At most this many chunks per query when several connections share a batch.
_MAX_UNIT_CHUNKS = 8


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
# between them) WITHOUT the leading stream name (Python prepends it: it is the planned
# chunk's, and it saves PostgreSQL two concatenations per event) and their stored hashes,
# concatenated. The lateral subquery reads the chunk's range from the (stream, seq) unique
# index, already in seq order; the LIMIT keeps a chunk bounded even if a tampered head
# understates the events behind it. string_agg takes its input in the subquery's order
# (PostgreSQL does, though SQL does not promise it): if it ever did not, the chunk would
# fail the checks and go to the slow path, which orders explicitly; never a false pass.
_FAST_SQL = f"""
SELECT c.i, a.n, a.documents, a.hashes
FROM unnest(%s::int[], %s::bigint[], %s::bigint[], %s::bigint[], %s::bigint[])
     AS c(i, stream_id, lo, hi, lim)
CROSS JOIN LATERAL (
    SELECT count(*) AS n,
           string_agg({document_sql(None, "e")}, E'\\x1e') AS documents,
           string_agg(e.hash, '') AS hashes
    FROM (SELECT * FROM audit_auditevent e
          WHERE e.stream_id = c.stream_id AND e.seq > c.lo AND e.seq <= c.hi
          ORDER BY e.seq LIMIT c.lim) e
) a
"""  # noqa: S608 - no user input: the only interpolation is a constant expression

_FAILED = None  # a chunk that does not verify on its own
# The per-call cache of "<seq>\x1f" prefixes keeps at most this many chunk starts (every
# stream's chunks start at 1, 1 + chunk_size, ...: a few starts serve every stream).
_PREFIX_CACHE_STARTS = 16


class _SeqPrefixes:
    """b"<seq>\\x1f" for seq start, start+1, ...: what each document of a chunk starts with
    after "<stream name>\\x1f". Built in C loops, cached per chunk start for one call."""

    def __init__(self) -> None:
        self._cache: dict[int, list[bytes]] = {}

    def __call__(self, start: int, size: int) -> list[bytes]:
        got = self._cache.get(start)
        if got is None or len(got) < size:
            got = ("\x1f\n".join(map(str, range(start, start + size))) + "\x1f").encode().split(b"\n")
            if len(self._cache) < _PREFIX_CACHE_STARTS or start in self._cache:
                self._cache[start] = got
        return got


def _check_chunk(chunk: _Chunk, n: int, documents: bytes | None, hashes: bytes | None, prefixes: _SeqPrefixes):
    """The chunk's events checked on their own, in C loops only (no Python code runs per
    event): `size` events and documents; every document starts with
    "<stream name>\\x1f<seq>\\x1f" for seq start, start+1, ...; SHA-256 of each document is
    its stored hash; the prev_hash that ends each document after the first is the previous
    event's hash. Returns (the first document's prev_hash, the last hash), to be linked to
    the stream's previous chunk and head by `_settle`, or `_FAILED`."""
    size = chunk.size
    if size == 0:
        return (b"", b"") if n == 0 else _FAILED
    if n != size or documents is None or hashes is None or len(hashes) != 64 * size:
        return _FAILED
    prefix = chunk.head.name.encode() + b"\x1f"
    parts = (prefix + documents.replace(_RS, _RS + prefix)).split(_RS)
    if len(parts) != size:
        return _FAILED
    if hexlify(b"".join(map(_digest, map(_sha256, parts)))) != hashes:
        return _FAILED
    links = b"".join(map(_prev_hash_of, parts))
    if links[64:] != hashes[:-64]:
        return _FAILED
    if not all(map(bytes.startswith, parts, prefixes(chunk.start, size), repeat(len(prefix)))):
        return _FAILED
    return links[:64], hashes[-64:]


_sha256 = hashlib.sha256
_digest = type(_sha256()).digest
_prev_hash_of = itemgetter(slice(-64, None))


class _Batch:
    """The chunks of one batch, shared by the threads that check them: each takes the
    next unit (a run of consecutive chunks, one query), checks its chunks and stores each
    verdict at the chunk's index. A chunk that fails makes every thread skip the units
    after it (the first break is the first failing chunk in plan order, so nothing after it
    is needed); units before it are still checked, whoever runs them."""

    def __init__(self, chunks: list[_Chunk], unit: int) -> None:
        self.chunks = chunks
        self.results: list[Any] = [_FAILED] * len(chunks)
        self.units = [range(i, min(i + unit, len(chunks))) for i in range(0, len(chunks), unit)]
        self.lock = threading.Lock()
        self.next_unit = 0
        self.pending = len(self.units)
        self.stop = len(chunks)  # units starting at or after this index are skipped
        self.error: BaseException | None = None
        self.done = threading.Event()
        if not self.units:
            self.done.set()

    def take(self) -> range | None:
        with self.lock:
            if self.next_unit == len(self.units):
                return None
            unit = self.units[self.next_unit]
            self.next_unit += 1
            return unit

    def finish(self, error: BaseException | None = None) -> None:
        with self.lock:
            if error is not None and self.error is None:
                self.error, self.stop = error, -1
            self.pending -= 1
            if self.pending == 0:
                self.done.set()

    def run(self, cursor, prefixes: _SeqPrefixes) -> None:
        """Take and check units with `cursor` (a psycopg cursor with `_RawText` loaded)
        until none is left."""
        while (unit := self.take()) is not None:
            try:
                if unit.start < self.stop:
                    self._check_unit(cursor, unit, prefixes)
            except BaseException as exc:
                self.finish(exc)
                raise
            self.finish()

    def _check_unit(self, cursor, unit: range, prefixes: _SeqPrefixes) -> None:
        chunks = [self.chunks[i] for i in unit]
        params = (
            list(unit),
            [c.head.id for c in chunks],
            [c.lo for c in chunks],
            [c.hi for c in chunks],
            [c.size + 1 for c in chunks],  # one more than expected: an excess is seen, not cut
        )
        expected = iter(unit)
        for i, n, documents, hashes in cursor.stream(_FAST_SQL, params):
            index = next(expected, None)
            # PostgreSQL returns the nested loop's rows in plan order.
            result = _check_chunk(self.chunks[index], n, documents, hashes, prefixes) if i == index else _FAILED
            self.results[index] = result
            if result is _FAILED:
                with self.lock:
                    self.stop = min(self.stop, index)
                break
            if index + 1 >= self.stop:
                break


def _worker_connection(params: dict[str, Any], snapshot: str):
    """A new connection in a REPEATABLE READ READ ONLY transaction that sees exactly the
    coordinator's snapshot (`pg_export_snapshot`)."""
    import psycopg
    from psycopg import sql

    conn = psycopg.connect(**params, autocommit=True)
    try:
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        conn.execute(sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(snapshot)))
    except BaseException:
        conn.close()
        raise
    return conn


class _Workers:
    """`count` threads, each with its own connection sharing the coordinator's snapshot,
    that check the units of each batch the coordinator publishes (the coordinator checks
    units too, on its own connection). A thread that cannot connect just does not take
    part: the coordinator checks whatever is left, so the verdict never depends on how
    many threads there are. Every connection is closed when the threads stop."""

    def __init__(self, count: int, snapshot: str, prefixes: _SeqPrefixes) -> None:
        self.jobs: queue.SimpleQueue[_Batch | None] = queue.SimpleQueue()
        self.threads = []
        params = connection.get_connection_params()
        for _ in range(count):
            thread = threading.Thread(target=self._work, args=(params, snapshot, prefixes), daemon=True)
            thread.start()
            self.threads.append(thread)

    def _work(self, params: dict[str, Any], snapshot: str, prefixes: _SeqPrefixes) -> None:
        try:
            conn = _worker_connection(params, snapshot)
        except Exception:
            logger.warning("audit verify: a worker could not open its connection", exc_info=True)
            return
        try:
            with conn.cursor() as cursor:
                cursor.adapters.register_loader("text", _RawText)
                while (batch := self.jobs.get()) is not None:
                    batch.run(cursor, prefixes)
        except Exception:
            logger.exception("audit verify: a worker failed")  # its batch already holds the error
        finally:
            conn.close()

    def publish(self, batch: _Batch) -> None:
        for _ in self.threads:
            self.jobs.put(batch)

    def close(self) -> None:
        for _ in self.threads:
            self.jobs.put(None)
        for thread in self.threads:
            thread.join()


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


def _unit_size(n_chunks: int, threads: int) -> int:
    """Chunks per query: the whole batch on one connection (PostgreSQL streams the next
    chunk while Python checks this one); with several, small units so that every
    connection has work until the end of the batch."""
    if threads == 1:
        return max(1, n_chunks)
    return max(1, min(_MAX_UNIT_CHUNKS, n_chunks // (threads * 4)))


def _verify_fast(heads: Iterable[_Head], chunk_size: int, workers: int) -> tuple[int, int, BrokenEvent | None]:
    """Every chunk checked on its own (`_check_chunk`), by up to `workers` connections,
    then linked in plan order here (`_settle`): the same verdict whatever thread checked
    what. With workers > 1 this runs in a transaction of its own (see `chain_verify`),
    whose snapshot the other connections import; they are opened at the first batch big
    enough to pay for them (a connection costs a few milliseconds) and closed at the end."""
    prefixes = _SeqPrefixes()
    pool: list[_Workers] = []

    def threads_for(batch: list[_Chunk]) -> _Workers | None:
        if workers > 1 and not pool and len(batch) >= _MIN_CHUNKS_PER_CONNECTION * workers:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_export_snapshot()")
                snapshot = cursor.fetchone()[0]
            pool.append(_Workers(workers - 1, snapshot, prefixes))
        return pool[0] if pool else None

    try:
        return _verify_batches(heads, chunk_size, threads_for, prefixes)
    finally:
        if pool:
            pool[0].close()


def _verify_batches(heads, chunk_size, threads_for, prefixes) -> tuple[int, int, BrokenEvent | None]:
    n_streams = n_events = 0
    prevs: dict[int, bytes] = {}
    settled: set[int] = set()  # streams the slow path has already checked to their head
    for planned in _batches(heads, chunk_size):
        batch = [chunk for chunk in planned if chunk.head.id not in settled]
        while batch:
            pool = threads_for(batch)
            shared = _Batch(batch, _unit_size(len(batch), 1 + (len(pool.threads) if pool else 0)))
            if pool is not None:
                pool.publish(shared)
            with connection.cursor() as wrapper:
                cursor = wrapper.cursor  # the driver's cursor: rows are streamed, not buffered
                cursor.adapters.register_loader("text", _RawText)
                shared.run(cursor, prefixes)
            shared.done.wait()
            if shared.error is not None:
                raise shared.error
            verified, failed = _settle(batch, shared.results, prevs)
            n_events += verified
            if failed is None:
                n_streams += sum(chunk.start == 1 for chunk in batch)
                break
            # Name the break: that stream, event by event from the chunk that failed (its
            # earlier chunks, and every chunk before it in the batch, verified).
            chunk = batch[failed]
            n_streams += sum(c.start == 1 for c in batch[: failed + 1])
            prev = prevs.pop(chunk.head.id, _GENESIS).decode()
            broken, checked = _check_stream_slowly(chunk.head, chunk, prev, chunk_size)
            n_events += checked
            if broken is not None:
                return n_streams, n_events, broken
            # Nothing found event by event (the two renderings of a document disagreed,
            # which a test rules out): the event-by-event verdict stands; go on.
            settled.add(chunk.head.id)
            batch = [c for c in batch[failed + 1 :] if c.head.id != chunk.head.id]
    return n_streams, n_events, None


def _settle(batch: list[_Chunk], results: list[Any], prevs: dict[int, bytes]) -> tuple[int, int | None]:
    """Link the chunks' own verdicts in plan order: each chunk's first prev_hash is the
    stream's last verified hash (GENESIS_HASH before seq 1), and a stream's last chunk ends
    at its head. Returns (events verified, index of the first chunk that does not verify,
    or None). `prevs` carries each stream's last verified hash across batches."""
    verified = 0
    for index, chunk in enumerate(batch):
        result = results[index]
        head = chunk.head
        prev = prevs.get(head.id, _GENESIS)
        ok = result is not _FAILED
        if ok and chunk.size:
            first, last = result
            ok = first == prev
            prev = last
        if ok and chunk.last:
            ok = prev == head.head_hash.encode()
        if not ok:
            return verified, index
        if chunk.last:
            prevs.pop(head.id, None)
        else:
            prevs[head.id] = prev
        verified += chunk.size
    return verified, None


def chain_verify(
    *,
    streams: Iterable[str] | None = None,
    chunk_size: int = VERIFY_CHUNK_SIZE,
    fast: bool | None = None,
    workers: int | None = None,
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
    tests hold them to it).

    `workers` (default `DEFAULT_VERIFY_WORKERS`): connections checking chunks at once on the
    fast path, so that PostgreSQL builds documents on several backends while Python hashes.
    The extra connections import this call's snapshot (`pg_export_snapshot`), so all of them
    see the same trail, and they are closed before this returns. Only when this call owns
    its transaction: inside a caller's transaction the other connections could not see its
    uncommitted rows, so one connection does it all. The verdict does not depend on it."""
    started = time.perf_counter()
    fast = connection.vendor == "postgresql" if fast is None else fast
    workers = DEFAULT_VERIFY_WORKERS if workers is None else workers
    if workers < 1:
        raise ValueError("workers must be at least 1")
    if connection.in_atomic_block:
        workers = 1
    with _snapshot():
        heads = (
            _Head(*row)
            for row in _stream_rows(streams).values_list("id", "name", "seq", "head_hash").iterator(chunk_size=chunk_size)
        )  # fmt: skip
        if fast:
            n_streams, n_events, broken = _verify_fast(heads, chunk_size, workers)
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
