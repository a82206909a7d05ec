"""Ids, whole numbers, booleans and dates as the API takes them (config.api): a JSON integer or
its ASCII digits as a string, nothing int() would also read (a sign, spaces, underscores,
another script's digits) and no JSON float, whatever its fraction; true or false; a date in
ASCII digits; the same in every list filter."""

from __future__ import annotations

import pytest
from rest_framework import serializers

from config.api import IdField, StrictBooleanField, StrictDateField, StrictIntegerField, is_strict_int
from floor.models import Patron, Seat
from tests.factories import PatronFactory

FULLWIDTH_12 = "\uff11\uff12"
ARABIC_12 = "\u0661\u0662"


@pytest.mark.parametrize(
    ("value", "unsigned", "signed"),
    [
        (12, True, True),
        (-12, True, True),  # an int is an int: ranges are the fields' min_value
        ("12", True, True),
        ("0012", True, True),
        ("-12", False, True),
        ("--12", False, False),
        ("+12", False, False),
        (" 12", False, False),
        ("12 ", False, False),
        ("1_2", False, False),
        (FULLWIDTH_12, False, False),
        (ARABIC_12, False, False),
        ("", False, False),
        ("-", False, False),
        (12.0, False, False),
        (True, False, False),
        (None, False, False),
        ([12], False, False),
    ],
)
def test_is_strict_int(value, unsigned, signed):
    assert is_strict_int(value) is unsigned
    assert is_strict_int(value, signed=True) is signed


class _Seat(serializers.Serializer):
    patron = IdField(queryset=Patron.objects.all())
    amount = StrictIntegerField(required=False)


@pytest.mark.django_db
@pytest.mark.parametrize("raw", ["+{pk}", " {pk}", "{pk}.0", "fullwidth", 1.0])
def test_id_field_refuses_what_int_would_guess(commissario, raw):
    patron = PatronFactory(created_by=commissario)
    if raw == "fullwidth":
        raw = "".join(chr(ord(c) + 0xFEE0) for c in str(patron.pk))
    elif isinstance(raw, str):
        raw = raw.format(pk=patron.pk)
    else:
        raw = float(patron.pk)
    data = _Seat(data={"patron": raw})
    assert not data.is_valid()
    assert data.errors["patron"][0].code == "incorrect_type"
    good = _Seat(data={"patron": str(patron.pk), "amount": "-5"})
    assert good.is_valid(), good.errors
    assert good.validated_data == {"patron": patron, "amount": -5}


@pytest.mark.django_db
def test_a_seat_for_a_patron_in_fullwidth_digits_is_a_400_and_writes_nothing(
    table_session, commissario, api_client_for
):
    patron = PatronFactory(created_by=commissario)
    client = api_client_for(commissario)
    fullwidth = "".join(chr(ord(c) + 0xFEE0) for c in str(patron.pk))
    for n, raw in enumerate((fullwidth, f"+{patron.pk}", float(patron.pk))):
        response = client.post(
            f"/api/sessions/{table_session.pk}/seats/", {"patron": raw, "seat_number": 2}, format="json",
            HTTP_IDEMPOTENCY_KEY=f"seat-{n}",
        )  # fmt: skip
        assert response.status_code == 400, response.json()
        assert response.json()["error"]["code"] == "invalid_input"
    assert not Seat.objects.filter(patron=patron).exists()


# --------------------------------------------------------------------------- booleans, dates, filters


class _Flags(serializers.Serializer):
    flag = StrictBooleanField()
    day = StrictDateField(required=False)


@pytest.mark.parametrize("value", [True, False, "true", "false"])
def test_a_boolean_is_true_or_false(value):
    data = _Flags(data={"flag": value})
    assert data.is_valid(), data.errors
    assert data.validated_data["flag"] is (value in (True, "true"))


@pytest.mark.parametrize(
    "value", [1, 0, 1.0, 0.0, "1", "0", "yes", "no", "on", "off", "True", "TRUE", "", [], {}]
)
def test_anything_else_is_no_boolean(value):
    # DRF's BooleanField takes all of these but the last three (1 == True in Python).
    data = _Flags(data={"flag": value})
    assert not data.is_valid()
    assert data.errors["flag"][0].code == "invalid"


@pytest.mark.parametrize(
    "value",
    [
        "\uff11\uff19\uff18\uff10-01-01", "\u0661\u0669\u0668\u0660-01-01", "1980-0\uff11-01",
        "1980-1-1", "1980-01-1", "80-01-01", "19800101", "1980-01-01T00:00", " 1980-01-01",
    ],
)  # fmt: skip
def test_a_date_in_other_digits_is_refused(value):
    # parse_date takes one-digit months and days: the README says YYYY-MM-DD
    data = _Flags(data={"flag": True, "day": value})
    assert not data.is_valid()
    assert data.errors["day"][0].code == "invalid"
    good = _Flags(data={"flag": True, "day": "1980-01-01"})
    assert good.is_valid() and str(good.validated_data["day"]) == "1980-01-01"


