"""Deletes the idempotency keys older than --days (default 7). Run it daily (cron or Celery
beat): a client retrying with a key after that window would run its request again."""

from __future__ import annotations

import datetime as dt

from django.core.management.base import BaseCommand, CommandError

from floor.idempotency import idempotency_key_purge


class Command(BaseCommand):
    help = "Delete idempotency keys older than N days."

    def add_arguments(self, parser):
        parser.add_argument("--days", type=int, default=7, help="Keep the keys of the last N days (N >= 1).")

    def handle(self, *args, days: int, **options):
        if days < 1:
            raise CommandError("--days must be at least 1: a tablet may still be retrying today's keys.")
        deleted = idempotency_key_purge(older_than=dt.timedelta(days=days))
        self.stdout.write(f"Deleted {deleted} idempotency key(s) older than {days} day(s).")
