"""Idempotency keys for the API's POSTs (ARCHITECTURE.md: "the tablet retries with the same
Idempotency-Key; the server stores one row per key and answers a replay with the first answer").

A view opts in with the mixin, placed FIRST among its bases (its `schema` must win):

    class CoupRecordApi(IdempotentMixin, APIView):   # or: class CoupRecordApi(IdempotentAPIView)
        idempotency_required = True                  # default False: honoured when sent
        def post(self, request, pk): ...             # wrapped automatically

The contract, per (user, key):
- the first request runs normally; its answer (status + JSON body; successes and 4xx business
  errors alike) is stored in the SAME transaction as the service's writes, so both commit or
  neither does;
- a replay (same key, same fingerprint = method + full path + canonical JSON body) gets the
  stored answer with `Idempotent-Replayed: true`, and nothing runs, nothing is written;
- the same key with another fingerprint is refused: 422 `idempotency_key_reused`;
- 5xx answers (503 on OperationalError...), and 401/403/429, are never stored: the key row is
  rolled back with everything else, so a retry with the same key runs again;
- two requests with one key at once: the second blocks on the key's unique index until the
  first commits, then replays its answer (or runs, if the first rolled back).

Authentication, permission checks and throttles run before the handler, so their refusals
never reach this code. A handler's writes are undone when it fails (it runs in a savepoint),
so a stored error answer never carries a partial write.

ATOMIC_REQUESTS must stay off: DRF's exception handler would then mark the request's
transaction for rollback on a 4xx and the stored answer would be lost (the retry would run
again: safe, but no longer idempotent)."""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import re
from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.http import QueryDict
from django.utils import timezone
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework.exceptions import NotAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.encoders import JSONEncoder
from rest_framework.views import APIView

from config import prepared
from config.api import ErrorSerializer
from config.errors import ApplicationError
from config.transactions import shared_savepoint

from .models import IdempotencyKey

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
MAX_KEY_LENGTH = 200
# Printable ASCII (space to tilde) but the comma: a UUID, a ULID or "tablet-7:coup-123" all
# fit. No comma because a header sent twice reaches the app as its values joined by commas:
# two keys would pass for one, another one if the client sent them in the other order.
_KEY_RE = re.compile(rf"[\x20-\x2b\x2d-\x7e]{{1,{MAX_KEY_LENGTH}}}")

# Refusals that say nothing about the request itself: a role granted, a login, a throttle
# window passing must let the same key run. 5xx are never stored either (see _storable).
NOT_STORED_STATUSES = frozenset({401, 403, 407, 429})


def _storable(status_code: int) -> bool:
    return status_code < 500 and status_code not in NOT_STORED_STATUSES


# --------------------------------------------------------------------------- fingerprint


def _plain(data: Any) -> Any:
    # A form or multipart body parses to a QueryDict: keep every value of repeated keys.
    if isinstance(data, QueryDict):
        return {key: data.getlist(key) for key in data}
    return data


def canonical_json(data: Any) -> str:
    """Key order and whitespace never change the fingerprint; ASCII escapes keep lone
    surrogates (valid JSON, invalid UTF-8) hashable."""
    return json.dumps(_plain(data), sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)


def request_fingerprint(*, method: str, path: str, data: Any) -> str:
    """SHA-256 hex over method, full path (query string included) and the canonical body."""
    digest = hashlib.sha256()
    for part in (method.upper(), path, canonical_json(data)):
        digest.update(part.encode("utf-8", "backslashreplace"))
        digest.update(b"\n")
    return digest.hexdigest()


# A lone surrogate (U+D800..U+DFFF) is valid JSON input ("\ud800") that PostgreSQL's jsonb
# refuses like U+0000. Any surrogate in a Python str is a lone one (a JSON pair decodes to
# one code point), so all of them go.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_UNSTORABLE_ESCAPE = re.compile(r"\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})")


def _without_nul(value: Any) -> Any:
    # PostgreSQL's jsonb refuses U+0000 and lone surrogates, which a 4xx answer may echo
    # from the input ('"\x00" is not a valid choice.'). Storing must never turn a 400 into a 500.
    if isinstance(value, str):
        return _UNSTORABLE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_without_nul(k): _without_nul(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_nul(v) for v in value]
    return value


def storable_body(data: Any) -> Any:
    """The answer's body as plain JSON values, exactly as the renderer will write it."""
    return _storable_text(data)[0]


def _storable_text(data: Any) -> tuple[Any, str | None]:
    """storable_body, and its JSON text when that is the text of the body itself (the
    body is its parse): what storing it would write again (None: a value was replaced)."""
    text = json.dumps(data, cls=JSONEncoder)
    # JSON (ASCII) writes U+0000 and surrogates as escapes only: without one, nothing to replace.
    if _UNSTORABLE_ESCAPE.search(text):
        return _without_nul(json.loads(text)), None
    return json.loads(text), text


