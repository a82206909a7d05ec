"""The coup at the table over HTTP: the Capo Partita's tablet (RULES.md §2-§4).

Views are thin (ARCHITECTURE.md): parse the input (coups_serializers), authorize, call ONE
service of tables.services, render. No rule lives here: the services apply the engine and
answer a refusal with its stable code, in the one error shape.

- Reads: the supervisors and auditors, any table; the table staff (Capo Partita, changeur),
  only the sessions they work or worked at (floor.permissions.session_readable_by; 403
  `permission_denied` for another). Writes only to the Capo Partita assigned to the
  object's table session (`IsSessionCapoPartita`, checked on the object, so a Capo Partita
  of table 3 cannot write into table 5 by guessing its ids).
- Every POST requires an `Idempotency-Key` (floor/idempotency.py): the service's writes and
  the stored answer commit together; a replay returns the first answer and writes nothing.
- Every write answers with what the tablet shows next: the coup acted on (with
  `next`: the card, declaration or decision awaited) and the whole game state, read in the
  same transaction as the write (the session row is still locked), in a constant number of
  queries. The tablet never needs a second request."""

from __future__ import annotations

import django_filters
from django.shortcuts import get_object_or_404
from django.urls import path
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound
from rest_framework.fields import DateTimeField
from rest_framework.generics import GenericAPIView
from rest_framework.response import Response
from rest_framework.views import APIView

from config.api import (
    PAGINATED,
    READ_ERRORS,
    WRITE_ERRORS,
    ErrorSerializer,
    StrictBooleanFilter,
    StrictFilterSet,
    TakesNoBody,
)
from floor.idempotency import IdempotentMixin
from floor.models import Patron, TableSession
from floor.permissions import IsAssignedCapoPartita, _session_of, check_session_readable
from floor.roles import Role, has_role
from tables import selectors, services
from tables.models import Bank, Coup
from tables.services import locked_session
from tables.services.coup import ANNULS_STARTED

from .coups_serializers import (
    BANK_EXAMPLES,
    BANKER_DECISION_EXAMPLES,
    BET_EXAMPLES,
    CARD_CORRECT_EXAMPLES,
    CARD_EXAMPLES,
    DECLARATION_EXAMPLES,
    RECONSTRUCTION_CARD_EXAMPLES,
    RECONSTRUCTION_DECISION_EXAMPLES,
    RECORD_EXAMPLES,
    REGOLA_EXAMPLES,
    SHOE_EXAMPLES,
    BancoCallInput,
    BankAnswerSerializer,
    BankOpenInput,
    BankRaiseInput,
    BarAnswerSerializer,
    BetPlaceInput,
    CardCorrectInput,
    CardDealInput,
    CardVoidInput,
    CoupAnnulInput,
    CoupAnswerSerializer,
    CoupBankSerializer,
    CoupDetailSerializer,
    CoupRecordInput,
    CoupSummarySerializer,
    DrawsInput,
    FauxTirageBarInput,
    FirstBankPassAnswerSerializer,
    FirstBankPassInput,
    GameStateSerializer,
    MarkAnswerSerializer,
    ReconstructionDecisionInput,
    RegolaMarkInput,
    SessionBalancesSerializer,
    ShoeAnswerSerializer,
    ShoeLoadInput,
    VoidCardAnswerSerializer,
    VoidCardSerializer,
    bank_data,
)

WRITE_NOTE = (
    "\n\nOnly the Capo Partita assigned to the session may do this (403 `permission_denied` for "
    "anyone else); requires an `Idempotency-Key`. Refusals common to the table: "
    "`session_closed`, `session_interrupted` (409), `profile_not_supported` (punto banco)."
)


class IsSessionCapoPartita(IsAssignedCapoPartita):
    """floor's IsAssignedCapoPartita, except that the session's status is left to the
    service: a closed or interrupted session is refused with the service's own code
    (`session_closed`, `session_interrupted`, 409) rather than a bare 403, so the tablet can
    say why. Who may write is still decided here, on the object."""

    def has_object_permission(self, request, view, obj) -> bool:
        if request.method in ("GET", "HEAD", "OPTIONS"):
            return super().has_object_permission(request, view, obj)
        session = _session_of(obj)
        return has_role(request.user, Role.CAPO_PARTITA) and session.capo_partita_id == request.user.pk


