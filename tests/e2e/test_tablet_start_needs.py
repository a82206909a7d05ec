"""The first bank waiting for seats (RULES.md §6), in the browser: the Capo Partita waits at his
tablet while the Commissario seats the missing player from the floor; the bank's form comes
by itself within the banner's poll (5 s), without a reload, and what he typed elsewhere on the
page stays. Offline meanwhile, the tablet says so as it always does, and the poll goes on once
the network is back."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from floor import services as floor_services
from tests.e2e.test_offline_queue_kept import _online_problems
from tests.factories import PatronFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_bank_form_comes_once_the_missing_player_is_seated(make_game, page_for, shoot):
    game = make_game("venezia", seated=2, standing=0, bank=None, min_seats_to_start=3)
    page = page_for(game.capo)
    page.goto(f"{page.base}/tablet/sessions/{game.session.pk}/")
    expect(page.locator("#start-needs")).to_contain_text("at least 3 seats are taken, and 2 are taken")
    expect(page.get_by_role("button", name="Open the bank")).to_have_count(0)
    page.evaluate("window.notReloaded = true")
    # He types in a form of the side meanwhile: it is not swapped away.
    page.get_by_text("Faux tirage: bar a player").click()
    page.locator("#bar-reason").fill("typed while waiting")

    # The network drops: a poll fails, the tablet says it is offline (once, its usual banner),
    # and no error is swapped into the page.
    page.context.set_offline(True)
    expect(page.locator("#offline")).to_be_visible(timeout=7000)
    page.wait_for_timeout(5500)  # another poll fails meanwhile
    expect(page.locator("#result")).to_have_text("")
    expect(page.locator("#start-needs")).to_be_visible()
    page.context.set_offline(False)

    third = floor_services.seat_assign(
        session=game.session, patron=PatronFactory(), seat_number=3, by=game.commissario
    ).patron
    expect(page.get_by_role("button", name="Open the bank")).to_be_visible(timeout=7000)
    expect(page.locator("#offline")).to_be_hidden()
    expect(page.locator("#start-needs")).to_have_count(0)
    expect(page.get_by_text("Check the seats again")).to_have_count(0)
    expect(page.locator("#tablet-facts")).to_contain_text("next seat 1")
    assert page.evaluate("window.notReloaded") is True
    expect(page.locator("#bar-reason")).to_have_value("typed while waiting")
    # The side's Players table came with it: the player seated meanwhile, his Regola toggle.
    expect(page.locator("#tablet-players")).to_contain_text(third.full_name)
    expect(page.locator("#tablet-players").get_by_role("button", name=third.full_name)).to_have_count(1)
    shoot(page, "tablet-start-needs-form")

    # The form that came works as the page's own: the bank opens.
    page.locator("#bank-amount").fill("500")
    page.get_by_role("button", name="Open the bank").click()
    expect(page.get_by_role("button", name="Open the coup")).to_be_visible()
    # (htmx logs each failed send itself, offline: expected; nothing else)
    assert _online_problems(page) == [], "\n".join(page.problems)
