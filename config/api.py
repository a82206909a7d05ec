"""API plumbing shared by the apps: pagination and the error schema for the docs."""

import codecs
import functools
import json
import re
from collections.abc import Mapping

import django_filters
from django import forms
from django.conf import settings
from django.db import models, transaction
from django_filters.filterset import FILTER_FOR_DBFIELD_DEFAULTS
from drf_spectacular.utils import OpenApiResponse
from rest_framework import parsers, serializers
from rest_framework.exceptions import NotFound, ParseError
from rest_framework.pagination import PageNumberPagination
from rest_framework.utils.json import strict_constant as json_strict_constant


class Pagination(PageNumberPagination):
    """`page` and `page_size` as strict as the ids: ASCII digits. A page that is no number
    ("+1", a fullwidth 1) is an invalid page (404, as a page past the end); a page_size that
    is none, or 0, is a 400 rather than the default size as if it had been applied."""

    page_size_query_param = "page_size"
    max_page_size = 500

    def get_page_number(self, request, paginator):
        raw = request.query_params.get(self.page_query_param)
        if raw and raw not in self.last_page_strings and not is_strict_int(raw):
            raise NotFound("Invalid page.")
        return super().get_page_number(request, paginator)

    def get_page_size(self, request):
        raw = request.query_params.get(self.page_size_query_param)
        if raw is not None and (not is_strict_int(raw) or int(raw) < 1):
            raise serializers.ValidationError(
                {self.page_size_query_param: [f"A whole number from 1 to {self.max_page_size}."]}
            )
        return super().get_page_size(request)


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="Stable machine-readable code, e.g. `minimum_out_of_range`.")
    message = serializers.CharField()
    details = serializers.DictField()


class ErrorSerializer(serializers.Serializer):
    error = ErrorDetailSerializer()


# The error responses the schema documents, shared by every app's API.
ERROR_RESPONSE = OpenApiResponse(ErrorSerializer)
LIST_ERRORS = {401: ERROR_RESPONSE, 403: ERROR_RESPONSE}
READ_ERRORS = {**LIST_ERRORS, 404: ERROR_RESPONSE}
WRITE_ERRORS = {400: ERROR_RESPONSE, **READ_ERRORS, 409: ERROR_RESPONSE}
# What a paginated list's description says of its pages (Pagination above), for its reader.
PAGINATED = (
    "Paginated: `page` (from 1; a page past the end is a 404 `not_found`) and `page_size` (50 unless "
    "given, at most 500; 0 or no whole number: 400 `invalid_input`); the answer is "
    "`{count, next, previous, results}`."
)
# A view with a throttle (DRF's ScopedRateThrottle): `Retry-After` is added by the hook below.
THROTTLED_RESPONSE = OpenApiResponse(
    ErrorSerializer, description="`throttled`: too many requests; `details.retry_after_seconds`."
)


# --------------------------------------------------------------------------- schema hook

_ERROR_REF = {"$ref": "#/components/schemas/Error"}
_RETRY_AFTER = {
    "schema": {"type": "integer", "minimum": 0},
    "description": "Seconds to wait before trying again.",
}
_REPLAYED = {
    "schema": {"type": "string", "enum": ["true"]},
    "description": "Present (`true`) when this is the stored answer to an earlier request with the same "
    "`Idempotency-Key`: nothing ran again, nothing was written.",
}
# Answers never stored under an Idempotency-Key (floor/idempotency.py: 401, 403, 429, 5xx;
# and a body the parsers refuse, 413 and 415, which fails before the key is looked at), so
# never replayed.
_NEVER_REPLAYED = frozenset({"401", "403", "407", "413", "415", "429"})


# The codes any operation may answer with these statuses (config/errors.py), named on each so
# that a client reading one operation learns them; the views name their own.
_GENERIC_CODES = {
    "400": [("invalid_input", ": the body or query is not what the operation takes (`details` names the keys)")],
    "400 body": [("malformed_request", ": the body is not valid JSON (or form data)")],
    "401": [
        ("not_authenticated", ": no credentials"),
        (
            "authentication_failed",
            ": a token unknown, expired (after a shift) or revoked, its user deactivated, "
            "or a login opened without the second factor its user now needs",
        ),
    ],
    "403": [("permission_denied", ": the role or the assignment does not allow it")],
    "404": [("not_found", ": no such object (or path)")],
}
_BODY_REFUSALS = {
    "413": "`request_too_large`: the body is over the server's limit (DATA_UPLOAD_MAX_MEMORY_SIZE).",
    "415": "`unsupported_media_type`: a body in a media type other than JSON or form data.",
}
_SCHEMA_MEDIA_TYPES = ("application/json", "application/vnd.oai.openapi", "application/vnd.oai.openapi+json")


