"""Settlement of a coup (RULES.md §4): the engine's figures, booked as double entry.

Called by the coup services when the version to settle on is final (§3.3); never by the
API directly. The caller holds the session, bank and coup locks."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import IntegrityError

from config import prepared
from config.errors import Conflict, integrity_constraint
from floor.models import Seat, TableSession
from tables.engine import BANKER, PUNTA, settle

from ..models import Bank, Bet, Coup, Posting
from ._common import User, audit, cagnotte_settings, engine_errors, now, profile_of
from .succession import succession_start


def settle_coup(
    *,
    session: TableSession,
    coup: Coup,
    by: User,
    winner: str,
    bets: list[Bet] | None = None,
    coup_fields: Iterable[str] = (),
    seats: list[Seat] | None = None,
    barred: set[int] | None = None,
    writes: list | None = None,
) -> Coup:
    """Book the coup: bettors paid 1:1 or collected, the cagnotte on the banker's win at the
    table's rate, unit and rounding; ties per profile (engine tie_outcome); then the bank
    continues (engine next_bank) or ends (lost). The postings sum to zero, to the cent.

    `bets`: the coup's bets when the caller holds them; `coup_fields`: columns of `coup` the
    caller changed and has not written yet, written with the settlement's own UPDATE (before
    the succession reads the coups back); `seats` and `barred`: the session's active places
    and barred patrons when the caller holds them (for the succession when the bank passes).
    `writes`: rows and statements the caller deferred (the shoe's new cards and state),
    written first in the settlement's round trip (config.prepared.write_rows).
    A succession started is left on `coup.started_succession`."""
    profile = profile_of(session)
    rate, unit, rounding = cagnotte_settings(session)
    bank: Bank = coup.bank
    # The caller may hand over the coup's bets it holds (the coup services do): same rows.
    bets = list(coup.bets.order_by("order")) if bets is None else sorted(bets, key=lambda b: b.order)
    with engine_errors():
        result = settle(
            bank=coup.bank_amount,
            bets=[(b.pk, b.amount) for b in bets],
            winner=winner,
            profile=profile,
            rate=rate,
            unit=unit,
            rounding=rounding,
        )
    at = now()
    by_bet = {b.pk: b for b in bets}
    rows = []
    for p in result.postings:
        if p.account == "bettor":
            bet = by_bet[p.key]
            rows.append(
                Posting(
                    coup=coup,
                    session=session,
                    patron_id=bet.patron_id,
                    bet=bet,
                    role=Posting.Role.BETTOR,
                    amount=p.amount,
                    at=at,
                )
            )
        elif p.account == "banker":
            rows.append(
                Posting(
                    coup=coup,
                    session=session,
                    patron_id=bank.banker_id,
                    role=Posting.Role.BANKER,
                    amount=p.amount,
                    at=at,
                )
            )
        else:  # the cagnotte: the house's (RULES.md §4)
            rows.append(
                Posting(
                    coup=coup, session=session, patron=None, role=Posting.Role.HOUSE, amount=p.amount, at=at
                )
            )
    # The books balance per coup; a CHECK cannot span rows, so the service asserts it.
    if sum(r.amount for r in rows) != 0:  # an explicit check: asserts vanish under python -O
        raise RuntimeError(f"postings of coup {coup.pk} do not sum to zero")
    old_amount = bank.amount
    bank.coups_completed += 1
    fields = ["coups_completed"]
    if winner == BANKER:
        nb = result.next_bank
        # venezia: the whole stake stays in (B + S - cagnotte); domestic: the uncovered
        # reserve B - S goes back to the banker, the bank continues at 2S (RULES.md §4).
        bank.amount = nb.holding - nb.personal_reserve
        bank.reserve_returned += nb.personal_reserve
        fields += ["amount", "reserve_returned"]
    elif result.tie is not None and result.tie.minimum_next_bank is not None:
        # domestic (seed 002): on a tie the bets go back and the bank continues at the stake
        # it covered, S; the uncovered reserve B - S stays the banker's and is not forced back
        # in ("a reserva pessoal mantém-se"), as after a win. He may raise it back (bank_raise).
        reserve = coup.bank_amount - result.tie.minimum_next_bank
        if reserve > 0:
            bank.amount = result.tie.minimum_next_bank
            bank.reserve_returned += reserve
            fields += ["amount", "reserve_returned"]
    elif winner == PUNTA:
        # The banker keeps the uncovered part B - S; the bank passes (RULES.md §4, §5).
        bank.amount = coup.bank_amount - coup.covered
        bank.status, bank.end_reason, bank.ended_at, bank.ended_by = (
            Bank.Status.ENDED,
            Bank.EndReason.LOST,
            at,
            by,
        )
        fields += ["amount", "status", "end_reason", "ended_at", "ended_by"]

    coup.winner, coup.cagnotte, coup.banker_net = winner, result.cagnotte, result.banker_net
    coup.settlement = result.as_dict()
    coup.state, coup.settled_at, coup.settled_by = Coup.State.SETTLED, at, by
    settled_fields = {"winner", "cagnotte", "banker_net", "settlement", "state", "settled_at", "settled_by"}
    # What the caller deferred, the postings, the bank and the coup: one round trip.
    try:
        prepared.write_rows(
            [
                *(writes or ()),
                rows,
                prepared.update_sql(bank, fields),
                prepared.update_sql(coup, sorted(settled_fields | set(coup_fields))),
            ]
        )
    except IntegrityError as exc:
        # A figure the books refuse (a negative bank, a posting that breaks a rule): the
        # whole request is rolled back, the coup is as it was before this step, and the
        # refusal names the constraint and the figures rather than a bare `conflict`.
        raise Conflict(
            "settlement_refused",
            "The coup's settlement breaks a rule of the books; nothing was recorded.",
            details={
                "coup": coup.pk,
                "constraint": integrity_constraint(exc),
                "winner": winner,
                "bank_amount": coup.bank_amount,
                "covered": coup.covered,
                "cagnotte": result.cagnotte,
                "banker_net": result.banker_net,
            },
        ) from exc
    audit(
        session,
        by,
        "coup.settled",
        coup,
        {
            "coup": coup.pk,
            "number": coup.number,
            "winner": winner,
            "bank_amount": coup.bank_amount,
            "covered": coup.covered,
            "cagnotte": result.cagnotte,
            "banker_net": result.banker_net,
            "conforming": coup.conforming,
            "settled_on": "reconstruction" if not coup.conforming else "as_played",
            # Each posting's bet too: the report sums a bet's result from its postings.
            "postings": [
                {"patron": r.patron_id, "role": r.role, "amount": r.amount, "bet": r.bet_id} for r in rows
            ],
            "bank": {"old": old_amount, "new": bank.amount, "status": bank.status,
                     "reserve_returned": bank.reserve_returned},
            "tie": coup.settlement["tie"],
            "at": at.isoformat(),
            # The version settled on, when it is a reconstruction (RULES.md §3.3): its
            # `coup.played` may have recorded it pending (audit.reports.ledger holds the coup
            # row and its void cards to it).
            **({} if coup.conforming else {"resolution": coup.settled}),
        },
    )
    if winner == PUNTA:
        audit(
            session,
            by,
            "bank.lost",
            bank,
            {
                "number": bank.number,
                "banker": bank.banker_id,
                "coup": coup.pk,
                "amount": bank.amount,
                "initial_amount": bank.initial_amount,
                "coups_completed": bank.coups_completed,
                "at": at.isoformat(),
            },
        )
        # RULES.md §5: the bank passes at once, offered to the next in rotation.
        coup.started_succession = succession_start(
            session=session, bank=bank, by=by, seats=seats, barred=barred
        )
    return coup
