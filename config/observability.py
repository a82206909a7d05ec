"""Request ids, structured logs and the request metrics.

Every request gets an id: a sane incoming `X-Request-ID` (from the proxy or the tablet) is
kept, anything else is replaced by a uuid4. The id lives in a contextvar for the request,
is added to every log record by `RequestIdFilter` (attached to the handlers in LOGGING),
goes back in the response's `X-Request-ID`, and travels with every Celery task published
while it is set (a message header, `before_task_publish`), so the worker's logs of a report
built after a day's close carry the id of the request that closed the day.

One log line per request (logger `chemin.request`): method, path (never the query string:
it may carry a token), status, duration, user id, request id. Nothing here imports models
at module level: LOGGING builds the filter and formatter before the apps are loaded."""

from __future__ import annotations

import logging
import re
import time
import uuid
from contextvars import ContextVar
from typing import Any

from pythonjsonlogger.json import JsonFormatter as _JsonFormatter

REQUEST_ID_HEADER = "X-Request-ID"
# The Celery message header that carries the id (task.request.<name> in the worker).
TASK_HEADER = "chemin_request_id"

request_id_var: ContextVar[str | None] = ContextVar("chemin_request_id", default=None)

# An incoming id is kept only if it cannot forge a log line or blow up a label: letters,
# digits and . _ : - , at most 128 characters (a uuid, a proxy's hex id, a tablet's id).
_SANE_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")

# Probes and scrapes come every few seconds: their lines go at DEBUG, not to the INFO log.
QUIET_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})

request_logger = logging.getLogger("chemin.request")


def current_request_id() -> str | None:
    return request_id_var.get()


def sane_request_id(value: str | None) -> str | None:
    if value and _SANE_ID.fullmatch(value):
        return value
    return None


# --------------------------------------------------------------------------- logging


class RequestIdFilter(logging.Filter):
    """Adds `request_id` (and, inside a Celery task, `task_id` / `task_name`) to every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            # django.request logs a 4xx/5xx after the middleware has returned: its record
            # carries the request, which carries the id.
            record.request_id = (
                request_id_var.get() or getattr(getattr(record, "request", None), "request_id", None) or "-"
            )
        if not hasattr(record, "task_id"):
            task = _current_task()
            if task is not None and task.request.id:
                record.task_id = task.request.id
                record.task_name = task.name
        return True


def _current_task():
    try:
        from celery._state import get_current_task
    except ImportError:  # pragma: no cover - celery is a dependency
        return None
    return get_current_task()


class JsonFormatter(_JsonFormatter):
    """One JSON object per line: time (ISO 8601), level, logger, message, request_id, and any
    `extra` fields. Django's `request` extra is dropped: its repr holds the query string."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("rename_fields", {"levelname": "level", "name": "logger"})
        kwargs.setdefault("timestamp", "time")
        super().__init__("%(levelname)s %(name)s %(message)s %(request_id)s", *args, **kwargs)

    def add_fields(self, log_data: dict[str, Any], record: logging.LogRecord, message_dict: dict) -> None:
        super().add_fields(log_data, record, message_dict)
        log_data.pop("request", None)
        log_data.pop("color_message", None)
        if log_data.get("request_id") is None:
            log_data["request_id"] = "-"


