"""Request ids and JSON logs: every request gets an id (a sane incoming X-Request-ID is
kept), it is on every log record of the request and on the response, and one JSON line per
request says method, path, status, duration and user, never the query string."""

from __future__ import annotations

import io
import json
import logging
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.observability import JsonFormatter, RequestIdFilter, logging_config, request_id_var

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def json_log():
    """Everything logged during the test, as parsed JSON lines, through the production
    formatter and filter."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RequestIdFilter())
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)

    def lines() -> list[dict]:
        return [json.loads(line) for line in stream.getvalue().splitlines() if line.strip()]

    try:
        yield lines
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)


def _access(lines, path):
    found = [line for line in lines if line["logger"] == "chemin.request" and line["path"] == path]
    assert len(found) == 1, lines
    return found[0]


@pytest.mark.django_db
def test_one_json_line_per_request_with_the_incoming_id(client, json_log, commissario):
    client.force_login(commissario)
    response = client.get("/api/me/?token=very-secret-value", HTTP_X_REQUEST_ID="tablet-7f3a.42")
    assert response.status_code == 200
    assert response["X-Request-ID"] == "tablet-7f3a.42"
    line = _access(json_log(), "/api/me/")
    assert line["request_id"] == "tablet-7f3a.42"
    assert line["method"] == "GET" and line["status"] == 200
    assert line["user_id"] == commissario.pk
    assert isinstance(line["duration_ms"], float) and line["duration_ms"] >= 0
    assert line["level"] == "INFO" and "time" in line
    assert "very-secret-value" not in json.dumps(json_log())


@pytest.mark.django_db
@pytest.mark.parametrize("incoming", ["", "x" * 129, "a\nforged log line", "id with spaces", "<script>"])
def test_an_insane_incoming_id_is_replaced(client, json_log, incoming):
    response = client.get("/healthz", HTTP_X_REQUEST_ID=incoming)
    new = response["X-Request-ID"]
    assert new != incoming and len(new) == 32 and int(new, 16) >= 0


@pytest.mark.django_db
def test_every_record_of_the_request_carries_its_id(client, json_log):
    # A 404 on the API: django.request logs its warning after the middleware returned.
    response = client.get("/no/such/page/", HTTP_X_REQUEST_ID="req-404")
    assert response.status_code == 404
    lines = [line for line in json_log() if line["logger"] in ("django.request", "chemin.request")]
    assert {line["logger"] for line in lines} == {"django.request", "chemin.request"}
    assert {line["request_id"] for line in lines} == {"req-404"}
    assert _access(lines, "/no/such/page/")["user_id"] is None
    # The id is the request's only: after it, records say "-".
    assert request_id_var.get() is None
    logging.getLogger("chemin.test").warning("between requests")
    assert json_log()[-1]["request_id"] == "-"


@pytest.mark.django_db
def test_a_bad_host_header_is_one_warning_line_naming_the_host(client, json_log):
    """A scanner's request with a Host not in ALLOWED_HOSTS logged an ERROR with a full
    traceback (django.security.DisallowedHost): one WARNING line naming the host, and the
    answer stays Django's 400."""
    response = client.get("/accounts/login/", HTTP_HOST="evil.example")
    assert response.status_code == 400
    security = [line for line in json_log() if line["logger"].startswith("django.security")]
    assert len(security) == 1, security
    line = security[0]
    assert line["logger"] == "django.security.DisallowedHost" and line["level"] == "WARNING"
    assert "'evil.example'" in line["message"] and "exc_info" not in line and "Traceback" not in json.dumps(line)


def test_other_security_events_keep_their_level_and_traceback(caplog):
    """Only the bad Host is lowered: a suspicious session (say) is still an ERROR with its
    traceback. And the bad Host's WARNING still obeys LOG_LEVEL (none at ERROR)."""
    try:
        raise ValueError("tampered")
    except ValueError:
        logging.getLogger("django.security.SuspiciousSession").error("session data corrupted", exc_info=True)
    [record] = caplog.records
    assert record.levelname == "ERROR" and record.exc_info[0] is ValueError
    django_logger = logging.getLogger("django")
    old_level = django_logger.level
    django_logger.setLevel(logging.ERROR)
    try:
        caplog.clear()
        logging.getLogger("django.security.DisallowedHost").error("Invalid HTTP_HOST header: 'evil.example'.")
        assert caplog.records == []
    finally:
        django_logger.setLevel(old_level)


def test_logging_config_refuses_an_unknown_format():
    with pytest.raises(ImproperlyConfigured, match="LOG_FORMAT"):
        logging_config("xml", "INFO")


@pytest.mark.parametrize("given, level", [("info", "INFO"), ("Warning", "WARNING"), (" DEBUG ", "DEBUG")])
def test_log_level_is_read_whatever_its_case(given, level):
    """LOG_LEVEL=info is how many deployments write it: the service starts at that level
    rather than stopping on logging's own 'Unable to configure root logger'."""
    assert logging_config("json", given)["root"]["level"] == level


@pytest.mark.parametrize("given", ["LOUD", "", "20"])
def test_an_unknown_log_level_stops_the_service_naming_the_variable(given):
    with pytest.raises(ImproperlyConfigured, match="LOG_LEVEL"):
        logging_config("json", given)


def test_production_logs_json_lines_by_default():
    code = (
        "import django, logging; django.setup()\n"
        "logging.getLogger('chemin.test').warning('hello %s', 'ops', extra={'coup': 7})\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "LOG_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings.production",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        DJANGO_ALLOWED_HOSTS="chemin.example.org",
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    line = json.loads(result.stderr.strip().splitlines()[-1])
    assert line["message"] == "hello ops" and line["coup"] == 7
    assert line["level"] == "WARNING" and line["request_id"] == "-"


@pytest.mark.parametrize(("level", "logged"), [("ERROR", False), ("WARNING", True)])
def test_log_level_governs_django_s_own_loggers_too(level, logged):
    """Django sets its `django` logger to INFO itself: with LOG_LEVEL=ERROR every 401, 403
    and 404 still came out as a django.request WARNING line, the root's level never asked."""
    code = (
        "import django; django.setup()\n"
        "from django.test import Client\n"
        "print(Client(HTTP_HOST='chemin.example.org').get('/api/me/', secure=True).status_code)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "LOG_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings.production",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        DJANGO_ALLOWED_HOSTS="chemin.example.org",
        LOG_LEVEL=level,
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["401"]
    loggers = [json.loads(line)["logger"] for line in result.stderr.splitlines() if line.startswith("{")]
    assert ("django.request" in loggers) is logged, result.stderr
