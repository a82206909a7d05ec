"""The changeur's register over HTTP: the cash exchanged for chips at a table, and back
(RULES.md §6; tables.services.cash says the rules, the anti-money-laundering ones included).

- Reads (the register, its totals): whoever reads the session (floor.permissions.
  session_readable_by: the supervisors and auditors, any table; the table staff, the
  sessions they work or worked at; 403 `permission_denied` for another, 404 for none).
- An exchange: only the changeur assigned to the session, holding the role now (403
  `permission_denied` for anyone else, a changeur of another table included).
- A void: the changeur who recorded the line while he serves the session, or the Commissario
  di Gioco (403 `permission_denied` for another role or table, `not_exchange_recorder` for
  the session's changeur voiding a line his predecessor recorded).
- The drawer's count, once the session is closed, and the relieved changeur's at his handover
  (tables.services.cash_count): the Commissario di Gioco or the Direzione Giochi counts and
  corrects (403 `permission_denied` for the changeur, the Capo Partita, the auditor), while the
  day is open and after its close until its control register is signed by both (409
  `books_signed`); whoever reads the register reads it.
- Every POST requires an `Idempotency-Key` (floor/idempotency.py): money moves."""

from __future__ import annotations

from django.conf import settings
from django.shortcuts import get_object_or_404
from django.urls import path
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.generics import GenericAPIView
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.response import Response

from config.api import READ_ERRORS, WRITE_ERRORS, ErrorSerializer, StrictInput, StrictIntegerField
from floor.idempotency import IdempotentMixin
from floor.models import TableSession
from floor.permissions import FLOOR_READERS, RolePermission, _session_of, check_session_readable
from floor.roles import Role, has_role
from tables import selectors, services
from tables.models import MAX_EXCHANGE_CENTS, CashCount, CashExchange
from tables.services import locked_session
from tables.services.cash import VOIDS_ANY
from tables.services.cash_count import COUNTS_DRAWER

from .coups_serializers import PatronField

# --------------------------------------------------------------------------- serializers


class CashExchangeInput(StrictInput):
    direction = serializers.ChoiceField(
        choices=CashExchange.Direction.choices, help_text="`buy_in`: cash for chips; `cash_out`: chips for cash."
    )
    amount = StrictIntegerField(
        min_value=1, max_value=MAX_EXCHANGE_CENTS, help_text=f"Cents, 1 to {MAX_EXCHANGE_CENTS}."
    )
    patron = PatronField(
        required=False,
        allow_null=True,
        default=None,
        help_text="The patron, holding (or having held) a place at the session. Required at the identification "
        "threshold (AML_IDENTIFY_CENTS), alone or with the linked exchanges.",
    )


class CashVoidInput(StrictInput):
    reason = serializers.CharField(max_length=200, help_text="Why the line is voided (a mistaken amount...).")


class CashPatronSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()


class CashExchangeSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    session = serializers.IntegerField(source="session_id")
    number = serializers.IntegerField(help_text="1, 2, ... in the session: the register's line.")
    direction = serializers.ChoiceField(choices=CashExchange.Direction.choices)
    amount = serializers.IntegerField(help_text="Cents.")
    patron = serializers.SerializerMethodField()
    linked_total = serializers.IntegerField(
        help_text="Cents: the exchanges linked with this one when it was recorded (the patron's in the session, "
        "or the session's unnamed ones), not voided, both directions, this one included."
    )
    identification_required = serializers.BooleanField(
        help_text="The amount or the linked total reached the identification threshold: the patron is named."
    )
    at = serializers.DateTimeField()
    recorded_by = serializers.IntegerField(source="by_id")
    voided = serializers.BooleanField()
    voided_at = serializers.DateTimeField(allow_null=True)
    voided_by = serializers.IntegerField(source="voided_by_id", allow_null=True)
    void_reason = serializers.CharField()

    @extend_schema_field(CashPatronSerializer(allow_null=True))
    def get_patron(self, row: CashExchange) -> dict | None:
        return None if row.patron is None else {"id": row.patron.pk, "name": row.patron.full_name}


