"""Passing the bank and the auction through the services (RULES.md §5), for every chemin de
fer profile: the order of the right to the bank, the terms, the auction and its ties, the
rotation pointer, the audit trail, and every refusal with its code and no write."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from audit.models import AuditEvent
from floor import services as floor_services
from floor.models import Seat
from tables import selectors, services
from tables.models import Auction, Bank, Bid, FauxTirageBar, Succession, SuccessionOffer
from tests.audit.conftest import staff_said
from tests.factories import PatronFactory
from tests.tables.conftest import snapshot

BANKER_WINS = ["KH", "5S", "3C", "2D", "2S"]  # punta 3 draws a 2 -> 5; banker 7 stands
PUNTA_WINS = ["7H", "6S", "KH", "KD"]  # punta 7 v banker 6, both stand -> punta

CASINO = ["venezia", "classic"]  # seguito all'altezza, then the asta
WITH_AUCTION = ["venezia", "classic", "chemmy-fi"]
ALL = ["venezia", "classic", "domestic", "chemmy-fi"]


# --------------------------------------------------------------------------- helpers


def actions(session, since: int = 0) -> list[str]:
    return list(
        AuditEvent.objects.filter(stream__name=session.audit_stream, seq__gt=since)
        .order_by("seq")
        .values_list("action", flat=True)
    )


def last_seq(session) -> int:
    return (
        AuditEvent.objects.filter(stream__name=session.audit_stream)
        .order_by("-seq")
        .values_list("seq", flat=True)
        .first()
        or 0
    )


def payload(session, action):
    return (
        AuditEvent.objects.filter(stream__name=session.audit_stream, action=action)
        .order_by("-seq")
        .first()
        .payload
    )


def banker_of(game):
    return Bank.objects.get(session=game.session, status="active")


def bettor(game):
    """Someone at the table who may hold the cards, other than the banker."""
    bank = banker_of(game)
    seats = Seat.objects.filter(session=game.session, left_at__isnull=True).exclude(patron_id=bank.banker_id)
    barred = FauxTirageBar.objects.filter(session=game.session).values_list("patron_id", flat=True)
    return seats.exclude(patron_id__in=barred).select_related("patron").order_by("-id").first().patron


@pytest.fixture
def make_game(make_game):
    """The tables fixture, with games of a few seats allowed to start."""

    def make(profile="venezia", **kwargs):
        kwargs.setdefault("min_seats_to_start", 2)
        return make_game(profile, **kwargs)

    return make


def lose(game):
    """The banker loses a coup (his bank passes)."""
    services.coup_record(
        session=game.session,
        by=game.capo,
        cards=PUNTA_WINS,
        punta_draws=False,
        bets=[{"patron": bettor(game), "amount": 100_00}],
    )
    return Succession.objects.filter(session=game.session).order_by("-number").first()


def withdraw(game):
    """The banker wins a coup, then withdraws."""
    services.coup_record(
        session=game.session,
        by=game.capo,
        cards=BANKER_WINS,
        punta_draws=True,
        bets=[{"patron": bettor(game), "amount": 100_00}],
    )
    bank = services.bank_withdraw(bank=banker_of(game), by=game.capo)
    return Succession.objects.get(previous_bank=bank)


def offers(succ):
    return list(SuccessionOffer.objects.filter(succession=succ).select_related("patron").order_by("order"))


def table(succ):
    """[(patron, round, status)] in order."""
    return [(o.patron_id, o.round, o.status) for o in offers(succ)]


def turn(succ):
    state = selectors.succession_state(session=succ.session)["succession"]
    return [o["patron"]["id"] for o in state["offers"] if o["current"]]


def accept(game, succ, patron, amount):
    return services.offer_accept(succession=succ, by=game.capo, patron=patron, amount=amount)


def pass_(game, succ, *patrons):
    for patron in patrons:
        services.offer_pass(succession=succ, by=game.capo, patron=patron)


def state_of_succession() -> tuple:
    return (
        tuple(Succession.objects.order_by("pk").values_list("status", "new_bank_id")),
        tuple(SuccessionOffer.objects.order_by("pk").values_list("status", "reason", "amount")),
        tuple(Auction.objects.order_by("pk").values_list("status", "bids_count", "winning_bid_id")),
        Bid.objects.count(),
    )


@pytest.fixture
def refused_here():
    """`refused_here(code, fn, **kwargs)`: the call raises ApplicationError with `code`, and
    nothing changes: no row, no audit event, no offer or auction status."""
    from config.errors import ApplicationError

    def check(code: str, fn, /, **kwargs):
        before = (snapshot(), state_of_succession())
        with pytest.raises(ApplicationError) as exc:
            fn(**kwargs)
        assert exc.value.code == code, (exc.value.code, exc.value.message, exc.value.details)
        assert (snapshot(), state_of_succession()) == before
        return exc.value

    return check


# --------------------------------------------------------------------------- after a loss


@pytest.mark.parametrize("profile", ALL)
def test_after_a_loss_the_bank_is_offered_in_rotation(make_game, profile, refused_here):
    game = make_game(profile)
    succ = lose(game)
    assert (succ.reason, succ.kind, succ.status, succ.after_seat) == ("lost", "rotation", "offering", 1)
    # Seats 2..8 in order; the outgoing banker and the standing player are not in the rotation.
    assert [p for p, _, _ in table(succ)] == [game.seat(n).pk for n in range(2, 9)]
    assert turn(succ) == [game.seat(2).pk]
    refused_here("not_your_turn", accept, game=game, succ=succ, patron=game.seat(3), amount=200_00)
    refused_here("not_offered", accept, game=game, succ=succ, patron=game.standing[0], amount=200_00)
    refused_here("outgoing_banker", accept, game=game, succ=succ, patron=game.seat(1), amount=200_00)
    refused_here("bank_below_minimum", accept, game=game, succ=succ, patron=game.seat(2), amount=99_99)
    refused_here("bad_amount", accept, game=game, succ=succ, patron=game.seat(2), amount=0)
    since = last_seq(game.session)
    pass_(game, succ, game.seat(2))
    assert turn(succ) == [game.seat(3).pk]
    accept(game, succ, game.seat(3), 250_00)
    succ.refresh_from_db()
    bank = banker_of(game)
    assert (bank.banker_id, bank.amount, bank.origin, bank.turn_seat) == (
        game.seat(3).pk,
        250_00,
        "succession",
        3,
    )
    assert (succ.status, succ.new_bank_id) == ("taken", bank.pk)
    assert [s for _, _, s in table(succ)] == ["passed", "accepted", *["skipped"] * 5]
    assert actions(game.session, since) == [
        "succession.offer_passed",
        "succession.offer_accepted",
        "bank.opened",
        "succession.taken",
    ]
    taken = payload(game.session, "succession.taken")
    assert taken["turn_seat"] == {"old": 1, "new": 3} and taken["round"] == "new_bank"
    refused_here("bank_already_taken", accept, game=game, succ=succ, patron=game.seat(4), amount=200_00)
    refused_here(
        "bank_already_taken", services.offer_pass, succession=succ, by=game.capo, patron=game.seat(4)
    )


def test_the_audit_trail_says_who_had_the_right_and_why(make_game):
    game = make_game("venezia")
    services.faux_tirage_bar(session=game.session, by=game.capo, patron=game.seat(2), reason="faux tirage")
    succ = lose(game)
    started = payload(game.session, "succession.started")
    assert (
        started["reason"] == "lost" and started["kind"] == "rotation" and started["rotation"] == "increasing"
    )
    assert started["after_seat"] == 1 and started["outgoing_banker"] == game.seat(1).pk
    assert started["offers"][0] == {
        "order": 1,
        "round": "new_bank",
        "patron": game.seat(2).pk,
        "seat_number": 2,
        "amount_min": 100_00,
        "amount_max": None,
        "status": "skipped",
        "reason": "barred",
        "amount": None,
    }
    assert started["turn"] == [game.seat(3).pk]
    assert turn(succ) == [game.seat(3).pk]


def test_empty_seats_are_skipped_and_a_player_who_left_loses_his_turn(make_game, commissario):
    game = make_game("venezia")
    for n in (2, 3):
        seat = Seat.objects.get(session=game.session, patron=game.seat(n), left_at__isnull=True)
        floor_services.seat_release(seat=seat, by=commissario)
    succ = lose(game)
    assert [p for p, _, _ in table(succ)][:2] == [game.seat(4).pk, game.seat(5).pk]
    assert turn(succ) == [game.seat(4).pk]
    seat = Seat.objects.get(session=game.session, patron=game.seat(4), left_at__isnull=True)
    floor_services.seat_release(seat=seat, by=commissario)
    # Nobody waits for him: his turn is skipped with his departure, and seat 5 speaks.
    state = selectors.succession_state(session=game.session)["succession"]
    assert state["offers"][0]["present"] is False and state["offers"][0]["status"] == "skipped"
    assert turn(succ) == [game.seat(5).pk]
    assert actions(game.session)[-2:] == ["seat.released", "succession.offers_skipped"]
    skipped = payload(game.session, "succession.offers_skipped")
    assert skipped["cause"] == "departure" and skipped["changes"][0]["reason"] == "left"
    pass_(game, succ, game.seat(5))
    first, second = offers(succ)[:2]
    assert (first.status, first.reason, second.status) == ("skipped", "left", "passed")


def test_a_new_bank_at_most_the_maximum(make_game, refused_here):
    game = make_game("venezia", maximum=2000_00)
    succ = lose(game)
    refused_here("bank_above_maximum", accept, game=game, succ=succ, patron=game.seat(2), amount=2000_01)
    accept(game, succ, game.seat(2), 2000_00)
    assert banker_of(game).amount == 2000_00


@pytest.mark.parametrize("profile", WITH_AUCTION)
def test_after_a_loss_nobody_wants_it_the_auction(make_game, profile):
    game = make_game(profile, seated=4)
    succ = lose(game)
    pass_(game, succ, game.seat(2), game.seat(3), game.seat(4))
    succ.refresh_from_db()
    assert succ.status == "unclaimed"
    assert actions(game.session)[-1] == "succession.unclaimed"
    auction = services.auction_open(session=game.session, by=game.commissario)
    services.auction_bid(auction=auction, by=game.capo, patron=game.seat(3), amount=300_00)
    services.auction_close(auction=auction, by=game.capo)
    bank = banker_of(game)
    assert (bank.banker_id, bank.amount, bank.origin, bank.turn_seat) == (
        game.seat(3).pk,
        300_00,
        "auction",
        3,
    )


def test_domestic_after_a_loss_nobody_wants_it_lapses(make_game, refused_here):
    game = make_game("domestic", seated=3, standing=0)
    succ = lose(game)
    pass_(game, succ, game.seat(2), game.seat(3))
    succ.refresh_from_db()
    assert (succ.status, succ.lapse_reason) == ("lapsed", "nobody_accepted")
    refused_here("auction_not_in_profile", services.auction_open, session=game.session, by=game.capo)


# --------------------------------------------------------------------------- venezia / classic withdrawal


@pytest.mark.parametrize("profile", CASINO)
def test_seguito_all_altezza_to_the_seated_in_order_then_the_standing(make_game, profile, refused_here):
    game = make_game(profile, seated=4, standing=2)
    succ = withdraw(game)
    height = Bank.objects.get(pk=succ.previous_bank_id).amount
    assert height == 1000_00 + 100_00 - 5_00  # bank + winnings less the cagnotte (§4)
    assert (succ.kind, succ.amount) == ("all_altezza", height)
    s1, s2 = game.standing
    assert table(succ) == [
        (game.seat(2).pk, "seated", "pending"),
        (game.seat(3).pk, "seated", "pending"),
        (game.seat(4).pk, "seated", "pending"),
        (s1.pk, "standing", "pending"),
        (s2.pk, "standing", "pending"),
    ]
    refused_here("amount_not_offered", accept, game=game, succ=succ, patron=game.seat(2), amount=height - 1)
    refused_here("amount_not_offered", accept, game=game, succ=succ, patron=game.seat(2), amount=height + 1)
    refused_here("not_your_turn", accept, game=game, succ=succ, patron=s1, amount=height)
    refused_here("offers_pending", services.auction_open, session=game.session, by=game.capo)
    pass_(game, succ, game.seat(2), game.seat(3), game.seat(4))
    assert turn(succ) == [s1.pk, s2.pk]  # the standing players at once: first to speak
    accept(game, succ, s2, height)
    bank = banker_of(game)
    assert (bank.banker_id, bank.amount, bank.origin) == (s2.pk, height, "succession")
    # A standing banker holds no seat: the pointer stays with the outgoing banker's turn.
    assert bank.turn_seat == 1
    state = selectors.session_game_state(game.session)
    assert state["rotation"] == {"direction": state["rotation"]["direction"], "turn_seat": 1, "next_seat": 2}
    assert [o.reason for o in offers(succ)][-1] == ""  # s2 accepted
    assert offers(succ)[3].reason == "taken"
    # When the standing banker loses, the bank is offered from the seat after the turn: seat 2.
    succ2 = lose(game)
    assert succ2.after_seat == 1 and turn(succ2) == [game.seat(2).pk]


@pytest.mark.parametrize("profile", CASINO)
def test_a_seated_successor_carries_the_pointer(make_game, profile):
    game = make_game(profile, seated=5)
    succ = withdraw(game)
    pass_(game, succ, game.seat(2))
    accept(game, succ, game.seat(3), succ.amount)
    assert banker_of(game).turn_seat == 3
    assert selectors.session_game_state(game.session)["rotation"]["next_seat"] == 4


def test_the_auction_seated_beats_standing_on_a_tie(make_game, refused_here):
    game = make_game("venezia", seated=6, standing=2)
    succ = withdraw(game)
    pass_(game, succ, *(game.seat(n) for n in range(2, 7)))
    auction = services.auction_open(session=game.session, by=game.capo)
    assert [(o.status, o.reason) for o in offers(succ)][-2:] == [
        ("skipped", "auction"),
        ("skipped", "auction"),
    ]
    s1, s2 = game.standing
    bid = services.auction_bid(auction=auction, by=game.capo, patron=s1, amount=500_00)
    assert (bid.seq, bid.standing, bid.seat_number) == (1, True, None)
    services.auction_bid(auction=auction, by=game.capo, patron=game.seat(6), amount=500_00)  # equal: recorded
    refused_here(
        "bid_below_best", services.auction_bid, auction=auction, by=game.capo, patron=s2, amount=499_99
    )
    services.auction_bid(auction=auction, by=game.capo, patron=s2, amount=500_00)
    assert list(Bid.objects.filter(auction=auction).values_list("seq", flat=True)) == [1, 2, 3]
    services.auction_close(auction=auction, by=game.capo)
    auction.refresh_from_db()
    assert auction.winning_bid.patron_id == game.seat(6).pk
    bank = banker_of(game)
    assert (bank.banker_id, bank.origin, bank.amount, bank.turn_seat) == (
        game.seat(6).pk,
        "auction",
        500_00,
        6,
    )
    closed = payload(game.session, "auction.closed")
    assert [r["patron"] for r in closed["ranking"]] == [game.seat(6).pk, s1.pk, s2.pk]
    refused_here(
        "auction_closed", services.auction_bid, auction=auction, by=game.capo, patron=s1, amount=900_00
    )
    refused_here("auction_closed", services.auction_close, auction=auction, by=game.capo)


@pytest.mark.parametrize("profile", WITH_AUCTION)
def test_the_auction_two_seated_tie_the_nearest_from_the_outgoing_banker(make_game, profile):
    game = make_game(profile, seated=8, standing=1)
    # The banker at seat 1 loses; seat 2 takes the bank, wins, and withdraws: the turn is seat 2's.
    succ = lose(game)
    accept(game, succ, game.seat(2), 100_00)
    succ = withdraw(game)
    assert succ.after_seat == 2
    if profile == "chemmy-fi":
        pass_(game, succ, *(p for p in [*game.seated, *game.standing] if p.pk != game.seat(2).pk))
    else:
        pass_(game, succ, *(game.seat(n) for n in (3, 4, 5, 6, 7, 8, 1)))
    auction = services.auction_open(session=game.session, by=game.commissario)
    for patron in (game.seat(1), game.seat(5), game.standing[0], game.seat(4)):  # seat 1 bids first
        services.auction_bid(auction=auction, by=game.capo, patron=patron, amount=400_00)
    services.auction_close(auction=auction, by=game.commissario)
    # From seat 2: 4 is nearer than 5, both nearer than 1 (after 8); the standing one is last.
    assert banker_of(game).banker_id == game.seat(4).pk
    assert banker_of(game).turn_seat == 4


def test_the_auction_highest_bid_wins_seated_or_standing(make_game):
    game = make_game("classic", seated=3, standing=1)
    succ = withdraw(game)
    pass_(game, succ, game.seat(2), game.seat(3))
    auction = services.auction_open(session=game.session, by=game.capo)
    services.auction_bid(auction=auction, by=game.capo, patron=game.seat(2), amount=300_00)
    services.auction_bid(auction=auction, by=game.capo, patron=game.standing[0], amount=300_01)
    services.auction_close(auction=auction, by=game.capo)
    bank = banker_of(game)
    assert (bank.banker_id, bank.amount, bank.turn_seat) == (game.standing[0].pk, 300_01, 1)


def test_auction_refusals(make_game, refused_here, auditor, outsider):
    game = make_game("venezia", seated=4, standing=1, maximum=5000_00)
    refused_here("no_succession", services.auction_open, session=game.session, by=game.capo)
    succ = withdraw(game)
    refused_here("offers_pending", services.auction_open, session=game.session, by=game.capo)
    pass_(game, succ, game.seat(2), game.seat(3), game.seat(4))
    refused_here("not_capo_partita_or_commissario", services.auction_open, session=game.session, by=auditor)
    refused_here("not_capo_partita_or_commissario", services.auction_open, session=game.session, by=outsider)
    auction = services.auction_open(session=game.session, by=game.capo)
    refused_here("auction_already_open", services.auction_open, session=game.session, by=game.commissario)
    services.faux_tirage_bar(session=game.session, by=game.capo, patron=game.seat(3), reason="faux tirage")
    stranger = PatronFactory()
    bid = {"auction": auction, "by": game.capo}
    refused_here("bid_below_minimum", services.auction_bid, **bid, patron=game.seat(2), amount=99_99)
    refused_here("bid_above_maximum", services.auction_bid, **bid, patron=game.seat(2), amount=5000_01)
    refused_here("bad_amount", services.auction_bid, **bid, patron=game.seat(2), amount=1.5)
    refused_here("patron_barred", services.auction_bid, **bid, patron=game.seat(3), amount=200_00)
    refused_here("patron_not_at_table", services.auction_bid, **bid, patron=stranger, amount=200_00)
    refused_here("outgoing_banker", services.auction_bid, **bid, patron=game.seat(1), amount=200_00)
    refused_here("not_session_capo_partita", services.auction_bid, auction=auction, by=game.commissario,
                 patron=game.seat(2), amount=200_00)  # fmt: skip
    refused_here("not_session_capo_partita", services.auction_bid, auction=auction, by=auditor,
                 patron=game.seat(2), amount=200_00)  # fmt: skip
    refused_here("not_capo_partita_or_commissario", services.auction_close, auction=auction, by=auditor)
    refused_here(
        "auction_in_progress",
        services.bank_open,
        session=game.session,
        by=game.capo,
        patron=game.seat(2),
        amount=100_00,
    )
    refused_here("succession_not_open", accept, game=game, succ=succ, patron=game.seat(2), amount=succ.amount)
    # No bid: the auction closes, the succession lapses; a new auction needs a new succession.
    services.auction_close(auction=auction, by=game.commissario)
    succ.refresh_from_db()
    assert (succ.status, succ.lapse_reason) == ("lapsed", "no_bids")
    refused_here("no_succession", services.auction_open, session=game.session, by=game.capo)


def test_a_bidder_who_left_does_not_win(make_game, commissario):
    game = make_game("venezia", seated=4, standing=1)
    succ = withdraw(game)
    pass_(game, succ, game.seat(2), game.seat(3), game.seat(4))
    auction = services.auction_open(session=game.session, by=game.capo)
    services.auction_bid(auction=auction, by=game.capo, patron=game.seat(3), amount=300_00)
    services.auction_bid(auction=auction, by=game.capo, patron=game.seat(2), amount=400_00)
    seat = Seat.objects.get(session=game.session, patron=game.seat(2), left_at__isnull=True)
    floor_services.seat_release(seat=seat, by=commissario)
    services.auction_close(auction=auction, by=game.capo)
    assert banker_of(game).banker_id == game.seat(3).pk
    ranking = payload(game.session, "auction.closed")["ranking"]
    assert ranking[0] == {
        "seq": 2,
        "patron": game.seat(2).pk,
        "amount": 400_00,
        "seat_number": 2,
        "eligible": False,
        "void": "left",
    }


# --------------------------------------------------------------------------- chemmy-fi


def test_chemmy_equal_bank_the_nearest_claimant(make_game, refused_here):
    game = make_game("chemmy-fi", seated=5, standing=1)
    succ = withdraw(game)
    height = succ.amount
    assert (succ.kind, height) == ("equal_bank", 1000_00 + 100_00)  # no cagnotte in chemmy-fi
    assert turn(succ) == [game.seat(n).pk for n in (2, 3, 4, 5)] + [game.standing[0].pk]
    refused_here("amount_not_offered", accept, game=game, succ=succ, patron=game.seat(5), amount=height - 1)
    accept(game, succ, game.seat(5), height)  # a claim: seats 2-4 are nearer and may still claim
    accept(game, succ, game.seat(4), height)
    succ.refresh_from_db()
    assert succ.status == "offering"
    assert [s for _, _, s in table(succ)] == ["pending", "pending", "claimed", "claimed", "pending"]
    refused_here("bank_claimed", services.auction_open, session=game.session, by=game.capo)
    pass_(game, succ, game.seat(2))
    pass_(game, succ, game.seat(3))  # now seat 4 is the nearest claimant
    succ.refresh_from_db()
    bank = banker_of(game)
    assert (succ.status, bank.banker_id, bank.amount, bank.turn_seat) == ("taken", game.seat(4).pk, height, 4)
    assert [(s, o.reason) for (_, _, s), o in zip(table(succ), offers(succ), strict=True)] == [
        ("passed", ""),
        ("passed", ""),
        ("accepted", ""),
        ("skipped", "outranked"),
        ("skipped", "taken"),
    ]
    assert actions(game.session)[-4:] == ["succession.offer_passed", "succession.offer_passed", "bank.opened",
                                          "succession.taken"]  # fmt: skip


def test_chemmy_after_a_loss_the_next_player_puts_up_any_bank(make_game):
    game = make_game("chemmy-fi", seated=3)
    succ = lose(game)
    assert succ.kind == "rotation" and turn(succ) == [game.seat(2).pk]
    accept(game, succ, game.seat(2), 777_00)
    assert banker_of(game).amount == 777_00


# --------------------------------------------------------------------------- domestic


def test_domestic_succession_at_the_mandatory_continuation(make_game, refused_here):
    game = make_game("domestic", seated=5, standing=0)
    succ = withdraw(game)
    # Covered 100, banker won: the continuation is at least 2S = 200 (seed 002), the table minimum 100.
    assert (succ.kind, succ.floor) == ("continuation", 200_00)
    assert [r for _, r, _ in table(succ)] == ["height"] * 4 + ["minimum"] * 4
    refused_here("amount_not_offered", accept, game=game, succ=succ, patron=game.seat(2), amount=199_99)
    # A more distant successor takes it: the neighbour (seat 2) keeps his normal turn.
    pass_(game, succ, game.seat(2), game.seat(3))
    accept(game, succ, game.seat(4), 250_00)
    bank = banker_of(game)
    assert (bank.banker_id, bank.turn_seat) == (game.seat(4).pk, 1)
    assert selectors.session_game_state(game.session)["rotation"]["next_seat"] == 2
    # When he loses, the bank is offered to that neighbour first.
    succ2 = lose(game)
    assert turn(succ2) == [game.seat(2).pk]
    assert [p for p, _, _ in table(succ2)] == [game.seat(n).pk for n in (2, 3, 5, 1)]
    accept(game, succ2, game.seat(2), 100_00)
    assert banker_of(game).turn_seat == 2  # the neighbour used his normal turn


def test_domestic_nobody_at_the_height_the_neighbour_from_the_minimum(make_game, refused_here):
    game = make_game("domestic", seated=4, standing=0)
    succ = withdraw(game)
    pass_(game, succ, game.seat(2), game.seat(3), game.seat(4))
    assert turn(succ) == [game.seat(2).pk]
    refused_here("not_your_turn", accept, game=game, succ=succ, patron=game.seat(3), amount=100_00)
    refused_here("bank_below_minimum", accept, game=game, succ=succ, patron=game.seat(2), amount=50_00)
    accept(game, succ, game.seat(2), 100_00)
    bank = banker_of(game)
    assert (bank.banker_id, bank.amount, bank.turn_seat) == (game.seat(2).pk, 100_00, 2)
    taken = payload(game.session, "succession.taken")
    assert taken["round"] == "minimum"


def test_domestic_nobody_at_all_lapses(make_game):
    game = make_game("domestic", seated=3, standing=0)
    succ = withdraw(game)
    pass_(game, succ, game.seat(2), game.seat(3), game.seat(2), game.seat(3))
    succ.refresh_from_db()
    assert (succ.status, succ.lapse_reason) == ("lapsed", "nobody_accepted")
    assert Bank.objects.filter(session=game.session, status="active").count() == 0


def test_domestic_after_a_tie_the_continuation_is_the_covered_stake(make_game):
    game = make_game("domestic", seated=3, standing=0)
    services.coup_record(
        session=game.session,
        by=game.capo,
        cards=["7H", "7S", "KH", "KD"],
        punta_draws=False,
        bets=[{"patron": game.seat(2), "amount": 300_00}],
    )
    bank = services.bank_withdraw(bank=banker_of(game), by=game.capo)
    assert Succession.objects.get(previous_bank=bank).floor == 300_00


# --------------------------------------------------------------------------- other ends, the state


def test_punto_banco_has_no_succession(make_game, refused_here):
    game = make_game("punto-banco", bank=None, shoe=False, seated=2, standing=0)
    refused_here("profile_not_supported", services.auction_open, session=game.session, by=game.capo)
    state = selectors.succession_state(session=game.session)
    assert state["succession"] is None and state["rotation"]["turn_seat"] is None


def test_a_bank_opened_directly_ends_the_succession(make_game):
    game = make_game("venezia")
    succ = lose(game)
    bank = services.bank_open(session=game.session, by=game.capo, patron=game.seat(5), amount=300_00)
    succ.refresh_from_db()
    assert (succ.status, succ.lapse_reason, bank.turn_seat) == ("lapsed", "bank_opened_directly", 5)
    assert actions(game.session)[-2:] == ["succession.lapsed", "bank.opened"]
    assert payload(game.session, "succession.lapsed")["patron"] == game.seat(5).pk


def test_the_outgoing_banker_does_not_take_his_bank_back_directly(make_game, refused_here):
    game = make_game("venezia")
    outgoing = game.seat(1)
    succ = lose(game)
    refused_here("outgoing_banker", services.bank_open, session=game.session, by=game.capo, patron=outgoing,
                 amount=300_00)  # fmt: skip
    succ.refresh_from_db()
    assert succ.status == "offering"


def test_session_close_lapses_the_succession_and_closes_the_auction(make_game):
    game = make_game("venezia", seated=3)
    succ = withdraw(game)
    pass_(game, succ, game.seat(2), game.seat(3))
    auction = services.auction_open(session=game.session, by=game.capo)
    services.auction_bid(auction=auction, by=game.capo, patron=game.seat(2), amount=200_00)
    floor_services.table_session_close(session=game.session, by=game.commissario)
    services.bank_end_for_session_close(session=game.session, by=game.commissario)  # safe twice
    succ.refresh_from_db()
    auction.refresh_from_db()
    assert (succ.status, succ.lapse_reason) == ("lapsed", "session_closed")
    assert (auction.status, auction.winning_bid_id) == ("closed", None)
    assert Bank.objects.filter(session=game.session, status="active").count() == 0


def test_everybody_else_barred_goes_straight_to_auction(make_game):
    game = make_game("venezia", seated=2, standing=1)
    services.faux_tirage_bar(session=game.session, by=game.capo, patron=game.seat(2), reason="faux tirage")
    succ = lose(game)
    assert succ.status == "unclaimed" and table(succ) == [(game.seat(2).pk, "new_bank", "skipped")]


def test_the_state_carries_the_succession_and_the_pointer(make_game):
    game = make_game("venezia", seated=4, standing=1)
    state = selectors.session_game_state(game.session)
    assert state["rotation"]["turn_seat"] == 1 and state["rotation"]["next_seat"] == 2
    assert state["succession"] is None
    succ = withdraw(game)
    state = selectors.session_game_state(game.session)
    assert state["bank"] is None and state["succession"]["id"] == succ.pk
    assert [o["current"] for o in state["succession"]["offers"]] == [True, False, False, False]
    assert state["rotation"] == {"direction": "increasing", "turn_seat": 1, "next_seat": 2}
    pass_(game, succ, game.seat(2), game.seat(3), game.seat(4))
    auction = services.auction_open(session=game.session, by=game.capo)
    services.auction_bid(auction=auction, by=game.capo, patron=game.seat(3), amount=200_00)
    state = selectors.session_game_state(game.session)["succession"]
    assert state["status"] == "auction" and state["auction"]["best"] == 200_00
    assert [b["seq"] for b in state["auction"]["bids"]] == [1]


def count(fn, **kwargs) -> int:
    with CaptureQueriesContext(connection) as ctx:
        fn(**kwargs)
    return len(ctx.captured_queries)


def at_auction(make_game, seated: int, bids: int):
    game = make_game("venezia", seated=seated, standing=1)
    succ = withdraw(game)
    pass_(game, succ, *game.seated[1:])
    auction = services.auction_open(session=game.session, by=game.capo)
    for patron in [*game.seated[1:], *game.standing][:bids]:
        services.auction_bid(auction=auction, by=game.capo, patron=patron, amount=200_00)
    return game


def test_state_queries_do_not_grow_with_offers_or_bids(make_game):
    small = at_auction(make_game, seated=3, bids=1)
    large = at_auction(make_game, seated=8, bids=6)
    for fn in (selectors.session_game_state, selectors.succession_state):
        kwargs = lambda g: {"session": g.session}  # noqa: E731
        assert count(fn, **kwargs(small)) == count(fn, **kwargs(large))
    # With a bank active the succession costs the tablet's state nothing.
    game = make_game("venezia")
    with_bank = count(selectors.session_game_state, session=game.session)
    assert with_bank <= count(selectors.session_game_state, session=large.session)
    assert count(selectors.succession_state, session=large.session) <= 7


def test_offers_show_the_minimum_in_force_after_a_change(game):
    """The Commissario may change the minimum during play (§6): a new bank is then taken at
    the new one, and the offers say so (they used to show the minimum of when they were laid out)."""
    from config.errors import ApplicationError

    succ = lose(game)
    state = selectors.succession_state(session=game.session)["succession"]
    assert {o["amount_min"] for o in state["offers"]} == {100_00}
    floor_services.table_minimum_change(session=game.session, by=game.commissario, minimum=300_00, reason="raise")
    game.session.refresh_from_db()
    for state in (
        selectors.succession_state(session=game.session)["succession"],
        selectors.session_game_state(game.session)["succession"],
    ):
        assert {o["amount_min"] for o in state["offers"]} == {300_00}
    first = turn(succ)[0]
    patron = SuccessionOffer.objects.get(succession=succ, patron_id=first).patron
    with pytest.raises(ApplicationError) as exc:
        accept(game, succ, patron, 200_00)
    assert exc.value.code == "bank_below_minimum"
    accept(game, succ, patron, 300_00)
    # Answered, the offers keep the terms they were answered on.
    floor_services.table_minimum_change(session=game.session, by=game.commissario, minimum=500_00, reason="again")
    game.session.refresh_from_db()
    state = selectors.succession_state(session=game.session)["succession"]
    taken = next(o for o in state["offers"] if o["status"] == "accepted")
    assert (taken["amount_min"], taken["amount"]) == (300_00, 300_00)
    # The succession keeps the minimum it ended under (the report's "Minimum"), not the one it
    # started with (100) nor a later one (500).
    succ.refresh_from_db()
    assert (succ.status, succ.minimum, state["minimum"]) == ("taken", 300_00, 300_00)


def test_the_day_report_describes_each_asta_and_its_bids(make_game):
    """The report's asta sections (RULES.md §5, art. 71): names and amounts, not model ids."""
    from audit.reports.builder import build_document
    from tables import report_selectors

    game = make_game("venezia", seated=3)
    succ = withdraw(game)
    pass_(game, succ, game.seat(2), game.seat(3))
    auction = services.auction_open(session=game.session, by=game.capo)
    services.auction_bid(auction=auction, by=game.capo, patron=game.seat(2), amount=200_00)
    services.auction_bid(auction=auction, by=game.capo, patron=game.seat(3), amount=250_00)
    services.auction_close(auction=auction, by=game.capo)
    day = game.session.gaming_day
    t, s = game.session.table.number, game.session.number
    name = lambda p: f"{p.first_name} {p.last_name}"  # noqa: E731
    assert list(report_selectors.auction_rows(gaming_day_id=day.pk)) == [
        (t, s, succ.number, "closed", auction.opened_at, staff_said(game.capo), Auction.objects.get().closed_at,
         staff_said(game.capo), 2, name(game.seat(3)), 250_00),  # staff as the report names them
    ]  # fmt: skip
    bids = list(report_selectors.bid_rows(gaming_day_id=day.pk))
    assert [(b[3], b[4], b[5], b[6], b[7], b[10]) for b in bids] == [
        (1, name(game.seat(2)), 2, False, 200_00, False),
        (2, name(game.seat(3)), 3, False, 250_00, True),
    ]
    built = build_document(day=day, version=1, seal="x", streams=[])
    sections = {sec.key: sec for sec in built.document.sections}
    assert [row[9] for row in sections["auctions"].rows()] == [name(game.seat(3))]
    assert [row[4] for row in sections["auction_bids"].rows()] == [name(game.seat(2)), name(game.seat(3))]


