"""The floor's HTTP API. Views are thin: parse the input, authorize (permission classes),
call ONE service, render. A serializer checks shape; the service checks meaning."""

from __future__ import annotations

from django.contrib.auth import authenticate, get_user_model, logout
from django.db import transaction
from django.shortcuts import get_object_or_404
from django.utils.timezone import localtime
from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.generics import GenericAPIView
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api import (
    ERROR_RESPONSE,
    LIST_ERRORS,
    PAGINATED,
    READ_ERRORS,
    WRITE_ERRORS,
    IdField,
    StrictBooleanField,
    StrictDateField,
    StrictInput,
    StrictIntegerField,
    TakesNoBody,
)
from config.errors import ApplicationError

from . import selectors, services
from .auth import TooManyFailedLogins, client_address, login_blocked, login_failed, login_succeeded
from .authentication import issue_token
from .filters import GamingDayFilter, PatronFilter, SeatFilter, TableFilter, TableSessionFilter
from .idempotency import IdempotentMixin
from .mfa import SecondFactorRefused, check_second_factor, recovery_codes_left_after, second_factor_failed
from .models import (
    MAX_STAKE_CENTS,
    PROFILE_CHOICES,
    ROUNDING_CHOICES,
    ApiToken,
    Casino,
    GamingDay,
    Patron,
    Seat,
    Site,
    Table,
    TableSession,
)
from .permissions import (
    CanReadFloor,
    CommissarioWrites,
    DirezioneWrites,
    SuspendsPlay,
    check_session_readable,
    readable_sessions,
)
from .roles import has_role
from .security import security_event
from .serializers import (
    IDENTITY_READERS,
    CasinoSerializer,
    GamingDaySerializer,
    MeSerializer,
    MinimumChangeSerializer,
    PatronSerializer,
    SeatSerializer,
    StaffChangeSerializer,
    TableSerializer,
    TableSessionDetailSerializer,
    TableSessionSerializer,
    TokenOutputSerializer,
)

User = get_user_model()

# Amounts are cents in a PostgreSQL integer column: bound them in the serializer so an
# absurd number is a 400, never a database error.
MAX_CENTS = MAX_STAKE_CENTS

_E = ERROR_RESPONSE  # for the few endpoints that document other statuses (400, 429)


class _ListApi(GenericAPIView):
    """GET: the selector's queryset, filtered and paginated."""

    output_serializer: type[serializers.Serializer]

    def list_response(self) -> Response:
        queryset = self.filter_queryset(self.get_queryset())
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response(self.output_serializer(page, many=True, context=self.output_context()).data)

    def output_context(self) -> dict:
        return {}


def _session_detail(session: TableSession) -> dict:
    # Re-read through the selector: the service's object lacks the prepared counts.
    return TableSessionDetailSerializer(selectors.table_session_detail().get(pk=session.pk)).data


# --------------------------------------------------------------------------- auth

# Try it out starts from the first: the README's login, without `otp`. Where MFA is on, an `otp`
# sent wrongly (Swagger's made-up "string") counts as a failed login for the throttle.
TOKEN_LOGIN_EXAMPLES = [
    OpenApiExample(
        "Username and password",
        description="The README's login on the demo floor (`make run`, whose MFA_ROLES is none): no `otp`. "
        "A role that MFA_ROLES does not name never sends one.",
        value={"username": "commissario", "password": "chemin-demo-commissario"},
        request_only=True,
    ),
    OpenApiExample(
        "The tablet of a Capo Partita",
        description="The table's tablet, one token per tablet: no `otp` (the table staff are not among the "
        "supervising roles that need one).",
        value={"username": "capo1", "password": "chemin-demo-capo1"},
        request_only=True,
    ),
    OpenApiExample(
        "With a one-time code, supervising roles with MFA enrolled only",
        description="Only for a user whose role MFA_ROLES names (in production the Commissario, the Direzione, "
        "the auditors and superusers) and who has an authenticator enrolled: `otp` is its current 6-digit code "
        "(or one of his recovery codes). Anyone else leaves `otp` out: a missing or wrong code where one is "
        "needed counts as a failed login for the throttle.",
        value={"username": "commissario", "password": "chemin-demo-commissario", "otp": "123456"},
        request_only=True,
    ),
]


