"""A card entered wrongly, in the engine: the coup before its last card (live.undeal) and
the shoe's card at a position read anew (Shoe.correct)."""

from __future__ import annotations

import pytest

from tables.engine import live
from tables.engine.errors import EngineError
from tables.engine.shoe import Shoe


@pytest.mark.parametrize(
    ("cards", "punta_draws", "banker_draws", "before"),
    [
        (["KH"], None, None, ([], None)),
        (["KH", "5S", "3C", "2D"], None, None, (["KH", "5S", "3C"], None)),
        (["KH", "5S", "3C", "2D", "2S"], True, None, (["KH", "5S", "3C", "2D"], None)),
        # the banker's third card: his decision to draw, made with it
        (["KH", "5S", "3C", "2D", "2S"], False, True, (["KH", "5S", "3C", "2D"], None)),
        (["KH", "5S", "3C", "2D", "2S", "4H"], True, True, (["KH", "5S", "3C", "2D", "2S"], None)),
    ],
)
def test_undeal_gives_the_coup_before_its_last_card(cards, punta_draws, banker_draws, before):
    assert live.undeal(cards, punta_draws=punta_draws, banker_draws=banker_draws) == before
    # Dealt again on that state, the same card goes to the same hand with the same decision.
    code, _side, drawn = live.deal(before[0], cards[-1], punta_draws=punta_draws, banker_draws=before[1])
    assert code == cards[-1] and drawn == banker_draws


@pytest.mark.parametrize(
    ("cards", "punta_draws", "banker_draws", "code"),
    [
        ([], None, None, "no_card"),
        (["KH", "5S", "3C", "2D"], True, None, "card_not_latest"),  # the punta declared since
        (["KH", "5S", "3C", "2D"], False, None, "card_not_latest"),
        (["KH", "5S", "3C", "2D", "2S"], True, False, "card_not_latest"),  # the banker decided since
        (["KH", "5S", "3C", "2D", "2S"], True, True, "card_not_latest"),
    ],
)
def test_undeal_refuses_a_card_a_later_step_followed(cards, punta_draws, banker_draws, code):
    with pytest.raises(EngineError) as exc:
        live.undeal(cards, punta_draws=punta_draws, banker_draws=banker_draws)
    assert exc.value.code == code


def test_shoe_correct_changes_the_card_at_its_position_not_the_count():
    shoe = Shoe(1)
    for card in ("7H", "7D", "KC"):
        shoe.draw(card)
    assert shoe.correct(2, "7D", "7s") == "7S"
    assert shoe.drawn == ["7H", "7S", "KC"] and shoe.cards_left == 49
    assert shoe.times_out("7D") == 0 and shoe.times_out("7S") == 1
    assert Shoe.from_dict(shoe.to_dict()).drawn == shoe.drawn


def test_shoe_correct_refuses_as_the_draw_would_and_changes_nothing():
    shoe = Shoe(1)
    for card in ("7H", "7D"):
        shoe.draw(card)
    before = shoe.to_dict()
    for position, was, card, code in ((2, "7D", "7H", "card_exhausted"), (2, "7D", "ZZ", "bad_card"),
                                      (1, "7D", "7S", "card_not_drawn"), (3, "7D", "7S", "card_not_drawn")):  # fmt: skip
        with pytest.raises(EngineError) as exc:
            shoe.correct(position, was, card)
        assert exc.value.code == code
        assert shoe.to_dict() == before