class _TableApi(IdempotentMixin, GenericAPIView):
    permission_classes = (IsSessionCapoPartita,)
    idempotency_required = True

    def writable_session(self, pk: int) -> TableSession:
        # Inside the write's transaction (every table POST is idempotent, so it is one): the
        # session row is locked here, once, and the service takes it as locked.
        try:
            session = locked_session(pk)
        except TableSession.DoesNotExist:
            raise NotFound() from None
        self.check_object_permissions(self.request, session)
        return session

    def writable_coup(self, pk: int) -> Coup:
        coup = get_object_or_404(Coup.objects.select_related("session"), pk=pk)
        self.check_object_permissions(self.request, coup)
        return coup


def _game(session_id: int, rows: selectors.GameRows | None = None) -> dict:
    try:
        return selectors.session_game_state(TableSession(pk=session_id), rows)
    except TableSession.DoesNotExist:
        raise NotFound() from None


def _coup_answer(coup: Coup, code: int = status.HTTP_200_OK) -> Response:
    # Read inside the write's transaction: the acted coup is the session's last one (a coup
    # opens only once the previous is settled, and the session lock is still held). The
    # rows the service holds (coup.game_rows) are not read again.
    game = _game(coup.session_id, getattr(coup, "game_rows", None))
    current = game["coup"] or game["last_coup"]
    assert current is not None and current["id"] == coup.pk, "the acted coup is the session's last"
    return Response({"coup": current, "game": game}, status=code)


# --------------------------------------------------------------------------- the game


class GameStateApi(APIView):
    permission_classes = (IsSessionCapoPartita,)

    @extend_schema(
        responses={200: GameStateSerializer, **READ_ERRORS},
        summary="The tablet's whole view of a table",
        description="Bank and banker, the coup in play (or the last one) with its bets, hands, what "
        "it needs next (`coup.next`) and the rule in force with the Regola hint (`coup.rule`), "
        "whether a coup may open (and why not), the Regola marks, the bars, the shoe, the balances. "
        "A constant number of queries, however many coups, bettors and seats.",
    )
    def get(self, request, pk: int):
        check_session_readable(request.user, pk)
        return Response(_game(pk))


class SessionBalancesApi(APIView):
    permission_classes = (IsSessionCapoPartita,)

    @extend_schema(
        responses={200: SessionBalancesSerializer, **READ_ERRORS},
        summary="Every player's balance at the session",
        description="What each patron has won (positive) or lost (negative) at the session so far, in "
        "cents, from the settled coups' postings; only the patrons with a posting are listed. "
        "`house_cagnotte` is the house's share: the balances and the cagnotte sum to zero (`total`: 0). "
        "The game state (GET .../game/) carries the same balances.",
    )
    def get(self, request, pk: int):
        check_session_readable(request.user, pk)
        session = get_object_or_404(TableSession, pk=pk)
        balances = selectors.session_balances(session=session)
        names = Patron.objects.in_bulk([pk for pk in balances if pk is not None])
        return Response(
            {
                "session": session.pk,
                "balances": [
                    {"patron": {"id": pid, "name": names[pid].full_name}, "balance": amount}
                    for pid, amount in sorted((k, v) for k, v in balances.items() if k is not None)
                ],
                "house_cagnotte": balances.get(None, 0),
                "total": sum(balances.values()),
            }
        )


# --------------------------------------------------------------------------- shoes and cards


class ShoeLoadApi(_TableApi):
    @extend_schema(
        request=ShoeLoadInput,
        responses={201: ShoeAnswerSerializer, **WRITE_ERRORS},
        examples=SHOE_EXAMPLES,
        summary="Load a new shoe",
        description="The previous shoe ends; the banker does not change (RULES.md §1). Codes: "
        "`coup_in_progress`, `shoe_number_required`, `shoe_number_mismatch` (the first shoe is the "
        "session's), `shoe_in_use` (in play at another table, §6), `bad_shoe` (decks), `bad_card` / "
        "`bad_burn` (burn)." + WRITE_NOTE,
    )
    def post(self, request, pk: int):
        session = self.writable_session(pk)
        data = ShoeLoadInput(data=request.data)
        data.is_valid(raise_exception=True)
        services.shoe_load(session=session, by=request.user, **data.validated_data)
        game = _game(session.pk)
        return Response({"shoe": game["shoe"], "game": game}, status=status.HTTP_201_CREATED)