class TokenLoginApi(APIView):
    """A tablet logs in with a username and password and receives its token."""

    authentication_classes = ()
    permission_classes = (AllowAny,)

    class TokenLoginInput(StrictInput):
        username = serializers.CharField(max_length=150)
        password = serializers.CharField(max_length=128, trim_whitespace=False)
        otp = serializers.CharField(
            max_length=16, required=False, allow_blank=True,
            help_text="The one-time code of the user's authenticator, for the roles that need one (MFA_ROLES), "
            "or one of his single-use recovery codes (`k7q2x-9xvmp`; case, dashes and spaces ignored).",
        )  # fmt: skip

    @extend_schema(
        request=TokenLoginInput,
        responses={200: TokenOutputSerializer, 400: _E, 429: _E, 503: _E},
        examples=TOKEN_LOGIN_EXAMPLES,
        auth=[],
        description="A wrong username or password, or an inactive user: 400 `invalid_credentials` (a failed "
        "login). Failed logins are throttled per username and per client address "
        "(code `too_many_failed_logins`, 429). The roles in MFA_ROLES (in production the Commissario, the "
        "Direzione, the auditors and superusers) send `otp`, their authenticator's current code or, without "
        "it, one of their recovery codes (each works once; its use is a security event): "
        "`mfa_code_required`, `mfa_code_invalid` (a failed login too), `mfa_locked` (too many wrong codes: "
        "`details.locked_until`) or `mfa_not_enrolled`. 503 `service_unavailable` when the throttle's "
        "store (Redis) is out of reach: no login is let through uncounted. Each login gets a new token, "
        "its own (one per tablet), "
        "shown only in this answer: the server keeps only its SHA-256 digest. It lasts API_TOKEN_HOURS "
        "(a shift, 12 by default) from its issue; a logout revokes it. `recovery_codes_left` is null, except "
        "after a login by recovery code: how many codes the user has left (his phone is missing: he must have "
        "his authenticator enrolled again, which issues a new set).",
    )
    def post(self, request):
        data = self.TokenLoginInput(data=request.data)
        data.is_valid(raise_exception=True)
        username, password = data.validated_data["username"], data.validated_data["password"]
        address = client_address(request)
        if login_blocked(username=username, address=address):
            raise TooManyFailedLogins()
        user = authenticate(request, username=username, password=password)
        if user is None:
            login_failed(username=username, address=address)
            raise ApplicationError("invalid_credentials", "Wrong username or password.")
        try:
            verified = check_second_factor(user, data.validated_data.get("otp"))
        except SecondFactorRefused as refused:
            if refused.code != "mfa_locked":  # (a right code may be among those refused then)
                login_failed(username=username, address=address)
            second_factor_failed(user, refused.code, request)
            details = {"locked_until": localtime(refused.until).isoformat()} if refused.until else None
            raise ApplicationError(refused.code, refused.message, details=details) from None
        login_succeeded(username=username, address=address)
        with transaction.atomic():  # the token and its event: both or neither
            key, token = issue_token(user, mfa_verified=verified)
            security_event("auth.token_issued", actor=user, request=request, via="api", token=token.pk)
        me = MeSerializer(user).data
        left = recovery_codes_left_after(user, data.validated_data.get("otp")) if verified else None
        return Response({"token": key, "user": me, "roles": me["roles"], "recovery_codes_left": left})


class TokenLogoutApi(TakesNoBody, APIView):
    """Revokes the token the request carries (this tablet's; the user's other tablets stay
    logged in) and ends the browser session if there is one."""

    permission_classes = (IsAuthenticated,)

    @extend_schema(
        request=None,
        responses={204: None, 400: _E, **LIST_ERRORS},
        description="Takes no body: a key in one is a 400 `invalid_input` naming it, and nothing is revoked.",
    )
    def post(self, request):
        self.refuse_body()
        token = request.auth if isinstance(request.auth, ApiToken) else None
        if token is not None:
            with transaction.atomic():  # the revocation and its event: both or neither
                if ApiToken.objects.filter(pk=token.pk).delete()[0]:
                    security_event("auth.token_revoked", actor=request.user, request=request, via="api", token=token.pk)
        if request.session.session_key:
            logout(request._request)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MeApi(APIView):
    permission_classes = (CanReadFloor,)

    @extend_schema(
        responses={200: MeSerializer, **LIST_ERRORS},
        description="The logged-in user: id, username, name and `roles` (e.g. `commissario`, `capo_partita`), "
        "as the token's answer gives them. Any staff role; a user without one: 403 `permission_denied`.",
    )
    def get(self, request):
        return Response(MeSerializer(request.user).data)


