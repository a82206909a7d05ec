"""domestic: the bank continues at least at 2S after a win (S after a tie) and the banker may
put up more (RULES.md §4); elsewhere the continuation is fixed."""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from tables import services
from tables.models import Bank, Posting

from .test_coups import BANKER_WINS, assert_balanced

pytestmark = pytest.mark.django_db


def _win(game, amount=300_00):
    return services.coup_record(session=game.session, by=game.capo, cards=BANKER_WINS, punta_draws=True,
                                bets=[{"patron": game.seat(2), "amount": amount}])  # fmt: skip


def test_domestic_the_banker_puts_up_more_than_2s(make_game):
    game = make_game("domestic", maximum=5000_00)
    _win(game)
    bank = Bank.objects.get(pk=game.bank.pk)
    assert bank.amount == 600_00  # 2S, the reserve B - S stays his
    raised = services.bank_raise(bank=bank, by=game.capo, amount=900_00)
    assert (raised.amount, raised.raised) == (900_00, 300_00)
    event = AuditEvent.objects.filter(action="bank.raised").get()
    assert (event.payload["old"], event.payload["new"], event.payload["added"]) == (600_00, 900_00, 300_00)
    coup = _win(game, 900_00)  # the raised bank is B for the next coup
    assert coup.bank_amount == 900_00 and coup.covered == 900_00
    assert_balanced(coup)
    assert not Posting.objects.filter(coup__isnull=True).exists()  # a raise moves no money between players


def test_domestic_raise_refusals_write_nothing(make_game, refused):
    game = make_game("domestic", maximum=1000_00)
    refused("bank_raise_too_early", services.bank_raise, bank=game.bank, by=game.capo, amount=1000_00)
    _win(game)
    bank = Bank.objects.get(pk=game.bank.pk)
    refused("bank_raise_not_higher", services.bank_raise, bank=bank, by=game.capo, amount=bank.amount)
    refused("bank_raise_not_higher", services.bank_raise, bank=bank, by=game.capo, amount=True)
    refused("bank_above_maximum", services.bank_raise, bank=bank, by=game.capo, amount=1000_01)
    coup = services.coup_open(session=game.session, by=game.capo)
    refused("coup_in_progress", services.bank_raise, bank=bank, by=game.capo, amount=700_00)
    services.coup_annul(coup=coup, by=game.capo, reason="x")
    services.bank_raise(bank=bank, by=game.capo, amount=700_00)


@pytest.mark.parametrize("profile", ["venezia", "classic", "chemmy-fi"])
def test_elsewhere_the_continuation_is_fixed(make_game, refused, profile):
    game = make_game(profile)
    _win(game)
    refused("bank_raise_not_in_profile", services.bank_raise, bank=game.bank, by=game.capo, amount=5000_00)


def test_the_api_raises_the_bank(make_game):
    from tests.tables.api.conftest import Tablet

    game = make_game("domestic")
    _win(game)
    tablet = Tablet(game.capo)
    answer = tablet.ok(tablet.post(f"/api/banks/{game.bank.pk}/raise/", {"amount": 800_00}))
    assert answer["bank"]["amount"] == 800_00 and answer["game"]["bank"]["amount"] == 800_00
    refused = tablet.post(f"/api/banks/{game.bank.pk}/raise/", {"amount": 700_00})
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "bank_raise_not_higher"


def test_a_barred_banker_raises_nothing(make_game, refused):
    game = make_game("domestic")
    _win(game)
    services.faux_tirage_bar(session=game.session, by=game.capo, patron=game.seat(1), reason="faux tirage")
    refused("banker_barred", services.bank_raise, bank=game.bank, by=game.capo, amount=900_00)