# --------------------------------------------------------------------------- departures and limits


@pytest.mark.parametrize("how", ["barred", "left"])
def test_the_player_whose_turn_it_is_barred_or_gone_the_next_speaks_at_once(make_game, commissario, how):
    """A QA evening: the tablet offered Accept/Pass to a player who had just left (or been
    barred), both refused, and nothing else was offered. The turn now moves with him."""
    game = make_game("venezia", seated=4, standing=0)
    succ = lose(game)
    assert turn(succ) == [game.seat(2).pk]
    if how == "barred":
        services.faux_tirage_bar(session=game.session, by=game.capo, patron=game.seat(2), reason="faux tirage")
    else:
        seat = Seat.objects.get(session=game.session, patron=game.seat(2), left_at__isnull=True)
        floor_services.seat_release(seat=seat, by=commissario)
    assert turn(succ) == [game.seat(3).pk]
    assert (offers(succ)[0].status, offers(succ)[0].reason) == ("skipped", how)
    accept(game, succ, game.seat(3), 300_00)
    assert banker_of(game).banker_id == game.seat(3).pk


@pytest.mark.parametrize(("profile", "status", "reason"), [("venezia", "unclaimed", ""), ("domestic", "lapsed", "nobody_accepted")])
def test_the_last_player_asked_leaves_nobody_is_left_to_ask(make_game, commissario, profile, status, reason):
    game = make_game(profile, seated=3, standing=0)
    succ = lose(game)
    pass_(game, succ, game.seat(2))
    seat = Seat.objects.get(session=game.session, patron=game.seat(3), left_at__isnull=True)
    floor_services.seat_release(seat=seat, by=commissario)
    succ.refresh_from_db()
    assert (succ.status, succ.lapse_reason) == (status, reason)
    if profile == "venezia":  # the asta may open now; it waited for an absent player before
        services.auction_open(session=game.session, by=game.capo)


