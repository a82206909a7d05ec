"""The shoe tracker (RULES.md §1, §6 art. 58)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tables.engine import ALL_CARDS, EngineError, Shoe, get_profile


def codes(err):
    return err.value.code


def test_draw_normalises_and_counts():
    shoe = Shoe(6)
    assert shoe.size == 312 == shoe.cards_left
    assert shoe.draw("as") == "AS"
    assert shoe.draw("T♥") == "10H"
    assert shoe.cards_left == 310
    assert shoe.times_out("AS") == 1
    assert shoe.drawn == ["AS", "10H"]


def test_a_rank_and_suit_never_comes_out_more_than_decks_times():
    shoe = Shoe(2)
    shoe.draw("AS")
    shoe.draw("as")
    with pytest.raises(EngineError) as err:
        shoe.draw("AS")
    assert codes(err) == "card_exhausted"
    assert err.value.details == {"card": "AS", "decks": 2}
    assert shoe.cards_left == 102  # the refused card changed nothing


def test_a_voided_card_is_out_of_the_shoe():
    shoe = Shoe(1)
    assert shoe.void("KD") == "KD"
    assert shoe.voided == ["KD"] and shoe.cards_left == 51
    with pytest.raises(EngineError) as err:
        shoe.draw("KD")
    assert codes(err) == "card_exhausted"


def test_void_drawn_marks_a_played_card_without_taking_another():
    shoe = Shoe(6)
    shoe.draw("9C")
    shoe.void_drawn("9C")
    assert shoe.voided == ["9C"] and shoe.cards_left == 311
    with pytest.raises(EngineError) as err:
        shoe.void_drawn("9C")  # only one 9C was drawn, and it is already void
    assert codes(err) == "card_not_drawn"


def test_stop_card_is_reported_once_seven_cards_are_left():
    shoe = Shoe.for_profile(get_profile("venezia"))
    cards = [c for c in ALL_CARDS for _ in range(6)]
    for card in cards[: 312 - 8]:
        shoe.draw(card)
    assert shoe.cards_left == 8 and not shoe.stop_card_reached
    shoe.draw(cards[312 - 8])
    assert shoe.cards_left == 7 and shoe.stop_card_reached
    for card in cards[312 - 7 :]:  # the current coup may still finish (art. 58)
        shoe.draw(card)
    assert shoe.cards_left == 0
    with pytest.raises(EngineError) as err:
        shoe.draw("AS")
    assert codes(err) == "shoe_empty"


def test_chemmy_fi_burns_seven_cards_under_the_pack():
    shoe = Shoe.for_profile(get_profile("chemmy-fi"))
    assert shoe.burn_cards == 7
    burned = shoe.burn(["5H", None, None, None, None, None, None])
    assert burned[0] == "5H"
    assert shoe.cards_left == 312  # still physically in the shoe, under the pack
    assert shoe.dealable == 305
    assert shoe.times_out("5H") == 1  # the face-up card counts for integrity
    with pytest.raises(EngineError) as err:
        shoe.burn(["5H"] + [None] * 6)
    assert codes(err) == "already_burned"


def test_burn_errors():
    with pytest.raises(EngineError) as err:
        Shoe.for_profile(get_profile("domestic")).burn([])
    assert codes(err) == "no_burn"  # RULES.md §1: domestic burns no card
    shoe = Shoe.for_profile(get_profile("chemmy-fi"))
    with pytest.raises(EngineError) as err:
        shoe.burn(["5H"])
    assert codes(err) == "bad_burn"
    shoe.draw("AS")
    with pytest.raises(EngineError) as err:
        shoe.burn([None] * 7)
    assert codes(err) == "burn_after_draw"
    with pytest.raises(EngineError) as err:
        Shoe(1, burn_cards=7).burn(["AS", "AS", None, None, None, None, None])
    assert codes(err) == "card_exhausted"


def test_the_face_up_burned_card_is_never_dealt():
    # RULES.md §1, seed 003: the face-up burned card is put aside unused when reached; the
    # coup in play is finished with the six cards under it (no further coup: the stop card).
    shoe = Shoe(1, burn_cards=7, stop_card_from_end=0)
    shoe.burn([None] * 7)
    for card in ALL_CARDS[:45]:
        shoe.draw(card)
    assert shoe.dealable == 0 and shoe.stop_card_reached  # the face-up burned card is reached
    for card in ALL_CARDS[45:51]:  # ... and the coup in play is finished with the six under it
        shoe.draw(card)
    assert shoe.cards_left == 1
    with pytest.raises(EngineError) as err:
        shoe.draw(ALL_CARDS[51])
    assert codes(err) == "shoe_empty"


def test_bad_shoe_settings():
    for kwargs in ({"decks": 0}, {"decks": "6"}, {"decks": 6, "burn_cards": -1}):
        with pytest.raises(EngineError) as err:
            Shoe(**kwargs)
        assert codes(err) == "bad_shoe"
    with pytest.raises(EngineError) as err:
        Shoe.for_profile(get_profile("venezia"), decks=5)
    assert codes(err) == "bad_shoe"
    # RULES.md §3.2's decks row: 6 at venezia, domestic and chemmy-fi; classic allows 8.
    for name in ("venezia", "domestic", "chemmy-fi"):
        with pytest.raises(EngineError) as err:
            Shoe.for_profile(get_profile(name), decks=8)
        assert codes(err) == "bad_shoe"
        assert Shoe.for_profile(get_profile(name), decks=6).decks == 6
    assert Shoe.for_profile(get_profile("classic"), decks=8).decks == 8
    with pytest.raises(EngineError) as err:
        Shoe.from_dict({"drawn": []})
    assert codes(err) == "bad_shoe"


def test_draw_many_is_all_or_nothing():
    shoe = Shoe(1)
    shoe.draw("AS")
    with pytest.raises(EngineError):
        shoe.draw_many(["KD", "AS"])
    assert shoe.drawn == ["AS"] and shoe.times_out("KD") == 0


def test_round_trip_through_a_plain_dict():
    shoe = Shoe(6, burn_cards=7)
    shoe.burn(["2C", None, None, None, None, None, None])
    shoe.draw("AS")
    shoe.void("KD")
    shoe.draw("9C")
    shoe.void_drawn("9C")
    data = shoe.to_dict()
    assert data == {
        "decks": 6,
        "burn_cards": 7,
        "stop_card_from_end": 7,
        "burned": ["2C", None, None, None, None, None, None],
        "drawn": ["AS", "KD", "9C"],
        "voided": ["KD", "9C"],
    }
    back = Shoe.from_dict(data)
    assert back.to_dict() == data
    assert back.cards_left == shoe.cards_left and back.times_out("2C") == 1


def test_a_tampered_state_is_refused():
    with pytest.raises(EngineError) as err:
        Shoe.from_dict({"decks": 1, "drawn": ["AS", "AS"]})
    assert codes(err) == "card_exhausted"


@settings(max_examples=60, deadline=None)
@given(
    decks=st.integers(min_value=1, max_value=8),
    picks=st.lists(st.sampled_from(ALL_CARDS[:6]), min_size=1, max_size=80),
)
def test_property_a_shoe_never_yields_a_card_more_than_decks_times(decks, picks):
    shoe = Shoe(decks)
    seen: dict[str, int] = {}
    for card in picks:
        if seen.get(card, 0) < decks:
            assert shoe.draw(card) == card
            seen[card] = seen.get(card, 0) + 1
        else:
            with pytest.raises(EngineError) as err:
                shoe.draw(card)
            assert codes(err) == "card_exhausted"
        assert shoe.times_out(card) <= decks
    assert shoe.cards_left == decks * 52 - sum(seen.values())
    assert Shoe.from_dict(shoe.to_dict()).to_dict() == shoe.to_dict()


def _replayed(data: dict) -> Shoe:
    """from_dict's meaning, card by card (what its bulk path must equal)."""
    shoe = Shoe(data["decks"], burn_cards=data.get("burn_cards", 0), stop_card_from_end=data.get("stop_card_from_end", 7))
    if data.get("burned"):
        shoe.burn(data["burned"])
    for card in data.get("drawn", []):
        shoe._take(card)
    for card in data.get("voided", []):
        shoe.void_drawn(card)
    return shoe


def _outcome(make, data):
    try:
        shoe = make(data)
    except EngineError as exc:
        return ("refused", exc.code)
    return ("ok", shoe.to_dict(), dict(shoe._out), shoe.cards_left, shoe.dealable)


@settings(max_examples=300, deadline=None)
@given(
    decks=st.integers(1, 2),
    drawn=st.lists(st.sampled_from([*ALL_CARDS, "kh", "10h", "1H", 7, None]), max_size=120),
    burned=st.sampled_from([[], ["KH"], [None, "2S"]]),
)
def test_from_dict_equals_the_card_by_card_replay(decks, drawn, burned):
    """The bulk path (canonical codes, counts checked at once) gives the same shoe, and the
    same refusal, as replaying every card: valid states, spellings, exhausted cards, an
    overfull shoe, garbage."""
    data = {"decks": decks, "burn_cards": len(burned), "stop_card_from_end": 7, "burned": burned,
            "drawn": drawn, "voided": drawn[:1]}  # fmt: skip
    assert _outcome(Shoe.from_dict, data) == _outcome(_replayed, data)
