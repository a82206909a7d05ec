"""The end-of-day report through a REAL Celery worker on Redis (RULES.md §8).

A transactional test (the data is committed, so the worker's own connection sees it)
starts `celery -A config worker --pool=solo` as a subprocess on the pytest test database,
closes the day (the close enqueues the report on commit, not eagerly), waits for the
report, checks its files and figures, sends the task a second time (one report still),
and stops the worker."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
import uuid
from io import StringIO
from pathlib import Path

import pytest
from celery.result import AsyncResult
from django.conf import settings
from django.core.management import call_command
from django.db import connection
from django.db.models import Sum

from audit.models import AuditEvent, DayReport, ReportFile
from audit.selectors import day_seal
from audit.tasks import report_build
from config.celery import app as celery_app
from floor import services as floor_services
from tables.models import Posting
from tests.audit.test_reports import build_day
from tests.audit.test_reports_recovery import DYING_PDF_WRITER

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _database_url() -> str:
    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s.get("PASSWORD") else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


@pytest.fixture
def worker(tmp_path, settings):
    """A solo-pool worker on the test database and the suite's Redis; tasks sent for real."""
    yield from _worker(tmp_path, settings, ["-m", "celery"], "--pool=solo")


# A worker as docker/ runs it (prefork), whose report builds kill their pool process half-way
# through the PDF (the OOM killer on a huge day, a segfault in the PDF library): the writer is
# replaced in the parent before the pool forks, the build is the real one.
_DYING_WORKER = DYING_PDF_WRITER + """from celery.bin.celery import main
sys.argv[0] = "celery"
sys.exit(main())
"""


@pytest.fixture
def dying_worker(tmp_path, settings):
    yield from _worker(tmp_path, settings, ["-c", _DYING_WORKER], "--pool=prefork", "--concurrency=1",
                       REPORT_BUILD_MAX_ATTEMPTS="3")  # fmt: skip


def _worker(tmp_path, settings, program: list[str], *pool: str, **environ: str):
    if not os.environ.get("REDIS_URL"):
        pytest.skip("a real worker needs REDIS_URL")
    media = tmp_path / "media"
    settings.MEDIA_ROOT = media
    name = f"reports-test-{uuid.uuid4().hex[:8]}@%h"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.base",
        "DATABASE_URL": _database_url(),
        "REDIS_URL": os.environ["REDIS_URL"],
        "CELERY_TASK_ALWAYS_EAGER": "0",
        "CHEMIN_MEDIA_ROOT": str(media),
        **environ,
    }
    log = open(tmp_path / "worker.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, *program, "-A", "config", "worker", *pool, "-n", name,
         "--loglevel=INFO", "--without-gossip", "--without-mingle"],
        cwd=settings.BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    eager = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = False
    try:
        hostname = name.replace("%h", os.uname().nodename)
        deadline = time.monotonic() + 60
        while not celery_app.control.ping(destination=[hostname], timeout=1.0):
            assert proc.poll() is None, (tmp_path / "worker.log").read_text()
            assert time.monotonic() < deadline, "the worker did not answer ping in 60 s"
        yield proc
    finally:
        celery_app.conf.task_always_eager = eager
        proc.send_signal(signal.SIGTERM)  # warm shutdown: the current task finishes
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _wait_done(day_id: int, version: int = 1, timeout: float = 120) -> DayReport:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        report = DayReport.objects.filter(gaming_day_id=day_id, version=version).first()
        if report is not None and report.status != DayReport.Status.PENDING:
            return report
        time.sleep(0.2)
    raise AssertionError("the report was not built in time")


def test_a_real_worker_builds_the_report_once(worker, commissario, capo_partita, changeur, direzione):
    world = build_day(commissario=commissario, capo=capo_partita, changeur=changeur, direzione=direzione)
    floor_services.gaming_day_close(gaming_day=world.day, by=commissario, open_sessions="close")
    report = _wait_done(world.day.pk)
    assert report.status == "done", report.error
    # Stored by the worker in the Redis result backend (an eager run stores nothing there).
    assert AsyncResult(report.task_id).get(timeout=10)["report"] == report.pk

    house = Posting.objects.filter(session__gaming_day=world.day, role=Posting.Role.HOUSE)
    assert report.summary["expected_cagnotte"] == house.aggregate(s=Sum("amount"))["s"] == 51_20
    for table in world.tables:
        assert report.summary["tables"][str(table.number)]["expected_cagnotte"] == (
            house.filter(session__table=table).aggregate(s=Sum("amount"))["s"]
        )
    assert report.seal == day_seal(streams=report.sealed_streams)
    files = {f.format: f for f in report.files.all()}
    assert set(files) == {"csv", "xlsx", "pdf"}
    for f in files.values():
        data = (Path(settings.MEDIA_ROOT) / f.path).read_bytes()
        assert hashlib.sha256(data).hexdigest() == f.sha256 and len(data) == f.size

    # The same task sent again through the broker: the worker finds the report built.
    result = report_build.delay(world.day.pk).get(timeout=60)
    assert result == {"gaming_day": world.day.pk, "version": 1, "report": report.pk, "status": "done"}
    assert DayReport.objects.filter(gaming_day=world.day).count() == 1
    assert ReportFile.objects.filter(report=report).count() == 3
    assert AuditEvent.objects.filter(action="report.built").count() == 1
    assert {f.format: f.sha256 for f in ReportFile.objects.filter(report=report)} == {
        k: f.sha256 for k, f in files.items()}  # fmt: skip