def test_chemmy_a_departure_decides_the_claim_and_a_claimant_who_leaves_loses_it(make_game, commissario):
    game = make_game("chemmy-fi", seated=5, standing=0)
    succ = withdraw(game)
    height = succ.amount
    accept(game, succ, game.seat(4), height)  # claims; seats 2 and 3 are nearer
    accept(game, succ, game.seat(5), height)
    seat = Seat.objects.get(session=game.session, patron=game.seat(4), left_at__isnull=True)
    floor_services.seat_release(seat=seat, by=commissario)  # his claim falls with him
    assert [(o.status, o.reason) for o in offers(succ)][2] == ("skipped", "left")
    pass_(game, succ, game.seat(2))
    services.faux_tirage_bar(session=game.session, by=game.capo, patron=game.seat(3), reason="faux tirage")
    # The only nearer player barred: seat 5's claim wins, by the bar itself.
    succ.refresh_from_db()
    bank = banker_of(game)
    assert (succ.status, bank.banker_id, bank.amount) == ("taken", game.seat(5).pk, height)
    assert actions(game.session)[-4:] == ["faux_tirage.barred", "succession.offers_skipped", "bank.opened",
                                          "succession.taken"]  # fmt: skip


def test_a_bidder_who_left_does_not_hold_the_others_up(make_game, commissario, refused_here):
    game = make_game("venezia", seated=4, standing=0)
    succ = withdraw(game)
    pass_(game, succ, game.seat(2), game.seat(3), game.seat(4))
    auction = services.auction_open(session=game.session, by=game.capo)
    services.auction_bid(auction=auction, by=game.capo, patron=game.seat(2), amount=400_00)
    refused_here("bid_below_best", services.auction_bid, auction=auction, by=game.capo, patron=game.seat(3),
                 amount=300_00)  # fmt: skip
    seat = Seat.objects.get(session=game.session, patron=game.seat(2), left_at__isnull=True)
    floor_services.seat_release(seat=seat, by=commissario)
    services.auction_bid(auction=auction, by=game.capo, patron=game.seat(3), amount=300_00)
    services.auction_close(auction=auction, by=game.capo)
    assert (banker_of(game).banker_id, banker_of(game).amount) == (game.seat(3).pk, 300_00)


