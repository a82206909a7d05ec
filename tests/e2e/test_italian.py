"""The pages in Italian, switched by the user in the header, in the browser."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _tablet_in_italian(make_game, page_for):
    """A Capo Partita's tablet, switched to Italian in the header."""
    game = make_game("venezia")
    page = page_for(game.capo)
    page.goto(f"{page.base}/tablet/sessions/{game.session.pk}/")
    page.get_by_label("Language").select_option("it")
    page.get_by_role("button", name="Change").click()
    expect(page.get_by_role("button", name="Apri il colpo")).to_be_visible()
    return page


def test_the_capo_partita_switches_to_italian(make_game, page_for, shoot):
    page = _tablet_in_italian(make_game, page_for)
    assert page.locator("html").get_attribute("lang") == "it"
    shoot(page, "tablet-italian")
    assert page.problems == [], "\n".join(page.problems)
    response = page.goto(f"{page.base}/floor/")
    assert response.status == 403  # the floor is the Commissario's: the 403 page, in Italian
    expect(page.locator("h1")).to_contain_text("Non consentito")


def test_the_players_headings_fit_their_columns_in_italian(make_game, page_for):
    # "posto" ran into "giocatore" at 1024x768: the seat column was narrower than its heading
    page = _tablet_in_italian(make_game, page_for)
    overflowing = page.eval_on_selector_all(
        "table.players th", "cells => cells.filter(c => c.scrollWidth > c.clientWidth).map(c => c.textContent)"
    )
    assert overflowing == []
