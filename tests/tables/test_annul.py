"""Annulling a coup before its first card (tables.services.coup_annul): the bets go back,
no money moves, the bank is unchanged, the next coup opens, the session may close."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from audit.models import AuditEvent
from floor import services as floor_services
from tables import services
from tables.models import Bank, Coup, Posting

from .test_coups import BANKER_WINS, PUNTA_WINS, TIE, assert_balanced, postings

pytestmark = pytest.mark.django_db


def _betting(game, *bets):
    coup = services.coup_open(session=game.session, by=game.capo)
    for patron, amount in bets:
        services.bet_place(coup=coup, by=game.capo, patron=patron, amount=amount)
    return coup


def test_annul_while_betting_returns_the_bets_and_moves_no_money(game):
    coup = _betting(game, (game.seat(2), 300_00), (game.seat(3), 200_00))
    events = AuditEvent.objects.count()
    annulled = services.coup_annul(coup=coup, by=game.capo, reason="the shoe was dropped")
    assert annulled.state == Coup.State.ANNULLED
    assert annulled.annul_reason == "the shoe was dropped" and annulled.annulled_by_id == game.capo.pk
    assert annulled.annulled_at is not None and annulled.cards == [] and annulled.winner == ""
    assert not Posting.objects.filter(session=game.session).exists()
    bank = Bank.objects.get(pk=game.bank.pk)
    assert (bank.status, bank.amount, bank.coups_completed) == ("active", 1000_00, 0)
    assert coup.bets.count() == 2  # kept, for the record
    event = AuditEvent.objects.get(action="coup.annulled")
    assert AuditEvent.objects.count() == events + 1
    assert event.payload["was"] == "betting" and event.payload["reason"] == "the shoe was dropped"
    assert event.payload["bets_returned"] == [
        {"patron": game.seat(2).pk, "kind": "individual", "amount": 300_00},
        {"patron": game.seat(3).pk, "kind": "individual", "amount": 200_00},
    ]


def test_after_an_annulled_coup_the_next_opens_and_plays_on_the_same_bank(game):
    coup = _betting(game, (game.seat(2), 300_00))
    services.coup_annul(coup=coup, by=game.capo, reason="dispute")
    nxt = services.coup_record(
        session=game.session, by=game.capo, cards=BANKER_WINS, punta_draws=True,
        bets=[{"patron": game.seat(2), "amount": 400_00}],
    )  # fmt: skip
    assert nxt.number == coup.number + 1 and nxt.bank_amount == 1000_00
    assert nxt.winner == "banker" and nxt.cagnotte == 20_00
    assert_balanced(nxt)
    assert postings(nxt) == {game.seat(2).pk: -400_00, game.seat(1).pk: 380_00, None: 20_00}
    assert Bank.objects.get(pk=game.bank.pk).coups_completed == 1


def test_annul_after_rien_ne_va_plus_before_the_cards(game):
    coup = _betting(game, (game.seat(4), 100_00))
    services.rien_ne_va_plus(coup=coup, by=game.capo)
    annulled = services.coup_annul(coup=coup, by=game.capo, reason="misdeal announced")
    assert annulled.state == Coup.State.ANNULLED
    assert AuditEvent.objects.get(action="coup.annulled").payload["was"] == "closed"


def test_once_a_card_is_out_the_capo_partita_does_not_annul(game, refused):
    coup = _betting(game, (game.seat(4), 100_00))
    services.rien_ne_va_plus(coup=coup, by=game.capo)
    services.card_deal(coup=coup, by=game.capo, card="KH")
    err = refused("not_commissario", services.coup_annul, coup=coup, by=game.capo, reason="too late")
    assert err.status_code == 403 and err.details["state"] == "dealing"


def test_no_annul_of_a_settled_or_annulled_coup(game, refused):
    done = services.coup_record(  # a tie: the same banker, the same bank
        session=game.session, by=game.capo, cards=TIE, punta_draws=False,
        bets=[{"patron": game.seat(2), "amount": 100_00}],
    )  # fmt: skip
    refused("coup_not_annullable", services.coup_annul, coup=done, by=game.capo, reason="x")
    err = refused("coup_not_annullable", services.coup_annul, coup=done, by=game.commissario, reason="x")
    assert err.status_code == 409 and err.details["state"] == "settled"
    coup = _betting(game)
    services.coup_annul(coup=coup, by=game.capo, reason="x")
    refused("coup_annulled", services.coup_annul, coup=coup, by=game.capo, reason="again")


@pytest.mark.parametrize("reason", ["", "   ", None])
def test_annul_needs_a_reason(game, refused, reason):
    coup = _betting(game)
    refused("reason_required", services.coup_annul, coup=coup, by=game.capo, reason=reason)


def test_annul_reason_has_a_bound(game, refused):
    coup = _betting(game)
    refused("text_too_long", services.coup_annul, coup=coup, by=game.capo, reason="x" * 201)


def test_only_the_session_capo_annuls(game, refused, commissario):
    coup = _betting(game)
    refused("not_session_capo_partita", services.coup_annul, coup=coup, by=commissario, reason="x")


def test_an_interrupted_session_annuls_its_coup_then_closes(game, refused):
    coup = _betting(game, (game.seat(2), 100_00))
    floor_services.table_session_interrupt(session=game.session, by=game.commissario, reason="fire alarm")
    refused("coup_in_progress", floor_services.table_session_close, session=game.session, by=game.commissario)
    services.coup_annul(coup=coup, by=game.capo, reason="fire alarm")
    floor_services.table_session_close(session=game.session, by=game.commissario)
    game.refresh()
    assert game.session.status == "closed"
    assert (game.bank.status, game.bank.end_reason) == ("ended", "session_closed")
    assert not Posting.objects.filter(session=game.session).exists()


def test_banco_suivi_passes_over_an_annulled_coup(game):
    loser = game.seat(5)
    first = services.coup_record(
        session=game.session, by=game.capo, cards=BANKER_WINS, punta_draws=True, banco=loser
    )
    assert first.winner == "banker" and first.punta_id == loser.pk
    coup = services.coup_open(session=game.session, by=game.capo)
    services.banco_call(coup=coup, by=game.capo, patron=game.seat(3))
    services.coup_annul(coup=coup, by=game.capo, reason="banker asked for a new shoe")
    # The coup that replaces it: seat 3 is nearer in turn, the loser still has priority.
    replay = services.coup_record(
        session=game.session, by=game.capo, cards=PUNTA_WINS, punta_draws=False, banco=[game.seat(3), loser]
    )
    assert replay.punta_id == loser.pk


def test_a_withdrawal_still_needs_a_completed_coup(game, refused):
    coup = _betting(game, (game.seat(2), 100_00))
    services.coup_annul(coup=coup, by=game.capo, reason="x")
    refused("withdraw_too_early", services.bank_withdraw, bank=game.bank, by=game.capo)


def test_the_database_refuses_an_annulled_coup_with_cards(game):
    coup = _betting(game)
    with pytest.raises(IntegrityError), transaction.atomic():
        Coup.objects.filter(pk=coup.pk).update(state="annulled", cards=["KH"])


@pytest.mark.parametrize(
    "step, kwargs",
    [
        ("bet_place", {"amount": 100_00}),
        ("banco_call", {}),
        ("rien_ne_va_plus", None),
        ("card_deal", {"card": "KH"}),
        ("punta_declare", {"draws": True}),
        ("banker_decide", {"draws": False}),
        ("reconstruction_card", {"card": "KH"}),
        ("reconstruction_decide", {"side": "banker", "draws": True}),
    ],
)
def test_no_step_plays_on_an_annulled_coup(game, refused, step, kwargs):
    coup = _betting(game)
    services.coup_annul(coup=coup, by=game.capo, reason="x")
    if kwargs is not None and step in ("bet_place", "banco_call"):
        kwargs = {**kwargs, "patron": game.seat(2)}
    refused("coup_annulled", getattr(services, step), coup=coup, by=game.capo, **(kwargs or {}))
