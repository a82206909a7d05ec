"""Every cell of every profile's punta and banker tables (RULES.md §3.1, §3.2, §7).

The expectations below are written out by hand from RULES.md, not derived from
profiles.py: D = draw, S = stand, F = free. Each cell is checked twice: the compiled
rule in force, and behaviour (play a coup that reaches the cell with each decision and
see whether the engine reports a violation for that side).
"""

from __future__ import annotations

import pytest

from tables.engine import PROFILES, Cell, check, get_profile, play, rule_in_force, rules_in_force
from tests.tables.engine.helpers import VALUE_CARD, deal

CELL = {"D": Cell.DRAW, "S": Cell.STAND, "F": Cell.FREE}

# Punta: two-card totals 0..7.
SEVERAL = "DDDDDFSS"  # 0-4 draw, 5 free, 6-7 stand
REGOLA_PUNTA = "DDDDDSSS"  # §3.1: 0-4 draw, 5 6 7 stand
DOMESTIC_SOLO = "DFFFFFFF"  # 0 draw, 1-7 free
CHEMMY_SOLO = "FFFFFFFF"  # 0-7 free
PUNTO_PLAYER = "DDDDDDSS"  # §7: 0-5 draw, 6-7 stand

# Banker: one row per two-card total 0..7; columns: punta's third card 0..9, then "-"
# (the punta stood).                 0123456789-
REGOLA_BANKER = {
    0: "DDDDDDDDDDD",
    1: "DDDDDDDDDDD",
    2: "DDDDDDDDDDD",
    3: "DDDDDDDDSFD",  # stands on 8, free on 9
    4: "SSDDDDDDSSD",  # draws 2-7 and when the punta stood
    5: "SSSSFDDDSSD",  # free on 4
    6: "SSSSSSDDSSS",  # draws only on 6, 7
    7: "SSSSSSSSSSS",
}
ALL_FREE = dict.fromkeys(range(8), "FFFFFFFFFFF")
PUNTO_BANKER = {
    0: "DDDDDDDDDDD",
    1: "DDDDDDDDDDD",
    2: "DDDDDDDDDDD",
    3: "DDDDDDDDSDD",
    4: "SSDDDDDDSSD",
    5: "SSSSDDDDSSD",
    6: "SSSSSSDDSSS",
    7: "SSSSSSSSSSS",
}
# Advice for free cells (never binding): classic = 3.1 with 3 v 9 draw, 4 v 1 stand, 5 v 4 draw;
# chemmy-fi = 3.1 with 4 v 1 also free.
CLASSIC_ADVICE = {**REGOLA_BANKER, 3: "DDDDDDDDSDD", 5: "SSSSDDDDSSD"}
CHEMMY_ADVICE = {**REGOLA_BANKER, 4: "SFDDDDDDSSD"}

# profile -> (punta several, punta banco solo, punta with Regola, banker, banker with Regola, advice)
EXPECTED = {
    "venezia": (SEVERAL, SEVERAL, REGOLA_PUNTA, ALL_FREE, REGOLA_BANKER, REGOLA_BANKER),
    # Declaring the Regola is not part of classic, domestic or chemmy-fi: the flag is ignored.
    "classic": (SEVERAL, SEVERAL, SEVERAL, ALL_FREE, ALL_FREE, CLASSIC_ADVICE),
    "domestic": (SEVERAL, DOMESTIC_SOLO, SEVERAL, REGOLA_BANKER, REGOLA_BANKER, REGOLA_BANKER),
    "chemmy-fi": (SEVERAL, CHEMMY_SOLO, SEVERAL, ALL_FREE, ALL_FREE, CHEMMY_ADVICE),
    "punto-banco": (PUNTO_PLAYER, PUNTO_PLAYER, PUNTO_PLAYER, PUNTO_BANKER, PUNTO_BANKER, PUNTO_BANKER),
}

THIRDS = [*range(10), None]


def test_every_profile_has_an_expectation():
    assert set(EXPECTED) == set(PROFILES)


def expected_punta(name: str, *, regola: bool, banco_solo: bool) -> str:
    several, solo, with_regola, *_ = EXPECTED[name]
    if regola and name == "venezia":  # the Regola wins over banco solo: the house protects him
        return with_regola
    return solo if banco_solo else several


