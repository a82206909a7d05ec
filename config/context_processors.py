"""What every page's template needs from the settings."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest


def offline_queue(request: HttpRequest) -> dict[str, int]:
    """How many days the server keeps an entry's idempotency key: the tablet's queue does not
    send an entry older than that by itself (chemin.js), since its replay would no longer be
    answered from the stored answer."""
    return {"IDEMPOTENCY_KEY_DAYS": settings.IDEMPOTENCY_KEY_DAYS}
