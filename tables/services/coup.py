"""The coup at the table (RULES.md §2, §3.3): open, bets and banco calls, rien ne va plus,
the cards one at a time, the declarations, the reconstruction.

Each public service is one transaction: it locks (session -> bank -> coup), then calls the
matching `_step` function, which assumes the locks are held. coup_record runs the same
steps in order under one lock, so a one-shot coup and a coup entered card by card go
through exactly the same checks and write exactly the same rows and audit events."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Max, Sum

from config.errors import ApplicationError, Conflict
from floor.models import Patron, TableSession
from tables.engine import BANKER, PENDING, PUNTA, live, resolve

from ..models import BancoCall, Bank, Bet, Coup, FauxTirageBar, RegolaMark, Shoe, ShoeCard
from ._common import (
    User,
    active_bank,
    audit,
    engine_errors,
    is_barred,
    lock_coup,
    lock_session,
    now,
    place_of,
    profile_of,
)
from .settlement import settle_coup
from .shoe import draw_card, void_drawn

# --------------------------------------------------------------------------- opening


def _coup_open(session: TableSession, by: User) -> Coup:
    profile_of(session)
    bank = active_bank(session)
    if bank is None:
        raise Conflict("no_active_bank", "No bank is active at this table.")
    shoe = Shoe.objects.filter(session=session, finished_at__isnull=True).first()
    if shoe is None:
        raise Conflict("no_shoe", "No shoe is loaded at this table.")
    if shoe.stop_card_reached_at is not None:
        # RULES.md §6 (art. 58): once the stop card appears no further coup is dealt.
        raise Conflict(
            "stop_card_reached",
            "The stop card has appeared: load a new shoe.",
            details={"shoe": shoe.pk, "seq": shoe.seq},
        )
    previous = Coup.objects.filter(session=session).order_by("-number").first()
    if previous is not None and previous.state != Coup.State.SETTLED:
        raise Conflict(
            "coup_in_progress",
            "A coup is in play at this table.",
            details={"coup": previous.pk, "state": previous.state},
        )
    coup = Coup.objects.create(
        session=session,
        bank=bank,
        shoe=shoe,
        number=(previous.number if previous else 0) + 1,
        bank_amount=bank.amount,
        opened_at=now(),
        opened_by=by,
    )
    carried = _carry_after_tie(session, coup, previous, by)
    audit(
        session,
        by,
        "coup.opened",
        coup,
        {
            "number": coup.number,
            "bank": bank.pk,
            "banker": bank.banker_id,
            "bank_amount": coup.bank_amount,
            "shoe": shoe.pk,
            "carried_bets": carried,
        },
    )
    return coup


def _carry_after_tie(session: TableSession, coup: Coup, previous: Coup | None, by: User) -> list[dict]:
    """classic / chemmy-fi ties: the bets stay on the table for the next coup (engine
    tie_outcome, in the settled payload). A bettor who left the table takes his bet back."""
    if previous is None or previous.bank_id != coup.bank_id or not previous.settlement:
        return []
    tie = previous.settlement.get("tie")
    if not tie or not tie.get("bets_stay"):
        return []
    at = now()
    carried = []
    bets = previous.bets.select_related("seat").order_by("order")
    for bet in bets:
        if bet.seat.left_at is not None:
            continue
        if bet.kind == Bet.Kind.BANCO:
            BancoCall.objects.create(
                coup=coup, patron_id=bet.patron_id, seat=bet.seat, order=bet.order, at=at, by=by
            )
        else:
            Bet.objects.create(
                coup=coup,
                patron_id=bet.patron_id,
                seat=bet.seat,
                standing=bet.standing,
                kind=bet.kind,
                amount=bet.amount,
                order=bet.order,
                carried_from=bet,
                at=at,
                by=by,
            )
        carried.append({"patron": bet.patron_id, "kind": bet.kind, "amount": bet.amount})
    return carried


@transaction.atomic
def coup_open(*, session: TableSession, by: User) -> Coup:
    """Open a coup on the active bank: B is the bank's current amount (RULES.md §2.1)."""
    return _coup_open(lock_session(session, by), by)


