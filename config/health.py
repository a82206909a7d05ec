"""Probes. No authentication, no session, nothing sensitive in the answer (a check says ok
or error and how long it took; the reason goes to the log, not to the caller).

/healthz  the process answers: 200 {"status": "ok"}; touches neither the database nor Redis.
          For liveness checks (restart the container when it fails).
/readyz   the dependencies answer: PostgreSQL (`SELECT 1`), Redis (PING, when REDIS_URL is
          set) and at least one Celery worker (control ping, when tasks are not eager).
          200 when every check passes, 503 otherwise. For monitoring and deploy gates: a
          worker outage makes it 503 while the web still serves the floor, so do not use it
          to restart or unroute the web containers.
          A 503 here is logged at WARNING (each failed check says why, then django.request
          says the 503), not as an ERROR: a balancer polling a node that is not ready would
          fill the error log with what is no failure of the request."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable

from django.conf import settings
from django.db import connections
from django.http import JsonResponse
from django.utils.log import log_response
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

logger = logging.getLogger(__name__)

# A driver's message may quote the address it tried: a URL's password and a conninfo's
# password= are masked before it is logged (the host and port stay: they are the reason).
_URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^:/@\s]*:)[^@\s]*@", re.IGNORECASE)
_CONNINFO_PASSWORD = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)


def _masked(text: str) -> str:
    return _CONNINFO_PASSWORD.sub(r"\1***", _URL_PASSWORD.sub(r"\1***@", text))


OK, ERROR, SKIPPED = "ok", "error", "skipped"


@never_cache
@require_safe
def healthz(request):
    return JsonResponse({"status": "ok"})


def check_database() -> None:
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT 1")
        if cursor.fetchone() != (1,):
            raise RuntimeError("SELECT 1 did not answer 1")


def check_redis() -> None:
    import redis

    timeout = settings.READYZ_TIMEOUT
    client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=timeout, socket_timeout=timeout)
    try:
        if not client.ping():
            raise RuntimeError("Redis did not answer PONG")
    finally:
        client.close()


def check_celery() -> None:
    from config.celery import app

    replies = app.control.ping(timeout=settings.READYZ_CELERY_TIMEOUT)
    if not replies:
        raise RuntimeError("no Celery worker answered the ping")


def _timed(name: str, check: Callable[[], None]) -> dict:
    started = time.perf_counter()
    try:
        check()
    except Exception as exc:
        logger.warning("readyz: %s check failed: %s: %s", name, type(exc).__name__, _masked(str(exc)))
        status = ERROR
    else:
        status = OK
    return {"status": status, "latency_ms": round((time.perf_counter() - started) * 1000, 1)}


def run_checks() -> dict[str, dict]:
    checks = {"database": _timed("database", check_database)}
    if settings.REDIS_URL:
        checks["redis"] = _timed("redis", check_redis)
    else:
        checks["redis"] = {"status": SKIPPED, "reason": "no REDIS_URL"}
    if settings.CELERY_TASK_ALWAYS_EAGER:
        checks["celery"] = {"status": SKIPPED, "reason": "tasks run eagerly"}
    elif checks["redis"]["status"] == ERROR:
        # The broker is Redis: a ping through it would only wait out its connection retries.
        checks["celery"] = {"status": ERROR, "reason": "broker unreachable"}
    else:
        checks["celery"] = _timed("celery", check_celery)
    return checks


@never_cache
@require_safe
def readyz(request):
    checks = run_checks()
    ready = all(check["status"] != ERROR for check in checks.values())
    response = JsonResponse({"status": OK if ready else ERROR, "checks": checks}, status=200 if ready else 503)
    if not ready:
        # Django's own line for this response, at WARNING: it marks the response logged, so
        # django.request does not log it again as an ERROR (its level for any 5xx).
        log_response("Service Unavailable: %s", request.path, response=response, request=request, level="warning")
    return response
