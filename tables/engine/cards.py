"""Cards and totals (RULES.md §1).

A card is its canonical code, a plain `str`: rank (`A`, `2`..`9`, `10`, `J`, `Q`, `K`) and
suit (`S`, `H`, `D`, `C`), e.g. `AS`, `10H`, `KD`. Keeping it a str makes it hashable,
JSON-ready and cheap; every accepted spelling is resolved once through a precomputed
table, and the value of a canonical code is one dict lookup, which is what play needs.
"""

from __future__ import annotations

from collections.abc import Iterable

from .errors import EngineError

Card = str  # a canonical card code

RANKS: tuple[str, ...] = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
SUITS: tuple[str, ...] = ("S", "H", "D", "C")

# RULES.md §1: A = 1, 2-9 face value, 10 J Q K = 0.
RANK_VALUES: dict[str, int] = {"A": 1, **{str(n): n for n in range(2, 10)}, "10": 0, "J": 0, "Q": 0, "K": 0}

_RANK_SPELLINGS: dict[str, str] = {**{r: r for r in RANKS}, "T": "10"}
_SUIT_SPELLINGS: dict[str, str] = {
    **{s: s for s in SUITS},
    "\u2660": "S",  # ♠
    "\u2665": "H",  # ♥
    "\u2666": "D",  # ♦
    "\u2663": "C",  # ♣
}

ALL_CARDS: tuple[Card, ...] = tuple(r + s for r in RANKS for s in SUITS)

# Canonical code -> value; the hot path of play reads only this.
VALUES: dict[Card, int] = {r + s: RANK_VALUES[r] for r in RANKS for s in SUITS}

# Every accepted spelling, upper-cased -> canonical code. Lower and mixed case are
# resolved by upper-casing first (the suit symbols have no case).
_CANON: dict[str, Card] = {
    rank_sp + suit_sp: rank + suit
    for rank_sp, rank in _RANK_SPELLINGS.items()
    for suit_sp, suit in _SUIT_SPELLINGS.items()
}


# Lower case is a-z only: str.upper() also maps U+017F (long s) to "S" and U+0131 (dotless i)
# to "I", which would read "2" and a long s as the two of spades.
_ASCII_UPPER = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def parse_card(code: object) -> Card:
    """Canonical code of `code` (`10h`, `TD`, `9♥` -> `10H`, `10D`, `9H`); EngineError("bad_card") else."""
    if type(code) is str:
        canon = _CANON.get(code)
        if canon is None:
            canon = _CANON.get(code.translate(_ASCII_UPPER))
        if canon is not None:
            return canon
    raise EngineError("bad_card", f"not a card: {code!r}", card=code if isinstance(code, str) else repr(code))


def parse_cards(codes: Iterable[object]) -> tuple[Card, ...]:
    return tuple(parse_card(code) for code in codes)


def card_value(card: Card) -> int:
    """Value 0..9 of a card; accepts any spelling parse_card accepts."""
    value = VALUES.get(card) if type(card) is str else None
    return value if value is not None else VALUES[parse_card(card)]


def rank_of(card: Card) -> str:
    return card[:-1]


def suit_of(card: Card) -> str:
    return card[-1]


def hand_total(cards: Iterable[Card]) -> int:
    """RULES.md §1: the sum of the values modulo 10 (7 + 8 counts 5)."""
    return sum(card_value(c) for c in cards) % 10


def is_natural(total: int) -> bool:
    """RULES.md §1: a two-card total of 8 or 9."""
    return total >= 8
