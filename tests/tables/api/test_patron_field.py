"""The patron inputs of the table API (PatronField, patrons_by_id): the answers and messages
of DRF's PrimaryKeyRelatedField, with a query compiled once per connection."""

from __future__ import annotations

import pytest
from rest_framework import serializers

from tables.api.coups_serializers import PatronField, patrons_by_id
from tests.factories import PatronFactory

pytestmark = pytest.mark.django_db


class _Input(serializers.Serializer):
    patron = PatronField()


class _Reference(serializers.Serializer):
    from floor.models import Patron

    patron = serializers.PrimaryKeyRelatedField(queryset=Patron.objects.all())


@pytest.mark.parametrize("raw", ["pk", "str", True, "abc", None, 0, -3, 2**70, "99999999", [1], {"a": 1}])
def test_same_answers_as_primary_key_related_field(commissario, raw):
    patron = PatronFactory(created_by=commissario)
    value = {"pk": patron.pk, "str": str(patron.pk)}.get(raw, raw) if isinstance(raw, str) else raw
    ours, reference = _Input(data={"patron": value}), _Reference(data={"patron": value})
    assert ours.is_valid() == reference.is_valid()
    if reference.is_valid():
        assert ours.validated_data["patron"] == reference.validated_data["patron"] == patron
    else:
        assert ours.errors == reference.errors


def test_patrons_by_id(commissario):
    a, b = PatronFactory(created_by=commissario), PatronFactory(created_by=commissario)
    assert patrons_by_id({a.pk, b.pk}) == {a.pk: a, b.pk: b}
    assert patrons_by_id({a.pk, 2**70, -1}) == {a.pk: a}  # out of the column's range: not found
    assert patrons_by_id(set()) == {}


@pytest.mark.parametrize("raw", [1.0, 1.5, 1.9999])
def test_a_float_is_no_patron_id(commissario, raw):
    # DRF's field reads 1.5 as patron 1 (int() truncates): a bet or a Regola mark would go to
    # another player than the one sent. Refused, as config.api.IdField refuses it on the floor.
    PatronFactory(created_by=commissario, pk=1)
    ours = _Input(data={"patron": raw})
    assert not ours.is_valid()
    assert ours.errors["patron"][0].code == "incorrect_type"


def test_a_float_patron_on_the_api_is_a_400_and_writes_nothing(game, tablet, refused_api):
    from tables import services

    coup = services.coup_open(session=game.session, by=game.capo)
    patron = game.seat(2).pk
    for url, body in [
        (f"/api/coups/{coup.pk}/bets/", {"patron": patron + 0.5, "amount": 100_00}),
        (f"/api/coups/{coup.pk}/banco/", {"patron": patron + 0.9}),
        (f"/api/sessions/{game.session.pk}/regola/", {"patron": patron + 0.5, "declared": True}),
        (f"/api/sessions/{game.session.pk}/bars/", {"patron": patron + 0.5, "reason": "x"}),
    ]:
        refused_api(400, "invalid_input", lambda url=url, body=body: tablet.post(url, body))


@pytest.mark.parametrize("amount", ["\uff11\uff12\uff13\uff10\uff10", "\u0661\u0662\u0663\u0660\u0660", "12_300", " 12300", "+12300", "--12300", "12300 ", ""])
def test_an_amount_in_odd_digits_is_a_400_and_writes_nothing(game, tablet, refused_api, amount):
    # DRF's IntegerField reads a string through int(): fullwidth or Arabic-Indic digits,
    # underscores, signs and spaces all passed, and a bet of three fullwidth digits "123" was recorded as 1.23 €.
    from tables import services

    coup = services.coup_open(session=game.session, by=game.capo)
    body = {"patron": game.seat(2).pk, "amount": amount}
    refused_api(400, "invalid_input", lambda: tablet.post(f"/api/coups/{coup.pk}/bets/", body))


def test_an_amount_as_ascii_digits_is_still_read(game, tablet):
    from tables import services
    from tables.models import Bet

    coup = services.coup_open(session=game.session, by=game.capo)
    response = tablet.post(f"/api/coups/{coup.pk}/bets/", {"patron": game.seat(2).pk, "amount": "12300"})
    assert response.status_code == 201, response.json()
    assert Bet.objects.get(coup=coup).amount == 12300


ODD_IDS = ["+{pk}", " {pk}", "{pk} ", "0{pk}x", "{pk}.0", "{fullwidth}", "{arabic}"]


def odd_id(template: str, pk: int) -> str:
    fullwidth = "".join(chr(ord(c) + 0xFEE0) for c in str(pk))
    arabic = "".join(chr(ord(c) - ord("0") + 0x0660) for c in str(pk))
    return template.format(pk=pk, fullwidth=fullwidth, arabic=arabic)


@pytest.mark.parametrize("template", ODD_IDS)
def test_a_patron_id_in_odd_digits_is_refused(commissario, template):
    # int() read "+5", " 5" and fullwidth or Arabic-Indic digits as patron 5: a Regola mark and
    # bets were recorded for a patron the tablet never named that way.
    patron = PatronFactory(created_by=commissario)
    ours = _Input(data={"patron": odd_id(template, patron.pk)})
    assert not ours.is_valid()
    assert ours.errors["patron"][0].code == "incorrect_type"


@pytest.mark.parametrize("template", ["+{pk}", "{fullwidth}", " {pk}"])
def test_a_patron_id_in_odd_digits_on_the_api_is_a_400_and_writes_nothing(game, tablet, refused_api, template):
    from tables import services

    coup = services.coup_open(session=game.session, by=game.capo)
    patron = odd_id(template, game.seat(2).pk)
    for url, body in [
        (f"/api/coups/{coup.pk}/bets/", {"patron": patron, "amount": 100_00}),
        (f"/api/coups/{coup.pk}/banco/", {"patron": patron}),
        (f"/api/sessions/{game.session.pk}/regola/", {"patron": patron, "declared": True}),
        (f"/api/sessions/{game.session.pk}/bars/", {"patron": patron, "reason": "x"}),
    ]:
        refused_api(400, "invalid_input", lambda url=url, body=body: tablet.post(url, body))


@pytest.mark.parametrize("amount", [10000.0, 12300.5, 1e3])
def test_an_amount_as_a_json_float_is_a_400_and_writes_nothing(game, tablet, refused_api, amount):
    # DRF's IntegerField read 10000.0 as 10000 (it strips a trailing ".0"): "a JSON integer"
    # is what the API takes for cents.
    from tables import services

    coup = services.coup_open(session=game.session, by=game.capo)
    body = {"patron": game.seat(2).pk, "amount": amount}
    refused_api(400, "invalid_input", lambda: tablet.post(f"/api/coups/{coup.pk}/bets/", body))
