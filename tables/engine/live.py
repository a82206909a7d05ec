"""A coup while it is being played: what it needs next, and the betting rules (RULES.md §2).

The rest of the engine judges a coup once its cards are all known (play / resolve). The
tablet records a coup one step at a time, so the floor layer needs to ask, at any moment,
"what may happen next?": the next card (and whose hand it goes to), the punta's
declaration, the banker's decision, or nothing (the coup is complete). It also needs the
betting rules: the order of turn from the banker, who wins a banco call, who holds the
cards (the punta), half the bank for a banco avec la table. All of it is here, pure, built
on the engine's own cards, cells and profiles, so the Django layer re-implements nothing.

One rule the tablet needs that the seeds leave open: when the banker's turn comes (after
the punta's part), a card entered is the banker's third card, i.e. it *is* his decision to
draw; he only has to declare when he stands (`banker_decision` with draws=False closes the
coup). The punta, by contrast, must declare first: a fifth card could be his or the
banker's, and only his declaration says which (RULES.md §2.5, §2.7).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from .cards import Card, card_value, parse_card
from .coup import BANKER, PUNTA, RuleHint, rule_in_force
from .errors import EngineError
from .profiles import BancoSuivi, Profile

CARD = "card"
PUNTA_DECLARATION = "punta_declaration"
BANKER_DECISION = "banker_decision"
COMPLETE = "complete"


class Step(NamedTuple):
    """What the coup needs next. `side` is whose card or decision it is (None when complete)."""

    need: str  # "card" | "punta_declaration" | "banker_decision" | "complete"
    side: str | None
    natural: bool  # a natural was shown (the coup is then complete)

    def as_dict(self) -> dict[str, Any]:
        return self._asdict()


def _two(cards: Sequence[Card], first: int, second: int) -> int:
    return (card_value(cards[first]) + card_value(cards[second])) % 10


def next_step(
    cards: Sequence[Card], *, punta_draws: bool | None = None, banker_draws: bool | None = None
) -> Step:
    """The next step of a coup from its cards so far (shoe order) and the declarations made.

    Cards 1 and 3 are the punta's, 2 and 4 the banker's (§2.3); a punta's natural ends the
    coup (§2.4); otherwise he declares (§2.5); a banker's natural then ends it (§2.6);
    the punta's third card if he said "carte"; then the banker draws or stands (§2.7)."""
    n = len(cards)
    if n < 4:
        return Step(CARD, PUNTA if n % 2 == 0 else BANKER, False)
    if n == 4 and _two(cards, 0, 2) >= 8:
        return Step(COMPLETE, None, True)
    if punta_draws is None:
        return Step(PUNTA_DECLARATION, PUNTA, False) if n == 4 else Step(COMPLETE, None, False)
    if _two(cards, 1, 3) >= 8:
        return Step(COMPLETE, None, True)
    used = 5 if punta_draws else 4
    if n < used:
        return Step(CARD, PUNTA, False)
    if n == used:
        if banker_draws is None:
            return Step(BANKER_DECISION, BANKER, False)
        if banker_draws:
            return Step(CARD, BANKER, False)
    return Step(COMPLETE, None, False)


class Hands(NamedTuple):
    punta: tuple[Card, ...]
    banker: tuple[Card, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            PUNTA: {"cards": list(self.punta), "total": _total(self.punta)},
            BANKER: {"cards": list(self.banker), "total": _total(self.banker)},
        }


def _total(cards: Sequence[Card]) -> int | None:
    return sum(card_value(c) for c in cards) % 10 if cards else None


def hands(cards: Sequence[Card], *, punta_draws: bool | None = None) -> Hands:
    """The cards of each side so far (RULES.md §2, last paragraph)."""
    punta = [c for i, c in enumerate(cards[:4]) if i % 2 == 0]
    banker = [c for i, c in enumerate(cards[:4]) if i % 2 == 1]
    extra = list(cards[4:])
    if extra and punta_draws:
        punta.append(extra.pop(0))
    if extra:
        banker.append(extra.pop(0))
    if extra:
        raise EngineError("too_many_cards", "a coup has at most 6 cards", count=len(cards))
    return Hands(tuple(punta), tuple(banker))


