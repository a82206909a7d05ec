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
from floor.permissions import FLOOR_READERS, _session_of, check_session_readable
from floor.roles import Role, has_role
from tables import selectors, services
from tables.models import MAX_EXCHANGE_CENTS, CashExchange
from tables.services import locked_session
from tables.services.cash import VOIDS_ANY

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
        description="Paginated; voided lines included (`voided`, with who, when and why). The totals: "
        "`GET .../cash-exchanges/totals/`. A constant number of queries, however many lines.",
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
        "totals and the linked sums. Codes: `reason_required`, `text_too_long`, `exchange_already_voided` "
        "(409), `not_exchange_recorder` (403)." + WRITE_NOTE,
    )
    def post(self, request, pk: int):
        row = get_object_or_404(CashExchange.objects.select_related("session"), pk=pk)
        self.check_object_permissions(request, row)
        data = CashVoidInput(data=request.data)
        data.is_valid(raise_exception=True)
        row = services.cash_exchange_void(exchange=row, by=request.user, reason=data.validated_data["reason"])
        return _answer(row, status.HTTP_200_OK)


urlpatterns = [
    path("sessions/<int:pk>/cash-exchanges/", CashExchangeListApi.as_view(), name="session-cash-exchanges"),
    path("sessions/<int:pk>/cash-exchanges/totals/", CashTotalsApi.as_view(), name="session-cash-totals"),
    path("cash-exchanges/<int:pk>/void/", CashVoidApi.as_view(), name="cash-exchange-void"),
]
