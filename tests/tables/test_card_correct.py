"""A card tapped wrongly on the tablet (tables.services.card_entry_correct): the coup's last
card, while it is the coup's latest step, is recorded again as the right card, at the same
shoe position, and the coup goes on as if it had been entered right."""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from audit.reports.ledger import session_as_played
from tables import services
from tables.engine import live
from tables.models import Coup, Shoe, ShoeCard

from .test_books_as_played import head
from .test_coups import assert_balanced, postings

pytestmark = pytest.mark.django_db


def _dealing(game, cards, *, amount=100_00):
    by = game.capo
    coup = services.coup_open(session=game.session, by=by)
    services.bet_place(coup=coup, by=by, patron=game.seat(2), amount=amount)
    services.rien_ne_va_plus(coup=coup, by=by)
    for card in cards:
        services.card_deal(coup=coup, by=by, card=card)
    coup.refresh_from_db()
    return coup


def _last_event(game) -> AuditEvent:
    return AuditEvent.objects.filter(stream__name=game.session.audit_stream).latest("seq")


def test_the_last_card_is_recorded_again_at_the_same_shoe_position(game):
    coup = _dealing(game, ["7H", "7D"])
    row = ShoeCard.objects.get(coup=coup, code="7D")
    cards = ShoeCard.objects.count()
    corrected = services.card_entry_correct(coup=coup, by=game.capo, was="7D", card="7h")
    assert corrected.cards == ["7H", "7H"] and corrected.dealt_side == "banker"
    coup.refresh_from_db()
    assert coup.cards == ["7H", "7H"] and coup.state == Coup.State.DEALING
    # The same physical card: the same row, at its position, with the value it has.
    again = ShoeCard.objects.get(pk=row.pk)
    assert (again.code, again.position, again.use, again.side) == ("7H", row.position, "dealt", "banker")
    assert ShoeCard.objects.count() == cards
    state = Shoe.objects.get(pk=game.shoe.pk).state
    assert state["drawn"][row.position - 1] == "7H" and state["drawn"].count("7D") == 0
    event = _last_event(game)
    assert event.action == "card.entry_corrected"
    assert {k: event.payload[k] for k in ("coup", "shoe", "position", "side", "was", "card")} == {
        "coup": coup.pk, "shoe": game.shoe.pk, "position": row.position, "side": "banker", "was": "7D", "card": "7H",
    }  # fmt: skip
    assert event.payload["next"] == {"need": "card", "side": "punta", "natural": False}
    # The coup goes on from the right card.
    services.card_deal(coup=coup, by=game.capo, card="KC")
    coup.refresh_from_db()
    assert coup.cards == ["7H", "7H", "KC"]


def test_the_punta_s_third_card_corrected_changes_the_banker_s_hint(game):
    coup = _dealing(game, ["KH", "5S", "3C", "2D"])
    services.punta_declare(coup=coup, by=game.capo, draws=True)
    services.card_deal(coup=coup, by=game.capo, card="2S")
    services.card_entry_correct(coup=coup, by=game.capo, was="2S", card="9S")
    coup.refresh_from_db()
    assert coup.cards == ["KH", "5S", "3C", "2D", "9S"]
    assert (coup.punta_draws, coup.banker_draws) == (True, None)
    assert live.next_step(coup.cards, punta_draws=True).need == live.BANKER_DECISION
    # The banker stands on 7: the coup is settled on the corrected cards (punta 2 against 7).
    services.banker_decide(coup=coup, by=game.capo, draws=False)
    coup.refresh_from_db()
    assert coup.state == Coup.State.SETTLED and coup.winner == "banker"
    assert coup.as_played["punta"] == {"cards": ["KH", "3C", "9S"], "total": 2}
    assert_balanced(coup)


def test_only_the_last_card_and_named_as_entered(game, refused):
    coup = _dealing(game, ["7H", "7D", "KC"])
    error = refused("card_not_last", services.card_entry_correct, coup=coup, by=game.capo, was="7D", card="7S")
    assert error.status_code == 409 and error.details["last"] == "KC"
    error = refused("card_not_last", services.card_entry_correct, coup=coup, by=game.capo, was="QQ", card="7S")
    assert error.details["last"] == "KC"


def test_no_card_yet_is_not_a_last_card(game, refused):
    coup = _dealing(game, [])
    error = refused("card_not_last", services.card_entry_correct, coup=coup, by=game.capo, was="7D", card="7S")
    assert error.details["last"] is None


def test_a_declaration_after_the_card_makes_it_no_longer_correctable(game, refused):
    coup = _dealing(game, ["KH", "5S", "3C", "2D"])
    services.punta_declare(coup=coup, by=game.capo, draws=True)
    error = refused("card_not_latest", services.card_entry_correct, coup=coup, by=game.capo, was="2D", card="3D")
    assert error.status_code == 409 and error.details["card"] == "2D"
    # Nor the punta's third card once the banker decided to draw.
    services.card_deal(coup=coup, by=game.capo, card="2S")
    services.banker_decide(coup=coup, by=game.capo, draws=True)
    refused("card_not_latest", services.card_entry_correct, coup=coup, by=game.capo, was="2S", card="3S")