def test_a_bid_outside_the_limits_in_force_at_the_close_does_not_win(make_game):
    """The Commissario raised the minimum during the asta (§6): a bid made under the old
    minimum cannot become a bank below the new one; the best bid that stands wins, and
    with none the succession lapses, saying so."""
    game = make_game("venezia", seated=4, standing=0, maximum=5000_00)
    succ = withdraw(game)
    pass_(game, succ, game.seat(2), game.seat(3), game.seat(4))
    auction = services.auction_open(session=game.session, by=game.capo)
    services.auction_bid(auction=auction, by=game.capo, patron=game.seat(2), amount=150_00)
    services.auction_bid(auction=auction, by=game.capo, patron=game.seat(3), amount=250_00)
    floor_services.table_minimum_change(session=game.session, by=game.commissario, minimum=200_00, reason="raise")
    services.auction_close(auction=auction, by=game.capo)
    assert (banker_of(game).banker_id, banker_of(game).amount) == (game.seat(3).pk, 250_00)
    ranking = payload(game.session, "auction.closed")["ranking"]
    assert [(r["patron"], r["eligible"], r.get("void")) for r in ranking] == [
        (game.seat(3).pk, True, None), (game.seat(2).pk, False, "below_minimum")
    ]

    game = make_game("venezia", seated=3, standing=0)
    succ = withdraw(game)
    pass_(game, succ, game.seat(2), game.seat(3))
    auction = services.auction_open(session=game.session, by=game.capo)
    services.auction_bid(auction=auction, by=game.capo, patron=game.seat(2), amount=150_00)
    floor_services.table_minimum_change(session=game.session, by=game.commissario, minimum=200_00, reason="raise")
    services.auction_close(auction=auction, by=game.capo)
    succ.refresh_from_db()
    assert (succ.status, succ.lapse_reason) == ("lapsed", "no_valid_bids")
    assert not Bank.objects.filter(session=game.session, status="active").exists()


