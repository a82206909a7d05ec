"""The tablet on a flaky network: a bet tapped while the network is down shows the offline
banner, is sent again with the same idempotency key once the network is back, and is
entered once."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from floor.models import IdempotencyKey
from tables import services
from tables.models import Bet, Coup

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_post_during_an_outage_is_retried_once(make_game, page_for, shoot):
    game = make_game("venezia")
    coup = services.coup_open(session=game.session, by=game.capo)
    page = page_for(game.capo, "portrait")
    page.goto(f"{page.base}/tablet/sessions/{game.session.pk}/")
    row = page.locator("form.bet-row", has_text=game.seat(2).full_name)
    key = row.locator("input[name=idempotency_key]").get_attribute("value")
    page.context.set_offline(True)
    row.get_by_role("button", name="€\xa0100").click()
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


def _online_problems(page) -> list[str]:
    # htmx logs each failed send itself (htmx:sendError, htmx:afterRequest): expected offline.
    return [p for p in page.problems if "ERR_INTERNET_DISCONNECTED" not in p and not p.startswith("htmx:")]


def _betting(make_game, page_for):
    game = make_game("venezia")
    coup = services.coup_open(session=game.session, by=game.capo)
    page = page_for(game.capo, "portrait")
    page.goto(f"{page.base}/tablet/sessions/{game.session.pk}/")
    return game, coup, page


def test_entries_tapped_offline_on_two_rows_are_all_sent_in_order(make_game, page_for, shoot):
    """Offline, a bet on row 2, then on row 3 (tapped twice): back online, both are entered,
    in that order, row 3's once; meanwhile the page says how many entries wait, and which."""
    game, coup, page = _betting(make_game, page_for)
    two = page.locator("form.bet-row", has_text=game.seat(2).full_name)
    three = page.locator("form.bet-row", has_text=game.seat(3).full_name)
    page.context.set_offline(True)
    two.get_by_role("button", name="€\xa0100").click()
    expect(page.locator("#pending")).to_contain_text("1 entry waiting for the network")
    three.get_by_role("button", name="€\xa0100").click()
    three.get_by_role("button", name="€\xa0100").click()  # the same entry, tapped again
    pending = page.locator("#pending")
    expect(pending).to_contain_text("2 entries waiting for the network")
    expect(pending).to_contain_text(f"Bet of {game.seat(2).full_name}: €\xa0100")
    expect(pending).to_contain_text(f"Bet of {game.seat(3).full_name}: €\xa0100")
    shoot(page, "tablet-offline-two-entries")
    assert "{n}" not in page.locator("body").inner_text()  # the templates' notes stay out of the page
    assert not Bet.objects.filter(coup=coup).exists()
    page.context.set_offline(False)
    expect(pending).to_be_hidden(timeout=20_000)
    expect(page.locator("#queue-report")).to_contain_text(f"Bet of {game.seat(2).full_name}: €\xa0100: sent")
    expect(page.locator("#queue-report")).to_contain_text(f"Bet of {game.seat(3).full_name}: €\xa0100: sent")
    expect(page.locator("#result")).to_contain_text(f"Bet recorded: {game.seat(3).full_name}")
    bets = list(Bet.objects.filter(coup=coup).order_by("order"))
    assert [b.patron for b in bets] == [game.seat(2), game.seat(3)]
    assert _online_problems(page) == [], "\n".join(page.problems)