class CashTotalsSerializer(serializers.Serializer):
    session = serializers.IntegerField()
    buy_ins = serializers.IntegerField(help_text="Cents of cash taken for chips (voided lines left out).")
    cash_outs = serializers.IntegerField(help_text="Cents of cash paid for chips.")
    net = serializers.IntegerField(help_text="buy_ins - cash_outs: the cash the table took, cents.")
    count = serializers.IntegerField(help_text="Lines standing.")
    voided = serializers.IntegerField(help_text="Lines voided.")
    unnamed = serializers.IntegerField(
        help_text="Cents of the standing lines without a patron: linked together, they stop at the threshold."
    )
    threshold = serializers.IntegerField(help_text="AML_IDENTIFY_CENTS: the identification threshold, cents.")


class CashAnswerSerializer(serializers.Serializer):
    exchange = CashExchangeSerializer()
    totals = CashTotalsSerializer()


def totals_data(session_id: int) -> dict:
    return {"session": session_id, **selectors.cash_exchange_totals(session=session_id),
            "threshold": settings.AML_IDENTIFY_CENTS}  # fmt: skip


def _answer(row: CashExchange, code: int) -> Response:
    row = selectors.cash_exchange_list(session=row.session_id).get(pk=row.pk)
    return Response({"exchange": CashExchangeSerializer(row).data, "totals": totals_data(row.session_id)}, status=code)


# --------------------------------------------------------------------------- permissions


def serves_as_changeur(user, session) -> bool:
    return session.changeur_id == user.pk and has_role(user, Role.CHANGEUR)


class CashRegisterAccess(BasePermission):
    """Reads: any floor role reaches the view, which then asks session_readable_by. Writes: an
    exchange the session's changeur; a void the session's changeur or the Commissario (the
    service then tells the recorder's line from his predecessor's)."""

    message = "Only the changeur assigned to this table session records its cash exchanges."

    def has_permission(self, request, view) -> bool:
        user = request.user
        if not (user and user.is_authenticated):
            return False
        if not hasattr(view, request.method.lower()):
            return True
        if request.method in SAFE_METHODS:
            return has_role(user, *FLOOR_READERS)
        return has_role(user, Role.CHANGEUR, *getattr(view, "also_writes", ()))

    def has_object_permission(self, request, view, obj) -> bool:
        session = _session_of(obj)
        if request.method in SAFE_METHODS:
            return True  # (the views call check_session_readable)
        if has_role(request.user, *getattr(view, "also_writes", ())):
            return True
        return serves_as_changeur(request.user, session)


WRITE_NOTE = (
    "\n\nRequires an `Idempotency-Key`. Refusals common to the register: `session_closed` (409: the "
    "session's totals went into its close), `not_session_changeur` (403)."
)


class _CashApi(IdempotentMixin, GenericAPIView):
    permission_classes = (CashRegisterAccess,)
    idempotency_required = True


class CashExchangeListApi(_CashApi):
    serializer_class = CashExchangeSerializer

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return CashExchange.objects.none()
        return selectors.cash_exchange_list(session=get_object_or_404(TableSession, pk=self.kwargs["pk"]))

    @extend_schema(
        responses={200: CashExchangeSerializer(many=True), **READ_ERRORS},
        summary="The changeur's register of a session: its cash exchanges, in order",
        description="Paginated (`page`, `page_size`); voided lines included (`voided`, with who, when and "
        "why). The totals: `GET .../cash-exchanges/totals/`. A constant number of queries, however many lines.",
    )
    def get(self, request, pk: int):
        check_session_readable(request.user, pk)
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(CashExchangeSerializer(page, many=True).data)

    @extend_schema(
        request=CashExchangeInput,
        responses={
            201: CashAnswerSerializer,
            **WRITE_ERRORS,
            400: OpenApiResponse(
                ErrorSerializer,
                description="`patron_required`: the amount, or the linked total (the session's unnamed "
                "exchanges with this one: `details.linked` true), reaches the identification threshold "
                "(`details.threshold`, AML_IDENTIFY_CENTS) and no patron is named; `patron_not_at_table`; "
                "`bad_amount`, `exchange_above_maximum`, `bad_direction`.",
            ),
        },
        summary="Record a cash exchange at the table (the session's changeur)",
        description="`buy_in`: the patron's cash for the house's chips; `cash_out`: his chips for cash. A "
        "named patron's exchanges in the session are linked (anti-money laundering, EU AMLD art. 11(d)): "
        "the line keeps their sum with it (`linked_total`) and says whether the patron had to be named "
        "(`identification_required`). Allowed while play is interrupted." + WRITE_NOTE,
    )
    def post(self, request, pk: int):
        try:
            session = locked_session(pk)  # locked once, here; the service takes it as locked
        except TableSession.DoesNotExist:
            raise NotFound() from None
        self.check_object_permissions(request, session)
        data = CashExchangeInput(data=request.data)
        data.is_valid(raise_exception=True)
        row = services.cash_exchange_record(session=session, by=request.user, **data.validated_data)
        return _answer(row, status.HTTP_201_CREATED)


