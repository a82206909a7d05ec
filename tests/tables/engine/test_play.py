"""Playing a coup from its cards in shoe order (RULES.md §2), naturals and input errors."""

from __future__ import annotations

import pytest

from tables.engine import EngineError, get_profile, play, reconstruct, resolve
from tables.engine.coup import Violation
from tests.tables.engine.helpers import deal

VENEZIA = get_profile("venezia")


def error_code(fn, *args, **kwargs) -> str:
    with pytest.raises(EngineError) as err:
        fn(*args, **kwargs)
    return err.value.code


def test_card_order_punta_banker_punta_banker_then_punta_third_then_banker_third():
    coup = play(["2H", "AS", "3C", "2D", "9H", "5S"], punta_draws=True)
    assert coup.punta.cards == ("2H", "3C", "9H") and coup.punta.total == 4
    assert coup.banker.cards == ("AS", "2D", "5S") and coup.banker.total == 8
    assert coup.winner == "banker" and coup.natural is False
    assert (coup.punta_two_card_total, coup.banker_two_card_total) == (5, 3)


def test_when_the_punta_stands_card_five_is_the_bankers():
    coup = play(["4H", "3S", "3C", "3D", "9C"], punta_draws=False)
    assert coup.punta.cards == ("4H", "3C") and coup.punta.total == 7
    assert coup.banker.cards == ("3S", "3D", "9C") and coup.banker.total == 5
    assert coup.winner == "punta"


def test_cards_echo_canonical():
    coup = play(["2h", "a♠", "3C", "2D"], punta_draws=False)
    assert coup.cards == ("2H", "AS", "3C", "2D")
    assert coup.as_dict() == {
        "punta": {"cards": ["2H", "3C"], "total": 5},
        "banker": {"cards": ["AS", "2D"], "total": 3},
        "winner": "punta",
        "natural": False,
    }


def test_tie():
    assert play(["2H", "KS", "2C", "4D"], punta_draws=False).winner == "tie"


@pytest.mark.parametrize("punta", [8, 9])
@pytest.mark.parametrize("banker", range(10))
def test_punta_natural_is_compared_at_once(punta, banker):
    coup = play(deal(punta, banker))  # no declaration needed (§2.4)
    assert coup.natural is True
    assert len(coup.punta.cards) == len(coup.banker.cards) == 2
    assert (coup.punta.total, coup.banker.total) == (punta, banker)
    assert coup.winner == ("punta" if punta > banker else "banker" if banker > punta else "tie")
    assert coup.punta_draws is None
    # A declaration "non" is accepted (the punta may still have said nothing).
    assert play(deal(punta, banker), punta_draws=False).winner == coup.winner
    assert check_conforms(coup)


@pytest.mark.parametrize("banker", [8, 9])
@pytest.mark.parametrize("punta", range(8))
@pytest.mark.parametrize("declared", [True, False])
def test_banker_natural_wins_at_once_and_the_asked_card_is_not_given(banker, punta, declared):
    coup = play(deal(punta, banker), punta_draws=declared)
    assert coup.natural is True and coup.winner == "banker"
    assert len(coup.punta.cards) == 2 and len(coup.banker.cards) == 2
    assert coup.punta_draws is declared
    # The punta declared before the banker looked (§2.5, §2.6): alla Regola (0-4 draw, 5-7
    # stand) a declaration against it is a violation, though no card was given, and the
    # replay is the coup itself: the banker's natural wins either way.
    from tables.engine import check

    regola_draws = punta <= 4
    expected = () if declared == regola_draws else (
        Violation("punta", "punta_regola", punta, banker, None, None,
                  "draw" if regola_draws else "stand", "draw" if declared else "stand"),)  # fmt: skip
    assert check(coup, VENEZIA, regola_punta=True, regola_banker=True) == expected
    replayed = coup._replace(punta_draws=regola_draws)  # declared as the Regola binds him
    assert reconstruct(coup, VENEZIA, regola_punta=True).coup == replayed
    res = resolve(deal(punta, banker), VENEZIA, punta_draws=declared, regola_punta=True)
    assert res.violations == expected and res.settled_winner == "banker"
    assert res.settled.coup == (coup if not expected else replayed) and res.settled.void_cards == ()
    # Without the Regola, venezia's punta for the table is free on 5 only: the same cells
    # bind him on 0-4 and 6-7.
    free = resolve(deal(punta, banker), VENEZIA, punta_draws=declared)
    assert free.conforming == (punta == 5 or declared == regola_draws)