class CardVoidApi(_TableApi):
    @extend_schema(
        request=CardVoidInput,
        responses={201: VoidCardAnswerSerializer, **WRITE_ERRORS},
        summary="Void a card (seen face up in the sabot, or dropped)",
        description="The card leaves the shoe for the sibilla (RULES.md §1). `reason` required "
        "(missing or blank: 400 `invalid_input` naming it; invisible characters only: 400 `reason_required`). "
        "Codes: `bad_card`, `card_exhausted`, `shoe_empty`, `no_shoe`." + WRITE_NOTE,
    )
    def post(self, request, pk: int):
        session = self.writable_session(pk)
        data = CardVoidInput(data=request.data)
        data.is_valid(raise_exception=True)
        card = services.card_void(session=session, by=request.user, **data.validated_data)
        return Response(
            {"card": VoidCardSerializer(card).data, "game": _game(session.pk)}, status=status.HTTP_201_CREATED
        )


# --------------------------------------------------------------------------- banks


class BankListApi(_TableApi):
    serializer_class = CoupBankSerializer

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Bank.objects.none()
        return selectors.bank_list(session=get_object_or_404(TableSession, pk=self.kwargs["pk"]))

    @extend_schema(
        responses={200: CoupBankSerializer(many=True), **READ_ERRORS},
        summary="The session's banks",
        description="Every bank of the session in order (`number`), the ended ones included: its banker and "
        "seat, its amount now and at its opening (cents), how it came (`origin`), `status` (`active`, `ended`) "
        "and why it ended (`end_reason`). The Commissario, the Direzione and the auditors read any session; a "
        "Capo Partita or a changeur only one he works or worked at (403 `permission_denied` for another); 404 "
        "`not_found`: no such session. Only the session's Capo Partita opens a bank (POST). " + PAGINATED,
    )
    def get(self, request, pk: int):
        check_session_readable(request.user, pk)
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(CoupBankSerializer(page, many=True).data)

    @extend_schema(
        request=BankOpenInput,
        responses={201: BankAnswerSerializer, **WRITE_ERRORS},
        examples=BANK_EXAMPLES,
        summary="Open a bank",
        description="The first bank of the session goes, once enough seats are taken, to the player at "
        "seat 1, or when it is empty (or he declined, `POST .../banks/first/pass/`) the first occupied seat "
        "after it in the profile's rotation: the game state's `rotation.next_seat` (RULES.md §6); a later "
        "one to a seated or standing patron. Codes: `bank_already_active`, "
        "`bank_below_minimum`, `bank_above_maximum`, `bad_amount`, `not_enough_players`, "
        "`not_first_banker_seat` (details: first_banker_seat, whose turn it is), `first_bank_declined_by_all`, "
        "`patron_not_at_table`, `patron_barred` (faux tirage), `auction_in_progress` (an open asta's bids bind), "
        "`outgoing_banker` (a succession's outgoing banker does not take his own bank)." + WRITE_NOTE,
    )
    def post(self, request, pk: int):
        session = self.writable_session(pk)
        data = BankOpenInput(data=request.data)
        data.is_valid(raise_exception=True)
        bank = services.bank_open(session=session, by=request.user, **data.validated_data)
        return _bank_answer(bank, status.HTTP_201_CREATED)


def _bank_answer(bank: Bank, code: int) -> Response:
    rows = getattr(bank, "game_rows", None)  # bank_open hands over what it holds, as written
    if rows is None:
        bank = selectors.bank_list(session=TableSession(pk=bank.session_id)).get(pk=bank.pk)
    return Response({"bank": bank_data(bank), "game": _game(bank.session_id, rows)}, status=code)


class FirstBankPassApi(_TableApi):
    @extend_schema(
        request=FirstBankPassInput,
        responses={201: FirstBankPassAnswerSerializer, **WRITE_ERRORS},
        summary="Decline the first bank (passe)",
        description="Before the session's first bank, the seated player whose turn it is (the game "
        "state's `rotation.next_seat`) declines it: the turn goes to the next occupied seat in the "
        "profile's rotation (RULES.md §5, §6). Codes: `not_first_banker_seat` (details: "
        "first_banker_seat, whose turn it is), `first_bank_opened` (409), `first_bank_declined_by_all` "
        "(409), `not_enough_players`, `patron_not_at_table`." + WRITE_NOTE,
    )
    def post(self, request, pk: int):
        session = self.writable_session(pk)
        data = FirstBankPassInput(data=request.data)
        data.is_valid(raise_exception=True)
        row = services.first_bank_pass(session=session, by=request.user, **data.validated_data)
        patron = data.validated_data["patron"]
        game = _game(session.pk, row.game_rows)
        return Response(
            {
                "passed": {
                    "patron": {"id": patron.pk, "name": patron.full_name},
                    "seat_number": row.seat_number,
                    "at": DateTimeField().to_representation(row.at),
                    "next_seat": game["rotation"]["next_seat"],
                },
                "game": game,
            },
            status=status.HTTP_201_CREATED,
        )


