"""The canonical encoding of an event and its hash. Pure functions: the verifier, the
benchmark and the writer share them, so what is written is exactly what is checked."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any


def canonical_time(at: datetime) -> str:
    """UTC, microsecond precision: what PostgreSQL's timestamptz keeps exactly."""
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def canonical_bytes(
    *,
    stream: str,
    seq: int,
    at: datetime,
    actor_id: int | None,
    actor_name: str,
    action: str,
    subject_type: str,
    subject_id: str,
    payload: Any,
    prev_hash: str,
) -> bytes:
    document = [
        stream,
        seq,
        canonical_time(at),
        actor_id,
        actor_name,
        action,
        subject_type,
        subject_id,
        payload,
        prev_hash,
    ]
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def event_hash(**fields: Any) -> str:
    return hashlib.sha256(canonical_bytes(**fields)).hexdigest()
