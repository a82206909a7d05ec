"""`manage.py audit_verify [--stream NAME ...] [--workers N] [--anchors FILE ...]`: recompute
the audit chains, then hold them to the heads published outside the database.

`--anchors FILE` (repeatable; `-` reads standard input): an anchor file or a log holding the
lines `audit_anchor` and Celery beat published (audit/anchors.py). Once the chains verify,
each anchored head must still be the hash of its stream's event at that seq.

Exit status: 0 when every chain verifies (and every anchor holds), 1 when one is broken (the
first broken event is printed; every anchor that no longer holds), 2 on bad input (an
unknown stream name, an anchor file that cannot be read or holds no anchor). Suitable for
cron and monitoring."""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError

from audit.anchors import anchors_check, read_anchors
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
        parser.add_argument(
            "--anchors",
            action="append",
            metavar="FILE",
            help="An anchor file or log holding published heads (repeatable; - for standard input): "
            "each must still be its stream's event at that seq.",
        )

    def handle(self, *args, streams=None, workers=None, anchors=None, **options):
        if workers is not None and workers < 1:
            raise CommandError("--workers must be at least 1", returncode=2)
        published = self._anchors(anchors or [])
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
            if anchors:
                self._check(published, streams)
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

    def _anchors(self, paths: list[str]) -> list:
        """Every anchor in the files, read before the chains are checked (a bad path is a 2
        before a long run)."""
        found: list = []
        for path in paths:
            try:
                if path == "-":
                    anchors, unreadable = read_anchors(sys.stdin)
                else:
                    with open(path, encoding="utf-8", errors="replace") as lines:
                        anchors, unreadable = read_anchors(lines)
            except OSError as exc:
                raise CommandError(f"--anchors {path}: {exc.strerror or exc}", returncode=2) from exc
            if not anchors:
                raise CommandError(f"--anchors {path}: no anchor in it", returncode=2)
            if unreadable:
                self.stdout.write(
                    self.style.WARNING(
                        f"{path}: {unreadable} lines name an anchor but are not one (cut or edited)"
                    )
                )
            found += anchors
        return found

    def _check(self, published: list, streams: list[str] | None) -> None:
        heads, problems = anchors_check(published, streams=streams)
        self.stdout.write(f"anchors: {len(published)}  heads anchored: {heads}")
        if not problems:
            self.stdout.write(self.style.SUCCESS("OK: every anchored head is still in its chain."))
            return
        for problem in problems:
            self.stdout.write(
                self.style.ERROR(
                    f"BROKEN: stream={problem.stream} seq={problem.seq} id={problem.event_id} "
                    f"reason={problem.reason}: {problem.message}"
                )
            )
        first = problems[0]
        raise CommandError(
            f"{len(problems)} anchored heads no longer hold; first: stream {first.stream!r} seq {first.seq}: "
            f"{first.reason}",
            returncode=1,
        )