class BankWithdrawApi(TakesNoBody, _TableApi):
    @extend_schema(
        request=None,
        responses={200: BankAnswerSerializer, **WRITE_ERRORS},
        summary="The banker withdraws, taking the bank",
        description="After at least one completed coup, between coups (RULES.md §4). Codes: "
        "`withdraw_too_early`, `coup_in_progress`, `bank_not_active`." + WRITE_NOTE,
    )
    def post(self, request, pk: int):
        bank = get_object_or_404(Bank.objects.select_related("session"), pk=pk)
        self.check_object_permissions(request, bank)
        bank = services.bank_withdraw(bank=bank, by=request.user)
        return _bank_answer(bank, status.HTTP_200_OK)


class BankRaiseApi(_TableApi):
    @extend_schema(
        request=BankRaiseInput,
        responses={200: BankAnswerSerializer, **WRITE_ERRORS},
        summary="domestic: the banker puts up more than the continuation requires",
        description="The bank continues at least at 2S after a win, S after a tie (RULES.md §4); the banker "
        "may raise it between coups, up to the table maximum. Codes: `bank_raise_not_in_profile` (409: "
        "venezia, classic, chemmy-fi fix the continuation), `bank_raise_too_early`, `bank_raise_not_higher`, "
        "`bank_above_maximum`, `coup_in_progress`, `bank_not_active`." + WRITE_NOTE,
    )
    def post(self, request, pk: int):
        data = BankRaiseInput(data=request.data)
        data.is_valid(raise_exception=True)
        bank = get_object_or_404(Bank.objects.select_related("session"), pk=pk)
        self.check_object_permissions(request, bank)
        bank = services.bank_raise(bank=bank, by=request.user, amount=data.validated_data["amount"])
        return _bank_answer(bank, status.HTTP_200_OK)


# --------------------------------------------------------------------------- coups


class CoupFilter(StrictFilterSet):
    state = django_filters.ChoiceFilter(choices=Coup.State.choices)
    conforming = StrictBooleanFilter()

    class Meta:
        model = Coup
        fields = ["state", "conforming"]


class CoupListApi(TakesNoBody, _TableApi):
    serializer_class = CoupSummarySerializer
    filterset_class = CoupFilter

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Coup.objects.none()
        return selectors.coup_list(session=get_object_or_404(TableSession, pk=self.kwargs["pk"]))

    @extend_schema(
        responses={200: CoupSummarySerializer(many=True), **READ_ERRORS},
        summary="The session's coups, in order",
        description="Paginated (`page`, `page_size`); filter by `state` and `conforming` (false: the reconstructed ones).",
    )
    def get(self, request, pk: int):
        check_session_readable(request.user, pk)
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        return self.get_paginated_response(CoupSummarySerializer(page, many=True).data)

    @extend_schema(
        request=None,
        responses={201: CoupAnswerSerializer, **WRITE_ERRORS},
        summary="Open a coup on the active bank",
        description="B is the bank's current amount. Next: bets or banco calls, then rien ne va plus. "
        "Codes: `no_active_bank`, `no_shoe`, `stop_card_reached`, `coup_in_progress`, `banker_barred` "
        "(a banker barred for a faux tirage deals no further coup: his bank ends by a withdrawal)." + WRITE_NOTE,
    )
    def post(self, request, pk: int):
        session = self.writable_session(pk)
        coup = services.coup_open(session=session, by=request.user)
        return _coup_answer(coup, status.HTTP_201_CREATED)


