"""Writing the audit trail. `record` is the one function the other apps call."""

from __future__ import annotations

import json
from typing import Any

from django.db import models, transaction
from django.utils import timezone

from .hashing import event_hash
from .models import AuditEvent, AuditStream


def _subject_ref(subject: models.Model | None) -> tuple[str, str]:
    if subject is None:
        return "", ""
    return subject._meta.label_lower, str(subject.pk)


def _json_safe(data: dict[str, Any]) -> dict[str, Any]:
    # Round-trip through JSON so the hashed value is exactly what the JSON column returns
    # (tuples become lists, keys become strings). Floats are refused: amounts are cents.
    def refuse_floats(value: str) -> float:
        raise TypeError(f"audit payloads carry no floats (got {value}); use integer cents or strings")

    return json.loads(json.dumps(data, default=str), parse_float=refuse_floats)


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
    head, _ = AuditStream.objects.get_or_create(name=stream)
    head = AuditStream.objects.select_for_update().get(pk=head.pk)
    payload = _json_safe(data or {})
    subject_type, subject_id = _subject_ref(subject)
    actor_id = actor.pk if actor is not None and getattr(actor, "pk", None) is not None else None
    actor_name = actor.get_username() if actor_id is not None else ""
    at = timezone.now()
    seq = head.seq + 1
    digest = event_hash(
        stream=stream,
        seq=seq,
        at=at,
        actor_id=actor_id,
        actor_name=actor_name,
        action=action,
        subject_type=subject_type,
        subject_id=subject_id,
        payload=payload,
        prev_hash=head.head_hash,
    )
    event = AuditEvent.objects.create(
        stream=head,
        seq=seq,
        at=at,
        actor_id=actor_id,
        actor_name=actor_name,
        action=action,
        subject_type=subject_type,
        subject_id=subject_id,
        payload=payload,
        prev_hash=head.head_hash,
        hash=digest,
    )
    AuditStream.objects.filter(pk=head.pk).update(seq=seq, head_hash=digest)
    return event
