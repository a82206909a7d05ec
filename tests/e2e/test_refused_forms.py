"""A refused form keeps what was typed in it: the floor's card and the tablet's panel come back
whole with the reason (htmx swaps them), and their forms came back empty, or with the
default: a bank refused above the maximum showed the minimum again, one tap from opening it."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from floor import services as floor_services
from floor.models import TableSession
from tables import services
from tables.models import Bet

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def problems(page) -> list[str]:
    """The page's errors, less the browser's note of each refusal's 4xx (the refusals asked for)."""
    return [p for p in page.problems if "status of 400" not in p]


def test_a_refused_open_keeps_the_commissario_s_typing(make_game, page_for, site, direzione, make_user):
    game = make_game("venezia")
    make_user("capo_free", "capo_partita")
    make_user("changeur_free", "changeur")
    idle = floor_services.table_create(casino=site.casino, site=site, number=7, by=direzione)
    page = page_for(game.commissario, "portrait")
    page.goto(page.base + "/floor/")
    card = page.locator(f"#table-{idle.pk}")
    card.get_by_label("Sabot number").fill("S-77")
    card.get_by_label("Minimum (euros)").fill("-5")
    card.get_by_label("Maximum (euros, optional)").fill("900")
    card.get_by_role("button", name="Open the table").click()
    card = page.locator(f"#table-{idle.pk}")
    expect(card.locator(".outcome")).to_contain_text("The minimum must be at least 1 euro")
    expect(card.get_by_label("Sabot number")).to_have_value("S-77")
    expect(card.get_by_label("Minimum (euros)")).to_have_value("-5")
    expect(card.get_by_label("Maximum (euros, optional)")).to_have_value("900")
    assert not TableSession.objects.filter(table=idle).exists()
    # corrected and sent: the table opens, and the card is the server's new one
    card.get_by_label("Minimum (euros)").fill("150")
    card.get_by_role("button", name="Open the table").click()
    expect(page.locator(f"#table-{idle.pk} .outcome")).to_contain_text("Table 7 open")
    session = TableSession.objects.get(table=idle)
    assert (session.shoe_number, session.minimum, session.maximum) == ("S-77", 150_00, 900_00)
    assert problems(page) == [], "\n".join(problems(page))


def test_a_refused_bet_keeps_its_amount_and_a_refused_bank_its_own(make_game, page_for):
    game = make_game("venezia", bank=None, maximum=5000_00)
    page = page_for(game.capo, "landscape")
    page.goto(f"{page.base}/tablet/sessions/{game.session.pk}/")
    page.locator("#bank-amount").fill("6000")
    page.get_by_role("button", name="Open the bank").click()
    expect(page.locator("#result")).to_contain_text("above the table maximum")
    expect(page.locator("#bank-amount")).to_have_value("6000")  # not the minimum, one tap from opening
    page.locator("#bank-amount").fill("1000")
    page.get_by_role("button", name="Open the bank").click()
    expect(page.locator("#result")).to_contain_text("Bank opened")
    services.coup_open(session=game.session, by=game.capo)
    page.reload()
    row = page.locator("form.bet-row", has_text=game.seat(3).full_name)
    row.get_by_label(f"Bet of {game.seat(3).full_name} (euros)").fill("1200")
    row.get_by_role("button", name="Bet", exact=True).click()
    expect(page.locator("#result")).to_contain_text(
        "The bets would exceed the bank: €\xa01 000 of it is still open."
    )
    row = page.locator("form.bet-row", has_text=game.seat(3).full_name)
    expect(row.get_by_label(f"Bet of {game.seat(3).full_name} (euros)")).to_have_value("1200")
    assert not Bet.objects.exists()
    row.get_by_label(f"Bet of {game.seat(3).full_name} (euros)").fill("800")
    row.get_by_role("button", name="Bet", exact=True).click()
    expect(page.locator("#result")).to_contain_text("Bet recorded")
    assert Bet.objects.get().amount == 800_00
    assert problems(page) == [], "\n".join(problems(page))
