"""API plumbing shared by the apps: pagination and the error schema for the docs."""

import codecs
import json

import django_filters
from django import forms
from django.conf import settings
from drf_spectacular.utils import OpenApiResponse
from rest_framework import parsers, serializers
from rest_framework.exceptions import ParseError
from rest_framework.pagination import PageNumberPagination
from rest_framework.utils.json import strict_constant as json_strict_constant


class Pagination(PageNumberPagination):
    page_size_query_param = "page_size"
    max_page_size = 500


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


# --------------------------------------------------------------------------- filters


class _StrictNullBooleanField(forms.NullBooleanField):
    """true/false (or 1/0); absent or empty: no filter; anything else is refused. Django's
    NullBooleanField (and its select widget) reads "maybe" as "no filter", which answers a
    typo with the whole list as if it had been applied."""

    widget = forms.TextInput

    def to_python(self, value):
        if value in (None, ""):
            return None
        if value in (True, "True", "true", "1"):
            return True
        if value in (False, "False", "false", "0"):
            return False
        raise forms.ValidationError("Enter true or false.", code="invalid")

    def validate(self, value):
        pass


class StrictBooleanFilter(django_filters.BooleanFilter):
    """A BooleanFilter whose bad values are a 400 invalid_input, not silently ignored."""

    field_class = _StrictNullBooleanField


class IdFilter(django_filters.NumberFilter):
    """An id: a whole number, or the input is bad (400 invalid_input). NumberFilter takes
    decimals: "?casino=1.5" listed casino 1's sessions."""

    field_class = forms.IntegerField


class IdField(serializers.PrimaryKeyRelatedField):
    """A related object named by its id: a whole number (or its digits as a string), never a
    float or a boolean. DRF's own field reads 4.5 as object 4 (Django truncates the lookup),
    and 1e400 (infinity) crashes its int() conversion."""

    def to_internal_value(self, data):
        if isinstance(data, bool | float):
            self.fail("incorrect_type", data_type=type(data).__name__)
        return super().to_internal_value(data)


class StrictIntegerField(serializers.IntegerField):
    """A whole number as JSON writes it: an integer, or its ASCII digits as a string (a form
    body). DRF's own field reads a string through int(), which takes any script's digits
    (fullwidth, Arabic-Indic), underscores ("1_000"), signs and surrounding spaces: money and counts
    typed that way are refused rather than guessed."""

    def to_internal_value(self, data):
        if isinstance(data, str) and not (data.isascii() and data.lstrip("-").isdigit() and data.count("-") <= 1):
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