# --------------------------------------------------------------------------- betting


def _require_betting(coup: Coup) -> None:
    if coup.state != Coup.State.BETTING:
        # RULES.md §2.2, §6: only the employee closes betting; later bets are refused.
        raise Conflict(
            "bet_after_rien_ne_va_plus",
            "Betting is closed (rien ne va plus).",
            details={"coup": coup.pk, "state": coup.state},
        )


def _bettor_place(session: TableSession, coup: Coup, patron: Patron):
    seat = place_of(session, patron)
    if patron.pk == coup.bank.banker_id:
        raise ApplicationError("banker_cannot_bet", "The banker does not bet against his own bank.")
    return seat


def _previous_banco_loser(session: TableSession, coup: Coup) -> int | None:
    """The punta who lost a banco at the previous coup (banco suivi, RULES.md §2.2)."""
    prev = (
        Coup.objects.filter(session=session, number=coup.number - 1, state=Coup.State.SETTLED)
        .values("banco_solo", "winner", "punta_id")
        .first()
    )
    if prev and prev["banco_solo"] and prev["winner"] == BANKER:
        return prev["punta_id"]
    return None


def _banco_call(session: TableSession, coup: Coup, by: User, patron: Patron) -> BancoCall:
    _require_betting(coup)
    seat = _bettor_place(session, coup, patron)
    if is_barred(session, patron.pk):
        raise ApplicationError(
            "patron_barred",
            "A barred patron may not hold the cards (faux tirage).",
            details={"patron": patron.pk},
        )
    suivi = _previous_banco_loser(session, coup)
    refused = live.banco_refused(profile=profile_of(session), caller=patron.pk, suivi=suivi)
    if refused:
        raise ApplicationError(
            refused,
            "This profile forbids a second banco by a player who lost one.",
            details={"patron": patron.pk},
        )
    if coup.bets.exists():
        raise Conflict("bets_already_placed", "Bets are placed: banco solo covers the whole bank alone.")
    if coup.banco_calls.filter(patron=patron).exists():
        raise Conflict("banco_already_called", "This patron has called banco already.")
    order = (coup.banco_calls.aggregate(m=Max("order"))["m"] or 0) + 1
    call = BancoCall.objects.create(coup=coup, patron=patron, seat=seat, order=order, at=now(), by=by)
    audit(
        session,
        by,
        "banco.called",
        call,
        {
            "coup": coup.pk,
            "patron": patron.pk,
            "seat_number": seat.seat_number,
            "standing": seat.standing,
            "order": order,
            "bank_amount": coup.bank_amount,
            "banco_suivi": suivi == patron.pk,
        },
    )
    return call


@transaction.atomic
def banco_call(*, coup: Coup, by: User, patron: Patron) -> BancoCall:
    """Call banco solo (RULES.md §2.2). Several may call; rien_ne_va_plus decides the winner."""
    session, coup = lock_coup(coup, by)
    return _banco_call(session, coup, by, patron)


