"""The auditors' end-of-day API (RULES.md §8): reports and their files, verification, the
cagnotte register and counts, the control register and its sign-offs.

Roles: auditors (and direzione, commissario) read, download and verify; the direzione
counts the cagnotte, prepares, signs and corrects the control register; the Commissario
closes the day (floor's POST /api/gaming-days/{id}/close/, which enqueues the report).
Every POST honours Idempotency-Key. Views are thin: parse, authorize, one service, render."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from celery.result import AsyncResult
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models.fields.json import KeyTransform
from django.http import FileResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.generics import ListAPIView
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.permissions import SAFE_METHODS, BasePermission, IsAuthenticated
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle
from rest_framework.views import APIView

from config.api import (
    THROTTLED_RESPONSE,
    ErrorSerializer,
    IdFilter,
    StrictBooleanFilter,
    StrictFilterSet,
    StrictInput,
    StrictIntegerField,
    TakesNoBody,
)
from config.errors import ApplicationError, Conflict
from floor import selectors as floor_selectors
from floor.idempotency import IdempotentMixin
from floor.roles import Role, has_role
from tables import report_selectors

from .models import CagnotteCount, ControlRegister, DayReport, ReportFile, UnclaimedDeposit
from .permissions import AUDIT_READERS, CanReadAudit
from .reports import registers, unclaimed
from .reports.selectors import report_list
from .reports.services import report_verify

# Counted cagnotte, cents, in a PostgreSQL bigint: bounded so an absurd number is a 400, never
# a database error (10^12 cents is ten billion euro, as for the coups' amounts).
MAX_CENTS = 10**12

CONTENT_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "pdf": "application/pdf",
}


class DirezioneWritesAuditReads(BasePermission):
    """Reads: auditor, direzione, commissario. Writes: direzione only."""

    message = "Reading needs the auditor, direzione or commissario role; writing needs direzione."

    def has_permission(self, request, view) -> bool:
        if request.method in SAFE_METHODS:
            return has_role(request.user, *AUDIT_READERS)
        return has_role(request.user, Role.DIREZIONE)


READ = [IsAuthenticated, CanReadAudit]
BOOKS = [IsAuthenticated, DirezioneWritesAuditReads]


def _errors(codes: str, *, conflict: str = "") -> dict:
    out = {
        400: OpenApiResponse(ErrorSerializer, description=f"`invalid_input`{', ' if codes else ''}{codes}."),
        401: OpenApiResponse(ErrorSerializer, description="`not_authenticated`."),
        403: OpenApiResponse(ErrorSerializer, description="`permission_denied`: the role does not allow it."),
        404: OpenApiResponse(ErrorSerializer, description="`not_found`."),
    }
    if conflict:
        out[409] = OpenApiResponse(ErrorSerializer, description=conflict)
    return out


def _local_times(value: Any) -> Any:
    """`value` with its times in the casino's zone (TIME_ZONE, Europe/Rome: "+01:00"), as every
    other answer of the API and the exports give them; a register's selectors hand aware times
    in UTC, which the JSON encoder wrote as "...Z". A copy: what it is given is left as it is."""
    if isinstance(value, dt.datetime):
        return serializers.DateTimeField().to_representation(value)
    if isinstance(value, dict):
        return {key: _local_times(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_local_times(item) for item in value]
    return value


def _local_stored_times(value: Any, key: str = "") -> Any:
    """A stored JSON document (a control register's signed lines: their times are ISO 8601
    strings in UTC, "+00:00") with each time, a "..._at" key's, given in the casino's zone. On
    output only: the stored lines, which the signatures and the trail's events cover, are never
    rewritten (a copy is returned)."""
    if isinstance(value, dict):
        return {k: _local_stored_times(item, str(k)) for k, item in value.items()}
    if isinstance(value, list):
        return [_local_stored_times(item, key) for item in value]
    if isinstance(value, str) and key.endswith("_at"):
        try:
            at = dt.datetime.fromisoformat(value)
        except ValueError:
            return value
        return _local_times(at) if at.tzinfo is not None else value
    return value


class LocalTimesJSONField(serializers.JSONField):
    """A stored JSON document whose times are given in the casino's zone (_local_stored_times)."""

    def to_representation(self, value):
        return super().to_representation(_local_stored_times(value))


# --------------------------------------------------------------------------- reports


class ReportFileOutput(serializers.Serializer):
    format = serializers.CharField()
    size = StrictIntegerField()
    sha256 = serializers.CharField()
    created_at = serializers.DateTimeField()
    url = serializers.SerializerMethodField()

    def get_url(self, f: ReportFile) -> str:
        return f"/api/reports/{f.report_id}/files/{f.format}/"


class ReportProgressOutput(serializers.Serializer):
    state = serializers.CharField(help_text="Celery state: PENDING, STARTED, PROGRESS, SUCCESS, FAILURE, RETRY, or UNKNOWN.")
    done = StrictIntegerField(allow_null=True)
    total = StrictIntegerField(allow_null=True)


