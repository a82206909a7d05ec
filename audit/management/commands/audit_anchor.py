"""`manage.py audit_anchor [--all]`: publish the stream heads that moved since the last anchor
(audit/anchors.py), as Celery beat does every AUDIT_ANCHOR_SECONDS, and print the line.

The line goes to the log (logger chemin.audit.anchor) and to AUDIT_ANCHOR_FILE if set; it is
also printed, so that cron can append it wherever it keeps it
(`manage.py audit_anchor >> /mnt/worm/anchors.jsonl`). `--all` publishes every head, moved or
not: a first anchor for a new anchor file."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from audit.anchors import AnchorFileError, heads_anchor


class Command(BaseCommand):
    help = "Publish the audit streams' heads outside the database (log, AUDIT_ANCHOR_FILE, stdout)."

    def add_arguments(self, parser):
        parser.add_argument("--all", action="store_true", help="Every head, not only those that moved.")

    def handle(self, *args, **options):
        try:
            lines, count = heads_anchor(everything=options["all"])
        except AnchorFileError as exc:
            raise CommandError(str(exc)) from exc
        if not lines:
            self.stderr.write("no head moved since the last anchor: nothing published")
            return
        for line in lines:
            self.stdout.write(line)
        self.stderr.write(f"{count} heads published")
