"""A report build that went wrong is built again (bench/faults.py found both):

- a build killed mid-way leaves `<name>.<fmt>.<pid>.part` files: the next build of that
  report removes them (its own names only) before it writes, under the report's lock;
- reports_sweep enqueues not only the closed days without a report, but a FAILED report and
  a PENDING one with no build running for longer than the broker's visibility timeout (its
  message was lost), of any version: a later version's message is sent at the control
  register's second signature, and Redis may be down then. A fresh PENDING one and a DONE
  one are left alone, and so is one whose build is running now (it holds the report's row
  lock)."""

from __future__ import annotations

import datetime as dt
import logging
import os
import signal
import subprocess
import sys
import threading
from io import StringIO
from pathlib import Path

import pytest
from celery import current_app
from django.conf import settings
from django.core.management import CommandError, call_command
from django.db import connection, transaction
from django.utils import timezone

from audit.models import AuditEvent, DayReport, ReportFile
from audit.reports import registers
from audit.reports import services as report_services
from audit.reports.services import report_verify, reports_missing
from audit.tasks import report_build, reports_sweep
from floor import services as floor_services
from floor.roles import Role
from tests.audit.test_reports import build_day, close
from tests.factories import CasinoFactory

VISIBILITY_TIMEOUT = 600


@pytest.fixture
def media(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def world(db, commissario, capo_partita, changeur, direzione):
    return build_day(commissario=commissario, capo=capo_partita, changeur=changeur, direzione=direzione)


@pytest.fixture
def visibility_timeout(settings):
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": VISIBILITY_TIMEOUT}
    return dt.timedelta(seconds=VISIBILITY_TIMEOUT)


def v1_directory(day) -> Path:
    return Path(settings.MEDIA_ROOT) / settings.REPORTS_DIR / f"{day.date.isoformat()}-day{day.pk}" / "v1"


def assert_built(day) -> DayReport:
    report = DayReport.objects.get(gaming_day=day)
    assert report.version == 1 and report.status == DayReport.Status.DONE and report.error == ""
    assert sorted(report.files.values_list("format", flat=True)) == ["csv", "pdf", "xlsx"]
    verdict = report_verify(report=report)
    assert verdict["ok"], verdict["reasons"]
    assert AuditEvent.objects.filter(action="report.built", stream__name=f"reports:{day.pk}").count() == 1
    return report


# --------------------------------------------------------------------------- partial files


def test_a_build_removes_the_stale_partial_files_of_its_own_report_only(
    world, media, django_capture_on_commit_callbacks
):
    directory = v1_directory(world.day)
    directory.mkdir(parents=True)
    name = f"chemin-{world.day.date.isoformat()}-v1"
    # What a build killed mid-way leaves (the pid of a worker long gone).
    stale = [directory / f"{name}.xlsx.4242.part", directory / f"{name}.pdf.17.part"]
    # Not this report's partial files: left alone.
    others = [
        directory / "notes.txt",
        directory / f"{name}.csv.part",  # no pid
        directory / "chemin-1999-01-01-v1.csv.12.part",  # another day's name
        directory / f"{name}.docx.12.part",  # not one of the report's formats
    ]
    for path in stale + others:
        path.write_bytes(b"half a file")

    close(world, django_capture_on_commit_callbacks)  # builds the report (eager)

    report = assert_built(world.day)
    assert not any(path.exists() for path in stale)
    assert all(path.read_bytes() == b"half a file" for path in others)
    assert sorted(p.name for p in directory.iterdir()) == sorted(
        [f"{name}.csv", f"{name}.pdf", f"{name}.xlsx"] + [p.name for p in others]
    )
    assert {f.path.rsplit("/", 1)[1] for f in report.files.all()} == {f"{name}.csv", f"{name}.pdf", f"{name}.xlsx"}


def test_a_writer_that_raises_leaves_no_partial_and_the_sweep_rebuilds_the_failed_report(
    world, media, monkeypatch, django_capture_on_commit_callbacks
):
    real = report_services.writers

    def disk_full_on_the_pdf():
        def pdf(document, fp):
            fp.write(b"%PDF-1.4 half")
            raise OSError(28, "No space left on device")

        return {**real(), "pdf": pdf}

    monkeypatch.setattr(report_services, "writers", disk_full_on_the_pdf)
    close(world, django_capture_on_commit_callbacks)  # the eager build fails (robust on_commit)
    report = DayReport.objects.get(gaming_day=world.day)
    assert report.status == DayReport.Status.FAILED and "No space left on device" in report.error
    assert not report.files.exists()
    assert not list(v1_directory(world.day).glob("*.part"))
    # The failure is on the trail, with its reason, as the build is when it succeeds.
    trail = AuditEvent.objects.filter(stream__name=f"reports:{world.day.pk}").order_by("seq")
    failed = trail.get()
    assert (failed.action, failed.subject_id, failed.actor_id) == ("report.failed", str(report.pk), None)
    assert failed.payload == {"version": 1, "old": {"status": "pending", "error": ""},
                              "new": {"status": "failed", "error": report.error}}  # fmt: skip
    # The same failure again (the sweep's next run, the disk still full): one event, not one a run.
    with pytest.raises(OSError, match="No space left on device"):
        report_services.report_build(gaming_day_id=world.day.pk)
    assert trail.count() == 1 and DayReport.objects.get(pk=report.pk).status == DayReport.Status.FAILED

    monkeypatch.setattr(report_services, "writers", real)  # the disk has room again
    assert reports_sweep.apply().get() == [[world.day.pk, 1]]  # enqueues it; eager: builds it
    rebuilt = assert_built(world.day)
    assert rebuilt.pk == report.pk and DayReport.objects.filter(gaming_day=world.day).count() == 1
    assert not list(v1_directory(world.day).glob("*.part"))
    # Done now: the sweep leaves it, and a second run of the build changes nothing.
    assert reports_sweep.apply().get() == []
    assert ReportFile.objects.filter(report=rebuilt).count() == 3
    assert list(trail.values_list("action", flat=True)) == ["report.failed", "report.built"]
    out = StringIO()
    call_command("audit_verify", "--workers", "1", stdout=out)
    assert "OK: every chain verifies." in out.getvalue()


# --------------------------------------------------------------------------- the sweep


def closed_day(commissario, django_capture_on_commit_callbacks, code: str):
    """A closed day (no session) whose report was never enqueued (the on-commit enqueue is
    captured, not run)."""
    day = floor_services.gaming_day_open(casino=CasinoFactory(code=code), by=commissario)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        floor_services.gaming_day_close(gaming_day=day, by=commissario)
    assert len(callbacks) == 1
    day.refresh_from_db()
    return day


def report_row(day, status: str, age: dt.timedelta, error: str = "") -> DayReport:
    return DayReport.objects.create(gaming_day=day, version=1, status=status, error=error,
                                    requested_at=timezone.now() - age)  # fmt: skip


@pytest.mark.django_db
def test_the_sweep_picks_missing_failed_and_stuck_reports_only(
    commissario, visibility_timeout, django_capture_on_commit_callbacks
):
    def day(code):
        return closed_day(commissario, django_capture_on_commit_callbacks, code)

    minute = dt.timedelta(minutes=1)
    missing = day("missing")  # no report row: the close could not reach the broker
    failed = day("failed")
    report_row(failed, DayReport.Status.FAILED, minute, error="OSError: disk full")
    fresh = day("fresh-pending")  # its build may be queued or starting: not yet
    report_row(fresh, DayReport.Status.PENDING, visibility_timeout - minute)
    stuck = day("stuck-pending")  # a build started and was lost with its message
    report_row(stuck, DayReport.Status.PENDING, visibility_timeout + minute)
    done = day("done")
    report_row(done, DayReport.Status.DONE, dt.timedelta(days=3))
    failed_v2 = day("v2")  # a later version fails, or its message is lost, like the first
    report_row(failed_v2, DayReport.Status.DONE, dt.timedelta(days=3))
    DayReport.objects.create(gaming_day=failed_v2, version=2, status=DayReport.Status.FAILED,
                             requested_at=timezone.now() - dt.timedelta(days=3))  # fmt: skip
    DayReport.objects.create(gaming_day=failed_v2, version=3, status=DayReport.Status.PENDING,
                             requested_at=timezone.now() - visibility_timeout - minute)  # fmt: skip
    DayReport.objects.create(gaming_day=failed_v2, version=4, status=DayReport.Status.PENDING,
                             requested_at=timezone.now() - visibility_timeout + minute)  # fmt: skip
    open_day = floor_services.gaming_day_open(casino=CasinoFactory(code="open"), by=commissario)

    assert reports_missing() == sorted([(missing.pk, 1), (failed.pk, 1), (stuck.pk, 1), (failed_v2.pk, 2),
                                        (failed_v2.pk, 3)])  # fmt: skip
    assert open_day.pk not in {day_id for day_id, _version in reports_missing()}
    # The fresh ones become stuck once the visibility timeout has passed with no build.
    later = timezone.now() + 2 * minute
    assert reports_missing(now=later) == sorted([
        (missing.pk, 1), (failed.pk, 1), (fresh.pk, 1), (stuck.pk, 1), (failed_v2.pk, 2), (failed_v2.pk, 3),
        (failed_v2.pk, 4),
    ])  # fmt: skip


def test_the_sweep_builds_a_stuck_pending_report_once(
    world, media, visibility_timeout, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):  # the close's enqueue is lost
        floor_services.gaming_day_close(gaming_day=world.day, by=world.commissario, open_sessions="close")
    report_row(world.day, DayReport.Status.PENDING, visibility_timeout + dt.timedelta(seconds=1))

    assert reports_sweep.apply().get() == [[world.day.pk, 1]]
    report = assert_built(world.day)
    assert DayReport.objects.filter(gaming_day=world.day).count() == 1
    assert reports_sweep.apply().get() == []  # DONE is never enqueued again
    assert report.pk == DayReport.objects.get(gaming_day=world.day).pk


def _disk_full_on_the_pdf(real):
    def writers():
        def pdf(document, fp):
            fp.write(b"%PDF-1.4 half")
            raise OSError(28, "No space left on device")

        return {**real(), "pdf": pdf}

    return writers


def _readers(auditor):
    from django.test import Client
    from rest_framework.test import APIClient

    api, desk = APIClient(), Client()
    api.force_authenticate(auditor)
    desk.force_login(auditor)
    return api, desk


@pytest.mark.django_db
def test_a_failed_report_the_sweep_enqueues_again_says_it_is_being_built_again(
    commissario, auditor, media, monkeypatch, django_capture_on_commit_callbacks
):
    """QA: the sweep enqueued a FAILED report again, but until its new build ended the desk and
    the API said only "failed", with the old error, for a report in fact queued again. The
    sweep now marks it retrying (requeued_at, and the id of the task it sends, whose progress
    the readers follow) before it sends the message. Its status stays FAILED, the outcome of
    its last build on the trail, until the new build ends; no event for the queue's bookkeeping."""
    day = closed_day(commissario, django_capture_on_commit_callbacks, "requeue")
    real = report_services.writers
    monkeypatch.setattr(report_services, "writers", _disk_full_on_the_pdf(real))
    with pytest.raises(OSError, match="No space left on device"):
        report_services.report_build(gaming_day_id=day.pk, task_id="the-failed-build")
    report = DayReport.objects.get(gaming_day=day)
    error = report.error
    assert (report.status, report.requeued_at, report.retrying) == (DayReport.Status.FAILED, None, False)
    api, desk = _readers(auditor)
    body = api.get(f"/api/reports/{report.pk}/").json()
    assert (body["status"], body["retrying"], body["requeued_at"]) == ("failed", False, None)
    card = desk.get(f"/desk/reports/{report.pk}/").content.decode()
    assert "The build failed." in card and "being built again" not in card and "hx-trigger" not in card
    monkeypatch.setattr(report_services, "writers", real)  # the disk has room again

    seen = {}
    trail = AuditEvent.objects.filter(stream__name=f"reports:{day.pk}").order_by("seq")
    send = report_build.apply_async

    def enqueue(args, task_id=None, **options):  # the broker's send (eager): what readers see as it goes
        row = DayReport.objects.get(gaming_day_id=args[0], version=args[1])
        seen["row"] = (row.status, row.error, row.retrying, row.task_id)
        body = api.get(f"/api/reports/{row.pk}/").json()
        seen["api"] = (body["status"], body["error"], body["retrying"], body["requeued_at"] is not None,
                       body["task_id"], body["progress"]["state"])  # fmt: skip
        seen["card"] = desk.get(f"/desk/reports/{row.pk}/").content.decode()
        seen["card_it"] = desk.get(f"/desk/reports/{row.pk}/", HTTP_ACCEPT_LANGUAGE="it").content.decode()
        seen["list"] = desk.get("/desk/").content.decode()
        seen["events"] = trail.count()
        return send(args, task_id=task_id, **options)

    monkeypatch.setattr(report_build, "apply_async", enqueue)
    assert reports_sweep.apply().get() == [[day.pk, 1]]

    status, kept, retrying, task_id = seen["row"]
    assert (status, kept, retrying) == (DayReport.Status.FAILED, error, True) and task_id not in ("", "the-failed-build")
    assert seen["api"] == ("failed", error, True, True, task_id, "PENDING")  # the new task's state: queued
    assert "The last build failed: being built again." in seen["card"] and error in seen["card"]
    assert "The build failed." not in seen["card"] and 'hx-trigger="every' in seen["card"]  # it polls
    assert "L'ultima preparazione è fallita: di nuovo in preparazione." in seen["card_it"]
    assert "failed, being built again" in seen["list"]
    assert seen["events"] == 1  # report.failed only: the retry is no change of status
    built = DayReport.objects.get(pk=report.pk)
    assert (built.status, built.error, built.requeued_at, built.retrying) == (DayReport.Status.DONE, "", None, False)
    assert built.task_id == task_id  # the build ran as the task the sweep marked
    assert list(trail.values_list("action", flat=True)) == ["report.failed", "report.built"]
    body = api.get(f"/api/reports/{report.pk}/").json()
    assert (body["status"], body["retrying"], body["requeued_at"]) == ("done", False, None)
    assert reports_sweep.apply().get() == []


@pytest.mark.django_db
def test_a_retried_report_that_fails_again_is_failed_not_retrying_until_the_next_sweep(
    commissario, auditor, media, monkeypatch, django_capture_on_commit_callbacks
):
    day = closed_day(commissario, django_capture_on_commit_callbacks, "fails-again")
    monkeypatch.setattr(report_services, "writers", _disk_full_on_the_pdf(report_services.writers))
    with pytest.raises(OSError):
        report_services.report_build(gaming_day_id=day.pk)
    report = DayReport.objects.get(gaming_day=day)
    with pytest.raises(OSError):  # the sweep's build (eager) fails as before
        reports_sweep.apply().get()
    report.refresh_from_db()
    assert (report.status, report.retrying, report.requeued_at) == (DayReport.Status.FAILED, False, None)
    assert report.error == "OSError: [Errno 28] No space left on device"
    api, desk = _readers(auditor)
    body = api.get(f"/api/reports/{report.pk}/").json()
    assert (body["status"], body["retrying"]) == ("failed", False)
    assert "The build failed." in desk.get(f"/desk/reports/{report.pk}/").content.decode()
    assert AuditEvent.objects.filter(action="report.failed").count() == 1  # the same failure: one event
    # Twice in a row (two sweeps at once): the second finds it retrying already and resends with its own id.
    first = report_services.report_requeue(gaming_day_id=day.pk, version=1)
    assert first and DayReport.objects.get(pk=report.pk).task_id == first
    # The message could not be sent (the broker out of reach): not retrying after all.
    report_services.report_requeue_lost(gaming_day_id=day.pk, version=1, task_id=first)
    report.refresh_from_db()
    assert (report.status, report.retrying) == (DayReport.Status.FAILED, False)


@pytest.mark.django_db
def test_a_report_that_gave_up_is_not_retried_and_says_failed(
    commissario, auditor, settings, django_capture_on_commit_callbacks
):
    """REPORT_BUILD_MAX_ATTEMPTS builds interrupted: the sweep leaves it FAILED for the operator,
    not retrying, and report_requeue refuses it whoever calls it."""
    day = closed_day(commissario, django_capture_on_commit_callbacks, "gave-up")
    error = report_services.gave_up_error(settings.REPORT_BUILD_MAX_ATTEMPTS)
    report = DayReport.objects.create(gaming_day=day, version=1, status=DayReport.Status.FAILED, error=error,
                                      attempts=settings.REPORT_BUILD_MAX_ATTEMPTS, requested_at=timezone.now(),
                                      task_id="the-last-attempt")  # fmt: skip
    assert report_services.report_requeue(gaming_day_id=day.pk, version=1) is None
    assert reports_sweep.apply().get() == []
    report.refresh_from_db()
    assert (report.status, report.error, report.retrying, report.task_id) == (
        DayReport.Status.FAILED, error, False, "the-last-attempt")  # fmt: skip
    api, desk = _readers(auditor)
    assert api.get(f"/api/reports/{report.pk}/").json()["retrying"] is False
    assert "failed, being built again" not in desk.get("/desk/").content.decode()


@pytest.mark.django_db(transaction=True)
def test_a_report_whose_build_is_running_is_not_stuck(commissario, visibility_timeout, monkeypatch):
    # Committed data and a second connection: the "build" holds the report's row lock as
    # report_build does for its whole transaction.
    monkeypatch.setattr(floor_services, "_enqueue_report_build", lambda day_id: None)
    day = floor_services.gaming_day_open(casino=CasinoFactory(code="running"), by=commissario)
    floor_services.gaming_day_close(gaming_day=day, by=commissario)
    report = report_row(day, DayReport.Status.PENDING, 2 * visibility_timeout)
    locked, release = threading.Event(), threading.Event()

    def build():
        try:
            with transaction.atomic():
                DayReport.objects.select_for_update().get(pk=report.pk)
                locked.set()
                release.wait(30)
        finally:
            connection.close()

    builder = threading.Thread(target=build)
    builder.start()
    try:
        assert locked.wait(30)
        assert reports_missing() == []
    finally:
        release.set()
        builder.join(30)
    assert reports_missing() == [(day.pk, 1)]  # the build died without finishing: stuck now


def test_a_later_version_whose_enqueue_failed_is_built_by_the_sweep(
    world, media, visibility_timeout, monkeypatch, caplog, django_capture_on_commit_callbacks, make_user
):
    close(world, django_capture_on_commit_callbacks)
    direzione, direzione2 = world.direzione, make_user("direzione2", Role.DIREZIONE)
    for table in world.tables:
        registers.cagnotte_count_record(gaming_day=world.day, table=table, by=direzione, witness=world.commissario,
                                        counted=0)  # fmt: skip
    reg = registers.control_register_prepare(gaming_day=world.day, by=direzione)
    registers.control_register_sign(register=reg, by=direzione)

    # Redis is down at the second signature: the message of version 2 is never sent.
    monkeypatch.setitem(current_app.conf, "task_always_eager", False)

    def unreachable(*args, **kwargs):  # what delay raises with the Redis result backend down
        raise RuntimeError("\nRetry limit exceeded while trying to reconnect to the Celery result store\n"
                           "backend. The Celery application must be restarted.\n")  # fmt: skip

    monkeypatch.setattr(report_build, "delay", unreachable)
    with caplog.at_level(logging.WARNING), django_capture_on_commit_callbacks(execute=True):
        registers.control_register_sign(register=reg, by=direzione2)
    errors = [(r.name, r.levelname, r.getMessage()) for r in caplog.records if r.levelno >= logging.WARNING]
    assert errors == [("audit.reports.registers", "ERROR", (
        f"report enqueue failed for gaming day {world.day.pk} version 2 (RuntimeError: Retry limit exceeded "
        "while trying to reconnect to the Celery result store backend. The Celery application must be "
        "restarted.); reports_sweep will enqueue it"))]  # fmt: skip
    v2 = DayReport.objects.get(gaming_day=world.day, version=2)
    assert v2.status == DayReport.Status.PENDING and v2.task_id == ""
    monkeypatch.undo()  # Redis is back (and eager again: the sweep's enqueue builds in-process)

    assert reports_sweep.apply().get() == []  # not yet late: its message may still be queued
    DayReport.objects.filter(pk=v2.pk).update(requested_at=v2.requested_at - visibility_timeout)
    assert reports_sweep.apply().get() == [[world.day.pk, 2]]
    v2.refresh_from_db()
    assert v2.status == DayReport.Status.DONE and v2.control_register_id == reg.pk
    assert sorted(v2.files.values_list("format", flat=True)) == ["csv", "pdf", "xlsx"]
    verdict = report_verify(report=v2)
    assert verdict["ok"], verdict["reasons"]
    assert reports_sweep.apply().get() == []


@pytest.mark.django_db(transaction=True)
def test_two_builds_at_once_give_one_report_and_neither_fails(world, media, monkeypatch):
    # The same build delivered twice, or run by two workers: the second waits for the first's
    # row lock, and PostgreSQL's REPEATABLE READ then refuses it the lock the first updated.
    monkeypatch.setattr(floor_services, "_enqueue_report_build", lambda day_id: None)
    floor_services.gaming_day_close(gaming_day=world.day, by=world.commissario, open_sessions="close")
    real = report_services.writers
    writing, finish = threading.Event(), threading.Event()

    def held_writers():
        def csv(document, fp):
            writing.set()
            assert finish.wait(30)
            real()["csv"](document, fp)

        return {**real(), "csv": csv}

    monkeypatch.setattr(report_services, "writers", held_writers)
    outcomes: dict[str, object] = {}

    def run(name: str) -> None:
        try:
            outcomes[name] = report_services.report_build(gaming_day_id=world.day.pk)
        except Exception as exc:  # what the task would see
            outcomes[name] = exc
        finally:
            connection.close()

    first = threading.Thread(target=run, args=("first",))
    first.start()
    assert writing.wait(30)  # the first holds the report's lock, writing its files
    second = threading.Thread(target=run, args=("second",))
    second.start()
    try:
        deadline = timezone.now() + dt.timedelta(seconds=30)
        with connection.cursor() as cursor:  # the second is waiting for the lock
            while True:
                cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                               "AND wait_event_type = 'Lock'")  # fmt: skip
                if cursor.fetchone()[0] or timezone.now() > deadline:
                    break
    finally:
        finish.set()
        first.join(30)
        second.join(30)
    report = assert_built(world.day)
    assert {name: (type(o).__name__, getattr(o, "pk", str(o))) for name, o in outcomes.items()} == {
        "first": ("DayReport", report.pk), "second": ("DayReport", report.pk)}  # fmt: skip
    assert DayReport.objects.filter(gaming_day=world.day).count() == 1


