"""The seal of a stream's head by a key the database does not hold.

The chain (hashing.py) shows any change to an event, unless whoever changes it recomputes
the hashes after it and the head: someone who owns the tables can (a hash has no key). So
every head also carries `head_seal`, an HMAC-SHA256 of its name, seq and head_hash under a
key the application holds and the database does not: re-chaining a stream, or moving its
head, without that key leaves a head whose seal no longer matches (chain_verify:
head_seal_mismatch). It does not stop whoever also holds the application's key, nor a
stream cut back together with an older head it had kept (the seals kept with the reports
say that).

The keys: AUDIT_HEAD_KEYS (the first seals; every one verifies, for a rotation), else
SECRET_KEY then SECRET_KEY_FALLBACKS, Django's own rotation. Each key is derived first
(SHA-256 of a purpose label and the key), so the seal is no other use of SECRET_KEY."""

from __future__ import annotations

import hashlib
import hmac
from functools import lru_cache

from django.conf import settings

from .hashing import SEPARATOR

_PURPOSE = b"chemin.audit.head-seal\x1f"


@lru_cache(maxsize=16)
def _derived(secret: str) -> bytes:
    return hashlib.sha256(_PURPOSE + secret.encode()).digest()


def _secrets() -> list[str]:
    keys = list(getattr(settings, "AUDIT_HEAD_KEYS", None) or ())
    return keys or [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", ())]


def _seal(secret: str, name: str, seq: int, head_hash: str) -> str:
    message = SEPARATOR.join((name, str(seq), head_hash)).encode()
    return hmac.new(_derived(secret), message, hashlib.sha256).hexdigest()


def head_seal(name: str, seq: int, head_hash: str) -> str:
    """The seal of the head (name, seq, head_hash) under the current key."""
    return _seal(_secrets()[0], name, seq, head_hash)


def head_sealed(name: str, seq: int, head_hash: str, seal: str | None) -> bool:
    """Whether `seal` is the head's seal under one of the keys (current or earlier)."""
    if not isinstance(seal, str) or len(seal) != 64:
        return False
    return any(hmac.compare_digest(_seal(secret, name, seq, head_hash), seal) for secret in _secrets())
