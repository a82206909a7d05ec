"""The audit API: read-only. Listing events and stream heads, and verifying the chains."""

from __future__ import annotations

from django.core.paginator import EmptyPage, PageNotAnInteger
from django.core.paginator import Paginator as DjangoPaginator
from django_filters import utils as filter_utils
from django_filters.constants import EMPTY_VALUES
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.generics import ListAPIView
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle
from rest_framework.views import APIView

from config.api import THROTTLED_RESPONSE, ErrorSerializer, Pagination, StrictInput, StrictIntegerField

from .filters import AuditEventFilter, AuditStreamFilter
from .permissions import CanReadAudit
from .selectors import chain_verify, stream_events, stream_list

PERMISSION_CLASSES = [IsAuthenticated, CanReadAudit]

_REFUSED = {
    401: OpenApiResponse(ErrorSerializer, description="Not authenticated (`not_authenticated`)."),
    403: OpenApiResponse(
        ErrorSerializer,
        description="Not authenticated (`not_authenticated`, session clients) or no audit-reading "
        "role (`permission_denied`): auditor, direzione or commissario.",
    ),
}
_BAD_INPUT = {400: OpenApiResponse(ErrorSerializer, description="Invalid filter or body (`invalid_input`).")}


class AuditEventOutput(serializers.Serializer):
    id = StrictIntegerField()
    stream = serializers.CharField(source="stream.name")
    seq = StrictIntegerField()
    at = serializers.DateTimeField()
    actor = StrictIntegerField(source="actor_id", allow_null=True)
    actor_name = serializers.CharField()
    action = serializers.CharField()
    subject_type = serializers.CharField()
    subject_id = serializers.CharField()
    payload = serializers.JSONField()
    prev_hash = serializers.CharField()
    hash = serializers.CharField()


class AuditStreamOutput(serializers.Serializer):
    name = serializers.CharField()
    seq = StrictIntegerField(help_text="Sequence number of the last event (0: no event yet).")
    head_hash = serializers.CharField(help_text="Hash of the last event (64 zeros: no event yet).")


class AuditEventFilterBackend(DjangoFilterBackend):
    """DjangoFilterBackend, the events' count read from the stream heads when the filters in
    use allow it: none (every event: the sum of the heads' seqs), `stream` (that stream's
    seq), `seq_min` and `seq_max` (the seqs of that range each head has reached), alone or
    together, in either `order`. COUNT(*) over the trail read every event on every page: 190
    ms a page at a season's 588,000 events, growing with the years. Exact all the same (AuditEventQuerySet.
    counted_by_heads); with any other filter the events are not counted at all
    (AuditEventPagination)."""

    def filter_queryset(self, request, queryset, view):
        filterset = self.get_filterset(request, queryset, view)
        if not filterset.is_valid():
            raise filter_utils.translate_validation(filterset.errors)
        return events_filtered(filterset)


# The filters whose events the stream heads count exactly (events_filtered).
_COUNTED_BY_HEADS = frozenset({"stream", "seq_min", "seq_max"})


def events_filtered(filterset: AuditEventFilter):
    """The events a valid AuditEventFilter selects, counted by the stream heads where its
    filters allow it (AuditEventFilterBackend): the API's list and the desk's events page
    (audit.views.events) both read them so, the same events in the same order."""
    events = filterset.qs
    # A filter whose value is empty filters nothing (django-filter's Filter.filter).
    used = {name: value for name, value in filterset.form.cleaned_data.items() if value not in EMPTY_VALUES}
    # The order selects nothing; the stream and a seq range select what the heads count
    # (AuditEventQuerySet.counted_by_heads). Any other filter: not counted.
    if used.keys() - {"order"} <= _COUNTED_BY_HEADS:
        return events.counted_by_heads(stream=used.get("stream"), seq_min=used.get("seq_min"),
                                       seq_max=used.get("seq_max"))  # fmt: skip
    return events


