"""Query-parameter filters of the audit API (django-filter), shared by the selectors."""

from __future__ import annotations

import django_filters as filters
from django import forms

from .models import AuditEvent, AuditStream


class IdFilter(filters.NumberFilter):
    # NumberFilter takes decimals ("1.5"); an id is a positive integer or the input is bad.
    field_class = forms.IntegerField


class AuditEventFilter(filters.FilterSet):
    stream = filters.CharFilter(field_name="stream__name", help_text="Stream name (exact).")
    action = filters.CharFilter(help_text="Action code (exact), e.g. `minimum.changed`.")
    action_prefix = filters.CharFilter(
        field_name="action", lookup_expr="startswith", help_text="Action codes starting with this, e.g. `coup.`."
    )
    subject_type = filters.CharFilter(help_text="Subject model label, e.g. `tables.coup`.")
    subject_id = filters.CharFilter(help_text="Subject primary key, as text.")
    actor = IdFilter(field_name="actor_id", min_value=1, help_text="Actor user id.")
    actor_name = filters.CharFilter(help_text="Actor username at the time of the event.")
    # `at_after` / `at_before`: ISO 8601 instants, both inclusive.
    at = filters.IsoDateTimeFromToRangeFilter(help_text="Time range: `at_after`, `at_before` (ISO 8601).")

    class Meta:
        model = AuditEvent
        fields: list[str] = []


class AuditStreamFilter(filters.FilterSet):
    name = filters.CharFilter(help_text="Stream name (exact).")
    name_prefix = filters.CharFilter(field_name="name", lookup_expr="startswith", help_text="Names starting with this.")

    class Meta:
        model = AuditStream
        fields: list[str] = []