def test_the_files_of_a_report_not_built_are_a_409_report_not_built(
    world, media, monkeypatch, api, auditor, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):  # its build has not run yet
        floor_services.gaming_day_close(gaming_day=world.day, by=world.commissario, open_sessions="close")
    report = report_services.report_request(gaming_day_id=world.day.pk)  # PENDING, as while a worker builds it
    client = api(auditor)

    def refused(status: str, error: str = "") -> None:
        for fmt in ("csv", "xlsx", "pdf"):
            r = client.get(f"/api/reports/{report.pk}/files/{fmt}/", HTTP_ACCEPT="application/pdf")
            assert r.status_code == 409, (fmt, r.content)
            assert r.json()["error"]["code"] == "report_not_built", r.content
            assert r.json()["error"]["details"] == {"status": status, "error": error}

    refused("pending")
    # Its build failed after two of its files were written (the last writer raised).
    real = report_services.writers

    def pdf_fails():
        def pdf(document, fp):
            raise ValueError("a font is missing")

        return {**real(), "pdf": pdf}

    monkeypatch.setattr(report_services, "writers", pdf_fails)
    with pytest.raises(ValueError):
        report_services.report_build(gaming_day_id=world.day.pk)
    assert sorted(p.suffix for p in v1_directory(world.day).iterdir()) == [".csv", ".xlsx"]
    refused("failed", "ValueError: a font is missing")
    r = client.get(f"/api/reports/{report.pk + 1}/files/csv/")
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"


