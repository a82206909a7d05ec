"""What the queue keeps of an entry besides its values, so that every tab on the table (and a
reloaded one) tells the croupier the truth: an entry the server failed on (a 500) is kept
"not confirmed" for his decision, not reported NOT recorded; an entry on its way is said to
wait for the server's answer in every tab, and after a reload; and an entry two tabs sent
(without Web Locks) is reported once."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from floor.models import IdempotencyKey
from tables import services
from tables.models import Bet
from tests.e2e.test_offline_timeout import _key, _label, _row, _until

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SLOW = "sent, waiting for the server's answer"
STORED = """() => Object.keys(localStorage).filter((k) => k.startsWith("chemin:pending:"))
  .map((k) => JSON.parse(localStorage.getItem(k)))"""


def _betting(make_game, page_for, *, timeout_ms: int | None = None, locks: bool = True):
    game = make_game("venezia")
    coup = services.coup_open(session=game.session, by=game.capo)
    page = page_for(game.capo, "portrait")
    if timeout_ms:
        page.context.add_init_script(f"window.cheminSendTimeoutMs = {timeout_ms};")
    if not locks:
        page.context.add_init_script("delete Navigator.prototype.locks;")
    url = f"{page.base}/tablet/sessions/{game.session.pk}/"
    page.goto(url)
    assert page.evaluate("!!(navigator.locks && navigator.locks.request)") is locks
    return game, coup, page, url


def _another_tab(page, url):
    other = page.context.new_page()
    other.problems = []
    other.on("console", lambda m: m.type == "error" and other.problems.append(m.text))
    other.on("pageerror", lambda e: other.problems.append(str(e)))
    other.goto(url)
    return other





def _reports(*tabs) -> list[str]:
    """What the tabs reported of the entries they sent, all together."""
    return [text for tab in tabs for text in tab.locator("#queue-report li").all_inner_texts()]


def _problems(page, *expected: str) -> list[str]:
    # htmx logs each failed, timed-out or failing send itself; the browser the posts the
    # network dropped, and the answers in error the test makes.
    noise = ("ERR_INTERNET_DISCONNECTED", "ERR_CONNECTION_RESET", "ERR_FAILED", *expected)
    return [p for p in page.problems if not p.startswith("htmx:") and not any(n in p for n in noise)]


def test_an_entry_the_server_failed_on_after_its_answer_was_lost_is_kept_not_confirmed(
    make_game, page_for, shoot
):
    """Row 2's bet reaches the server and is recorded, but its answer is lost; sent again, the
    server fails (500). That does not say the bet was not recorded (here it was): the tablet
    says it is not confirmed and to check the table before entering it again, keeps it (not
    sent by itself), and sends it again, with its key, when the croupier asks: the stored
    answer comes back, and there is one bet."""
    game, coup, page, _ = _betting(make_game, page_for)
    key = _key(page, game, 2)
    posts = []
    mode = {"resend": "fail"}

    def server(route):
        posts.append(route.request.post_data or "")
        if len(posts) == 1:
            route.fetch()  # the server records it...
            route.abort("connectionreset")  # ... and the answer never arrives
        elif mode["resend"] == "fail":
            route.fulfill(status=500, content_type="text/html", body="<h1>Server Error (500)</h1>")
        else:
            route.continue_()

    page.route("**/bet/", server)
    _row(page, game, 2).get_by_role("button", name="€\xa0100").click()
    held = page.locator("#queue-held")
    expect(held).to_contain_text(f"{_label(game, 2)}: NOT CONFIRMED", timeout=20_000)
    expect(held).to_contain_text("error 500")
    expect(held).to_contain_text("Check the table before entering it again")
    shoot(page, "tablet-queue-not-confirmed")
    report = page.locator("#queue-report")
    expect(report).to_be_hidden()  # never "NOT recorded"
    expect(page.locator("#unavailable")).to_be_hidden()  # nor "your last entry was not made"
    expect(page.locator("#pending")).to_be_hidden()  # not sent by itself: it is his decision
    assert Bet.objects.filter(coup=coup).count() == 1
    page.wait_for_timeout(1500)
    assert len(posts) == 2, posts
    (entry,) = page.evaluate(STORED)
    assert entry["key"] == key and entry["unconfirmed"] == {"status": 500}
    # He checks the table, cannot tell: he sends it again from the list.
    mode["resend"] = "pass"
    held.get_by_role("button", name="Send it again").click()
    expect(report.locator("li.ok")).to_contain_text(f"{_label(game, 2)}: sent", timeout=20_000)
    expect(report.locator("li.ok")).to_contain_text("already recorded: the same answer again")
    expect(report.locator("li")).to_have_count(1)
    expect(held).to_be_hidden()
    assert len(posts) == 3 and all(f"idempotency_key={key}" in body for body in posts), posts
    assert Bet.objects.filter(coup=coup).count() == 1
    assert IdempotencyKey.objects.filter(key=key, completed=True).count() == 1
    assert page.evaluate(STORED) == []
    assert _problems(page, "status of 500", "Error Code 500") == [], "\n".join(page.problems)


def test_an_entry_not_confirmed_may_be_discarded(make_game, page_for):
    """The server fails on row 2's bet sent again after the network lost it: kept not
    confirmed; the croupier finds it on the table (or enters it by hand) and discards it:
    it leaves the device and is not sent again."""
    game, coup, page, _ = _betting(make_game, page_for)
    posts = []

    def server(route):
        posts.append(route.request.post_data or "")
        if len(posts) == 1:
            route.abort("internetdisconnected")
        else:
            route.fulfill(status=500, content_type="text/html", body="<h1>Server Error (500)</h1>")

    page.route("**/bet/", server)
    _row(page, game, 2).get_by_role("button", name="€\xa0100").click()
    held = page.locator("#queue-held")
    expect(held).to_contain_text(f"{_label(game, 2)}: NOT CONFIRMED", timeout=20_000)
    expect(page.locator("#queue-report")).to_be_hidden()
    held.get_by_role("button", name="Discard this entry").click()
    expect(held).to_be_hidden()
    assert page.evaluate(STORED) == []
    page.wait_for_timeout(1000)
    assert len(posts) == 2
    page.reload()
    expect(page.locator("#queue-held")).to_be_hidden()
    assert not Bet.objects.filter(coup=coup).exists()


@pytest.mark.parametrize("locks", [True, False], ids=["web-locks", "no-web-locks"])
def test_an_entry_on_its_way_is_said_to_wait_for_the_answer_in_every_tab(make_game, page_for, locks):
    """Two tabs on the table; row 2's bet, tapped offline, is sent once the network is back,
    and its answer is slow to come: both tabs say it was sent and waits for the server's
    answer (not only the one sending it), and neither sends it again meanwhile. Answered, it
    leaves both lists, reported once."""
    game, coup, page, url = _betting(make_game, page_for, timeout_ms=8000, locks=locks)
    other = _another_tab(page, url)
    key = _key(page, game, 2)
    page.context.set_offline(True)
    _row(page, game, 2).get_by_role("button", name="€\xa0100").click()
    for tab in (page, other):
        expect(tab.locator("#pending")).to_contain_text("1 entry waiting for the network")
    held = []
    page.context.route("**/bet/", lambda route: held.append(route))
    page.context.set_offline(False)
    for tab in (page, other):
        expect(tab.locator("#pending li")).to_have_text(
            f"{_label(game, 2)}: {SLOW}. Do not enter it again: without an answer it is sent again by itself, "
            "and recorded once."
        )  # fmt: skip
    assert len(held) == 1
    held[0].continue_()
    page.context.unroute("**/bet/")
    for tab in (page, other):
        expect(tab.locator("#pending")).to_be_hidden(timeout=20_000)
    _until(page, lambda: _reports(page, other), "a report")
    page.wait_for_timeout(500)
    reports = _reports(page, other)
    assert len(reports) == 1 and reports[0].startswith(f"{_label(game, 2)}: sent"), reports
    assert Bet.objects.get(coup=coup).patron == game.seat(2)
    assert IdempotencyKey.objects.filter(key=key, completed=True).count() == 1
    for tab in (page, other):
        assert _problems(tab) == [], "\n".join(tab.problems)


def test_a_reloaded_tab_still_says_its_entry_waits_for_the_answer_and_sends_it_again(make_game, page_for):
    """Row 2's bet is sent once the network is back, and no answer comes; the tab is reloaded
    meanwhile (the send is cut off), and the network drops again. The reloaded tab still says
    the entry was sent and waits for the server's answer (it may have reached it: not to be
    entered again), through the failures; once the server answers, it is entered once, with
    its one key, and reported sent."""
    game, coup, page, _ = _betting(make_game, page_for, timeout_ms=8000)
    key = _key(page, game, 2)
    page.context.set_offline(True)
    _row(page, game, 2).get_by_role("button", name="€\xa0100").click()
    expect(page.locator("#pending")).to_contain_text("1 entry waiting for the network")
    posts, held = [], []
    mode = {"now": "hold"}

    def network(route):
        posts.append(route.request.post_data or "")
        if mode["now"] == "hold":
            held.append(route)  # no answer, ever
        elif mode["now"] == "down":
            route.abort("internetdisconnected")
        else:
            route.continue_()

    page.route("**/bet/", network)
    page.context.set_offline(False)
    pending = page.locator("#pending li")
    expect(pending).to_contain_text(f"{_label(game, 2)}: {SLOW}")
    assert len(held) == 1
    mode["now"] = "down"
    page.reload()
    expect(pending).to_contain_text(f"{_label(game, 2)}: {SLOW}")
    _until(page, lambda: len(posts) >= 3, "the reloaded tab sending it again (and failing)")
    expect(pending).to_contain_text(f"{_label(game, 2)}: {SLOW}")  # a network failure does not unsay it
    assert not Bet.objects.filter(coup=coup).exists()
    mode["now"] = "pass"
    report = page.locator("#queue-report")
    expect(report.locator("li.ok")).to_contain_text(f"{_label(game, 2)}: sent", timeout=20_000)
    expect(report.locator("li")).to_have_count(1)
    expect(page.locator("#pending")).to_be_hidden()
    assert all(f"idempotency_key={key}" in body for body in posts), posts
    assert Bet.objects.get(coup=coup).patron == game.seat(2)
    assert IdempotencyKey.objects.filter(key=key, completed=True).count() == 1
    assert page.evaluate(STORED) == []
    assert _problems(page) == [], "\n".join(page.problems)


def test_an_entry_two_tabs_sent_without_web_locks_is_reported_once(make_game, page_for):
    """Without Web Locks, a tab may send an entry another tab is sending (it missed the
    other's lease and flight: its view of the storage lagged; here both are removed under the
    first tab's feet). Both get an answer (the second the stored one: one bet); the entry is
    reported once, in one of the tabs."""
    game, coup, page, url = _betting(make_game, page_for, timeout_ms=10_000, locks=False)
    other = _another_tab(page, url)
    key = _key(page, game, 2)
    page.context.set_offline(True)
    _row(page, game, 2).get_by_role("button", name="€\xa0100").click()
    for tab in (page, other):
        expect(tab.locator("#pending")).to_contain_text("1 entry waiting for the network")
    held = []
    page.context.route("**/bet/", lambda route: held.append(route))
    page.context.set_offline(False)
    _until(page, lambda: len(held) == 1, "one tab sending the entry")
    # What the second tab would see if the first one's writes had not reached it yet.
    page.evaluate(
        """() => Object.keys(localStorage).forEach((k) => {
          if (k.startsWith("chemin:sending:")) { localStorage.removeItem(k); }
          if (k.startsWith("chemin:pending:")) {
            const e = JSON.parse(localStorage.getItem(k));
            delete e.flight;
            localStorage.setItem(k, JSON.stringify(e));
          }
        })"""
    )
    _until(page, lambda: len(held) == 2, "the other tab sending it too", seconds=8)
    assert {r.request.frame.page for r in held} == {page, other}
    for route in held:  # both at once: the second waits on the first's key, then replays it
        route.continue_()
    page.context.unroute("**/bet/")
    for tab in (page, other):
        expect(tab.locator("#pending")).to_be_hidden(timeout=20_000)
    _until(page, lambda: _reports(page, other), "a report")
    page.wait_for_timeout(1000)
    reports = _reports(page, other)
    assert len(reports) == 1 and reports[0].startswith(f"{_label(game, 2)}: sent"), reports
    assert all(f"idempotency_key={key}" in (route.request.post_data or "") for route in held)
    assert Bet.objects.get(coup=coup).patron == game.seat(2)
    assert IdempotencyKey.objects.filter(key=key, completed=True).count() == 1
    for tab in (page, other):
        assert tab.evaluate(STORED) == []
        assert _problems(tab) == [], "\n".join(tab.problems)


def test_a_tap_slow_to_be_answered_is_said_to_wait_in_every_tab(make_game, page_for):
    """Row 2's bet, tapped in one tab, is slow to be answered (another transaction holds the
    table session): the other tab on the table says it was sent and waits for the server's
    answer too (the entry is kept in the queue as on its way, and not sent from there). Once
    answered, it leaves both lists; its answer shows in the panel tapped, as a tap's does."""
    from django.db import transaction

    from floor.models import TableSession

    game, coup, page, url = _betting(make_game, page_for, timeout_ms=8000)
    other = _another_tab(page, url)
    key = _key(page, game, 2)
    posts = []
    page.context.on("request", lambda r: r.method == "POST" and r.url.endswith("/bet/") and posts.append(r))
    with transaction.atomic():
        TableSession.objects.select_for_update().get(pk=game.session.pk)
        _row(page, game, 2).get_by_role("button", name="€\xa0100").click()
        expect(page.locator("#result")).to_contain_text(f"{_label(game, 2)}: {SLOW}")
        for tab in (page, other):
            expect(tab.locator("#pending li")).to_contain_text(f"{_label(game, 2)}: {SLOW}")
        other.wait_for_timeout(500)
        assert len(posts) == 1  # the other tab does not send it meanwhile
    expect(page.locator("#result")).to_contain_text(f"Bet recorded: {game.seat(2).full_name}", timeout=20_000)
    for tab in (page, other):
        expect(tab.locator("#pending")).to_be_hidden()
        assert tab.evaluate(STORED) == []
    page.wait_for_timeout(500)
    assert len(posts) == 1
    assert _reports(page, other) == []
    assert Bet.objects.get(coup=coup).patron == game.seat(2)
    assert IdempotencyKey.objects.filter(key=key, completed=True).count() == 1
    for tab in (page, other):
        assert _problems(tab) == [], "\n".join(tab.problems)


