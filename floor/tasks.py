"""The floor's Celery tasks: thin, ids (or nothing) in, a service does the work."""

from __future__ import annotations

from celery import shared_task
from django.db import OperationalError


@shared_task(
    name="floor.tasks.gaming_days_close_due",
    acks_late=True,
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    max_retries=5,
)
def gaming_days_close_due() -> dict[str, list[int]]:
    """Celery beat, every few minutes: close the days past GAMING_DAY_CLOSE_HOUR. Safe to
    run twice: a closed day is no longer open, so it is not due."""
    from .services import gaming_days_close_due as close_due

    return close_due()


@shared_task(
    name="floor.tasks.idempotency_keys_purge",
    acks_late=True,
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    max_retries=5,
)
def idempotency_keys_purge() -> int:
    """Celery beat, daily: delete the idempotency keys older than IDEMPOTENCY_KEY_DAYS (the
    tablets' queues send nothing older by themselves). Safe to run twice."""
    import datetime as dt

    from django.conf import settings

    from .idempotency import idempotency_key_purge

    return idempotency_key_purge(older_than=dt.timedelta(days=settings.IDEMPOTENCY_KEY_DAYS))