def _bet_place(
    session: TableSession, coup: Coup, by: User, patron: Patron, amount: int | None, kind: str
) -> Bet:
    _require_betting(coup)
    if kind not in (Bet.Kind.INDIVIDUAL, Bet.Kind.AVEC_LA_TABLE):
        raise ApplicationError(
            "bad_kind", "A bet is individual or avec_la_table (banco: call it).", details={"kind": kind}
        )
    if kind == Bet.Kind.AVEC_LA_TABLE:
        stake = live.avec_la_table_stake(coup.bank_amount)
        if amount is None:
            amount = stake
        elif amount != stake:
            raise ApplicationError(
                "bad_amount",
                "Banco avec la table is half the bank, rounded up.",
                details={"amount": amount, "expected": stake},
            )
    if type(amount) is not int or amount <= 0:
        raise ApplicationError(
            "bad_amount", "A bet is a positive whole number of cents.", details={"amount": amount}
        )
    seat = _bettor_place(session, coup, patron)
    if coup.banco_calls.exists():
        raise Conflict("banco_called", "Banco is called: it covers the whole bank alone.")
    if kind == Bet.Kind.AVEC_LA_TABLE:
        if is_barred(session, patron.pk):
            raise ApplicationError(
                "patron_barred",
                "A barred patron may not hold the cards (faux tirage).",
                details={"patron": patron.pk},
            )
        if coup.bets.filter(kind=Bet.Kind.AVEC_LA_TABLE).exists():
            raise Conflict("avec_la_table_taken", "Banco avec la table is taken for this coup.")
    totals = coup.bets.aggregate(covered=Sum("amount"), last=Max("order"))
    covered = totals["covered"] or 0
    if coup.bets.filter(patron=patron).exists():
        raise Conflict(
            "bet_already_placed",
            "Bets made in time cannot be changed (RULES.md §6).",
            details={"patron": patron.pk},
        )
    if covered + amount > coup.bank_amount:
        # RULES.md §2.2: the total S never exceeds B; later bettors are excluded once B is covered.
        raise ApplicationError(
            "bet_over_bank",
            "The bets would exceed the bank.",
            details={
                "amount": amount,
                "bank": coup.bank_amount,
                "covered": covered,
                "open": coup.bank_amount - covered,
            },
        )
    bet = Bet.objects.create(
        coup=coup,
        patron=patron,
        seat=seat,
        standing=seat.standing,
        kind=kind,
        amount=amount,
        order=(totals["last"] or 0) + 1,
        at=now(),
        by=by,
    )
    audit(
        session,
        by,
        "bet.placed",
        bet,
        {
            "coup": coup.pk,
            "patron": patron.pk,
            "kind": kind,
            "amount": amount,
            "order": bet.order,
            "seat_number": seat.seat_number,
            "standing": seat.standing,
            "covered": covered + amount,
            "open": coup.bank_amount - covered - amount,
        },
    )
    return bet


@transaction.atomic
def bet_place(
    *, coup: Coup, by: User, patron: Patron, amount: int | None = None, kind: str = "individual"
) -> Bet:
    """A bet before rien ne va plus (RULES.md §2.2): individual, or banco avec la table
    (half the bank, rounded up to the cent; `amount` may then be omitted)."""
    session, coup = lock_coup(coup, by)
    return _bet_place(session, coup, by, patron, amount, kind)


def _calls(rows, barred: set[int]) -> list[live.Call]:
    return [
        live.Call(
            key=r.pk,
            seat_number=r.seat.seat_number,
            order=r.order,
            amount=getattr(r, "amount", 0),
            kind=getattr(r, "kind", Bet.Kind.BANCO),
            barred=r.patron_id in barred,
        )
        for r in rows
    ]