def test_a_tap_on_its_way_when_the_tab_is_reloaded_is_kept_and_sent_again(make_game, page_for):
    """Row 2's bet is tapped and the tab reloaded at once, its answer not come (the server
    holds it: another transaction holds the table session). The post may have arrived (here
    it did): the reloaded tab lists the entry as sent and waiting for the server's answer,
    and sends it again with its key; once the server is free the bet is entered once and the
    entry reported sent (the stored answer)."""
    from django.db import transaction

    from floor.models import TableSession

    game, coup, page, _ = _betting(make_game, page_for, timeout_ms=8000)
    key = _key(page, game, 2)
    posts = []
    page.on("request", lambda r: r.method == "POST" and r.url.endswith("/bet/") and posts.append(r))
    with transaction.atomic():
        TableSession.objects.select_for_update().get(pk=game.session.pk)
        _row(page, game, 2).get_by_role("button", name="€\xa0100").click()
        _until(page, lambda: posts, "the tap on its way")
        page.reload()
        expect(page.locator("#pending li")).to_contain_text(f"{_label(game, 2)}: {SLOW}")
        _until(page, lambda: len(posts) >= 2, "the reloaded tab sending it again")
        assert not Bet.objects.filter(coup=coup).exists()
    report = page.locator("#queue-report")
    expect(report.locator("li.ok")).to_contain_text(f"{_label(game, 2)}: sent", timeout=20_000)
    expect(report.locator("li")).to_have_count(1)
    expect(page.locator("#pending")).to_be_hidden()
    assert all(f"idempotency_key={key}" in (r.post_data or "") for r in posts)
    assert Bet.objects.get(coup=coup).patron == game.seat(2)
    assert IdempotencyKey.objects.filter(key=key, completed=True).count() == 1
    assert page.evaluate(STORED) == []
    assert _problems(page) == [], "\n".join(page.problems)


