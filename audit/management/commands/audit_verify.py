"""`manage.py audit_verify [--stream NAME ...] [--workers N]`: recompute the audit chains.

Exit status: 0 when every chain verifies, 1 when one is broken (the first broken event is
printed), 2 on bad input (an unknown stream name). Suitable for cron and monitoring."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from audit.selectors import DEFAULT_VERIFY_WORKERS, chain_verify
from config.errors import ApplicationError


class Command(BaseCommand):
    help = "Recompute every audit hash chain and name the first broken event."

    def add_arguments(self, parser):
        parser.add_argument(
            "--stream",
            action="append",
            dest="streams",
            metavar="NAME",
            help="Verify only this stream (repeatable). Default: every stream.",
        )
        parser.add_argument(
            "--workers",
            type=int,
            default=None,
            metavar="N",
            help="Database connections checking chunks at once, sharing one snapshot "
            f"(default: one fewer than the cores, between 1 and 4; {DEFAULT_VERIFY_WORKERS} on this machine).",
        )

    def handle(self, *args, streams=None, workers=None, **options):
        if workers is not None and workers < 1:
            raise CommandError("--workers must be at least 1", returncode=2)
        try:
            result = chain_verify(streams=streams, workers=workers)
        except ApplicationError as exc:
            raise CommandError(f"{exc.message} {exc.details}", returncode=2) from exc
        rate = result.events_checked / result.seconds if result.seconds else 0.0
        self.stdout.write(
            f"streams: {result.streams_checked}  events: {result.events_checked}  "
            f"time: {result.seconds:.3f}s  ({rate:,.0f} events/s)"
        )
        broken = result.first_broken
        if broken is None:
            self.stdout.write(self.style.SUCCESS("OK: every chain verifies."))
            return
        self.stdout.write("(stopped at the first broken event)")
        self.stdout.write(
            self.style.ERROR(
                f"BROKEN: stream={broken.stream} seq={broken.seq} id={broken.event_id} "
                f"reason={broken.reason}: {broken.message}"
            )
        )
        raise CommandError(
            f"audit chain broken at stream {broken.stream!r} seq {broken.seq} (event id {broken.event_id}): "
            f"{broken.reason}",
            returncode=1,
        )
