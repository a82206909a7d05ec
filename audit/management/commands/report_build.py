"""`manage.py report_build DAY [VERSION]`: build a gaming day's end-of-day report now, in
this process, without the broker or a worker: the operator's way to finish a report left
PENDING (its message lost: Redis down at the close or at the signature, a worker killed) or
FAILED (once the cause is fixed), without waiting for beat's reports_sweep.

It runs the very service the Celery task runs (audit.reports.services.report_build), so it is
as safe: a report built already is left as it is and said so; a build running in a worker
right now is waited for (the report's row lock), not doubled. A failure is recorded as the
task's would be (FAILED, with its reason and its `report.failed` event) and printed.

It always tries: the count of interrupted attempts (REPORT_BUILD_MAX_ATTEMPTS, after which a
worker gives up on a report and the sweep leaves it) starts again with this one, and a report
that had given up is said to be built again. Running it is the operator's decision to retry;
a build that kills its process (out of memory) kills this one then, not a worker.

Exit status: 0 when the report is built (now or before), 1 when the build failed, 2 on bad
input (no such day, the day still open, a version no signed register asked for)."""

from __future__ import annotations

import sys

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from audit.models import DayReport
from audit.reports.services import report_build
from config.errors import ApplicationError
from floor.models import GamingDay


class Command(BaseCommand):
    help = "Build a gaming day's end-of-day report now, in this process (a stuck or failed one)."

    def add_arguments(self, parser):
        parser.add_argument("day", type=int, help="The gaming day's id.")
        parser.add_argument("report_version", nargs="?", type=int, default=1, metavar="VERSION",
                            help="The report's version (default 1; later ones come from signed registers).")  # fmt: skip

    def handle(self, *args, **options):
        day_id, version = options["day"], options["report_version"]
        before, attempts, error = DayReport.objects.filter(gaming_day_id=day_id, version=version).values_list(
            "status", "attempts", "error").first() or (None, 0, "")  # fmt: skip
        if before == DayReport.Status.FAILED and attempts >= settings.REPORT_BUILD_MAX_ATTEMPTS:
            self.stdout.write(f"report version {version} of gaming day {day_id} had failed: {error}; trying it again "
                              "here, its attempts counted afresh")  # fmt: skip
        try:
            report = report_build(gaming_day_id=day_id, version=version, retry=True)
        except GamingDay.DoesNotExist as exc:
            raise CommandError(f"no gaming day {day_id}", returncode=2) from exc
        except ApplicationError as exc:
            raise CommandError(f"{exc.code}: {exc.message} {exc.details}", returncode=2) from exc
        except Exception as exc:
            self.stderr.write(f"report version {version} of gaming day {day_id} FAILED: {type(exc).__name__}: {exc}")
            sys.exit(1)
        if before == DayReport.Status.DONE:
            self.stdout.write(f"report {report.pk} (gaming day {day_id}, version {version}) was built already")
            return
        files = ", ".join(f"{f.format} {f.sha256[:12]}" for f in report.files.order_by("format"))
        self.stdout.write(
            f"report {report.pk} (gaming day {day_id}, version {version}) built in {report.seconds:.1f} s: {files}"
        )
