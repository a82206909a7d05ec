"""The tablet on a flaky network: a bet tapped while the network is down shows the offline
banner, is sent again with the same idempotency key once the network is back, and is
entered once."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from floor.models import IdempotencyKey
from tables import services
from tables.models import Bet

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_post_during_an_outage_is_retried_once(make_game, page_for, shoot):
    game = make_game("venezia")
    coup = services.coup_open(session=game.session, by=game.capo)
    page = page_for(game.capo, "portrait")
    page.goto(f"{page.base}/tablet/sessions/{game.session.pk}/")
    row = page.locator("form.bet-row", has_text=game.seat(2).full_name)
    key = row.locator("input[name=idempotency_key]").get_attribute("value")
    page.context.set_offline(True)
    row.get_by_role("button", name="€ 100").click()
    expect(page.locator("#offline")).to_be_visible()
    shoot(page, "tablet-offline")
    assert not Bet.objects.filter(coup=coup).exists()
    page.context.set_offline(False)
    expect(page.locator("#result")).to_contain_text("Bet recorded", timeout=20_000)
    expect(page.locator("#offline")).to_be_hidden()
    bet = Bet.objects.get(coup=coup)
    assert bet.amount == 100_00 and bet.patron == game.seat(2)
    assert IdempotencyKey.objects.filter(key=key, completed=True).count() == 1
    # htmx logs the failed send itself (htmx:sendError, htmx:afterRequest): expected here.
    page.problems[:] = [p for p in page.problems if "ERR_INTERNET_DISCONNECTED" not in p and not p.startswith("htmx:")]
    assert page.problems == [], "\n".join(page.problems)
