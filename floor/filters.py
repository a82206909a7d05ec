"""Query-string filters of the floor's list endpoints (django-filter)."""

from __future__ import annotations

import django_filters

from config.api import IdFilter, StrictBooleanFilter, StrictDateFilter, StrictFilterSet

from .models import GamingDay, Patron, Seat, Table, TableSession
from .roles import has_role
from .selectors import patron_search
from .serializers import IDENTITY_READERS


class TableFilter(StrictFilterSet):
    active = StrictBooleanFilter()

    class Meta:
        model = Table
        fields = ["casino", "site", "profile", "active", "seats"]


class GamingDayFilter(StrictFilterSet):
    is_open = StrictBooleanFilter(field_name="closed_at", lookup_expr="isnull", label="open")
    date_from = StrictDateFilter(field_name="date", lookup_expr="gte")
    date_to = StrictDateFilter(field_name="date", lookup_expr="lte")

    class Meta:
        model = GamingDay
        fields = ["casino", "date"]


class TableSessionFilter(StrictFilterSet):
    casino = IdFilter(field_name="table__casino")
    # The gaming day's date (a session after midnight belongs to the day it opened in).
    date = StrictDateFilter(field_name="gaming_day__date")
    date_from = StrictDateFilter(field_name="gaming_day__date", lookup_expr="gte")
    date_to = StrictDateFilter(field_name="gaming_day__date", lookup_expr="lte")

    class Meta:
        model = TableSession
        fields = ["table", "gaming_day", "status", "capo_partita", "changeur"]


class SeatFilter(StrictFilterSet):
    active = StrictBooleanFilter(field_name="left_at", lookup_expr="isnull")
    standing = StrictBooleanFilter()

    class Meta:
        model = Seat
        fields = ["standing", "patron"]


class PatronFilter(StrictFilterSet):
    """For the table staff, who do not read identities (serializers.IDENTITY_READERS), the
    search is by name only and a document filter matches nobody: no answer tells them
    whose a document is."""

    search = django_filters.CharFilter(method="filter_search", label="name or document")
    document_number = django_filters.CharFilter(method="filter_document_number")
    document_type = django_filters.ChoiceFilter(choices=Patron.DocumentType.choices, method="filter_document_type")

    class Meta:
        model = Patron
        fields = ["nationality"]

    def _identity(self) -> bool:
        request = getattr(self, "request", None)
        return request is not None and has_role(request.user, *IDENTITY_READERS)

    def filter_search(self, queryset, name, value):
        return patron_search(queryset, value, documents=self._identity())

    def filter_document_number(self, queryset, name, value):
        from .services import normalize_document  # stored normalized: looked up the same way

        return queryset.filter(document_number=normalize_document(value)) if self._identity() else queryset.none()

    def filter_document_type(self, queryset, name, value):
        return queryset.filter(document_type=value) if self._identity() else queryset.none()
