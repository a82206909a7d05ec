"""The request id travels with Celery tasks: eagerly (same context), in the message's
headers (before_task_publish), and through a real worker whose logs of the report built
after a day's close carry the id of the request that closed it."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest
from celery import shared_task
from kombu import Connection

from config.celery import app as celery_app
from config.observability import TASK_HEADER, RequestIdFilter, request_id_var


@shared_task(name="tests.ops.request_id_echo")
def request_id_echo() -> str | None:
    logging.getLogger("chemin.test.task").warning("inside the task")
    return request_id_var.get()


def test_an_eager_task_runs_with_the_request_id(caplog):
    token = request_id_var.set("req-eager-1")
    try:
        with caplog.at_level(logging.WARNING, logger="chemin.test.task"):
            caplog.handler.addFilter(RequestIdFilter())
            assert request_id_echo.delay().get() == "req-eager-1"
    finally:
        request_id_var.reset(token)
    record = next(r for r in caplog.records if r.getMessage() == "inside the task")
    assert record.request_id == "req-eager-1"
    assert record.task_name == "tests.ops.request_id_echo"
    assert request_id_var.get() is None


def test_a_published_task_carries_the_id_in_its_headers():
    if not os.environ.get("REDIS_URL"):
        pytest.skip("needs REDIS_URL")
    queue = f"ops-test-{uuid.uuid4().hex[:8]}"
    eager = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = False
    token = request_id_var.set("req-published-1")
    try:
        request_id_echo.apply_async(queue=queue)
    finally:
        request_id_var.reset(token)
        celery_app.conf.task_always_eager = eager
    with Connection(celery_app.conf.broker_url) as conn:
        simple = conn.SimpleQueue(queue)
        try:
            message = simple.get(timeout=5)
            assert message.headers[TASK_HEADER] == "req-published-1"
            assert message.headers["task"] == "tests.ops.request_id_echo"
            message.ack()
        finally:
            simple.queue.delete()
            simple.close()


def test_without_a_request_no_header_is_added():
    from config.observability import task_publish_add_request_id

    headers: dict = {}
    task_publish_add_request_id(headers=headers)
    assert headers == {}


# --------------------------------------------------------------------------- a real worker


def _database_url() -> str:
    from django.db import connection

    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s.get("PASSWORD") else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


@pytest.fixture
def json_worker(tmp_path, settings):
    """A solo-pool worker on the test database, logging JSON lines into worker.log."""
    if not os.environ.get("REDIS_URL"):
        pytest.skip("a real worker needs REDIS_URL")
    settings.MEDIA_ROOT = tmp_path / "media"
    name = f"ops-test-{uuid.uuid4().hex[:8]}@%h"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.base",
        "DATABASE_URL": _database_url(),
        "CELERY_TASK_ALWAYS_EAGER": "0",
        "CHEMIN_MEDIA_ROOT": str(settings.MEDIA_ROOT),
        "LOG_FORMAT": "json",
    }
    log_path = tmp_path / "worker.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo", "-n", name,
             "--loglevel=INFO", "--without-gossip", "--without-mingle"],
            cwd=settings.BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        eager = celery_app.conf.task_always_eager
        celery_app.conf.task_always_eager = False
        try:
            hostname = name.replace("%h", os.uname().nodename)
            deadline = time.monotonic() + 60
            while not celery_app.control.ping(destination=[hostname], timeout=1.0):
                assert proc.poll() is None, log_path.read_text()
                assert time.monotonic() < deadline, "the worker did not answer ping in 60 s"
            yield log_path
        finally:
            celery_app.conf.task_always_eager = eager
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_workers_report_logs_carry_the_id_of_the_closing_request(
    json_worker, settings, commissario, capo_partita, changeur, direzione, api_client_for
):
    from audit.models import DayReport
    from floor import services as floor_services
    from tests.audit.test_reports import build_day

    world = build_day(commissario=commissario, capo=capo_partita, changeur=changeur, direzione=direzione)
    floor_services.table_session_close(session=world.sessions[1], by=commissario)

    # The worker is up: /readyz asks it for real.
    settings.CELERY_TASK_ALWAYS_EAGER = False
    ready = api_client_for(None).get("/readyz")
    assert ready.status_code == 200, ready.content
    assert ready.json()["checks"]["celery"]["status"] == "ok"

    request_id = f"close-{uuid.uuid4().hex[:12]}"
    response = api_client_for(commissario).post(
        f"/api/gaming-days/{world.day.pk}/close/",
        HTTP_X_REQUEST_ID=request_id,
        HTTP_IDEMPOTENCY_KEY=uuid.uuid4().hex,
    )
    assert response.status_code == 200, response.content
    assert response["X-Request-ID"] == request_id
    deadline = time.monotonic() + 120
    report = None
    while time.monotonic() < deadline:
        report = DayReport.objects.filter(gaming_day=world.day).first()
        if report is not None and report.status != DayReport.Status.PENDING:
            break
        time.sleep(0.2)
    assert report is not None and report.status == "done"

    def lines() -> list[dict]:
        parsed = []
        for raw in json_worker.read_text().splitlines():
            try:
                parsed.append(json.loads(raw))
            except json.JSONDecodeError:
                continue  # celery's start-up banner
        return parsed

    deadline = time.monotonic() + 10
    while not any(
        line.get("request_id") == request_id and "succeeded" in line["message"] for line in lines()
    ):
        assert time.monotonic() < deadline, lines()[-20:]
        time.sleep(0.2)
    mine = [line for line in lines() if line.get("request_id") == request_id]
    assert {line.get("task_name") for line in mine} == {"audit.tasks.report_build"}