def _stored_body(body: Any, text: str | None) -> dict[str, Any] | None:
    """The body's column value for prepared.update (`adapted`) when its JSON text is known:
    the jsonb the field would write (Django's adapt_json_value: json.dumps of the body, which
    gives that very text back, the body being its parse), without encoding the answer again."""
    if text is None or transaction.get_connection().vendor != "postgresql":
        return None
    from psycopg.types.json import Jsonb

    return {"response_body": Jsonb(body, dumps=lambda _body: text)}


# --------------------------------------------------------------------------- the key


def validate_key(raw: str | None, *, required: bool) -> str | None:
    if raw is None:
        if required:
            raise ApplicationError(
                "idempotency_key_required",
                f"This endpoint requires an {HEADER} header (a unique value per intended operation).",
            )
        return None
    if not _KEY_RE.fullmatch(raw):
        raise ApplicationError(
            "bad_idempotency_key",
            f"The {HEADER} header must be one value of 1 to {MAX_KEY_LENGTH} printable ASCII "
            "characters other than the comma.",
            details={"max_length": MAX_KEY_LENGTH},
        )
    return raw


class _Unstored(Exception):
    """Leave the transaction (rolling back the key row with the rest) and answer this."""

    def __init__(self, response: Response):
        super().__init__(response.status_code)
        self.response = response


def replayed(record: IdempotencyKey) -> Response:
    return Response(record.response_body, status=record.status_code, headers={REPLAYED_HEADER: "true"})


def _insert_key(*, user, key: str, fingerprint: str, method: str, path: str) -> IdempotencyKey | None:
    """INSERT ... ON CONFLICT DO NOTHING RETURNING id: the new row (ours, locked by the
    insert until the transaction ends) in one query, or None when the key exists."""
    record = IdempotencyKey(user=user, key=key, fingerprint=fingerprint, method=method, path=path)
    meta = IdempotencyKey._meta
    fields = [f for f in meta.concrete_fields if not f.primary_key]
    conn = transaction.get_connection()
    quote = conn.ops.quote_name
    # Only the model's own table and column names are interpolated; the values are parameters.
    sql = "INSERT INTO {} ({}) VALUES ({}) ON CONFLICT DO NOTHING RETURNING {}".format(  # noqa: S608
        quote(meta.db_table),
        ", ".join(quote(f.column) for f in fields),
        ", ".join(["%s"] * len(fields)),
        quote(meta.pk.column),
    )
    params = [f.get_db_prep_save(f.pre_save(record, add=True), connection=conn) for f in fields]
    with conn.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    record.pk = row[0]
    record._state.adding, record._state.db = False, conn.alias
    return record


def idempotent_response(
    *,
    user,
    key: str,
    method: str,
    path: str,
    fingerprint: str,
    run: Callable[[], Response],
    handle_exception: Callable[[Exception], Response],
) -> Response:
    """Run `run()` at most once per (user, key) and answer every replay with its first answer.

    `handle_exception` turns what `run` raised into the API's error answer (the view's own
    `handle_exception`), so a business error is stored like a success."""
    try:
        with transaction.atomic():
            # INSERT ... ON CONFLICT DO NOTHING: when another transaction holds an uncommitted
            # row for this key, PostgreSQL makes this INSERT wait on the unique index until that
            # transaction ends; the row we then read is committed (completed) or ours.
            record = _insert_key(user=user, key=key, fingerprint=fingerprint, method=method, path=path)
            if record is None:  # the key was there: lock its (committed) row
                record = IdempotencyKey.objects.select_for_update().get(user=user, key=key)
            if record.fingerprint != fingerprint:
                raise ApplicationError(
                    "idempotency_key_reused",
                    f"This {HEADER} was already used for another request.",
                    details={"method": record.method, "path": record.path},
                    status_code=422,
                )
            if record.completed:
                return replayed(record)
            # The row is ours (an uncompleted row is never committed): run the handler in a
            # savepoint, so a failure undoes its writes but keeps the key row to store the answer.
            try:
                with shared_savepoint():  # the service the handler calls shares it (config.transactions)
                    response = run()
                    if not _storable(response.status_code):
                        raise _Unstored(response)
            except _Unstored:
                raise
            except Exception as exc:
                response = handle_exception(exc)  # re-raises what is not an API error: a 500
                if not _storable(response.status_code):
                    raise _Unstored(response) from exc
            body, text = _storable_text(response.data)
            if body != response.data:
                response.data = body  # the first answer and its replays: one JSON value (jsonb keeps no key order)
            record.status_code = response.status_code
            record.response_body = body
            record.completed = True
            prepared.update(
                record, ("status_code", "response_body", "completed"), adapted=_stored_body(body, text)
            )
            return response
    except _Unstored as unstored:
        return unstored.response