class ReportListItemOutput(serializers.Serializer):
    """A report as the list gives it: what it is, where it stands, its files and seal. The
    figures (`summary`) are the detail's: a list of them weighed 261 KB a page at a season."""

    id = StrictIntegerField()
    gaming_day = StrictIntegerField(source="gaming_day_id")
    date = serializers.DateField(source="gaming_day.date", help_text="The gaming day's date.")
    version = StrictIntegerField()
    language = serializers.ChoiceField(
        choices=[code for code, _name in settings.LANGUAGES], read_only=True,
        help_text="The language the report's files are written in: settings.REPORT_LANGUAGE when the report was "
        "requested, kept for its rebuilds (its titles, notes and facts, and in the PDF and XLSX its figures; the "
        "CSV's column keys and codes and the summary's keys are the same in every language).",
    )  # fmt: skip
    control_register = StrictIntegerField(source="control_register_id", allow_null=True)
    status = serializers.CharField(
        help_text="`pending` (queued or being built), `done`, or `failed`: the last build failed (`error`). "
        "A failed report is enqueued again by the sweep (every 15 minutes) unless it gave up after "
        "REPORT_BUILD_MAX_ATTEMPTS interrupted builds (only the operator's `manage.py report_build` retries it): "
        "while its new build is queued or running, it stays `failed` with `retrying` true."
    )  # fmt: skip
    retrying = serializers.BooleanField(
        read_only=True,
        help_text="true for a `failed` report the sweep enqueued again, whose new build is queued or running "
        "(`progress` follows it); false once that build ends, and for any other report.",
    )  # fmt: skip
    requeued_at = serializers.DateTimeField(
        allow_null=True,
        help_text="When the sweep enqueued this failed report again; null once that build ended.",
    )  # fmt: skip
    task_id = serializers.CharField()
    requested_at = serializers.DateTimeField()
    built_at = serializers.DateTimeField(allow_null=True)
    seconds = serializers.FloatField(allow_null=True)
    seal = serializers.CharField()
    sealed_streams = serializers.ListField(child=serializers.CharField())
    error = serializers.CharField(help_text="The last failed build's error; emptied once the report is built.")
    files = ReportFileOutput(many=True)
    progress = serializers.SerializerMethodField()
    superseded_by = StrictIntegerField(
        source="superseded_by_id", allow_null=True, read_only=True,
        help_text="The id of the latest built report of the same gaming day when that is a later version "
        "(this version is superseded by it: a signed or corrected control register came after); null for the "
        "version in force, and for a version being built or failed. The superseded version's files stay as "
        "they were built: they are the record of that moment, sealed and checksummed.",
    )  # fmt: skip
    current = serializers.BooleanField(
        source="is_current", read_only=True,
        help_text="true for the latest built version of its gaming day, the one in force.",
    )  # fmt: skip

    @extend_schema_field(ReportProgressOutput)
    def get_progress(self, report: DayReport) -> dict:
        if report.status == DayReport.Status.DONE:
            total = report.summary_rows  # the summary's rows, annotated by _reports()
            return {"state": "SUCCESS", "done": total, "total": total}
        if not report.task_id:
            return {"state": "PENDING", "done": None, "total": None}
        try:
            result = AsyncResult(report.task_id)
            state, info = result.state, result.info
        except Exception:  # the result backend is unreachable: say so, never a 500
            return {"state": "UNKNOWN", "done": None, "total": None}
        if isinstance(info, dict) and "done" in info:
            return {"state": state, "done": info.get("done"), "total": info.get("total")}
        return {"state": state, "done": None, "total": None}


class ReportOutput(ReportListItemOutput):
    """A report with its figures: the day's totals and per-table figures, as in the files."""

    summary = serializers.JSONField()


def _id_param(request, name: str, message: str) -> int | None:
    """An optional id in the query string: ASCII digits only. str.isdigit() also takes "²" or
    "①", which int() refuses: that was a 500, it is a 400 `invalid_input`."""
    value = request.query_params.get(name)
    if value is None:
        return None
    if not (value.isascii() and value.isdigit()):
        raise ApplicationError("invalid_input", message, details={name: value})
    return int(value)


def _reports():
    # Each report with the latest built version of its day (superseded_by, current): in the
    # same query, however many versions the day has. The rows its build wrote (its progress
    # once built) are read from the summary by the database: the list does not load it.
    return (
        report_list()
        .select_related("gaming_day")
        .prefetch_related("files")
        .annotate(summary_rows=KeyTransform("rows", "summary"))
        .order_by("gaming_day_id", "version")
    )