class DisallowedHostFilter(logging.Filter):
    """On `django.security.DisallowedHost`: a request whose Host is not in ALLOWED_HOSTS (a
    scanner, a misdirected client) is one WARNING line naming that host, not an ERROR with a
    traceback: nothing failed here, Django answers it 400. Dropped when the logger's level
    (LOG_LEVEL) is above WARNING. Other security events keep Django's level and traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info = record.exc_text = record.stack_info = None
        record.levelno, record.levelname = logging.WARNING, logging.getLevelName(logging.WARNING)
        return logging.getLogger(record.name).isEnabledFor(logging.WARNING)


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
PLAIN_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"


def logging_config(fmt: str, level: str) -> dict[str, Any]:
    """LOGGING for `fmt` ("plain" for a terminal, "json" for a log pipeline) at `level`
    (LOG_LEVEL, in any case: `info` as well as `INFO`)."""
    from django.core.exceptions import ImproperlyConfigured

    name = level.strip().upper()
    if name not in LOG_LEVELS:
        # logging would stop the process with "Unable to configure root logger", naming neither
        # the variable nor the values it takes.
        raise ImproperlyConfigured(f"LOG_LEVEL={level!r}: use one of {', '.join(LOG_LEVELS)}.")
    formatter: dict[str, Any]
    if fmt == "json":
        formatter = {"()": "config.observability.JsonFormatter"}
    elif fmt == "plain":
        formatter = {"format": PLAIN_FORMAT}
    else:
        raise ImproperlyConfigured(f"LOG_FORMAT={fmt!r}: use plain or json.")
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {
            "request_id": {"()": "config.observability.RequestIdFilter"},
            "disallowed_host": {"()": "config.observability.DisallowedHostFilter"},
        },
        "formatters": {"default": formatter},
        "handlers": {
            "console": {"class": "logging.StreamHandler", "formatter": "default", "filters": ["request_id"]}
        },
        "root": {"handlers": ["console"], "level": name},
        "loggers": {
            # Django sets its own logger to INFO (DEFAULT_LOGGING), whatever the root's level:
            # LOG_LEVEL=ERROR still logged every 4xx as a django.request WARNING. Its handlers
            # there print only with DEBUG on or mail ADMINS, which Chemin does not set.
            "django": {"level": name},
            # Our own access line replaces runserver's.
            "django.server": {"level": "WARNING"},
            # The published heads (audit/anchors.py) whatever LOG_LEVEL: the log is their copy.
            "chemin.audit.anchor": {"level": "INFO"},
            # A bad Host header: one WARNING line, no traceback (DisallowedHostFilter).
            "django.security.DisallowedHost": {"filters": ["disallowed_host"]},
        },
    }


# --------------------------------------------------------------------------- middleware


class RequestObservabilityMiddleware:
    """First in MIDDLEWARE: the id is set before anything can log, and the access line and
    the request metrics see the final response (redirects and errors included)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request_id = sane_request_id(request.headers.get(REQUEST_ID_HEADER)) or uuid.uuid4().hex
        request.request_id = request_id
        token = request_id_var.set(request_id)
        started = time.perf_counter()
        try:
            response = self.get_response(request)
            elapsed = time.perf_counter() - started
            response[REQUEST_ID_HEADER] = request_id
            self._observe(request, response.status_code, elapsed)
            return response
        finally:
            request_id_var.reset(token)

    @staticmethod
    def _observe(request, status: int, elapsed: float) -> None:
        from config import metrics

        route = _route(request)
        metrics.request_observed(method=request.method, route=route, status=status, seconds=elapsed)
        if request.path in QUIET_PATHS:
            level = logging.DEBUG
        elif status >= 500:
            level = logging.ERROR
        else:
            level = logging.INFO
        if not request_logger.isEnabledFor(level):
            return
        duration_ms = round(elapsed * 1000, 1)
        user_id = _user_id(request)
        request_logger.log(
            level,
            "%s %s %s %.1fms",
            request.method,
            request.path,
            status,
            duration_ms,
            extra={
                "method": request.method,
                "path": request.path,
                "route": route,
                "status": status,
                "duration_ms": duration_ms,
                "user_id": user_id,
            },
        )


def _route(request) -> str:
    """The URL pattern's name (bounded), never the raw path (unbounded)."""
    match = getattr(request, "resolver_match", None)
    if match is None:
        return "<unmatched>"
    return match.view_name or match.route or "<unnamed>"


def _user_id(request) -> int | None:
    """The user's id if authentication already ran, without loading a session for it (a
    probe must not touch the database because of its own access line)."""
    user = request.__dict__.get("user")
    if user is None:
        return None
    wrapped = getattr(user, "_wrapped", user)
    from django.utils.functional import empty

    if wrapped is empty:
        return None
    return getattr(wrapped, "pk", None) if getattr(wrapped, "is_authenticated", False) else None


# --------------------------------------------------------------------------- Celery


def task_publish_add_request_id(headers: dict | None = None, **_: Any) -> None:
    """before_task_publish: the current request's id rides in the task message's headers."""
    request_id = request_id_var.get()
    if request_id and headers is not None:
        headers.setdefault(TASK_HEADER, request_id)


_task_tokens: dict[str, Any] = {}


def task_prerun_set_request_id(task_id: str | None = None, task=None, **_: Any) -> None:
    """task_prerun: in the worker the id comes from the message's headers. An eager task runs
    inside the request itself: without a header it keeps the request's id."""
    request_id = None
    if task is not None:
        request_id = sane_request_id(getattr(task.request, TASK_HEADER, None))
        if request_id is None:
            headers = getattr(task.request, "headers", None) or {}
            request_id = sane_request_id(headers.get(TASK_HEADER))
    token = request_id_var.set(request_id or request_id_var.get())
    if task_id:
        _task_tokens[task_id] = token


def task_postrun_reset_request_id(task_id: str | None = None, **_: Any) -> None:
    token = _task_tokens.pop(task_id, None) if task_id else None
    if token is not None:
        try:
            request_id_var.reset(token)
        except ValueError:  # set in another context (a thread pool): just clear it
            request_id_var.set(None)


def connect_celery(app) -> None:
    """Wire the request id into Celery (called by config/celery.py). The worker keeps the
    logging that Django's LOGGING describes (JSON in production) instead of its own."""
    from celery import signals

    signals.before_task_publish.connect(task_publish_add_request_id, weak=False)
    signals.task_prerun.connect(task_prerun_set_request_id, weak=False)
    signals.task_postrun.connect(task_postrun_reset_request_id, weak=False)
    signals.setup_logging.connect(_celery_setup_logging, weak=False)


def _celery_setup_logging(**_: Any) -> None:
    import logging.config

    from django.conf import settings

    logging.config.dictConfig(settings.LOGGING)
