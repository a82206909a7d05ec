"""Conformance and reconstruction (RULES.md §3.3): each violation kind and its replay."""

from __future__ import annotations

import pytest

from tables.engine import EngineError, check, get_profile, play, reconstruct, resolve
from tests.tables.engine.helpers import deal

VENEZIA = get_profile("venezia")
DOMESTIC = get_profile("domestic")


def hands(coup):
    return coup.punta.cards, coup.banker.cards


# -- banker violations -------------------------------------------------------------------------
def test_banker_stood_where_the_regola_draws_takes_the_next_shoe_card():
    cards = ["2H", "AS", "3C", "2D", "2S"]  # banker 3 v punta's 2: draws (§3.1)
    res = resolve(cards, VENEZIA, punta_draws=True, regola_banker=True, next_cards=["6D"])
    (v,) = res.violations
    assert v.as_dict() == {
        "side": "banker",
        "rule": "banker_regola",
        "punta_total": 5,
        "banker_total": 3,
        "punta_third_card": "2S",
        "punta_third_value": 2,
        "required": "draw",
        "done": "stand",
    }
    assert res.as_played.winner == "punta"
    s = res.settled
    assert s.status == "final" and s.void_cards == ()
    assert hands(s.coup) == (("2H", "3C", "2S"), ("AS", "2D", "6D"))
    assert s.coup.banker.total == 9 and s.coup.winner == "banker"


def test_pending_for_a_card_one_at_a_time():
    cards = ["2H", "AS", "3C", "2D", "2S"]
    res = resolve(cards, VENEZIA, punta_draws=True, regola_banker=True)
    assert not res.conforming
    assert res.settled.status == "pending" and res.settled.needs == {"cards": 1}
    assert res.settled.as_dict() == {"status": "pending", "needs": {"cards": 1}}


def test_banker_drew_where_the_regola_stands_voids_his_card():
    res = resolve(["4H", "3S", "3C", "3D", "9C"], VENEZIA, punta_draws=False, regola_banker=True)
    (v,) = res.violations
    assert (v.side, v.required, v.done, v.punta_third_value) == ("banker", "stand", "draw", None)
    assert res.settled.status == "final" and res.settled.void_cards == ("9C",)
    assert res.settled.coup.banker.cards == ("3S", "3D") and res.settled.coup.winner == "punta"


def test_next_cards_beyond_what_the_replay_needs_are_an_error():
    with pytest.raises(EngineError) as err:
        resolve(
            ["4H", "3S", "3C", "3D", "9C"], VENEZIA, punta_draws=False, regola_banker=True, next_cards=["2C"]
        )
    assert err.value.code == "unused_next_cards"
    with pytest.raises(EngineError) as err:
        resolve(
            ["2H", "AS", "3C", "2D", "2S"],
            VENEZIA,
            punta_draws=True,
            regola_banker=True,
            next_cards=["6D", "7D"],
        )
    assert err.value.code == "unused_next_cards" and err.value.details == {"unused": ["7D"]}


def test_unused_next_cards_on_a_conforming_coup_and_on_a_natural():
    for cards, draws in ((["2H", "3S", "4C", "3D"], False), (["9H", "KS", "KC", "5D"], None)):
        with pytest.raises(EngineError) as err:
            resolve(cards, VENEZIA, punta_draws=draws, next_cards=["5H"])
        assert err.value.code == "unused_next_cards"


def test_a_supplied_decision_that_is_not_needed_is_ignored():
    res = resolve(
        ["2H", "AS", "3C", "2D", "2S"],
        VENEZIA,
        punta_draws=True,
        regola_banker=True,
        next_cards=["6D"],
        reconstruction_banker_draws=False,  # the cell is binding: draw
        reconstruction_punta_draws=False,
    )
    assert res.settled.coup.banker.cards == ("AS", "2D", "6D")


# -- punta violations --------------------------------------------------------------------------
def test_punta_alla_regola_stood_on_four_reaches_a_free_banker_cell_never_reached():
    cards = ["2H", "KS", "2C", "5D", "9D"]
    res = resolve(cards, VENEZIA, punta_draws=False, regola_punta=True)
    (v,) = res.violations
    assert (v.side, v.rule, v.required, v.done) == ("punta", "punta_regola", "draw", "stand")
    assert res.settled.needs == {"decision": "banker"}
    # Pending: next cards are not checked yet.
    assert resolve(
        cards, VENEZIA, punta_draws=False, regola_punta=True, next_cards=["3H", "4H"]
    ).settled.needs == {"decision": "banker"}
    drew = resolve(
        cards,
        VENEZIA,
        punta_draws=False,
        regola_punta=True,
        reconstruction_banker_draws=True,
        next_cards=["3H"],
    )
    assert hands(drew.settled.coup) == (("2H", "2C", "9D"), ("KS", "5D", "3H"))
    assert drew.settled.coup.winner == "banker" and drew.settled.void_cards == ()
    needs_card = resolve(
        cards, VENEZIA, punta_draws=False, regola_punta=True, reconstruction_banker_draws=True
    )
    assert needs_card.settled.needs == {"cards": 1}
    stood = resolve(cards, VENEZIA, punta_draws=False, regola_punta=True, reconstruction_banker_draws=False)
    assert hands(stood.settled.coup) == (("2H", "2C", "9D"), ("KS", "5D"))
    assert stood.settled.coup.winner == "banker"  # 5 against 3


