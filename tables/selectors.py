"""Reading the game at a table. session_game_state is everything the tablet needs, in a
constant number of queries whatever the number of bettors, coups or seats."""

from __future__ import annotations

from typing import Any

from django.db.models import Prefetch, QuerySet, Sum

from floor.models import Patron, Seat, TableSession
from tables.engine import EngineError, get_profile, live
from tables.engine import Shoe as EngineShoe

from .models import BancoCall, Bank, Bet, Coup, FauxTirageBar, Posting, RegolaMark, Shoe


def coup_list(*, session: TableSession) -> QuerySet[Coup]:
    return (
        Coup.objects.filter(session=session)
        .select_related("bank", "bank__banker", "punta", "shoe")
        .prefetch_related("bets__patron", "postings")
        .order_by("number")
    )


def bank_list(*, session: TableSession) -> QuerySet[Bank]:
    return Bank.objects.filter(session=session).select_related("banker", "seat").order_by("number")


def patron_balance(*, session: TableSession, patron: Patron) -> int:
    """A patron's running balance at the session: the sum of his postings, cents."""
    return Posting.objects.filter(session=session, patron=patron).aggregate(s=Sum("amount"))["s"] or 0


def session_balances(*, session: TableSession) -> dict[int | None, int]:
    """patron id -> balance; the key None is the house (the cagnotte)."""
    rows = Posting.objects.filter(session=session).values("patron_id").annotate(total=Sum("amount"))
    return {r["patron_id"]: r["total"] for r in rows}


def house_cagnotte(*, session: TableSession) -> int:
    return (
        Posting.objects.filter(session=session, role=Posting.Role.HOUSE).aggregate(s=Sum("amount"))["s"] or 0
    )


def _name(patron: Patron | None) -> dict[str, Any] | None:
    return None if patron is None else {"id": patron.pk, "name": patron.full_name}


def _shoe_state(shoe: Shoe | None) -> dict[str, Any] | None:
    if shoe is None:
        return None
    try:
        state = EngineShoe.from_dict(shoe.state)
    except EngineError:  # never expected: the services only store states the engine made
        return {"id": shoe.pk, "seq": shoe.seq, "number": shoe.number, "error": "bad_state"}
    return {
        "id": shoe.pk,
        "seq": shoe.seq,
        "number": shoe.number,
        "decks": shoe.decks,
        "cards_out": len(state.drawn),
        "cards_left": state.cards_left,
        "dealable": state.dealable,
        "voided": len(state.voided),
        "stop_at": state.stop_at,
        "stop_card_reached": shoe.stop_card_reached_at is not None,
    }


def _coup_state(coup: Coup, profile) -> dict[str, Any]:
    bets = list(coup.bets.all())
    calls = list(coup.banco_calls.all())
    out: dict[str, Any] = {
        "id": coup.pk,
        "number": coup.number,
        "state": coup.state,
        "bank_amount": coup.bank_amount,
        "covered": sum(b.amount for b in bets),
        "banco_solo": coup.banco_solo,
        "punta": _name(coup.punta),
        "regola_punta": coup.regola_punta,
        "regola_banker": coup.regola_banker,
        "bets": [
            {
                "id": b.pk,
                "patron": _name(b.patron),
                "kind": b.kind,
                "amount": b.amount,
                "order": b.order,
                "seat_number": b.seat.seat_number,
                "standing": b.standing,
                "carried": b.carried_from_id is not None,
            }
            for b in bets
        ],
        "banco_calls": [
            {"patron": _name(c.patron), "order": c.order, "seat_number": c.seat.seat_number, "won": c.won}
            for c in calls
        ],
        "cards": list(coup.cards),
        "punta_draws": coup.punta_draws,
        "banker_draws": coup.banker_draws,
        "needs": coup.needs,
        "as_played": coup.as_played,
        "conforming": coup.conforming,
        "violations": coup.violations,
        "settled": coup.settled,
        "next_cards": coup.next_cards,
        "winner": coup.winner or None,
        "cagnotte": coup.cagnotte,
    }
    out["open"] = coup.bank_amount - out["covered"]
    if coup.state == Coup.State.BETTING:
        out["next"] = {"need": "bets", "side": None, "natural": False}
        out["hands"] = None
        out["rule"] = None
        return out
    step = live.next_step(coup.cards, punta_draws=coup.punta_draws, banker_draws=coup.banker_draws)
    out["hands"] = live.hands(coup.cards, punta_draws=coup.punta_draws).as_dict()
    if coup.state == Coup.State.PENDING:
        out["next"] = {"need": "reconstruction", "side": None, "natural": False, "needs": coup.needs}
    elif coup.state == Coup.State.SETTLED:
        out["next"] = None
    else:
        out["next"] = step.as_dict()
    hint = (
        live.decision_hint(
            profile,
            coup.cards,
            punta_draws=coup.punta_draws,
            banker_draws=coup.banker_draws,
            regola_punta=coup.regola_punta,
            regola_banker=coup.regola_banker,
            banco_solo=coup.banco_solo,
        )
        if coup.state in (Coup.State.CLOSED, Coup.State.DEALING)
        else None
    )
    out["rule"] = (
        None if hint is None else {k: (None if v is None else str(v)) for k, v in hint._asdict().items()}
    )
    return out


