"""The tablet's hint: the rule in force for one decision, with the advice for free cells (§3.2)."""

from __future__ import annotations

import pytest

from tables.engine import STOOD, Cell, EngineError, get_profile, rule_in_force

VENEZIA = get_profile("venezia")


def test_banker_not_declared_at_venezia_is_free_with_the_regola_as_advice():
    hint = rule_in_force(VENEZIA, "banker", banker_total=3, punta_third=2)
    assert (hint.side, hint.rule, hint.cell, hint.advice) == ("banker", "banker", Cell.FREE, Cell.DRAW)
    hint = rule_in_force(VENEZIA, "banker", banker_total=6, punta_third=STOOD)
    assert (hint.cell, hint.advice) == (Cell.FREE, Cell.STAND)


def test_banker_alla_regola_binding_cell_has_no_advice():
    hint = rule_in_force(VENEZIA, "banker", regola=True, banker_total=4, punta_third="AC")
    assert (hint.rule, hint.cell, hint.advice) == ("banker_regola", Cell.STAND, None)


def test_chemmy_fi_four_against_one_is_free_even_in_the_advice():
    hint = rule_in_force(get_profile("chemmy-fi"), "banker", banker_total=4, punta_third=1)
    assert (hint.cell, hint.advice) == (Cell.FREE, Cell.FREE)


def test_classic_advice_differs_from_the_regola():
    classic = get_profile("classic")
    assert rule_in_force(classic, "banker", banker_total=3, punta_third=9).advice == Cell.DRAW
    assert rule_in_force(classic, "banker", banker_total=5, punta_third=4).advice == Cell.DRAW


def test_punta():
    hint = rule_in_force(get_profile("domestic"), "punta", banco_solo=True, punta_total=3)
    assert (hint.rule, hint.cell, hint.advice) == ("punta_banco_solo", Cell.FREE, None)
    hint = rule_in_force(VENEZIA, "punta", regola=True, punta_total=5)
    assert (hint.rule, hint.cell) == ("punta_regola", Cell.STAND)


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({"side": "dealer", "punta_total": 3}, "bad_side"),
        ({"side": "punta", "punta_total": 8}, "bad_total"),
        ({"side": "punta"}, "bad_total"),
        ({"side": "banker", "banker_total": 9, "punta_third": 1}, "bad_total"),
        ({"side": "banker", "banker_total": 3, "punta_third": 10}, "bad_total"),
        ({"side": "banker", "banker_total": 3, "punta_third": "1X"}, "bad_card"),
    ],
)
def test_errors(kwargs, code):
    side = kwargs.pop("side")
    with pytest.raises(EngineError) as err:
        rule_in_force(VENEZIA, side, **kwargs)
    assert err.value.code == code