class _LookaheadPaginator(DjangoPaginator):
    """Pages without a count: a page reads one row beyond its end, which says whether there
    is a next page. No COUNT(*) over the rows the filters select (on a season's 600,000
    events an `action_prefix` count took 21 ms a page, the page itself far less), and no
    number of pages: a page past the last one that has rows is an invalid page, as before."""

    def __init__(self, object_list, per_page, **kwargs) -> None:
        super().__init__(object_list, per_page, **kwargs)
        self._pages_seen = 1

    def validate_number(self, number) -> int:
        try:
            number = int(number)
        except (TypeError, ValueError):
            raise PageNotAnInteger("That page number is not an integer") from None
        if number < 1:
            raise EmptyPage("That page number is less than 1")
        return number

    def page(self, number):
        number = self.validate_number(number)
        bottom = (number - 1) * self.per_page
        rows = list(self.object_list[bottom : bottom + self.per_page + 1])
        if not rows and number > 1:
            raise EmptyPage("That page contains no results")
        # What Page.has_next() reads: one more page when the row beyond this one exists.
        self._pages_seen = number + 1 if len(rows) > self.per_page else number
        return self._get_page(rows[: self.per_page], number, self)

    @property
    def num_pages(self) -> int:
        return self._pages_seen

    @property
    def count(self) -> None:  # type: ignore[override]
        return None


class AuditEventPagination(Pagination):
    """The events' pages. Unfiltered, or filtered by `stream` and the seq range (`seq_min`,
    `seq_max`) alone, `count` is exact and read from the stream heads (AuditEventFilterBackend); with any other filter it is null and
    nothing is counted: `next` says whether there is a further page (a page reads one row
    beyond its end), and `page=last` is an invalid page (404), there being no count to find
    it by."""

    def paginate_queryset(self, queryset, request, view=None):
        self.counted = getattr(queryset, "counts_by_heads", False)
        self.django_paginator_class = DjangoPaginator if self.counted else _LookaheadPaginator
        return super().paginate_queryset(queryset, request, view)

    def get_page_number(self, request, paginator):
        if not self.counted and request.query_params.get(self.page_query_param) in self.last_page_strings:
            raise NotFound(self.invalid_page_message)
        return super().get_page_number(request, paginator)

    def get_paginated_response(self, data):
        if self.counted:
            return super().get_paginated_response(data)
        links = {"next": self.get_next_link(), "previous": self.get_previous_link()}
        return Response({"count": None, **links, "results": data})

    def get_paginated_response_schema(self, schema):
        answer = super().get_paginated_response_schema(schema)
        answer["properties"]["count"] = {
            "type": "integer",
            "nullable": True,
            "example": 123,
            "description": "The number of events listed, exact: with no filter, or with `stream`, `seq_min` and "
            "`seq_max` alone (in either `order`). Null with any other filter: those are not counted; follow "
            "`next` (null on the last page).",
        }
        return answer


