"""A succession while play is interrupted (RULES.md §5, §6: management may suspend play).

A player who leaves or is barred loses his turn at once, interrupted or not: nobody waits
for someone gone. But while the session is interrupted nothing may take the bank (offer_accept,
bank_open and the asta all refuse with `session_interrupted`), so a departure that would
decide the succession (a claim now won, nobody left to ask) leaves the decision to the
resumption, which takes it in its own transaction with its audit event."""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from floor import services as floor_services
from floor.models import Seat
from tables import services
from tables.models import Bank, Succession
from tests.tables import test_succession
from tests.tables.test_succession import accept, actions, banker_of, last_seq, lose, offers, pass_, withdraw

make_game = test_succession.make_game  # the same fixture: games of a few seats allowed to start


def release(game, n, by):
    seat = Seat.objects.get(session=game.session, patron=game.seat(n), left_at__isnull=True)
    floor_services.seat_release(seat=seat, by=by)


def interrupt(game):
    return floor_services.table_session_interrupt(session=game.session, by=game.commissario, reason="dispute")


def resume(game):
    return floor_services.table_session_resume(session=game.session, by=game.commissario, reason="settled")


def event(session, action):
    return AuditEvent.objects.filter(stream__name=session.audit_stream, action=action).order_by("-seq").first()


def rows(succ):
    return [(o.patron_id, o.status, o.reason) for o in offers(succ)]


def test_chemmy_departures_while_interrupted_do_not_open_a_bank_the_resumption_does(make_game):
    """The reviewer's repro: seat 4 claims the bank, play is interrupted, the Commissario
    releases seats 2 and 3. Their turns are skipped at once, but the claim is not decided
    (no bank opens at an interrupted table); the resumption gives seat 4 the bank."""
    game = make_game("chemmy-fi", seated=5, standing=0)
    succ = withdraw(game)
    height = succ.amount
    accept(game, succ, game.seat(4), height)  # a claim; seats 2 and 3 are nearer
    interrupt(game)
    since = last_seq(game.session)
    release(game, 2, game.commissario)
    release(game, 3, game.commissario)

    succ.refresh_from_db()
    assert succ.status == Succession.Status.OFFERING and succ.new_bank_id is None
    assert not Bank.objects.filter(session=game.session, status=Bank.Status.ACTIVE).exists()
    p = [game.seat(n).pk for n in (2, 3, 4, 5)]
    assert rows(succ) == [(p[0], "skipped", "left"), (p[1], "skipped", "left"), (p[2], "claimed", ""),
                          (p[3], "pending", "")]  # fmt: skip
    assert actions(game.session, since) == ["seat.released", "succession.offers_skipped"] * 2
    skipped = event(game.session, "succession.offers_skipped").payload
    assert skipped["cause"] == "departure" and skipped["deferred"] == "session_interrupted"

    since = last_seq(game.session)
    resume(game)
    succ.refresh_from_db()
    bank = banker_of(game)
    assert (succ.status, succ.new_bank_id) == ("taken", bank.pk)
    assert (bank.banker_id, bank.amount, bank.origin, bank.turn_seat) == (p[2], height, "succession", 4)
    assert [s for _, s, _ in rows(succ)] == ["skipped", "skipped", "accepted", "skipped"]
    assert actions(game.session, since) == ["table_session.resumed", "succession.offers_skipped", "bank.opened",
                                            "succession.taken"]  # fmt: skip
    # The actor is who resumed play (his action took the decision), and the event says so.
    taken = event(game.session, "succession.taken")
    assert taken.actor_id == game.commissario.pk and taken.payload["cause"] == "resume"
    assert bank.opened_by_id == game.commissario.pk


def test_chemmy_a_bar_while_interrupted_does_not_decide_the_claim_either(make_game):
    game = make_game("chemmy-fi", seated=5, standing=0)
    succ = withdraw(game)
    accept(game, succ, game.seat(4), succ.amount)
    pass_(game, succ, game.seat(2))
    interrupt(game)
    services.faux_tirage_bar(session=game.session, by=game.capo, patron=game.seat(3), reason="faux tirage")
    succ.refresh_from_db()
    assert succ.status == "offering" and not Bank.objects.filter(session=game.session, status="active").exists()
    assert [(s, r) for _, s, r in rows(succ)][:3] == [("passed", ""), ("skipped", "barred"), ("claimed", "")]
    resume(game)
    assert banker_of(game).banker_id == game.seat(4).pk