def test_a_build_that_fails_in_the_worker_says_so_and_the_sweep_builds_it_again(
    worker, api, auditor, commissario, capo_partita, changeur, direzione
):
    world = build_day(commissario=commissario, capo=capo_partita, changeur=changeur, direzione=direzione)
    # The report's directory cannot be made: a file is in its place (a full or broken volume).
    directory = Path(settings.MEDIA_ROOT) / settings.REPORTS_DIR / f"{world.day.date.isoformat()}-day{world.day.pk}"
    directory.mkdir(parents=True)
    (directory / "v1").write_bytes(b"in the way")
    floor_services.gaming_day_close(gaming_day=world.day, by=commissario, open_sessions="close")
    report = _wait_done(world.day.pk)
    assert report.status == DayReport.Status.FAILED and report.error.startswith("FileExistsError"), report.error
    assert not report.files.exists()
    failed = AuditEvent.objects.get(stream__name=f"reports:{world.day.pk}")
    assert (failed.action, failed.subject_id) == ("report.failed", str(report.pk))
    assert failed.payload["new"] == {"status": "failed", "error": report.error}
    client = api(auditor)
    r = client.get(f"/api/reports/{report.pk}/")
    assert (r.json()["status"], r.json()["error"], r.json()["progress"]["state"]) == ("failed", report.error, "FAILURE")
    r = client.get(f"/api/reports/{report.pk}/files/pdf/")
    assert r.status_code == 409 and r.json()["error"]["code"] == "report_not_built"

    (directory / "v1").unlink()  # the volume is repaired; beat's sweep, through the broker
    assert celery_app.send_task("audit.tasks.reports_sweep").get(timeout=60) == [[world.day.pk, 1]]
    deadline = time.monotonic() + 120
    while DayReport.objects.get(pk=report.pk).status != DayReport.Status.DONE:
        assert time.monotonic() < deadline, "the sweep's build did not finish in time"
        time.sleep(0.2)
    assert client.get(f"/api/reports/{report.pk}/files/pdf/").status_code == 200
    assert list(AuditEvent.objects.filter(stream__name=f"reports:{world.day.pk}").order_by("seq").values_list(
        "action", flat=True)) == ["report.failed", "report.built"]  # fmt: skip
    verdict = client.post(f"/api/reports/{report.pk}/verify/").json()
    assert verdict["ok"], verdict["reasons"]


def _kills(log: str) -> int:
    """The pool processes killed in a task, as the worker logs each (once, then its traceback)."""
    return log.count("Task handler raised error: WorkerLostError('Worker exited prematurely: signal 9 (SIGKILL)")


def test_a_build_that_kills_its_pool_process_each_time_is_not_redelivered_forever(
    dying_worker, tmp_path, settings, api, auditor, commissario, capo_partita, changeur, direzione
):
    # acks_late and reject-on-worker-lost: a pool process killed mid-task puts its message
    # back at once. Each attempt is counted before its work; the fourth delivery gives up.
    settings.REPORT_BUILD_MAX_ATTEMPTS = 3
    world = build_day(commissario=commissario, capo=capo_partita, changeur=changeur, direzione=direzione)
    floor_services.gaming_day_close(gaming_day=world.day, by=commissario, open_sessions="close")
    report = _wait_done(world.day.pk, timeout=90)
    log = (tmp_path / "worker.log").read_text()
    error = "gave up after 3 attempts: the build was interrupted each time (worker killed?)"
    assert (report.status, report.attempts, report.error) == (DayReport.Status.FAILED, 3, error), log
    assert _kills(log) == 3, log
    assert f"report version 1 of gaming day {world.day.pk} {error}" in log
    failed = AuditEvent.objects.get(stream__name=f"reports:{world.day.pk}")
    assert (failed.action, failed.payload["new"]) == ("report.failed", {"status": "failed", "error": error})
    # The message was acknowledged: the task failed, and the loop ended.
    assert AsyncResult(report.task_id).state == "FAILURE"
    time.sleep(3)
    assert DayReport.objects.get(pk=report.pk).attempts == 3
    assert _kills((tmp_path / "worker.log").read_text()) == 3
    client = api(auditor)
    r = client.get(f"/api/reports/{report.pk}/").json()
    assert (r["status"], r["error"], r["progress"]["state"]) == ("failed", error, "FAILURE")

    # Beat's sweep, through the broker, leaves it: enqueued, it would kill a worker again.
    assert celery_app.send_task("audit.tasks.reports_sweep").get(timeout=60) == []
    assert _kills((tmp_path / "worker.log").read_text()) == 3
    assert DayReport.objects.count() == 1 and AuditEvent.objects.filter(action="report.failed").count() == 1

    # The operator, the cause fixed, builds it in process (sound writers here).
    out = StringIO()
    call_command("report_build", str(world.day.pk), stdout=out)
    assert f"had failed: {error}; trying it again here" in out.getvalue()
    report.refresh_from_db()
    assert (report.status, report.attempts, report.error) == (DayReport.Status.DONE, 1, "")
    verdict = client.post(f"/api/reports/{report.pk}/verify/").json()
    assert verdict["ok"], verdict["reasons"]
    out = StringIO()
    call_command("audit_verify", "--workers", "1", stdout=out)
    assert "OK: every chain verifies." in out.getvalue(), out.getvalue()