def test_domestic_at_the_height_at_most_the_table_maximum(make_game, refused_here):
    game = make_game("domestic", seated=4, standing=0, maximum=3000_00)
    succ = withdraw(game)
    refused_here("bank_above_maximum", accept, game=game, succ=succ, patron=game.seat(2), amount=3000_01)
    accept(game, succ, game.seat(2), 3000_00)
    assert banker_of(game).amount == 3000_00


def test_a_lapsed_succession_leaves_no_offer_pending(make_game):
    game = make_game("venezia")
    succ = lose(game)
    services.bank_open(session=game.session, by=game.capo, patron=game.seat(5), amount=300_00)
    assert {(o.status, o.reason) for o in offers(succ)} == {("skipped", "lapsed")}
    lapsed = payload(game.session, "succession.lapsed")
    assert lapsed["reason"] == "bank_opened_directly" and {c["reason"] for c in lapsed["changes"]} == {"lapsed"}


def test_a_lapse_writes_the_succession_and_its_offers_in_one_round_trip(make_game):
    """A bank entered directly over a live succession: the succession's UPDATE and its
    unanswered offers' (returning the rows it skips, for the event) go in one round trip;
    the event lists those offers in order, and an offer answered before is left as it was."""
    from config import prepared

    game = make_game("venezia", seated=5, standing=0)
    succ = lose(game)
    first = offers(succ)[0]
    pass_(game, succ, first.patron)
    with CaptureQueriesContext(connection) as ctx:
        services.bank_open(session=game.session, by=game.capo, patron=game.seat(5), amount=300_00)
    sqls = [q["sql"] for q in ctx.captured_queries]
    skipping = [sql for sql in sqls if 'UPDATE "tables_successionoffer"' in sql]
    ending = [sql for sql in sqls if 'UPDATE "tables_succession" SET' in sql]
    assert len(skipping) == len(ending) == 1
    if prepared._joined(connection):
        assert skipping == ending  # the same text
    assert not any('FROM "tables_successionoffer"' in sql for sql in sqls)
    after = offers(succ)
    assert (after[0].patron_id, after[0].status, after[0].reason) == (first.patron_id, "passed", "")
    assert {(o.status, o.reason, o.answered_by_id) for o in after[1:]} == {("skipped", "lapsed", game.capo.pk)}
    changes = payload(game.session, "succession.lapsed")["changes"]
    assert [c["order"] for c in changes] == [o.order for o in after[1:]]
    assert [c["patron"] for c in changes] == [o.patron_id for o in after[1:]]
    assert {c["answered_at"] for c in changes} == {after[1].answered_at.isoformat()}


