"""Ids and whole numbers as the API takes them (config.api.is_strict_int): a JSON integer or
its ASCII digits as a string, nothing int() would also read (a sign, spaces, underscores,
another script's digits) and no JSON float, whatever its fraction."""

from __future__ import annotations

import pytest
from rest_framework import serializers

from config.api import IdField, StrictIntegerField, is_strict_int
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
