"""The tablet's queue outlives its tab: entries waiting for the network are kept on the device
(localStorage, per user and table), so a closed tab, a crashed browser or a rebooted tablet
loses none; two tabs on one table share the queue without sending it twice or out of order;
an entry older than the server keeps its key is held for the croupier; logging out warns;
and the queue of the previous version (sessionStorage) is taken over."""

from __future__ import annotations

import itertools
import time

import pytest
from playwright.sync_api import expect

from floor.models import IdempotencyKey
from tables import services
from tables.models import Bet, Coup

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# What the queues keep, as {storage key: value}, in localStorage or sessionStorage: an entry
# each (chemin:pending:<user>:<session>#<id>), or a whole list (the previous version).
STORED = """(kind) => {
  const store = window[kind], out = {};
  for (let i = 0; i < store.length; i += 1) {
    const k = store.key(i);
    if (k.startsWith("chemin:pending:")) { out[k] = JSON.parse(store.getItem(k)); }
  }
  return out;
}"""


def _watch(page):
    page.problems = []
    page.on("console", lambda m: m.type == "error" and page.problems.append(m.text))
    page.on("pageerror", lambda e: page.problems.append(str(e)))
    # The bet posts that reached the server and came back (an aborted one never finishes), and
    # when each resend of the queue was on its way, shared by the tabs of one browser.
    page.bets_sent = []
    spans = page.context.resend_spans = getattr(page.context, "resend_spans", {})

    def is_bet(r):
        return r.method == "POST" and r.url.endswith("/bet/")

    def is_resend(r):
        return is_bet(r) and "x-chemin-queued" in r.headers

    def ended(r):
        if is_resend(r):
            spans[r] = (spans[r][0], time.monotonic())

    page.on("request", lambda r: is_resend(r) and spans.__setitem__(r, (time.monotonic(), None)))
    page.on("requestfinished", lambda r: is_bet(r) and page.bets_sent.append(r))
    page.on("response", lambda response: ended(response.request))  # before the page reads it
    page.on("requestfailed", ended)
    return page


def _another_page(page, url):
    """A second tab of the same browser (same storage, same login)."""
    other = _watch(page.context.new_page())
    other.base = page.base
    other.goto(url)
    return other


def _online_problems(page) -> list[str]:
    # htmx logs each failed send itself (htmx:sendError, htmx:afterRequest): expected offline.
    return [
        p for p in page.problems
        if "ERR_INTERNET_DISCONNECTED" not in p and "ERR_FAILED" not in p and not p.startswith("htmx:")
    ]  # fmt: skip


def _betting(make_game, page_for):
    game = make_game("venezia")
    coup = services.coup_open(session=game.session, by=game.capo)
    page = _watch(page_for(game.capo, "portrait"))
    url = f"{page.base}/tablet/sessions/{game.session.pk}/"
    page.goto(url)
    return game, coup, page, url


def _row(page, game, seat):
    return page.locator("form.bet-row", has_text=game.seat(seat).full_name)


def _tap_bet(page, game, seat):
    _row(page, game, seat).get_by_role("button", name="€\xa0100").click()


def _key(page, game, seat) -> str:
    return _row(page, game, seat).locator("input[name=idempotency_key]").get_attribute("value")


def _abort(route):
    route.abort("internetdisconnected")


