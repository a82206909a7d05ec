"""tables.engine.succession: passing the bank and the auction (RULES.md §5). No database."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tables.engine import PROFILES, EngineError
from tables.engine.profiles import Rotation
from tables.engine.succession import (
    Bid,
    Kind,
    Offer,
    Place,
    Round,
    Skip,
    Status,
    auction_allowed,
    auction_winner,
    bid_refused,
    build_offers,
    claim_winner,
    continuation_floor,
    current,
    decide,
    distance,
    kind_for,
    next_seat,
    offer_of,
    respond,
    rotation_order,
    skip,
    to_auction,
    turn_after,
    turn_after_auction,
    withdraw,
)

VENEZIA, CLASSIC, DOMESTIC, CHEMMY = (PROFILES[n] for n in ("venezia", "classic", "domestic", "chemmy-fi"))
CHEMIN = [VENEZIA, CLASSIC, DOMESTIC, CHEMMY]


def table(seated=range(1, 9), standing=("s1", "s2"), barred=()):
    """Patrons keyed "p<seat>" in their seats, and standing ones by name."""
    places = [Place(f"p{n}", n, f"p{n}" not in barred) for n in seated]
    return places + [Place(k, None, k not in barred) for k in standing]


def lay(kind, *, outgoing="p3", after=3, rotation=Rotation.INCREASING, amount=None, floor=None, **kw):
    return build_offers(
        kind,
        places=table(**kw),
        outgoing=outgoing,
        after=after,
        rotation=rotation,
        table_seats=8,
        minimum=100,
        amount=amount,
        floor=floor,
    )


def answer(offers, key, accept=False, amount=None):
    return respond(offers, offer_of(offers, key).order, accept=accept, amount=amount)


def keys(offers):
    return [o.key for o in offers]


# --------------------------------------------------------------------------- rotation


@pytest.mark.parametrize("rotation", [r for r in Rotation if r != Rotation.NONE])
def test_every_direction_passes_to_the_right_which_is_the_next_seat(rotation):
    order = rotation_order(table(standing=()), after=3, rotation=rotation, table_seats=8)
    assert [p.seat_number for p in order] == [4, 5, 6, 7, 8, 1, 2, 3]


def test_distance_and_next_seat_wrap_round_and_skip_empty_seats():
    assert distance(4, after=3, rotation="increasing", table_seats=8) == 1
    assert distance(3, after=3, rotation="increasing", table_seats=8) == 8
    assert distance(None, after=3, rotation="increasing", table_seats=8) == 9
    assert next_seat([1, 2, 7], after=3, rotation="increasing", table_seats=8) == 7
    assert next_seat([1, 2, 3], after=3, rotation="increasing", table_seats=8) == 1
    assert next_seat([3], after=3, rotation="increasing", table_seats=8) is None
    assert next_seat([9, 2], after=8, rotation="increasing", table_seats=9) == 9  # Grande Tavolo


def test_punto_banco_has_no_succession():
    with pytest.raises(EngineError) as exc:
        kind_for(PROFILES["punto-banco"], "lost")
    assert exc.value.code == "no_succession"
    with pytest.raises(EngineError):
        distance(1, after=1, rotation=Rotation.NONE, table_seats=8)


def test_kind_per_profile_and_reason():
    assert {p.name: kind_for(p, "lost") for p in CHEMIN} == dict.fromkeys(
        ("venezia", "classic", "domestic", "chemmy-fi"), Kind.ROTATION
    )
    assert {p.name: kind_for(p, "withdrawn") for p in CHEMIN} == {
        "venezia": Kind.ALL_ALTEZZA,
        "classic": Kind.ALL_ALTEZZA,
        "domestic": Kind.CONTINUATION,
        "chemmy-fi": Kind.EQUAL_BANK,
    }
    assert [auction_allowed(p) for p in CHEMIN] == [True, True, False, True]


def test_domestic_mandatory_continuation():
    # seed 002: offered 20, covered 12, banker won: continuing needs 24; a tie needs 12.
    assert continuation_floor(DOMESTIC, bank_amount=24, last_winner="banker", last_covered=12) == 24
    assert continuation_floor(DOMESTIC, bank_amount=20, last_winner="tie", last_covered=12) == 12
    assert continuation_floor(VENEZIA, bank_amount=2000, last_winner="banker", last_covered=500) == 2000


# --------------------------------------------------------------------------- after a loss


def test_after_a_loss_each_seated_player_in_turn_accepts_or_passes():
    offers = lay(Kind.ROTATION, seated=[1, 2, 3, 5, 7], barred={"p5"})
    # seat 3 lost; seats 4, 6, 8 are empty; seat 5 is barred: skipped with its reason.
    assert [(o.key, o.round, o.status, o.reason) for o in offers] == [
        ("p5", Round.NEW_BANK, Status.SKIPPED, Skip.BARRED),
        ("p7", Round.NEW_BANK, Status.PENDING, ""),
        ("p1", Round.NEW_BANK, Status.PENDING, ""),
        ("p2", Round.NEW_BANK, Status.PENDING, ""),
    ]
    assert keys(current(offers)) == ["p7"]
    with pytest.raises(EngineError) as exc:
        answer(offers, "p1", accept=True, amount=100)
    assert exc.value.code == "not_your_turn" and exc.value.details["turn"] == ["p7"]
    step = answer(offers, "p7")
    assert keys(current(step.offers)) == ["p1"] and step.winner is None and not step.exhausted
    with pytest.raises(EngineError) as exc:
        answer(step.offers, "p1", accept=True, amount=99)
    assert exc.value.code == "amount_not_offered"
    took = answer(step.offers, "p1", accept=True, amount=5000)
    assert took.winner.key == "p1" and took.winner.amount == 5000
    assert [(o.key, o.status, o.reason) for o in took.offers][2:] == [
        ("p1", Status.ACCEPTED, ""),
        ("p2", Status.SKIPPED, Skip.TAKEN),
    ]
    assert current(took.offers) == ()
    with pytest.raises(EngineError) as exc:
        answer(took.offers, "p2", accept=True, amount=100)
    assert exc.value.code == "offer_answered"


def test_everybody_passes():
    offers = lay(Kind.ROTATION, seated=[1, 3, 4])
    step = answer(offers, "p4")
    step = answer(step.offers, "p1")
    assert step.exhausted and step.winner is None
    assert to_auction(step.offers) == step.offers


def test_standing_players_are_not_in_the_rotation_after_a_loss():
    offers = lay(Kind.ROTATION, standing=("s1",))
    assert "s1" not in keys(offers) and "p3" not in keys(offers)
    with pytest.raises(EngineError) as exc:
        offer_of(offers, "s1")
    assert exc.value.code == "not_offered"


# --------------------------------------------------------------------------- venezia withdrawal


def test_seguito_all_altezza_seated_in_order_then_standing_first_to_speak():
    offers = lay(Kind.ALL_ALTEZZA, amount=2500, seated=[1, 3, 6])
    assert [(o.key, o.round, o.amount_min, o.amount_max) for o in offers] == [
        ("p6", Round.SEATED, 2500, 2500),
        ("p1", Round.SEATED, 2500, 2500),
        ("s1", Round.STANDING, 2500, 2500),
        ("s2", Round.STANDING, 2500, 2500),
    ]
    with pytest.raises(EngineError) as exc:
        answer(offers, "s2", accept=True, amount=2500)  # the seated first
    assert exc.value.code == "not_your_turn"
    with pytest.raises(EngineError) as exc:
        answer(offers, "p6", accept=True, amount=2400)  # all'altezza: the whole amount
    assert exc.value.code == "amount_not_offered"
    step = answer(answer(offers, "p6").offers, "p1")
    assert keys(current(step.offers)) == ["s1", "s2"]
    took = answer(step.offers, "s2", accept=True, amount=2500)
    assert took.winner.key == "s2"
    assert {o.key: o.reason for o in took.offers if o.status == Status.SKIPPED} == {"s1": Skip.TAKEN}


def test_auction_only_once_the_seated_have_answered():
    offers = lay(Kind.ALL_ALTEZZA, amount=2500, seated=[1, 3, 6])
    with pytest.raises(EngineError) as exc:
        to_auction(offers)
    assert exc.value.code == "offers_pending" and exc.value.details["turn"] == ["p6"]
    step = answer(answer(offers, "p6").offers, "p1")
    after = to_auction(step.offers)  # nobody standing spoke: the asta
    assert [(o.key, o.status, o.reason) for o in after][2:] == [
        ("s1", Status.SKIPPED, Skip.AUCTION),
        ("s2", Status.SKIPPED, Skip.AUCTION),
    ]


# --------------------------------------------------------------------------- chemmy-fi withdrawal


def test_chemmy_equal_bank_nearest_claimant_wins_when_the_nearer_have_passed():
    offers = lay(Kind.EQUAL_BANK, amount=800, seated=[1, 3, 5, 7], standing=("s1",))
    assert keys(offers) == ["p5", "p7", "p1", "s1"]
    assert keys(current(offers)) == ["p5", "p7", "p1", "s1"]  # all at once
    step = answer(offers, "p1", accept=True, amount=800)
    assert step.winner is None and offer_of(step.offers, "p1").status == Status.CLAIMED
    step = answer(step.offers, "s1", accept=True, amount=800)
    assert step.winner is None
    step = answer(step.offers, "p5")  # p7 (nearer than p1) may still claim
    assert step.winner is None
    step = answer(step.offers, "p7")
    assert step.winner.key == "p1"
    assert {o.key: (o.status, o.reason) for o in step.offers}["s1"] == (Status.SKIPPED, Skip.OUTRANKED)


def test_chemmy_the_nearest_claimant_wins_at_once():
    offers = lay(Kind.EQUAL_BANK, amount=800, seated=[1, 3, 5, 7])
    step = answer(offers, "p5", accept=True, amount=800)
    assert step.winner.key == "p5"
    with pytest.raises(EngineError) as exc:
        to_auction(answer(offers, "p7", accept=True, amount=800).offers)
    assert exc.value.code == "bank_claimed"


def test_a_claimant_whose_nearer_neighbour_left_wins():
    offers = lay(Kind.EQUAL_BANK, amount=800, seated=[1, 3, 5, 7], standing=())
    step = answer(offers, "p7", accept=True, amount=800)
    step = answer(step.offers, "p1")
    assert step.winner is None
    gone = skip(step.offers, ["p5"], Skip.LEFT)
    assert gone.winner.key == "p7"


def test_withdraw_skips_the_departed_and_leaves_the_decision_to_decide():
    """While play is interrupted the departed lose their turn, but nobody takes the bank:
    `withdraw` records the skips only; `decide` later gives the same answer `skip` would."""
    offers = lay(Kind.EQUAL_BANK, amount=800, seated=[1, 3, 5, 7], standing=())
    step = answer(answer(offers, "p7", accept=True, amount=800).offers, "p1")
    withdrawn = withdraw(step.offers, ["p5"], Skip.LEFT)
    assert {o.key: (o.status, o.reason) for o in withdrawn} == {
        "p5": (Status.SKIPPED, Skip.LEFT),
        "p7": (Status.CLAIMED, ""),
        "p1": (Status.PASSED, ""),
    }
    assert decide(withdrawn) == skip(step.offers, ["p5"], Skip.LEFT)
    assert decide(withdrawn).winner.key == "p7"


# --------------------------------------------------------------------------- domestic withdrawal


def test_domestic_height_then_the_neighbour_from_the_minimum():
    offers = lay(Kind.CONTINUATION, floor=2400, seated=[1, 3, 5, 7], standing=("s1",))
    assert [(o.key, o.round, o.amount_min) for o in offers] == [
        ("p5", Round.HEIGHT, 2400),
        ("p7", Round.HEIGHT, 2400),
        ("p1", Round.HEIGHT, 2400),
        ("p5", Round.MINIMUM, 100),
        ("p7", Round.MINIMUM, 100),
        ("p1", Round.MINIMUM, 100),
    ]
    step = offers
    for key in ("p5", "p7", "p1"):
        step = answer(step, key).offers
    assert keys(current(step)) == ["p5"]  # the immediate neighbour may open from the minimum
    took = answer(step, "p5", accept=True, amount=100)
    assert took.winner.round == Round.MINIMUM
    assert turn_after(DOMESTIC, took.offers, took.winner, previous_turn=3) == 5


def test_domestic_a_neighbour_who_declines_the_minimum_passes_it_on_to_the_right():
    """Seed 002 §08: the neighbour may open a new bank from the minimum; the rules name no
    one after him, and the domestic game's new bank "passa ao próximo à direita, saltando
    recusas", ending early only "se ninguém puder abrir banco". So his refusal passes the
    option to the next player on the right, as after a loss, and the turn follows whoever
    opens; when everyone declines there is no auction (auction_allowed) and nobody banks."""
    offers = lay(Kind.CONTINUATION, floor=2400, seated=[1, 3, 5, 7], standing=())
    step = offers
    for key in ("p5", "p7", "p1", "p5"):  # the height round, then the neighbour's minimum
        step = answer(step, key).offers
    assert [(o.key, o.round) for o in current(step)] == [("p7", Round.MINIMUM)]
    took = answer(step, "p7", accept=True, amount=100)
    assert turn_after(DOMESTIC, took.offers, took.winner, previous_turn=3) == 7
    for key in ("p7", "p1"):
        step = answer(step, key).offers
    assert current(step) == () and decide(step).exhausted and not auction_allowed(DOMESTIC)


def test_domestic_distant_successor_keeps_the_neighbours_turn():
    offers = lay(Kind.CONTINUATION, floor=2400, seated=[1, 3, 5, 7], standing=())
    step = answer(offers, "p5").offers
    took = answer(step, "p7", accept=True, amount=3000)
    assert turn_after(DOMESTIC, took.offers, took.winner, previous_turn=3) == 3
    near = answer(offers, "p5", accept=True, amount=2400)
    assert turn_after(DOMESTIC, near.offers, near.winner, previous_turn=3) == 5
    # venezia: the turn follows the new banker wherever he sits.
    offers = lay(Kind.ALL_ALTEZZA, amount=2400, seated=[1, 3, 5, 7], standing=("s1",))
    took = answer(answer(offers, "p5").offers, "p7", accept=True, amount=2400)
    assert turn_after(VENEZIA, took.offers, took.winner, previous_turn=3) == 7
    step = offers
    for key in ("p5", "p7", "p1"):
        step = answer(step, key).offers
    standing = answer(step, "s1", accept=True, amount=2400)
    assert turn_after(VENEZIA, standing.offers, standing.winner, previous_turn=3) == 3


def test_domestic_barred_neighbour_the_next_one_is_the_neighbour():
    offers = lay(Kind.CONTINUATION, floor=2400, seated=[1, 3, 5, 7], standing=(), barred={"p5"})
    took = answer(offers, "p7", accept=True, amount=2400)
    assert turn_after(DOMESTIC, took.offers, took.winner, previous_turn=3) == 7


# --------------------------------------------------------------------------- the auction


def test_bid_refusals():
    assert bid_refused(100, minimum=100, maximum=None, best=None) is None
    assert bid_refused(500, minimum=100, maximum=None, best=500) is None  # equal: recorded
    assert bid_refused(99, minimum=100, maximum=None, best=None)[0] == "bid_below_minimum"
    assert bid_refused(499, minimum=100, maximum=None, best=500)[0] == "bid_below_best"
    assert bid_refused(1001, minimum=100, maximum=1000, best=None)[0] == "bid_above_maximum"
    for bad in (0, -1, 1.5, "100", True, None):
        assert bid_refused(bad, minimum=100, maximum=None, best=None)[0] == "bad_amount"


def winner(bids, after=3):
    return auction_winner(bids, after=after, rotation=Rotation.INCREASING, table_seats=8)


def test_auction_highest_then_seated_then_nearest_then_first():
    assert winner([Bid("a", 500, 5, 1), Bid("b", 600, None, 2)]).key == "b"  # highest, standing or not
    assert winner([Bid("s", 600, None, 1), Bid("a", 600, 7, 2)]).key == "a"  # equal: the seated
    assert winner([Bid("a", 600, 1, 1), Bid("b", 600, 5, 2)]).key == "b"  # two seated: nearer to 3
    assert winner([Bid("s", 600, None, 1), Bid("t", 600, None, 2)]).key == "s"  # two standing: first
    assert winner([Bid("a", 600, 4, 1, eligible=False), Bid("b", 500, 5, 2)]).key == "b"  # left/barred
    assert winner([]) is None
    assert turn_after_auction(Bid("a", 600, 6, 1), previous_turn=3) == 6
    assert turn_after_auction(Bid("s", 600, None, 1), previous_turn=3) == 3


# --------------------------------------------------------------------------- properties

seats_st = st.sets(st.integers(1, 8), min_size=1, max_size=8)


@st.composite
def tables(draw):
    seated = sorted(draw(seats_st))
    barred = {f"p{n}" for n in seated if draw(st.booleans()) and draw(st.booleans())}
    standing = [f"s{i}" for i in range(draw(st.integers(0, 3)))]
    outgoing = draw(st.sampled_from([f"p{n}" for n in seated] + standing))
    after = draw(st.sampled_from([*seated, None]))
    return seated, standing, barred, outgoing, after


@given(tables(), st.sampled_from(list(Kind)))
def test_offers_never_skip_a_seated_eligible_player(t, kind):
    seated, standing, barred, outgoing, after = t
    offers = build_offers(
        kind,
        places=table(seated, standing, barred),
        outgoing=outgoing,
        after=after,
        rotation=Rotation.INCREASING,
        table_seats=8,
        minimum=100,
        amount=1000,
        floor=1000,
    )
    eligible = [f"p{n}" for n in seated if f"p{n}" != outgoing and f"p{n}" not in barred]
    expected = sorted(
        eligible, key=lambda k: distance(int(k[1:]), after=after, rotation="increasing", table_seats=8)
    )
    # Everybody passes: the seated eligible players are asked, each once per round, in rotation order.
    asked, step = [], offers
    while current(step):
        now = current(step)
        if now[0].round in (Round.STANDING, Round.CLAIM):
            asked += [o.key for o in now if o.seat_number is not None]
            for o in now:
                step = respond(step, o.order, accept=False).offers
            continue
        asked.append(now[0].key)
        step = respond(step, now[0].order, accept=False).offers
    rounds = 2 if kind == Kind.CONTINUATION else 1
    assert asked == expected * rounds
    assert outgoing not in keys(offers)
    assert all(o.status == Status.SKIPPED and o.reason == Skip.BARRED for o in offers if o.key in barred)
    if eligible and kind != Kind.EQUAL_BANK:
        assert current(offers)[0].key == expected[0]  # the nearest to the right speaks first


@given(tables(), st.data())
def test_first_acceptance_in_turn_takes_the_bank_and_nobody_after(t, data):
    seated, standing, barred, outgoing, after = t
    offers = build_offers(
        Kind.ROTATION,
        places=table(seated, standing, barred),
        outgoing=outgoing,
        after=after,
        rotation=Rotation.INCREASING,
        table_seats=8,
        minimum=100,
    )
    step = offers
    while current(step):
        now = current(step)[0]
        result = respond(step, now.order, accept=data.draw(st.booleans()), amount=100)
        step = result.offers
        if result.winner is not None:
            assert result.winner.key == now.key
            assert current(step) == ()
            assert sum(o.status == Status.ACCEPTED for o in step) == 1
            break
    for o in step:
        if o.status == Status.PENDING:
            raise AssertionError("an offer left pending after the end")


bids_st = st.lists(
    st.tuples(st.sampled_from([100, 200, 300]), st.one_of(st.none(), st.integers(1, 8))),
    min_size=1,
    max_size=8,
)


@given(bids_st, st.randoms(use_true_random=False), st.sampled_from([1, 3, 8, None]))
def test_auction_winner_is_unique_and_deterministic_where_seats_break_ties(raw, rnd, after):
    # One bid per patron, patrons keyed by their place (two standing: two patrons).
    bids = [Bid(f"k{i}", amount, seat, i + 1) for i, (amount, seat) in enumerate(raw)]
    seats_taken = [b.seat_number for b in bids if b.seat_number is not None]
    if len(seats_taken) != len(set(seats_taken)):
        bids = [
            b for i, b in enumerate(bids) if b.seat_number is None or b.seat_number not in seats_taken[:i]
        ]
        bids = list({(b.seat_number or b.key): b for b in bids}.values())
    best = winner(bids, after)
    top = max(b.amount for b in bids)
    assert best.amount == top
    tied = [b for b in bids if b.amount == top]
    assert sum(b.key == best.key for b in tied) == 1  # unique
    shuffled = list(bids)
    rnd.shuffle(shuffled)
    rearrived = [Bid(b.key, b.amount, b.seat_number, i + 1) for i, b in enumerate(shuffled)]
    again = winner(rearrived, after)
    if any(b.seat_number is not None for b in tied):
        # a seated top bid exists: the seat decides, whatever the order of arrival.
        assert again.key == best.key and best.seat_number is not None
        near = min(
            (b for b in tied if b.seat_number is not None),
            key=lambda b: distance(b.seat_number, after=after, rotation="increasing", table_seats=8),
        )
        assert best.key == near.key
    else:
        # only standing players tied: the first to speak wins.
        assert again.key == min((b for b in rearrived if b.amount == top), key=lambda b: b.seq).key


@given(
    st.permutations(["p1", "p5", "p7", "s1"]), st.sets(st.sampled_from(["p1", "p5", "p7", "s1"]), min_size=1)
)
def test_chemmy_claim_winner_does_not_depend_on_the_order_of_the_claims(arrival, claimers):
    offers = lay(Kind.EQUAL_BANK, amount=800, seated=[1, 3, 5, 7], standing=("s1",))
    step = offers
    for key in arrival:
        if offer_of(step, key).status != Status.PENDING:
            continue
        result = answer(step, key, accept=key in claimers, amount=800)
        step = result.offers
    nearest = next(o.key for o in offers if o.key in claimers)
    won = [o for o in step if o.status == Status.ACCEPTED]
    assert [o.key for o in won] == [nearest]
    assert claim_winner(step) is None or claim_winner(step).key == nearest


def test_offer_dataclass_standing():
    assert Offer(1, Round.STANDING, "s", None, 1, 1).standing