def _rien_ne_va_plus(session: TableSession, coup: Coup, by: User) -> Coup:
    if coup.state != Coup.State.BETTING:
        raise Conflict("coup_not_betting", "Betting is closed already.", details={"state": coup.state})
    profile = profile_of(session)
    barred = set(FauxTirageBar.objects.filter(session=session).values_list("patron_id", flat=True))
    calls = list(coup.banco_calls.select_related("seat").order_by("order"))
    banco = None
    if calls:
        suivi = _previous_banco_loser(session, coup)
        winner = live.banco_winner(
            _calls(calls, barred),
            profile=profile,
            banker_seat=coup.bank.seat.seat_number,
            table_seats=session.table.seats,
            suivi=next((c.pk for c in calls if c.patron_id == suivi), None),
        )
        banco = next(c for c in calls if c.pk == winner.key)
        BancoCall.objects.filter(coup=coup).update(won=False)
        BancoCall.objects.filter(pk=banco.pk).update(won=True)
        Bet.objects.create(
            coup=coup,
            patron_id=banco.patron_id,
            seat=banco.seat,
            standing=banco.seat.standing,
            kind=Bet.Kind.BANCO,
            amount=coup.bank_amount,
            order=1,
            at=now(),
            by=by,
        )
    bets = list(coup.bets.select_related("seat").order_by("order"))
    covered = sum(b.amount for b in bets)
    if covered <= 0:
        raise ApplicationError("no_bets", "No bet covers any of the bank.")
    chosen = live.choose_punta(_calls(bets, barred))
    if chosen is None:
        raise ApplicationError("no_eligible_punta", "Every bettor is barred from holding the cards.")
    punta = next(b for b in bets if b.pk == chosen.key)
    regola = {}
    if profile.regola_allowed:
        regola = dict(
            RegolaMark.objects.filter(
                session=session, patron_id__in=[punta.patron_id, coup.bank.banker_id]
            ).values_list("patron_id", "declared")
        )
    coup.covered, coup.banco_solo = covered, banco is not None
    coup.punta_id, coup.punta_seat_id = punta.patron_id, punta.seat_id
    coup.regola_punta = bool(regola.get(punta.patron_id)) and profile.punta_regola is not None
    coup.regola_banker = bool(regola.get(coup.bank.banker_id)) and profile.banker_regola is not None
    coup.state, coup.closed_at = Coup.State.CLOSED, now()
    coup.save(
        update_fields=[
            "covered",
            "banco_solo",
            "punta",
            "punta_seat",
            "regola_punta",
            "regola_banker",
            "state",
            "closed_at",
        ]
    )
    audit(
        session,
        by,
        "coup.rien_ne_va_plus",
        coup,
        {
            "number": coup.number,
            "bank_amount": coup.bank_amount,
            "covered": covered,
            "uncovered": coup.bank_amount - covered,
            "banco_solo": coup.banco_solo,
            "banco_calls": [c.patron_id for c in calls],
            "punta": punta.patron_id,
            "punta_kind": punta.kind,
            "regola_punta": coup.regola_punta,
            "regola_banker": coup.regola_banker,
            "bets": [{"patron": b.patron_id, "kind": b.kind, "amount": b.amount} for b in bets],
        },
    )
    return coup


@transaction.atomic
def rien_ne_va_plus(*, coup: Coup, by: User) -> Coup:
    """Close betting; pick the punta (RULES.md §2.2); snapshot the Regola marks (§3.2)."""
    session, coup = lock_coup(coup, by)
    return _rien_ne_va_plus(session, coup, by)


# --------------------------------------------------------------------------- the cards


def _step(coup: Coup) -> live.Step:
    return live.next_step(coup.cards, punta_draws=coup.punta_draws, banker_draws=coup.banker_draws)


def _require_dealing(coup: Coup) -> None:
    if coup.state == Coup.State.BETTING:
        raise Conflict("betting_open", "Close betting (rien ne va plus) before the cards.")
    if coup.state == Coup.State.PENDING:
        raise Conflict(
            "coup_pending", "The coup is complete; its reconstruction waits.", details={"needs": coup.needs}
        )


def _card_deal(session: TableSession, coup: Coup, by: User, card: object) -> Coup:
    _require_dealing(coup)
    with engine_errors():
        code, side, banker_draws = live.deal(
            coup.cards, card, punta_draws=coup.punta_draws, banker_draws=coup.banker_draws
        )
    shoe = Shoe.objects.get(pk=coup.shoe_id)
    shoe_card = draw_card(
        session=session, shoe=shoe, by=by, card=code, use=ShoeCard.Use.DEALT, coup=coup, side=side
    )
    coup.cards = [*coup.cards, shoe_card.code]
    coup.banker_draws = banker_draws
    coup.state = Coup.State.DEALING
    coup.save(update_fields=["cards", "banker_draws", "state"])
    step = _step(coup)
    audit(
        session,
        by,
        "card.dealt",
        coup,
        {
            "coup": coup.pk,
            "card": shoe_card.code,
            "position": shoe_card.position,
            "side": side,
            "hands": live.hands(coup.cards, punta_draws=coup.punta_draws).as_dict(),
            "next": step.as_dict(),
        },
    )
    if step.need == live.COMPLETE:
        _complete(session, coup, by, shoe)
    return coup