def check_conforms(coup) -> bool:
    from tables.engine import check

    return (
        check(coup, VENEZIA, regola_punta=True, regola_banker=True) == ()
        and reconstruct(coup, VENEZIA).coup == coup
    )


# -- every error code of play ------------------------------------------------------------------
def test_too_few_cards():
    assert error_code(play, ["2H", "AS", "3C"], punta_draws=False) == "too_few_cards"
    assert error_code(play, [], punta_draws=False) == "too_few_cards"
    # The punta said carte: his card is missing.
    assert error_code(play, deal(3, 4), punta_draws=True) == "too_few_cards"


def test_too_many_cards():
    # The punta stood: at most 5 cards.
    assert error_code(play, [*deal(6, 4), "2C", "3C"], punta_draws=False) == "too_many_cards"
    assert error_code(play, [*deal(3, 4), "2C", "3C", "4C"], punta_draws=True) == "too_many_cards"


def test_card_after_natural():
    assert error_code(play, ["9H", "KS", "KC", "5D", "3C"]) == "card_after_natural"  # example 13
    assert error_code(play, [*deal(2, 8), "3C"], punta_draws=True) == "card_after_natural"
    assert error_code(play, [*deal(2, 9), "3C"], punta_draws=False) == "card_after_natural"


def test_decision_missing():
    assert error_code(play, ["2H", "3S", "4C", "3D"]) == "decision_missing"  # example 12
    # The declaration comes before the banker looks: needed even against a banker natural.
    assert error_code(play, deal(2, 8)) == "decision_missing"


def test_decision_contradicts_cards():
    assert error_code(play, deal(8, 2), punta_draws=True) == "decision_contradicts_cards"
    assert error_code(play, deal(8, 2), banker_draws=True) == "decision_contradicts_cards"
    assert error_code(play, deal(2, 9), punta_draws=False, banker_draws=True) == "decision_contradicts_cards"
    # banker_draws disagreeing with the card count
    assert error_code(play, deal(3, 4), punta_draws=False, banker_draws=True) == "decision_contradicts_cards"
    assert error_code(play, [*deal(3, 4), "2C"], punta_draws=False, banker_draws=False) == (
        "decision_contradicts_cards"
    )
    assert error_code(play, [*deal(3, 4), "2C"], punta_draws=True, banker_draws=True) == (
        "decision_contradicts_cards"
    )


def test_banker_draws_agreeing_is_accepted():
    coup = play([*deal(3, 4), "2C", "5C"], punta_draws=True, banker_draws=True)
    assert coup.banker_drew and coup.banker.total == 9
    assert not play([*deal(3, 4), "2C"], punta_draws=True, banker_draws=False).banker_drew


def test_bad_card():
    assert error_code(play, ["2H", "AS", "3C", "XX"], punta_draws=False) == "bad_card"
    assert (
        error_code(resolve, ["2H", "AS", "3C", "2D"], VENEZIA, punta_draws=False, next_cards=["1S"])
        == "bad_card"
    )


def test_card_exhausted_within_one_coup():
    # Seven king of spades from a 6-deck shoe: impossible.
    assert (
        error_code(resolve, ["KS"] * 6, VENEZIA, punta_draws=True, next_cards=["KS"], regola_banker=True)
        == "card_exhausted"
    )
    # Six are possible.
    assert resolve(["KS"] * 6, VENEZIA, punta_draws=True).as_played.punta.total == 0
