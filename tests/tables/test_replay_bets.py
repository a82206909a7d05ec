"""chemmy-fi replays a tie and its bettors may withdraw or change their bets (RULES.md §3.2,
tie row); everywhere else a bet made in time stands (§6)."""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from tables import services
from tables.models import Bet, Posting

from .test_coups import PUNTA_WINS, TIE, assert_balanced

pytestmark = pytest.mark.django_db


def _tie_then_replay(game):
    services.coup_record(
        session=game.session, by=game.capo, cards=TIE, punta_draws=False,
        bets=[{"patron": game.seat(2), "amount": 300_00}, {"patron": game.seat(4), "amount": 200_00}],
    )  # fmt: skip
    replay = services.coup_open(session=game.session, by=game.capo)
    got = [(b.patron_id, b.amount, b.carried_from_id is not None) for b in replay.bets.order_by("order")]
    assert got == [(game.seat(2).pk, 300_00, True), (game.seat(4).pk, 200_00, True)]
    return replay


def test_chemmy_fi_a_carried_bet_is_withdrawn(make_game):
    game = make_game("chemmy-fi")
    replay = _tie_then_replay(game)
    services.bet_withdraw(coup=replay, by=game.capo, patron=game.seat(4))
    assert list(replay.bets.values_list("patron_id", "amount")) == [(game.seat(2).pk, 300_00)]
    event = AuditEvent.objects.filter(action="bet.withdrawn").get()
    assert event.payload["patron"] == game.seat(4).pk and event.payload["amount"] == 200_00
    services.rien_ne_va_plus(coup=replay, by=game.capo)
    for card in PUNTA_WINS:
        services.card_deal(coup=replay, by=game.capo, card=card)
    replay.refresh_from_db()
    if replay.state == "dealing":
        services.punta_declare(coup=replay, by=game.capo, draws=False)
        replay.refresh_from_db()
    if replay.state == "dealing":
        services.banker_decide(coup=replay, by=game.capo, draws=False)
        replay.refresh_from_db()
    assert replay.winner == "punta" and replay.covered == 300_00
    assert_balanced(replay)
    assert not Posting.objects.filter(coup=replay, patron=game.seat(4)).exists()


def test_chemmy_fi_a_carried_bet_is_changed_by_a_new_bet(make_game):
    game = make_game("chemmy-fi")
    replay = _tie_then_replay(game)
    services.bet_place(coup=replay, by=game.capo, patron=game.seat(2), amount=500_00)
    got = list(replay.bets.order_by("order").values_list("order", "patron_id", "amount", "carried_from"))
    # The changed bet keeps its place in the betting order.
    assert got == [(1, game.seat(2).pk, 500_00, None), (2, game.seat(4).pk, 200_00, got[1][3])]
    actions = list(AuditEvent.objects.order_by("seq").values_list("action", flat=True))
    assert actions[-2:] == ["bet.withdrawn", "bet.placed"]


def test_chemmy_fi_a_change_over_the_bank_writes_nothing(make_game, refused):
    game = make_game("chemmy-fi")
    replay = _tie_then_replay(game)
    refused("bet_over_bank", services.bet_place, coup=replay, by=game.capo, patron=game.seat(2), amount=900_00)


def test_chemmy_fi_a_one_shot_replay_names_the_same_bettors(make_game):
    game = make_game("chemmy-fi")
    services.coup_record(
        session=game.session, by=game.capo, cards=TIE, punta_draws=False,
        bets=[{"patron": game.seat(2), "amount": 300_00}],
    )  # fmt: skip
    replay = services.coup_record(
        session=game.session, by=game.capo, cards=PUNTA_WINS, punta_draws=False,
        bets=[{"patron": game.seat(2), "amount": 100_00}, {"patron": game.seat(3), "amount": 50_00}],
    )  # fmt: skip
    assert replay.winner == "punta" and replay.covered == 150_00
    assert_balanced(replay)


@pytest.mark.parametrize("profile", ["classic"])
def test_elsewhere_a_carried_bet_stands(make_game, refused, profile):
    game = make_game(profile)
    replay = _tie_then_replay(game)
    refused("bet_not_withdrawable", services.bet_withdraw, coup=replay, by=game.capo, patron=game.seat(2))
    refused("bet_already_placed", services.bet_place, coup=replay, by=game.capo, patron=game.seat(2), amount=10_00)


def test_a_bet_made_at_the_coup_stands_in_chemmy_fi_too(make_game, refused):
    game = make_game("chemmy-fi")
    replay = _tie_then_replay(game)
    services.bet_place(coup=replay, by=game.capo, patron=game.seat(5), amount=10_00)
    refused("bet_not_withdrawable", services.bet_withdraw, coup=replay, by=game.capo, patron=game.seat(5))
    refused("bet_already_placed", services.bet_place, coup=replay, by=game.capo, patron=game.seat(5), amount=20_00)
    refused("no_bet", services.bet_withdraw, coup=replay, by=game.capo, patron=game.seat(6))
    services.rien_ne_va_plus(coup=replay, by=game.capo)
    refused("bet_after_rien_ne_va_plus", services.bet_withdraw, coup=replay, by=game.capo, patron=game.seat(2))
    assert Bet.objects.filter(coup=replay).count() == 3


def test_chemmy_fi_a_carried_banco_is_withdrawn_or_turned_into_a_bet(make_game, refused):
    game = make_game("chemmy-fi")
    caller = game.seat(3)
    services.coup_record(session=game.session, by=game.capo, cards=TIE, punta_draws=False, banco=caller)
    replay = services.coup_open(session=game.session, by=game.capo)
    assert [(c.patron_id, c.carried) for c in replay.banco_calls.all()] == [(caller.pk, True)]
    # While his banco stands, nobody else bets; he may take it back.
    refused("banco_called", services.bet_place, coup=replay, by=game.capo, patron=game.seat(4), amount=10_00)
    services.bet_withdraw(coup=replay, by=game.capo, patron=caller)
    assert not replay.banco_calls.exists()
    payload = AuditEvent.objects.filter(action="bet.withdrawn").get().payload
    assert (payload["kind"], payload["amount"]) == ("banco", replay.bank_amount)
    services.bet_place(coup=replay, by=game.capo, patron=game.seat(4), amount=10_00)

    # The next tie carries a banco again; this time the caller changes it into a bet.
    game2 = make_game("chemmy-fi")
    services.coup_record(session=game2.session, by=game2.capo, cards=TIE, punta_draws=False, banco=game2.seat(3))
    replay2 = services.coup_open(session=game2.session, by=game2.capo)
    services.bet_place(coup=replay2, by=game2.capo, patron=game2.seat(3), amount=40_00)
    assert not replay2.banco_calls.exists()
    assert list(replay2.bets.values_list("patron_id", "amount")) == [(game2.seat(3).pk, 40_00)]


def test_classic_a_carried_banco_stands(make_game, refused):
    game = make_game("classic")
    services.coup_record(session=game.session, by=game.capo, cards=TIE, punta_draws=False, banco=game.seat(3))
    replay = services.coup_open(session=game.session, by=game.capo)
    refused("bet_not_withdrawable", services.bet_withdraw, coup=replay, by=game.capo, patron=game.seat(3))
