"""The tablet's queue when the server does not answer: a post whose answer never comes (a
stalled server, a half-open connection on a flaky Wi-Fi) is given up after the send timeout
(shortened to 1 s here by window.cheminSendTimeoutMs), kept first in the queue with its key,
said to wait for the server's answer, and sent again; the entries behind it follow in order,
and each is entered once."""

from __future__ import annotations

import pytest
from django.db import transaction
from playwright.sync_api import expect

from floor.models import IdempotencyKey, TableSession
from tables import services
from tables.models import Bet

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TIMEOUT_MS = 1000
SLOW = "waiting for the server's answer"
# Without Web Locks: every write and removal of the send lease, and every send given up, in
# the order they happened ([what, when, until]).
LEASE_LOG = """(() => {
  const log = window.leaseLog = [];
  const set = Storage.prototype.setItem, remove = Storage.prototype.removeItem;
  const isLease = (k) => String(k).startsWith("chemin:sending:");
  Storage.prototype.setItem = function (k, v) {
    if (isLease(k)) { log.push(["take", Date.now(), JSON.parse(v).until]); }
    return set.call(this, k, v);
  };
  Storage.prototype.removeItem = function (k) {
    if (isLease(k)) { log.push(["drop", Date.now()]); }
    return remove.call(this, k);
  };
  document.addEventListener("htmx:timeout", () => log.push(["timeout", Date.now()]));
})();"""


def _betting(make_game, page_for, *, locks: bool = True):
    game = make_game("venezia")
    coup = services.coup_open(session=game.session, by=game.capo)
    page = page_for(game.capo, "portrait")
    page.context.add_init_script(f"window.cheminSendTimeoutMs = {TIMEOUT_MS};")
    if not locks:
        page.context.add_init_script("delete Navigator.prototype.locks;")
        page.context.add_init_script(LEASE_LOG)
    page.goto(f"{page.base}/tablet/sessions/{game.session.pk}/")
    assert page.evaluate("window.cheminSendTimeoutMs") == TIMEOUT_MS
    assert page.evaluate("!!(navigator.locks && navigator.locks.request)") is locks
    return game, coup, page


def _row(page, game, seat):
    return page.locator("form.bet-row", has_text=game.seat(seat).full_name)


def _key(page, game, seat) -> str:
    return _row(page, game, seat).locator("input[name=idempotency_key]").get_attribute("value")


def _label(game, seat) -> str:
    return f"Bet of {game.seat(seat).full_name}: €\xa0100"


def _problems(page) -> list[str]:
    # htmx logs each failed or timed-out send itself (htmx:sendError, htmx:timeout,
    # htmx:afterRequest), and the browser the post the network dropped: expected here.
    return [p for p in page.problems if "ERR_INTERNET_DISCONNECTED" not in p and not p.startswith("htmx:")]


@pytest.mark.parametrize("locks", [True, False], ids=["web-locks", "no-web-locks"])
def test_a_resend_with_no_answer_is_given_up_and_sent_again_in_order(make_game, page_for, shoot, locks):
    """Row 2's bet is lost by the network and row 3's waits behind it. The server never
    answers row 2's first resend: the tablet gives it up after the timeout, says the entry
    waits for the server's answer, lets the send lock (or, without Web Locks, the lease) go,
    and sends it again with the same key; then row 3's. Each is entered once, in order, and
    reported sent."""
    game, coup, page = _betting(make_game, page_for, locks=locks)
    keys = {2: _key(page, game, 2), 3: _key(page, game, 3)}
    posts = []  # the body of every bet post, in the order the tablet made them
    held = []  # the posts left without an answer (never passed on to the server)
    network = {"back": False}

    def flaky(route):
        posts.append(route.request.post_data or "")
        if not network["back"]:
            route.abort("internetdisconnected")  # the tap, and any resend before row 3's tap
        elif not held:
            held.append(route)  # the first resend once the network is back: no answer, ever
        else:
            route.continue_()

    page.route("**/bet/", flaky)
    _row(page, game, 2).get_by_role("button", name="€\xa0100").click()
    pending = page.locator("#pending")
    expect(pending).to_contain_text("1 entry waiting for the network")
    _row(page, game, 3).get_by_role("button", name="€\xa0100").click()
    expect(pending).to_contain_text("2 entries waiting for the network")
    network["back"] = True
    # The first resend hangs: the list says row 2 is on its way and waits for the answer.
    expect(pending.locator("li").first).to_contain_text(f"{_label(game, 2)}: sent, {SLOW}")
    expect(pending.locator("li").first).to_contain_text("Do not enter it again")
    expect(pending.locator("li").nth(1)).to_have_text(_label(game, 3))
    assert len(held) == 1
    shoot(page, "tablet-queue-waiting-for-the-answer")
    assert not Bet.objects.filter(coup=coup).exists()
    expect(pending).to_be_hidden(timeout=20_000)
    report = page.locator("#queue-report")
    expect(report.locator("li.ok")).to_have_count(2)
    expect(report.locator("li").first).to_contain_text(f"{_label(game, 2)}: sent")
    expect(report.locator("li").nth(1)).to_contain_text(f"{_label(game, 3)}: sent")
    expect(report.locator("li.err")).to_have_count(0)
    bets = list(Bet.objects.filter(coup=coup).order_by("order"))
    assert [b.patron for b in bets] == [game.seat(2), game.seat(3)]
    assert all(b.amount == 100_00 for b in bets)
    # Row 2 was tried with its one key until answered (the resend held among the tries),
    # then row 3 once with its own.
    assert len(posts) >= 4, posts
    assert all(f"idempotency_key={keys[2]}" in body for body in posts[:-1]), posts
    assert f"idempotency_key={keys[3]}" in posts[-1]
    for key in keys.values():
        assert IdempotencyKey.objects.filter(key=key, completed=True).count() == 1
    if not locks:
        # The lease was taken for one send at a time, for its timeout and a margin (not the
        # minutes the browser would wait); the send given up let it go before the next try,
        # and the last answer let it go.
        # The last answer lets the lease go once its entry is reported: wait for it.
        # (the page's CSP forbids wait_for_function's eval: poll)
        for _ in range(50):
            log = page.evaluate("window.leaseLog")
            if log[-1][0] == "drop":
                break
            page.wait_for_timeout(100)
        takes = [e for e in log if e[0] == "take"]
        assert takes and all(until - at <= TIMEOUT_MS + 5000 for _, at, until in takes), log
        timeouts = [i for i, e in enumerate(log) if e[0] == "timeout"]
        assert len(timeouts) == 1 and log[timeouts[0] + 1][0] == "drop", log
        assert log[-1][0] == "drop", log
    assert _problems(page) == [], "\n".join(page.problems)