def test_an_entry_refused_when_sent_again_is_said_by_name(make_game, page_for, shoot):
    """Two different cards tapped offline in one picker: the server enters the first and
    refuses the second (one form, one entry); the page says so, naming the card."""
    game = make_game("venezia")
    coup = services.coup_open(session=game.session, by=game.capo)
    services.banco_call(coup=coup, by=game.capo, patron=game.seat(2))
    services.rien_ne_va_plus(coup=coup, by=game.capo)
    page = page_for(game.capo, "portrait")
    page.goto(f"{page.base}/tablet/sessions/{game.session.pk}/")
    page.context.set_offline(True)
    for rank, suit in (("3", "C"), ("4", "D")):
        page.locator(f"form.picker label.key:text-is('{rank}')").first.click()
        page.locator(f"form.picker button[name=suit][value={suit}]").first.click()
    pending = page.locator("#pending")
    expect(pending).to_contain_text("2 entries waiting for the network")
    expect(pending).to_contain_text("Card: 3 ♣")
    expect(pending).to_contain_text("Card: 4 ♦")
    page.context.set_offline(False)
    expect(pending).to_be_hidden(timeout=20_000)
    report = page.locator("#queue-report")
    expect(report.locator("li.ok")).to_contain_text("Card: 3 ♣")
    expect(report.locator("li.err")).to_contain_text("Card: 4 ♦: NOT recorded")
    expect(report.locator("li.err")).to_contain_text("already sent for another entry")
    shoot(page, "tablet-offline-refused")
    coup.refresh_from_db()
    assert coup.cards == ["3C"]
    report.get_by_role("button", name="Understood").click()
    expect(report).to_be_hidden()
    problems = [p for p in _online_problems(page) if "status of 422" not in p]  # the refusal itself
    assert problems == [], "\n".join(page.problems)


def test_an_entry_waiting_for_the_network_survives_a_reload(make_game, page_for):
    """A bet tapped offline, then the page reloaded (the network back): the reloaded page
    still shows it waiting, sends it, and it is entered once."""
    game, coup, page = _betting(make_game, page_for)
    row = page.locator("form.bet-row", has_text=game.seat(2).full_name)
    key = row.locator("input[name=idempotency_key]").get_attribute("value")
    page.context.set_offline(True)
    row.get_by_role("button", name="€\xa0100").click()
    expect(page.locator("#pending")).to_contain_text("1 entry waiting for the network")
    # The network comes back, but not yet to the server: the page is reloaded meanwhile.
    page.route("**/bet/", lambda route: route.abort("internetdisconnected"))
    page.context.set_offline(False)
    page.reload()
    expect(page.locator("#pending")).to_contain_text(f"Bet of {game.seat(2).full_name}: €\xa0100")
    assert not Bet.objects.filter(coup=coup).exists()
    page.unroute("**/bet/")
    report = page.locator("#queue-report")
    expect(report).to_contain_text(f"Bet of {game.seat(2).full_name}: €\xa0100: sent", timeout=20_000)
    expect(page.locator("#pending")).to_be_hidden()
    bet = Bet.objects.get(coup=coup)
    assert bet.patron == game.seat(2) and bet.amount == 100_00
    assert IdempotencyKey.objects.filter(key=key, completed=True).count() == 1


def test_a_lost_answer_is_sent_again_and_entered_once(make_game, page_for):
    """The post reaches the server but its answer is lost: the queue sends it again with the
    same key and the stored answer comes back; one bet."""
    game, coup, page = _betting(make_game, page_for)
    lost = []

    def lose_first(route):
        if not lost:
            lost.append(route.fetch())  # the server enters it...
            route.abort("connectionreset")  # ... and the answer never arrives
        else:
            route.continue_()

    page.route("**/bet/", lose_first)
    page.locator("form.bet-row", has_text=game.seat(2).full_name).get_by_role("button", name="€\xa0100").click()
    report = page.locator("#queue-report")
    expect(report).to_contain_text("already recorded: the same answer again", timeout=20_000)
    expect(page.locator("#pending")).to_be_hidden()
    assert Bet.objects.filter(coup=coup).count() == 1
    page.unroute("**/bet/")


def test_an_entry_the_server_could_not_take_503_is_kept_and_sent_again(make_game, page_for):
    """The database out of reach: the server answers 503 and enters nothing. The entry is kept
    like one the network lost (not left to the croupier to tap again) and sent, with its key,
    once the server takes it: one bet, reported sent."""
    game, coup, page = _betting(make_game, page_for)
    refused = []

    def unavailable_twice(route):
        if len(refused) < 2:
            refused.append(route.request.post_data)
            route.fulfill(status=503, content_type="text/html", body="<h1>Service unavailable</h1>")
        else:
            route.continue_()

    page.route("**/bet/", unavailable_twice)
    row = page.locator("form.bet-row", has_text=game.seat(2).full_name)
    key = row.locator("input[name=idempotency_key]").get_attribute("value")
    row.get_by_role("button", name="€\xa0100").click()
    report = page.locator("#queue-report")
    expect(report).to_contain_text("sent once the network was back", timeout=20_000)
    expect(page.locator("#pending")).to_be_hidden()
    expect(page.locator("#unavailable")).to_be_hidden()
    assert len(refused) == 2 and all(f"idempotency_key={key}" in body for body in refused)
    bet = Bet.objects.get(coup=coup)
    assert (bet.amount, bet.patron) == (100_00, game.seat(2))
    assert IdempotencyKey.objects.filter(key=key, completed=True).count() == 1
    page.unroute("**/bet/")