def test_the_day_report_shows_each_succession_and_every_offer(make_game, commissario):
    """The auditor replays who had the right to the bank (RULES.md §5): a QA pass found the
    successions only in the audit trail. Each one, its offers in order with their answers,
    how it ended, and a bank entered directly says so (origin direct)."""
    from audit.reports.builder import build_document
    from tables import report_selectors

    game = make_game("venezia", seated=4, standing=0)
    name = lambda p: f"{p.first_name} {p.last_name}"  # noqa: E731
    outgoing = banker_of(game).banker
    first = lose(game)
    pass_(game, first, game.seat(2))
    accept(game, first, game.seat(3), 300_00)
    second = lose(game)
    services.bank_open(session=game.session, by=game.capo, patron=game.seat(2), amount=250_00)
    day = game.session.gaming_day
    t, s = game.session.table.number, game.session.number
    rows = list(report_selectors.succession_rows(gaming_day_id=day.pk))
    assert [(r[0], r[1], r[2], r[4], r[5], r[6], r[10], r[11], r[12], r[13], r[14]) for r in rows] == [
        (t, s, first.number, name(outgoing), "lost", "rotation", "taken", "", name(game.seat(3)), 300_00, "succession"),
        (t, s, second.number, name(game.seat(3)), "lost", "rotation", "lapsed", "bank_opened_directly",
         name(game.seat(2)), 250_00, "direct"),  # the bank entered round it
    ]  # fmt: skip
    offered = [(r[2], r[3], r[5], r[9], r[10], r[11]) for r in report_selectors.succession_offer_rows(gaming_day_id=day.pk)]
    assert offered[:3] == [
        (first.number, 1, name(game.seat(2)), "passed", "", None),
        (first.number, 2, name(game.seat(3)), "accepted", "", 300_00),
        (first.number, 3, name(game.seat(4)), "skipped", "taken", None),
    ]
    assert {(o[3], o[4]) for o in offered if o[0] == second.number} == {("skipped", "lapsed")}
    assert banker_of(game).origin == "direct"
    built = build_document(day=day, version=1, seal="x", streams=[])
    sections = {sec.key: sec for sec in built.document.sections}
    assert len(list(sections["successions"].rows())) == 2
    assert len(list(sections["succession_offers"].rows())) == len(offered)
    assert [row[9] for row in sections["auctions"].rows()] == []