class CoupRecordApi(_TableApi):
    @extend_schema(
        request=CoupRecordInput,
        responses={201: CoupAnswerSerializer, **WRITE_ERRORS},
        examples=RECORD_EXAMPLES,
        summary="Record a whole coup in one request",
        description="Opens the coup, places the banco calls (in order) or the bets (in betting order), "
        "closes betting, deals the cards in shoe order with the declarations, then enters the "
        "reconstruction's next cards and decisions: exactly the steps of the tablet, in one "
        "transaction; any refusal writes nothing. A reconstruction that still waits leaves the "
        "coup `pending` (then POST /api/coups/{id}/reconstruction/...). Codes: every step's, "
        "named on the step's own operation: opening the coup (`no_active_bank`, `no_shoe`, "
        "`stop_card_reached`, `coup_in_progress`, `banker_barred`), the banco calls and bets, rien ne va plus, the cards, "
        "the declarations and the reconstruction; and "
        "`declaration_required`, `cards_missing`, `unused_next_cards`, `unused_reconstruction`." + WRITE_NOTE,
    )
    def post(self, request, pk: int):
        session = self.writable_session(pk)
        data = CoupRecordInput(data=request.data)
        data.is_valid(raise_exception=True)
        coup = services.coup_record(session=session, by=request.user, **data.validated_data)
        return _coup_answer(coup, status.HTTP_201_CREATED)


class CoupDetailApi(APIView):
    permission_classes = (IsSessionCapoPartita,)

    @extend_schema(
        responses={200: CoupDetailSerializer, **READ_ERRORS},
        summary="A coup as recorded",
        description="Both versions (as played, and the one settled on: the reconstruction when "
        "non-conforming), the violations, the bets and the postings (they sum to zero).",
    )
    def get(self, request, pk: int):
        session_id = Coup.objects.filter(pk=pk).values_list("session_id", flat=True).first()
        if session_id is None:
            raise NotFound()
        check_session_readable(request.user, session_id)
        coup = selectors.coup_list(session=TableSession(pk=session_id)).get(pk=pk)
        return Response(CoupDetailSerializer(coup).data)


class _CoupStepApi(_TableApi):
    """POST /api/coups/{id}/<step>/: input -> one service -> the coup and the game state."""

    input_serializer = None

    def post(self, request, pk: int):
        coup = self.writable_coup(pk)
        kwargs = {}
        if self.input_serializer is not None:
            data = self.input_serializer(data=request.data)
            data.is_valid(raise_exception=True)
            kwargs = data.validated_data
        self.step(coup=coup, by=request.user, **kwargs)
        return _coup_answer(coup, self.success_status)

    success_status = status.HTTP_200_OK

    def step(self, **kwargs):  # pragma: no cover - every subclass names its service
        raise NotImplementedError


def _step_schema(request, summary: str, description: str, code: int = 200, examples=None):
    return extend_schema(
        request=request,
        responses={code: CoupAnswerSerializer, **WRITE_ERRORS},
        summary=summary,
        description=description + WRITE_NOTE,
        examples=examples,
    )


class BancoCallApi(_CoupStepApi):
    input_serializer = BancoCallInput
    success_status = status.HTTP_201_CREATED
    step = staticmethod(services.banco_call)

    @_step_schema(
        BancoCallInput,
        "Call banco solo",
        "Several may call; at rien ne va plus the engine picks the winner (banco suivi, then first in "
        "turn from the banker). Codes: `bet_after_rien_ne_va_plus`, `patron_barred`, "
        "`banco_suivi_forbidden` (chemmy-fi), `bets_already_placed`, `banco_already_called`, `banco_carried` "
        "(classic: a banco carried from a tie covers the whole bank), "
        "`banker_cannot_bet`, `patron_not_at_table`.",
        201,
    )
    def post(self, request, pk: int):
        return super().post(request, pk)


class BetPlaceApi(_CoupStepApi):
    input_serializer = BetPlaceInput
    success_status = status.HTTP_201_CREATED
    step = staticmethod(services.bet_place)

    @_step_schema(
        BetPlaceInput,
        "Place a bet",
        "Individual, or banco avec la table (half the bank; `amount` may be omitted). The total never "
        "exceeds the bank. Codes: `bet_after_rien_ne_va_plus`, `bet_over_bank` (details: open), "
        "`bad_amount`, `bet_already_placed`, `banco_called`, `banco_carried` (classic: a banco carried from a tie), "
        "`avec_la_table_taken`, `patron_barred`, "
        "`banker_cannot_bet`, `patron_not_at_table`.",
        201,
        examples=BET_EXAMPLES,
    )
    def post(self, request, pk: int):
        return super().post(request, pk)


class BetWithdrawApi(_CoupStepApi):
    input_serializer = BancoCallInput  # {"patron"}
    step = staticmethod(services.bet_withdraw)

    @_step_schema(
        BancoCallInput,
        "Withdraw a bet carried to a chemmy-fi replay, or a barred player's banco call",
        "chemmy-fi replays a tie, and the bettors may withdraw or change their bets (RULES.md §3.2): "
        "this takes back the bet carried from the tie (to change it, place the new bet: it replaces "
        "the carried one). Elsewhere a bet made in time stands, but the banco call of a player barred since "
        "he called may be taken back (he may not hold the cards). Codes: `bet_not_withdrawable` (409), "
        "`no_bet`, `bet_after_rien_ne_va_plus`, `coup_annulled`.",
    )
    def post(self, request, pk: int):
        return super().post(request, pk)


