"""Deletes the idempotency keys older than --days (default IDEMPOTENCY_KEY_DAYS, 7). Run it
daily (cron or Celery beat): a client retrying with a key after that window would run its
request again. The tablets' queues send by themselves only entries younger than
IDEMPOTENCY_KEY_DAYS, so fewer days are refused: lower the setting instead."""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from floor.idempotency import idempotency_key_purge


class Command(BaseCommand):
    help = "Delete idempotency keys older than N days."

    def add_arguments(self, parser):
        parser.add_argument(
            "--days", type=int, default=None,
            help="Keep the keys of the last N days (default and least: IDEMPOTENCY_KEY_DAYS).",
        )  # fmt: skip

    def handle(self, *args, days: int | None, **options):
        keep = settings.IDEMPOTENCY_KEY_DAYS
        days = keep if days is None else days
        if days < 1:
            raise CommandError("--days must be at least 1: a tablet may still be retrying today's keys.")
        if days < keep:
            raise CommandError(
                f"--days {days} is below IDEMPOTENCY_KEY_DAYS ({keep}): the tablets still send entries "
                f"up to {keep} days old, and these would be entered again. Lower the setting instead."
            )
        deleted = idempotency_key_purge(older_than=dt.timedelta(days=days))
        self.stdout.write(f"Deleted {deleted} idempotency key(s) older than {days} day(s).")
