"""The one error shape of the API: {"error": {"code", "message", "details"}} with a 4xx status.

Services raise ApplicationError with a stable code; DRF's own exceptions and Django's are
mapped to stable codes here, so no input ever surfaces as a 500 with a stack trace. An
unreachable dependency (PostgreSQL, Redis) is a 503 `service_unavailable` with Retry-After."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, OperationalError
from django.http import Http404, JsonResponse
from django.views import defaults
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler

# What the redis client raises when Redis is out of reach (a 503, never a 500).
REDIS_UNAVAILABLE = (RedisConnectionError, RedisTimeoutError)


class ApplicationError(Exception):
    """A business rule refused the request. `code` is stable and documented."""

    status_code = status.HTTP_400_BAD_REQUEST

    def __init__(
        self, code: str, message: str, *, details: dict[str, Any] | None = None, status_code: int | None = None
    ):
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details or {}
        if status_code is not None:
            self.status_code = status_code


class Conflict(ApplicationError):
    """The state changed under the request (taken already, closed meanwhile...)."""

    status_code = status.HTTP_409_CONFLICT


class NotAllowed(ApplicationError):
    """The user is authenticated but may not do this to this object."""

    status_code = status.HTTP_403_FORBIDDEN


# Control characters in a text: a tab becomes a space, line breaks stay, the others (a
# terminal's escape sequences, a bell...) go, so the registers and exports hold plain text.
# NUL stays, for the refusals that name it (PostgreSQL refuses it in a text).
# The bidirectional embeddings, overrides and isolates (U+202A-202E, U+2066-2069) go too:
# "\u202e" in a reason or a shoe's number shows the text after it reversed on every page and
# register ("Trojan source"); the plain direction marks (U+200E, U+200F) stay.
_CONTROLS = dict.fromkeys(
    c for c in [*range(1, 32), 0x7F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)] if c not in (0x0A, 0x0D)
) | {ord("\t"): " "}


def clean_text(value: str | None, model: Any, field: str) -> str:
    """A free text for `model.field` (a reason, a note, a number), stripped of control
    characters (`_CONTROLS`), within the column's max_length: the services check it themselves, for the pages and commands as
    for the API (PostgreSQL would refuse a longer one with a 500; SQLite would keep it)."""
    text = (value or "").translate(_CONTROLS).strip()
    if text and all(ch.isspace() or unicodedata.category(ch) == "Cf" for ch in text):
        # Nothing but invisible format characters (a zero-width space, U+FEFF...): no text at
        # all, so a required reason is missing, not given as a blank on every page and register.
        text = ""
    limit = model._meta.get_field(field).max_length
    if limit is not None and len(text) > limit:
        raise ApplicationError(
            "text_too_long",
            f"{field.replace('_', ' ').capitalize()} is at most {limit} characters.",
            details={"field": field, "max_length": limit, "length": len(text)},
        )
    return text


_DRF_CODES: list[tuple[type[exceptions.APIException], str]] = [
    (exceptions.NotAuthenticated, "not_authenticated"),
    (exceptions.AuthenticationFailed, "authentication_failed"),
    (exceptions.PermissionDenied, "permission_denied"),
    (exceptions.NotFound, "not_found"),
    (exceptions.MethodNotAllowed, "method_not_allowed"),
    (exceptions.NotAcceptable, "not_acceptable"),
    (exceptions.UnsupportedMediaType, "unsupported_media_type"),
    (exceptions.Throttled, "throttled"),
    (exceptions.ParseError, "malformed_request"),
    (exceptions.ValidationError, "invalid_input"),
]


# A lone surrogate (U+D800..U+DFFF; any surrogate in a Python str is a lone one) is valid JSON
# input ("\ud800") but no UTF-8 can encode it: an error echoing it ('"\ud800" is not a valid
# choice.') crashed the JSON renderer, a 500. Echoed, it becomes U+FFFD.
_SURROGATE = re.compile("[\ud800-\udfff]")


def _encodable(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value) if _SURROGATE.search(value) else value
    if isinstance(value, dict):
        return {_encodable(k): _encodable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_encodable(v) for v in value]
    return value


def error_body(code: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": _encodable(message), "details": _encodable(details or {})}}


def integrity_constraint(exc: BaseException) -> str | None:
    """The name of the database constraint an IntegrityError broke, when the driver says."""
    for cause in (exc, exc.__cause__):
        diag = getattr(cause, "diag", None)
        name = getattr(diag, "constraint_name", None) if diag is not None else None
        if name:
            return str(name)
    return None


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ApplicationError):
        headers = None
        wait = exc.details.get("retry_after_seconds")
        if exc.status_code == 429 and isinstance(wait, int) and not isinstance(wait, bool):
            # The header HTTP clients and proxies read (RFC 9110 §10.2.3), as DRF's throttles
            # and the 503s send it; the schema documents it on every 429 (config/api.py).
            headers = {"Retry-After": str(wait)}
        return Response(error_body(exc.code, exc.message, exc.details), status=exc.status_code, headers=headers)
    if isinstance(exc, DjangoValidationError):
        details = exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        return Response(error_body("invalid_input", "The input is not valid.", details), status=400)
    if isinstance(exc, IntegrityError):
        # A constraint caught a race the service did not: the transaction was rolled back.
        # The answer names the constraint, so the refusal says what it was (not a bare 409).
        constraint = integrity_constraint(exc)
        return Response(
            error_body(
                "conflict",
                "The request conflicts with the current state"
                + (f" (database constraint {constraint})." if constraint else "."),
                {"constraint": constraint} if constraint else None,
            ),
            status=409,
        )
    if isinstance(exc, OperationalError):
        # "with the same key" only to a request that sent one (a login or a read takes none)
        request = context.get("request")
        keyed = request is not None and bool(request.headers.get("Idempotency-Key"))
        return Response(
            error_body(
                "service_unavailable",
                "The database is not reachable; retry" + (" with the same key." if keyed else "."),
            ),
            status=503,
            headers={"Retry-After": "2"},
        )
    if isinstance(exc, REDIS_UNAVAILABLE):
        # Redis (the cache: the failed-login counts) is down. The coup path never needs it;
        # what does gets a clean, retryable 503 rather than a 500 (bench/faults.py, redis).
        return Response(
            error_body("service_unavailable", "A service the request needs is not reachable; retry."),
            status=503,
            headers={"Retry-After": "2"},
        )
    if isinstance(exc, RequestDataTooBig):
        # Django's limits on a body (DATA_UPLOAD_MAX_MEMORY_SIZE...) raise while DRF parses it;
        # left alone, Django would answer with its HTML 400 page.
        return Response(error_body("request_too_large", "The request body is too large."), status=413)
    if isinstance(exc, SuspiciousOperation):
        # Too many fields or files in a form body (DATA_UPLOAD_MAX_NUMBER_FIELDS...), a broken
        # multipart body: the request is refused as malformed, in the one error shape.
        return Response(error_body("malformed_request", "The request is malformed."), status=400)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()

    response = exception_handler(exc, context)
    if response is None:
        return None
    code = "error"
    for klass, name in _DRF_CODES:
        if isinstance(exc, klass):
            code = name
            break
    if isinstance(exc, exceptions.ValidationError):
        details = exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
        message = "The input is not valid."
    else:
        details = {}
        message = str(exc.detail) if hasattr(exc, "detail") else str(exc)
        if isinstance(exc, exceptions.Throttled) and exc.wait is not None:
            details = {"retry_after_seconds": int(exc.wait)}
    response.data = error_body(code, message, details)
    return response


def bad_request(request, exception):
    """Django's handler400, for what fails before any view: a Host header that is no allowed
    host (DisallowedHost), a SuspiciousOperation raised by a middleware. An /api/ path gets
    the API's error shape (it was Django's HTML page); the other pages keep Django's."""
    if request.path.startswith("/api/"):
        return JsonResponse(error_body("malformed_request", "The request is malformed."), status=400)
    return defaults.bad_request(request, exception)
