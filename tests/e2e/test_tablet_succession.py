"""Passing the bank on the tablet, in the browser (RULES.md §5): the banker loses, the
succession panel offers the bank in rotation, the next player passes, the one after
accepts with an amount of his own, and the coup flow resumes with the new bank."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tables import services
from tables.models import Bank, Succession

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PUNTA_WINS = ["7H", "6S", "KH", "KD"]  # punta 7 v banker 6, both stand -> punta


def said(page, text: str):
    expect(page.locator("#result")).to_contain_text(text)


@pytest.mark.parametrize("viewport", ["landscape", "portrait"])
def test_a_lost_bank_is_passed_then_accepted(make_game, page_for, shoot, viewport):
    game = make_game("venezia")
    services.coup_record(
        session=game.session,
        by=game.capo,
        cards=PUNTA_WINS,
        punta_draws=False,
        bets=[{"patron": game.seat(2), "amount": 100_00}],
    )
    succ = Succession.objects.get(session=game.session)
    page = page_for(game.capo, viewport)
    page.goto(f"{page.base}/tablet/sessions/{game.session.pk}/")
    expect(page.get_by_role("heading", name="Passing the bank")).to_be_visible()
    expect(page.locator(".succession-head")).to_contain_text(f"{game.seat(1).full_name} lost the bank.")
    expect(page.locator(".facts")).to_contain_text("passing from seat 1 · offered to seat 2")
    shoot(page, f"tablet-succession-{viewport}")

    page.get_by_role("button", name=f"Pass: {game.seat(2).full_name}").click()
    said(page, f"{game.seat(2).full_name} passes.")
    expect(page.locator("tr.offer.passed")).to_have_count(1)
    turn = page.locator("li.turn")
    expect(turn).to_contain_text(game.seat(3).full_name)
    expect(page.locator(".facts")).to_contain_text("passing from seat 1 · offered to seat 3")
    turn.get_by_label("Bank (euros)").fill("300")
    shoot(page, f"tablet-succession-turn-{viewport}")
    page.get_by_role("button", name=f"Accept: {game.seat(3).full_name}").click()
    said(page, f"{game.seat(3).full_name} holds the bank: €\xa0300.")
    expect(page.get_by_role("button", name="Open the coup")).to_be_visible()
    expect(page.locator(".facts")).to_contain_text(game.seat(3).full_name)
    expect(page.locator(".facts")).to_contain_text("turn seat 3")
    shoot(page, f"tablet-succession-taken-{viewport}")

    succ.refresh_from_db()
    bank = Bank.objects.get(session=game.session, status="active")
    assert succ.status == Succession.Status.TAKEN and succ.new_bank == bank
    assert bank.banker == game.seat(3) and bank.amount == 300_00
    assert page.problems == [], "\n".join(page.problems)


BANKER_WINS = ["KH", "5S", "3C", "2D", "2S"]  # punta 3 draws a 2 -> 5; banker 7 stands


def test_the_asta_a_seated_bid_beats_an_equal_standing_one(make_game, page_for, shoot):
    """Withdrawal, nobody takes the bank all'altezza: the asta; the standing player bids the
    minimum, a seated player equals it with the quick button; closing gives him the bank."""
    game = make_game("venezia")
    services.coup_record(
        session=game.session,
        by=game.capo,
        cards=BANKER_WINS,
        punta_draws=True,
        bets=[{"patron": game.seat(2), "amount": 100_00}],
    )
    game.bank.refresh_from_db()
    services.bank_withdraw(bank=game.bank, by=game.capo)
    succ = Succession.objects.get(session=game.session)
    for patron in [game.seat(n) for n in range(2, 9)] + game.standing:
        services.offer_pass(succession=succ, by=game.capo, patron=patron)
    page = page_for(game.capo, "portrait")
    page.goto(f"{page.base}/tablet/sessions/{game.session.pk}/")
    page.get_by_role("button", name="Open the asta").click()
    said(page, "The asta is open")
    stander = game.standing[0]
    page.get_by_label("Bidder").select_option(str(stander.pk))
    page.get_by_role("button", name="minimum €\xa0100").click()
    said(page, f"Bid 1: {stander.full_name}")
    page.get_by_label("Bidder").select_option(str(game.seat(4).pk))
    page.get_by_role("button", name="equal €\xa0100").click()
    said(page, f"Bid 2: {game.seat(4).full_name}")
    expect(page.locator("table.bids tbody tr")).to_have_count(2)
    expect(page.locator("table.bids tr.leads")).to_contain_text(game.seat(4).full_name)
    shoot(page, "tablet-asta-portrait")
    page.get_by_role("button", name=f"Close the asta: {game.seat(4).full_name} takes the bank").click()
    said(page, f"The asta is closed: {game.seat(4).full_name} holds the bank, €\xa0100.")
    expect(page.get_by_role("button", name="Open the coup")).to_be_visible()
    shoot(page, "tablet-asta-closed-portrait")
    bank = Bank.objects.get(session=game.session, status="active")
    assert bank.banker == game.seat(4) and bank.amount == 100_00 and bank.origin == "auction"
    assert page.problems == [], "\n".join(page.problems)
