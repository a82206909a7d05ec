"""Writing the audit trail. `record` is the one function the other apps call."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import models, transaction
from django.utils import timezone

from config import prepared
from config.prepared import Prepared

from .hashing import canonical_json, event_hash
from .models import GENESIS_HASH, AuditEvent, AuditStream, ControlRegister
from .seals import head_seal

_NAME_MAX = AuditStream._meta.get_field("name").max_length
_ACTION_MAX = AuditEvent._meta.get_field("action").max_length


def _subject_ref(subject: models.Model | None) -> tuple[str, str]:
    if subject is None:
        return "", ""
    return subject._meta.label_lower, str(subject.pk)


def _refuse_floats(value: str) -> float:
    raise TypeError(f"audit payloads carry no floats (got {value}); use integer cents or strings")


# U+0000..U+001F: the hashed document separates its fields with U+001F (hashing.py), so no
# text column may contain one. (JSON text never does: json escapes them.)
_CONTROL = re.compile("[\x00-\x1f]")


def _refuse_control(what: str, value: str) -> None:
    if _CONTROL.search(value):
        raise ValueError(f"audit.record: the {what} cannot contain control characters (U+0000..U+001F)")


def _refuse_nul(value: Any) -> None:
    # U+0000 is refused in payloads too (it was never storable, and a payload is text
    # meant for people): refused here with a clear message, before the head is locked.
    if isinstance(value, str):
        if "\x00" in value:
            raise ValueError("audit payloads cannot contain the NUL character (U+0000)")
    elif isinstance(value, dict):
        for key, item in value.items():
            _refuse_nul(key)
            _refuse_nul(item)
    elif isinstance(value, list):
        for item in value:
            _refuse_nul(item)


def _payload_json(data: dict[str, Any]) -> str:
    """The canonical JSON text of `data`, as stored and hashed.

    Round-trip through JSON first (tuples become lists, keys become strings, other values
    their str()), so that `event.payload` reads back exactly what was hashed. Floats are
    refused: amounts are cents. NaN and Infinity are floats too. Lone surrogates cannot be
    encoded in UTF-8 (UnicodeEncodeError, a ValueError)."""
    text = json.dumps(data, default=str)
    safe = json.loads(text, parse_float=_refuse_floats, parse_constant=_refuse_floats)
    if "\\u0000" in text:  # JSON escapes every NUL so: no walk through the payload without one
        _refuse_nul(safe)
    text = canonical_json(safe)
    text.encode()
    return text


# A stream's head, locked (compiled once per connection: config.prepared). A caller that
# reads it with its own reads (config.prepared.read) hands it to the open batch: held_head.
HEAD = Prepared(lambda name: AuditStream.objects.select_for_update().filter(name=name)[:1], args=(str,))


def _locked_head(name: str) -> AuditStream:
    """The stream's head row, locked FOR UPDATE until the caller's transaction ends.

    The lock is what serializes appends to one stream; other streams' rows stay free.
    A new stream is inserted with ON CONFLICT DO NOTHING: two first appends racing on the
    same new name both end up locking the one row, and neither needs a savepoint."""
    head = AuditStream.objects.select_for_update().filter(name=name).first()
    if head is None:
        new = AuditStream(name=name, head_seal=head_seal(name, 0, GENESIS_HASH))
        AuditStream.objects.bulk_create([new], ignore_conflicts=True)
        head = AuditStream.objects.select_for_update().get(name=name)
    return head


# AuditEvent(**values) with the model's positional form: Model.__init__ with keywords looks
# every field up and works out each default anew, most of an event's cost before it is
# chained (a coup records 13). The same instance: every concrete field, in the model's order,
# the value given or the field's default (none is callable: checked here, at import).
_EVENT_FIELDS = tuple((f.attname, f.get_default()) for f in AuditEvent._meta.concrete_fields)
if any(f.has_default() and callable(f.default) for f in AuditEvent._meta.concrete_fields):  # pragma: no cover
    raise ImportError("audit.services._new_event: an AuditEvent field has a callable default")


def _new_event(**values: Any) -> AuditEvent:
    return AuditEvent(*[values.get(name, default) for name, default in _EVENT_FIELDS])


def record(
    *,
    stream: str,
    actor: Any | None,
    action: str,
    subject: models.Model | None = None,
    data: dict[str, Any] | None = None,
) -> AuditEvent:
    """Append one event to `stream`, inside the caller's transaction.

    The caller's change and its event commit together or not at all: calling this outside
    a transaction is a programming error. Appends to one stream are serialized by a row
    lock on the stream's head; appends to different streams never wait on each other."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("audit.record must run inside the transaction of the change it records")
    if not stream or len(stream) > _NAME_MAX:
        raise ValueError(f"audit.record needs a stream name of 1 to {_NAME_MAX} characters")
    if not action or len(action) > _ACTION_MAX:
        raise ValueError(f"audit.record needs an action code of 1 to {_ACTION_MAX} characters")
    # Everything that can refuse the input runs before the lock is taken.
    payload_json = _payload_json(data or {})
    subject_type, subject_id = _subject_ref(subject)
    actor_id = actor.pk if actor is not None and getattr(actor, "pk", None) is not None else None
    actor_name = actor.get_username() if actor_id is not None else ""
    for what, value in (("stream name", stream), ("action code", action), ("actor name", actor_name),
                        ("subject type", subject_type), ("subject id", subject_id)):  # fmt: skip
        _refuse_control(what, value)

    event = _new_event(
        actor_id=actor_id,
        actor_name=actor_name,
        action=action,
        subject_type=subject_type,
        subject_id=subject_id,
        payload_json=payload_json,
    )
    pending = getattr(_batching, "events", None)
    if pending is not None:
        # Inside batch(): chained and written when the outermost batch ends (_flush).
        pending.append((stream, event))
        return event
    head = _locked_head(stream)
    _chain(head, event)
    event.save(force_insert=True)
    _seal(head)
    AuditStream.objects.filter(pk=head.pk).update(seq=head.seq, head_hash=head.head_hash, head_seal=head.head_seal)
    return event


