"""Query-parameter filters of the audit API (django-filter), shared by the selectors."""

from __future__ import annotations

import datetime as dt

import django_filters as filters
from django_filters.fields import IsoDateTimeField, RangeField
from django_filters.widgets import DateRangeWidget

from config.api import IdFilter, StrictFilterSet

from .models import AuditEvent, AuditStream


class UtcIsoDateTimeField(IsoDateTimeField):
    """An ISO 8601 instant, handed to the database in UTC. Python takes UTC offsets up to
    ±23:59, PostgreSQL only up to ±15:59: "…+19:46" would be a database error, not a 400.
    An instant at the very edge of the calendar (0001-01-01 in Rome is in year 0 in UTC) is
    taken as the earliest or latest instant there is: "from the beginning" is a fair question."""

    def to_python(self, value):
        value = super().to_python(value)
        if value is None:
            return None
        try:
            return value.astimezone(dt.UTC)
        except OverflowError:
            edge = dt.datetime.min if value.year == dt.MINYEAR else dt.datetime.max
            return edge.replace(tzinfo=dt.UTC)


class UtcIsoDateTimeRangeField(RangeField):
    widget = DateRangeWidget

    def __init__(self, *args, **kwargs):
        super().__init__((UtcIsoDateTimeField(), UtcIsoDateTimeField()), *args, **kwargs)


class UtcIsoDateTimeFromToRangeFilter(filters.IsoDateTimeFromToRangeFilter):
    field_class = UtcIsoDateTimeRangeField


# The events list's orders (`order`), the first one the default.
EVENT_ORDERS = ("newest", "oldest")


class AuditEventFilter(StrictFilterSet):
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
    at = UtcIsoDateTimeFromToRangeFilter(help_text="Time range: `at_after`, `at_before` (ISO 8601).")
    # A seq is the number of an event within its stream (1, 2, ...): with `stream` the range
    # names those events, e.g. what was recorded after a report sealed the stream at seq n
    # (`seq_min` = n + 1). Both inclusive. Whole numbers in ASCII digits (IdFilter).
    seq_min = IdFilter(field_name="seq", lookup_expr="gte", min_value=1,
                       help_text="Events whose seq (number within their stream) is at least this.")  # fmt: skip
    seq_max = IdFilter(field_name="seq", lookup_expr="lte", min_value=1,
                       help_text="Events whose seq (number within their stream) is at most this.")  # fmt: skip
    order = filters.ChoiceFilter(
        choices=[(order, order) for order in EVENT_ORDERS],
        method="order_events",
        help_text="`newest` first (the default) or `oldest` first.",
    )

    class Meta:
        model = AuditEvent
        fields: list[str] = []

    def order_events(self, queryset, name, value):
        """Newest first is the selector's order (by id, descending: within a stream that is by
        seq, an append holding its stream's head lock until it commits). Oldest first is by id;
        with `stream`, by seq, which the (stream, seq) index gives in order, `seq_min` and
        `seq_max` included, without sorting the stream's events."""
        if value != "oldest":
            return queryset
        return queryset.order_by("seq" if self.form.cleaned_data.get("stream") else "id")


class AuditStreamFilter(StrictFilterSet):
    name = filters.CharFilter(help_text="Stream name (exact).")
    name_prefix = filters.CharFilter(field_name="name", lookup_expr="startswith", help_text="Names starting with this.")

    class Meta:
        model = AuditStream
        fields: list[str] = []