# --------------------------------------------------------------------------- the view side


def idempotency_key_parameter(*, required: bool) -> OpenApiParameter:
    return OpenApiParameter(
        name=HEADER,
        type=OpenApiTypes.STR,
        location=OpenApiParameter.HEADER,
        required=required,
        description=(
            f"1 to {MAX_KEY_LENGTH} printable ASCII characters other than the comma (the header is "
            "sent once), unique per intended operation (a UUID). "
            "A retry with the same key and the same request gets the first answer again, with the "
            f"header `{REPLAYED_HEADER}: true`, and changes nothing. The same key with another "
            "request: 422 `idempotency_key_reused`. Keys are scoped to the user and kept for days "
            "(`idempotency_purge`). A key that is not one value of that form: 400 `bad_idempotency_key`."
            + (
                " Required: without it, 400 `idempotency_key_required`."
                if required
                else " Optional: without it the request is not protected against retries."
            )
        ),
    )


_REUSED = OpenApiResponse(
    ErrorSerializer, description="`idempotency_key_reused`: the key was used for another request."
)
_BAD_KEY = OpenApiResponse(
    ErrorSerializer, description="`bad_idempotency_key`, `idempotency_key_required`, or bad input."
)


class IdempotentAutoSchema(AutoSchema):
    """Documents the header and the 422 on the idempotent methods of an IdempotentMixin view;
    @extend_schema on the methods keeps working (drf-spectacular stacks it on this class)."""

    def _idempotent_operation(self) -> bool:
        view = getattr(self, "view", None)
        return isinstance(view, IdempotentMixin) and self.method.lower() in view.idempotent_methods

    def get_override_parameters(self):
        parameters = super().get_override_parameters()
        if self._idempotent_operation():
            parameters = [*parameters, idempotency_key_parameter(required=self.view.idempotency_required)]
        return parameters

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        if direction == "response" and self._idempotent_operation():
            for code, response in (("400", _BAD_KEY), ("422", _REUSED)):
                if code not in responses:
                    responses[code] = self._get_response_for_code(response, code, direction=direction)
        return responses


def _idempotent(method: Callable[..., Response]) -> Callable[..., Response]:
    @functools.wraps(method)  # keeps @extend_schema's annotation for the schema generator
    def handler(self: IdempotentMixin, request: Request, *args, **kwargs) -> Response:
        return self.idempotent_call(method, request, *args, **kwargs)

    handler.idempotent = True  # type: ignore[attr-defined]
    return handler


class IdempotentMixin:
    """Honours (or, with `idempotency_required = True`, demands) the Idempotency-Key header on
    the view's `idempotent_methods`. Put it first among the bases."""

    idempotency_required: bool = False
    idempotent_methods: tuple[str, ...] = ("post",)
    schema = IdempotentAutoSchema()

    _idempotency_running = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # Wrap the handlers this class defines; inherited ones are wrapped already.
        for name in cls.idempotent_methods:
            method = cls.__dict__.get(name)
            if method is not None and not getattr(method, "idempotent", False):
                setattr(cls, name, _idempotent(method))

    def idempotent_call(self, method: Callable[..., Response], request: Request, *args, **kwargs) -> Response:
        def run() -> Response:
            return method(self, request, *args, **kwargs)

        # A subclass's post() calling super().post() passes here twice: only the outer counts.
        if self._idempotency_running:
            return run()
        key = validate_key(request.headers.get(HEADER), required=self.idempotency_required)
        if key is None:
            return run()
        if not request.user or not request.user.is_authenticated:
            raise NotAuthenticated()  # keys are scoped to a user: an anonymous one cannot own one
        path = request.get_full_path()
        fingerprint = request_fingerprint(method=request.method, path=path, data=request.data)
        self._idempotency_running = True
        try:
            return idempotent_response(
                user=request.user,
                key=key,
                method=request.method,
                path=request.path,
                fingerprint=fingerprint,
                run=run,
                handle_exception=self.handle_exception,  # type: ignore[attr-defined]
            )
        finally:
            self._idempotency_running = False


class IdempotentAPIView(IdempotentMixin, APIView):
    """An APIView whose POST honours Idempotency-Key (set `idempotency_required = True` to demand it)."""


# --------------------------------------------------------------------------- housekeeping


def idempotency_key_purge(*, older_than: dt.timedelta) -> int:
    """Deletes the keys created more than `older_than` ago; returns how many. A retry after
    that runs again, so keep the window longer than any client retries."""
    deleted, _ = IdempotencyKey.objects.filter(created_at__lt=timezone.now() - older_than).delete()
    return deleted