def books_stream(gaming_day_id: int) -> str:
    """The stream of a closed day's books (audit.reports.registers): what is entered for the
    day after its close (the cagnotte's counts, the control register, a drawer counted late)
    goes there, not to the day's or its sessions' streams, which the day's first report seals."""
    return f"day_books:{gaming_day_id}"


def books_signed_register(*, gaming_day_id: int) -> int | None:
    """The day's control register in force (the last of its chain of corrections), when it
    carries both signatures: its id; else None (none yet, one signature, or a correction
    awaiting its own two). Once it is signed by both the day's books are final: the report
    version its signature asked for holds them. For the other apps (a drawer counted late,
    tables.services.cash_count), which read the register through here; the caller holds the
    day's lock, which a signature and a correction take too."""
    reg = (
        ControlRegister.objects.filter(gaming_day_id=gaming_day_id, corrected_by__isnull=True)
        .order_by("-pk")
        .values_list("pk", "second_signer_id")
        .first()
    )
    return reg[0] if reg is not None and reg[1] is not None else None


def books_signed_days(*, gaming_day_ids: list[int]) -> set[int]:
    """Of these days, those whose books are final (books_signed_register, for many days at
    once): one query however many. For the pages that list what may still be done on a
    closed day (the floor's late drawers): read without the day's lock, as any page reads."""
    if not gaming_day_ids:
        return set()
    in_force = (
        ControlRegister.objects.filter(gaming_day_id__in=gaming_day_ids, corrected_by__isnull=True)
        .order_by("gaming_day_id", "pk")
        .values_list("gaming_day_id", "second_signer_id")
    )
    last: dict[int, int | None] = {}
    for day_id, second_signer in in_force:
        last[day_id] = second_signer  # (the last by pk, as books_signed_register takes it)
    return {day_id for day_id, second_signer in last.items() if second_signer is not None}