def document_transport_answers(result, generator, request, public):
    """drf-spectacular postprocessing hook: what every operation may answer besides its own
    answers, which a client must handle and the views cannot each declare:
    - 503 `service_unavailable` with `Retry-After` (config/errors.py: PostgreSQL or Redis out
      of reach, on any request);
    - `Retry-After` on a 429 (a throttle, the failed-login throttle);
    - `Idempotent-Replayed: true` on the answers an Idempotency-Key replays (floor/idempotency.py);
    - the schema's own 401 and 403;
    - on a write, 413 `request_too_large` and 415 `unsupported_media_type`;
    - the codes any operation may answer with 400, 401, 403, 404 (`invalid_input`,
      `malformed_request`, `not_authenticated`...), named in each response's description.
    tests/config/test_api_schema_evening.py holds a played evening's answers to these."""
    for path, operations in result.get("paths", {}).items():
        if path == "/api/schema/":
            # The schema is served to the staff roles only (SERVE_PERMISSIONS): its refusals
            # are the error shape, rendered as the schema would be (YAML unless JSON is asked).
            for operation in operations.values():
                for status, code in (("401", "not_authenticated"), ("403", "permission_denied")):
                    operation["responses"].setdefault(
                        status,
                        {
                            "content": {media: {"schema": dict(_ERROR_REF)} for media in _SCHEMA_MEDIA_TYPES},
                            "description": f"`{code}`.",
                        },
                    )
            continue
        for method, operation in operations.items():
            responses = operation.setdefault("responses", {})
            if method in ("post", "put", "patch"):
                # What DRF's parsers and Django's limits answer for a body (config/errors.py).
                for status, description in _BODY_REFUSALS.items():
                    responses.setdefault(
                        status,
                        {"content": {"application/json": {"schema": dict(_ERROR_REF)}}, "description": description},
                    )
                responses.setdefault(
                    "400", {"content": {"application/json": {"schema": dict(_ERROR_REF)}}, "description": ""}
                )
            responses.setdefault(
                "503",
                {
                    "content": {"application/json": {"schema": dict(_ERROR_REF)}},
                    "description": "`service_unavailable`: the database or Redis is out of reach; retry "
                    "after `Retry-After` seconds (with the same `Idempotency-Key`, for a write).",
                },
            )
            for key, codes in _GENERIC_CODES.items():
                status, _, what = key.partition(" ")
                if what == "body" and method not in ("post", "put", "patch"):
                    continue
                response = responses.get(status)
                if response is None:
                    continue
                missing = [code for code, _ in codes if f"`{code}`" not in response.get("description", "")]
                said = "; ".join(f"`{code}`{why}" for code, why in codes if code in missing)
                if said:
                    response["description"] = " ".join(filter(None, [response.get("description", ""), said + "."]))
            for status in ("429", "503"):
                if status in responses:
                    responses[status].setdefault("headers", {})["Retry-After"] = dict(_RETRY_AFTER)
            keyed = any(
                parameter.get("in") == "header" and parameter.get("name") == "Idempotency-Key"
                for parameter in operation.get("parameters", [])
            )
            if keyed:
                for status, response in responses.items():
                    if status[0] in "24" and status not in _NEVER_REPLAYED:
                        response.setdefault("headers", {})["Idempotent-Replayed"] = dict(_REPLAYED)
    return result


# --------------------------------------------------------------------------- filters


class _StrictNullBooleanField(forms.NullBooleanField):
    """true or false; absent or empty: no filter; anything else is refused, as in a body
    (StrictBooleanField: not 1, 0 or True). Django's NullBooleanField (and its select widget)
    reads "maybe" as "no filter", which answers a typo with the whole list as if it had been
    applied."""

    widget = forms.TextInput

    def to_python(self, value):
        if value in (None, ""):
            return None
        if value is True or value == "true":
            return True
        if value is False or value == "false":
            return False
        raise forms.ValidationError("Enter true or false.", code="invalid")

    def validate(self, value):
        pass


class StrictBooleanFilter(django_filters.BooleanFilter):
    """A BooleanFilter whose bad values are a 400 invalid_input, not silently ignored."""

    field_class = _StrictNullBooleanField


class _StrictIdFormField(forms.IntegerField):
    def to_python(self, value):
        if value not in self.empty_values and not is_strict_int(value):
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        return super().to_python(value)


class IdFilter(django_filters.NumberFilter):
    """An id (or another whole number): ASCII digits, or the input is bad (400
    invalid_input). NumberFilter takes decimals: "?casino=1.5" listed casino 1's sessions;
    Django's IntegerField takes "+1", " 1" and a fullwidth 1 as 1 (is_strict_int)."""

    field_class = _StrictIdFormField


