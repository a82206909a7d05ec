"""Settlement arithmetic (RULES.md §4): integer cents, Fraction rates, postings sum to zero."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tables.engine import PROFILES, EngineError, get_profile, round_to_unit, settle
from tables.engine.profiles import Continuation, Rounding, TieRule

VENEZIA = get_profile("venezia")
DOMESTIC = get_profile("domestic")


def test_banker_wins_at_venezia_pays_five_percent_rounded_to_ten_cents():
    # S = 123.45 EUR: 5% = 6.1725 -> 6.20 (nearest 10 cents)
    r = settle(bank=200_00, bets=[("anna", 100_00), ("bruno", 23_45)], winner="banker", profile=VENEZIA)
    assert r.covered == 123_45 and r.uncovered == 76_55
    assert r.deltas == (("anna", -100_00), ("bruno", -23_45))
    assert r.banker_gross == 123_45
    assert r.cagnotte == 6_20
    assert r.banker_net == 117_25
    assert [tuple(p) for p in r.postings] == [
        ("bettor", "anna", -100_00),
        ("bettor", "bruno", -23_45),
        ("banker", None, 117_25),
        ("cagnotte", None, 6_20),
    ]
    assert sum(p.amount for p in r.postings) == 0
    # Continuation (venezia): the whole stake, bank plus winnings less cagnotte.
    assert r.next_bank.rule == Continuation.WHOLE_STAKE
    assert r.next_bank.holding == r.next_bank.minimum == 200_00 + 123_45 - 6_20
    assert r.tie is None


def test_punta_wins_no_cagnotte():
    r = settle(bank=100_00, bets=[("anna", 60_00), ("bruno", 40_00)], winner="punta", profile=VENEZIA)
    assert r.deltas == (("anna", 60_00), ("bruno", 40_00))
    assert (r.banker_gross, r.cagnotte, r.banker_net) == (-100_00, 0, -100_00)
    assert r.next_bank is None and r.tie is None
    assert sum(p.amount for p in r.postings) == 0


@pytest.mark.parametrize(
    ("rule", "bets_return", "bets_stay", "may_change", "next_bank", "minimum"),
    [
        ("venezia", True, False, False, 500_00, None),  # coup nul: same bank
        ("classic", False, True, False, 500_00, None),  # bets stay for the next coup
        ("domestic", True, False, False, None, 300_00),  # bank continues at >= S
        ("chemmy-fi", False, True, True, 500_00, None),  # replay; bettors may change
        ("punto-banco", True, False, False, None, None),  # push
    ],
)
def test_tie_per_profile(rule, bets_return, bets_stay, may_change, next_bank, minimum):
    r = settle(bank=500_00, bets=[("anna", 300_00)], winner="tie", profile=get_profile(rule))
    assert r.deltas == (("anna", 0),) and r.cagnotte == 0 and r.banker_net == 0
    t = r.tie
    assert t.rule == get_profile(rule).tie
    assert (t.bets_return, t.bets_stay, t.bettors_may_change) == (bets_return, bets_stay, may_change)
    assert t.same_banker is True
    assert (t.next_bank, t.minimum_next_bank) == (next_bank, minimum)


def test_domestic_continuation_is_at_least_double_stake_and_reserve_stays_personal():
    r = settle(bank=1000_00, bets=[("anna", 300_00)], winner="banker", profile=DOMESTIC)
    assert r.cagnotte == 0  # domestic: no cagnotte
    nb = r.next_bank
    assert nb.rule == Continuation.AT_LEAST_DOUBLE_STAKE
    assert (nb.holding, nb.minimum, nb.personal_reserve) == (1300_00, 600_00, 700_00)
    assert DOMESTIC.tie == TieRule.VOID_BANK_AT_LEAST_STAKE


def test_punto_banco_the_house_is_banker_and_commission_is_the_cagnotte():
    r = settle(bank=10_000_00, bets=[("p1", 101)], winner="banker", profile=get_profile("punto-banco"))
    # 5% of 1.01 EUR = 5.05 cents -> 5 cents (unit 1 cent, halves up)
    assert r.cagnotte == 5
    assert [p.account for p in r.postings] == ["bettor", "house_bank", "commission"]
    assert sum(p.amount for p in r.postings) == 0
    assert r.next_bank.rule == Continuation.HOUSE and r.next_bank.minimum is None


@pytest.mark.parametrize(
    ("amount", "unit", "rounding", "expected"),
    [
        (Fraction(615), 10, Rounding.NEAREST, 620),  # half up
        (Fraction(614), 10, Rounding.NEAREST, 610),
        (Fraction(61449, 100), 10, Rounding.NEAREST, 610),
        (Fraction(619), 10, Rounding.DOWN, 610),
        (Fraction(611), 10, Rounding.UP, 620),
        (Fraction(610), 10, Rounding.UP, 610),
        (Fraction(5, 2), 1, Rounding.NEAREST, 3),
        (Fraction(0), 10, Rounding.NEAREST, 0),
    ],
)
def test_rounding(amount, unit, rounding, expected):
    assert round_to_unit(amount, unit, rounding) == expected


def test_explicit_settings_override_the_profile():
    r = settle(
        bank=1000, bets=[("a", 1000)], winner="banker", rate=Fraction(2, 100), unit=1, rounding=Rounding.UP
    )
    assert r.cagnotte == 20 and r.next_bank is None  # no profile: no continuation data
    r = settle(bank=1000, bets=[("a", 1000)], winner="banker", profile=VENEZIA, rate=Fraction(125, 10000))
    assert r.cagnotte == 10  # 12.5 cents -> nearest 10


def err(**kwargs) -> str:
    with pytest.raises(EngineError) as e:
        settle(**kwargs)
    return e.value.code


def test_settlement_error_codes():
    assert err(bank=100, bets=[("a", 101)], winner="banker", profile=VENEZIA) == "bets_exceed_bank"
    assert err(bank=100, bets=[("a", 60), ("b", 41)], winner="punta", profile=VENEZIA) == "bets_exceed_bank"
    assert err(bank=100, bets=[("a", 0)], winner="banker", profile=VENEZIA) == "bad_amount"
    assert err(bank=100, bets=[("a", -5)], winner="banker", profile=VENEZIA) == "bad_amount"
    assert err(bank=100, bets=[("a", 1.5)], winner="banker", profile=VENEZIA) == "bad_amount"  # never floats
    assert err(bank=100, bets=[("a", True)], winner="banker", profile=VENEZIA) == "bad_amount"
    assert err(bank=0, bets=[], winner="banker", profile=VENEZIA) == "bad_amount"
    assert err(bank=100, bets=[("a",)], winner="banker", profile=VENEZIA) == "bad_bet"
    assert err(bank=100, bets=[("a", 5)], winner="dealer", profile=VENEZIA) == "bad_winner"
    assert err(bank=100, bets=[("a", 5)], winner="banker") == "bad_settings"
    assert err(
        bank=100, bets=[("a", 5)], winner="banker", rate=Fraction(3, 2), unit=1, rounding="nearest"
    ) == ("bad_rate")
    assert err(bank=100, bets=[("a", 5)], winner="banker", rate=Fraction(1, 20), unit=1, rounding="odd") == (
        "bad_rounding"
    )
    assert err(bank=100, bets=[("a", 5)], winner="banker", rate=Fraction(1, 20), unit=0, rounding="up") == (
        "bad_amount"
    )


@settings(max_examples=300, deadline=None)
@given(
    bets=st.lists(st.integers(min_value=1, max_value=500_000), min_size=1, max_size=9),
    spare=st.integers(min_value=0, max_value=1_000_000),
    winner=st.sampled_from(["punta", "banker", "tie"]),
    name=st.sampled_from(sorted(PROFILES)),
)
def test_property_postings_sum_to_zero_with_the_cagnotte(bets, spare, winner, name):
    profile = get_profile(name)
    bank = sum(bets) + spare
    r = settle(bank=bank, bets=[(i, a) for i, a in enumerate(bets)], winner=winner, profile=profile)
    assert sum(p.amount for p in r.postings) == 0
    assert all(type(p.amount) is int for p in r.postings)
    assert r.covered == sum(bets) and r.uncovered == spare
    if winner == "banker":
        exact = profile.cagnotte_rate * r.covered
        assert r.cagnotte % profile.cagnotte_unit == 0
        assert abs(r.cagnotte - exact) <= Fraction(profile.cagnotte_unit, 2)
        assert r.banker_net == r.covered - r.cagnotte
    else:
        assert r.cagnotte == 0
    assert sum(d for _, d in r.deltas) == {"punta": r.covered, "banker": -r.covered, "tie": 0}[winner]