def test_the_operator_builds_a_stuck_report_now_with_report_build(
    world, media, monkeypatch, commissario, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):  # the close's enqueue is lost
        floor_services.gaming_day_close(gaming_day=world.day, by=world.commissario, open_sessions="close")
    report_services.report_request(gaming_day_id=world.day.pk)  # and its build was lost: PENDING

    def run(*args) -> tuple[str, str]:
        out, err = StringIO(), StringIO()
        call_command("report_build", *map(str, args), stdout=out, stderr=err)
        return out.getvalue(), err.getvalue()

    # A writer that raises: exit 1, the report FAILED with its reason and its event.
    real = report_services.writers
    monkeypatch.setattr(report_services, "writers", lambda: {**real(), "xlsx": _raises_enospc})
    with pytest.raises(SystemExit) as exited:
        run(world.day.pk)
    assert exited.value.code == 1
    report = DayReport.objects.get(gaming_day=world.day)
    assert report.status == DayReport.Status.FAILED and "No space left on device" in report.error
    monkeypatch.setattr(report_services, "writers", real)

    out, _err = run(world.day.pk)
    assert out.startswith(f"report {report.pk} (gaming day {world.day.pk}, version 1) built in ")
    assert_built(world.day)
    out, _err = run(world.day.pk, 1)
    assert out == f"report {report.pk} (gaming day {world.day.pk}, version 1) was built already\n"
    assert ReportFile.objects.filter(report=report).count() == 3

    open_day = floor_services.gaming_day_open(casino=CasinoFactory(code="still-open"), by=commissario)
    for args, said in (((open_day.pk,), "day_not_closed"), ((world.day.pk, 2), "unknown_report_version"),
                       ((10**6,), f"no gaming day {10**6}")):  # fmt: skip
        with pytest.raises(CommandError, match=said) as refused:
            run(*args)
        assert refused.value.returncode == 2
    assert DayReport.objects.count() == 1