class RienNeVaPlusApi(TakesNoBody, _CoupStepApi):
    step = staticmethod(services.rien_ne_va_plus)

    @_step_schema(
        None,
        "Rien ne va plus: close betting",
        "Picks the punta (banco, avec la table, else the highest bettor; never a barred player) and "
        "snapshots the Regola marks. Next: the four cards. Codes: `coup_not_betting`, `no_bets`, "
        "`no_eligible_punta`.",
    )
    def post(self, request, pk: int):
        return super().post(request, pk)


class CardDealApi(_CoupStepApi):
    input_serializer = CardDealInput
    step = staticmethod(services.card_deal)

    @_step_schema(
        CardDealInput,
        "Deal the next card",
        "The card as it leaves the shoe; the engine says whose hand it goes to. When the banker's "
        "decision is awaited, a card is his third card (he drew). Codes: `bad_card`, `card_exhausted`, "
        "`shoe_empty`, `declaration_required`, `too_many_cards`, `card_after_natural`, `betting_open`, "
        "`coup_pending`, `coup_moved_on` (with `expect_cards`).",
        examples=CARD_EXAMPLES,
    )
    def post(self, request, pk: int):
        return super().post(request, pk)


class CardCorrectApi(_CoupStepApi):
    input_serializer = CardCorrectInput
    step = staticmethod(services.card_entry_correct)

    @_step_schema(
        CardCorrectInput,
        "Correct the last card, entered wrongly",
        "The coup's last card was tapped wrongly (7D entered for 7H): the same card out of the shoe, at "
        "the same position, is recorded as `card`, its hand gets it in place of `was`, and the coup goes "
        "on as if it had been entered right (`coup.next` recomputed; a coup the card completes is "
        "resolved again on it). Event `card.entry_corrected`. Only the last card, while it is the coup's "
        "latest step. Codes: `card_not_last` (409, `was` is not the coup's last card, or none is dealt: "
        "`details.last` names it), `card_not_latest` (409, a declaration, decision or reconstruction step "
        "followed it), `coup_settled` (409: a settled coup's cards are not corrected; a dispute goes to "
        "the Direzione), `coup_annulled` (409), `card_unchanged` (400, `card` is `was`), and the dealing "
        "codes for `card`: `bad_card`, `card_exhausted`, `burned_card_mismatch` (400). A card seen face up "
        "or dropped is not this: it is voided (POST /api/sessions/{id}/void-cards/).",
        examples=CARD_CORRECT_EXAMPLES,
    )
    def post(self, request, pk: int):
        return super().post(request, pk)


class PuntaDeclareApi(_CoupStepApi):
    input_serializer = DrawsInput
    step = staticmethod(services.punta_declare)

    @_step_schema(
        DrawsInput,
        "The punta's declaration: carte (draws: true) or non",
        "After the four cards, without a punta natural. Codes: `declaration_not_expected`, "
        "`card_after_natural`, `cards_missing`, `betting_open`.",
        examples=DECLARATION_EXAMPLES,
    )
    def post(self, request, pk: int):
        return super().post(request, pk)


class BankerDecideApi(_CoupStepApi):
    input_serializer = DrawsInput
    step = staticmethod(services.banker_decide)

    @_step_schema(
        DrawsInput,
        "The banker draws or stands",
        "Standing completes the coup (settled, or a pending reconstruction when non-conforming); "
        "drawing waits for his card. Codes: `decision_not_expected`, `card_after_natural`.",
        examples=BANKER_DECISION_EXAMPLES,
    )
    def post(self, request, pk: int):
        return super().post(request, pk)


class ReconstructionCardApi(_CoupStepApi):
    input_serializer = CardDealInput
    step = staticmethod(services.reconstruction_card)

    @_step_schema(
        CardDealInput,
        "The next shoe card for a pending reconstruction",
        "RULES.md §3.3. Codes: `reconstruction_not_pending`, `decision_required`, `bad_card`, "
        "`card_exhausted`, `coup_moved_on` (with `expect_cards`: the reconstruction's cards seen).",
        examples=RECONSTRUCTION_CARD_EXAMPLES,
    )
    def post(self, request, pk: int):
        return super().post(request, pk)


