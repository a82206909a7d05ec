"""Pages that follow changes made elsewhere, without a reload, in the browser: the Commissario
interrupts and resumes a table from his floor while its Capo Partita's tablet shows play, and
changes its minimum; another tab closes the gaming day while the floor is open. Each page shows
it within its poll (5 s); a field being typed in stays as it was; offline, the page says so
once (its banner), and no error comes into the page."""

from __future__ import annotations

import pytest
from django.test import Client
from playwright.sync_api import expect

from floor import services as floor_services
from tests.e2e.conftest import VIEWPORTS
from tests.e2e.test_offline_queue_kept import _online_problems

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def page_as(browser, live_server):
    """`page_as(user)`: a browser page logged in as `user` in its own context, with its own
    Django session (page_for's shared test client logs the previous user out): two users, or
    two tabs of one, side by side."""
    contexts = []

    def make(user):
        client = Client()
        client.force_login(user)
        context = browser.new_context(viewport=VIEWPORTS["landscape"], locale="en-GB", has_touch=True)
        context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value,
                              "url": live_server.url}])  # fmt: skip
        contexts.append(context)
        page = context.new_page()
        page.problems = []
        page.on("console", lambda m: m.type == "error" and page.problems.append(m.text))
        page.on("pageerror", lambda e: page.problems.append(str(e)))
        page.base = live_server.url
        return page

    yield make
    for context in contexts:
        context.close()


def test_the_tablet_follows_an_interruption_a_resume_and_a_minimum_made_on_the_floor(make_game, page_as, shoot):
    game = make_game("venezia")
    tablet = page_as(game.capo)
    tablet.goto(f"{tablet.base}/tablet/sessions/{game.session.pk}/")
    expect(tablet.get_by_role("button", name="Open the coup")).to_be_visible()
    tablet.evaluate("window.notReloaded = true")

    # The Commissario, on his floor in another browser, interrupts the table.
    floor = page_as(game.commissario)
    floor.goto(floor.base + "/floor/")
    card = floor.locator(f"#table-{game.session.table.pk}")
    card.get_by_label("Reason for the interruption").fill("a dispute")
    card.get_by_role("button", name="Interrupt play").click()
    expect(floor.locator(f"#table-{game.session.table.pk}").get_by_role("button", name="Resume play")).to_be_visible()

    expect(tablet.locator("#tablet-notices")).to_contain_text("Play is interrupted by the Commissario.", timeout=7000)
    expect(tablet.get_by_role("button", name="Open the coup")).to_have_count(0)
    expect(tablet.locator("#flow")).to_contain_text("The next coup opens once play resumes.")
    expect(tablet.get_by_text("Faux tirage: bar a player")).to_have_count(0)
    shoot(tablet, "tablet-live-interrupted")

    # Offline a while: said once, by the page's banner; nothing else comes into the page.
    tablet.context.set_offline(True)
    expect(tablet.locator("#offline")).to_be_visible(timeout=7000)
    tablet.wait_for_timeout(5500)  # another poll fails meanwhile
    expect(tablet.locator("#result")).to_have_text("")
    expect(tablet.locator("#unavailable")).to_be_hidden()
    tablet.context.set_offline(False)

    # Resumed from the floor: the play comes back, and the side's tools.
    floor.locator(f"#table-{game.session.table.pk}").get_by_role("button", name="Resume play").click()
    expect(tablet.get_by_role("button", name="Open the coup")).to_be_visible(timeout=7000)
    expect(tablet.locator("#offline")).to_be_hidden()
    expect(tablet.locator("#tablet-notices")).not_to_contain_text("interrupted")
    expect(tablet.get_by_text("Faux tirage: bar a player")).to_be_visible()

    # He types a reason in the side's bar form, and stays in it: the minimum changed meanwhile
    # comes to the header, and his field keeps what he typed.
    tablet.get_by_text("Faux tirage: bar a player").click()
    tablet.locator("#bar-reason").fill("typed while the floor works")
    card = floor.locator(f"#table-{game.session.table.pk}")
    card.get_by_label("New minimum (euros)").fill("250")
    card.get_by_label("Reason (told to the players)").fill("Saturday evening")
    card.get_by_role("button", name="Change the limits").click()
    expect(tablet.locator("#tablet-facts")).to_contain_text("250", timeout=7000)
    expect(tablet.locator("#bar-reason")).to_have_value("typed while the floor works")
    assert tablet.evaluate("window.notReloaded") is True

    # The tablet works as before: the coup opens.
    tablet.get_by_role("button", name="Open the coup").click()
    expect(tablet.get_by_role("button", name="Rien ne va plus")).to_be_visible()
    shoot(tablet, "tablet-live-resumed")
    assert _online_problems(tablet) == [], "\n".join(tablet.problems)
    assert floor.problems == [], "\n".join(floor.problems)


def test_the_floor_follows_a_day_closed_in_another_tab(page_as, commissario, casino, site, shoot):
    day = floor_services.gaming_day_open(casino=casino, by=commissario)
    table = floor_services.table_create(casino=casino, site=site, number=4, by=commissario)
    one = page_as(commissario)
    one.goto(one.base + "/floor/")
    expect(one.locator(f"#table-{table.pk}").get_by_text("Open a session")).to_be_visible()
    expect(one.get_by_role("button", name="Close the gaming day")).to_be_visible()
    one.evaluate("window.notReloaded = true")

    # Another tab (another context) closes the day.
    other = page_as(commissario)
    other.goto(other.base + "/floor/")
    other.get_by_label("I confirm every table's session is closed: close the gaming day").check()
    other.get_by_role("button", name="Close the gaming day").click()
    expect(other.get_by_role("button", name="Open the gaming day")).to_be_visible()

    # The first follows: the open form of the day, no close; the table's card without its form.
    expect(one.get_by_role("button", name="Open the gaming day")).to_be_visible(timeout=7000)
    expect(one.get_by_role("button", name="Close the gaming day")).to_have_count(0)
    expect(one.locator(f"#table-{table.pk}").get_by_text("Open a session")).to_have_count(0, timeout=7000)
    expect(one.locator(f"#day-open-note-{casino.pk}")).to_be_visible()
    assert one.evaluate("window.notReloaded") is True
    assert day.pk  # (the day closed is the one the page showed)
    shoot(one, "floor-live-day-closed")
    assert one.problems == [], "\n".join(one.problems)