@transaction.atomic
def card_deal(*, coup: Coup, by: User, card: str) -> Coup:
    """One card as it leaves the shoe; the engine says whose hand it goes to (§2.3-2.7).
    When the banker's turn comes, a card entered is his third card: it is his decision to draw."""
    session, coup = lock_coup(coup, by)
    return _card_deal(session, coup, by, card)


def _punta_declare(session: TableSession, coup: Coup, by: User, draws: bool) -> Coup:
    _require_dealing(coup)
    if type(draws) is not bool:
        raise ApplicationError("bad_decision", "draws is true (carte) or false (non).")
    with engine_errors():
        live.declare(coup.cards, punta_draws=coup.punta_draws, banker_draws=coup.banker_draws)
    hint = _hint(session, coup)
    coup.punta_draws = draws
    coup.save(update_fields=["punta_draws"])
    step = _step(coup)
    audit(
        session,
        by,
        "punta.declared",
        coup,
        {
            "coup": coup.pk,
            "draws": draws,
            "rule": hint,
            "next": step.as_dict(),
        },
    )
    if step.need == live.COMPLETE:  # the banker's natural: the card asked for is not given (§2.6)
        _complete(session, coup, by, None)
    return coup


@transaction.atomic
def punta_declare(*, coup: Coup, by: User, draws: bool) -> Coup:
    """The punta's "carte" (draws=True) or "non" after the four cards, without a natural (§2.5)."""
    session, coup = lock_coup(coup, by)
    return _punta_declare(session, coup, by, draws)


def _banker_decide(session: TableSession, coup: Coup, by: User, draws: bool) -> Coup:
    _require_dealing(coup)
    if type(draws) is not bool:
        raise ApplicationError("bad_decision", "draws is true or false.")
    with engine_errors():
        live.decide(coup.cards, punta_draws=coup.punta_draws, banker_draws=coup.banker_draws)
    hint = _hint(session, coup)
    coup.banker_draws = draws
    coup.save(update_fields=["banker_draws"])
    step = _step(coup)
    audit(
        session,
        by,
        "banker.decided",
        coup,
        {
            "coup": coup.pk,
            "draws": draws,
            "rule": hint,
            "next": step.as_dict(),
        },
    )
    if step.need == live.COMPLETE:
        _complete(session, coup, by, None)
    return coup


@transaction.atomic
def banker_decide(*, coup: Coup, by: User, draws: bool) -> Coup:
    """The banker draws or stands after the punta's part (§2.7). Standing closes the coup;
    drawing waits for his card (entering the card directly means the same)."""
    session, coup = lock_coup(coup, by)
    return _banker_decide(session, coup, by, draws)


def _hint(session: TableSession, coup: Coup) -> dict[str, Any] | None:
    with engine_errors():
        hint = live.decision_hint(
            profile_of(session),
            coup.cards,
            punta_draws=coup.punta_draws,
            banker_draws=coup.banker_draws,
            regola_punta=coup.regola_punta,
            regola_banker=coup.regola_banker,
            banco_solo=coup.banco_solo,
        )
    return None if hint is None else {k: (None if v is None else str(v)) for k, v in hint._asdict().items()}


# --------------------------------------------------------------------------- resolution


def _resolve(session: TableSession, coup: Coup):
    rec = coup.reconstruction or {}
    with engine_errors():
        return resolve(
            coup.cards,
            profile_of(session),
            punta_draws=coup.punta_draws,
            regola_punta=coup.regola_punta,
            regola_banker=coup.regola_banker,
            banco_solo=coup.banco_solo,
            next_cards=coup.next_cards,
            reconstruction_punta_draws=rec.get("punta_draws"),
            reconstruction_banker_draws=rec.get("banker_draws"),
        )