class ReconstructionDecideApi(_CoupStepApi):
    input_serializer = ReconstructionDecisionInput
    step = staticmethod(services.reconstruction_decide)

    @_step_schema(
        ReconstructionDecisionInput,
        "A decision for a pending reconstruction",
        "For a free cell the real coup never reached (RULES.md §3.3). Codes: "
        "`reconstruction_not_pending`, `card_required`, `decision_not_expected`.",
        examples=RECONSTRUCTION_DECISION_EXAMPLES,
    )
    def post(self, request, pk: int):
        return super().post(request, pk)


class IsSessionCapoPartitaOrCommissario(IsSessionCapoPartita):
    """Annulling a coup: its table's Capo Partita (before the cards), or a Commissario or the
    Direzione Giochi (once they have started). Which of them may annul this coup depends on its
    state, read under the locks: the service decides, with its own codes
    (`not_session_capo_partita`, `not_commissario`, 403). Anyone else: 403 `permission_denied`
    here."""

    message = "Only the table's Capo Partita, a Commissario or the Direzione Giochi may do this."

    def has_permission(self, request, view) -> bool:
        if request.method not in ("GET", "HEAD", "OPTIONS") and has_role(request.user, *ANNULS_STARTED):
            return True
        return super().has_permission(request, view)

    def has_object_permission(self, request, view, obj) -> bool:
        if request.method not in ("GET", "HEAD", "OPTIONS") and has_role(request.user, *ANNULS_STARTED):
            return True
        return super().has_object_permission(request, view, obj)


ANNUL_403 = OpenApiResponse(
    ErrorSerializer,
    description="`not_commissario`: the coup's cards have started and only a Commissario or the Direzione "
    "Giochi may annul it (the Capo Partita may not); `not_session_capo_partita`: before its cards, only the "
    "table's Capo Partita annuls it; `permission_denied`: neither the table's Capo Partita, nor a "
    "Commissario, nor the Direzione Giochi.",
)
ANNUL_409 = OpenApiResponse(
    ErrorSerializer,
    description="`coup_not_annullable`: the coup is settled; `coup_annulled`: annulled already; "
    "`session_closed`.",
)


class CoupAnnulApi(_CoupStepApi):
    permission_classes = (IsSessionCapoPartitaOrCommissario,)
    input_serializer = CoupAnnulInput
    step = staticmethod(services.coup_annul)

    @extend_schema(
        request=CoupAnnulInput,
        responses={200: CoupAnswerSerializer, **WRITE_ERRORS, 403: ANNUL_403, 409: ANNUL_409},
        summary="Annul a coup that is not settled",
        description="Before its first card (while it takes bets or after rien ne va plus), by the table's "
        "Capo Partita. Once its cards have started (dealing, or a reconstruction pending), only by a "
        "Commissario di Gioco or the Direzione Giochi: the recovery of a coup that cannot be played to its "
        "end (its settlement refused by the books, `settlement_refused`; a tablet lost mid-coup), or a "
        "dispute the Direzione decides (RULES.md §6: its decision is final). Either way the bets go back "
        "to the players, no money moves (no posting, no cagnotte), the bank is unchanged and the next "
        "coup may open; the cards already out stay out of the shoe (a drawn card never goes back) and "
        "the `coup.annulled` event names them. Allowed while play is interrupted, so that the session "
        "can then be closed. The coup keeps its number, bets, cards and reason for the record. `reason` "
        "required (missing or blank: 400 `invalid_input` naming it; invisible characters only: 400 "
        "`reason_required`). Codes: `not_commissario` (403), `coup_not_annullable` (409: settled), "
        "`text_too_long`. Requires an `Idempotency-Key`. Refusals common to the table: "
        "`session_closed` (409), `profile_not_supported`.",
    )
    def post(self, request, pk: int):
        return super().post(request, pk)


# --------------------------------------------------------------------------- marks