_STRICT_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def is_strict_date(value) -> bool:
    """YYYY-MM-DD in ASCII digits, as ISO 8601 writes a date: strptime's %Y reads any
    script's digits (a fullwidth date filtered as that date) and parse_date takes "2026-12-3"."""
    return isinstance(value, str) and _STRICT_DATE.fullmatch(value) is not None


class _StrictDateFormField(forms.DateField):
    def to_python(self, value):
        if isinstance(value, str) and value and not is_strict_date(value):
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        return super().to_python(value)


class StrictDateFilter(django_filters.DateFilter):
    """A date in ASCII digits (YYYY-MM-DD), or the input is bad (400 invalid_input)."""

    field_class = _StrictDateFormField


_INTEGER_FIELDS = (
    models.AutoField, models.BigAutoField, models.SmallAutoField, models.IntegerField, models.SmallIntegerField,
    models.BigIntegerField, models.PositiveIntegerField, models.PositiveSmallIntegerField,
    models.PositiveBigIntegerField,
)  # fmt: skip


class StrictFilterSet(django_filters.FilterSet):
    """A FilterSet whose filters generated from Meta.fields read ids, whole numbers and dates
    as the rest of the API does: a foreign key or an integer by IdFilter, a date by
    StrictDateFilter. django-filter's defaults read a foreign key through a ModelChoiceField
    and a date through strptime, both of which take "+1", " 1" and other scripts' digits."""

    FILTER_DEFAULTS = {
        **FILTER_FOR_DBFIELD_DEFAULTS,
        **{field: {"filter_class": IdFilter} for field in _INTEGER_FIELDS},
        models.ForeignKey: {"filter_class": IdFilter},
        models.OneToOneField: {"filter_class": IdFilter},
        models.DateField: {"filter_class": StrictDateFilter},
    }
    # What a list reads from its query string besides its filters: the pagination's keys and
    # DRF's format override.
    OTHER_KEYS = frozenset({"page", "page_size", "format"})

    def is_valid(self) -> bool:
        """Also refuses a key the list does not read: `?date=` on a list without that filter
        answered the whole list, as if filtered (a typo, or a filter of another list)."""
        valid = super().is_valid()
        known = set(self.OTHER_KEYS)
        for name, field in self.form.fields.items():
            # a range filter reads its ends under suffixed keys ("at_after", "at_before")
            suffixes = getattr(field.widget, "suffixes", ())
            known.update(f"{name}_{suffix}" if suffix else name for suffix in suffixes or ("",))
        unknown = sorted(set(self.data) - known)
        for key in unknown:
            self.form.errors[key] = self.form.error_class(
                [f"Not a filter of this list; it filters by: {', '.join(sorted(known - self.OTHER_KEYS))}."]
            )
        return valid and not unknown


def is_strict_int(data, *, signed: bool = False) -> bool:
    """Whether `data` is a whole number as JSON writes it: an integer (not a boolean), or its
    ASCII digits as a string (a form body), with a leading "-" only if `signed`. int() also
    takes any script's digits (fullwidth, Arabic-Indic), underscores ("1_000"), a "+" and
    surrounding spaces, and DRF's fields read a float such as 10000.0 or 4.5 as a whole
    number: such input is refused rather than guessed."""
    if isinstance(data, bool):
        return False
    if isinstance(data, int):
        return True
    if not isinstance(data, str) or not data.isascii():
        return False
    digits = data[1:] if signed and data.startswith("-") else data
    return digits.isdigit()


class IdField(serializers.PrimaryKeyRelatedField):
    """A related object named by its id: a whole number (or its ASCII digits as a string),
    never a float, a boolean, a sign, spaces or another script's digits (is_strict_int). DRF's
    own field reads 4.5 as object 4 (Django truncates the lookup), "+5" and a fullwidth 5 as 5, and
    1e400 (infinity) crashes its int() conversion."""

    def to_internal_value(self, data):
        if not is_strict_int(data):
            self.fail("incorrect_type", data_type=type(data).__name__)
        return super().to_internal_value(data)


class StrictInput(serializers.Serializer):
    """A request body whose every key is one of its fields: a mistyped key ({"maxmum": ...} for
    the maximum) is a 400 invalid_input naming it, not dropped while the rest is applied."""

    def to_internal_value(self, data):
        if isinstance(data, Mapping):
            unknown = sorted(str(key) for key in data if key not in self.fields)
            if unknown:
                known = ", ".join(sorted(self.fields))
                said = f"Unknown field (known: {known})." if known else "Unknown field: this request takes no body."
                raise serializers.ValidationError({key[:100]: [said] for key in unknown[:20]})
        return super().to_internal_value(data)


class NoBodyInput(StrictInput):
    """The body of a write that takes none: empty, `{}`, or absent (no Content-Type)."""