def _complete(session: TableSession, coup: Coup, by: User, shoe: Shoe | None, *, first: bool = True) -> None:
    """The coup as played is complete, or a reconstruction step was entered: the engine
    resolves it (RULES.md §3.3); pending waits for the tablet, final settles at once."""
    res = _resolve(session, coup)
    settled = res.settled
    fields = ["settled", "needs", "state"]
    if first:
        coup.as_played = res.as_played.as_dict()
        coup.conforming = res.conforming
        coup.violations = [v._asdict() for v in res.violations]
        fields += ["as_played", "conforming", "violations"]
    coup.settled = settled.as_dict()
    if settled.status == PENDING:
        coup.state, coup.needs = Coup.State.PENDING, dict(settled.needs)
        coup.save(update_fields=fields)
        if first:
            audit(session, by, "coup.played", coup, _played_payload(coup))
        audit(
            session,
            by,
            "coup.pending",
            coup,
            {
                "coup": coup.pk,
                "needs": coup.needs,
                "next_cards": coup.next_cards,
                "reconstruction": coup.reconstruction,
            },
        )
        return
    coup.needs = None
    coup.save(update_fields=fields)
    if first:
        audit(session, by, "coup.played", coup, _played_payload(coup))
    if settled.void_cards:
        # Drawn in the real coup, unused by the reconstruction: void, to the sibilla (§3.3).
        shoe = shoe or Shoe.objects.get(pk=coup.shoe_id)
        dealt = list(coup.shoe_cards.filter(use=ShoeCard.Use.DEALT).order_by("position"))
        void_drawn(
            shoe=shoe, shoe_cards=dealt[-len(settled.void_cards) :], reason="unused by the reconstruction"
        )
    settle_coup(session=session, coup=coup, by=by, winner=settled.coup.winner)


def _played_payload(coup: Coup) -> dict[str, Any]:
    return {
        "coup": coup.pk,
        "cards": coup.cards,
        "punta_draws": coup.punta_draws,
        "banker_draws": coup.banker_draws,
        "regola_punta": coup.regola_punta,
        "regola_banker": coup.regola_banker,
        "banco_solo": coup.banco_solo,
        "as_played": coup.as_played,
        "conforming": coup.conforming,
        "violations": coup.violations,
        "settled": coup.settled,
    }


def _require_pending(coup: Coup) -> dict[str, Any]:
    if coup.state != Coup.State.PENDING:
        raise Conflict(
            "reconstruction_not_pending",
            "This coup has no pending reconstruction.",
            details={"state": coup.state},
        )
    return coup.needs or {}


def _reconstruction_card(session: TableSession, coup: Coup, by: User, card: object) -> Coup:
    needs = _require_pending(coup)
    if "cards" not in needs:
        raise ApplicationError(
            "decision_required", "The reconstruction needs a decision first.", details=needs
        )
    shoe = Shoe.objects.get(pk=coup.shoe_id)
    shoe_card = draw_card(
        session=session, shoe=shoe, by=by, card=card, use=ShoeCard.Use.RECONSTRUCTION, coup=coup
    )
    coup.next_cards = [*coup.next_cards, shoe_card.code]
    coup.save(update_fields=["next_cards"])
    audit(
        session,
        by,
        "reconstruction.card",
        coup,
        {"coup": coup.pk, "card": shoe_card.code, "position": shoe_card.position},
    )
    _complete(session, coup, by, shoe, first=False)
    return coup


@transaction.atomic
def reconstruction_card(*, coup: Coup, by: User, card: str) -> Coup:
    """The next shoe card for a pending reconstruction (§3.3): shoe-checked and recorded."""
    session, coup = lock_coup(coup, by)
    return _reconstruction_card(session, coup, by, card)


