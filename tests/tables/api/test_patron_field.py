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
