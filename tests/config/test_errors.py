"""The one error shape: every failure the API can produce maps to a stable code and a 4xx/503."""

from urllib.parse import urlencode

import pytest
from django.core.exceptions import (
    RequestDataTooBig,
    SuspiciousMultipartForm,
    TooManyFieldsSent,
    TooManyFilesSent,
)
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, OperationalError
from django.http import Http404
from rest_framework import exceptions
from rest_framework.test import APIRequestFactory, force_authenticate
from rest_framework.views import APIView

from config.errors import ApplicationError, Conflict, NotAllowed


class _User:
    is_authenticated = True
    is_active = True
    pk = 1


def _call(exc: Exception, authenticated: bool = True):
    class Boom(APIView):
        def get(self, request):
            raise exc

    request = APIRequestFactory().get("/boom")
    if authenticated:
        force_authenticate(request, user=_User())
    return Boom.as_view()(request)


@pytest.mark.parametrize(
    ("exc", "status", "code"),
    [
        (ApplicationError("minimum_out_of_range", "too low", details={"minimum": 50}), 400, "minimum_out_of_range"),
        (Conflict("seat_taken", "taken"), 409, "seat_taken"),
        (NotAllowed("not_assigned", "not yours"), 403, "not_assigned"),
        (exceptions.ValidationError({"minimum": ["required"]}), 400, "invalid_input"),
        (exceptions.ParseError(), 400, "malformed_request"),
        (exceptions.PermissionDenied(), 403, "permission_denied"),
        (exceptions.NotFound(), 404, "not_found"),
        (Http404(), 404, "not_found"),
        (exceptions.Throttled(wait=30), 429, "throttled"),
        (DjangoValidationError({"minimum": ["bad"]}), 400, "invalid_input"),
        (IntegrityError("duplicate key"), 409, "conflict"),
        (OperationalError("server closed the connection"), 503, "service_unavailable"),
    ],
)
def test_every_exception_maps_to_the_error_shape(exc, status, code):
    response = _call(exc)
    assert response.status_code == status
    assert set(response.data) == {"error"}
    assert response.data["error"]["code"] == code
    assert isinstance(response.data["error"]["message"], str) and response.data["error"]["message"]
    assert isinstance(response.data["error"]["details"], dict)


def test_application_error_keeps_its_details():
    response = _call(ApplicationError("minimum_out_of_range", "too low", details={"minimum": 50}))
    assert response.data["error"]["details"] == {"minimum": 50}


def test_validation_error_lists_the_fields():
    response = _call(exceptions.ValidationError({"minimum": ["This field is required."]}))
    assert response.data["error"]["details"] == {"minimum": ["This field is required."]}


def test_throttled_says_when_to_retry():
    response = _call(exceptions.Throttled(wait=30))
    assert response.data["error"]["details"] == {"retry_after_seconds": 30}
    assert response["Retry-After"] == "30"


def test_a_429_of_the_services_says_when_to_retry_in_its_header_too():
    """The failed-login throttle's 429 said its wait only in `details`; HTTP clients and the
    schema (every 429 documents Retry-After) read the header, as on DRF's own throttles."""
    from floor.auth import TooManyFailedLogins

    response = _call(TooManyFailedLogins())
    wait = response.data["error"]["details"]["retry_after_seconds"]
    assert response.status_code == 429 and response["Retry-After"] == str(wait)
    # another refusal that names a wait is no 429: no header
    plain = _call(ApplicationError("mfa_locked", "Locked.", details={"retry_after_seconds": 5}))
    assert plain.status_code == 400 and not plain.has_header("Retry-After")


def test_unauthenticated_gets_the_error_shape():
    response = _call(ValueError("never reached"), authenticated=False)
    assert response.status_code in (401, 403)
    assert response.data["error"]["code"] in ("not_authenticated", "authentication_failed")


@pytest.mark.parametrize(
    ("exc", "status", "code"),
    [
        (TooManyFieldsSent("too many"), 400, "malformed_request"),
        (TooManyFilesSent("too many"), 400, "malformed_request"),
        (SuspiciousMultipartForm("broken"), 400, "malformed_request"),
        (RequestDataTooBig("too big"), 413, "request_too_large"),
    ],
)
def test_django_s_refusals_of_a_body_get_the_error_shape(exc, status, code):
    # Left to Django, these are its HTML 400 page (found by tests/fuzz).
    response = _call(exc)
    assert response.status_code == status
    assert response.data == {"error": {"code": code, "message": response.data["error"]["message"], "details": {}}}
    assert response.data["error"]["message"]


@pytest.mark.django_db
def test_a_form_body_with_too_many_fields_is_a_json_400(client, settings, auditor):
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 3
    client.force_login(auditor)
    fields = {f"f{n}": "x" for n in range(10)}
    for response in (
        client.post("/api/audit/verify/", fields),  # multipart
        client.post("/api/audit/verify/", urlencode(fields), content_type="application/x-www-form-urlencoded"),
    ):
        assert response.status_code == 400, response.content
        assert response.json()["error"]["code"] == "malformed_request"