def _reconstruction_decide(session: TableSession, coup: Coup, by: User, side: str, draws: bool) -> Coup:
    needs = _require_pending(coup)
    if side not in (PUNTA, BANKER):
        raise ApplicationError("bad_side", "side is punta or banker.", details={"side": side})
    if type(draws) is not bool:
        raise ApplicationError("bad_decision", "draws is true or false.")
    if needs.get("decision") != side:
        code = "card_required" if "cards" in needs else "decision_not_expected"
        raise ApplicationError(code, "The reconstruction does not wait for this decision.", details=needs)
    coup.reconstruction = {**coup.reconstruction, f"{side}_draws": draws}
    coup.save(update_fields=["reconstruction"])
    audit(session, by, "reconstruction.decided", coup, {"coup": coup.pk, "side": side, "draws": draws})
    _complete(session, coup, by, None, first=False)
    return coup


@transaction.atomic
def reconstruction_decide(*, coup: Coup, by: User, side: str, draws: bool) -> Coup:
    """A decision for a free cell the real coup never reached (§3.3)."""
    session, coup = lock_coup(coup, by)
    return _reconstruction_decide(session, coup, by, side, draws)


# --------------------------------------------------------------------------- one shot


@transaction.atomic
def coup_record(
    *,
    session: TableSession,
    by: User,
    cards: list[str],
    bets: list[dict[str, Any]] | None = None,
    banco: Patron | list[Patron] | None = None,
    punta_draws: bool | None = None,
    banker_draws: bool | None = None,
    next_cards: list[str] | None = None,
    reconstruction: dict[str, bool] | None = None,
) -> Coup:
    """A whole coup in one transaction, through the same steps as the tablet: open, banco
    calls (in order) or bets ({"patron", "amount", "kind"} in betting order), rien ne va
    plus, the cards in shoe order with the declarations, then the reconstruction's next
    cards and decisions. Any refusal rolls everything back. banker_draws may be omitted:
    the cards say whether he drew. A reconstruction that still waits leaves the coup pending."""
    session = lock_session(session, by)
    coup = _coup_open(session, by)
    coup.bank = Bank.objects.select_for_update(of=("self",)).select_related("seat").get(pk=coup.bank_id)
    coup.session = session
    callers = [] if banco is None else banco if isinstance(banco, list | tuple) else [banco]
    for patron in callers:
        _banco_call(session, coup, by, patron)
    for bet in bets or ():
        _bet_place(session, coup, by, bet["patron"], bet.get("amount"), bet.get("kind", Bet.Kind.INDIVIDUAL))
    _rien_ne_va_plus(session, coup, by)
    pending = list(cards)
    while coup.state not in (Coup.State.PENDING, Coup.State.SETTLED):
        step = _step(coup)
        if step.need == live.PUNTA_DECLARATION:
            if punta_draws is None:
                raise ApplicationError("declaration_required", "The punta's declaration is missing.")
            _punta_declare(session, coup, by, punta_draws)
        elif step.need == live.BANKER_DECISION and (
            banker_draws is False or (not pending and banker_draws is None)
        ):
            _banker_decide(session, coup, by, False)
        elif not pending:
            raise ApplicationError(
                "cards_missing", "The coup needs more cards.", details={"need": step.as_dict()}
            )
        else:
            _card_deal(session, coup, by, pending.pop(0))
    if pending:
        _card_deal(session, coup, by, pending[0])  # refused with the engine's code
    extra = list(next_cards or ())
    rec = dict(reconstruction or {})
    while coup.state == Coup.State.PENDING:
        needs = coup.needs or {}
        if "cards" in needs and extra:
            _reconstruction_card(session, coup, by, extra.pop(0))
        elif needs.get("decision") and f"{needs['decision']}_draws" in rec:
            _reconstruction_decide(
                session, coup, by, needs["decision"], rec.pop(f"{needs['decision']}_draws")
            )
        else:
            break
    if extra:
        raise ApplicationError(
            "unused_next_cards", "The coup does not need these shoe cards.", details={"unused": extra}
        )
    return coup


__all__ = [
    "banco_call",
    "banker_decide",
    "bet_place",
    "card_deal",
    "coup_open",
    "coup_record",
    "punta_declare",
    "reconstruction_card",
    "reconstruction_decide",
    "rien_ne_va_plus",
]