def test_entries_waiting_when_the_tab_is_closed_are_sent_from_the_next_one(make_game, page_for, shoot):
    """Offline, two bets, then the tab is closed: a new tab on the table lists both, and once
    the server is reachable sends them, each once, in the order they were made."""
    game, coup, page, url = _betting(make_game, page_for)
    assert page.evaluate("!!(navigator.locks && navigator.locks.request)")  # the locked path
    keys = [_key(page, game, 2), _key(page, game, 3)]
    context = page.context
    context.set_offline(True)
    _tap_bet(page, game, 2)
    expect(page.locator("#pending")).to_contain_text("1 entry waiting for the network")
    _tap_bet(page, game, 3)
    expect(page.locator("#pending")).to_contain_text("2 entries waiting for the network")
    page.close()
    assert not Bet.objects.filter(coup=coup).exists()
    # The network is back, but the server not yet: the new tab shows what waits.
    context.route("**/bet/", _abort)
    context.set_offline(False)
    again = _another_page(page, url)
    pending = again.locator("#pending")
    expect(pending).to_contain_text("2 entries waiting for the network")
    # Each in the order it was made (the first may already say it was sent once and waits for
    # the answer: the new tab tries it as soon as the network is back, and the server is not).
    expect(pending.locator("li")).to_contain_text(
        [f"Bet of {game.seat(2).full_name}: €\xa0100", f"Bet of {game.seat(3).full_name}: €\xa0100"]
    )
    shoot(again, "tablet-queue-after-the-tab-closed")
    context.unroute("**/bet/")
    expect(pending).to_be_hidden(timeout=20_000)
    report = again.locator("#queue-report")
    expect(report).to_contain_text(f"Bet of {game.seat(2).full_name}: €\xa0100: sent")
    expect(report).to_contain_text(f"Bet of {game.seat(3).full_name}: €\xa0100: sent")
    bets = list(Bet.objects.filter(coup=coup).order_by("order"))
    assert [b.patron for b in bets] == [game.seat(2), game.seat(3)]
    assert len(again.bets_sent) == 2  # once each: no replay was needed
    for key in keys:
        assert IdempotencyKey.objects.filter(key=key, completed=True).count() == 1
    assert again.evaluate(STORED, "localStorage") == {}
    assert _online_problems(again) == [], "\n".join(again.problems)


@pytest.mark.parametrize("locks", [True, False], ids=["web-locks", "no-web-locks"])
def test_two_tabs_on_one_table_share_the_queue(make_game, page_for, locks):
    """Two tabs on the same table: entries tapped offline in either are listed in both, and
    once online go in the order they were tapped, none lost, none entered twice. With Web
    Locks one tab sends at a time; without them (the fallback) the order holds all the same."""
    game, coup, page, url = _betting(make_game, page_for)
    if not locks:
        page.context.add_init_script("delete Navigator.prototype.locks;")
        page.reload()
        assert page.evaluate("navigator.locks === undefined")
    other = _another_page(page, url)
    keys = [_key(page, game, 2), _key(other, game, 3), _key(page, game, 4)]
    page.context.set_offline(True)
    _tap_bet(page, game, 2)
    expect(other.locator("#pending")).to_contain_text("1 entry waiting for the network")  # via 'storage'
    _tap_bet(other, game, 3)
    expect(page.locator("#pending")).to_contain_text("2 entries waiting for the network")
    _tap_bet(page, game, 4)
    for tab in (page, other):
        expect(tab.locator("#pending")).to_contain_text("3 entries waiting for the network")
        expect(tab.locator("#pending li")).to_have_text(
            [f"Bet of {game.seat(n).full_name}: €\xa0100" for n in (2, 3, 4)]
        )  # fmt: skip
    assert not Bet.objects.filter(coup=coup).exists()
    page.context.set_offline(False)
    for tab in (page, other):
        expect(tab.locator("#pending")).to_be_hidden(timeout=20_000)
    bets = list(Bet.objects.filter(coup=coup).order_by("order"))
    assert [b.patron for b in bets] == [game.seat(2), game.seat(3), game.seat(4)]
    for key in keys:
        assert IdempotencyKey.objects.filter(key=key, completed=True).count() == 1
    reports = page.locator("#queue-report li").all_inner_texts() + other.locator("#queue-report li").all_inner_texts()
    for n in (2, 3, 4):
        assert any(r.startswith(f"Bet of {game.seat(n).full_name}: €\xa0100: sent") for r in reports), reports
    if locks:
        # One tab sends at a time: no post started before the one on its way had its answer.
        spans = sorted(page.context.resend_spans.values())
        assert len(spans) >= 3
        assert all(end is not None for _, end in spans)
        assert all(later[0] >= earlier[1] for earlier, later in itertools.pairwise(spans)), spans
    assert page.evaluate(STORED, "localStorage") == {}
    for tab in (page, other):
        assert _online_problems(tab) == [], "\n".join(tab.problems)


