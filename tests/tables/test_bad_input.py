"""Every refusal has its stable code and writes nothing: no row, no audit event."""

from __future__ import annotations

import pytest

from floor import services as floor_services
from tables import services
from tables.models import Bank, Coup
from tests.factories import PatronFactory

PUNTA_WINS = ["7H", "6S", "KH", "KD"]


@pytest.fixture
def betting(game):
    return services.coup_open(session=game.session, by=game.capo)


@pytest.fixture
def closed(game, betting):
    services.bet_place(coup=betting, by=game.capo, patron=game.seat(2), amount=100_00)
    services.rien_ne_va_plus(coup=betting, by=game.capo)
    return betting


def deal(game, coup, cards):
    for card in cards:
        services.card_deal(coup=coup, by=game.capo, card=card)


def test_bet_after_rien_ne_va_plus(game, closed, refused):
    refused(
        "bet_after_rien_ne_va_plus",
        services.bet_place,
        coup=closed,
        by=game.capo,
        patron=game.seat(3),
        amount=10_00,
    )
    refused("bet_after_rien_ne_va_plus", services.banco_call, coup=closed, by=game.capo, patron=game.seat(3))
    refused("coup_not_betting", services.rien_ne_va_plus, coup=closed, by=game.capo)


def test_bet_over_the_bank_says_what_is_open(game, betting, refused):
    services.bet_place(coup=betting, by=game.capo, patron=game.seat(2), amount=900_00)
    err = refused(
        "bet_over_bank", services.bet_place, coup=betting, by=game.capo, patron=game.seat(3), amount=100_01
    )
    assert err.details == {"amount": 100_01, "bank": 1000_00, "covered": 900_00, "open": 100_00}


@pytest.mark.parametrize("amount", [0, -5, None, 1.5, True])
def test_bad_amount(game, betting, refused, amount):
    refused("bad_amount", services.bet_place, coup=betting, by=game.capo, patron=game.seat(2), amount=amount)


def test_avec_la_table_amount_and_kind(game, betting, refused):
    refused(
        "bad_amount",
        services.bet_place,
        coup=betting,
        by=game.capo,
        patron=game.seat(2),
        amount=10_00,
        kind="avec_la_table",
    )
    refused(
        "bad_kind",
        services.bet_place,
        coup=betting,
        by=game.capo,
        patron=game.seat(2),
        amount=10_00,
        kind="banco",
    )
    services.bet_place(coup=betting, by=game.capo, patron=game.seat(2), kind="avec_la_table")
    refused(
        "avec_la_table_taken",
        services.bet_place,
        coup=betting,
        by=game.capo,
        patron=game.seat(3),
        kind="avec_la_table",
    )
    refused(
        "bet_already_placed",
        services.bet_place,
        coup=betting,
        by=game.capo,
        patron=game.seat(2),
        amount=10_00,
    )


def test_banker_cannot_bet_and_patron_not_at_table(game, betting, refused):
    refused(
        "banker_cannot_bet", services.bet_place, coup=betting, by=game.capo, patron=game.banker, amount=1_00
    )
    refused("banker_cannot_bet", services.banco_call, coup=betting, by=game.capo, patron=game.banker)
    stranger = PatronFactory()
    refused(
        "patron_not_at_table", services.bet_place, coup=betting, by=game.capo, patron=stranger, amount=1_00
    )
    refused(
        "patron_not_at_table",
        services.regola_mark,
        session=game.session,
        by=game.capo,
        patron=stranger,
        declared=True,
    )


def test_banco_and_bets_exclude_each_other(game, betting, refused):
    services.banco_call(coup=betting, by=game.capo, patron=game.seat(4))
    refused("banco_called", services.bet_place, coup=betting, by=game.capo, patron=game.seat(2), amount=1_00)
    refused("banco_already_called", services.banco_call, coup=betting, by=game.capo, patron=game.seat(4))


def test_bets_then_banco_refused(game, betting, refused):
    services.bet_place(coup=betting, by=game.capo, patron=game.seat(2), amount=1_00)
    refused("bets_already_placed", services.banco_call, coup=betting, by=game.capo, patron=game.seat(4))


def test_barred_patron_bets_but_never_holds_the_cards(game, betting, refused):
    barred = game.seat(2)
    services.faux_tirage_bar(session=game.session, by=game.capo, patron=barred, reason="faux tirage")
    refused(
        "patron_already_barred",
        services.faux_tirage_bar,
        session=game.session,
        by=game.capo,
        patron=barred,
        reason="again",
    )
    refused("patron_barred", services.banco_call, coup=betting, by=game.capo, patron=barred)
    refused(
        "patron_barred", services.bet_place, coup=betting, by=game.capo, patron=barred, kind="avec_la_table"
    )
    services.bet_place(coup=betting, by=game.capo, patron=barred, amount=100_00)
    refused("no_eligible_punta", services.rien_ne_va_plus, coup=betting, by=game.capo)


