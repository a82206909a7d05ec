"""Passing the bank and the auction over HTTP (RULES.md §5): the Capo Partita's tablet.

Views are thin (ARCHITECTURE.md): parse, authorize on the object, call ONE service of
tables.services, answer with the table's succession state (tables.selectors.succession_state)
read in the same transaction. No rule lives here.

- Reads: the supervisors and auditors, any table; the table staff, the sessions they work or
  worked at (floor.permissions.session_readable_by).
- Acceptances, passes and bids: only the Capo Partita assigned to the session (the players
  speak, he records). Opening and closing the auction: he, or a Commissario. Auditors never.
- Every POST requires an `Idempotency-Key` (floor/idempotency.py)."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from django.urls import path
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api import READ_ERRORS, WRITE_ERRORS, IdField, StrictInput, StrictIntegerField, TakesNoBody
from floor.idempotency import IdempotentMixin
from floor.models import Patron, TableSession
from floor.permissions import (
    FLOOR_READERS,
    SESSION_READ_REFUSED,
    _session_of,
    check_session_readable,
    session_readable_by,
)
from floor.roles import Role, has_role
from tables import selectors, services
from tables.models import Auction, Succession

# Amounts are cents in a PostgreSQL bigint: bound them so an absurd number is a 400.
MAX_CENTS = 2_000_000_000_000

COMMON = (
    " Refusals common to the table: `session_closed`, `session_interrupted` (409), "
    "`profile_not_supported` (punto banco), `permission_denied` (403: not the Capo Partita of this "
    "table, or not a Commissario where he may act too). Requires an "
    "`Idempotency-Key`."
)


# --------------------------------------------------------------------------- permissions


class _ObjectWrites(BasePermission):
    """Reads: any staff role. Writes: `may_write(user, session)`, decided on the object's
    table session, so ids of another table get 403. The session's status is left to the
    service, which answers `session_closed` / `session_interrupted` with its own code."""

    message = "Only the Capo Partita assigned to this table session may do this."
    write_roles: tuple[str, ...] = (Role.CAPO_PARTITA,)

    def has_permission(self, request, view) -> bool:
        user = request.user
        if not (user and user.is_authenticated):
            return False
        roles = FLOOR_READERS if request.method in SAFE_METHODS else self.write_roles
        return has_role(user, *roles)

    def has_object_permission(self, request, view, obj) -> bool:
        if request.method in SAFE_METHODS:
            if not session_readable_by(request.user, _session_of(obj)):
                raise PermissionDenied(SESSION_READ_REFUSED)
            return True
        return self.may_write(request.user, _session_of(obj))

    def may_write(self, user, session) -> bool:
        return has_role(user, Role.CAPO_PARTITA) and session.capo_partita_id == user.pk


class IsSessionCapoPartita(_ObjectWrites):
    pass


class IsSessionCapoPartitaOrCommissario(_ObjectWrites):
    message = "Only the table's Capo Partita or a Commissario may do this."
    write_roles = (Role.CAPO_PARTITA, Role.COMMISSARIO)

    def may_write(self, user, session) -> bool:
        return has_role(user, Role.COMMISSARIO) or super().may_write(user, session)


# --------------------------------------------------------------------------- serializers


class SuccessionPatronSerializer(serializers.Serializer):
    id = StrictIntegerField()
    name = serializers.CharField()


class SuccessionRotationSerializer(serializers.Serializer):
    direction = serializers.CharField(
        help_text="The profile's rotation (all pass to the right: increasing seats)."
    )
    turn_seat = StrictIntegerField(
        allow_null=True, help_text="The rotation pointer: the seat whose turn the (last) bank holds."
    )
    next_seat = StrictIntegerField(
        allow_null=True, help_text="The occupied seat the bank is offered to first when it passes."
    )


class SuccessionOfferSerializer(serializers.Serializer):
    id = StrictIntegerField()
    order = StrictIntegerField(help_text="The order of the right to the bank.")
    round = serializers.CharField(help_text="new_bank, seated, standing, claim, height, minimum.")
    patron = SuccessionPatronSerializer()
    seat_number = StrictIntegerField(allow_null=True)
    standing = serializers.BooleanField()
    amount_min = StrictIntegerField(help_text="Cents.")
    amount_max = StrictIntegerField(allow_null=True, help_text="Cents; the table maximum in force while the offer waits, the one it was answered under once answered; null: no maximum.")
    status = serializers.CharField(help_text="pending, accepted, claimed, passed, skipped.")
    reason = serializers.CharField(
        allow_null=True, help_text="Why skipped: barred, left, taken, outranked, auction, lapsed."
    )
    amount = StrictIntegerField(allow_null=True)
    current = serializers.BooleanField(help_text="This player may answer now.")
    present = serializers.BooleanField(help_text="Still at the table and not barred.")
    answered_at = serializers.DateTimeField(allow_null=True)


class AuctionBidSerializer(serializers.Serializer):
    id = StrictIntegerField()
    seq = StrictIntegerField(help_text="The definite order of arrival, 1, 2, ...")
    patron = SuccessionPatronSerializer()
    amount = StrictIntegerField()
    seat_number = StrictIntegerField(allow_null=True)
    standing = serializers.BooleanField()
    at = serializers.DateTimeField()


class SuccessionAuctionSerializer(serializers.Serializer):
    id = StrictIntegerField()
    status = serializers.CharField(help_text="open, closed.")
    opened_at = serializers.DateTimeField()
    closed_at = serializers.DateTimeField(allow_null=True)
    best = StrictIntegerField(allow_null=True)
    winning_bid = StrictIntegerField(allow_null=True)
    bids = AuctionBidSerializer(many=True)


class SuccessionSerializer(serializers.Serializer):
    id = StrictIntegerField()
    number = StrictIntegerField()
    reason = serializers.CharField(help_text="lost, withdrawn.")
    kind = serializers.CharField(help_text="rotation, all_altezza, equal_bank, continuation.")
    status = serializers.CharField(help_text="offering, unclaimed, auction, taken, lapsed.")
    lapse_reason = serializers.CharField(
        allow_null=True, help_text="nobody_accepted, no_bids (the asta closed without a bid), no_valid_bids (bids, none standing), "
        "session_closed, bank_opened_directly."
    )
    previous_bank = StrictIntegerField()
    outgoing_banker = SuccessionPatronSerializer()
    amount = StrictIntegerField(
        allow_null=True, help_text="The bank offered all'altezza (or its equal)."
    )
    floor = StrictIntegerField(allow_null=True, help_text="domestic: the mandatory continuation.")
    minimum = StrictIntegerField()
    after_seat = StrictIntegerField(allow_null=True)
    new_bank = StrictIntegerField(allow_null=True)
    started_at = serializers.DateTimeField()
    ended_at = serializers.DateTimeField(allow_null=True)
    offers = SuccessionOfferSerializer(many=True)
    auction = SuccessionAuctionSerializer(allow_null=True)


class SuccessionBankSerializer(serializers.Serializer):
    id = StrictIntegerField()
    banker = StrictIntegerField()
    amount = StrictIntegerField()


class SuccessionStateSerializer(serializers.Serializer):
    session = StrictIntegerField()
    profile = serializers.CharField()
    bank = SuccessionBankSerializer(allow_null=True)
    rotation = SuccessionRotationSerializer()
    succession = SuccessionSerializer(allow_null=True, help_text="The latest succession of the session.")


class SuccessionAcceptInput(StrictInput):
    patron = IdField(queryset=Patron.objects.all())
    amount = StrictIntegerField(min_value=1, max_value=MAX_CENTS, help_text="Cents.")


class SuccessionPassInput(StrictInput):
    patron = IdField(queryset=Patron.objects.all())


class AuctionBidInput(StrictInput):
    patron = IdField(queryset=Patron.objects.all())
    amount = StrictIntegerField(min_value=1, max_value=MAX_CENTS, help_text="Cents.")


# --------------------------------------------------------------------------- views


def _state(session_id: int, code: int = status.HTTP_200_OK) -> Response:
    # Read inside the write's transaction (the idempotency wrapper's), locks still held.
    return Response(selectors.succession_state(session=TableSession(pk=session_id)), status=code)


class _Write(IdempotentMixin, APIView):
    permission_classes = (IsSessionCapoPartita,)
    idempotency_required = True

    def object(self, model, pk: int):
        obj = get_object_or_404(model.objects.select_related("session"), pk=pk)
        self.check_object_permissions(self.request, obj)
        return obj


class SuccessionStateApi(APIView):
    permission_classes = (IsSessionCapoPartita,)

    @extend_schema(
        responses={200: SuccessionStateSerializer, **READ_ERRORS},
        summary="The bank passing at a table",
        description="The rotation pointer (`rotation.turn_seat`, `rotation.next_seat`), and the latest "
        "succession: why and how the bank passes, every offer in the order of the right to the bank "
        "with its terms and answer (`current`: who may answer now), the auction and its bids.",
    )
    def get(self, request, pk: int):
        check_session_readable(request.user, pk)
        get_object_or_404(TableSession, pk=pk)
        return _state(pk)


class OfferAcceptApi(_Write):
    @extend_schema(
        request=SuccessionAcceptInput,
        responses={200: SuccessionStateSerializer, **WRITE_ERRORS},
        summary="A player takes the bank",
        description="When it is his turn, at the terms of his offer (RULES.md §5): after a loss a new "
        "bank from the table minimum (at most the maximum); after a withdrawal the whole bank "
        "all'altezza (venezia, classic), an equal bank (chemmy-fi: a claim, won by the nearest in turn "
        "once the nearer have passed), at least the mandatory continuation then from the minimum "
        "(domestic). The new bank opens at once (origin succession). Codes: `not_your_turn` (409), "
        "`offer_answered` (409), `bank_already_taken` (409), `succession_not_open` (409), `not_offered`, "
        "`amount_not_offered`, `bank_below_minimum`, `bank_above_maximum`, `bad_amount`, "
        "`patron_not_at_table`, `patron_barred`, `outgoing_banker`." + COMMON,
    )
    def post(self, request, pk: int):
        succession = self.object(Succession, pk)
        data = SuccessionAcceptInput(data=request.data)
        data.is_valid(raise_exception=True)
        services.offer_accept(succession=succession, by=request.user, **data.validated_data)
        return _state(succession.session_id)


class OfferPassApi(_Write):
    @extend_schema(
        request=SuccessionPassInput,
        responses={200: SuccessionStateSerializer, **WRITE_ERRORS},
        summary="A player declines the bank (passe)",
        description="The right passes to the next in turn; when everybody has passed, the bank goes to "
        "auction where the profile has one (status `unclaimed`), else the succession lapses "
        "(domestic). Codes: `not_your_turn`, `offer_answered`, `bank_already_taken`, "
        "`succession_not_open` (409), `not_offered`, `patron_not_at_table`, `patron_barred`, "
        "`outgoing_banker`." + COMMON,
    )
    def post(self, request, pk: int):
        succession = self.object(Succession, pk)
        data = SuccessionPassInput(data=request.data)
        data.is_valid(raise_exception=True)
        services.offer_pass(succession=succession, by=request.user, **data.validated_data)
        return _state(succession.session_id)


class AuctionOpenApi(TakesNoBody, _Write):
    permission_classes = (IsSessionCapoPartitaOrCommissario,)

    @extend_schema(
        request=None,
        responses={201: SuccessionStateSerializer, **WRITE_ERRORS},
        summary="Put the bank up for auction (asta)",
        description="By the table's Capo Partita or a Commissario, when nobody took the bank in turn "
        "(venezia, classic, chemmy-fi). Codes: `no_succession` (409), `auction_already_open` (409), "
        "`offers_pending` (409: a seated player has not answered), `bank_claimed` (409), "
        "`auction_not_in_profile`." + COMMON,
    )
    def post(self, request, pk: int):
        session = get_object_or_404(TableSession, pk=pk)
        self.check_object_permissions(request, session)
        services.auction_open(session=session, by=request.user)
        return _state(session.pk, status.HTTP_201_CREATED)


class AuctionBidApi(_Write):
    @extend_schema(
        request=AuctionBidInput,
        responses={201: SuccessionStateSerializer, **WRITE_ERRORS},
        summary="Record a bid",
        description="Seated or standing alike; at least the table minimum, at most the maximum, not "
        "below the best bid so far (an equal bid is recorded: the close settles ties). Each bid gets "
        "its `seq`, the definite order of arrival. Codes: `auction_closed` (409), `bid_below_minimum`, "
        "`bid_below_best`, `bid_above_maximum`, `bad_amount`, `patron_not_at_table`, `patron_barred`, "
        "`outgoing_banker`." + COMMON,
    )
    def post(self, request, pk: int):
        auction = self.object(Auction, pk)
        data = AuctionBidInput(data=request.data)
        data.is_valid(raise_exception=True)
        services.auction_bid(auction=auction, by=request.user, **data.validated_data)
        return _state(auction.session_id, status.HTTP_201_CREATED)


class AuctionCloseApi(TakesNoBody, _Write):
    permission_classes = (IsSessionCapoPartitaOrCommissario,)

    @extend_schema(
        request=None,
        responses={200: SuccessionStateSerializer, **WRITE_ERRORS},
        summary="Close the auction",
        description="The highest bid wins; among equal highest bids the seated player, then the nearest "
        "in rotation from the outgoing banker, then (standing) the first to bid. The winning bid "
        "becomes the new bank (origin auction); with no bid that stands (its bidder left or was "
        "barred, or it is outside the limits in force) the succession lapses. Codes: "
        "`auction_closed` (409)." + COMMON,
    )
    def post(self, request, pk: int):
        auction = self.object(Auction, pk)
        services.auction_close(auction=auction, by=request.user)
        return _state(auction.session_id)


urlpatterns = [
    path("sessions/<int:pk>/succession/", SuccessionStateApi.as_view(), name="session-succession"),
    path("successions/<int:pk>/accept/", OfferAcceptApi.as_view(), name="succession-accept"),
    path("successions/<int:pk>/pass/", OfferPassApi.as_view(), name="succession-pass"),
    path("sessions/<int:pk>/auctions/", AuctionOpenApi.as_view(), name="session-auctions"),
    path("auctions/<int:pk>/bids/", AuctionBidApi.as_view(), name="auction-bids"),
    path("auctions/<int:pk>/close/", AuctionCloseApi.as_view(), name="auction-close"),
]