def test_an_entry_older_than_the_servers_memory_is_held_for_the_croupier(make_game, page_for, shoot):
    """An entry made longer ago than the server keeps its keys (7 days) is not sent by itself:
    the page says so and when it was made; the fresher one behind it goes. The croupier
    enters it again by hand, then discards it."""
    game, coup, page, url = _betting(make_game, page_for)
    stale_key = _key(page, game, 2)
    page.context.set_offline(True)
    _tap_bet(page, game, 2)
    _tap_bet(page, game, 3)
    expect(page.locator("#pending")).to_contain_text("2 entries waiting for the network")
    # The first entry made 8 days ago (the tablet was put away with it waiting).
    page.evaluate(
        """() => {
          const [k, first] = Object.keys(localStorage).filter((k) => k.startsWith("chemin:pending:"))
            .map((k) => [k, JSON.parse(localStorage.getItem(k))]).sort((a, b) => a[1].order - b[1].order)[0];
          first.made -= 8 * 86400000;
          localStorage.setItem(k, JSON.stringify(first));
        }"""
    )
    context = page.context
    page.close()
    context.set_offline(False)
    again = _another_page(page, url)
    held = again.locator("#queue-held")
    expect(held).to_contain_text(f"Bet of {game.seat(2).full_name}: €\xa0100: NOT sent")
    expect(held).to_contain_text("longer ago than the server keeps its record of entries (7 days)")
    expect(held).to_contain_text("enter it again by hand")
    report = again.locator("#queue-report")
    expect(report).to_contain_text(f"Bet of {game.seat(3).full_name}: €\xa0100: sent", timeout=20_000)
    expect(again.locator("#pending")).to_be_hidden()
    shoot(again, "tablet-queue-held")
    again.wait_for_timeout(1000)
    assert [b.patron for b in Bet.objects.filter(coup=coup)] == [game.seat(3)]
    assert not IdempotencyKey.objects.filter(key=stale_key).exists()
    assert len(again.bets_sent) == 1
    # Still due: entered again by hand, at once (a held entry does not hold new ones back)...
    _tap_bet(again, game, 2)
    expect(again.locator("#result")).to_contain_text(f"Bet recorded: {game.seat(2).full_name}")
    expect(held).to_be_visible()  # ... and the old one stays until he discards it
    held.get_by_role("button", name="Discard this entry").click()
    expect(held).to_be_hidden()
    assert again.evaluate(STORED, "localStorage") == {}
    again.reload()
    expect(again.locator("#queue-held")).to_be_hidden()
    assert sorted(b.patron.pk for b in Bet.objects.filter(coup=coup)) == sorted([game.seat(2).pk, game.seat(3).pk])
    assert _online_problems(again) == [], "\n".join(again.problems)