def test_a_tap_the_server_failed_on_after_recording_it_is_kept_not_confirmed(make_game, page_for):
    """Row 2's bet tapped: the server records it, then fails making the panel (a 500 after the
    commit). The tablet does not say "not made": it keeps the bet aside NOT CONFIRMED, sends
    nothing by itself, and sends it again with its key when the croupier asks; the stored
    answer comes back, and there is one bet."""
    game, coup, page, _ = _betting(make_game, page_for)
    key = _key(page, game, 2)
    posts = []

    def server(route):
        posts.append(route.request.post_data or "")
        if len(posts) == 1:
            route.fetch()  # recorded...
            route.fulfill(status=500, content_type="text/html", body="<h1>Server Error (500)</h1>")
        else:
            route.continue_()

    page.route("**/bet/", server)
    _row(page, game, 2).get_by_role("button", name="€\xa0100").click()
    held = page.locator("#queue-held")
    expect(held).to_contain_text(f"{_label(game, 2)}: NOT CONFIRMED", timeout=20_000)
    expect(held).to_contain_text("error 500")
    expect(page.locator("#unavailable")).to_be_hidden()  # never "your last entry was not made"
    expect(page.locator("#pending")).to_be_hidden()
    page.wait_for_timeout(1500)
    assert len(posts) == 1 and Bet.objects.filter(coup=coup).count() == 1
    (entry,) = page.evaluate(STORED)
    assert entry["key"] == key and entry["unconfirmed"] == {"status": 500} and not entry.get("flight")
    held.get_by_role("button", name="Send it again").click()
    report = page.locator("#queue-report")
    expect(report.locator("li.ok")).to_contain_text("already recorded: the same answer again", timeout=20_000)
    expect(held).to_be_hidden()
    assert len(posts) == 2 and all(f"idempotency_key={key}" in body for body in posts), posts
    assert Bet.objects.filter(coup=coup).count() == 1
    assert page.evaluate(STORED) == []
    assert _problems(page, "status of 500", "Error Code 500") == [], "\n".join(page.problems)


