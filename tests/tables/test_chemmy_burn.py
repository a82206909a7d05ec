"""Review: chemmy-fi burn. The coup in play when the face-up burned card is reached is
finished with the cards under it (RULES.md §1, seed 003)."""

from __future__ import annotations

import pytest

from tables import services
from tables.engine import ALL_CARDS, EngineError, Shoe, get_profile
from tables.models import Coup

# RULES.md §1: "Burn (profile `chemmy-fi`): after the shuffle 7 cards are taken off the top,
# the top one is turned face up and all 7 go under the pack; when that card is reached the
# current coup is finished and the shoe is reshuffled; the same banker continues."
# Seed 003 (chemmy-fi): "Kun tullaan pakassa olevaan käännettyyn korttiin, se pannaan syrjään
# käyttämättömänä. Kierros pelataan loppuun tavalliseen tapaan. Jäljellä olevat kuusi korttia
# riittävät siihen." (When the turned card is reached it is put aside unused. The round is
# played to the end as usual. The remaining six cards suffice for that.)


def _six_decks_without(*removed: str) -> list[str]:
    cards = [c for c in ALL_CARDS for _ in range(6)]
    for code in removed:
        cards.remove(code)
    return cards


def test_engine_chemmy_fi_finishes_the_coup_with_the_cards_under_the_face_up_one():
    shoe = Shoe.for_profile(get_profile("chemmy-fi"))
    shoe.burn(["5H", None, None, None, None, None, None])
    cards = _six_decks_without("5H")
    for code in cards[:303]:  # 305 cards above the burned ones: 2 left above them
        shoe.draw(code)
    assert not shoe.stop_card_reached
    # A coup starts with 2 cards above the face-up card.
    shoe.draw(cards[303])
    shoe.draw(cards[304])
    assert shoe.stop_card_reached  # the face-up burned card is reached: no further coup
    # ... but the current coup is finished, with the (up to six) cards under it.
    shoe.draw(cards[305])
    shoe.draw(cards[306])
    assert shoe.stop_card_reached and shoe.cards_left == 5


def test_engine_a_burned_card_recorded_at_the_burn_is_counted_once():
    shoe = Shoe(1, burn_cards=7, stop_card_from_end=7)
    shoe.burn(["AS", "KD", None, None, None, None, None])  # face up AS; KD recorded under it
    for card in [c for c in ALL_CARDS if c not in ("AS", "KD")][:45]:
        shoe.draw(card)
    assert shoe.times_out("KD") == 1
    with pytest.raises(EngineError) as err:
        shoe.draw("QD")  # the card under the face-up one was recorded as KD
    assert err.value.code == "burned_card_mismatch"
    assert shoe.draw("KD") == "KD" and shoe.times_out("KD") == 1  # not counted twice
    again = Shoe.from_dict(shoe.to_dict())
    assert again.times_out("KD") == 1 and again.cards_left == shoe.cards_left == 6


def test_service_chemmy_fi_coup_in_play_at_the_face_up_card_is_finished(make_game):
    game = make_game("chemmy-fi")
    by = game.capo
    cards = _six_decks_without()  # the burn was recorded unseen (None x 7)
    # Empty the shoe down to 2 cards above the burned ones (305 dealable - 303 voided).
    for code in cards[:303]:
        services.card_void(session=game.session, by=by, card=code, reason="review: emptying the shoe")
    game.refresh()
    assert game.shoe.stop_card_reached_at is None
    coup = services.coup_open(session=game.session, by=by)
    services.bet_place(coup=coup, by=by, patron=game.seat(2), amount=100_00)
    services.rien_ne_va_plus(coup=coup, by=by)
    left = cards[303:]  # the 9 cards not voided (kings); 7 of them are the burned ones
    services.card_deal(coup=coup, by=by, card=left[0])
    services.card_deal(coup=coup, by=by, card=left[1])
    game.refresh()
    assert game.shoe.stop_card_reached_at is not None
    # The current coup is finished (RULES.md §1): the next two cards come from under the
    # face-up one. Today the engine refuses them (shoe_empty) and the table is stuck: the coup
    # can neither be finished, nor annulled (a card is out), nor a new shoe loaded.
    services.card_deal(coup=coup, by=by, card=left[2])
    services.card_deal(coup=coup, by=by, card=left[3])
    services.punta_declare(coup=coup, by=by, draws=True)  # 0 v 0: the punta draws
    services.card_deal(coup=coup, by=by, card=left[4])
    services.banker_decide(coup=coup, by=by, draws=False)
    coup.refresh_from_db()
    assert coup.state == Coup.State.SETTLED