def test_a_bid_above_a_lowered_maximum_does_not_block_the_asta(make_game):
    """A QA re-test: the maximum lowered during the asta below the best bid left every new
    bid refused (bid_below_best under it, bid_above_maximum over it). A bid that cannot win
    no longer counts as the best, on the tablet's state either."""
    game = make_game("venezia", seated=4, standing=0, maximum=5000_00)
    succ = withdraw(game)
    pass_(game, succ, game.seat(2), game.seat(3), game.seat(4))
    auction = services.auction_open(session=game.session, by=game.capo)
    services.auction_bid(auction=auction, by=game.capo, patron=game.seat(2), amount=4500_00)
    services.auction_bid(auction=auction, by=game.capo, patron=game.seat(3), amount=4500_00)
    floor_services.table_minimum_change(
        session=game.session, by=game.commissario, minimum=100_00, maximum=4000_00, reason="lower"
    )
    game.session.refresh_from_db()
    state = selectors.succession_state(session=game.session)["succession"]["auction"]
    assert state["best"] is None and {b["void"] for b in state["bids"]} == {"above_maximum"}
    services.auction_bid(auction=auction, by=game.capo, patron=game.seat(4), amount=3800_00)
    state = selectors.succession_state(session=game.session)["succession"]["auction"]
    assert state["best"] == 3800_00
    services.auction_close(auction=auction, by=game.capo)
    assert (banker_of(game).banker_id, banker_of(game).amount) == (game.seat(4).pk, 3800_00)




