"""tables.engine.live: what a partly dealt coup needs next, and the betting rules. No database."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tables.engine import ALL_CARDS, PROFILES, EngineError, play
from tables.engine.live import (
    BANKER_DECISION,
    CARD,
    COMPLETE,
    PUNTA_DECLARATION,
    Call,
    avec_la_table_stake,
    banco_refused,
    banco_winner,
    choose_punta,
    deal,
    decide,
    decision_hint,
    declare,
    hands,
    next_step,
    turn_rank,
)

VENEZIA = PROFILES["venezia"]


def test_the_four_dealt_cards_alternate_punta_banker():
    assert [next_step(["KS"] * n).side for n in range(4)] == ["punta", "banker", "punta", "banker"]


def test_punta_natural_completes_at_four_cards_and_refuses_a_fifth():
    cards = ["9H", "KS", "KC", "5D"]
    assert next_step(cards) == (COMPLETE, None, True)
    with pytest.raises(EngineError) as exc:
        deal(cards, "2C")
    assert exc.value.code == "card_after_natural"
    with pytest.raises(EngineError) as exc:
        declare(cards, punta_draws=None)
    assert exc.value.code == "card_after_natural"


def test_declaration_required_before_a_fifth_card():
    cards = ["2H", "AS", "3C", "2D"]
    assert next_step(cards).need == PUNTA_DECLARATION
    with pytest.raises(EngineError) as exc:
        deal(cards, "2S")
    assert exc.value.code == "declaration_required"


def test_banker_natural_after_the_declaration_completes():
    cards = ["2H", "8S", "KC", "KD"]
    assert next_step(cards, punta_draws=True) == (COMPLETE, None, True)
    with pytest.raises(EngineError) as exc:
        deal(cards, "5C", punta_draws=True)
    assert exc.value.code == "card_after_natural"


def test_punta_carte_then_banker_card_implies_he_drew():
    cards = ["2H", "AS", "3C", "2D"]
    assert deal(cards, "2s", punta_draws=True) == ("2S", "punta", None)
    cards.append("2S")
    assert next_step(cards, punta_draws=True).need == BANKER_DECISION
    assert deal(cards, "6D", punta_draws=True) == ("6D", "banker", True)
    cards.append("6D")
    assert next_step(cards, punta_draws=True, banker_draws=True).need == COMPLETE
    with pytest.raises(EngineError) as exc:
        deal(cards, "7D", punta_draws=True, banker_draws=True)
    assert exc.value.code == "too_many_cards"
    assert hands(cards, punta_draws=True).as_dict() == {
        "punta": {"cards": ["2H", "3C", "2S"], "total": 7},
        "banker": {"cards": ["AS", "2D", "6D"], "total": 9},
    }


def test_banker_stands_completes_and_draws_waits_for_his_card():
    cards = ["2H", "AS", "4C", "2D"]
    decide_ok = next_step(cards, punta_draws=False)
    assert decide_ok.need == BANKER_DECISION
    decide(cards, punta_draws=False, banker_draws=None)
    assert next_step(cards, punta_draws=False, banker_draws=False).need == COMPLETE
    assert next_step(cards, punta_draws=False, banker_draws=True) == (CARD, "banker", False)
    with pytest.raises(EngineError) as exc:
        decide(cards, punta_draws=False, banker_draws=False)
    assert exc.value.code == "decision_not_expected"
    assert exc.value.message == "the coup is complete: the banker has no decision to make"
    with pytest.raises(EngineError) as exc:
        decide(cards[:3], punta_draws=None, banker_draws=None)
    assert exc.value.code == "decision_not_expected"
    assert exc.value.message == "the coup needs card now, not the banker's decision"
    with pytest.raises(EngineError) as exc:
        declare(cards[:3], punta_draws=None)
    assert exc.value.code == "cards_missing"
    with pytest.raises(EngineError) as exc:
        declare(cards, punta_draws=False)
    assert exc.value.code == "declaration_not_expected"


def test_bad_card_is_refused():
    with pytest.raises(EngineError) as exc:
        deal([], "1X")
    assert exc.value.code == "bad_card"


def test_hint_is_the_engine_rule_in_force():
    cards = ["2H", "AS", "3C", "2D"]
    hint = decision_hint(VENEZIA, cards, regola_punta=True)
    assert (hint.side, hint.rule, hint.cell) == ("punta", "punta_regola", "stand")
    cards.append("2S")
    hint = decision_hint(VENEZIA, cards, punta_draws=True, regola_banker=True)
    assert (hint.side, hint.rule, hint.cell) == ("banker", "banker_regola", "draw")
    hint = decision_hint(VENEZIA, cards, punta_draws=True)
    assert (hint.rule, hint.cell, hint.advice) == ("banker", "free", "draw")
    assert decision_hint(VENEZIA, cards[:3]) is None


@given(
    st.lists(st.sampled_from(ALL_CARDS), min_size=6, max_size=6),
    st.booleans(),
    st.booleans(),
)
def test_stepping_through_agrees_with_play(shoe, punta_choice, banker_choice):
    """Dealing step by step, answering each decision, always ends in a coup that play()
    accepts with the same cards and declarations."""
    cards: list[str] = []
    punta_draws = banker_draws = None
    source = iter(shoe)
    while True:
        step = next_step(cards, punta_draws=punta_draws, banker_draws=banker_draws)
        if step.need == COMPLETE:
            break
        if step.need == PUNTA_DECLARATION:
            punta_draws = punta_choice
        elif step.need == BANKER_DECISION and not banker_choice:
            banker_draws = False
        else:
            code, _side, banker_draws = deal(
                cards, next(source), punta_draws=punta_draws, banker_draws=banker_draws
            )
            cards.append(code)
    coup = play(cards, punta_draws=punta_draws)
    assert coup.cards == tuple(cards)
    h = hands(cards, punta_draws=punta_draws)
    assert (h.punta, h.banker) == (coup.punta.cards, coup.banker.cards)


def test_avec_la_table_is_half_rounded_up():
    assert avec_la_table_stake(100_00) == 50_00
    assert avec_la_table_stake(100_01) == 50_01


def test_turn_order_starts_right_of_the_banker_and_wraps():
    ranks = {s: turn_rank(s, banker_seat=3, table_seats=8) for s in range(1, 9)}
    assert sorted(ranks, key=ranks.get) == [4, 5, 6, 7, 8, 1, 2, 3]
    assert turn_rank(None, banker_seat=3, table_seats=8) == 9


def test_banco_winner_skips_a_caller_barred_since_he_called():
    calls = [Call("a", 5, 1, barred=True), Call("b", 6, 2), Call("c", 7, 3)]
    assert banco_winner(calls, profile=VENEZIA, banker_seat=4, table_seats=8).key == "b"
    assert banco_winner(calls, profile=VENEZIA, banker_seat=4, table_seats=8, suivi="a").key == "b"
    assert banco_winner(calls[:1], profile=VENEZIA, banker_seat=4, table_seats=8) is None


def test_banco_winner_first_in_turn_unless_suivi_has_priority():
    calls = [
        Call(key="a", seat_number=2, order=1),
        Call(key="b", seat_number=5, order=2),
        Call(key="c", seat_number=None, order=0),
    ]
    assert banco_winner(calls, profile=VENEZIA, banker_seat=4, table_seats=8).key == "b"
    assert banco_winner(calls, profile=VENEZIA, banker_seat=4, table_seats=8, suivi="a").key == "a"
    classic = PROFILES["classic"]  # no banco suivi priority
    assert banco_winner(calls, profile=classic, banker_seat=4, table_seats=8, suivi="a").key == "b"
    assert banco_refused(profile=PROFILES["chemmy-fi"], caller="a", suivi="a") == "banco_suivi_forbidden"
    assert banco_refused(profile=VENEZIA, caller="a", suivi="a") is None


def test_choose_punta():
    bets = [
        Call("standing", None, 1, 300, "individual"),
        Call("seat5", 5, 2, 300, "individual"),
        Call("seat2", 2, 3, 300, "individual"),
        Call("small", 1, 0, 100, "individual"),
    ]
    # Equal highest: the first in betting order, from the banker's right (seat 4 here:
    # seat 5 speaks before seat 2), whoever bet first; standing players after the seated.
    assert choose_punta(bets, banker_seat=4, table_seats=8).key == "seat5"
    assert choose_punta(bets, banker_seat=1, table_seats=8).key == "seat2"
    barred = [b._replace(barred=b.key == "seat5") for b in bets]
    assert choose_punta(barred, banker_seat=4, table_seats=8).key == "seat2"
    only_standing = [Call("late", None, 5, 300), Call("early", None, 4, 300), Call("seat", 3, 6, 200)]
    assert choose_punta(only_standing, banker_seat=4, table_seats=8).key == "early"
    avec = [*bets, Call("avec", 7, 9, 50, "avec_la_table")]
    assert choose_punta(avec, banker_seat=4, table_seats=8).key == "avec"
    assert choose_punta([Call("x", 1, 0, 5, barred=True)], banker_seat=4, table_seats=8) is None
