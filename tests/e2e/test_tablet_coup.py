"""A Capo Partita records a whole coup on the tablet, in the browser: a banker alla Regola
stands on 3 against a punta who stood (2 v... 5 v 3), the tablet warns, the coup is
reconstructed, the next card is entered, the result and the postings show."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tables.models import Bet, Coup

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SYMBOLS = {"S": "♠", "H": "♥", "D": "♦", "C": "♣"}


def said(page, text: str):
    """Wait for the outcome of the last post (the aria-live region) to say `text`."""
    expect(page.locator("#result")).to_contain_text(text)


def pick(page, rank: str, suit: str):
    page.locator(f"form.picker label.key:text-is('{rank}')").first.click()
    page.locator(f"form.picker button[name=suit][value={suit}]").first.click()
    said(page, f"{rank}{SYMBOLS[suit]}")  # the message shows the suit as its symbol


@pytest.mark.parametrize("viewport", ["landscape", "portrait"])
def test_capo_partita_records_a_coup_with_a_reconstruction(make_game, page_for, shoot, viewport):
    game = make_game("venezia")
    page = page_for(game.capo, viewport)
    page.goto(page.base + "/tablet/")
    shoot(page, f"tablet-list-{viewport}")
    page.get_by_role("link", name="Table").first.click()
    page.wait_for_load_state("networkidle")
    # The banker declares the Regola: the Capo Partita marks him.
    banker_row = page.locator("table.players tr", has_text=game.banker.full_name)
    banker_row.get_by_role("button").click()
    said(page, "plays alla Regola")
    page.get_by_role("button", name="Open the coup").click()
    said(page, "Coup 1 open")
    shoot(page, f"tablet-bets-{viewport}")
    row = page.locator("form.bet-row", has_text=game.seat(2).full_name)
    row.get_by_role("button", name="Banco", exact=True).click()
    said(page, "Banco!")
    page.get_by_role("button", name="Rien ne va plus").click()
    said(page, "Rien ne va plus")
    for rank, suit in (("2", "S"), ("K", "H"), ("3", "C"), ("3", "D")):
        pick(page, rank, suit)
    shoot(page, f"tablet-declaration-{viewport}")
    page.get_by_role("button", name="Non", exact=True).click()
    said(page, "non")
    assert "against the Regola" in page.locator("button.nonconforming").inner_text()
    shoot(page, f"tablet-banker-decision-{viewport}")
    page.locator("button", has_text="Banker stands").click()
    said(page, "The banker stands")
    shoot(page, f"tablet-reconstruction-{viewport}")
    pick(page, "5", "H")
    expect(page.locator(".result")).to_contain_text("The banker wins")
    shoot(page, f"tablet-result-{viewport}")
    coup = Coup.objects.get(session=game.session)
    assert coup.state == Coup.State.SETTLED and coup.winner == "banker" and coup.conforming is False
    bet = Bet.objects.get(coup=coup)  # the winning banco call became the one bet
    assert bet.kind == Bet.Kind.BANCO and bet.patron == game.seat(2)
    assert "As reconstructed (settled)" in page.content()
    assert page.problems == [], "\n".join(page.problems)



def _tap_fast(page, cards: list[str]) -> None:
    """Tap rank and suit of each card (a card without a rank: a second tap on the suit)
    within one script, so that every tap after the first comes while the first card is
    still being entered, as on a busy network."""
    page.evaluate(
        """(cards) => {
          const form = () => document.querySelector('form.picker');
          for (const card of cards) {
            const rank = card.slice(0, -1), suit = card.slice(-1);
            if (rank) { form().querySelector('label[for$="-rank-' + rank + '"]').click(); }
            form().querySelector('button[name=suit][value=' + suit + ']').click();
          }
        }""",
        cards,
    )


def _banco_called(make_game, page_for):
    """A venezia table's tablet, coup 1 open and seat 2's banco called."""
    game = make_game("venezia")
    page = page_for(game.capo)
    page.goto(f"{page.base}/tablet/sessions/{game.session.pk}/")
    page.get_by_role("button", name="Open the coup").click()
    said(page, "Coup 1 open")
    page.locator("form.bet-row", has_text=game.seat(2).full_name).get_by_role("button", name="Banco", exact=True).click()
    said(page, "Banco!")
    return game, page


def _at_the_cards(make_game, page_for):
    """The same, with rien ne va plus said: the picker waits for the first card."""
    game, page = _banco_called(make_game, page_for)
    page.get_by_role("button", name="Rien ne va plus").click()
    said(page, "Rien ne va plus")
    return game, page


def test_cards_tapped_while_the_previous_is_being_entered_are_entered_in_order(make_game, page_for):
    """The croupier enters the cards as they leave the shoe. A card tapped while the previous
    one was still being entered was silently dropped (the picker's buttons were disabled),
    and the next card went to the wrong hand. Each waits now and is entered in order; a
    second tap on the same suit (no new rank) is still one card."""
    game, page = _at_the_cards(make_game, page_for)
    _tap_fast(page, ["2S", "KH", "H", "3C"])
    said(page, "3♣ entered, to the punta")
    expect(page.locator(".hand.punta .cards")).to_contain_text("2♠ 3♣")
    expect(page.locator(".hand.banker .cards")).to_contain_text("K♥")
    assert Coup.objects.get(session=game.session).cards == ["2S", "KH", "3C"]
    assert not page.problems


def test_a_card_tapped_when_the_coup_needs_a_declaration_first_is_not_entered_and_said(make_game, page_for):
    game, page = _at_the_cards(make_game, page_for)
    for rank, suit in (("2", "S"), ("K", "H"), ("3", "C")):
        pick(page, rank, suit)
    _tap_fast(page, ["3D", "5H"])  # the 5th card before the punta's declaration
    said(page, "5♥ not entered")
    expect(page.locator("#result")).to_have_class(re.compile(r"\berr\b"))
    assert Coup.objects.get(session=game.session).cards == ["2S", "KH", "3C", "3D"]


def test_a_new_panels_forms_are_live_the_moment_they_appear(make_game, page_for):
    """htmx binds swapped-in content when it settles, 20 ms after the swap by default: a tap
    in that window submitted the picker natively, a full-page POST that the next tap cut off
    (CI saw the first two of three quick cards lost). With no settle delay, the forms are
    bound as they are inserted."""
    _game, page = _banco_called(make_game, page_for)
    bound = page.evaluate(
        """() => new Promise((done) => {
          const seen = new MutationObserver(() => {
            const form = document.querySelector('form.picker');
            if (form) { seen.disconnect(); done(!!(form['htmx-internal-data'] || {}).initHash); }
          });
          seen.observe(document.body, { childList: true, subtree: true });
          [...document.querySelectorAll('button')].find((b) => b.textContent.includes('Rien ne va plus')).click();
        })"""
    )
    assert bound is True


def test_the_back_button_shows_the_table_as_it_is_now(make_game, page_for):
    """Back to the table's page after leaving it: the coup opened meanwhile (by htmx, in
    place) is shown, not the page as first loaded with a used "Open the coup" form."""
    game = make_game("venezia")
    page = page_for(game.capo)
    page.goto(page.base + "/tablet/")  # as he comes in: the list first (its CSRF cookie set)
    page.get_by_role("link", name="Table").first.click()
    page.get_by_role("button", name="Open the coup").click()
    said(page, "Coup 1 open")
    # An unload handler keeps the page out of Chromium's back/forward cache, as a tablet's
    # browser low on memory does: back then reloads the page, from the HTTP cache if it may.
    page.evaluate("addEventListener('unload', () => {})")
    page.get_by_role("link", name="Your tables").click()
    page.wait_for_url("**/tablet/")
    page.go_back()
    page.wait_for_url(f"**/tablet/sessions/{game.session.pk}/")
    expect(page.locator("#flow-title")).to_contain_text("Coup 1")
    expect(page.get_by_role("button", name="Open the coup")).to_have_count(0)
    assert not page.problems