class CashTotalsApi(GenericAPIView):
    permission_classes = (CashRegisterAccess,)

    @extend_schema(
        responses={200: CashTotalsSerializer, **READ_ERRORS},
        summary="The register's totals of a session: buy-ins, cash-outs, net",
        description="Voided lines left out. `unnamed`: what the standing lines without a patron come to, "
        "linked together: an exchange that would bring them to the `threshold` names its patron.",
    )
    def get(self, request, pk: int):
        check_session_readable(request.user, pk)
        get_object_or_404(TableSession.objects.only("pk"), pk=pk)
        return Response(totals_data(pk))


class CashVoidApi(_CashApi):
    also_writes = VOIDS_ANY

    @extend_schema(
        request=CashVoidInput,
        responses={
            200: CashAnswerSerializer,
            **WRITE_ERRORS,
            403: OpenApiResponse(
                ErrorSerializer,
                description="`not_exchange_recorder`: the session's changeur voids only the lines he recorded "
                "(his predecessor's, the Commissario voids).",
            ),
            409: OpenApiResponse(
                ErrorSerializer, description="`exchange_already_voided`: voided once; `session_closed`."
            ),
        },
        summary="Void a mistaken line of the register (its changeur, or the Commissario), once",
        description="The line stays in the register, voided, with who, when and why; its amount leaves the "
        "totals and the linked sums. `reason` required (missing or blank: 400 `invalid_input` naming it; "
        "invisible characters only: 400 `reason_required`). Codes: `text_too_long`, `exchange_already_voided` "
        "(409), `not_exchange_recorder` (403)." + WRITE_NOTE,
    )
    def post(self, request, pk: int):
        row = get_object_or_404(CashExchange.objects.select_related("session"), pk=pk)
        self.check_object_permissions(request, row)
        data = CashVoidInput(data=request.data)
        data.is_valid(raise_exception=True)
        row = services.cash_exchange_void(exchange=row, by=request.user, reason=data.validated_data["reason"])
        return _answer(row, status.HTTP_200_OK)


# --------------------------------------------------------------------------- the drawer's count


class CashCountInput(StrictInput):
    float_issued = StrictIntegerField(
        min_value=0, max_value=MAX_EXCHANGE_CENTS,
        help_text=f"Cents, 0 to {MAX_EXCHANGE_CENTS}: the cash float the drawer started with (the float slip; 0: none).",
    )  # fmt: skip
    counted = StrictIntegerField(
        min_value=0,
        max_value=MAX_EXCHANGE_CENTS,
        help_text=f"Cents, 0 to {MAX_EXCHANGE_CENTS}: the cash found.",
    )
    chips_float = StrictIntegerField(
        min_value=0, max_value=MAX_EXCHANGE_CENTS, required=False, allow_null=True, default=None,
        help_text=f"Cents, 0 to {MAX_EXCHANGE_CENTS}: the chips' value the changeur's tray started with (the float "
        "slip). With `chips_counted`, or neither (omitted or null: the chips not counted).",
    )  # fmt: skip
    chips_counted = StrictIntegerField(
        min_value=0, max_value=MAX_EXCHANGE_CENTS, required=False, allow_null=True, default=None,
        help_text=f"Cents, 0 to {MAX_EXCHANGE_CENTS}: the chips' value found in the tray. With `chips_float`, or "
        "neither.",
    )  # fmt: skip
    note = serializers.CharField(max_length=300, required=False, allow_blank=True, default="")
    staff_change = StrictIntegerField(
        min_value=1, max_value=2**63 - 1, required=False, allow_null=True, default=None,
        help_text="A changeur's handover: the id of the session's staff change that relieved the changeur; the "
        "drawer he handed over is counted, held to the register's lines recorded up to the change. Omitted or "
        "null: the session's final count (the session closed).",
    )  # fmt: skip