def test_the_queue_of_the_previous_version_is_taken_over(make_game, page_for):
    """A tablet updated mid-evening: its entries waited in the tab's sessionStorage, without
    an id or a time. The new page moves them to the device's store, lists and sends them."""
    game, coup, page, _ = _betting(make_game, page_for)
    key = _key(page, game, 2)
    page.route("**/bet/", _abort)
    _tap_bet(page, game, 2)
    expect(page.locator("#pending")).to_contain_text("1 entry waiting for the network")
    # As the previous version kept it.
    moved = page.evaluate(
        """() => {
          const k = Object.keys(localStorage).find((k) => k.startsWith("chemin:pending:"));
          const { id, made, order, ...old } = JSON.parse(localStorage.getItem(k));
          sessionStorage.setItem(k.split("#")[0], JSON.stringify([old]));
          localStorage.removeItem(k);
          return [old];
        }"""
    )
    assert len(moved) == 1 and moved[0]["key"] == key and "made" not in moved[0]
    page.reload()
    expect(page.locator("#pending")).to_contain_text(f"Bet of {game.seat(2).full_name}: €\xa0100")
    assert page.evaluate(STORED, "sessionStorage") == {}
    (entry,) = page.evaluate(STORED, "localStorage").values()
    assert entry["key"] == key and entry["values"] == moved[0]["values"] and entry["made"] and entry["id"]
    expect(page.locator("#queue-held")).to_be_hidden()  # counted from its move: not too old
    page.unroute("**/bet/")
    expect(page.locator("#queue-report")).to_contain_text(f"Bet of {game.seat(2).full_name}: €\xa0100: sent", timeout=20_000)
    assert Bet.objects.get(coup=coup).patron == game.seat(2)
    assert IdempotencyKey.objects.filter(key=key, completed=True).count() == 1
    assert page.evaluate(STORED, "localStorage") == {}


def test_logging_out_with_entries_waiting_warns_and_keeps_them(make_game, page_for, client):
    """Entries wait: the logout button asks first (he may stay); logged out anyway, the
    entries stay on the device and go once he is back on the table's page."""
    game, coup, page, url = _betting(make_game, page_for)
    page.context.route("**/bet/", _abort)
    _tap_bet(page, game, 2)
    expect(page.locator("#pending")).to_contain_text("1 entry waiting for the network")
    asked = []

    def answer(accept):
        def on_dialog(dialog):
            asked.append(dialog.message)
            dialog.accept() if accept else dialog.dismiss()

        return on_dialog

    page.once("dialog", answer(False))
    page.get_by_role("button", name="Log out").click()
    expect(page.locator("#pending")).to_contain_text("1 entry waiting for the network")
    assert asked == [
        "1 entry made on this tablet has not reached the server yet. It stays here, and is sent once "
        "you log in again and open its table. Log out anyway?"
    ]
    assert page.url == url
    page.once("dialog", answer(True))
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url("**/accounts/login/**")
    assert len(asked) == 2
    entries = page.evaluate(STORED, "localStorage").values()
    assert [e["label"] for e in entries] == [f"Bet of {game.seat(2).full_name}: €\xa0100"]
    page.context.unroute("**/bet/")
    client.force_login(game.capo)
    page.context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": page.base}])
    page.goto(url)
    expect(page.locator("#queue-report")).to_contain_text(f"Bet of {game.seat(2).full_name}: €\xa0100: sent", timeout=20_000)
    assert Bet.objects.get(coup=coup).patron == game.seat(2)
    # Nothing waits any more: he logs out without a question.
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url("**/accounts/login/**")
    assert len(asked) == 2


def test_an_entry_for_a_session_closed_meanwhile_is_said_refused(make_game, page_for):
    """Offline, the coup is opened; meanwhile the Commissario closes the session: once sent,
    the entry is reported NOT recorded with the server's reason, and leaves the queue."""
    from floor import services as floor_services

    game = make_game("venezia")
    page = _watch(page_for(game.capo, "portrait"))
    page.goto(f"{page.base}/tablet/sessions/{game.session.pk}/")
    page.context.set_offline(True)
    page.get_by_role("button", name="Open the coup").click()
    expect(page.locator("#pending")).to_contain_text("1 entry waiting for the network")
    floor_services.table_session_close(session=game.session, by=game.commissario)
    page.context.set_offline(False)
    refused = page.locator("#queue-report li.err")
    expect(refused).to_contain_text("Open the coup: NOT recorded", timeout=20_000)
    expect(refused).to_contain_text("The table session is closed.")
    expect(page.locator("#pending")).to_be_hidden()
    assert not Coup.objects.filter(session=game.session).exists()
    assert page.evaluate(STORED, "localStorage") == {}
    assert page.evaluate(STORED, "sessionStorage") == {}