def test_a_tap_the_server_failed_on_tapped_again_leaves_the_list(make_game, page_for):
    """Row 2's bet tapped: the server fails before recording it (a 500). Kept aside NOT
    CONFIRMED; the croupier, seeing no bet on the table, taps the same button again (the form
    kept its key): the bet is recorded once and the entry kept aside leaves the list."""
    game, coup, page, _ = _betting(make_game, page_for)
    key = _key(page, game, 2)
    posts = []

    def server(route):
        posts.append(route.request.post_data or "")
        if len(posts) == 1:
            route.fulfill(status=500, content_type="text/html", body="<h1>Server Error (500)</h1>")
        else:
            route.continue_()

    page.route("**/bet/", server)
    _row(page, game, 2).get_by_role("button", name="€\xa0100").click()
    held = page.locator("#queue-held")
    expect(held).to_contain_text(f"{_label(game, 2)}: NOT CONFIRMED", timeout=20_000)
    assert not Bet.objects.filter(coup=coup).exists()
    assert _key(page, game, 2) == key  # the form stays as tapped
    _row(page, game, 2).get_by_role("button", name="€\xa0100").click()
    expect(page.locator("#result")).to_contain_text("Bet recorded", timeout=20_000)
    expect(held).to_be_hidden()
    assert page.evaluate(STORED) == []
    assert len(posts) == 2 and all(f"idempotency_key={key}" in body for body in posts), posts
    assert Bet.objects.filter(coup=coup).count() == 1
    assert _problems(page, "status of 500", "Error Code 500") == [], "\n".join(page.problems)