class RegolaMarkApi(_TableApi):
    @extend_schema(
        request=RegolaMarkInput,
        responses={200: MarkAnswerSerializer, **WRITE_ERRORS},
        examples=REGOLA_EXAMPLES,
        summary="Mark (or unmark) a player alla Regola",
        description="venezia only; applies from the next rien ne va plus. Codes: `regola_not_allowed`, "
        "`patron_not_at_table`, `regola_unchanged` (409: he is so already)." + WRITE_NOTE,
    )
    def post(self, request, pk: int):
        session = self.writable_session(pk)
        data = RegolaMarkInput(data=request.data)
        data.is_valid(raise_exception=True)
        mark = services.regola_mark(session=session, by=request.user, **data.validated_data)
        patron = data.validated_data["patron"]
        return Response(
            {
                "mark": {"patron": {"id": patron.pk, "name": patron.full_name}, "declared": mark.declared},
                "game": _game(session.pk),
            }
        )


class FauxTirageBarApi(_TableApi):
    @extend_schema(
        request=FauxTirageBarInput,
        responses={201: BarAnswerSerializer, **WRITE_ERRORS},
        summary="Bar a player from holding the cards (faux tirage)",
        description="For the rest of the session; he may still bet (RULES.md §4). `reason` required "
        "(missing or blank: 400 `invalid_input` naming it; invisible characters only: 400 `reason_required`). "
        "Codes: `patron_already_barred`, `patron_not_at_table`." + WRITE_NOTE,
    )
    def post(self, request, pk: int):
        session = self.writable_session(pk)
        data = FauxTirageBarInput(data=request.data)
        data.is_valid(raise_exception=True)
        bar = services.faux_tirage_bar(session=session, by=request.user, **data.validated_data)
        patron = data.validated_data["patron"]
        return Response(
            {
                "bar": {
                    "patron": {"id": patron.pk, "name": patron.full_name},
                    "reason": bar.reason,
                    # In the casino's zone, as every other time the API gives (not UTC's "Z").
                    "at": DateTimeField().to_representation(bar.at),
                },
                "game": _game(session.pk),
            },
            status=status.HTTP_201_CREATED,
        )


urlpatterns = [
    path("sessions/<int:pk>/game/", GameStateApi.as_view(), name="session-game"),
    path("sessions/<int:pk>/balances/", SessionBalancesApi.as_view(), name="session-balances"),
    path("sessions/<int:pk>/shoes/", ShoeLoadApi.as_view(), name="session-shoes"),
    path("sessions/<int:pk>/void-cards/", CardVoidApi.as_view(), name="session-void-cards"),
    path("sessions/<int:pk>/banks/", BankListApi.as_view(), name="session-banks"),
    path("sessions/<int:pk>/banks/first/pass/", FirstBankPassApi.as_view(), name="session-first-bank-pass"),
    path("banks/<int:pk>/withdraw/", BankWithdrawApi.as_view(), name="bank-withdraw"),
    path("banks/<int:pk>/raise/", BankRaiseApi.as_view(), name="bank-raise"),
    path("sessions/<int:pk>/coups/", CoupListApi.as_view(), name="session-coups"),
    path("sessions/<int:pk>/coups/record/", CoupRecordApi.as_view(), name="session-coup-record"),
    path("coups/<int:pk>/", CoupDetailApi.as_view(), name="coup-detail"),
    path("coups/<int:pk>/banco/", BancoCallApi.as_view(), name="coup-banco"),
    path("coups/<int:pk>/annul/", CoupAnnulApi.as_view(), name="coup-annul"),
    path("coups/<int:pk>/bets/", BetPlaceApi.as_view(), name="coup-bets"),
    path("coups/<int:pk>/bets/withdraw/", BetWithdrawApi.as_view(), name="coup-bet-withdraw"),
    path("coups/<int:pk>/rien-ne-va-plus/", RienNeVaPlusApi.as_view(), name="coup-rien-ne-va-plus"),
    path("coups/<int:pk>/cards/", CardDealApi.as_view(), name="coup-cards"),
    path("coups/<int:pk>/cards/correct/", CardCorrectApi.as_view(), name="coup-card-correct"),
    path("coups/<int:pk>/declaration/", PuntaDeclareApi.as_view(), name="coup-declaration"),
    path("coups/<int:pk>/banker-decision/", BankerDecideApi.as_view(), name="coup-banker-decision"),
    path(
        "coups/<int:pk>/reconstruction/card/", ReconstructionCardApi.as_view(), name="coup-reconstruction-card"
    ),
    path(
        "coups/<int:pk>/reconstruction/decision/",
        ReconstructionDecideApi.as_view(),
        name="coup-reconstruction-decision",
    ),
    path("sessions/<int:pk>/regola/", RegolaMarkApi.as_view(), name="session-regola"),
    path("sessions/<int:pk>/bars/", FauxTirageBarApi.as_view(), name="session-bars"),
]