# --------------------------------------------------------------------------- casinos and tables


class CasinoListApi(_ListApi):
    permission_classes = (CanReadFloor,)
    output_serializer = CasinoSerializer
    serializer_class = CasinoSerializer

    def get_queryset(self):
        return selectors.casino_list()

    @extend_schema(
        responses={200: CasinoSerializer(many=True), **LIST_ERRORS},
        description="The casinos by name, each with its `sites` (the ids a table's `casino` and `site` take). "
        "Any staff role. " + PAGINATED,
    )
    def get(self, request):
        return self.list_response()


@extend_schema_field(serializers.ChoiceField(choices=PROFILE_CHOICES))
class ProfileNameField(serializers.CharField):
    """A rule profile's name. The schema lists them; a name outside them is the service's
    `unknown_profile` (the field itself takes any text, so the code stays that one)."""


@extend_schema_field(serializers.ChoiceField(choices=ROUNDING_CHOICES))
class RoundingField(serializers.CharField):
    """The cagnotte's rounding; another word is the service's `unknown_rounding`."""


class TableInput(StrictInput):
    casino = IdField(queryset=Casino.objects.all())
    site = IdField(queryset=Site.objects.all())
    number = StrictIntegerField(min_value=1, max_value=9999)
    seats = StrictIntegerField(min_value=1, max_value=99, required=False)
    profile = ProfileNameField(max_length=20, required=False)
    decks = StrictIntegerField(min_value=1, max_value=99, required=False)
    cagnotte_rate_bp = StrictIntegerField(min_value=0, max_value=10_000, required=False)
    cagnotte_unit_cents = StrictIntegerField(min_value=1, max_value=1_000_000, required=False)
    cagnotte_rounding = RoundingField(max_length=10, required=False)
    min_seats_to_start = StrictIntegerField(min_value=1, max_value=99, required=False)
    active = StrictBooleanField(required=False)


class TablePatchInput(TableInput):
    casino = None  # a table never moves to another casino
    site = IdField(queryset=Site.objects.all(), required=False)
    number = StrictIntegerField(min_value=1, max_value=9999, required=False)


class TableListApi(IdempotentMixin, _ListApi):
    permission_classes = (DirezioneWrites,)
    output_serializer = TableSerializer
    serializer_class = TableSerializer
    filterset_class = TableFilter

    def get_queryset(self):
        return selectors.table_list()

    @extend_schema(
        responses={200: TableSerializer(many=True), **LIST_ERRORS},
        description="The tables by casino and number, with their settings (rule profile, seats, decks, cagnotte "
        "rate and rounding, seats to start, active). Any staff role reads them; the Direzione Giochi alone "
        "creates one (POST). Filters: `casino`, `site`, `profile`, `active` (true/false), `seats`; a key that is "
        "no filter of this list, or a malformed value, is a 400 `invalid_input` naming it. " + PAGINATED,
    )
    def get(self, request):
        return self.list_response()

    @extend_schema(
        request=TableInput,
        responses={201: TableSerializer, **WRITE_ERRORS},
        description="Creates a table; settings not given come from its rule profile. Codes: `unknown_profile`, "
        "`site_not_in_casino`, `seats_out_of_range` (8 or 9), `min_seats_out_of_range`, `unknown_rounding` "
        "(`nearest`, `down`, `up`), "
        "`table_number_taken`, `decks_not_allowed`, `cagnotte_rate_out_of_range`, `cagnotte_unit_out_of_range` "
        "(the rounding unit is 1 to 10000 cents and divides 10000), `cagnotte_not_in_profile` "
        "(the domestic and chemmy-fi rules take no cagnotte: their rate is 0, RULES.md §3.2).",
    )
    def post(self, request):
        data = TableInput(data=request.data)
        data.is_valid(raise_exception=True)
        table = services.table_create(by=request.user, **data.validated_data)
        return Response(TableSerializer(table).data, status=status.HTTP_201_CREATED)