def test_an_entry_answered_by_a_tab_gone_before_reporting_it_is_sent_again_and_reported(make_game, page_for):
    """An entry marked answered by a tab that was closed (or discarded) before it removed and
    reported it: the mark is stale. The table's page does not leave the entry unseen in the
    device for ever (other pages would keep saying it waits) nor drop it without a word: it
    sends it again with its key and reports what the server answers."""
    game, coup, page, url = _betting(make_game, page_for)
    key = _key(page, game, 2)
    page.context.set_offline(True)
    _row(page, game, 2).get_by_role("button", name="€\xa0100").click()
    expect(page.locator("#pending")).to_contain_text("1 entry waiting for the network")
    page.evaluate(
        """() => Object.keys(localStorage).forEach((k) => {
          if (k.startsWith("chemin:pending:")) {
            const e = JSON.parse(localStorage.getItem(k));
            e.answered = { tab: "a-tab-gone", at: Date.now() - 60000 };
            localStorage.setItem(k, JSON.stringify(e));
          }
        })"""
    )
    context = page.context
    page.close()  # the table's page opened again later, the network back
    context.set_offline(False)
    page = _another_tab(page, url)
    report = page.locator("#queue-report")
    expect(report.locator("li.ok")).to_contain_text(f"{_label(game, 2)}: sent", timeout=20_000)
    expect(report.locator("li")).to_have_count(1)
    assert Bet.objects.get(coup=coup).patron == game.seat(2)
    assert IdempotencyKey.objects.filter(key=key, completed=True).count() == 1
    assert page.evaluate(STORED) == []
    assert _problems(page) == [], "\n".join(page.problems)


