"""Settlement arithmetic (RULES.md §4): integer cents only, Fraction for rates.

Given the bank, the covered bets and the winner (of the settled version of the coup, §3.3),
compute every figure the books need and a list of postings that always sums to zero:
the bettors, the banker (or the house in punto banco) and the cagnotte.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from fractions import Fraction
from typing import Any, NamedTuple

from .errors import EngineError
from .profiles import Continuation, Profile, Rounding, TieRule

PUNTA = "punta"
BANKER = "banker"
TIE = "tie"
WINNERS = (PUNTA, BANKER, TIE)


class Posting(NamedTuple):
    account: str  # "bettor" | "banker" | "house_bank" (punto banco) | "cagnotte" | "commission"
    key: Hashable | None  # the bettor's key; None for the banker and the house
    amount: int  # cents; + the account receives, - it pays


class TieOutcome(NamedTuple):
    """What a tie means at this table (RULES.md §3.2, row "tie"); data for the floor layer."""

    rule: TieRule
    bets_return: bool  # the bets go back to their owners
    bets_stay: bool  # the bets stay on the table for the next coup
    bettors_may_change: bool  # chemmy-fi: bettors may withdraw or change their bets
    same_banker: bool
    next_bank: int | None  # the bank for the next coup when it is fixed (void: the same bank)
    minimum_next_bank: int | None  # domestic: the bank continues at >= S


class NextBank(NamedTuple):
    """After the banker wins: what he must put up to keep the bank (RULES.md §4)."""

    rule: Continuation
    holding: int  # everything the banker now has from this bank: B + S - cagnotte
    minimum: int | None  # the least next bank (venezia: the whole stake; domestic: 2S)
    personal_reserve: int  # domestic: the uncovered B - S stays his, not forced back in


class SettlementResult(NamedTuple):
    bank: int
    covered: int  # S, the sum of the bets
    winner: str
    deltas: tuple[tuple[Hashable, int], ...]  # per bet, in the order given
    banker_gross: int  # what the coup gives the banker before the cagnotte (+S, -S or 0)
    cagnotte: int  # or the commission in punto banco
    banker_net: int
    postings: tuple[Posting, ...]
    uncovered: int  # B - S: stays the banker's (§2.2)
    next_bank: NextBank | None  # when the banker won
    tie: TieOutcome | None  # when the coup was a tie

    def as_dict(self) -> dict[str, Any]:
        out = self._asdict()
        out["deltas"] = [list(d) for d in self.deltas]
        out["postings"] = [p._asdict() for p in self.postings]
        out["next_bank"] = self.next_bank._asdict() if self.next_bank else None
        out["tie"] = self.tie._asdict() if self.tie else None
        return out


def _amount(value: object, what: str) -> int:
    # bool is an int subclass; True cents is not an amount.
    if type(value) is not int or value <= 0:
        raise EngineError("bad_amount", f"{what} must be a positive integer number of cents, got {value!r}")
    return value


def round_to_unit(amount: Fraction, unit: int, rounding: Rounding) -> int:
    """Round a non-negative amount of cents to a multiple of `unit` (RULES.md §4: the
    cagnotte to the nearest 10 cents by default, halves up, art. 59)."""
    if type(unit) is not int or unit <= 0:
        raise EngineError("bad_amount", f"the rounding unit must be a positive integer, got {unit!r}")
    q = Fraction(amount) / unit
    if rounding == Rounding.NEAREST:
        n = (q + Fraction(1, 2)).__floor__()
    elif rounding == Rounding.DOWN:
        n = q.__floor__()
    elif rounding == Rounding.UP:
        n = q.__ceil__()
    else:
        raise EngineError("bad_rounding", f"unknown rounding {rounding!r}")
    return n * unit


def cagnotte_for(covered: int, rate: Fraction, unit: int, rounding: Rounding) -> int:
    """The house's levy on a coup the banker wins: rate x S, rounded (RULES.md §4).

    The cagnotte is "taken from the banker's winnings" (§4), so it never exceeds S: when the
    rounding (up, or to a unit larger than the levy) would take more, it is capped at S
    rounded DOWN to the unit, so it stays a payable multiple of the unit (0 when S is under
    one unit). The banker's net on a win is therefore never negative."""
    rate = Fraction(rate)
    if rate < 0 or rate >= 1:
        raise EngineError("bad_rate", f"the cagnotte rate must be in [0, 1), got {rate}")
    levy = round_to_unit(rate * covered, unit, rounding)
    return min(levy, round_to_unit(Fraction(covered), unit, Rounding.DOWN))