class CashCountCorrectInput(StrictInput):
    float_issued = StrictIntegerField(
        min_value=0, max_value=MAX_EXCHANGE_CENTS, required=False, allow_null=True, default=None,
        help_text="The float, cents. Omitted or null: the corrected count's stands.",
    )  # fmt: skip
    counted = StrictIntegerField(
        min_value=0, max_value=MAX_EXCHANGE_CENTS, required=False, allow_null=True, default=None,
        help_text="The cash counted again, cents. Omitted or null: the corrected count's stands.",
    )  # fmt: skip
    chips_float = StrictIntegerField(
        min_value=0, max_value=MAX_EXCHANGE_CENTS, required=False, allow_null=True, default=None,
        help_text="The chips' float, cents. Omitted or null: the corrected count's stands (a count without chips: "
        "none, unless `chips_counted` is given too).",
    )  # fmt: skip
    chips_counted = StrictIntegerField(
        min_value=0, max_value=MAX_EXCHANGE_CENTS, required=False, allow_null=True, default=None,
        help_text="The chips counted again, cents. Omitted or null: the corrected count's stands (a count without "
        "chips: none, unless `chips_float` is given too).",
    )  # fmt: skip
    reason = serializers.CharField(
        max_length=300, help_text="Why the count is corrected (kept as its `note`)."
    )


class CashCountSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    session = serializers.IntegerField(source="session_id")
    float_issued = serializers.IntegerField(help_text="Cents: the float the drawer started with.")
    net = serializers.IntegerField(
        help_text="Cents: the register's net cash taken when counted (voids left out)."
    )
    expected = serializers.IntegerField(help_text="Cents: float_issued + net.")
    counted = serializers.IntegerField(help_text="Cents: the cash found in the drawer.")
    difference = serializers.IntegerField(
        help_text="Cents: counted - expected (a surplus > 0, a shortfall < 0)."
    )
    chips_float = serializers.IntegerField(
        allow_null=True, help_text="Cents: the chips' value the tray started with; null: chips not counted."
    )
    chips_expected = serializers.IntegerField(
        allow_null=True,
        help_text="Cents: chips_float - net (the chips handed out are the cash taken; below 0 only when the float "
        "slip or the register is wrong); null: chips not counted.",
    )
    chips_counted = serializers.IntegerField(
        allow_null=True, help_text="Cents: the chips' value found in the tray; null: chips not counted."
    )
    chips_difference = serializers.IntegerField(
        allow_null=True,
        help_text="Cents: chips_counted - chips_expected (a surplus > 0, a shortfall < 0); null: chips not counted.",
    )
    counted_by = serializers.IntegerField(source="counted_by_id")
    counted_by_name = serializers.SerializerMethodField()
    counted_at = serializers.DateTimeField()
    note = serializers.CharField(help_text="A note; a correction's reason.")
    corrects = serializers.IntegerField(
        source="corrects_id", allow_null=True, help_text="The count it corrects."
    )
    corrected_by = serializers.IntegerField(
        source="superseded_by_id", allow_null=True, help_text="The count that corrects it (null: in force)."
    )
    in_force = serializers.BooleanField()
    staff_change = serializers.IntegerField(
        source="staff_change_id", allow_null=True,
        help_text="A changeur's handover count: the staff change that relieved him; null: the final count.",
    )  # fmt: skip
    handover_at = serializers.DateTimeField(
        source="staff_change.at", allow_null=True, default=None,
        help_text="The handover's time (the register's lines up to it are in `net`); null: the final count.",
    )  # fmt: skip
    outgoing_changeur = serializers.IntegerField(
        source="staff_change.old_changeur_id", allow_null=True, default=None,
        help_text="The changeur relieved, whose drawer this is; null: the final count.",
    )  # fmt: skip
    since_staff_change = serializers.IntegerField(
        source="since_staff_change_id", allow_null=True,
        help_text="The last handover counted before this count (its staff change); null: none.",
    )  # fmt: skip
    since_handover = serializers.IntegerField(
        allow_null=True,
        help_text="Cents, derived: the part of `difference` that arose after that handover (this difference less "
        "the handover's count in force's: each count holds the whole drawer since the float slip); null: no "
        "handover counted before it.",
    )
    chips_since_handover = serializers.IntegerField(
        allow_null=True,
        help_text="Cents, derived: the part of `chips_difference` that arose after that handover; null: no handover "
        "counted before it, or the chips not counted in this count or in that handover's.",
    )

    def get_counted_by_name(self, row: CashCount) -> str:
        return row.counted_by.get_full_name() or row.counted_by.get_username()


