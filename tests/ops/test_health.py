"""/healthz answers without the database; /readyz checks PostgreSQL, Redis and a Celery
worker, 503 when one fails, with no detail beyond ok/error and a latency; in production both
answer over plain HTTP (exempt from the SSL redirect) while the rest still redirects."""

from __future__ import annotations

import logging
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import OperationalError

from config import health

ROOT = Path(__file__).resolve().parents[2]
CLOSED_PORT_REDIS = "redis://127.0.0.1:1/0"


def test_healthz_answers_ok_without_touching_the_database(client):
    # No django_db mark: pytest-django makes any database access raise here.
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert "no-cache" in response["Cache-Control"]
    assert "Set-Cookie" not in response


@pytest.mark.django_db
def test_readyz_checks_each_dependency(client, settings):
    response = client.get("/readyz")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "ok"
    assert body["checks"]["database"]["status"] == "ok"
    assert body["checks"]["database"]["latency_ms"] >= 0
    if settings.REDIS_URL:
        assert body["checks"]["redis"]["status"] == "ok"
    else:
        assert body["checks"]["redis"]["status"] == "skipped"
    # The test settings run tasks eagerly: no worker to ask.
    assert body["checks"]["celery"] == {"status": "skipped", "reason": "tasks run eagerly"}


@pytest.mark.django_db
def test_readyz_is_503_when_redis_is_down_and_says_no_more_than_error(client, settings, caplog):
    settings.REDIS_URL = CLOSED_PORT_REDIS
    settings.CELERY_TASK_ALWAYS_EAGER = False
    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "error"
    assert body["checks"]["database"]["status"] == "ok"
    assert body["checks"]["redis"]["status"] == "error"
    # Celery's broker is that Redis: not pinged (it would wait out its retries), an error.
    assert body["checks"]["celery"] == {"status": "error", "reason": "broker unreachable"}
    assert "127.0.0.1" not in response.content.decode() and "Connection" not in response.content.decode()
    # The reason is for the operator's log.
    assert any("readyz: redis check failed" in r.getMessage() for r in caplog.records)


def broken_database():
    raise OperationalError("connection refused to db.internal:5432 password=hunter2")


@pytest.mark.django_db
def test_readyz_is_503_when_the_database_fails(client, monkeypatch):
    monkeypatch.setattr(health, "check_database", broken_database)
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["database"]["status"] == "error"
    assert "hunter2" not in response.content.decode()


@pytest.mark.parametrize(
    "message",
    [
        "connection refused to db.internal:5432 password=hunter2",
        "connection refused to db.internal:5432 password = 'hun ter2'",
        "Error connecting to redis://chemin:hunter2@cache.internal:6379/0",
        "could not connect: postgresql://chemin:hunter2@db.internal:5432/chemin",
    ],
    ids=["conninfo", "conninfo-quoted", "redis-url", "postgres-url"],
)
@pytest.mark.django_db
def test_the_failed_checks_warning_names_the_host_but_not_the_password(client, monkeypatch, caplog, message):
    """The reason goes to the operator's log, where a driver's message quoting the address it
    tried carried its password: the password is masked, the host and port kept."""

    def broken():
        raise OperationalError(message)

    monkeypatch.setattr(health, "check_database", broken)
    with caplog.at_level(logging.WARNING):
        assert client.get("/readyz").status_code == 503
    (said,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("readyz: database")]
    assert "hunter2" not in said and "hun ter2" not in said
    assert "***" in said and "internal" in said


@pytest.mark.django_db
def test_a_503_of_readyz_is_a_warning_and_a_failure_of_the_probe_still_an_error(client, monkeypatch, caplog):
    """A balancer polls /readyz every few seconds: each 503 of a node that is not ready was a
    django.request ERROR, filling the error log with what is no failure of the request. It
    is a WARNING (after the failed check's own), once; the probe itself failing is a 500,
    still an ERROR with its traceback."""
    monkeypatch.setattr(health, "check_database", broken_database)
    with caplog.at_level(logging.DEBUG):
        assert client.get("/readyz").status_code == 503
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
    said = [(r.levelname, r.getMessage(), r.status_code, r.exc_info) for r in caplog.records if r.name == "django.request"]
    assert said == [("WARNING", "Service Unavailable: /readyz", 503, None)]
    assert any(r.getMessage().startswith("readyz: database check failed") for r in caplog.records)

    caplog.clear()
    monkeypatch.setattr(health, "run_checks", lambda: 1 / 0)
    client.raise_request_exception = False
    with caplog.at_level(logging.DEBUG):
        assert client.get("/readyz").status_code == 500
    failed = [r for r in caplog.records if r.name == "django.request"]
    assert [(r.levelname, r.status_code) for r in failed] == [("ERROR", 500)]
    assert failed[0].exc_info[0] is ZeroDivisionError


@pytest.mark.django_db
def test_readyz_is_503_when_no_celery_worker_answers(client, settings, monkeypatch):
    if not settings.REDIS_URL:
        pytest.skip("needs REDIS_URL")
    from config.celery import app

    settings.CELERY_TASK_ALWAYS_EAGER = False
    asked = {}

    def ping(timeout):
        asked["timeout"] = timeout
        return []

    monkeypatch.setattr(app.control, "ping", ping)
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["redis"]["status"] == "ok"
    assert response.json()["checks"]["celery"]["status"] == "error"
    assert asked["timeout"] == settings.READYZ_CELERY_TIMEOUT <= 2


def test_probes_refuse_writes(client):
    assert client.post("/healthz").status_code == 405


def test_production_probes_answer_over_plain_http_and_the_rest_redirects():
    """Production settings in a subprocess (they need their environment): /healthz and
    /readyz answer a plain-HTTP request; an API path is redirected to HTTPS."""
    code = (
        "import django; django.setup()\n"
        "from django.test import Client\n"
        "c = Client(HTTP_HOST='chemin.example.org')\n"
        "print(c.get('/healthz').status_code, c.get('/readyz').status_code, c.get('/api/me/').status_code)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings.production",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        DJANGO_ALLOWED_HOSTS="chemin.example.org",
        LOG_LEVEL="ERROR",
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    healthz, readyz, api = result.stdout.split()
    assert healthz == "200"
    assert readyz in ("200", "503")  # the database named by DATABASE_URL may not exist here
    assert api == "301"
