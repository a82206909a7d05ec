"""What the browser pages share: the idempotent form post, the 403 page, money parsing.

A page's form carries a hidden `idempotency_key` made when the form was rendered (a uuid4,
{% idempotency_field %}). The post runs through floor.idempotency's idempotent_response, the
same contract as the API's Idempotency-Key header: the first post runs the service and its
outcome (a success message or the service's refusal) is stored in the same transaction; a
retry with the same key (a tablet that lost the answer on a flaky network) gets that stored
outcome back and writes nothing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.utils.translation import gettext as _
from rest_framework.response import Response

from config.errors import ApplicationError
from floor.idempotency import HEADER, idempotent_response, request_fingerprint, validate_key

KEY_FIELD = "idempotency_key"
# Form fields that are not part of what the user asked for: a retry may carry another CSRF
# token (a fresh page) for the same intended operation.
_NOT_FINGERPRINTED = {"csrfmiddlewaretoken", KEY_FIELD}


@dataclass
class Outcome:
    ok: bool
    message: str
    code: str = ""
    status: int = 200
    replayed: bool = False


class BadForm(ApplicationError):
    """A form value that does not parse: the page's own refusal, stored like a service's."""


def _as_outcome_response(exc: Exception) -> Response:
    if isinstance(exc, ApplicationError):
        return Response(
            {"ok": False, "code": exc.code, "message": str(exc.message), "details": exc.details},
            status=exc.status_code,
        )
    raise exc


def form_post(request: HttpRequest, run: Callable[[], str]) -> Outcome:
    """Run `run()` (one service call, returning the success message) at most once per key.

    Without a key (an old page, a script) the post runs unprotected, like the API's
    optional header. A refusal never raises out of here: it comes back as an Outcome."""
    raw = request.POST.get(KEY_FIELD) or request.headers.get(HEADER)
    try:
        key = validate_key(raw, required=False)
    except ApplicationError as exc:
        return Outcome(False, str(exc.message), exc.code, exc.status_code)

    def call() -> Response:
        return Response({"ok": True, "message": run()})

    if key is None:
        try:
            response = call()
        except ApplicationError as exc:
            response = _as_outcome_response(exc)
    else:
        data = QueryDict(mutable=True)
        for name in request.POST:
            if name not in _NOT_FINGERPRINTED:
                data.setlist(name, request.POST.getlist(name))
        path = request.get_full_path()
        response = idempotent_response(
            user=request.user,
            key=key,
            method="POST",
            path=request.path,
            fingerprint=request_fingerprint(method="POST", path=path, data=data),
            run=call,
            handle_exception=_as_outcome_response,
        )
    body: dict[str, Any] = response.data
    if "error" in body:  # idempotency_key_reused: the API's error shape
        error = body["error"]
        return Outcome(False, error.get("message", ""), error.get("code", ""), response.status_code)
    return Outcome(
        bool(body.get("ok")),
        body.get("message", ""),
        body.get("code", ""),
        response.status_code,
        replayed=response.headers.get("Idempotent-Replayed") == "true",
    )


def forbidden(request: HttpRequest, message: str | None = None) -> HttpResponse:
    return render(
        request,
        "403.html",
        {"message": message or _("Your role does not allow this page.")},
        status=403,
    )


def is_htmx(request: HttpRequest) -> bool:
    return request.headers.get("HX-Request") == "true"


def euros_to_cents(raw: str | None, *, field: str = "amount") -> int:
    """'150', '150.5', '150,50' -> cents. Money is an integer in cents (ARCHITECTURE.md)."""
    text = (raw or "").strip().replace(" ", "").replace(",", ".")
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise BadForm("bad_amount", _("Enter an amount in euros, e.g. 150 or 150.50."), details={field: raw}) from None
    cents = value * 100
    if cents != cents.to_integral_value() or not value.is_finite():
        raise BadForm("bad_amount", _("An amount has at most two decimals."), details={field: raw})
    return int(cents)


def int_field(raw: str | None, *, field: str) -> int:
    try:
        return int((raw or "").strip())
    except ValueError:
        raise BadForm("bad_input", _("A whole number is expected."), details={field: raw}) from None