def test_entries_left_for_a_session_closed_since_are_found_and_answered(make_game, page_for, shoot):
    """The tab closed with an entry waiting, and the session closed before the tablet came
    back: the table is no longer his, but every page says an entry waits and links to its
    page, which sends it and says why it was refused. Nothing stays forgotten on the device."""
    from floor import services as floor_services

    game = make_game("venezia")
    page = _watch(page_for(game.capo, "portrait"))
    url = f"{page.base}/tablet/sessions/{game.session.pk}/"
    page.goto(url)
    context = page.context
    context.set_offline(True)
    page.get_by_role("button", name="Open the coup").click()
    expect(page.locator("#pending")).to_contain_text("1 entry waiting for the network")
    page.close()
    floor_services.table_session_close(session=game.session, by=game.commissario)
    context.set_offline(False)
    home = _another_page(page, f"{page.base}/tablet/")
    elsewhere = home.locator("#queue-elsewhere")
    expect(elsewhere).to_contain_text("1 entry made on this tablet waits to be sent from its page:")
    shoot(home, "tablet-queue-elsewhere")
    elsewhere.get_by_role("link", name="Table 1 (1)").click()
    home.wait_for_url(url)
    refused = home.locator("#queue-report li.err")
    expect(refused).to_contain_text("Open the coup: NOT recorded", timeout=20_000)
    expect(refused).to_contain_text("The table session is closed.")
    expect(home.locator("#pending")).to_be_hidden()
    assert not Coup.objects.filter(session=game.session).exists()
    assert home.evaluate(STORED, "localStorage") == {}
    home.goto(f"{page.base}/tablet/")
    expect(home.locator("#queue-elsewhere")).to_be_hidden()
    problems = [p for p in _online_problems(home) if "status of 403" not in p and "status of 409" not in p]
    assert problems == [], "\n".join(home.problems)


@pytest.mark.parametrize(
    "made, says",
    [
        ("Date.UTC(2020, 9, 25, 0, 30, 30)", "2020-10-25 02:30+02:00"),  # 20:30:30 in New York
        ("Date.UTC(2020, 9, 25, 1, 30, 30)", "2020-10-25 02:30+01:00"),  # the same clock, an hour on
        ("Date.UTC(2020, 9, 25, 2, 30, 30)", "2020-10-25 03:30"),
        ("Date.UTC(2020, 9, 24, 18, 30, 30)", "2020-10-24 20:30"),
    ],
    ids=["first-0230", "second-0230", "after", "evening"],
)
def test_a_held_entry_says_when_it_was_made_in_the_casinos_time_whatever_the_tablets_zone(
    make_game, page_for, made, says
):
    """QA: the held entry's "made on ..." was the tablet's own zone's time (a device left on
    UTC or on its maker's zone), while every other time on the pages is the casino's
    (TIME_ZONE, Europe/Rome). An entry made at 02:30:30 CEST on the October night, on a tablet
    set to New York (20:30 there), says 02:30, written as the pages write a time: in the hour
    the clock reads twice with its UTC offset, as the pages' times are (the clock filter)."""
    game = make_game("venezia")
    services.coup_open(session=game.session, by=game.capo)
    page = _watch(page_for(game.capo, "portrait", timezone_id="America/New_York"))
    url = f"{page.base}/tablet/sessions/{game.session.pk}/"
    page.goto(url)
    page.context.set_offline(True)
    _tap_bet(page, game, 2)
    expect(page.locator("#pending")).to_contain_text("1 entry waiting for the network")
    page.evaluate(
        """() => {
          const k = Object.keys(localStorage).find((k) => k.startsWith("chemin:pending:"));
          const entry = JSON.parse(localStorage.getItem(k));
          entry.made = MADE;
          localStorage.setItem(k, JSON.stringify(entry));
        }""".replace("MADE", made)
    )
    context = page.context
    page.close()
    context.set_offline(False)
    again = _another_page(page, url)
    held = again.locator("#queue-held")
    expect(held).to_contain_text(f"It was made on {says}, longer ago")
