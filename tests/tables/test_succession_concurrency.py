"""Real simultaneous requests on PostgreSQL: threads, each with its own client and database
connection, released together by a barrier. Bids all get recorded in a definite order, the
close is atomic, and a bank is taken once."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection

from audit.models import AuditEvent
from tables import services
from tables.models import Auction, Bank, Bid, Succession
from tests.concurrency import race

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="row locks need PostgreSQL"),
]

BANKER_WINS = ["KH", "5S", "3C", "2D", "2S"]




def post(url: str, body: dict | None = None):
    return lambda client: client.post(url, body or {}, format="json", HTTP_IDEMPOTENCY_KEY=uuid.uuid4().hex)


@pytest.fixture
def standing_phase(make_game):
    """Venezia, 3 seated and 4 standing; the banker won and withdrew; the seated passed: the
    standing players may take the bank all'altezza, first to speak."""
    game = make_game("venezia", seated=3, standing=4, min_seats_to_start=2)
    services.coup_record(
        session=game.session,
        by=game.capo,
        cards=BANKER_WINS,
        punta_draws=True,
        bets=[{"patron": game.seat(2), "amount": 100_00}],
    )
    services.bank_withdraw(bank=game.bank, by=game.capo)
    game.succession = Succession.objects.get(previous_bank=game.bank)
    for n in (2, 3):
        services.offer_pass(succession=game.succession, by=game.capo, patron=game.seat(n))
    return game


@pytest.fixture
def at_auction(standing_phase):
    game = standing_phase
    game.auction = services.auction_open(session=game.session, by=game.capo)
    return game


def test_two_standing_players_take_the_bank_at_once(standing_phase):
    game = standing_phase
    s = game.succession
    calls = [
        post(f"/api/successions/{s.pk}/accept/", {"patron": p.pk, "amount": s.amount})
        for p in game.standing[:3]
    ]
    responses = race(calls, [game.capo] * 3)
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200, 409, 409], responses
    assert {r.json()["error"]["code"] for r in responses if r.status_code == 409} == {"bank_already_taken"}
    banks = Bank.objects.filter(session=game.session, status="active")
    assert banks.count() == 1
    winner = next(r for r in responses if r.status_code == 200).json()["bank"]["banker"]
    assert banks.get().banker_id == winner
    assert AuditEvent.objects.filter(action="succession.taken").count() == 1


def test_simultaneous_bids_are_all_recorded_in_a_definite_order(at_auction):
    game = at_auction
    bidders = [game.seat(2), game.seat(3), *game.standing]
    calls = [
        post(f"/api/auctions/{game.auction.pk}/bids/", {"patron": p.pk, "amount": 500_00}) for p in bidders
    ]
    responses = race(calls, [game.capo] * len(calls))
    assert [r.status_code for r in responses] == [201] * len(bidders), responses
    bids = list(Bid.objects.filter(auction=game.auction).order_by("seq"))
    assert [b.seq for b in bids] == list(range(1, len(bidders) + 1))
    assert {b.patron_id for b in bids} == {p.pk for p in bidders}
    assert [b.at for b in bids] == sorted(b.at for b in bids)  # the seq is the order of the lock
    game.auction.refresh_from_db()
    assert game.auction.bids_count == len(bidders)
    events = AuditEvent.objects.filter(action="auction.bid").order_by("seq")
    assert [e.payload["seq"] for e in events] == [b.seq for b in bids]
    # Equal bids: the seated one nearest the outgoing banker (seat 1) wins, whatever arrived first.
    services.auction_close(auction=game.auction, by=game.capo)
    assert Bank.objects.get(session=game.session, status="active").banker_id == game.seat(2).pk


def test_racing_bids_never_go_below_the_best(at_auction):
    game = at_auction
    bidders = [game.seat(2), game.seat(3), *game.standing]
    amounts = [300_00, 700_00, 500_00, 600_00, 400_00, 650_00]
    calls = [
        post(f"/api/auctions/{game.auction.pk}/bids/", {"patron": p.pk, "amount": a})
        for p, a in zip(bidders, amounts, strict=True)
    ]
    responses = race(calls, [game.capo] * len(calls))
    for r in responses:
        assert r.status_code in (201, 400), r
        if r.status_code == 400:
            assert r.json()["error"]["code"] == "bid_below_best"
    recorded = list(Bid.objects.filter(auction=game.auction).order_by("seq").values_list("amount", flat=True))
    assert recorded == sorted(recorded) and 700_00 in recorded
    assert len(recorded) == sum(r.status_code == 201 for r in responses)


def test_the_close_is_atomic_against_bids(at_auction):
    game = at_auction
    bidders = [game.seat(2), game.seat(3), *game.standing[:2]]
    calls = [
        post(f"/api/auctions/{game.auction.pk}/bids/", {"patron": p.pk, "amount": 500_00}) for p in bidders
    ]
    calls.append(post(f"/api/auctions/{game.auction.pk}/close/"))
    users = [game.capo] * len(bidders) + [game.commissario]
    responses = race(calls, users)
    assert responses[-1].status_code == 200, responses[-1]
    for r in responses[:-1]:
        assert r.status_code in (201, 409), r
        if r.status_code == 409:
            assert r.json()["error"]["code"] == "auction_closed"
    auction = Auction.objects.get(pk=game.auction.pk)
    bids = list(Bid.objects.filter(auction=auction))
    assert len(bids) == sum(r.status_code == 201 for r in responses[:-1]) == auction.bids_count
    assert all(b.at <= auction.closed_at for b in bids)
    succession = Succession.objects.get(pk=game.succession.pk)
    if bids:
        assert succession.status == "taken" and auction.winning_bid in bids
        assert Bank.objects.get(session=game.session, status="active").origin == "auction"
    else:
        assert (succession.status, succession.lapse_reason) == ("lapsed", "no_bids")


def test_two_closes_at_once_one_bank(at_auction):
    game = at_auction
    services.auction_bid(auction=game.auction, by=game.capo, patron=game.standing[0], amount=300_00)
    url = f"/api/auctions/{game.auction.pk}/close/"
    responses = race([post(url), post(url)], [game.capo, game.commissario])
    assert sorted(r.status_code for r in responses) == [200, 409], responses
    assert Bank.objects.filter(session=game.session, origin="auction").count() == 1
    assert AuditEvent.objects.filter(action="auction.closed").count() == 1