def test_no_bets(game, betting, refused):
    refused("no_bets", services.rien_ne_va_plus, coup=betting, by=game.capo)


def test_cards_before_rien_ne_va_plus(game, betting, refused):
    refused("betting_open", services.card_deal, coup=betting, by=game.capo, card="AS")


def test_declaration_required_and_bad_cards(game, closed, refused):
    refused("bad_card", services.card_deal, coup=closed, by=game.capo, card="1Z")
    refused("bad_card", services.card_deal, coup=closed, by=game.capo, card="")
    refused("cards_missing", services.punta_declare, coup=closed, by=game.capo, draws=True)
    deal(game, closed, ["2H", "AS", "3C", "2D"])
    refused("declaration_required", services.card_deal, coup=closed, by=game.capo, card="2S")
    refused("decision_not_expected", services.banker_decide, coup=closed, by=game.capo, draws=False)
    refused("bad_decision", services.punta_declare, coup=closed, by=game.capo, draws="yes")
    services.punta_declare(coup=closed, by=game.capo, draws=True)
    refused("declaration_not_expected", services.punta_declare, coup=closed, by=game.capo, draws=True)
    # the punta's third card, sent from a page that had seen three cards, not four
    error = refused("coup_moved_on", services.card_deal, coup=closed, by=game.capo, card="2S", expect_cards=3)
    assert error.status_code == 409 and error.details == {"expected_cards": 3, "cards": 4}
    services.card_deal(coup=closed, by=game.capo, card="2S", expect_cards=4)


def test_fourth_card_to_a_side(game, closed, refused):
    deal(game, closed, ["2H", "AS", "3C", "2D"])
    services.punta_declare(coup=closed, by=game.capo, draws=True)
    deal(game, closed, ["4S", "KD"])  # the banker's card is his decision to draw
    closed.refresh_from_db()
    assert closed.state == "settled" and closed.banker_draws is True
    refused("too_many_cards", services.card_deal, coup=closed, by=game.capo, card="5S")


def test_card_after_natural(game, closed, refused):
    deal(game, closed, ["9H", "KS", "KC", "5D"])
    refused("card_after_natural", services.card_deal, coup=closed, by=game.capo, card="2S")
    refused("card_after_natural", services.punta_declare, coup=closed, by=game.capo, draws=True)


def test_card_the_shoe_cannot_hold(game, closed, refused):
    for _ in range(6):
        services.card_void(session=game.session, by=game.capo, card="QH", reason="dropped")
    refused("card_exhausted", services.card_deal, coup=closed, by=game.capo, card="QH")
    refused("card_exhausted", services.card_void, session=game.session, by=game.capo, card="qh", reason="x")
    refused("reason_required", services.card_void, session=game.session, by=game.capo, card="2H", reason=" ")


def test_reconstruction_refusals(game, closed, refused):
    refused("reconstruction_not_pending", services.reconstruction_card, coup=closed, by=game.capo, card="2S")
    refused(
        "reconstruction_not_pending",
        services.reconstruction_decide,
        coup=closed,
        by=game.capo,
        side="banker",
        draws=True,
    )


def test_pending_coup_refuses_cards_and_wrong_decisions(game, refused):
    services.regola_mark(session=game.session, by=game.capo, patron=game.banker, declared=True)
    coup = services.coup_record(
        session=game.session,
        by=game.capo,
        cards=["2H", "AS", "3C", "2D", "2S"],
        punta_draws=True,
        bets=[{"patron": game.seat(2), "amount": 100_00}],
    )
    assert coup.state == "pending"
    refused("coup_pending", services.card_deal, coup=coup, by=game.capo, card="6D")
    refused(
        "card_required", services.reconstruction_decide, coup=coup, by=game.capo, side="banker", draws=True
    )
    refused("bad_side", services.reconstruction_decide, coup=coup, by=game.capo, side="house", draws=True)
    # a reconstruction card from a page that had seen another count of them
    refused("coup_moved_on", services.reconstruction_card, coup=coup, by=game.capo, card="6H", expect_cards=1)
    for _ in range(6):
        services.card_void(session=game.session, by=game.capo, card="6D", reason="dropped")
    refused("card_exhausted", services.reconstruction_card, coup=coup, by=game.capo, card="6D")
    refused("coup_in_progress", services.coup_open, session=game.session, by=game.capo)
    refused("coup_in_progress", services.shoe_load, session=game.session, by=game.capo, number="S-2")