def deal(
    cards: Sequence[Card], card: object, *, punta_draws: bool | None = None, banker_draws: bool | None = None
) -> tuple[Card, str, bool | None]:
    """Check that `card` may be dealt now. Returns (canonical code, whose hand, the banker's
    decision after it: True when this card is his third card, which implies he drew)."""
    code = parse_card(card)
    step = next_step(cards, punta_draws=punta_draws, banker_draws=banker_draws)
    if step.need == CARD:
        return code, step.side, banker_draws
    if step.need == BANKER_DECISION:
        return code, BANKER, True  # the banker's third card is his decision to draw
    if step.need == PUNTA_DECLARATION:
        raise EngineError(
            "declaration_required", "the punta must say carte or non before the next card", need=step.need
        )
    if step.natural:
        raise EngineError("card_after_natural", "a natural was shown: no third card", count=len(cards))
    raise EngineError("too_many_cards", "the coup is complete: no side takes another card", count=len(cards))


def undeal(
    cards: Sequence[Card], *, punta_draws: bool | None = None, banker_draws: bool | None = None
) -> tuple[list[Card], bool | None]:
    """The coup as it stood before its last card was dealt (its cards, the banker's decision),
    for a card entered wrongly and corrected: `deal` on that state with the right card gives
    the coup as if it had been entered right. Only while the last card is the coup's latest
    step: a declaration or decision recorded after it is refused (`card_not_latest`), since it
    was made on the cards as they were. `no_card`: nothing dealt yet."""
    n = len(cards)
    if n == 0:
        raise EngineError("no_card", "no card has been dealt in this coup")
    before = list(cards[:-1])
    if n <= 4:
        # The punta declares after the fourth card (§2.5): a declaration with four cards or
        # fewer came after the last one.
        if punta_draws is not None or banker_draws is not None:
            raise EngineError("card_not_latest", "the punta has declared since this card", step=PUNTA_DECLARATION)
        return before, None
    if n == 5 and punta_draws:
        # The punta's third card; the banker's decision comes after it (§2.7).
        if banker_draws is not None:
            raise EngineError("card_not_latest", "the banker has decided since this card", step=BANKER_DECISION)
        return before, None
    # The banker's third card: his decision to draw, made with it or just before it.
    return before, None


def declare(cards: Sequence[Card], *, punta_draws: bool | None, banker_draws: bool | None = None) -> None:
    """Check that the punta's declaration is expected now (after 4 cards, no punta natural)."""
    step = next_step(cards, punta_draws=punta_draws, banker_draws=banker_draws)
    if step.need == PUNTA_DECLARATION:
        return
    if len(cards) < 4:
        raise EngineError(
            "cards_missing", "the punta declares after the four cards are dealt", count=len(cards)
        )
    if step.natural and punta_draws is None:
        raise EngineError("card_after_natural", "the punta showed a natural: no declaration")
    raise EngineError("declaration_not_expected", "the punta has declared already", need=step.need)


def decide(cards: Sequence[Card], *, punta_draws: bool | None, banker_draws: bool | None) -> None:
    """Check that the banker's decision is expected now (after the punta's part)."""
    step = next_step(cards, punta_draws=punta_draws, banker_draws=banker_draws)
    if step.need == BANKER_DECISION:
        return
    if step.need == COMPLETE and step.natural:
        raise EngineError("card_after_natural", "a natural was shown: the banker has no decision")
    message = (
        "the coup is complete: the banker has no decision to make"
        if step.need == COMPLETE
        else f"the coup needs {step.need} now, not the banker's decision"
    )
    raise EngineError("decision_not_expected", message, need=step.need, side=step.side)