class AuditEventListApi(ListAPIView):
    permission_classes = PERMISSION_CLASSES
    serializer_class = AuditEventOutput
    filterset_class = AuditEventFilter
    # Every event (stream_events(): no row left out), then the filters: the heads count them.
    filter_backends = [AuditEventFilterBackend]
    pagination_class = AuditEventPagination

    def get_queryset(self):
        # Filtering is done by the DjangoFilterBackend with the same FilterSet the
        # selector uses, so the schema documents the parameters.
        return stream_events()

    @extend_schema(
        summary="List audit events",
        description="Events of every stream in the `order` asked: `newest` first (the default: by id, descending) "
        "or `oldest` first (by id; with `stream`, by seq). Paginated (`page`, `page_size`). Filters: "
        "`stream` (a stream's name, exact), `seq_min` and `seq_max` (an event's number within its stream, both "
        "inclusive, whole numbers from 1: with `stream`, `seq_min=n+1&order=oldest` lists what was recorded after "
        "its event n, in order), `action` (exact) or `action_prefix` (e.g. `coup.`), `subject_type` (e.g. "
        "`tables.coup`) and `subject_id`, `actor` (a user id) or `actor_name` (the username at the time), "
        "`at_after` and `at_before` (ISO 8601 instants, both inclusive); a bad value is a 400 naming it. Read "
        "by the auditors, the Direzione and the Commissario. Read-only. `count` is exact with no filter "
        "or with `stream`, `seq_min` and `seq_max` alone (read from the stream heads); with any other filter it "
        "is null, nothing is counted, and the pages are walked by `next` (`page=last` is then an invalid page, "
        "404 `not_found`).",
        responses={200: AuditEventOutput(many=True), **_BAD_INPUT, **_REFUSED},
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


class AuditStreamListApi(ListAPIView):
    permission_classes = PERMISSION_CLASSES
    serializer_class = AuditStreamOutput
    filterset_class = AuditStreamFilter

    def get_queryset(self):
        return stream_list()

    @extend_schema(
        summary="List audit streams (chain heads)",
        description="One row per chain: its name, the seq and hash of its last event, in the order of "
        "the names. Paginated (`page`, `page_size`). Filters: `name` (exact) and `name_prefix` (e.g. `table_session:`, "
        "`day_books:`). Read by the auditors, the Direzione and the Commissario; 403 for the other roles. "
        "Read-only.",
        responses={200: AuditStreamOutput(many=True), **_BAD_INPUT, **_REFUSED},
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


class AuditVerifyInput(StrictInput):
    streams = serializers.ListField(
        child=serializers.CharField(max_length=200),
        required=False,
        allow_empty=False,
        max_length=10_000,
        help_text="Names of the streams to verify; omitted: every stream.",
    )


class AuditBrokenEventOutput(serializers.Serializer):
    stream = serializers.CharField()
    seq = StrictIntegerField()
    event_id = StrictIntegerField(allow_null=True)
    reason = serializers.ChoiceField(
        choices=[
            "missing_event",
            "broken_link",
            "hash_mismatch",
            "head_mismatch",
            "head_seal_mismatch",
            "doc_not_generated",
            "stream_missing",
            "report_missing",
            "session_missing",
            "sealed_event_missing",
            "sealed_event_changed",
            "report_seal_altered",
            "sealed_heads_altered",
            "report_summary_altered",
            "patron_not_as_recorded",
        ]
    )
    message = serializers.CharField()


class AuditVerifyOutput(serializers.Serializer):
    ok = serializers.BooleanField(help_text="True when every checked chain verifies.")
    streams_checked = StrictIntegerField(help_text="Streams checked (up to the first break).")
    events_checked = StrictIntegerField(help_text="Events checked (up to the first break).")
    seconds = serializers.FloatField()
    first_broken = AuditBrokenEventOutput(allow_null=True)


class AuditVerifyApi(APIView):
    permission_classes = PERMISSION_CLASSES
    # The whole trail's recomputation: rate-limited per user (429 `throttled`).
    throttle_classes = (ScopedRateThrottle,)
    throttle_scope = "audit_verify"

    @extend_schema(
        summary="Verify the audit chains",
        description=(
            "Recomputes the hash chain of every stream (or of the given streams) and returns the "
            "first broken event, if any. **This POST writes nothing**: it runs in a read-only "
            "database transaction, so auditors (who write nothing anywhere) may call it. It is a "
            "POST only because the work is expensive and must not be cached or prefetched. "
            "A broken chain is a 200 with `ok: false`; an unknown stream name is a 400 "
            "`unknown_stream`."
        ),
        request=AuditVerifyInput,
        responses={
            200: AuditVerifyOutput,
            400: OpenApiResponse(ErrorSerializer, description="`invalid_input` or `unknown_stream`."),
            **_REFUSED,
            429: THROTTLED_RESPONSE,
        },
    )
    def post(self, request):
        data = AuditVerifyInput(data=request.data)
        data.is_valid(raise_exception=True)
        result = chain_verify(streams=data.validated_data.get("streams"))
        return Response(AuditVerifyOutput(result).data)