@pytest.mark.django_db
def test_a_table_is_not_deactivated_by_a_float(table, direzione, api_client_for):
    client = api_client_for(direzione)
    for value in (0.0, 0, "no", "off"):
        response = client.patch(f"/api/tables/{table.pk}/", {"active": value}, format="json",
                                HTTP_IDEMPOTENCY_KEY=f"t-{value!r}")  # fmt: skip
        assert response.status_code == 400, (value, response.json())
        assert response.json()["error"]["code"] == "invalid_input"
    table.refresh_from_db()
    assert table.active is True
    response = client.patch(
        f"/api/tables/{table.pk}/", {"active": False}, format="json", HTTP_IDEMPOTENCY_KEY="t-ok"
    )
    assert response.status_code == 200, response.json()
    table.refresh_from_db()
    assert table.active is False


@pytest.mark.django_db
def test_a_birth_date_in_fullwidth_digits_is_a_400_and_writes_nothing(commissario, api_client_for):
    client = api_client_for(commissario)
    body = {"first_name": "Lorenzo", "last_name": "Zanetti", "document_type": "id_card",
            "document_number": "CA99999ZZ", "nationality": "IT", "birth_date": "\uff11\uff19\uff16\uff18-03-14"}  # fmt: skip
    response = client.post("/api/patrons/", body, format="json", HTTP_IDEMPOTENCY_KEY="p-1")
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_input", (
        response.json()
    )
    assert not Patron.objects.filter(document_number="CA99999ZZ").exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "query",
    [
        "/api/sessions/?table=\uff11",
        "/api/sessions/?table=%2B1",
        "/api/sessions/?table=%201",
        "/api/sessions/?gaming_day=1.0",
        "/api/sessions/?capo_partita=\u0969",
        "/api/sessions/?changeur=1_0",
        "/api/tables/?site=%2B1",
        "/api/tables/?casino=\uff11",
        "/api/tables/?seats=8.0",
        "/api/gaming-days/?casino=%201",
        "/api/gaming-days/?date=\uff12\uff10\uff12\uff16-12-01",
        "/api/gaming-days/?date_from=\uff12\uff10\uff12\uff16-12-01",
        "/api/gaming-days/?date_to=2026-12-0\uff11",
        "/api/gaming-days/?date=2026-12-1",
        "/api/gaming-days/?date_from=2026-1-01",
        "/api/gaming-days/?is_open=1",
        "/api/gaming-days/?is_open=0",
        "/api/gaming-days/?is_open=True",
        "/api/tables/?active=1",
        "/api/sessions/{session}/seats/?patron=1_0",
        "/api/sessions/{session}/coups/?conforming=yes",
    ],
)
def test_a_list_filter_takes_ascii_digits_only(table_session, auditor, api_client_for, query):
    response = api_client_for(auditor).get(query.format(session=table_session.pk))
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "invalid_input"


@pytest.mark.django_db
def test_the_generated_filters_still_filter(table_session, auditor, api_client_for):
    client = api_client_for(auditor)
    day = table_session.gaming_day
    assert client.get(f"/api/sessions/?table={table_session.table_id}").json()["count"] == 1
    assert client.get(f"/api/sessions/?table={table_session.table_id + 1000}").json()["count"] == 0
    assert client.get(f"/api/sessions/?capo_partita={table_session.capo_partita_id}").json()["count"] == 1
    assert client.get(f"/api/tables/?site={table_session.table.site_id}").json()["count"] == 1
    assert client.get(f"/api/gaming-days/?date={day.date.isoformat()}").json()["count"] == 1
    assert client.get(f"/api/gaming-days/?date_from={day.date.isoformat()}").json()["count"] == 1


# --------------------------------------------------------------------------- unknown keys


@pytest.mark.django_db
def test_a_mistyped_key_is_a_400_not_dropped(table_session, commissario, api_client_for):
    # {"maxmum": ...} was dropped and the minimum changed alone: the Commissario believed the
    # maximum changed too.
    from floor.models import MinimumChange, TableSession

    client = api_client_for(commissario)
    body = {"minimum": 150_00, "maxmum": 4000_00, "reason": "typo"}
    response = client.post(f"/api/sessions/{table_session.pk}/minimum/", body, format="json",
                           HTTP_IDEMPOTENCY_KEY="m-1")  # fmt: skip
    assert response.status_code == 400, response.json()
    error = response.json()["error"]
    assert error["code"] == "invalid_input" and "maxmum" in error["details"]
    assert "Unknown field" in error["details"]["maxmum"][0] and "maximum" in error["details"]["maxmum"][0]
    assert not MinimumChange.objects.exists()
    assert TableSession.objects.get(pk=table_session.pk).minimum == 100_00
    body.pop("maxmum")
    ok = client.post(f"/api/sessions/{table_session.pk}/minimum/", body, format="json", HTTP_IDEMPOTENCY_KEY="m-2")
    assert ok.status_code == 200, ok.json()


