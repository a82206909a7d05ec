"""audit's Celery tasks: thin (ids in, a service does the work), late-acknowledged, retried
on a database outage with backoff, and safe to run twice (ARCHITECTURE.md)."""

from __future__ import annotations

import logging

from celery import shared_task
from django.db import OperationalError

from config.errors import ApplicationError

logger = logging.getLogger(__name__)


@shared_task(
    bind=True,
    name="audit.tasks.report_build",
    acks_late=True,
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    retry_backoff_max=300,
    retry_jitter=True,
    max_retries=8,
)
def report_build(self, gaming_day_id: int, version: int = 1) -> dict:
    """Build the end-of-day report of a closed day (floor's gaming_day_close enqueues it on
    commit; a signed control register enqueues the next version). Running it twice gives
    one report: the service finds it built. Progress: state PROGRESS, meta {done, total}.

    A build whose earlier REPORT_BUILD_MAX_ATTEMPTS attempts were interrupted (a pool process
    killed each time: redelivered at once, acks_late and reject-on-worker-lost) is not tried:
    the service marks the report FAILED and raises BuildGaveUp, which is not retried: the task
    fails, its message is acknowledged, and the loop ends."""
    from audit.reports.services import report_build as build

    def progress(done: int, total: int) -> None:
        if not self.request.id:
            return
        try:
            self.update_state(state="PROGRESS", meta={"done": done, "total": total})
        except Exception:
            # The progress goes to the result backend (Redis) and is for display only: Redis
            # down mid-build must not fail the report (a FAILED one would wait for the sweep).
            logger.warning("report_build(%s, %s): progress not stored", gaming_day_id, version, exc_info=True)

    try:
        report = build(gaming_day_id=gaming_day_id, version=version, task_id=self.request.id or "",
                       progress=progress)  # fmt: skip
    except ApplicationError as exc:
        # A refusal (the day is open, no such version) will not change by retrying.
        logger.warning("report_build(%s, %s) refused: %s", gaming_day_id, version, exc.code)
        return {"gaming_day": gaming_day_id, "version": version, "error": exc.code}
    return {"gaming_day": gaming_day_id, "version": version, "report": report.pk, "status": report.status}


@shared_task(name="audit.tasks.reports_sweep", acks_late=True, autoretry_for=(OperationalError,), retry_backoff=True)
def reports_sweep() -> list[list[int]]:
    """Celery beat: enqueue the version-1 report of every closed day that has none (its
    close could not reach the broker), and every report, of any version, that FAILED or
    stayed PENDING with no build running for longer than the broker's visibility timeout
    (its message was lost, or never sent: a later version's is sent at the register's
    second signature), but none that gave up (REPORT_BUILD_MAX_ATTEMPTS builds interrupted):
    audit.reports.services.reports_missing. A FAILED one is marked retrying, with the id of
    its new task, before the message is sent (report_requeue): the desk and the API say it
    is being built again, not only "failed", until its build ends. Returns [gaming day,
    version] pairs. Enqueuing twice is harmless: the build is idempotent."""
    from audit.reports.services import report_requeue, report_requeue_lost, reports_missing

    wanted = reports_missing()
    for day_id, version in wanted:
        task_id = report_requeue(gaming_day_id=day_id, version=version)
        try:
            report_build.apply_async((day_id, version), task_id=task_id)
        except Exception:
            if task_id is not None:
                report_requeue_lost(gaming_day_id=day_id, version=version, task_id=task_id)
            raise
    return [[day_id, version] for day_id, version in wanted]


@shared_task(
    name="audit.tasks.heads_anchor", acks_late=True, autoretry_for=(OperationalError,), retry_backoff=True
)
def heads_anchor() -> int:
    """Celery beat: publish the stream heads that moved since the last anchor to the log and
    AUDIT_ANCHOR_FILE (audit/anchors.py). Running it twice publishes nothing more."""
    from audit.anchors import heads_anchor as publish

    _lines, count = publish()
    return count