class CashCountAnswerSerializer(serializers.Serializer):
    session = serializers.IntegerField()
    in_force = CashCountSerializer(
        allow_null=True, help_text="The final count in force (the session closed); null: not counted."
    )
    handovers = CashCountSerializer(
        many=True, help_text="The changeur's handovers counted: each one's count in force, in the handovers' order."
    )
    history = CashCountSerializer(
        many=True, help_text="Every count, the handovers' and the final, oldest first, the corrected ones included."
    )


def count_data(session_id: int) -> dict:
    history = selectors.cash_count_history(session=session_id)
    in_force = next((row for row in history if row.in_force and row.staff_change_id is None), None)
    handovers = sorted(
        (row for row in history if row.in_force and row.staff_change_id is not None),
        key=lambda row: (row.staff_change.at, row.staff_change_id),
    )
    return CashCountAnswerSerializer(
        {"session": session_id, "in_force": in_force, "handovers": handovers, "history": history}
    ).data


class DrawerCountAccess(RolePermission):
    """Reads: any floor role reaches the view, which then asks session_readable_by (whoever
    reads the register). Writes: the Commissario di Gioco or the Direzione Giochi."""

    message = "Only the Commissario di Gioco or the Direzione Giochi counts a table's drawer."
    write_roles = COUNTS_DRAWER


COUNT_NOTE = (
    "\n\nRequires an `Idempotency-Key`. The Commissario di Gioco or the Direzione Giochi only (403 "
    "`permission_denied` for the changeur, the Capo Partita, the auditor). While the gaming day is open, its "
    "event goes to the session's stream; once the day is closed (a drawer counted late), to the day's books "
    "stream `day_books:<day id>`, and the report version the control register's second signature asks for "
    "lists it. Refused once the day's control register in force carries both signatures (409 `books_signed`: "
    "its books are final; a correction of the register, until its own two signatures, allows it again). A "
    f"figure that is not a whole number of cents from 0 to {MAX_EXCHANGE_CENTS} (the register's maximum) is a "
    "400 `invalid_input` naming it."
)


class _DrawerApi(IdempotentMixin, GenericAPIView):
    permission_classes = (DrawerCountAccess,)
    idempotency_required = True