def _row_2_kept_on_its_way(page, game, posts: list[str] | None = None) -> list:
    """Row 2's bet tapped with its post held (the list returned holds the route, to be
    answered); later bets go on to the server; `posts` collects every bet's body. Returns
    once the tablet says the tap is slow and has kept it in the queue."""
    held: list = []

    def server(route):
        if posts is not None:
            posts.append(route.request.post_data or "")
        if not held:
            held.append(route)
        else:
            route.continue_()

    page.route("**/bet/", server)
    _row(page, game, 2).get_by_role("button", name="€\xa0100").click()
    expect(page.locator("#result")).to_contain_text(f"{_label(game, 2)}: {SLOW}")
    _until(page, lambda: page.evaluate(STORED), "the tap kept in the queue")
    return held


def test_a_tap_kept_on_its_way_then_answered_by_the_login_redirect_stays_queued(make_game, page_for):
    """Row 2's bet is slow to be answered: the tablet keeps it and says not to enter it again.
    The answer is the login redirect (the session expired meanwhile: nothing was entered).
    The entry is not dropped with that answer: it stays queued, and the table's page sends it
    once he is back (here at once), with its key: one bet, reported sent."""
    game, coup, page, url = _betting(make_game, page_for, timeout_ms=12_000)
    key = _key(page, game, 2)
    posts: list[str] = []
    held = _row_2_kept_on_its_way(page, game, posts)
    held[0].fulfill(status=200, headers={"HX-Redirect": url}, content_type="text/html", body="")
    report = page.locator("#queue-report")
    expect(report.locator("li.ok")).to_contain_text(f"{_label(game, 2)}: sent", timeout=20_000)
    assert len(posts) == 2 and all(f"idempotency_key={key}" in body for body in posts), posts
    assert Bet.objects.get(coup=coup).patron == game.seat(2)
    assert page.evaluate(STORED) == []
    assert _problems(page) == [], "\n".join(page.problems)


def test_entries_behind_a_kept_tap_the_server_failed_on_go_at_once(make_game, page_for):
    """Row 2's bet is slow to be answered (kept, on its way); row 3's, tapped meanwhile, waits
    behind it. Row 2's answer is a 500: row 2 is kept aside NOT CONFIRMED, and row 3's bet is
    sent at once, not once row 2's flight would have expired (its send's timeout and more)."""
    game, coup, page, _ = _betting(make_game, page_for, timeout_ms=12_000)
    held = _row_2_kept_on_its_way(page, game)
    _row(page, game, 3).get_by_role("button", name="€\xa0100").click()
    expect(page.locator("#pending")).to_contain_text(_label(game, 3))
    page.wait_for_timeout(500)  # the queue has seen row 2 on its way: row 3 waits behind it
    held[0].fulfill(status=500, content_type="text/html", body="<h1>Server Error (500)</h1>")
    expect(page.locator("#queue-held")).to_contain_text(f"{_label(game, 2)}: NOT CONFIRMED")
    row_3 = Bet.objects.filter(coup=coup, patron=game.seat(3))
    _until(page, row_3.exists, "row 3's bet sent", seconds=4)
    expect(page.locator("#queue-report li.ok")).to_contain_text(f"{_label(game, 3)}: sent")
    assert not Bet.objects.filter(coup=coup, patron=game.seat(2)).exists()
    assert _problems(page, "status of 500", "Error Code 500") == [], "\n".join(page.problems)