def test_punta_drew_on_six_voids_both_cards_when_the_banker_then_stands():
    cards = [*deal(6, 4), "3C", "5C"]  # the punta drew on 6 (stands), the banker drew on 4 v 3
    res = resolve(cards, VENEZIA, punta_draws=True, reconstruction_banker_draws=False)
    (v,) = res.violations
    assert (v.side, v.required, v.done, v.punta_third_card) == ("punta", "stand", "draw", "3C")
    assert res.settled.void_cards == ("3C", "5C")  # in shoe order
    assert res.settled.coup.punta.total == 6 and res.settled.coup.banker.total == 4
    # If the banker would draw, he gets the first real card (the punta's former third).
    res = resolve(cards, VENEZIA, punta_draws=True, reconstruction_banker_draws=True)
    assert res.settled.coup.banker.cards[-1] == "3C" and res.settled.void_cards == ("5C",)


def test_punta_free_cell_reuses_the_recorded_decision():
    # Punta 5 (free) drew a 2; the banker alla Regola stood on 3 v 2: only the banker broke.
    res = resolve([*deal(5, 3), "2C"], VENEZIA, punta_draws=True, regola_banker=True, next_cards=["4C"])
    assert [v.side for v in res.violations] == ["banker"]
    assert res.settled.coup.punta.cards[-1] == "2C"  # the punta still drew (reused)
    assert res.settled.coup.banker.cards[-1] == "4C"


def test_both_sides_violate_domestic():
    res = resolve(["2H", "4S", "AC", "2D", "5C"], DOMESTIC, punta_draws=False, banco_solo=False)
    assert [(v.side, v.rule, v.required) for v in res.violations] == [
        ("punta", "punta_several", "draw"),
        ("banker", "banker", "stand"),
    ]
    assert hands(res.settled.coup) == (("2H", "AC", "5C"), ("4S", "2D"))
    assert res.settled.coup.winner == "punta"


def test_domestic_banco_solo_may_stand_on_three():
    res = resolve(["2H", "4S", "AC", "2D"], DOMESTIC, punta_draws=False, banco_solo=True)
    assert res.conforming and res.settled.coup == res.as_played


def test_punta_free_cell_never_reached_is_pending_for_a_decision():
    # No real coup leaves the punta's free cell undecided, but the replay is general: a
    # coup whose punta decision is unknown waits for it (RULES.md §3.3).
    coup = play([*deal(5, 3), "2C"], punta_draws=True)._replace(punta_draws=None)
    settled = reconstruct(coup, VENEZIA, regola_banker=True)
    assert settled.status == "pending" and settled.needs == {"decision": "punta"}
    settled = reconstruct(coup, VENEZIA, regola_banker=True, punta_draws=False)
    # He stands on 5; the banker alla Regola on 3 against a punta who stood draws the 2C.
    assert settled.status == "final" and settled.coup.banker.cards == ("3D", "QD", "2C")


def test_a_conforming_coup_settles_as_played():
    res = resolve(["2H", "AS", "3C", "2D", "9H", "5S"], VENEZIA, punta_draws=True, regola_banker=True)
    assert res.conforming and res.violations == ()
    assert res.settled.coup == res.as_played and res.settled.void_cards == ()
    # And its explicit replay gives the same coup (a free cell reached in the same situation).
    replay = reconstruct(res.as_played, VENEZIA, regola_banker=True)
    assert replay.coup == res.as_played and replay.void_cards == ()


def test_the_regola_is_ignored_where_the_profile_does_not_allow_it():
    # Classic: banker free even "alla Regola"; standing on 3 v 2 conforms.
    res = resolve(
        ["2H", "AS", "3C", "2D", "2S"], get_profile("classic"), punta_draws=True, regola_banker=True
    )
    assert res.conforming


def test_check_on_a_natural_is_empty():
    coup = play(["9H", "KS", "KC", "5D"])
    assert check(coup, VENEZIA, regola_punta=True, regola_banker=True) == ()
    with pytest.raises(EngineError) as err:
        reconstruct(coup, VENEZIA, next_cards=["2C"])
    assert err.value.code == "unused_next_cards"


def test_resolution_as_dict_shape():
    out = resolve(["4H", "3S", "3C", "3D", "9C"], VENEZIA, punta_draws=False, regola_banker=True).as_dict()
    assert set(out) == {"as_played", "conforming", "violations", "settled"}
    assert out["conforming"] is False
    assert out["settled"]["status"] == "final" and out["settled"]["needs"] is None
    assert out["settled"]["void_cards"] == ["9C"]


def test_resolution_carries_winners_of_both_versions():
    res = resolve(
        ["2H", "AS", "3C", "2D", "2S"], VENEZIA, punta_draws=True, regola_banker=True, next_cards=["6D"]
    )
    assert (res.punta_total, res.banker_total, res.winner) == (7, 3, "punta")
    assert res.settled_winner == "banker"  # settlement uses the reconstruction (§3.3)
    pending = resolve(["2H", "AS", "3C", "2D", "2S"], VENEZIA, punta_draws=True, regola_banker=True)
    assert pending.settled_winner is None
    conforming = resolve(["2H", "3S", "4C", "3D"], VENEZIA, punta_draws=False)
    assert conforming.settled_winner == conforming.winner == "tie"  # 6 against 6