class CashCountApi(_DrawerApi):
    @extend_schema(
        responses={200: CashCountAnswerSerializer, **READ_ERRORS},
        summary="The count of a session's cash drawer: the count in force and its history",
        description="Whoever reads the session's register reads it. `in_force` null: not counted (yet). A "
        "constant number of queries, however many corrections.",
    )
    def get(self, request, pk: int):
        check_session_readable(request.user, pk)
        get_object_or_404(TableSession.objects.only("pk"), pk=pk)
        return Response(count_data(pk))

    @extend_schema(
        request=CashCountInput,
        responses={
            201: CashCountAnswerSerializer,
            **WRITE_ERRORS,
            409: OpenApiResponse(
                ErrorSerializer,
                description="`session_not_closed`: the final count is taken once the session is closed (a "
                "handover's from its staff change on); `already_counted`: one count per session's final drawer and "
                "one per handover (`details.in_force`: correct it); `books_signed`: the day's control register is "
                "signed by both.",
            ),
        },
        summary="Count a closed session's cash drawer, or a changeur's at his handover (Commissario or Direzione)",
        description="The float the drawer started with and the cash found in it; the server computes `net` "
        "(the register's net cash taken, voided lines left out, as its totals), `expected` = float_issued + net "
        "and `difference` = counted - expected (a surplus > 0, a shortfall < 0). The chips, optionally, mirror "
        "the cash: `chips_float` (the tray's chips on the float slip) and `chips_counted` (found in the tray), "
        "both or neither (400 `chips_incomplete`, `details.field` naming the one missing); the server computes "
        "`chips_expected` = chips_float - net (a chips float below the chips handed out is recorded, not "
        "refused: the difference shows it) and `chips_difference` = chips_counted - chips_expected. Written with "
        "its event `cash.drawer_counted` (its payload has the chips' figures only when they were counted). "
        "A changeur's handover: `staff_change` names the session's staff change that relieved him; the count is "
        "taken from that change on, the session running or closed, and its `net` holds the register's lines "
        "recorded up to the change (their `at` at or before the change's); its event's payload names the "
        "`staff_change`. 400 `unknown_staff_change`: no such change at this session; 400 `changeur_not_changed`: "
        "the change kept the changeur. The final count stays the whole session's drawer; `since_handover` says "
        "the part of its difference that arose after the last handover counted. "
        "Codes: `text_too_long`." + COUNT_NOTE,
    )
    def post(self, request, pk: int):
        if not TableSession.objects.filter(pk=pk).exists():
            raise NotFound()
        data = CashCountInput(data=request.data)
        data.is_valid(raise_exception=True)
        services.cash_count_record(session=pk, by=request.user, **data.validated_data)
        return Response(count_data(pk), status=status.HTTP_201_CREATED)


class CashCountCorrectApi(_DrawerApi):
    @extend_schema(
        request=CashCountCorrectInput,
        responses={
            201: CashCountAnswerSerializer,
            **WRITE_ERRORS,
            409: OpenApiResponse(
                ErrorSerializer,
                description="`already_corrected`: this count was corrected (`details.in_force`: correct that "
                "one); `books_signed`: the day's control register is signed by both.",
            ),
        },
        summary="Correct a drawer's count: a new count that refers to it, with its reason",
        description="Nothing is edited: the corrected count stays in the history, the new one is in force. A "
        "figure not given is the corrected count's, restated; none given, or all as they stand: 400 "
        "`nothing_to_correct`. Chips once counted stay counted; a count without chips may take them in its "
        "correction, both `chips_float` and `chips_counted` then (400 `chips_incomplete`). `reason` required "
        "(missing or blank: 400 `invalid_input` naming it; invisible characters only: 400 `reason_required`). Written with its event `cash.drawer_count_corrected` (the old and "
        "the new figures; the chips' in each payload only when that count counted them)." + COUNT_NOTE,
    )
    def post(self, request, pk: int):
        count = get_object_or_404(CashCount.objects.only("pk", "session_id"), pk=pk)
        data = CashCountCorrectInput(data=request.data)
        data.is_valid(raise_exception=True)
        new = services.cash_count_correct(count=count, by=request.user, **data.validated_data)
        return Response(count_data(new.session_id), status=status.HTTP_201_CREATED)


urlpatterns = [
    path("sessions/<int:pk>/cash-exchanges/", CashExchangeListApi.as_view(), name="session-cash-exchanges"),
    path("sessions/<int:pk>/cash-exchanges/totals/", CashTotalsApi.as_view(), name="session-cash-totals"),
    path("cash-exchanges/<int:pk>/void/", CashVoidApi.as_view(), name="cash-exchange-void"),
    path("sessions/<int:pk>/cash-count/", CashCountApi.as_view(), name="session-cash-count"),
    path("cash-counts/<int:pk>/correct/", CashCountCorrectApi.as_view(), name="cash-count-correct"),
]