def tie_outcome(profile: Profile, bank: int, covered: int) -> TieOutcome:
    rule = profile.tie
    if rule == TieRule.VOID:
        return TieOutcome(rule, True, False, False, True, bank, None)
    if rule == TieRule.BETS_STAY:
        return TieOutcome(rule, False, True, False, True, bank, None)
    if rule == TieRule.VOID_BANK_AT_LEAST_STAKE:
        return TieOutcome(rule, True, False, False, True, None, covered)
    if rule == TieRule.REPLAY:
        return TieOutcome(rule, False, True, True, True, bank, None)
    if rule == TieRule.BANKER_BET_PUSH:
        return TieOutcome(rule, True, False, False, True, None, None)
    raise EngineError("bad_profile", f"unknown tie rule {rule!r}")


def next_bank(profile: Profile, bank: int, covered: int, cagnotte: int) -> NextBank | None:
    """After the banker wins (RULES.md §4): venezia keeps the whole stake in; domestic needs 2S."""
    holding = bank + covered - cagnotte
    rule = profile.continuation
    if rule == Continuation.WHOLE_STAKE:
        return NextBank(rule, holding, holding, 0)
    if rule == Continuation.AT_LEAST_DOUBLE_STAKE:
        return NextBank(rule, holding, 2 * covered, bank - covered)
    if rule == Continuation.HOUSE:
        return NextBank(rule, holding, None, 0)
    raise EngineError("bad_profile", f"unknown continuation {rule!r}")


def settle(
    *,
    bank: int,
    bets: Sequence[tuple[Hashable, int]],
    winner: str,
    profile: Profile | None = None,
    rate: Fraction | None = None,
    unit: int | None = None,
    rounding: Rounding | None = None,
) -> SettlementResult:
    """Settle one coup. The rate, unit and rounding come from the profile unless given
    explicitly (they are table settings, §4); without a profile all three are required,
    and continuation and tie details are then omitted."""
    bank = _amount(bank, "the bank")
    if winner not in WINNERS:
        raise EngineError("bad_winner", f"winner must be one of {WINNERS}, got {winner!r}")
    if profile is not None:
        rate = profile.cagnotte_rate if rate is None else rate
        unit = profile.cagnotte_unit if unit is None else unit
        rounding = profile.cagnotte_rounding if rounding is None else rounding
    if rate is None or unit is None or rounding is None:
        raise EngineError("bad_settings", "rate, unit and rounding are needed when no profile is given")

    covered = 0
    for entry in bets:
        try:
            _key, amount = entry
        except (TypeError, ValueError):
            raise EngineError("bad_bet", f"a bet is (bettor key, amount), got {entry!r}") from None
        covered += _amount(amount, "a bet")
    if covered > bank:
        # §2.2: the total S never exceeds B.
        raise EngineError(
            "bets_exceed_bank", f"bets total {covered} exceed the bank {bank}", covered=covered, bank=bank
        )

    sign = 1 if winner == PUNTA else -1 if winner == BANKER else 0
    deltas = tuple((key, sign * amount) for key, amount in bets)
    gross = -sign * covered
    cagnotte = cagnotte_for(covered, rate, unit, rounding) if winner == BANKER else 0
    net = gross - cagnotte

    house_bank = profile is not None and profile.house_bank
    banker_account = "house_bank" if house_bank else "banker"
    levy_account = "commission" if house_bank else "cagnotte"
    postings = [Posting("bettor", key, delta) for key, delta in deltas]
    postings.append(Posting(banker_account, None, net))
    postings.append(Posting(levy_account, None, cagnotte))
    if sum(p.amount for p in postings) != 0:  # the books must balance to the cent (not an assert: -O drops it)
        raise RuntimeError("settlement postings do not sum to zero")

    nb = next_bank(profile, bank, covered, cagnotte) if profile is not None and winner == BANKER else None
    tie = tie_outcome(profile, bank, covered) if profile is not None and winner == TIE else None
    return SettlementResult(
        bank, covered, winner, deltas, gross, cagnotte, net, tuple(postings), bank - covered, nb, tie
    )
