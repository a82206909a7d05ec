"""The close with the broker down (bench/faults.py, redis): the day closes, and the failed
enqueue of its report is one accurate ERROR line from our code, saying who will enqueue it."""

from __future__ import annotations

import logging

import pytest
from celery import current_app
from celery.canvas import Signature
from kombu.exceptions import OperationalError as KombuOperationalError

from audit.models import DayReport
from audit.reports.services import reports_missing
from floor import services
from tests.factories import CasinoFactory

pytestmark = pytest.mark.django_db


def test_a_failed_enqueue_logs_one_accurate_error_and_the_day_stays_closed(
    commissario, caplog, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setitem(current_app.conf, "task_always_eager", False)  # as in production

    def unreachable(self, *args, **kwargs):
        raise KombuOperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(Signature, "apply_async", unreachable)
    day = services.gaming_day_open(casino=CasinoFactory(), by=commissario)
    with caplog.at_level(logging.WARNING), django_capture_on_commit_callbacks(execute=True) as callbacks:
        services.gaming_day_close(gaming_day=day, by=commissario)
    assert len(callbacks) == 1
    day.refresh_from_db()
    assert not day.is_open
    errors = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [(r.name, r.levelname) for r in errors] == [("floor.services", "ERROR")]
    assert errors[0].getMessage() == (
        f"report enqueue failed for gaming day {day.pk} (OperationalError: Error 111 connecting to "
        "127.0.0.1:6379. Connection refused.); reports_sweep will enqueue it"
    )
    assert not DayReport.objects.exists()
    assert reports_missing() == [(day.pk, 1)]  # and so it will


def test_the_enqueue_error_is_one_line_whatever_celery_says(commissario, caplog, monkeypatch):
    # What apply_async raises with the Redis result backend down (bench/faults.py, redis).
    monkeypatch.setitem(current_app.conf, "task_always_eager", False)

    def unreachable(self, *args, **kwargs):
        raise RuntimeError("\nRetry limit exceeded while trying to reconnect to the Celery result store\n"
                           "backend. The Celery application must be restarted.\n")  # fmt: skip

    monkeypatch.setattr(Signature, "apply_async", unreachable)
    with caplog.at_level(logging.ERROR):
        services._enqueue_report_build(7)
    assert [r.getMessage() for r in caplog.records] == [
        "report enqueue failed for gaming day 7 (RuntimeError: Retry limit exceeded while trying to reconnect "
        "to the Celery result store backend. The Celery application must be restarted.); reports_sweep will "
        "enqueue it"
    ]


def test_in_eager_mode_a_failing_build_is_not_called_an_enqueue_failure(commissario, caplog, monkeypatch):
    # make run and the tests build in-process: the error is the build's, raised as it is.
    monkeypatch.setitem(current_app.conf, "task_always_eager", True)

    def build_fails(self, *args, **kwargs):
        raise ValueError("the build failed")

    monkeypatch.setattr(Signature, "apply_async", build_fails)
    with pytest.raises(ValueError, match="the build failed"):
        services._enqueue_report_build(1)
    assert not [r for r in caplog.records if r.name == "floor.services"]