def _raises_enospc(document, fp):
    raise OSError(28, "No space left on device")


def test_each_file_is_on_disk_before_its_rename_and_the_renames_before_the_commit(
    world, media, monkeypatch, django_capture_on_commit_callbacks
):
    # A power cut after the commit must not leave a DONE report whose file is short or empty
    # (the rename can reach the disk before the data): fsync, then rename, then the row.
    steps: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        steps.append("fsync dir" if os.path.isdir(f"/proc/self/fd/{fd}") else "fsync file")
        real_fsync(fd)

    def replace(src, dst):
        steps.append(f"replace {Path(dst).suffix}")
        real_replace(src, dst)

    monkeypatch.setattr(report_services.os, "fsync", fsync)
    monkeypatch.setattr(report_services.os, "replace", replace)
    real_bulk = ReportFile.objects.bulk_create
    monkeypatch.setattr(ReportFile.objects, "bulk_create", lambda files: steps.append("rows") or real_bulk(files))
    close(world, django_capture_on_commit_callbacks)
    assert steps == ["fsync file", "replace .csv", "fsync file", "replace .xlsx", "fsync file", "replace .pdf",
                     "fsync dir", "rows"]  # fmt: skip
    assert_built(world.day)


# --------------------------------------------------------------------------- builds that kill their process