def decision_hint(
    profile: Profile,
    cards: Sequence[Card],
    *,
    punta_draws: bool | None = None,
    banker_draws: bool | None = None,
    regola_punta: bool = False,
    regola_banker: bool = False,
    banco_solo: bool = False,
) -> RuleHint | None:
    """The rule in force for the decision the coup waits for (the tablet's hint), or None."""
    step = next_step(cards, punta_draws=punta_draws, banker_draws=banker_draws)
    if step.need == PUNTA_DECLARATION:
        return rule_in_force(
            profile, PUNTA, regola=regola_punta, banco_solo=banco_solo, punta_total=_two(cards, 0, 2)
        )
    if step.need == BANKER_DECISION:
        third = cards[4] if punta_draws else None
        return rule_in_force(
            profile,
            BANKER,
            regola=regola_banker,
            banco_solo=banco_solo,
            banker_total=_two(cards, 1, 3),
            punta_third=third,
        )
    return None


# -- betting (RULES.md §2.2) -------------------------------------------------------------------


def avec_la_table_stake(bank: int) -> int:
    """Banco avec la table: the punta bets half the bank, rounded up to the cent."""
    return (bank + 1) // 2


def turn_rank(seat_number: int | None, *, banker_seat: int | None, table_seats: int) -> int:
    """Place in the order of turn from the banker (lower speaks first): the seats after the
    banker's in increasing seat order, wrapping round (the direction the bank passes at
    Venezia, §3.2), then standing players (rank table_seats + 1)."""
    if seat_number is None:
        return table_seats + 1
    if banker_seat is None:
        return seat_number
    return (seat_number - banker_seat - 1) % table_seats + 1


class Call(NamedTuple):
    """A banco call or a bet, as the betting rules see it."""

    key: Any  # the caller / bettor (a patron id)
    seat_number: int | None  # None: standing
    order: int  # order in which it was made
    amount: int = 0
    kind: str = "individual"  # banco | avec_la_table | individual
    barred: bool = False  # barred from holding the cards (faux tirage, §4)


def banco_winner(
    calls: Sequence[Call],
    *,
    profile: Profile,
    banker_seat: int | None,
    table_seats: int,
    suivi: Any | None = None,
) -> Call | None:
    """Who wins the banco when several call it (§2.2): the player who lost a banco at the
    previous coup (`suivi`) where the profile gives him priority; else the first in turn
    from the banker (standing players after the seated, first to speak first). A caller
    barred since he called never holds the cards (§4): the next eligible one wins; None
    when there is none."""
    calls = [c for c in calls if not c.barred]
    if not calls:
        return None
    if suivi is not None and profile.banco_suivi == BancoSuivi.PRIORITY:
        for call in calls:
            if call.key == suivi:
                return call
    return min(
        calls,
        key=lambda c: (turn_rank(c.seat_number, banker_seat=banker_seat, table_seats=table_seats), c.order),
    )


def banco_refused(*, profile: Profile, caller: Any, suivi: Any | None) -> str | None:
    """The code refusing a banco call, if any: chemmy-fi forbids a second consecutive banco
    by a player who lost one (§2.2)."""
    if suivi is not None and caller == suivi and profile.banco_suivi == BancoSuivi.FORBIDDEN:
        return "banco_suivi_forbidden"
    return None


def choose_punta(bets: Sequence[Call], *, banker_seat: int | None, table_seats: int) -> Call | None:
    """The punta among the bets (§2.2): the banco caller; else the avec-la-table bettor;
    else the highest bettor, equal highest: the first in betting order. Players bet in turn
    from the banker's right (§2.2), the order of turn banco calls use (`turn_rank`): the
    seated players in that rotation, then the standing ones (a seated player beats a
    standing one), among the standing the first to bet. Never a barred player (§4): the
    next eligible one."""
    eligible = [b for b in bets if not b.barred]
    for kind in ("banco", "avec_la_table"):
        for bet in eligible:
            if bet.kind == kind:
                return bet
    if not eligible:
        return None
    return min(
        eligible,
        key=lambda b: (
            -b.amount,
            turn_rank(b.seat_number, banker_seat=banker_seat, table_seats=table_seats),
            b.order,
        ),
    )