def test_a_settled_coup_s_cards_are_not_corrected(game, refused):
    coup = services.coup_record(session=game.session, by=game.capo, cards=["KH", "5S", "3C", "2D", "2S"],
                                punta_draws=True, bets=[{"patron": game.seat(2), "amount": 100_00}])  # fmt: skip
    assert coup.state == Coup.State.SETTLED
    error = refused("coup_settled", services.card_entry_correct, coup=coup, by=game.capo, was="2S", card="3S")
    assert error.status_code == 409


def test_an_annulled_coup_s_cards_are_not_corrected(game, refused):
    coup = _dealing(game, ["KH", "5S"])
    services.coup_annul(coup=coup, by=game.commissario, reason="a card fell from the sabot")
    refused("coup_annulled", services.card_entry_correct, coup=coup, by=game.capo, was="5S", card="6S")


def test_another_table_s_capo_partita_is_refused(game, make_game, refused):
    other = make_game("venezia")
    coup = _dealing(game, ["KH", "5S"])
    error = refused("not_session_capo_partita", services.card_entry_correct, coup=coup, by=other.capo,
                    was="5S", card="6S")  # fmt: skip
    assert error.status_code == 403
    refused("not_session_capo_partita", services.card_entry_correct, coup=coup, by=game.commissario,
            was="5S", card="6S")  # fmt: skip


def test_an_impossible_card_is_refused_with_the_dealing_codes_and_nothing_written(game, refused):
    coup = _dealing(game, ["KH", "5S"])
    for _ in range(6):  # every 9C of the six decks is out of the shoe
        services.card_void(session=game.session, by=game.capo, card="9C", reason="seen face up")
    state = Shoe.objects.get(pk=game.shoe.pk).state
    for code, card in (("card_exhausted", "9C"), ("bad_card", "ZZ"), ("bad_card", ""), ("card_unchanged", "5s")):
        error = refused(code, services.card_entry_correct, coup=coup, by=game.capo, was="5S", card=card)
        assert error.status_code == 400
    # The same refusals as dealing that card.
    for code, card in (("card_exhausted", "9C"), ("bad_card", "ZZ")):
        refused(code, services.card_deal, coup=coup, by=game.capo, card=card)
    assert Shoe.objects.get(pk=game.shoe.pk).state == state
    coup.refresh_from_db()
    assert coup.cards == ["KH", "5S"] and ShoeCard.objects.get(coup=coup, position=2).code == "5S"


def test_a_pending_coup_s_last_card_corrected_is_resolved_again_and_settles_on_it(game):
    """Punta alla Regola stood on 4; the banker drew a 9 (his third card, the last one): the
    reconstruction gives the punta that card and waits for the banker's decision. The card
    was a 3: resolved again on it, through the same steps as a card dealt."""
    s, by = game.session, game.capo
    services.regola_mark(session=s, by=by, patron=game.seat(2), declared=True)
    coup = _dealing(game, ["2H", "KS", "2C", "5D"])
    services.punta_declare(coup=coup, by=by, draws=False)
    services.card_deal(coup=coup, by=by, card="9D")
    coup.refresh_from_db()
    assert coup.state == Coup.State.PENDING and coup.conforming is False
    services.card_entry_correct(coup=coup, by=by, was="9D", card="3D")
    coup.refresh_from_db()
    assert coup.cards == ["2H", "KS", "2C", "5D", "3D"] and coup.state == Coup.State.PENDING
    assert coup.as_played["banker"]["cards"] == ["KS", "5D", "3D"]
    services.reconstruction_decide(coup=coup, by=by, side="banker", draws=False)
    coup.refresh_from_db()
    # The reconstruction: punta 2+2+3 = 7 against the banker's 5, standing: the punta wins.
    assert coup.state == Coup.State.SETTLED and coup.winner == "punta"
    assert coup.settled["punta"] == {"cards": ["2H", "2C", "3D"], "total": 7}
    assert_balanced(coup)
    assert postings(coup)[game.seat(2).pk] > 0
    # The books hold to the events: the card as corrected, the coup as played on it.
    assert session_as_played(s, head(s.audit_stream), None) == []
    last = ShoeCard.objects.filter(coup=coup).latest("position")
    ShoeCard.objects.filter(pk=last.pk).update(code="9D")  # as if edited in SQL
    [reason] = [r for r in session_as_played(s, head(s.audit_stream), None) if r["code"] == "cards_mismatch"]
    assert (reason["in_books"]["card"], reason["in_trail"]["card"]) == ("9D", "3D")