# A build whose process dies in the PDF writer (the OOM killer on a huge day, a segfault in
# the PDF library): run in a process of its own, which SIGKILLs itself half-way through the
# PDF, as the kernel would, with the build's transaction open and the report's row locked.
# (tests/audit/test_reports_worker.py starts a worker from the same preamble.)
DYING_PDF_WRITER = """
import os, signal, sys
import django
django.setup()
from audit.reports import services
real = services.writers
def dies(document, fp):
    fp.write(b"%PDF-1.7 half a file")
    fp.flush()
    os.kill(os.getpid(), signal.SIGKILL)
services.writers = lambda: {**real(), "pdf": dies}
"""
_DYING_BUILD = DYING_PDF_WRITER + """services.report_build(gaming_day_id=int(sys.argv[1]))
"""


def _database_url() -> str:
    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s.get("PASSWORD") else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def _dying_build(day_id: int) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if key != "REDIS_URL"}
    env.update(DJANGO_SETTINGS_MODULE="config.settings.base", DATABASE_URL=_database_url(),
               CHEMIN_MEDIA_ROOT=str(settings.MEDIA_ROOT), REPORT_BUILD_MAX_ATTEMPTS="3")  # fmt: skip
    return subprocess.run([sys.executable, "-c", _DYING_BUILD, str(day_id)], cwd=settings.BASE_DIR, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


@pytest.mark.django_db(transaction=True)
def test_a_build_that_kills_its_process_each_time_gives_up_at_the_cap_and_the_operator_builds_it(
    world, media, settings, visibility_timeout, monkeypatch, caplog
):
    settings.REPORT_BUILD_MAX_ATTEMPTS = 3
    monkeypatch.setattr(floor_services, "_enqueue_report_build", lambda day_id: None)
    floor_services.gaming_day_close(gaming_day=world.day, by=world.commissario, open_sessions="close")
    name = f"chemin-{world.day.date.isoformat()}-v1"

    for attempt in (1, 2, 3):
        died = _dying_build(world.day.pk)
        assert died.returncode == -signal.SIGKILL, died.stderr
        # The attempt was counted and committed before the work: the kill leaves its count,
        # and the build's own transaction rolled back (no file rows, no event, still PENDING).
        report = DayReport.objects.get(gaming_day=world.day)
        assert (report.status, report.attempts, report.error) == (DayReport.Status.PENDING, attempt, "")
        assert not report.files.exists()
        assert not AuditEvent.objects.filter(stream__name=f"reports:{world.day.pk}").exists()
    assert [p.name for p in v1_directory(world.day).glob("*.pdf.*.part")], "the dying build left no partial"

    # The next attempt (the broker's redelivery) does not build: the report FAILED, saying
    # why, with its report.failed event, and the process ends without being killed.
    gave_up = _dying_build(world.day.pk)
    assert gave_up.returncode == 1 and "BuildGaveUp" in gave_up.stderr, gave_up.stderr
    error = "gave up after 3 attempts: the build was interrupted each time (worker killed?)"
    assert f"report version 1 of gaming day {world.day.pk}: {error}" in gave_up.stderr
    report = DayReport.objects.get(gaming_day=world.day)
    assert (report.status, report.attempts, report.error) == (DayReport.Status.FAILED, 3, error)
    failed = AuditEvent.objects.get(stream__name=f"reports:{world.day.pk}")
    assert (failed.action, failed.subject_id) == ("report.failed", str(report.pk))
    assert failed.payload["new"] == {"status": "failed", "error": error}
    assert failed.payload["old"] == {"status": "pending", "error": ""}
    with pytest.raises(report_services.BuildGaveUp):  # delivered once more: no second event
        report_services.report_build(gaming_day_id=world.day.pk)
    assert AuditEvent.objects.filter(stream__name=f"reports:{world.day.pk}").count() == 1
    assert DayReport.objects.count() == 1

    # The sweep leaves it (enqueued, it would kill a worker every 15 minutes), and says so.
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert reports_sweep.apply().get() == []
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [("ERROR", (
        f"report version 1 of gaming day {world.day.pk} {error}; not built again but by "
        f"`manage.py report_build {world.day.pk} 1`"))]  # fmt: skip
    assert AuditEvent.objects.filter(stream__name=f"reports:{world.day.pk}").count() == 1

    # The operator's command tries it again (the cause fixed: here the PDF writer is sound).
    out = StringIO()
    call_command("report_build", str(world.day.pk), stdout=out)
    assert out.getvalue().startswith(
        f"report version 1 of gaming day {world.day.pk} had failed: {error}; trying it again here, its attempts "
        f"counted afresh\nreport {report.pk} (gaming day {world.day.pk}, version 1) built in "
    ), out.getvalue()
    report = assert_built(world.day)
    assert report.attempts == 1
    assert not list(v1_directory(world.day).glob("*.part"))
    assert list(AuditEvent.objects.filter(stream__name=f"reports:{world.day.pk}").order_by("seq").values_list(
        "action", flat=True)) == ["report.failed", "report.built"]  # fmt: skip
    assert sorted(p.name for p in v1_directory(world.day).iterdir()) == [f"{name}.csv", f"{name}.pdf", f"{name}.xlsx"]
    out = StringIO()
    call_command("audit_verify", "--workers", "1", stdout=out)
    assert "OK: every chain verifies." in out.getvalue(), out.getvalue()
    assert reports_sweep.apply().get() == []


def test_the_sweep_leaves_a_report_that_gave_up_and_gives_up_a_stuck_one_at_the_cap(
    commissario, settings, visibility_timeout, caplog, django_capture_on_commit_callbacks
):
    settings.REPORT_BUILD_MAX_ATTEMPTS = 3
    hour = dt.timedelta(hours=1)

    def day(code: str, status: str, attempts: int, error: str = "", age: dt.timedelta = hour) -> DayReport:
        report = report_row(closed_day(commissario, django_capture_on_commit_callbacks, code), status, age, error)
        DayReport.objects.filter(pk=report.pk).update(attempts=attempts)
        return report

    gave_up = "gave up after 3 attempts: the build was interrupted each time (worker killed?)"
    failed = day("failed", DayReport.Status.FAILED, 0, error="OSError: disk full")  # retried, as ever
    interrupted = day("interrupted", DayReport.Status.FAILED, 2, error="OSError: disk full")  # below the cap
    given_up = day("gave-up", DayReport.Status.FAILED, 3, error=gave_up)
    # Killed three times after a failure, or killed whole with its message lost the third
    # time: the sweep gives it up itself rather than send it to a worker to be killed again.
    killed_after_failing = day("killed", DayReport.Status.FAILED, 3, error="OSError: disk full")
    stuck = day("stuck", DayReport.Status.PENDING, 3, age=visibility_timeout + hour)
    with caplog.at_level(logging.ERROR):
        assert reports_missing() == sorted([(failed.gaming_day_id, 1), (interrupted.gaming_day_id, 1)])
    assert sorted(r.getMessage().split(" ", 7)[6] for r in caplog.records) == sorted(
        str(r.gaming_day_id) for r in (given_up, killed_after_failing, stuck))
    for report, old in ((given_up, None), (killed_after_failing, "OSError: disk full"), (stuck, "")):
        report.refresh_from_db()
        assert (report.status, report.attempts, report.error) == (DayReport.Status.FAILED, 3, gave_up)
        events = AuditEvent.objects.filter(stream__name=f"reports:{report.gaming_day_id}", action="report.failed")
        assert [e.payload["old"]["error"] for e in events] == ([] if old is None else [old])
    assert reports_missing() == sorted([(failed.gaming_day_id, 1), (interrupted.gaming_day_id, 1)])
    assert AuditEvent.objects.filter(action="report.failed").count() == 2  # not again
    settings.REPORT_BUILD_MAX_ATTEMPTS = 4  # the cap raised: they are tried again
    assert len(reports_missing()) == 5


def test_an_ordinary_failure_starts_the_count_again_and_the_sweep_retries_it(
    world, media, settings, monkeypatch, django_capture_on_commit_callbacks
):
    settings.REPORT_BUILD_MAX_ATTEMPTS = 3
    with django_capture_on_commit_callbacks(execute=False):
        floor_services.gaming_day_close(gaming_day=world.day, by=world.commissario, open_sessions="close")
    report = report_services.report_request(gaming_day_id=world.day.pk)
    DayReport.objects.filter(pk=report.pk).update(attempts=2)  # two builds killed before
    real = report_services.writers
    monkeypatch.setattr(report_services, "writers", lambda: {**real(), "xlsx": _raises_enospc})
    with pytest.raises(OSError):  # the third attempt fails with an error of its own
        report_services.report_build(gaming_day_id=world.day.pk)
    report.refresh_from_db()
    assert (report.status, report.attempts) == (DayReport.Status.FAILED, 0)
    assert report.error == "OSError: [Errno 28] No space left on device"
    for _ in range(3):  # the sweep's retries, failing as before: never "gave up"
        with pytest.raises(OSError):
            reports_sweep.apply().get()
    report.refresh_from_db()
    assert (report.status, report.attempts, report.error) == (DayReport.Status.FAILED, 0,
                                                               "OSError: [Errno 28] No space left on device")
    assert AuditEvent.objects.filter(action="report.failed").count() == 1
    monkeypatch.setattr(report_services, "writers", real)
    assert reports_sweep.apply().get() == [[world.day.pk, 1]]
    assert assert_built(world.day).attempts == 1