def test_every_input_serializer_refuses_unknown_keys():
    """Every request body of the API (its serializers named ...Input) is a StrictInput."""
    import django.urls

    from config.api import StrictInput

    django.urls.get_resolver().url_patterns  # noqa: B018  (imports every API module)

    def every(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from every(sub)

    inputs = {
        cls for cls in every(serializers.Serializer)
        if cls.__name__.endswith("Input") and cls.__module__.split(".")[0] in ("floor", "tables", "audit", "config")
    }  # fmt: skip
    assert len(inputs) >= 30, sorted(c.__qualname__ for c in inputs)
    assert sorted(cls.__qualname__ for cls in inputs if not issubclass(cls, StrictInput)) == []


@pytest.mark.django_db
def test_page_and_page_size_are_ascii_digits(table_session, auditor, api_client_for):
    client = api_client_for(auditor)
    assert client.get("/api/sessions/?page=1&page_size=1").json()["count"] == 1
    assert client.get("/api/sessions/?page=last").status_code == 200
    for bad in ("%2B1", "\uff11", "%201", "1.0"):
        response = client.get(f"/api/sessions/?page={bad}")
        assert response.status_code == 404 and response.json()["error"]["code"] == "not_found", bad
    for bad in ("abc", "0", "-1", "%2B5", "\uff15", ""):
        response = client.get(f"/api/sessions/?page_size={bad}")
        assert response.status_code == 400, (bad, response.content)
        assert response.json()["error"]["code"] == "invalid_input"
    assert client.get("/api/sessions/?page_size=100000").status_code == 200  # capped at 500


# --------------------------------------------------------------------------- writes that take no body


def _bodiless_writes() -> list[tuple[str, str, type]]:
    """(path, method, view class) of every write the schema documents without a request body."""
    import re

    from django.urls import resolve
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    found = []
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if method in ("post", "put", "patch", "delete") and "requestBody" not in operation:
                url = path.replace("{fmt}", "csv")
                url = re.sub(r"\{[^}]+\}", "999999", url)
                found.append((url, method, resolve(url).func.view_class))
    return found


def test_every_write_without_a_body_refuses_one_by_construction():
    """A write documented with no body (`request=None`) is a TakesNoBody view, and a
    TakesNoBody view documents none: a new endpoint cannot forget either."""
    from config.api import TakesNoBody

    writes = _bodiless_writes()
    assert len(writes) >= 12, writes
    assert sorted(f"{m} {url}" for url, m, cls in writes if not issubclass(cls, TakesNoBody)) == []

    def every(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from every(sub)

    documented = {cls for _url, _m, cls in writes}
    assert sorted(c.__qualname__ for c in every(TakesNoBody) if c not in documented and c.__subclasses__() == []) == []


@pytest.mark.django_db
def test_every_write_without_a_body_answers_a_body_as_none_until_the_user_may_write_that_object(
    make_user, api_client_for
):
    """{"foo": 1} opened a coup (201), closed betting, withdrew a bank, opened and closed an
    asta: a key is refused (400 naming it). But only once the user may write and the object
    exists: with an unknown id (999999) a role that may not write gets the 403, one that may
    the 404, a body or none (the 400 came first, telling a stranger the endpoint's body rules
    before the id's existence). The write with no object (the logout) refuses the key."""
    from floor.roles import ALL_ROLES

    users = {"no role": make_user("u-none")} | {role: make_user(f"u-{role}", role) for role in ALL_ROLES}
    clients = {who: api_client_for(user) for who, user in users.items()}
    for n, (url, method, _cls) in enumerate(_bodiless_writes()):
        seen = set()
        for who, client in clients.items():
            body = getattr(client, method)(url, {"foo": 1}, format="json", HTTP_IDEMPOTENCY_KEY=f"k-{n}-{who}")
            bare = getattr(client, method)(url, HTTP_IDEMPOTENCY_KEY=f"b-{n}-{who}")
            seen.add(bare.status_code)
            if bare.status_code in (401, 403, 404):
                assert body.status_code == bare.status_code, (method, url, who, body.status_code, bare.status_code)
                assert body.json()["error"]["code"] == bare.json()["error"]["code"], (url, who, body.json())
                continue
            assert body.status_code == 400, (method, url, who, body.status_code, bare.status_code)
            error = body.json()["error"]
            assert error["code"] == "invalid_input" and list(error["details"]) == ["foo"], (url, error)
            assert "takes no body" in error["details"]["foo"][0]
        if "999999" in url:
            assert {403, 404} <= seen, (method, url, seen)  # a wrong role, and an unknown id
        else:
            assert seen == {204}, (method, url, seen)  # the logout