def session_game_state(session: TableSession) -> dict[str, Any]:
    """The tablet's view of the table: session, bank and banker, the coup in play (or the
    last one) with its bets, hands, what it needs next and the rule in force with the
    Regola hint (engine rule_in_force), the Regola marks, the bars, the shoe, the balances."""
    session = TableSession.objects.select_related("table").get(pk=session.pk)
    profile = get_profile(session.table.profile)
    bank = (
        Bank.objects.filter(session=session, status=Bank.Status.ACTIVE)
        .select_related("banker", "seat")
        .first()
    )
    shoe = Shoe.objects.filter(session=session, finished_at__isnull=True).first()
    coup = (
        Coup.objects.filter(session=session)
        .select_related("punta")
        .prefetch_related(
            Prefetch("bets", queryset=Bet.objects.select_related("patron", "seat").order_by("order")),
            Prefetch(
                "banco_calls", queryset=BancoCall.objects.select_related("patron", "seat").order_by("order")
            ),
        )
        .order_by("-number")
        .first()
    )
    seats = list(Seat.objects.filter(session=session, left_at__isnull=True).select_related("patron"))
    marks = list(RegolaMark.objects.filter(session=session).select_related("patron"))
    bars = list(FauxTirageBar.objects.filter(session=session).select_related("patron"))
    balances = list(
        Posting.objects.filter(session=session)
        .values("patron_id", "patron__first_name", "patron__last_name")
        .annotate(total=Sum("amount"))
        .order_by("patron_id")
    )
    in_play = coup is not None and coup.state != Coup.State.SETTLED
    reasons = []
    if not session.is_open:
        reasons.append("session_closed" if session.is_closed else "session_interrupted")
    if bank is None:
        reasons.append("no_active_bank")
    if shoe is None:
        reasons.append("no_shoe")
    elif shoe.stop_card_reached_at is not None:
        reasons.append("stop_card_reached")
    if in_play:
        reasons.append("coup_in_progress")
    return {
        "session": {
            "id": session.pk,
            "status": session.status,
            "table": session.table.number,
            "profile": profile.name,
            "minimum": session.minimum,
            "maximum": session.maximum,
            "regola_allowed": profile.regola_allowed,
        },
        "bank": None
        if bank is None
        else {
            "id": bank.pk,
            "number": bank.number,
            "banker": _name(bank.banker),
            "seat_number": bank.seat.seat_number,
            "amount": bank.amount,
            "initial_amount": bank.initial_amount,
            "coups_completed": bank.coups_completed,
            "origin": bank.origin,
            "regola": any(m.patron_id == bank.banker_id and m.declared for m in marks),
        },
        "coup": None if coup is None or not in_play else _coup_state(coup, profile),
        "last_coup": None if coup is None or in_play else _coup_state(coup, profile),
        "can_open_coup": not reasons,
        "cannot_open_because": reasons,
        "shoe": _shoe_state(shoe),
        "seats": [
            {
                "patron": _name(s.patron),
                "seat_number": s.seat_number,
                "standing": s.standing,
                "barred": any(b.patron_id == s.patron_id for b in bars),
                "regola": any(m.patron_id == s.patron_id and m.declared for m in marks),
            }
            for s in seats
        ],
        "regola_marks": [{"patron": _name(m.patron), "declared": m.declared} for m in marks],
        "bars": [{"patron": _name(b.patron), "reason": b.reason, "at": b.at.isoformat()} for b in bars],
        "balances": [
            {
                "patron": r["patron_id"],
                "name": f"{r['patron__first_name']} {r['patron__last_name']}",
                "balance": r["total"],
            }
            for r in balances
            if r["patron_id"] is not None
        ],
        "house_cagnotte": sum(r["total"] for r in balances if r["patron_id"] is None),
    }