class ReportListApi(ListAPIView):
    permission_classes = READ
    serializer_class = ReportListItemOutput

    def get_queryset(self):
        # Neither the figures nor the sealed heads are listed (the detail gives the figures).
        qs = _reports().defer("summary", "sealed_heads")
        day = _id_param(self.request, "gaming_day", "gaming_day is a gaming day id.")
        if day is not None:
            qs = qs.filter(gaming_day_id=day)
        return qs

    @extend_schema(
        summary="List end-of-day reports",
        description="Each report's status, files, seal and version in force, without its figures: "
        "`summary` is in the report's own answer (`GET /api/reports/{id}/`). By gaming day, then "
        "version. Paginated (`page`, `page_size`); filter: `gaming_day` (a gaming day's id; another value is a 400 "
        "naming it). Read by the auditors, the Direzione and the Commissario; 403 for the other roles.",
        parameters=[OpenApiParameter("gaming_day", OpenApiTypes.INT, description="Only this gaming day's reports.")],
        responses={200: ReportListItemOutput(many=True), **_errors("")},
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


class ReportDetailApi(APIView):
    permission_classes = READ

    @extend_schema(
        summary="An end-of-day report: status, progress, figures, seal and files",
        description="`progress` follows the Celery task while the report is being built (the auditor's page "
        "draws it as a bar): state PROGRESS with {done, total} rows written.",
        responses={200: ReportOutput, **_errors("")},
    )
    def get(self, request, pk: int):
        return Response(ReportOutput(get_object_or_404(_reports(), pk=pk)).data)


class GamingDayReportApi(APIView):
    permission_classes = READ

    @extend_schema(
        summary="The latest report of a gaming day",
        description="The day's end-of-day report of the highest version (`?version=` for a given one), as GET "
        "/api/reports/{id}/ gives it: status, progress, figures, seal and files. The auditors, the Direzione "
        "and the Commissario (others 403 `permission_denied`). A `version` that is no whole number: 400 "
        "`invalid_input`; a day without a report (or without that version) yet: 404 `report_not_found`.",
        parameters=[OpenApiParameter("version", OpenApiTypes.INT, description="A given version instead.")],
        responses={
            200: ReportOutput,
            **_errors(""),
            404: OpenApiResponse(
                ErrorSerializer,
                description="`not_found` (no such day), `report_not_found` (the day has no report, or not "
                "that version, yet: `details.open` says whether the day is still open).",
            ),
        },
    )
    def get(self, request, pk: int):
        day = floor_selectors.gaming_day_or_404(pk=pk)
        qs = _reports().filter(gaming_day=day)
        version = _id_param(request, "version", "version is a number.")
        if version is not None:
            qs = qs.filter(version=version)
        report = qs.order_by("-version").first()
        if report is None:
            raise ApplicationError("report_not_found", "This gaming day has no report (yet).",
                                   details={"gaming_day": day.pk, "open": day.is_open}, status_code=404)  # fmt: skip
        return Response(ReportOutput(report).data)


class _FileNegotiation(BaseContentNegotiation):
    """The body is the stored file whatever the client accepts (its type is the format's);
    the JSON renderer is only for the errors, which keep the API's one shape. DRF's default
    negotiation answered 406 to `Accept: application/pdf`, the very type being asked for."""

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class ReportFileDownloadApi(APIView):
    permission_classes = READ
    content_negotiation_class = _FileNegotiation

    @extend_schema(
        summary="Download a report file (CSV, XLSX or PDF), streamed",
        description="The body is the stored file, as an attachment; its SHA-256 is in the "
        "`X-Checksum-SHA256` header. A report still being built, or whose build failed: 409 "
        "`report_not_built` (`details.status`), never a partial file. A format the report has no file "
        "of: 404 `not_found`; a file missing from the storage: 404 `file_missing`.",
        parameters=[
            OpenApiParameter("fmt", OpenApiTypes.STR, OpenApiParameter.PATH, enum=list(CONTENT_TYPES)),
            OpenApiParameter(
                "X-Checksum-SHA256",
                OpenApiTypes.STR,
                OpenApiParameter.HEADER,
                response=[200],
                required=True,
                description="The file's SHA-256 (hex), as the report recorded it.",
            ),
            OpenApiParameter(
                "Content-Disposition",
                OpenApiTypes.STR,
                OpenApiParameter.HEADER,
                response=[200],
                required=True,
                description='`attachment; filename="chemin-<day>-v<version>.<fmt>"` (e.g. '
                "`chemin-2026-12-03-v2.pdf`): the name a browser saves the file under.",
            ),
        ],
        # Each format's own media type (CONTENT_TYPES), as the answer's Content-Type says it.
        responses={
            **{(200, media.split(";", 1)[0]): OpenApiTypes.BINARY for media in CONTENT_TYPES.values()},
            **_errors("", conflict="`report_not_built` (pending or failed: `details.status`)."),
        },
    )
    def get(self, request, pk: int, fmt: str):
        if fmt not in CONTENT_TYPES:
            # Not a format we write; and a NUL byte from the path would be a database error.
            raise NotFound()
        report = get_object_or_404(DayReport, pk=pk)
        if report.status != DayReport.Status.DONE:
            # As verify says it: a report being built (or failed) has no files to give yet, and
            # a bare 404 read as if the report or the format did not exist.
            raise Conflict("report_not_built", "The report is not built yet.",
                           details={"status": report.status, "error": report.error})  # fmt: skip
        f = get_object_or_404(ReportFile.objects.select_related("report"), report=report, format=fmt)
        path = Path(settings.MEDIA_ROOT) / f.path
        if not path.is_file():
            raise ApplicationError("file_missing", "The stored file is missing; verify the report.",
                                   details={"format": fmt}, status_code=404)  # fmt: skip
        response = FileResponse(open(path, "rb"), as_attachment=True, filename=path.name,  # noqa: SIM115
                                content_type=CONTENT_TYPES.get(fmt, "application/octet-stream"))  # fmt: skip
        response["X-Checksum-SHA256"] = f.sha256
        return response


class ReportVerifyOutput(serializers.Serializer):
    ok = serializers.BooleanField()
    report = StrictIntegerField()
    files = serializers.ListField(child=serializers.DictField())
    seal = serializers.DictField()
    chains = serializers.DictField(allow_null=True)
    later_events = serializers.DictField(
        child=StrictIntegerField(),
        help_text="Events recorded after the build in the streams it seals (stream -> how many): later "
        "records such as a corrected count, not a fault. The seal is checked as of the build.",
    )
    reasons = serializers.ListField(
        child=serializers.DictField(),
        help_text="Each failed check: `file_missing`, `checksum_mismatch` (against the stored checksum, or "
        "against the one the hash-chained `report.built` event recorded), `no_files`, `stream_missing`, "
        "`seal_mismatch` (with `streams`: each sealed head whose event is now gone, `now` null, or has another hash), "
        "`chain_broken`, `build_record_missing`, `summary_mismatch` (the summary is not the one the `report.built` "
        "event recorded: `recorded` `summary_sha256`, its whole digest, or `expected_cagnotte` for a report built "
        "before the digest), `report_missing` (another report of the day that a `report.built` event records is "
        "gone or no longer that report: `report`, `version`, `event`), `sealed_heads_altered` (the report's sealed "
        "heads are not those the `report.built` event recorded, by count and digest: rewritten or emptied), "
        "`levies_mismatch` (a table's levies "
        "in the report differ from its sessions' `coup.settled` events as of the build), `coup_mismatch` (a settled "
        "coup's winner, bank, covered stake, levy, banker's net or time of settlement differ from its `coup.settled` "
        "event, its punta "
        "from its `coup.rien_ne_va_plus`, its cards, draws, Regola marks, conformity, violations and versions from "
        "its `coup.played`, `reconstruction.card` and `coup.settled` events, or it is "
        "settled on one side only: `table`, `session`, `coup`, `fields`), `bets_mismatch` (a settled coup's bet "
        "rows differ from the bets its `coup.rien_ne_va_plus` event lists, an annulled coup's from those its "
        "`coup.annulled` event gave back: `table`, `session`, `coup`, `in_books`, "
        "`in_trail`, and `fields`: each bet's `seat`, `order`, `standing`, `by` or `at` that differs from its "
        "`bet.placed` event, `patron`, `field`, `in_books`, `in_trail`), `postings_mismatch` (a "
        "coup's posting rows differ from the postings its `coup.settled` event lists: `table`, `session`, `coup`, "
        "`in_books`, `in_trail`), `cards_mismatch` (a shoe card's row differs from the card events that recorded "
        "it, a mis-entered card's `card.entry_corrected` included, or either is missing: `table`, `session`, `shoe`, `shoe_number`, `position`, `in_books`, "
        "`in_trail`, each the card, its use, coup, side and whether and why it was voided, or null), "
        "`event_unreadable` (a session's event does not hold what its action records, e.g. its payload rewritten "
        "and its chain rebuilt: `table`, `session`, `stream`, `seq`, `action`; the rows it recorded are held to "
        "the other events only), "
        "`record_mismatch` (a register row differs from the events that recorded it, or either is missing: the "
        "day's own row (`record` `day`, its date, opening and close; no `table` nor `session`), the session's own row, a bank, a minimum change, a staff change, an interruption, a faux-tirage bar, an "
        "annulled coup, a shoe, a succession, an offer of the bank, an asta or a bid, its times included where its "
        "events record them: `table`, `session`, `record`, `number` or `at`, `in_books`, `in_trail`, `fields`), "
        "`books_mismatch` (a "
        "cagnotte count or control register row differs from its events in the day's books stream, the count's "
        "and the signatures' times included where the events record them: "
        "`count_not_as_recorded` (with `count`, `table` and `table_number`), `register_not_as_recorded`, "
        "`count_missing`, `register_missing`, `deposit_not_as_recorded` (an unclaimed deposit, with `deposit` and "
        "`table_number`), `deposit_missing`), `unclaimed_mismatch` (an unclaimed deposit the report lists "
        "differs from its `unclaimed.deposited` and `unclaimed.returned` events in the day's books stream as of the "
        "build, or is on one side only: `deposit`, `table`, `listed_in_report`, `recorded_in_trail`), "
        "`count_mismatch` (a cagnotte count the report lists, its tips included, differs from the event that "
        "recorded it in the day's books stream, or has none: `count`, `table`, `recorded_in_trail`), "
        "`cash_mismatch` (a line of the changeur's register the report lists differs from its `cash.exchanged` and "
        "`cash.exchange_voided` events in its session's stream as of the build, or is on one side only: `exchange`, "
        "`table`, `session`, `line`, `listed_in_report`, `recorded_in_trail`), "
        "`patron_mismatch` (a patron the report names, by his first and last name as the build read his row, or "
        "whose document it held, differs from the identity his events in the `patrons` stream registered as of the "
        "build: `patron`, `fields`, the names of the fields, never their values), `patron_not_as_recorded` (such a "
        "patron's row, as it stands, is not the identity his events record, a later audited change included: "
        "`patron`, `fields`, `in_books`). The reasons that name patrons (each `bets_mismatch` and "
        "`postings_mismatch` entry's `name`, a `coup_mismatch` punta's and a `record_mismatch` patron field's "
        "`names`) give the name his events in the `patrons` stream registered, not his row's (a row renamed in SQL "
        "is `patron_not_as_recorded`), with `name_of_record` (`names_of_record`, per side) false where no event "
        "registered him: his row's name then, which nothing holds; null where there is no name.",
    )


class ReportVerifyApi(IdempotentMixin, TakesNoBody, APIView):
    permission_classes = READ
    # A verification recomputes chains and file hashes: rate-limited per user (429 `throttled`).
    throttle_classes = (ScopedRateThrottle,)
    throttle_scope = "audit_verify"

    @extend_schema(
        summary="Verify a report: file checksums, the day's seal and its chains",
        description="Recomputes each stored file's SHA-256 against the stored checksum, the day's seal over the "
        "sealed streams against the seal in the report, and verifies those chains. **Writes nothing** "
        "(read-only transaction); a failed check is a 200 with `ok: false` and its reasons. "
        "409 `report_not_built` while the report is being built.",
        request=None,
        responses={
            200: ReportVerifyOutput,
            **_errors("", conflict="`report_not_built`."),
            429: THROTTLED_RESPONSE,
        },
    )
    def post(self, request, pk: int):
        report = get_object_or_404(DayReport, pk=pk)
        self.refuse_body()
        return Response(ReportVerifyOutput(report_verify(report=report)).data)


# --------------------------------------------------------------------------- cagnotte


class CagnotteCountOutput(serializers.Serializer):
    id = StrictIntegerField()
    gaming_day = StrictIntegerField(source="gaming_day_id")
    table = StrictIntegerField(source="table_id")
    expected = StrictIntegerField(help_text="Sum of the recorded levies (house postings), cents.")
    counted = StrictIntegerField()
    surplus = StrictIntegerField(help_text="Recorded as an extra levy.")
    shortfall = StrictIntegerField(help_text="Borne by the casino.")
    carried = StrictIntegerField(help_text="The higher of expected and counted: carried to the register.")
    tips = StrictIntegerField(
        allow_null=True,
        help_text="Tips (mance) counted in the table's tips box with the cagnotte, cents: the staff's (the tronc), "
        "never in expected, counted or carried. null: not counted with this count.",
    )
    counted_by = StrictIntegerField(source="counted_by_id")
    witness = StrictIntegerField(source="witness_id")
    counted_at = serializers.DateTimeField()
    note = serializers.CharField()
    corrects = StrictIntegerField(source="corrects_id", allow_null=True)


def _staff(pk: int):
    user = get_user_model().objects.filter(pk=pk, is_active=True).first()
    if user is None:
        raise ApplicationError("unknown_user", "No active user has this id.", details={"user": pk})
    return user


class CagnotteCountListApi(IdempotentMixin, APIView):
    permission_classes = BOOKS

    class CagnotteCountInput(StrictInput):
        table = StrictIntegerField(min_value=1)
        counted = StrictIntegerField(min_value=0, max_value=MAX_CENTS, help_text="Counted in the box, cents.")
        tips = StrictIntegerField(
            min_value=0, max_value=MAX_CENTS, required=False, allow_null=True, default=None,
            help_text="Tips (mance) counted in the table's tips box at the same time, cents. Omitted or null: not "
            "counted (said so wherever the count is shown, never read as 0); a correction can add them.",
        )  # fmt: skip
        witness = StrictIntegerField(min_value=1, help_text="The staff user present at the count.")
        note = serializers.CharField(max_length=300, required=False, allow_blank=True, default="")

    @extend_schema(
        summary="The cagnotte counts of a gaming day (all, corrections included)",
        description="Every count of the day, by table and in the order counted, not paginated: what the levies "
        "recorded (`expected`), what was counted, the surplus or shortfall, what is carried to the register, the "
        "tips (null: not counted), who counted and the witness. A correction names the count it corrects "
        "(`corrects`). The auditors, the Direzione and the Commissario read them (others 403 "
        "`permission_denied`); the Direzione alone enters a count (POST). 404 `not_found`: no such day.",
        responses={200: CagnotteCountOutput(many=True), **_errors("")},
    )
    def get(self, request, pk: int):
        day = floor_selectors.gaming_day_or_404(pk=pk)
        counts = CagnotteCount.objects.filter(gaming_day=day).order_by("table_id", "counted_at", "pk")
        return Response(CagnotteCountOutput(counts, many=True).data)

    @extend_schema(
        summary="Enter the counted cagnotte of a table (direzione, with a witness)",
        description="The table's cagnotte box and its tips box (the mance, RULES.md §6) are opened and counted "
        "together, before the same witness: `counted` is the cagnotte (the house's), `tips` the tips (the staff's, "
        "in no house figure: not in expected, counted, carried or the control register's total). A `counted` or "
        "`tips` that is not a whole number of cents from 0 to 10^12 is a 400 `invalid_input` naming it.",
        request=CagnotteCountInput,
        responses={201: CagnotteCountOutput, **_errors(
            "`witness_must_differ`, `witness_not_staff`, `witness_not_management` (the table staff may not witness), "
            "`table_not_played`, `unknown_table`, `unknown_user`",
            conflict="`day_not_closed`, `already_counted` (enter a correction).")},
    )  # fmt: skip
    def post(self, request, pk: int):
        data = self.CagnotteCountInput(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        day = floor_selectors.gaming_day_or_404(pk=pk)
        table = floor_selectors.table_get(pk=v["table"])
        if table is None:
            raise ApplicationError("unknown_table", "No table has this id.", details={"table": v["table"]})
        count = registers.cagnotte_count_record(gaming_day=day, table=table, by=request.user,
                                                witness=_staff(v["witness"]), counted=v["counted"],
                                                tips=v["tips"], note=v["note"])  # fmt: skip
        return Response(CagnotteCountOutput(count).data, status=status.HTTP_201_CREATED)


class CagnotteCountCorrectApi(IdempotentMixin, APIView):
    permission_classes = BOOKS

    class CagnotteCountCorrectInput(StrictInput):
        counted = StrictIntegerField(min_value=0, max_value=MAX_CENTS, required=False, allow_null=True, default=None,
                                     help_text="The cagnotte counted again, cents. Omitted or null: the corrected "
                                     "count's stands.")  # fmt: skip
        tips = StrictIntegerField(min_value=0, max_value=MAX_CENTS, required=False, allow_null=True, default=None,
                                  help_text="The tips (mance) counted again, cents. Omitted or null: the corrected "
                                  "count's stand (tips once counted are not un-counted).")  # fmt: skip
        witness = StrictIntegerField(min_value=1)
        note = serializers.CharField(max_length=300, help_text="Why the count is corrected.")

    @extend_schema(
        summary="Correct a count: a new count that refers to it",
        description="Corrects the counted cagnotte, the tips, or both (the tips alone: `tips` without `counted`); "
        "the figure not given is the corrected count's, restated in the new count. Neither: 400 "
        "`nothing_to_correct`. Correcting a count (its tips too) leaves a control register written before it "
        "behind: it is prepared again, or, signed, corrected. `note` (why) required (missing or blank: 400 "
        "`invalid_input` naming it; invisible characters only: 400 `reason_required`).",
        request=CagnotteCountCorrectInput,
        responses={201: CagnotteCountOutput, **_errors("`witness_must_differ`, `witness_not_management`, `reason_required` "
                                                       "(`note` of invisible characters only), `nothing_to_correct`",
                                                       conflict="`already_corrected`.")},
    )  # fmt: skip
    def post(self, request, pk: int):
        data = self.CagnotteCountCorrectInput(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        count = get_object_or_404(CagnotteCount, pk=pk)
        new = registers.cagnotte_count_correct(count=count, by=request.user, witness=_staff(v["witness"]),
                                               counted=v["counted"], tips=v["tips"], note=v["note"])  # fmt: skip
        return Response(CagnotteCountOutput(new).data, status=status.HTTP_201_CREATED)


class CagnotteRegisterApi(APIView):
    permission_classes = READ

    @extend_schema(
        summary="The cagnotte register of each table (art. 70-71)",
        description="Per table: sessions with opening and closing times, the croupiers and changeurs (art. 70: "
        "`croupiers` and `changeurs`, every one in turn with `from`, when he took over, the opening's first; "
        "`capo_partita` and `changeur`: those in place at the close), every minimum "
        "and maximum in force (`minimums`, `maximums`: `[{amount, from}]` in order, the opening's first, then one "
        "per change; amount in cents, null for no maximum), interruptions "
        "and resumptions (`interrupted_as`: whose suspension, `commissario` or `direzione`), shoes; each banker's coups played, separately, with the levy of every coup (not an annulled "
        "coup: the report lists those apart); the expected "
        "cagnotte (sum of the recorded levies) and the count in force (with its `tips`, the mance counted with the "
        "box: the staff's, null if not counted). Times in the casino's zone (Europe/Rome).",
        parameters=[OpenApiParameter("table", OpenApiTypes.INT, description="One table only.")],
        responses={200: OpenApiTypes.OBJECT, **_errors("")},
    )
    def get(self, request, pk: int):
        day = floor_selectors.gaming_day_or_404(pk=pk)
        table = _id_param(request, "table", "table is a table id.")
        tables = registers.cagnotte_register(gaming_day_id=day.pk, table_id=table)
        tables = _local_times(tables)  # the casino's zone, as the exports (not UTC's "Z")
        return Response({"gaming_day": day.pk, "date": day.date, "closed": not day.is_open, "tables": tables})


# --------------------------------------------------------------------------- control register


class ControlRegisterOutput(serializers.Serializer):
    id = StrictIntegerField()
    gaming_day = StrictIntegerField(source="gaming_day_id")
    status = serializers.CharField(help_text="draft, first_signed or signed.")
    corrects = StrictIntegerField(source="corrects_id", allow_null=True)
    reason = serializers.CharField()
    lines = LocalTimesJSONField(
        help_text="Per table, its sessions and figures as written (and signed); times in the casino's zone. A "
        "table that had unclaimed stakes or winnings deposited (RULES.md §6) has `unclaimed`: {count, stakes, "
        "winnings, total} in cents, apart from the cagnotte `total`. A table whose count recorded its tips (the "
        "mance) has `tips` in cents, never in its `carried` nor in `total`; a register written before tips were "
        "recorded has none."
    )
    total = StrictIntegerField(help_text="Cents.")
    tips_total = StrictIntegerField(
        allow_null=True,
        help_text="The day's tips (mance) on the lines, cents: the staff's, a figure apart from the cagnotte `total` "
        "and its words. null: no line says tips (written before they were recorded).",
    )
    total_words_it = serializers.CharField()
    total_words_en = serializers.CharField()
    prepared_by = StrictIntegerField(source="prepared_by_id")
    prepared_at = serializers.DateTimeField()
    first_signer = StrictIntegerField(source="first_signer_id", allow_null=True)
    first_signed_at = serializers.DateTimeField(allow_null=True)
    second_signer = StrictIntegerField(source="second_signer_id", allow_null=True)
    second_signed_at = serializers.DateTimeField(allow_null=True)
    agrees_with_counts = serializers.SerializerMethodField(
        help_text="false: a count was corrected since it was written; a signed register then needs a "
        "correction (POST .../correct/), an unsigned one preparing again."
    )

    def get_agrees_with_counts(self, reg) -> bool:
        return registers.register_agrees(reg)


class ControlRegisterApi(IdempotentMixin, TakesNoBody, APIView):
    permission_classes = BOOKS

    @extend_schema(
        summary="The control register in force for a gaming day (art. 72)",
        description="The day's register in force (the last correction, if any): its lines per table, the total "
        "in figures and in words, `status` (`draft`, `first_signed`, `signed`), who prepared and who signed it; "
        "`agrees_with_counts` is false when a count was corrected since it was written. The auditors, the "
        "Direzione and the Commissario (others 403 `permission_denied`). 404 `register_not_found` until the "
        "Direzione writes it (POST).",
        responses={
            200: ControlRegisterOutput,
            **_errors(""),
            404: OpenApiResponse(
                ErrorSerializer, description="`not_found` (no such day), `register_not_found` (not prepared yet)."
            ),
        },
    )
    def get(self, request, pk: int):
        day = floor_selectors.gaming_day_or_404(pk=pk)
        reg = registers.current_register(gaming_day_id=day.pk)
        if reg is None:
            raise ApplicationError("register_not_found", "The control register is not written yet.",
                                   details={"gaming_day": day.pk}, status_code=404)  # fmt: skip
        return Response(ControlRegisterOutput(reg).data)

    @extend_schema(
        summary="Write the control register from the counts, or bring an unsigned one up to date",
        description="The Direzione Giochi alone (others 403 `permission_denied`), once the gaming day is closed "
        "and every table's cagnotte counted: writes the day's register from the counts in force, or writes an "
        "unsigned one again. A register with its first signature only is written again only when a count was "
        "corrected since (that signature is then withdrawn, on record); a signed one never: 409 "
        "`register_signed`, correct it with POST /api/control-registers/{id}/correct/. Takes no body (a key in "
        "one: 400 `invalid_input` naming it). The 409 codes are listed below; 404 `not_found`: no such day.",
        request=None,
        responses={200: ControlRegisterOutput, **_errors(
            "", conflict="`day_not_closed`, `cagnotte_not_counted` (`tables`: the numbers of the tables not counted), `register_signed` (enter a correction), `levies_changed_since_count`, `count_not_as_recorded` (a count edited behind the services: `counts`, `tables`), `deposit_not_as_recorded` (an unclaimed deposit edited behind the services: `deposits`), `register_not_as_recorded` (a register of the day edited, written or deleted behind the services: `registers`).")},
    )  # fmt: skip
    def post(self, request, pk: int):
        day = floor_selectors.gaming_day_or_404(pk=pk)
        self.refuse_body()
        reg = registers.control_register_prepare(gaming_day=day, by=request.user)
        return Response(ControlRegisterOutput(reg).data)


class ControlRegisterSignApi(IdempotentMixin, TakesNoBody, APIView):
    permission_classes = BOOKS

    @extend_schema(
        summary="Sign the control register (two different direzione users)",
        description="The second signature makes the register final and enqueues the next report version.",
        request=None,
        responses={200: ControlRegisterOutput, **_errors(
            "", conflict="`already_signed`, `second_signer_must_differ`, `register_stale` (a count corrected or an unclaimed deposit recorded since it was written), `levies_changed_since_count`, `count_not_as_recorded`, `deposit_not_as_recorded`, `register_not_as_recorded` (`registers`).")},
    )  # fmt: skip
    def post(self, request, pk: int):
        reg = get_object_or_404(ControlRegister, pk=pk)
        self.refuse_body()
        return Response(ControlRegisterOutput(registers.control_register_sign(register=reg, by=request.user)).data)


class ControlRegisterCorrectApi(IdempotentMixin, APIView):
    permission_classes = BOOKS

    class ControlRegisterCorrectInput(StrictInput):
        reason = serializers.CharField(max_length=300)

    @extend_schema(
        summary="Correct a signed control register: a new register that refers to it",
        description="`reason` required (missing or blank: 400 `invalid_input` naming it; invisible characters only: "
        "400 `reason_required`).",
        request=ControlRegisterCorrectInput,
        responses={201: ControlRegisterOutput, **_errors(
            "`reason_required` (a reason of invisible characters only)", conflict="`register_not_signed`, `already_corrected`, `register_unchanged` (the signed register agrees with the counts in force), `cagnotte_not_counted` (`tables`), `levies_changed_since_count`, `count_not_as_recorded`, `deposit_not_as_recorded`, `register_not_as_recorded` (`registers`).")},
    )  # fmt: skip
    def post(self, request, pk: int):
        data = self.ControlRegisterCorrectInput(data=request.data)
        data.is_valid(raise_exception=True)
        reg = get_object_or_404(ControlRegister, pk=pk)
        new = registers.control_register_correct(register=reg, by=request.user, reason=data.validated_data["reason"])
        return Response(ControlRegisterOutput(new).data, status=status.HTTP_201_CREATED)


# --------------------------------------------------------------------------- unclaimed deposits


class DepositWrites(BasePermission):
    """Reads: auditor, direzione, commissario. A deposit: the Commissario (RULES.md §6)."""

    message = "Reading needs the auditor, direzione or commissario role; a deposit is the Commissario's."

    def has_permission(self, request, view) -> bool:
        if request.method in SAFE_METHODS:
            return has_role(request.user, *AUDIT_READERS)
        return has_role(request.user, *unclaimed.DEPOSIT_ROLES)


class ReturnWrites(BasePermission):
    message = "Handing back a deposit needs the commissario or direzione role."

    def has_permission(self, request, view) -> bool:
        return has_role(request.user, *unclaimed.RETURN_ROLES)


class UnclaimedDepositOutput(serializers.Serializer):
    id = StrictIntegerField()
    gaming_day = StrictIntegerField(source="gaming_day_id")
    session = StrictIntegerField(source="session_id")
    table_number = StrictIntegerField(source="session.table.number")
    session_number = StrictIntegerField(source="session.number")
    coup = StrictIntegerField(source="coup_id", allow_null=True)
    coup_number = StrictIntegerField(source="coup.number", allow_null=True, default=None)
    patron = StrictIntegerField(source="patron_id", allow_null=True)
    kind = serializers.ChoiceField(choices=UnclaimedDeposit.Kind.choices, help_text="stake (puntata) or winnings (vincita).")
    amount = StrictIntegerField(help_text="Cents.")
    deposited_in = serializers.CharField(help_text="Where it was deposited: envelope or receipt number.")
    note = serializers.CharField()
    recorded_by = StrictIntegerField(source="recorded_by_id")
    recorded_at = serializers.DateTimeField()
    returned = serializers.BooleanField(help_text="Handed back to the patron.")
    returned_to = serializers.CharField()
    returned_patron = StrictIntegerField(source="returned_patron_id", allow_null=True)
    returned_note = serializers.CharField()
    returned_by = StrictIntegerField(source="returned_by_id", allow_null=True)
    returned_at = serializers.DateTimeField(allow_null=True)


class UnclaimedDepositFilter(StrictFilterSet):
    gaming_day = IdFilter(field_name="gaming_day_id", help_text="Only this gaming day's deposits.")
    session = IdFilter(field_name="session_id", help_text="Only this table session's deposits.")
    patron = IdFilter(field_name="patron_id", help_text="Only the deposits of this patron.")
    returned = StrictBooleanFilter(
        field_name="returned_at", lookup_expr="isnull", exclude=True,
        help_text="true: handed back; false: still outstanding.",
    )  # fmt: skip

    class Meta:
        model = UnclaimedDeposit
        fields: list[str] = []


class UnclaimedDepositListApi(ListAPIView):
    permission_classes = READ
    serializer_class = UnclaimedDepositOutput
    filterset_class = UnclaimedDepositFilter

    def get_queryset(self):
        return unclaimed.deposit_list()

    @extend_schema(
        summary="List the unclaimed stakes and winnings deposited (RULES.md §6)",
        description="In the order they were recorded. Paginated (`page`, `page_size`). Filters: `gaming_day`, "
        "`session` and `patron` (ids) and `returned` (`true`: handed back; `false`: still outstanding); a "
        "bad value is a 400 naming it. Read by the auditors, the Direzione and the Commissario.",
        responses={200: UnclaimedDepositOutput(many=True), **_errors("")},
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


def _patron(pk: int | None):
    if pk is None:
        return None
    patron = floor_selectors.patron_get(pk=pk)
    if patron is None:
        raise ApplicationError("unknown_patron", "No patron has this id.", details={"patron": pk})
    return patron


class UnclaimedDepositCreateApi(IdempotentMixin, APIView):
    permission_classes = [IsAuthenticated, DepositWrites]

    class UnclaimedDepositInput(StrictInput):
        session = StrictIntegerField(min_value=1, help_text="The table session (of this gaming day).")
        kind = serializers.ChoiceField(choices=UnclaimedDeposit.Kind.choices, help_text="stake (puntata) or winnings (vincita).")
        amount = StrictIntegerField(min_value=1, max_value=unclaimed.MAX_DEPOSIT_CENTS, help_text="Cents.")
        deposited_in = serializers.CharField(max_length=120, help_text="Where: envelope or cash-desk receipt number.")
        note = serializers.CharField(max_length=300, required=False, allow_blank=True, default="")
        coup = StrictIntegerField(min_value=1, required=False, allow_null=True, default=None,
                                  help_text="The coup it was left on, when known (of this session).")
        patron = StrictIntegerField(min_value=1, required=False, allow_null=True, default=None,
                                    help_text="The patron it belongs to, when known.")

    @extend_schema(
        summary="Record an unclaimed stake or winnings deposited (the Commissario)",
        description="Collected by the Commissario and deposited (RULES.md §6); recorded in the day's books, "
        "so the control register carries it.",
        request=UnclaimedDepositInput,
        responses={201: UnclaimedDepositOutput, **_errors(
            "`unknown_session`, `session_not_of_day`, `unknown_coup`, `coup_not_of_session`, `unknown_patron`, "
            "`invalid_amount`, `unknown_kind`, `deposit_place_required`, `text_too_long`",
            conflict="`books_signed` (the day's control register carries both signatures), `coup_in_play`.")},
    )  # fmt: skip
    def post(self, request, pk: int):
        data = self.UnclaimedDepositInput(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        day = floor_selectors.gaming_day_or_404(pk=pk)
        session = floor_selectors.table_session_get(pk=v["session"])
        if session is None:
            raise ApplicationError("unknown_session", "No table session has this id.", details={"session": v["session"]})
        coup = None
        if v["coup"] is not None:
            coup = report_selectors.coup_get(pk=v["coup"])
            if coup is None:
                raise ApplicationError("unknown_coup", "No coup has this id.", details={"coup": v["coup"]})
        deposit = unclaimed.unclaimed_deposit_record(
            gaming_day=day, session=session, by=request.user, kind=v["kind"], amount=v["amount"],
            deposited_in=v["deposited_in"], note=v["note"], coup=coup, patron=_patron(v["patron"]),
        )  # fmt: skip
        deposit = unclaimed.deposit_list().get(pk=deposit.pk)
        return Response(UnclaimedDepositOutput(deposit).data, status=status.HTTP_201_CREATED)


class UnclaimedDepositReturnApi(IdempotentMixin, APIView):
    permission_classes = [IsAuthenticated, ReturnWrites]

    class UnclaimedDepositReturnInput(StrictInput):
        returned_to = serializers.CharField(max_length=200, required=False, allow_blank=True, default="",
                                            help_text="Who was handed it (name, document): the patron's name if blank.")
        patron = StrictIntegerField(min_value=1, required=False, allow_null=True, default=None,
                                    help_text="The patron who claimed it, when on record.")
        note = serializers.CharField(max_length=300, required=False, allow_blank=True, default="")

    @extend_schema(
        summary="Hand a deposit back to the patron who claims it (Commissario or Direzione), once",
        description="Records that an unclaimed stake or winnings deposited is handed back: to a patron on "
        "record (`patron`), or to the person named in `returned_to` (the patron's name when blank); one of "
        "the two is required (400 `claimant_required`). The Commissario or the Direzione Giochi (others 403 "
        "`permission_denied`). Once: a deposit handed back already is a 409 `already_returned`. 404 "
        "`not_found`: no such deposit.",
        request=UnclaimedDepositReturnInput,
        responses={200: UnclaimedDepositOutput, **_errors(
            "`claimant_required` (neither a patron nor a name), `unknown_patron`, `text_too_long`",
            conflict="`already_returned`.")},
    )  # fmt: skip
    def post(self, request, pk: int):
        data = self.UnclaimedDepositReturnInput(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        deposit = get_object_or_404(UnclaimedDeposit, pk=pk)
        deposit = unclaimed.unclaimed_deposit_return(deposit=deposit, by=request.user, returned_to=v["returned_to"],
                                                     patron=_patron(v["patron"]), note=v["note"])  # fmt: skip
        return Response(UnclaimedDepositOutput(unclaimed.deposit_list().get(pk=deposit.pk)).data)