def test_a_relieved_capo_partitas_resent_entry_gets_its_first_answer(make_game, page_for):
    """Relieved while his entry's answer was lost: the entry sent again gets the stored
    answer, said in the report, and nothing new is entered."""
    from floor import services as floor_services
    from tests.factories import UserFactory

    game = make_game("venezia")
    page = page_for(game.capo, "portrait")
    page.goto(f"{page.base}/tablet/sessions/{game.session.pk}/")
    lost = []

    def lose_then_relieve(route):
        if not lost:
            lost.append(route.fetch())
            floor_services.table_session_staff_change(
                session=game.session, by=game.commissario,
                capo_partita=UserFactory(username="capo_relief", roles=["capo_partita"]), reason="break",
            )  # fmt: skip
            route.abort("connectionreset")
        else:
            route.continue_()

    page.route("**/coup-open/", lose_then_relieve)
    page.get_by_role("button", name="Open the coup").click()
    report = page.locator("#queue-report")
    expect(report).to_contain_text("Open the coup: sent", timeout=20_000)
    expect(report).to_contain_text("already recorded")
    assert Coup.objects.filter(session=game.session).count() == 1
    page.unroute("**/coup-open/")


def test_an_entry_made_while_others_wait_goes_behind_them(make_game, page_for):
    """Row 2's bet cannot reach the server; row 3's, tapped next, waits behind it rather
    than overtaking it: once the way is clear both are entered, row 2's first."""
    game, coup, page = _betting(make_game, page_for)
    blocked = f"patron={game.seat(2).pk}&"

    def block_row_two(route):
        if blocked in (route.request.post_data or "") + "&":
            route.abort("internetdisconnected")
        else:
            route.continue_()

    page.route("**/bet/", block_row_two)
    page.locator("form.bet-row", has_text=game.seat(2).full_name).get_by_role("button", name="€\xa0100").click()
    expect(page.locator("#pending")).to_contain_text("1 entry waiting for the network")
    page.locator("form.bet-row", has_text=game.seat(3).full_name).get_by_role("button", name="€\xa0100").click()
    expect(page.locator("#pending")).to_contain_text("2 entries waiting for the network")
    page.wait_for_timeout(500)
    assert not Bet.objects.filter(coup=coup).exists()
    page.unroute("**/bet/")
    expect(page.locator("#pending")).to_be_hidden(timeout=20_000)
    bets = list(Bet.objects.filter(coup=coup).order_by("order"))
    assert [b.patron for b in bets] == [game.seat(2), game.seat(3)]


def test_an_entry_sent_again_after_the_login_expired_waits_for_the_login(make_game, page_for, client):
    """The login expired while an entry waited: the page goes to the login, the entry stays
    queued, and once logged in again on the table's page it is sent and entered."""
    from django.contrib.sessions.models import Session

    game, coup, page = _betting(make_game, page_for)
    page.context.set_offline(True)
    page.locator("form.bet-row", has_text=game.seat(2).full_name).get_by_role("button", name="€\xa0100").click()
    expect(page.locator("#pending")).to_contain_text("1 entry waiting for the network")
    Session.objects.all().delete()
    page.context.set_offline(False)
    page.wait_for_url("**/accounts/login/**", timeout=20_000)
    assert not Bet.objects.filter(coup=coup).exists()
    client.force_login(game.capo)
    page.context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": page.base}])
    page.goto(f"{page.base}/tablet/sessions/{game.session.pk}/")
    expect(page.locator("#queue-report")).to_contain_text(f"Bet of {game.seat(2).full_name}: €\xa0100: sent", timeout=20_000)
    assert Bet.objects.get(coup=coup).patron == game.seat(2)
