"""Rule profiles as data (RULES.md §3.2 and §7).

A profile is a declarative description of one way of playing: the drawing cells of the
punta in each context and of the banker (declared or not), the cagnotte, ties, the bank's
continuation and rotation, decks, banco suivi. The engine reads these tables; it has no
per-profile branch. Adding a profile means adding an entry to PROFILES.

Cells. A punta table maps his two-card total 0..7 to a Cell (8 and 9 are naturals and are
never looked up). A banker table maps (banker two-card total 0..7, punta's third card)
to a Cell, where the punta's third card is its value 0..9 or STOOD when he stood.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from fractions import Fraction


class Cell(StrEnum):
    DRAW = "draw"
    STAND = "stand"
    FREE = "free"


class Side(StrEnum):
    PUNTA = "punta"
    BANKER = "banker"


class TieRule(StrEnum):
    VOID = "void"  # coup nul: bets return, same banker, same bank (venezia)
    BETS_STAY = "bets_stay"  # bets stay on the table for the next coup (classic)
    VOID_BANK_AT_LEAST_STAKE = "void_bank_at_least_stake"  # bets return; bank continues at >= S (domestic)
    REPLAY = "replay"  # replayed; bettors may withdraw or change bets (chemmy-fi)
    BANKER_BET_PUSH = "push"  # punto banco: a tie returns player and banker bets


class Continuation(StrEnum):
    WHOLE_STAKE = "whole_stake"  # bank + winnings less cagnotte, all of it (venezia, classic)
    AT_LEAST_DOUBLE_STAKE = "at_least_double_stake"  # next bank >= 2S, reserve B - S stays personal (domestic)
    HOUSE = "house"  # punto banco: the house is the permanent bank


class Rotation(StrEnum):
    INCREASING = "increasing"  # to the next seat in increasing seat order (venezia)
    COUNTER_CLOCKWISE = "counter_clockwise"  # classic
    RIGHT = "right"  # to the right, skipping refusals (domestic)
    NEXT = "next"  # to the next player (chemmy-fi)
    NONE = "none"  # punto banco: the bank never passes


class BancoSuivi(StrEnum):
    PRIORITY = "priority"  # the punta who lost a banco has priority to call it again
    FORBIDDEN = "forbidden"  # a second consecutive banco by a player who lost one is refused
    NONE = "none"  # no special rule


class Rounding(StrEnum):
    NEAREST = "nearest"  # to the nearest unit, halves up (arrêté du 14 mai 2007, art. 59)
    DOWN = "down"
    UP = "up"


class Succession(StrEnum):
    VENEZIA = "venezia"  # seguito all'altezza to the seated from the right, then standing, then asta
    CHEMMY_FI = "chemmy-fi"  # equal bank, nearest in turn; auction if nobody
    DOMESTIC = "domestic"  # offered from the right at >= mandatory continuation; neighbour keeps his turn
    NONE = "none"


STOOD = None  # the punta's third card "value" when he stood
THIRD_KEYS: tuple[int | None, ...] = (*range(10), STOOD)

PuntaTable = tuple[Cell, ...]  # index: punta's two-card total 0..7
BankerTable = Mapping[tuple[int, int | None], Cell]  # key: (banker total 0..7, punta third value or STOOD)


def punta_table(draw: Iterable[int], free: Iterable[int] = ()) -> PuntaTable:
    """Totals in `draw` draw, in `free` are free, the others stand."""
    draw, free = set(draw), set(free)
    return tuple(Cell.DRAW if t in draw else Cell.FREE if t in free else Cell.STAND for t in range(8))


def banker_table(rows: Mapping[int, Mapping[str, Iterable[int | None]]]) -> BankerTable:
    """Build a banker table from rows {total: {"draw": [...], "free": [...]}}; unnamed cells stand.

    Third-card values are 0..9, and STOOD (None) for "the punta stood"."""
    table: dict[tuple[int, int | None], Cell] = {}
    for total in range(8):
        row = rows.get(total, {})
        draw, free = set(row.get("draw", ())), set(row.get("free", ()))
        for third in THIRD_KEYS:
            table[(total, third)] = Cell.DRAW if third in draw else Cell.FREE if third in free else Cell.STAND
    return table


def all_free() -> BankerTable:
    return {(total, third): Cell.FREE for total in range(8) for third in THIRD_KEYS}


def amend(table: BankerTable, changes: Mapping[tuple[int, int | None], Cell]) -> BankerTable:
    new = dict(table)
    new.update(changes)
    return new


ALL = range(10)

# RULES.md §3.1: the Casinò di Venezia's tableau de tirage.
REGOLA_BANKER = banker_table(
    {
        0: {"draw": [*ALL, STOOD]},
        1: {"draw": [*ALL, STOOD]},
        2: {"draw": [*ALL, STOOD]},
        3: {"draw": [0, 1, 2, 3, 4, 5, 6, 7, STOOD], "free": [9]},
        4: {"draw": [2, 3, 4, 5, 6, 7, STOOD]},
        5: {"draw": [5, 6, 7, STOOD], "free": [4]},
        6: {"draw": [6, 7]},
        7: {},
    }
)
REGOLA_PUNTA = punta_table(draw=range(5))  # 0-4 draw, 5 6 7 stand

# What the seeds recommend to an undeclared banker (classic: table 3.1 with 3 v 9 drawing,
# 4 v 1 standing, 5 v 4 drawing). Advice shown on the tablet, never binding.
CLASSIC_RECOMMENDED = amend(REGOLA_BANKER, {(3, 9): Cell.DRAW, (4, 1): Cell.STAND, (5, 4): Cell.DRAW})
CHEMMY_FI_RECOMMENDED = amend(REGOLA_BANKER, {(4, 1): Cell.FREE})

PUNTA_SEVERAL = punta_table(draw=range(5), free=[5])  # 0-4 draw, 5 free, 6-7 stand

# Punto Banco's fixed tableau (RULES.md §7): player 0-5 draw, 6-7 stand; banker by the
# standard table (stood player: banker draws 0-5).
PUNTO_BANCO_PLAYER = punta_table(draw=range(6))
PUNTO_BANCO_BANKER = banker_table(
    {
        0: {"draw": [*ALL, STOOD]},
        1: {"draw": [*ALL, STOOD]},
        2: {"draw": [*ALL, STOOD]},
        3: {"draw": [0, 1, 2, 3, 4, 5, 6, 7, 9, STOOD]},
        4: {"draw": [2, 3, 4, 5, 6, 7, STOOD]},
        5: {"draw": [4, 5, 6, 7, STOOD]},
        6: {"draw": [6, 7]},
        7: {},
    }
)


@dataclass(frozen=True)
class Profile:
    name: str
    title: str
    source: str
    decks: int
    punta_several: PuntaTable
    punta_banco_solo: PuntaTable
    punta_regola: PuntaTable | None  # None: declaring the Regola is not part of this game
    banker: BankerTable  # the banker who did not declare the Regola
    banker_regola: BankerTable | None
    banker_recommended: BankerTable  # advice shown for free cells on the tablet; never binding
    cagnotte_rate: Fraction  # of the covered stake S on each coup the banker wins
    cagnotte_unit: int  # rounding unit in cents (10 = nearest 10 euro cents)
    cagnotte_rounding: Rounding
    # False where the rules take no cagnotte at all (private games: domestic, chemmy-fi,
    # RULES.md §3.2), so no table of the profile may set a rate; True where the rate is the
    # house's (5% at Venezia; classic "5% at a casino, 0 in private games").
    cagnotte_set_by_house: bool
    tie: TieRule
    continuation: Continuation
    rotation: Rotation
    banco_suivi: BancoSuivi
    succession: Succession
    burn_cards: int = 0  # cards burned after the shuffle (chemmy-fi: 7)
    stop_card_from_end: int = 7  # stop card before the last N cards (art. 58)
    first_banker_seat: int = 1
    min_seats_taken: int = 6  # a game starts with at least this many seats taken (of 8)
    house_bank: bool = False  # punto banco: the house banks every coup
    # RULES.md §3.2's decks row: 6 at venezia, domestic and chemmy-fi; classic "6 (8
    # allowed)". §1's "8 decks is allowed" is that classic allowance.
    allowed_decks: tuple[int, ...] = field(default=(6,))

    @property
    def regola_allowed(self) -> bool:
        return self.punta_regola is not None or self.banker_regola is not None

    def punta_rule(self, *, regola: bool, banco_solo: bool) -> tuple[str, PuntaTable]:
        """The punta's rule in force, and its name (RULES.md §3.2)."""
        if regola and self.punta_regola is not None:
            return "punta_regola", self.punta_regola
        if banco_solo:
            return "punta_banco_solo", self.punta_banco_solo
        return "punta_several", self.punta_several

    def banker_rule(self, *, regola: bool) -> tuple[str, BankerTable]:
        if regola and self.banker_regola is not None:
            return "banker_regola", self.banker_regola
        return "banker", self.banker


PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile(
            name="venezia",
            title="Casinò di Venezia",
            source="seed 001",
            decks=6,
            punta_several=PUNTA_SEVERAL,
            punta_banco_solo=PUNTA_SEVERAL,
            punta_regola=REGOLA_PUNTA,
            banker=all_free(),
            banker_regola=REGOLA_BANKER,
            banker_recommended=REGOLA_BANKER,
            cagnotte_rate=Fraction(5, 100),
            cagnotte_unit=10,
            cagnotte_rounding=Rounding.NEAREST,
            cagnotte_set_by_house=True,
            tie=TieRule.VOID,
            continuation=Continuation.WHOLE_STAKE,
            rotation=Rotation.INCREASING,
            banco_suivi=BancoSuivi.PRIORITY,
            succession=Succession.VENEZIA,
        ),
        Profile(
            name="classic",
            title="Classic casino chemin de fer",
            source="seed 000",
            decks=6,
            allowed_decks=(6, 8),
            punta_several=PUNTA_SEVERAL,
            punta_banco_solo=PUNTA_SEVERAL,
            punta_regola=None,
            banker=all_free(),
            banker_regola=None,
            banker_recommended=CLASSIC_RECOMMENDED,
            cagnotte_rate=Fraction(5, 100),
            cagnotte_unit=10,
            cagnotte_rounding=Rounding.NEAREST,
            cagnotte_set_by_house=True,
            tie=TieRule.BETS_STAY,
            continuation=Continuation.WHOLE_STAKE,
            rotation=Rotation.COUNTER_CLOCKWISE,
            banco_suivi=BancoSuivi.NONE,
            succession=Succession.VENEZIA,
        ),
        Profile(
            name="domestic",
            title="Private game (domestic rules)",
            source="seed 002",
            decks=6,
            punta_several=PUNTA_SEVERAL,
            punta_banco_solo=punta_table(draw=[0], free=range(1, 8)),
            punta_regola=None,
            banker=REGOLA_BANKER,
            banker_regola=None,
            banker_recommended=REGOLA_BANKER,
            cagnotte_rate=Fraction(0),
            cagnotte_unit=10,
            cagnotte_rounding=Rounding.NEAREST,
            cagnotte_set_by_house=False,
            tie=TieRule.VOID_BANK_AT_LEAST_STAKE,
            continuation=Continuation.AT_LEAST_DOUBLE_STAKE,
            rotation=Rotation.RIGHT,
            banco_suivi=BancoSuivi.PRIORITY,
            succession=Succession.DOMESTIC,
        ),
        Profile(
            name="chemmy-fi",
            title="Finnish chemmy",
            source="seed 003",
            decks=6,
            punta_several=PUNTA_SEVERAL,
            punta_banco_solo=punta_table(draw=[], free=range(8)),
            punta_regola=None,
            banker=all_free(),
            banker_regola=None,
            banker_recommended=CHEMMY_FI_RECOMMENDED,
            cagnotte_rate=Fraction(0),
            cagnotte_unit=10,
            cagnotte_rounding=Rounding.NEAREST,
            cagnotte_set_by_house=False,
            tie=TieRule.REPLAY,
            continuation=Continuation.WHOLE_STAKE,
            rotation=Rotation.NEXT,
            banco_suivi=BancoSuivi.FORBIDDEN,
            succession=Succession.CHEMMY_FI,
            burn_cards=7,
        ),
        Profile(
            name="punto-banco",
            title="Punto Banco (house bank, fixed tableau)",
            source="seed 000, RULES.md §7",
            decks=8,
            allowed_decks=(6, 8),
            punta_several=PUNTO_BANCO_PLAYER,
            punta_banco_solo=PUNTO_BANCO_PLAYER,
            punta_regola=None,
            banker=PUNTO_BANCO_BANKER,
            banker_regola=None,
            banker_recommended=PUNTO_BANCO_BANKER,
            cagnotte_rate=Fraction(5, 100),
            cagnotte_unit=1,
            cagnotte_rounding=Rounding.NEAREST,
            cagnotte_set_by_house=True,
            tie=TieRule.BANKER_BET_PUSH,
            continuation=Continuation.HOUSE,
            rotation=Rotation.NONE,
            banco_suivi=BancoSuivi.NONE,
            succession=Succession.NONE,
            house_bank=True,
            min_seats_taken=1,
        ),
    )
}

DEFAULT_PROFILE = "venezia"


class UnknownProfile(ValueError):
    code = "unknown_profile"


def get_profile(name: str | None) -> Profile:
    key = (name or DEFAULT_PROFILE).strip().lower()
    try:
        return PROFILES[key]
    except KeyError:
        raise UnknownProfile(f"unknown profile {name!r}; known: {', '.join(sorted(PROFILES))}") from None
