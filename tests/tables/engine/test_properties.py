"""Hypothesis properties of play, conformance and reconstruction (RULES.md §1-3)."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from tables.engine import ALL_CARDS, PROFILES, VALUES, get_profile, reconstruct, resolve


@st.composite
def coups(draw):
    """A coup as a Capo Partita could record it: cards from one shuffled deck (so every
    card is unique and "used twice" is literal), any declarations, any profile and flags."""
    rnd = draw(st.randoms(use_true_random=False))
    cards = rnd.sample(ALL_CARDS, 14)
    dealt, rest = cards[:4], cards[4:]
    pt = (VALUES[dealt[0]] + VALUES[dealt[2]]) % 10
    bt = (VALUES[dealt[1]] + VALUES[dealt[3]]) % 10
    punta_draws = None if pt >= 8 else draw(st.booleans())
    used = list(dealt)
    if pt < 8 and bt < 8:
        if punta_draws:
            used.append(rest.pop(0))
        if draw(st.booleans()):
            used.append(rest.pop(0))
    return {
        "profile": get_profile(draw(st.sampled_from(sorted(PROFILES)))),
        "cards": used,
        "rest": rest,
        "punta_draws": punta_draws,
        "regola_punta": draw(st.booleans()),
        "regola_banker": draw(st.booleans()),
        "banco_solo": draw(st.booleans()),
        "decisions": draw(st.lists(st.booleans(), min_size=4, max_size=4)),
    }


def run(c, next_cards=(), rec_punta=None, rec_banker=None):
    return resolve(
        c["cards"],
        c["profile"],
        punta_draws=c["punta_draws"],
        regola_punta=c["regola_punta"],
        regola_banker=c["regola_banker"],
        banco_solo=c["banco_solo"],
        next_cards=next_cards,
        reconstruction_punta_draws=rec_punta,
        reconstruction_banker_draws=rec_banker,
    )


@settings(max_examples=600, deadline=None)
@given(coups())
def test_property_totals_and_winner(c):
    res = run(c)
    for hand in (res.as_played.punta, res.as_played.banker):
        assert 0 <= hand.total <= 9
        assert hand.total == sum(VALUES[x] for x in hand.cards) % 10
        assert len(hand.cards) in (2, 3)
    p, b = res.as_played.punta.total, res.as_played.banker.total
    assert res.as_played.winner == ("punta" if p > b else "banker" if b > p else "tie")
    # Every recorded card is in exactly one hand, in shoe order.
    assert sorted(res.as_played.punta.cards + res.as_played.banker.cards) == sorted(c["cards"])


@settings(max_examples=600, deadline=None)
@given(coups())
def test_property_a_conforming_coup_reconstructs_to_itself(c):
    res = run(c)
    if not res.conforming:
        return
    assert res.settled.status == "final"
    assert res.settled.coup == res.as_played and res.settled.void_cards == ()
    replay = reconstruct(
        res.as_played,
        c["profile"],
        regola_punta=c["regola_punta"],
        regola_banker=c["regola_banker"],
        banco_solo=c["banco_solo"],
    )
    assert replay.status == "final" and replay.coup == res.as_played and replay.void_cards == ()


@settings(max_examples=800, deadline=None)
@given(coups())
def test_property_reconstruction_finalises_and_uses_every_card_once(c):
    next_cards: list[str] = []
    rec: dict[str, bool] = {}
    decisions = iter(c["decisions"])
    for _ in range(6):  # at most: a decision and a card per side
        res = run(c, next_cards, rec.get("punta"), rec.get("banker"))
        needs = res.settled.needs
        if res.settled.status == "final":
            break
        assert needs in ({"cards": 1}, {"decision": "banker"}, {"decision": "punta"})
        if "cards" in needs:
            next_cards.append(c["rest"].pop(0))
        else:
            rec[needs["decision"]] = next(decisions)
    else:
        raise AssertionError("the reconstruction never finalised")

    settled = res.settled
    assert settled.status == "final" and settled.needs is None
    used = settled.coup.punta.cards + settled.coup.banker.cards + settled.void_cards
    # No card used twice, none lost: hands + void are exactly the real cards and the next cards.
    assert len(set(used)) == len(used)
    assert Counter(used) == Counter(c["cards"] + next_cards)
    # Void cards are real drawn cards (never dealt ones, never next cards), in shoe order.
    real_draws = c["cards"][4:]
    assert set(settled.void_cards) <= set(real_draws)
    assert list(settled.void_cards) == real_draws[len(real_draws) - len(settled.void_cards) :]
    assert not (next_cards and settled.void_cards)
    # The four dealt cards stay where they were dealt (RULES.md §3.3: same card order).
    assert settled.coup.punta.cards[:2] == (c["cards"][0], c["cards"][2])
    assert settled.coup.banker.cards[:2] == (c["cards"][1], c["cards"][3])
    if res.conforming:
        assert settled.coup == res.as_played
    else:
        # The reconstruction itself conforms to the rule in force.
        from tables.engine import check

        assert (
            check(
                settled.coup,
                c["profile"],
                regola_punta=c["regola_punta"],
                regola_banker=c["regola_banker"],
                banco_solo=c["banco_solo"],
            )
            == ()
        )