def _seal(head: AuditStream) -> None:
    """Seal the head where it now is, with the application's key (audit/seals.py)."""
    head.head_seal = head_seal(head.name, head.seq, head.head_hash)


def _chain(head: AuditStream, event: AuditEvent) -> None:
    """Make `event` the next one of the locked `head`'s chain, and advance the head (in memory)."""
    # The time is read under the lock, so within a stream `at` never goes backwards.
    event.at = timezone.now()
    event.seq = head.seq + 1
    event.prev_hash = head.head_hash
    event.stream = head
    event.hash = event_hash(
        stream=head.name,
        seq=event.seq,
        at=event.at,
        actor_id=event.actor_id,
        actor_name=event.actor_name,
        action=event.action,
        subject_type=event.subject_type,
        subject_id=event.subject_id,
        payload_json=event.payload_json,
        prev_hash=event.prev_hash,
    )
    head.seq, head.head_hash = event.seq, event.hash


# --------------------------------------------------------------------------- batches

_batching = threading.local()  # .events: the open batch's buffer (one per thread, like connections)


@contextmanager
def batch() -> Iterator[None]:
    """Buffer the record() calls made inside the block and write them when it ends: per
    stream one head lock and one head update, one multi-row INSERT for all events.

    The events, their order, payloads and hashes are those record() would have written one
    by one (each event's time is read under its stream's lock, in order, as record() does);
    only the queries are fewer. The block must run inside the transaction of the changes it
    records, and the events are written before the block ends, so they commit with them.
    record() still refuses bad input at once. Nested batches join the outermost one; an
    exception leaving a batch drops the events recorded inside it (nothing is written for
    them), like the savepoint of a nested atomic block. record()'s returned events are
    complete (seq, hash, pk) once the outermost batch has ended.

    A savepoint rolled back inside a batch (an atomic block whose exception is caught
    within the batch) does not drop the events recorded in it: give such a block its own
    nested batch() inside the atomic block."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("audit.batch must run inside the transaction of the changes it records")
    pending = getattr(_batching, "events", None)
    if pending is not None:  # nested: part of the outer batch
        mark = len(pending)
        try:
            yield
        except BaseException:
            del pending[mark:]
            raise
        return
    pending = _batching.events = []
    held = _batching.heads = {}
    try:
        yield
    finally:
        _batching.events = _batching.heads = None
    _flush(pending, held)


def held_head(head: AuditStream | None) -> None:
    """Hand the open batch a stream head its caller read with HEAD (locked FOR UPDATE) in
    this transaction, so that the batch does not read it again. Only inside batch(): the
    head is good while the batch's transaction holds its lock; None (no such stream yet)
    is ignored, the batch creates the stream as usual."""
    heads = getattr(_batching, "heads", None)
    if heads is None:
        raise RuntimeError("audit.held_head is for an open audit.batch")
    if head is not None:
        heads[head.name] = head


def _flush(pending: list[tuple[str, AuditEvent]], held: dict[str, AuditStream]) -> None:
    if not pending:
        return
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("audit.batch must end inside the transaction of the changes it records")
    names = sorted({name for name, _ in pending})  # one lock order for every batch
    if len(names) == 1:  # the usual batch: one table's, one stream
        head = held.get(names[0]) or HEAD.first(names[0])
        heads = {} if head is None else {head.name: head}
    else:
        heads = {
            h.name: h for h in AuditStream.objects.select_for_update().filter(name__in=names).order_by("name")
        }
    for name in names:
        if name not in heads:
            heads[name] = _locked_head(name)
    for name, event in pending:
        _chain(heads[name], event)
    for name in names:
        _seal(heads[name])
    # The events and the heads: one round trip (config.prepared.write).
    prepared.insert_and_write(
        [event for _, event in pending],
        [prepared.update_sql(heads[name], ("seq", "head_hash", "head_seal")) for name in names],
    )