class TakesNoBody:
    """For a view whose writes (POST, PUT, PATCH, DELETE) take no body: a body with any key is
    a 400 invalid_input naming it, as StrictInput answers for the views that take one, never
    dropped while the write is applied ({"foo": 1} opened a coup). An empty body, `{}` and
    no Content-Type are accepted.

    Refused only once the request is authenticated and allowed and its object found: a user
    who may not write gets his 401 or 403, an unknown id its 404, with a body as without one
    (the body says nothing about who may write what). The handler calls `refuse_body()` after
    its lookups and before it writes; `check_object_permissions` calls it too. A handler that
    forgets it is refused all the same: with keys in the body it runs in a transaction, rolled
    back when it returns. Put it before APIView among the bases; tests/config/
    test_strict_inputs.py holds every write documented with `request=None` to it."""

    _body_refusal: Exception | None = None
    _write_methods = ("post", "put", "patch", "delete")

    def __init_subclass__(cls, **kwargs):
        # Wrapped before IdempotentMixin's wrapper (it calls super() first, wherever it stands
        # among the bases) wraps the result: the refusal is the write's answer, stored under
        # its Idempotency-Key like a StrictInput's.
        for name in cls._write_methods:
            method = cls.__dict__.get(name)
            if method is not None and not getattr(method, "takes_no_body", False):
                setattr(cls, name, _refusing_a_body(method))
        super().__init_subclass__(**kwargs)

    def refuse_body(self) -> None:
        """Raises the 400 when the body had keys; the handler calls it once its object is
        found and its permissions checked."""
        if self._body_refusal is not None:
            raise self._body_refusal

    def check_object_permissions(self, request, obj):
        super().check_object_permissions(request, obj)
        self.refuse_body()


def _refusing_a_body(method):
    @functools.wraps(method)
    def handler(self, request, *args, **kwargs):
        body = NoBodyInput(data=request.data)
        if self._body_refusal is not None or body.is_valid():
            return method(self, request, *args, **kwargs)  # (nested: the outer one checks)
        self._body_refusal = serializers.ValidationError(body.errors)
        with transaction.atomic():
            method(self, request, *args, **kwargs)
            raise self._body_refusal  # the handler never called refuse_body: nothing it wrote stays

    handler.takes_no_body = True
    return handler


class StrictBooleanField(serializers.BooleanField):
    """true or false: a JSON boolean, or those words as a form body sends them. DRF's field
    also takes "yes", "on", "1", 1 and 0.0 (1 == True in Python): {"active": 0.0}
    deactivated a table."""

    def to_internal_value(self, data):
        if data is True or data is False:
            return data
        if isinstance(data, str) and data in ("true", "false"):
            return data == "true"
        self.fail("invalid", input=data)


class StrictDateField(serializers.DateField):
    """A date as ISO 8601 writes it, YYYY-MM-DD in ASCII digits: Django's parse_date reads any
    script's digits (a fullwidth birth date was stored as that date) and one-digit months."""

    def to_internal_value(self, value):
        if isinstance(value, str) and not is_strict_date(value):
            self.fail("invalid", format="YYYY-MM-DD")
        return super().to_internal_value(value)


class StrictIntegerField(serializers.IntegerField):
    """A whole number as JSON writes it: an integer, or its ASCII digits as a string (a form
    body), "-" allowed (is_strict_int): money and counts typed otherwise, or sent as a JSON
    float (10000.0), are refused rather than guessed."""

    def to_internal_value(self, data):
        if not is_strict_int(data, signed=True):
            self.fail("invalid")
        return super().to_internal_value(data)


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"number out of range: {text[:40]}")
    return value


class JSONParser(parsers.JSONParser):
    """DRF's strict JSON parser (NaN and Infinity refused), which also refuses a number too
    large for a float (1e400 would be read as infinity): a 400 `malformed_request`."""

    def parse(self, stream, media_type=None, parser_context=None):
        parser_context = parser_context or {}
        encoding = parser_context.get("encoding", settings.DEFAULT_CHARSET)
        # Django keeps any charset codecs knows, and codecs also holds transforms that are no
        # text encoding: rot13 (str to str) crashed the reader, a 500; zlib or base64 would
        # decode a body other than the one sent. Only a text encoding reads JSON.
        try:
            text_encoding = getattr(codecs.lookup(encoding), "_is_text_encoding", True)
        except LookupError:
            text_encoding = False
        if not text_encoding:
            raise ParseError(f"JSON parse error - {encoding} is not a text encoding")
        try:
            decoded = codecs.getreader(encoding)(stream)
            return json.load(decoded, parse_constant=json_strict_constant, parse_float=_finite_float)
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from exc
        except RecursionError:
            # A body nested deeper than the interpreter's recursion limit ('[[[[...' a few
            # thousand times): bad input, a 400 like any other, never a 500.
            raise ParseError("JSON parse error - nested too deeply") from None