def _until(page, condition, what: str, seconds: float = 15) -> None:
    """Waits (in the page's time, so its events go on) until `condition()` holds (the page's
    CSP forbids wait_for_function's eval: poll)."""
    for _ in range(int(seconds * 10)):
        if condition():
            return
        page.wait_for_timeout(100)
    raise AssertionError(f"never: {what}")


def _waiting_on_locks() -> int:
    """How many of the live server's database sessions wait on a lock."""
    from django.db import connection

    with connection.cursor() as cursor:
        # Inside a transaction PostgreSQL shows the activity as first read in it: read it anew.
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0]


def test_a_resend_while_the_first_post_is_still_processed_gets_its_answer(make_game, page_for):
    """The server takes row 2's bet but is slow to finish it (another transaction holds its
    table session): the tablet gives the post up after the timeout and sends it again with the
    same key while the first is still being processed. The server holds that resend on the
    key until the first finishes, then answers it with the first's answer: the entry is kept
    meanwhile (never reported NOT recorded), said to wait for the server's answer, then
    reported sent, and entered once."""
    game, coup, page = _betting(make_game, page_for)
    key = _key(page, game, 2)
    posts, given_up = [], []

    def is_resend(r):
        return r.method == "POST" and r.url.endswith("/bet/") and "x-chemin-queued" in r.headers

    page.on("request", lambda r: r.method == "POST" and r.url.endswith("/bet/") and posts.append(r))
    page.on("requestfailed", lambda r: is_resend(r) and given_up.append(r))
    pending = page.locator("#pending")
    with transaction.atomic():
        TableSession.objects.select_for_update().get(pk=game.session.pk)
        _row(page, game, 2).get_by_role("button", name="€\xa0100").click()
        expect(pending.locator("li")).to_have_count(1)
        expect(pending.locator("li")).to_contain_text(f"{_label(game, 2)}: sent, {SLOW}")
        # ... and where the tap's outcome shows, so that he does not tap it again
        expect(page.locator("#result")).to_contain_text(f"{_label(game, 2)}: sent, {SLOW}")
        # The first post waits on the session, a resend with its key waits on the first.
        _until(page, lambda: _waiting_on_locks() >= 2, "a resend in flight beside the first post")
        _until(page, lambda: given_up, "a resend given up")
        assert not Bet.objects.filter(coup=coup).exists()
        expect(pending.locator("li")).to_contain_text(SLOW)
        expect(page.locator("#queue-report li.err")).to_have_count(0)
    # The lock goes: the first post is entered; the resend waiting on its key, or the next
    # one, gets its answer.
    report = page.locator("#queue-report")
    expect(report.locator("li.ok")).to_contain_text(f"{_label(game, 2)}: sent", timeout=20_000)
    expect(report.locator("li.ok")).to_contain_text("already recorded: the same answer again")
    expect(report.locator("li.err")).to_have_count(0)
    expect(pending).to_be_hidden()
    assert len(posts) >= 2 and all(f"idempotency_key={key}" in (r.post_data or "") for r in posts)
    bet = Bet.objects.get(coup=coup)
    assert (bet.patron, bet.amount) == (game.seat(2), 100_00)
    assert IdempotencyKey.objects.filter(key=key, completed=True).count() == 1
    assert _problems(page) == [], "\n".join(page.problems)