def expected_banker(name: str, *, regola: bool) -> dict[int, str]:
    _, _, _, undeclared, declared, _ = EXPECTED[name]
    return declared if regola else undeclared


def punta_cases():
    for name in EXPECTED:
        for regola in (False, True):
            for banco_solo in (False, True):
                for total in range(8):
                    yield name, regola, banco_solo, total


def banker_cases():
    for name in EXPECTED:
        for regola in (False, True):
            for total in range(8):
                for third in THIRDS:
                    yield name, regola, total, third


@pytest.mark.parametrize(("name", "regola", "banco_solo", "total"), list(punta_cases()))
def test_punta_cell(name, regola, banco_solo, total):
    profile = get_profile(name)
    want = CELL[expected_punta(name, regola=regola, banco_solo=banco_solo)[total]]
    rules = rules_in_force(profile, regola_punta=regola, banco_solo=banco_solo)
    assert rules.punta_cell(total) is want
    hint = rule_in_force(profile, "punta", regola=regola, banco_solo=banco_solo, punta_total=total)
    assert hint.cell is want and hint.rule == rules.punta_name and hint.advice is None

    # Behaviour: the punta draws (an ace) or stands; the banker (total 7) stands, which is
    # never a banker violation with a punta third card of 1 or when the punta stood.
    for drew in (True, False):
        cards = deal(total, 7) + (["AC"] if drew else [])
        coup = play(cards, punta_draws=drew)
        found = [
            v for v in check(coup, profile, regola_punta=regola, banco_solo=banco_solo) if v.side == "punta"
        ]
        broken = (want is Cell.DRAW and not drew) or (want is Cell.STAND and drew)
        assert bool(found) == broken
        if broken:
            (v,) = found
            assert v.rule == rules.punta_name
            assert (v.punta_total, v.banker_total) == (total, 7)
            assert v.required == ("draw" if want is Cell.DRAW else "stand")
            assert v.done == ("draw" if drew else "stand")
            assert (v.punta_third_card, v.punta_third_value) == (("AC", 1) if drew else (None, None))


@pytest.mark.parametrize(("name", "regola", "total", "third"), list(banker_cases()))
def test_banker_cell(name, regola, total, third):
    profile = get_profile(name)
    row = expected_banker(name, regola=regola)[total]
    want = CELL[row[10 if third is None else third]]
    rules = rules_in_force(profile, regola_banker=regola)
    assert rules.banker_cell(total, third) is want
    hint = rule_in_force(profile, "banker", regola=regola, banker_total=total, punta_third=third)
    assert hint.cell is want and hint.rule == rules.banker_name
    advice_row = EXPECTED[name][5][total]
    assert hint.advice == (CELL[advice_row[10 if third is None else third]] if want is Cell.FREE else None)

    # Behaviour: the punta (total 0) draws a card of value `third`, or stands; the banker
    # draws (a deuce) or stands.
    punta_third = [] if third is None else [VALUE_CARD[third].replace("S", "C")]
    for drew in (True, False):
        cards = deal(0, total) + punta_third + (["2C"] if drew else [])
        coup = play(cards, punta_draws=third is not None)
        found = [v for v in check(coup, profile, regola_banker=regola) if v.side == "banker"]
        broken = (want is Cell.DRAW and not drew) or (want is Cell.STAND and drew)
        assert bool(found) == broken
        if broken:
            (v,) = found
            assert v.rule == rules.banker_name
            assert (v.punta_total, v.banker_total, v.punta_third_value) == (0, total, third)
            assert v.required == ("draw" if want is Cell.DRAW else "stand")
            assert v.done == ("draw" if drew else "stand")


def test_rule_names():
    venezia = get_profile("venezia")
    assert rules_in_force(venezia).punta_name == "punta_several"
    assert rules_in_force(venezia, banco_solo=True).punta_name == "punta_banco_solo"
    assert rules_in_force(venezia, regola_punta=True, banco_solo=True).punta_name == "punta_regola"
    assert rules_in_force(venezia).banker_name == "banker"
    assert rules_in_force(venezia, regola_banker=True).banker_name == "banker_regola"
    # Not allowed in classic: the declaration changes nothing.
    assert rules_in_force(get_profile("classic"), regola_banker=True).banker_name == "banker"