class TableDetailApi(APIView):
    permission_classes = (DirezioneWrites,)

    @extend_schema(
        responses={200: TableSerializer, **READ_ERRORS},
        description="One table and its settings, as the list gives them. Any staff role reads it; the "
        "Direzione Giochi alone changes it (PATCH). 404 `not_found`: no such table.",
    )
    def get(self, request, pk: int):
        return Response(TableSerializer(get_object_or_404(selectors.table_list(), pk=pk)).data)

    @extend_schema(
        request=TablePatchInput,
        responses={200: TableSerializer, **WRITE_ERRORS},
        description="Refused with `table_in_play` (409) while the table has a session that is not closed. "
        "A setting is refused as at the creation (POST /api/tables/: `unknown_profile`, `site_not_in_casino`, "
        "`min_seats_out_of_range`, `unknown_rounding`, `decks_not_allowed`, `cagnotte_rate_out_of_range`...). "
        "A table moved to a profile whose rules take no cagnotte (domestic, chemmy-fi) gets a rate of 0 with it; "
        "a rate above 0 for such a table is refused with `cagnotte_not_in_profile`.",
    )
    def patch(self, request, pk: int):
        table = get_object_or_404(Table, pk=pk)
        data = TablePatchInput(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        table = services.table_update(table=table, by=request.user, **data.validated_data)
        return Response(TableSerializer(table).data)


# --------------------------------------------------------------------------- gaming days


class GamingDayListApi(IdempotentMixin, _ListApi):
    permission_classes = (CommissarioWrites,)
    output_serializer = GamingDaySerializer
    serializer_class = GamingDaySerializer
    filterset_class = GamingDayFilter

    class GamingDayOpenInput(StrictInput):
        casino = IdField(queryset=Casino.objects.all())
        date = StrictDateField(required=False, help_text="Defaults to today (Europe/Rome).")

    def get_queryset(self):
        return selectors.gaming_day_list()

    @extend_schema(
        responses={200: GamingDaySerializer(many=True), **LIST_ERRORS},
        description="The gaming days, newest first, with who opened and who closed each (`is_open`: not closed "
        "yet). Any staff role reads them; the Commissario opens one (POST) and closes it (POST .../close/). "
        "Filters: `casino`, `date`, `date_from`, `date_to` (YYYY-MM-DD), `is_open` (true/false); a key that is no "
        "filter of this list, or a malformed value, is a 400 `invalid_input` naming it. " + PAGINATED,
    )
    def get(self, request):
        return self.list_response()

    @extend_schema(
        request=GamingDayOpenInput,
        responses={201: GamingDaySerializer, **WRITE_ERRORS},
        description="Opens the gaming day. Codes: `gaming_day_already_open`, `gaming_day_exists`, `gaming_day_date_out_of_range` (today, or a day either side), `gaming_day_out_of_order` (before the casino's last day), `control_register_not_signed` (409: the previous day's control register lacks its two signatures, RULES.md §8 art. 72; see GAMING_DAY_OPEN_UNSIGNED_REGISTER).",
    )
    def post(self, request):
        data = self.GamingDayOpenInput(data=request.data)
        data.is_valid(raise_exception=True)
        day = services.gaming_day_open(by=request.user, **data.validated_data)
        return Response(GamingDaySerializer(day).data, status=status.HTTP_201_CREATED)


class GamingDayCloseApi(IdempotentMixin, TakesNoBody, APIView):
    permission_classes = (CommissarioWrites,)

    @extend_schema(
        request=None,
        responses={200: GamingDaySerializer, **WRITE_ERRORS},
        description="Codes: `sessions_still_open`, `gaming_day_closed`.",
    )
    def post(self, request, pk: int):
        day = get_object_or_404(GamingDay, pk=pk)
        self.refuse_body()
        day = services.gaming_day_close(gaming_day=day, by=request.user)
        return Response(GamingDaySerializer(day).data)


# --------------------------------------------------------------------------- table sessions


class TableSessionListApi(IdempotentMixin, _ListApi):
    permission_classes = (CommissarioWrites,)
    output_serializer = TableSessionSerializer
    serializer_class = TableSessionSerializer
    filterset_class = TableSessionFilter

    class TableSessionOpenInput(StrictInput):
        table = IdField(queryset=Table.objects.all())
        capo_partita = IdField(queryset=User.objects.all())
        changeur = IdField(queryset=User.objects.all())
        shoe_number = serializers.CharField(max_length=40)
        minimum = StrictIntegerField(max_value=MAX_CENTS, help_text="Cents; at least 100 (1 euro).")
        maximum = StrictIntegerField(max_value=MAX_CENTS, required=False, allow_null=True)

    def get_queryset(self):
        # The table staff list the sessions they work or worked at (floor.permissions).
        return readable_sessions(self.request.user, selectors.table_session_list())

    @extend_schema(
        responses={200: TableSessionSerializer(many=True), **LIST_ERRORS},
        description="The table sessions, the latest opened first, with their table, staff, limits, status "
        "(`open`, `interrupted`, `closed`) and seated players' count. The Commissario, the Direzione and the "
        "auditors list every session; a Capo Partita or a changeur only those he works or worked at (the "
        "others are left out, not refused). The Commissario opens one (POST). Filters: `table`, `casino`, "
        "`gaming_day`, `status`, `capo_partita`, `changeur` (user ids), `date`, `date_from`, `date_to` (the "
        "gaming day's date, YYYY-MM-DD); a key that is no filter of this list, or a malformed value, is a 400 "
        "`invalid_input` naming it. " + PAGINATED,
    )
    def get(self, request):
        return self.list_response()

    @extend_schema(
        request=TableSessionOpenInput,
        responses={201: TableSessionDetailSerializer, **WRITE_ERRORS},
        description="Opens a session on a table. Codes: `no_open_gaming_day`, `table_session_already_open`, "
        "`not_a_capo_partita`, `not_a_changeur`, `minimum_out_of_range`, `maximum_out_of_range`, `shoe_in_use`, `table_inactive`, "
        "`capo_partita_busy`, `changeur_busy` (409: he works at another table's session, in either role; one "
        "croupier and one changeur per table, RULES.md §6), `user_inactive`.",
    )
    def post(self, request):
        data = self.TableSessionOpenInput(data=request.data)
        data.is_valid(raise_exception=True)
        session = services.table_session_open(by=request.user, **data.validated_data)
        return Response(_session_detail(session), status=status.HTTP_201_CREATED)


class TableSessionDetailApi(APIView):
    permission_classes = (CanReadFloor,)

    @extend_schema(
        responses={200: TableSessionDetailSerializer, **READ_ERRORS},
        description="One table session as the list gives it, with its seated players (`seats`, those at the "
        "table now) and its interruptions. The Commissario, the Direzione and the auditors read any session; a "
        "Capo Partita or a changeur only one he works or worked at (403 `permission_denied` for another). "
        "404 `not_found`: no such session.",
    )
    def get(self, request, pk: int):
        check_session_readable(request.user, pk)
        session = get_object_or_404(selectors.table_session_detail(), pk=pk)
        return Response(TableSessionDetailSerializer(session).data)


class TableSessionInterruptApi(IdempotentMixin, APIView):
    permission_classes = (SuspendsPlay,)

    class TableSessionInterruptInput(StrictInput):
        reason = serializers.CharField(max_length=200)

    @extend_schema(
        request=TableSessionInterruptInput,
        responses={200: TableSessionDetailSerializer, **WRITE_ERRORS},
        description="The Commissario or the Direzione Giochi (management may suspend play at any moment, "
        "RULES.md §6). The interruption records the capacity it is ordered in (`interrupted_as`): "
        "`direzione` for a user holding the Direzione role (also one who is a Commissario too), "
        "`commissario` otherwise. `reason` required (missing or blank: 400 `invalid_input` naming it; "
        "invisible characters only: 400 `reason_required`). Codes: `session_closed`, `session_not_open`.",
    )
    def post(self, request, pk: int):
        session = get_object_or_404(TableSession, pk=pk)
        data = self.TableSessionInterruptInput(data=request.data)
        data.is_valid(raise_exception=True)
        session = services.table_session_interrupt(session=session, by=request.user, **data.validated_data)
        return Response(_session_detail(session))


class TableSessionResumeApi(IdempotentMixin, APIView):
    permission_classes = (SuspendsPlay,)

    class TableSessionResumeInput(StrictInput):
        reason = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")

    @extend_schema(
        request=TableSessionResumeInput,
        responses={200: TableSessionDetailSerializer, **WRITE_ERRORS},
        description="The Commissario or the Direzione Giochi. A suspension the Direzione ordered "
        "(`interrupted_as`: `direzione`) is lifted by the Direzione alone, whose decision is final (RULES.md §6): "
        "403 `suspended_by_direzione` for a Commissario, nothing written. "
        "Codes: `session_closed`, `session_not_interrupted`, `suspended_by_direzione`.",
    )
    def post(self, request, pk: int):
        session = get_object_or_404(TableSession, pk=pk)
        data = self.TableSessionResumeInput(data=request.data)
        data.is_valid(raise_exception=True)
        session = services.table_session_resume(session=session, by=request.user, **data.validated_data)
        return Response(_session_detail(session))


class TableSessionCloseApi(IdempotentMixin, TakesNoBody, APIView):
    permission_classes = (CommissarioWrites,)

    @extend_schema(
        request=None,
        responses={200: TableSessionDetailSerializer, **WRITE_ERRORS},
        description="Closes an open or interrupted session and releases its places. Code: `session_closed`.",
    )
    def post(self, request, pk: int):
        session = get_object_or_404(TableSession, pk=pk)
        self.refuse_body()
        session = services.table_session_close(session=session, by=request.user)
        return Response(_session_detail(session))


class MinimumChangeApi(IdempotentMixin, APIView):
    permission_classes = (CommissarioWrites,)

    class MinimumChangeInput(StrictInput):
        minimum = StrictIntegerField(max_value=MAX_CENTS, help_text="Cents; at least 100 (1 euro).")
        maximum = StrictIntegerField(
            max_value=MAX_CENTS,
            required=False,
            allow_null=True,
            help_text="Cents, or null for no maximum; left out, the maximum stays as it is.",
        )
        reason = serializers.CharField(max_length=200)

    @extend_schema(
        request=MinimumChangeInput,
        responses={200: TableSessionDetailSerializer, **WRITE_ERRORS},
        description="The table's limits: the minimum, and optionally the maximum with it (RULES.md §6). "
        "`reason` required (missing or blank: 400 `invalid_input` naming it; invisible characters only: 400 "
        "`reason_required`). Codes: `minimum_out_of_range`, `maximum_out_of_range`, `minimum_unchanged`, "
        "`session_closed`.",
    )
    def post(self, request, pk: int):
        session = get_object_or_404(TableSession, pk=pk)
        data = self.MinimumChangeInput(data=request.data)
        data.is_valid(raise_exception=True)
        session = services.table_minimum_change(session=session, by=request.user, **data.validated_data)
        return Response(_session_detail(session))


class MinimumChangeListApi(_ListApi):
    permission_classes = (CanReadFloor,)
    output_serializer = MinimumChangeSerializer
    serializer_class = MinimumChangeSerializer

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return selectors.minimum_change_list(session=TableSession(pk=0))
        session = get_object_or_404(TableSession, pk=self.kwargs["pk"])
        return selectors.minimum_change_list(session=session)

    @extend_schema(
        responses={200: MinimumChangeSerializer(many=True), **READ_ERRORS},
        description="The session's changes of limits, oldest first: the minimum and maximum before and after "
        "(cents; a null maximum is none), who changed them, when and why. Read as the session is (GET "
        "/api/sessions/{id}/: the table staff only at a session they work or worked at, else 403 "
        "`permission_denied`); 404 `not_found`: no such session. " + PAGINATED,
    )
    def get(self, request, pk: int):
        check_session_readable(request.user, pk)
        return self.list_response()


class StaffChangeApi(IdempotentMixin, APIView):
    permission_classes = (CommissarioWrites,)

    class StaffChangeInput(StrictInput):
        capo_partita = IdField(
            queryset=User.objects.all(), required=False, help_text="The new Capo Partita; omit to keep him."
        )
        changeur = IdField(
            queryset=User.objects.all(), required=False, help_text="The new changeur; omit to keep him."
        )
        reason = serializers.CharField(max_length=200)

    @extend_schema(
        request=StaffChangeInput,
        responses={200: TableSessionDetailSerializer, **WRITE_ERRORS},
        description="Relieves the session's Capo Partita, changeur or both, at any moment (a coup in play goes "
        "on with the new Capo Partita; the outgoing one's writes are refused from then on). `reason` required "
        "(missing or blank: 400 `invalid_input` naming it; invisible characters only: 400 `reason_required`). "
        "Codes: `session_closed`, `staff_unchanged`, `not_a_capo_partita`, `not_a_changeur`, "
        "`capo_partita_busy`, `changeur_busy` (409: he works at another table's session, in either role; one "
        "croupier and one changeur per table, RULES.md §6), `user_inactive`.",
    )
    def post(self, request, pk: int):
        session = get_object_or_404(TableSession, pk=pk)
        data = self.StaffChangeInput(data=request.data)
        data.is_valid(raise_exception=True)
        session = services.table_session_staff_change(session=session, by=request.user, **data.validated_data)
        return Response(_session_detail(session))


class StaffChangeListApi(_ListApi):
    permission_classes = (CanReadFloor,)
    output_serializer = StaffChangeSerializer
    serializer_class = StaffChangeSerializer

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return selectors.staff_change_list(session=TableSession(pk=0))
        session = get_object_or_404(TableSession, pk=self.kwargs["pk"])
        return selectors.staff_change_list(session=session)

    @extend_schema(
        responses={200: StaffChangeSerializer(many=True), **READ_ERRORS},
        description="The session's staff changes, oldest first: the outgoing and incoming Capo Partita and "
        "changeur, who ordered the change, when and why. Read as the session is (GET /api/sessions/{id}/: the "
        "table staff only at a session they work or worked at, else 403 `permission_denied`); 404 `not_found`: "
        "no such session. " + PAGINATED,
    )
    def get(self, request, pk: int):
        check_session_readable(request.user, pk)
        return self.list_response()


# --------------------------------------------------------------------------- seats


class SeatListApi(IdempotentMixin, _ListApi):
    permission_classes = (CommissarioWrites,)
    output_serializer = SeatSerializer
    serializer_class = SeatSerializer
    filterset_class = SeatFilter

    class SeatAssignInput(StrictInput):
        patron = IdField(queryset=Patron.objects.all())
        seat_number = StrictIntegerField(min_value=0, max_value=99, required=False, allow_null=True)
        standing = StrictBooleanField(required=False, default=False)

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Seat.objects.none()
        session = get_object_or_404(TableSession, pk=self.kwargs["pk"])
        return selectors.seat_list(session=session)

    @extend_schema(
        responses={200: SeatSerializer(many=True), **READ_ERRORS},
        description="The session's seats, the numbered ones first by number, then the standing players; the "
        "seats released are listed too (`active`: false, with `left_at` and `left_by`). Read as the session is "
        "(GET /api/sessions/{id}/: the table staff only at a session they work or worked at, else 403 "
        "`permission_denied`); the Commissario assigns a seat (POST); 404 `not_found`: no such session. "
        "Filters: `active`, `standing` (true/false), `patron` (a patron id); a key that is no filter of this "
        "list, or a malformed value, is a 400 `invalid_input` naming it. " + PAGINATED,
    )
    def get(self, request, pk: int):
        check_session_readable(request.user, pk)
        return self.list_response()

    @extend_schema(
        request=SeatAssignInput,
        responses={201: SeatSerializer, **WRITE_ERRORS},
        description="Assigns a numbered seat ({patron, seat_number}) or registers a standing player "
        "({patron, standing: true}). Codes: `seat_taken`, `patron_already_seated`, `seat_out_of_range`, "
        "`seat_number_required`, `invalid_seat`, `session_closed`.",
    )
    def post(self, request, pk: int):
        session = get_object_or_404(TableSession, pk=pk)
        data = self.SeatAssignInput(data=request.data)
        data.is_valid(raise_exception=True)
        seat = services.seat_assign(session=session, by=request.user, **data.validated_data)
        return Response(SeatSerializer(selectors.seat_list(session=session).get(pk=seat.pk)).data, status=201)


class SeatReleaseApi(IdempotentMixin, TakesNoBody, APIView):
    permission_classes = (CommissarioWrites,)

    @extend_schema(
        request=None,
        responses={200: SeatSerializer, **WRITE_ERRORS},
        description="Codes: `seat_already_released`; `patron_holds_the_bank` (he withdraws first) and "
        "`patron_in_coup` (a bet or banco call in the coup in play): a player whose money is on the "
        "table does not leave it (RULES.md §6).",
    )
    def post(self, request, pk: int):
        seat = get_object_or_404(Seat, pk=pk)
        self.refuse_body()
        seat = services.seat_release(seat=seat, by=request.user)
        return Response(SeatSerializer(seat).data)


# --------------------------------------------------------------------------- patrons


class PatronListApi(IdempotentMixin, _ListApi):
    permission_classes = (CommissarioWrites,)
    output_serializer = PatronSerializer
    serializer_class = PatronSerializer
    filterset_class = PatronFilter

    class PatronRegisterInput(StrictInput):
        first_name = serializers.CharField(max_length=80)
        last_name = serializers.CharField(max_length=80)
        document_type = serializers.ChoiceField(choices=Patron.DocumentType.choices)
        document_number = serializers.CharField(max_length=40)
        nationality = serializers.CharField(max_length=2, min_length=2)
        birth_date = StrictDateField(required=False, allow_null=True)
        notes = serializers.CharField(max_length=2000, required=False, allow_blank=True, default="")

    def get_queryset(self):
        return selectors.patron_list()

    @extend_schema(
        responses={200: PatronSerializer(many=True), **LIST_ERRORS},
        description="By last name, first name, then id. Paginated (`page`, `page_size`); every role reads it. Filters: "
        "`search` (every word must match a first name, a last name or, for those who read identities, a "
        "document number), `document_number`, `document_type` and `nationality` (two letters). The "
        "document, birth date and notes are null for the table staff (Capo Partita, changeur), and for "
        "them a document filter matches nobody.",
    )
    def get(self, request):
        return self.list_response()

    @extend_schema(
        request=PatronRegisterInput,
        responses={201: PatronSerializer, **WRITE_ERRORS},
        description="Codes: `patron_already_registered`, `invalid_document_number` (letters outside A-Z), "
        "`invalid_nationality`, `invalid_birth_date` (in the future, before 1900), `patron_under_age` (under 18).",
    )
    def post(self, request):
        data = self.PatronRegisterInput(data=request.data)
        data.is_valid(raise_exception=True)
        patron = services.patron_register(by=request.user, **data.validated_data)
        return Response(PatronSerializer(patron, context={"identity": True}).data, status=status.HTTP_201_CREATED)

    def output_context(self) -> dict:
        return {"identity": reads_identity(self.request.user)}


def reads_identity(user) -> bool:
    return has_role(user, *IDENTITY_READERS)


class PatronDetailApi(APIView):
    permission_classes = (CanReadFloor,)

    @extend_schema(
        responses={200: PatronSerializer, **READ_ERRORS},
        description="The document, birth date and notes are null for the table staff (Capo Partita, changeur).",
    )
    def get(self, request, pk: int):
        patron = get_object_or_404(selectors.patron_list(), pk=pk)
        return Response(PatronSerializer(patron, context={"identity": reads_identity(request.user)}).data)


class ApiNotFound(APIView):
    """Any other /api/ path: the API's 404 in the one error shape, not an HTML page."""

    authentication_classes = ()
    permission_classes = (AllowAny,)
    schema = None

    def http_method_not_allowed(self, request, *args, **kwargs):
        raise NotFound()

    get = post = put = patch = delete = http_method_not_allowed