def test_a_lapsed_claim_is_recorded_with_the_amount_its_row_keeps(make_game):
    """chemmy-fi: a claim pending (nearer players not yet asked) when the Capo Partita enters a
    bank directly. Its row keeps the amount claimed; the lapse's audit event said None."""
    game = make_game("chemmy-fi", seated=5, standing=0)
    succ = withdraw(game)
    accept(game, succ, game.seat(4), succ.amount)  # a claim; seats 2 and 3 are nearer
    services.bank_open(session=game.session, by=game.capo, patron=game.seat(2), amount=300_00)
    rows = {o.patron_id: (o.status, o.reason, o.amount) for o in offers(succ)}
    assert rows[game.seat(4).pk] == ("skipped", "lapsed", succ.amount)
    changes = {c["patron"]: c for c in payload(game.session, "succession.lapsed")["changes"]}
    assert {p: (c["status"], c["reason"], c["amount"]) for p, c in changes.items()} == rows


def _lapsed_terms(game, succ) -> tuple[list[tuple], list[tuple]]:
    """The offers the lapse skipped: (order, round, amount_min, amount_max) on their rows, and
    (order, amount_min, amount_max) as the lapse's event lists them."""
    rows = [(o.order, o.round, o.amount_min, o.amount_max) for o in offers(succ) if o.reason == "lapsed"]
    changes = payload(game.session, "succession.lapsed")["changes"]
    return rows, [(c["order"], c["amount_min"], c["amount_max"]) for c in changes]


def test_a_lapse_records_the_terms_in_force_as_an_answer_does(make_game):
    """A QA walk: the offers a lapse skipped kept the minimum of when they were laid out and
    no maximum (null, "no maximum"), where an answer, a departure or the asta's opening
    records the terms in force (today's minimum for a new bank; the table maximum binding an
    offer with no bound of its own). The minimum and maximum changed, then a bank entered
    directly: the skipped offers and the event say today's."""
    game = make_game("venezia", seated=4, standing=0, maximum=5000_00)
    succ = lose(game)
    pass_(game, succ, offers(succ)[0].patron)
    floor_services.table_minimum_change(
        session=game.session, by=game.commissario, minimum=200_00, maximum=4000_00, reason="the house"
    )
    services.bank_open(session=game.session, by=game.capo, patron=offers(succ)[2].patron, amount=300_00)
    rows, changes = _lapsed_terms(game, succ)
    assert rows == [(2, "new_bank", 200_00, 4000_00), (3, "new_bank", 200_00, 4000_00)]
    assert changes == [(2, 200_00, 4000_00), (3, 200_00, 4000_00)]
    # the offer answered before keeps the terms it was answered under
    assert [(o.status, o.amount_min, o.amount_max) for o in offers(succ)[:1]] == [("passed", 100_00, 5000_00)]


def test_a_domestic_lapse_records_the_height_under_the_maximum_in_force(make_game):
    """Domestic, after a withdrawal: the height's offers keep their own minimum (the
    continuation) and are bound by today's maximum; the minimum round's are today's minimum
    and maximum."""
    game = make_game("domestic", seated=4, standing=0, maximum=5000_00)
    succ = withdraw(game)
    height = {o.order: o.amount_min for o in offers(succ) if o.round == "height"}
    assert height and set(height.values()) != {150_00}
    floor_services.table_minimum_change(
        session=game.session, by=game.commissario, minimum=150_00, maximum=4000_00, reason="the house"
    )
    services.bank_open(session=game.session, by=game.capo, patron=offers(succ)[0].patron, amount=300_00)
    rows, changes = _lapsed_terms(game, succ)
    expected = [(o.order, o.round, height.get(o.order, 150_00), 4000_00) for o in offers(succ)]
    assert rows == expected and {r[1] for r in rows} == {"height", "minimum"}
    assert changes == [(order, low, high) for order, _, low, high in expected]


def test_a_lapse_with_no_maximum_in_force_records_none(make_game):
    """The maximum lifted before the lapse: an offer with no bound of its own is bound by
    none (null), at today's minimum."""
    game = make_game("venezia", seated=3, standing=0, maximum=5000_00)
    succ = lose(game)
    floor_services.table_minimum_change(
        session=game.session, by=game.commissario, minimum=200_00, maximum=None, reason="no maximum tonight"
    )
    services.bank_open(session=game.session, by=game.capo, patron=offers(succ)[0].patron, amount=300_00)
    rows, changes = _lapsed_terms(game, succ)
    assert rows == [(1, "new_bank", 200_00, None), (2, "new_bank", 200_00, None)]
    assert changes == [(1, 200_00, None), (2, 200_00, None)]