def test_coup_open_refusals(game, betting, refused):
    refused("coup_in_progress", services.coup_open, session=game.session, by=game.capo)


def test_coup_on_interrupted_or_closed_session(game, refused):
    floor_services.table_session_interrupt(session=game.session, by=game.commissario, reason="power cut")
    refused("session_interrupted", services.coup_open, session=game.session, by=game.capo)
    refused("session_interrupted", services.shoe_load, session=game.session, by=game.capo, number="S-9")
    floor_services.table_session_close(session=game.session, by=game.commissario)
    refused("session_closed", services.coup_open, session=game.session, by=game.capo)
    refused(
        "session_closed",
        services.regola_mark,
        session=game.session,
        by=game.capo,
        patron=game.seat(2),
        declared=True,
    )
    # Closing the session ended the bank through the tables' close hook (floor/hooks.py);
    # ending it again finds nothing to end.
    bank = Bank.objects.get(session=game.session)
    assert (bank.status, bank.end_reason) == ("ended", "session_closed")
    assert services.bank_end_for_session_close(session=game.session, by=game.commissario) is None


def test_only_the_assigned_capo_partita(game, refused):
    refused("not_session_capo_partita", services.coup_open, session=game.session, by=game.commissario)


def test_bank_opening_refusals(make_game, refused):
    game = make_game("venezia", bank=None, maximum=5000_00)
    s, by = game.session, game.capo
    refused("bank_below_minimum", services.bank_open, session=s, by=by, patron=game.seat(1), amount=99_99)
    refused("bank_above_maximum", services.bank_open, session=s, by=by, patron=game.seat(1), amount=5000_01)
    refused("not_first_banker_seat", services.bank_open, session=s, by=by, patron=game.seat(2), amount=100_00)
    refused("no_active_bank", services.coup_open, session=s, by=by)
    services.bank_open(session=s, by=by, patron=game.seat(1), amount=100_00)
    refused("bank_already_active", services.bank_open, session=s, by=by, patron=game.seat(2), amount=100_00)


def test_not_enough_players(make_game, refused):
    game = make_game("venezia", seated=5, bank=None)
    refused(
        "not_enough_players",
        services.bank_open,
        session=game.session,
        by=game.capo,
        patron=game.seat(1),
        amount=100_00,
    )


def test_no_shoe_and_shoe_numbers(make_game, refused):
    game = make_game("venezia", shoe=False)
    refused("no_shoe", services.coup_open, session=game.session, by=game.capo)
    refused("shoe_number_mismatch", services.shoe_load, session=game.session, by=game.capo, number="OTHER")
    refused("bad_shoe", services.shoe_load, session=game.session, by=game.capo, decks=2)
    refused("no_burn", services.shoe_load, session=game.session, by=game.capo, burn=["AS"])
    shoe = services.shoe_load(session=game.session, by=game.capo)
    assert shoe.number == game.session.shoe_number
    refused("shoe_number_required", services.shoe_load, session=game.session, by=game.capo)


def test_regola_not_allowed(make_game, refused):
    game = make_game("classic")
    refused(
        "regola_not_allowed",
        services.regola_mark,
        session=game.session,
        by=game.capo,
        patron=game.seat(2),
        declared=True,
    )


def test_one_shot_writes_nothing_when_a_late_step_fails(game, refused):
    refused(
        "too_many_cards",
        services.coup_record,
        session=game.session,
        by=game.capo,
        cards=[*PUNTA_WINS, "2S", "3S"],
        punta_draws=False,
        banker_draws=False,
        bets=[{"patron": game.seat(2), "amount": 100_00}],
    )
    refused(
        "cards_missing",
        services.coup_record,
        session=game.session,
        by=game.capo,
        cards=PUNTA_WINS[:3],
        bets=[{"patron": game.seat(2), "amount": 100_00}],
    )
    refused(
        "declaration_required",
        services.coup_record,
        session=game.session,
        by=game.capo,
        cards=PUNTA_WINS,
        bets=[{"patron": game.seat(2), "amount": 100_00}],
    )
    refused(
        "bet_over_bank",
        services.coup_record,
        session=game.session,
        by=game.capo,
        cards=PUNTA_WINS,
        punta_draws=False,
        bets=[{"patron": game.seat(2), "amount": 600_00}, {"patron": game.seat(3), "amount": 600_00}],
    )
    refused(
        "unused_next_cards",
        services.coup_record,
        session=game.session,
        by=game.capo,
        cards=PUNTA_WINS,
        punta_draws=False,
        next_cards=["2S"],
        bets=[{"patron": game.seat(2), "amount": 100_00}],
    )
    assert not Coup.objects.filter(session=game.session).exists()