def test_chemmy_a_departure_deciding_the_claim_while_open_says_why(make_game, commissario):
    """Play running: the departure decides at once, and the events name the one who
    released the seat as the actor, with the cause `departure`."""
    game = make_game("chemmy-fi", seated=4, standing=0)
    succ = withdraw(game)
    accept(game, succ, game.seat(4), succ.amount)
    pass_(game, succ, game.seat(2))
    release(game, 3, commissario)
    assert banker_of(game).banker_id == game.seat(4).pk
    taken = event(game.session, "succession.taken")
    assert taken.actor_id == commissario.pk and taken.payload["cause"] == "departure"
    assert event(game.session, "succession.offers_skipped").payload["cause"] == "departure"


def test_an_answer_that_takes_the_bank_says_so(make_game):
    game = make_game("venezia", seated=3, standing=0)
    succ = lose(game)
    accept(game, succ, game.seat(2), 300_00)
    taken = event(game.session, "succession.taken")
    assert taken.actor_id == game.capo.pk and taken.payload["cause"] == "answer"


@pytest.mark.parametrize(("profile", "status", "reason"), [("venezia", "unclaimed", ""), ("domestic", "lapsed", "nobody_accepted")])
def test_the_last_player_leaves_while_interrupted_the_resumption_ends_the_turns(make_game, profile, status, reason):
    game = make_game(profile, seated=3, standing=0)
    succ = lose(game)
    pass_(game, succ, game.seat(2))
    interrupt(game)
    release(game, 3, game.commissario)
    succ.refresh_from_db()
    assert succ.status == "offering" and rows(succ)[-1][1:] == ("skipped", "left")
    resume(game)
    succ.refresh_from_db()
    assert (succ.status, succ.lapse_reason) == (status, reason)
    ended = event(game.session, "succession.unclaimed" if status == "unclaimed" else "succession.lapsed")
    assert ended.actor_id == game.commissario.pk and ended.payload["cause"] == "resume"
    if profile == "venezia":
        services.auction_open(session=game.session, by=game.capo)


def test_a_departure_with_nothing_to_decide_is_the_same_interrupted_or_not(make_game):
    game = make_game("venezia", seated=4, standing=0)
    succ = lose(game)
    interrupt(game)
    release(game, 2, game.commissario)
    since = last_seq(game.session)
    resume(game)
    assert actions(game.session, since) == ["table_session.resumed"]
    accept(game, succ, game.seat(3), 300_00)
    assert banker_of(game).banker_id == game.seat(3).pk


def test_the_session_closes_while_interrupted_the_pending_claim_lapses(make_game):
    game = make_game("chemmy-fi", seated=4, standing=0)
    succ = withdraw(game)
    accept(game, succ, game.seat(4), succ.amount)
    interrupt(game)
    release(game, 2, game.commissario)
    release(game, 3, game.commissario)
    floor_services.table_session_close(session=game.session, by=game.commissario)
    succ.refresh_from_db()
    assert (succ.status, succ.lapse_reason, succ.new_bank_id) == ("lapsed", "session_closed", None)
    assert not Bank.objects.filter(session=game.session, status="active").exists()
    assert rows(succ)[2][1:] == ("skipped", "lapsed")


def test_a_bank_taken_at_the_asta_says_so(make_game):
    game = make_game("venezia", seated=4, standing=0)
    succ = withdraw(game)
    pass_(game, succ, game.seat(2), game.seat(3), game.seat(4))
    auction = services.auction_open(session=game.session, by=game.capo)
    services.auction_bid(auction=auction, by=game.capo, patron=game.seat(3), amount=300_00)
    services.auction_close(auction=auction, by=game.capo)
    assert event(game.session, "succession.taken").payload["cause"] == "auction"
