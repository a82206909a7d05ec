"""A banker barred from holding the cards (faux tirage, RULES.md §4, art. 60) deals no
further coup: his bank ends by a withdrawal, even before a completed coup, and passes."""

from __future__ import annotations

import pytest

from tables import selectors, services
from tables.models import Bank, Succession

from .test_coups import BANKER_WINS

pytestmark = pytest.mark.django_db


def test_a_barred_banker_opens_no_coup_and_withdraws(game, refused):
    banker = game.seat(1)
    services.faux_tirage_bar(session=game.session, by=game.capo, patron=banker, reason="drew on 6 against the rule")
    state = selectors.session_game_state(game.session)
    assert not state["can_open_coup"] and state["cannot_open_because"] == ["banker_barred"]
    refused("banker_barred", services.coup_open, session=game.session, by=game.capo)
    refused("banker_barred", services.coup_record, session=game.session, by=game.capo, cards=BANKER_WINS,
            punta_draws=True, bets=[{"patron": game.seat(2), "amount": 100_00}])  # fmt: skip
    bank = services.bank_withdraw(bank=game.bank, by=game.capo)  # no completed coup: allowed, he is barred
    assert (bank.status, bank.end_reason, bank.coups_completed) == ("ended", "withdrawn", 0)
    succ = Succession.objects.get(previous_bank=bank)
    assert succ.outgoing_banker_id == banker.pk
    assert banker.pk not in set(succ.offers.values_list("patron_id", flat=True))


def test_barred_during_his_bank_the_banker_finishes_the_coup_in_play(game):
    banker = game.seat(1)
    coup = services.coup_open(session=game.session, by=game.capo)
    services.bet_place(coup=coup, by=game.capo, patron=game.seat(2), amount=100_00)
    services.faux_tirage_bar(session=game.session, by=game.capo, patron=banker, reason="faux tirage")
    services.rien_ne_va_plus(coup=coup, by=game.capo)
    for card in BANKER_WINS[:4]:
        services.card_deal(coup=coup, by=game.capo, card=card)
    services.punta_declare(coup=coup, by=game.capo, draws=True)
    services.card_deal(coup=coup, by=game.capo, card=BANKER_WINS[4])
    services.banker_decide(coup=coup, by=game.capo, draws=False)
    coup.refresh_from_db()
    assert coup.state == "settled" and coup.winner == "banker"  # the coup in play is played out
    services.bank_withdraw(bank=game.bank, by=game.capo)
    assert Bank.objects.get(pk=game.bank.pk).end_reason == "withdrawn"


def test_a_banco_caller_barred_since_he_called_does_not_win_it(game, refused):
    """The banco goes to the first eligible caller; a barred caller's call may be taken back."""
    coup = services.coup_open(session=game.session, by=game.capo)
    services.banco_call(coup=coup, by=game.capo, patron=game.seat(2))  # first in turn from seat 1
    services.banco_call(coup=coup, by=game.capo, patron=game.seat(3))
    services.faux_tirage_bar(session=game.session, by=game.capo, patron=game.seat(2), reason="faux tirage")
    services.rien_ne_va_plus(coup=coup, by=game.capo)
    coup.refresh_from_db()
    assert coup.punta_id == game.seat(3).pk and coup.banco_solo
    assert dict(coup.banco_calls.values_list("patron_id", "won")) == {game.seat(2).pk: False, game.seat(3).pk: True}


def test_a_lone_barred_caller_is_taken_back_then_the_coup_goes_on(game, refused):
    coup = services.coup_open(session=game.session, by=game.capo)
    services.banco_call(coup=coup, by=game.capo, patron=game.seat(2))
    services.faux_tirage_bar(session=game.session, by=game.capo, patron=game.seat(2), reason="faux tirage")
    refused("no_eligible_punta", services.rien_ne_va_plus, coup=coup, by=game.capo)
    services.bet_withdraw(coup=coup, by=game.capo, patron=game.seat(2))
    services.bet_place(coup=coup, by=game.capo, patron=game.seat(3), amount=100_00)
    services.rien_ne_va_plus(coup=coup, by=game.capo)
    coup.refresh_from_db()
    assert coup.punta_id == game.seat(3).pk and not coup.banco_calls.exists()
