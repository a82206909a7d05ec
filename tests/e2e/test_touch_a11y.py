"""The tablet as the Capo Partita meets it: standing, by touch, in English or Italian, on a
landscape (1024x768) or portrait (768x1024) tablet. A real session is walked through its
coups (the first bank, the bets and a refusal, rien ne va plus, the cards, the Regola and a
reconstruction, the result, the succession, the asta), and at every step the page is checked as
tests/e2e/a11y.py says: targets of 44x44 px and apart, names, labels, no overflow, the
headings, the contrast, and the page's language."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tables import services
from tables.models import Succession
from tests.e2e.a11y import audit, focus_rings, lang_of, logged_in_page
from tests.e2e.conftest import VIEWPORTS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PUNTA_WINS = ["7H", "6S", "KH", "KD"]  # punta 7 v banker 6, both stand
BANKER_WINS = ["KH", "5S", "3C", "2D", "2S"]  # punta 3 draws a 2 -> 5; banker 7 stands


@pytest.fixture
def touch_page(browser, live_server, client):
    """`touch_page(user, lang)`: a page on a touch tablet (has_touch, is_mobile), logged in
    as `user`, the language chosen as the header's switch chooses it (its cookie)."""
    contexts = []

    def make(user, lang: str):
        page = logged_in_page(browser, live_server, client, contexts, user, lang,
                              viewport=VIEWPORTS["landscape"], has_touch=True, is_mobile=True)  # fmt: skip
        page.problems = []
        page.on("pageerror", lambda e: page.problems.append(str(e)))
        return page

    yield make
    for context in contexts:
        context.close()


KEYS_IN_REACH_JS = """(selector) => {
    window.scrollTo(0, 0);
    const keys = Array.from(document.querySelectorAll(selector));
    if (!keys.length) return selector + ': none on the page';
    return keys.map((k) => {
      const box = k.getBoundingClientRect();
      return box.top >= 0 && Math.round(box.bottom) <= innerHeight ? '' : selector + ' "' + (k.getAttribute('aria-label') || k.textContent.trim())
        + '" ends at ' + Math.round(box.bottom) + ' px in a window ' + innerHeight + ' px tall';
    }).filter(Boolean).join('\\n');
}"""


class Walk:
    """The problems met along the way, by step and viewport, said all at once at the end."""

    def __init__(self, lang: str):
        self.lang = lang
        self.found: list[str] = []

    def check(self, page, step: str):
        for name, size in VIEWPORTS.items():
            page.set_viewport_size(size)
            self.found += [f"{step} ({name}, {self.lang}): {p}" for p in audit(page)]
            if page.locator("form.picker").count():  # a card asked: every key on the screen
                far = page.evaluate(KEYS_IN_REACH_JS, "form.picker label.key, form.picker button.key")
                self.found += [f"{step} ({name}, {self.lang}): {p}" for p in far.splitlines()]
        page.set_viewport_size(VIEWPORTS["landscape"])
        if lang_of(page) != self.lang:
            self.found.append(f"{step}: <html lang={lang_of(page)!r}> in a page in {self.lang!r}")


def post(page, action: str, button: str = "button", *, within=None):
    """Tap the submit button of the tablet's form for `action`, and wait for its answer."""
    scope = within if within is not None else page
    before = page.locator("#tablet").get_attribute("data-queue")
    with page.expect_response(lambda r: r.url.endswith(f"/{action}/") and r.request.method == "POST"):
        scope.locator(f"form[action$='/{action}/'] {button}").first.tap()
    expect(page.locator("#tablet")).to_have_attribute("data-queue", before)
    expect(page.locator("#tablet form.htmx-request")).to_have_count(0)


def card(page, code: str):
    rank, suit = code[:-1], code[-1]
    page.locator(f"form.picker label[for$='-rank-{rank}']").tap()
    post(page, page.locator("form.picker").get_attribute("action").rstrip("/").rsplit("/", 1)[1],
         f"button[name=suit][value={suit}]")


@pytest.mark.parametrize("lang", ["en", "it"])
def test_the_tablet_by_touch_through_a_session(make_game, touch_page, lang):
    walk = Walk(lang)
    first = make_game("venezia", bank=None)
    page = touch_page(first.capo, lang)
    page.goto(page.base + "/tablet/")
    walk.check(page, "the tablet's list")
    page.goto(f"{page.base}/tablet/sessions/{first.session.pk}/")
    walk.check(page, "the first bank")

    game = make_game("venezia")
    page = touch_page(game.capo, lang)
    page.goto(f"{page.base}/tablet/sessions/{game.session.pk}/")
    walk.check(page, "the next coup")
    banker = page.locator("table.players tr", has_text=game.banker.full_name)
    post(page, "regola", within=banker)
    post(page, "coup-open")
    walk.check(page, "the bets")
    row = page.locator(".bettors li", has_text=game.seat(3).full_name)
    row.locator("input[name=amount]").fill("99999")
    post(page, "bet", "button[value=custom]", within=row)
    expect(page.locator("#result.err")).to_be_visible()
    walk.check(page, "a refused bet")
    row = page.locator(".bettors li", has_text=game.seat(2).full_name)
    post(page, "bet", "button[value=banco]", within=row)
    post(page, "rien-ne-va-plus")
    walk.check(page, "the cards")
    for code in ("2S", "KH", "3C", "3D"):
        card(page, code)
    walk.check(page, "the punta's declaration")
    post(page, "punta", "button[value=false]")
    walk.check(page, "the banker's decision")
    post(page, "banker-stand")
    walk.check(page, "the reconstruction")
    card(page, "5H")
    expect(page.locator(".result")).to_be_visible()
    walk.check(page, "the result")

    third = make_game("venezia")
    services.coup_record(session=third.session, by=third.capo, cards=PUNTA_WINS, punta_draws=False,
                         bets=[{"patron": third.seat(2), "amount": 100_00}])
    page = touch_page(third.capo, lang)
    page.goto(f"{page.base}/tablet/sessions/{third.session.pk}/")
    expect(page.locator("#succession")).to_be_visible()
    walk.check(page, "the succession")

    fourth = make_game("venezia")
    services.coup_record(session=fourth.session, by=fourth.capo, cards=BANKER_WINS, punta_draws=True,
                         bets=[{"patron": fourth.seat(2), "amount": 100_00}])
    fourth.bank.refresh_from_db()
    services.bank_withdraw(bank=fourth.bank, by=fourth.capo)
    succession = Succession.objects.get(session=fourth.session)
    for patron in [fourth.seat(n) for n in range(2, 9)] + fourth.standing:
        services.offer_pass(succession=succession, by=fourth.capo, patron=patron)
    page = touch_page(fourth.capo, lang)
    page.goto(f"{page.base}/tablet/sessions/{fourth.session.pk}/")
    walk.check(page, "nobody took the bank")
    post(page, "auction-open")
    walk.check(page, "the asta")
    page.locator("#bid-patron").select_option(str(fourth.standing[0].pk))
    post(page, "auction-bid", "button[value=minimum]")
    expect(page.locator("table.bids tbody tr")).to_have_count(1)
    walk.check(page, "the asta, a bid made")
    if walk.found:
        pytest.fail("\n".join(walk.found), pytrace=False)
    assert page.problems == [], "\n".join(page.problems)


def test_the_focus_ring_is_seen_on_every_control(make_game, touch_page):
    """The yellow ring alone (#f0b429) is 1.9:1 on the white panels: a keyboard user (a
    switch, a Bluetooth keyboard at the table) lost the focus. Each control focused in turn
    has a ring of 3:1 at least against what is around it (WCAG 1.4.11)."""
    game = make_game("venezia")
    page = touch_page(game.capo, "en")
    page.goto(f"{page.base}/tablet/sessions/{game.session.pk}/")
    post(page, "coup-open")
    page.reload()  # from the top: the skip link, the header, the bets
    faint = [(what, best) for what, best in focus_rings(page, 60) if best < 3]
    assert faint == []


def test_a_control_being_sent_is_still_legible(make_game, touch_page):
    """While a tap is being sent its form's buttons are disabled (hx-disabled-elt) and the
    form is marked htmx-request: at opacity .6 their text fell to 3:1 (the green on white)
    and 2.9:1 (white on the green), on a tablet under the room's lights. Each form of the
    bets, in that state, keeps its text at 4.5:1."""
    game = make_game("venezia")
    page = touch_page(game.capo, "en")
    page.goto(f"{page.base}/tablet/sessions/{game.session.pk}/")
    post(page, "coup-open")
    page.evaluate("""() => document.querySelectorAll('#tablet form').forEach((form) => {
        form.classList.add('htmx-request');
        form.querySelectorAll('button').forEach((b) => { b.disabled = true; });
    })""")
    faint = [p for p in audit(page) if p.startswith("contrast")]
    assert faint == []


IN_REACH_JS = """(selector) => {
    window.scrollTo(0, 0);
    const box = document.querySelector(selector).getBoundingClientRect();
    return box.top >= 0 && Math.round(box.bottom) <= innerHeight ? '' : selector + ' ends at ' + Math.round(box.bottom)
      + ' px in a window ' + innerHeight + ' px tall';
}"""


@pytest.mark.parametrize(
    ("size", "lang"),
    [
        ({"width": 1024, "height": 768}, "en"),
        ({"width": 1024, "height": 768}, "it"),
        ({"width": 1280, "height": 800}, "it"),
        ({"width": 768, "height": 1024}, "it"),
    ],
)
def test_the_coup_s_next_tap_is_in_reach_without_scrolling(make_game, touch_page, size, lang):
    """From the top of the page, the control the coup waits for is on the screen: rien ne va
    plus under eight bettors' rows (it was 1 400 px down, under every row), the card
    picker's suits (their bottom row was under the fold at 1024x768), the punta's carte or
    non, the banker's stand."""
    game = make_game("venezia")
    page = touch_page(game.capo, lang)
    page.set_viewport_size(size)
    page.goto(f"{page.base}/tablet/sessions/{game.session.pk}/")
    out = [page.evaluate(IN_REACH_JS, "form[action$='/coup-open/'] button")]
    post(page, "coup-open")
    out.append(page.evaluate(IN_REACH_JS, "form[action$='/rien-ne-va-plus/'] button"))
    post(page, "bet", "button[value=banco]", within=page.locator(".bettors li", has_text=game.seat(2).full_name))
    post(page, "rien-ne-va-plus")
    out.append(page.evaluate(IN_REACH_JS, "form.picker fieldset.suits"))
    for code in ("2S", "KH", "3C", "3D"):
        card(page, code)
    out.append(page.evaluate(IN_REACH_JS, "form.choice"))
    post(page, "punta", "button[value=false]")
    out.append(page.evaluate(IN_REACH_JS, "form[action$='/banker-stand/'] button"))
    far = [o for o in out if o]
    if far:
        pytest.fail("\n".join(far), pytrace=False)


def test_a_bettor_s_buttons_are_named_with_his_name(make_game, touch_page):
    """Eight rows of "€ 100", "½ € 500", "the rest", "Banco", "Bet": read out one by one, a
    screen reader said the amounts and never whose row they were in. Each row's buttons are
    a group named by its player."""
    game = make_game("venezia")
    page = touch_page(game.capo, "en")
    page.goto(f"{page.base}/tablet/sessions/{game.session.pk}/")
    post(page, "coup-open")
    for patron in (*game.seated[1:], *game.standing):
        groups = page.get_by_role("group", name=patron.full_name, exact=False)
        expect(groups.get_by_role("button", name="Banco", exact=True)).to_have_count(1)
        expect(groups.get_by_role("button", name="Bet", exact=True)).to_have_count(1)


@pytest.mark.parametrize("lang", ["en", "it"])
def test_a_refused_page_s_way_out_is_a_touch_target(make_game, touch_page, lang):
    """A tap on a page gone stale (its form's token rotated by a new login) is refused in
    place of the page, with "Reload the page": a bare 23 px link (its class "button" was
    styled nowhere), like the 404's "Back to the start page". Both are 44 px targets."""
    game = make_game("venezia")
    page = touch_page(game.capo, lang)
    page.goto(f"{page.base}/tablet/sessions/{game.session.pk}/")
    page.evaluate("() => document.querySelectorAll('input[name=csrfmiddlewaretoken]').forEach((i) => { i.value = 'x'.repeat(64); })")
    with page.expect_response(lambda r: r.url.endswith("/coup-open/")):
        page.locator("form[action$='/coup-open/'] button").tap()
    expect(page.locator("main a.button.primary")).to_be_visible()
    found = [f"the stale page: {p}" for p in audit(page)]
    page.goto(f"{page.base}/tablet/no-such-page/")
    found += [f"the 404: {p}" for p in audit(page)]
    if found:
        pytest.fail("\n".join(found), pytrace=False)




PICKER_SIZES = pytest.mark.parametrize(
    ("size", "lang"),
    [
        ({"width": 1024, "height": 768}, "en"),
        ({"width": 1024, "height": 768}, "it"),
        ({"width": 1280, "height": 800}, "en"),
        ({"width": 1280, "height": 800}, "it"),
        ({"width": 768, "height": 1024}, "en"),
        ({"width": 768, "height": 1024}, "it"),
    ],
)


def to_the_banker_s_decision(game, page, cards=("2S", "KH", "3C", "3D")):
    """The banker alla Regola; seat 2 calls banco; 2S KH 3C 3D; the punta says non: the
    banker (3) draws, by the Regola (with 3C 6D he (6) stands, and drawing is against it)."""
    page.goto(f"{page.base}/tablet/sessions/{game.session.pk}/")
    post(page, "regola", within=page.locator("table.players tr", has_text=game.banker.full_name))
    post(page, "coup-open")
    post(page, "bet", "button[value=banco]", within=page.locator(".bettors li", has_text=game.seat(2).full_name))
    post(page, "rien-ne-va-plus")
    for code in cards:
        card(page, code)
    post(page, "punta", "button[value=false]")


def keys_in_reach(page, step: str) -> list[str]:
    out = [page.evaluate(KEYS_IN_REACH_JS, "form.picker label.key, form.picker button.key")]
    out += [f"{step}: {p}" for p in audit(page) if p.startswith(("target", "the page is"))]
    return [o for o in out if o]


def _fail_unless_the_banker_s_keys_are_in_reach(page) -> None:
    """"Banker stands" and every key of his third card's picker on the screen."""
    far = [page.evaluate(KEYS_IN_REACH_JS, "form[action$='/banker-stand/'] button")]
    far = [o for o in far if o] + keys_in_reach(page, "the banker's decision")
    if far:
        pytest.fail("\n".join(far), pytrace=False)


@PICKER_SIZES
def test_the_banker_s_third_card_is_in_reach(make_game, touch_page, size, lang):
    """The banker's decision: "Banker stands" and every key of his third card's picker on the
    screen from the top of the page (the suits ended at 961 px at 1024x768, 902 px at
    1280x800), each still a 44 px target 8 px from the next."""
    game = make_game("venezia")
    page = touch_page(game.capo, lang)
    page.set_viewport_size(size)
    to_the_banker_s_decision(game, page)
    _fail_unless_the_banker_s_keys_are_in_reach(page)


@PICKER_SIZES
def test_the_banker_s_third_card_is_in_reach_under_a_warning(make_game, touch_page, size, lang):
    """The banker alla Regola on 6, the punta having stood: drawing is against the Regola, and
    the warning that says so sits beside the prompt, the picker's suits still on the screen
    (they ended at 800 px at 1024x768 with the warning on a line of its own)."""
    game = make_game("venezia")
    page = touch_page(game.capo, lang)
    page.set_viewport_size(size)
    to_the_banker_s_decision(game, page, ("2S", "KH", "3C", "6D"))
    expect(page.locator(".nonconforming-note")).to_be_visible()
    _fail_unless_the_banker_s_keys_are_in_reach(page)


@PICKER_SIZES
def test_the_reconstruction_s_card_is_in_reach(make_game, touch_page, size, lang):
    """The banker alla Regola stood where the Regola draws: the reconstruction asks for the
    next card of the sabot. Every key of its picker is on the screen from the top of the
    page (the suits ended at 913 px at 1024x768), each a 44 px target 8 px from the next."""
    game = make_game("venezia")
    page = touch_page(game.capo, lang)
    page.set_viewport_size(size)
    to_the_banker_s_decision(game, page)
    post(page, "banker-stand")
    expect(page.locator("form[action$='/reconstruction-card/']")).to_be_visible()
    far = keys_in_reach(page, "the reconstruction")
    if far:
        pytest.fail("\n".join(far), pytrace=False)


@pytest.mark.parametrize(("lang", "words"), [("en", "½ banco"), ("it", "½ banco")])
def test_the_half_banco_says_what_it_is(make_game, touch_page, lang, words):
    """"½ € 500" carried its meaning (banco avec la table, half the bank) in a title only,
    which no tablet shows and a screen reader may not read: the button says "½ banco" on
    the screen and in its name, and its row still fits the screen."""
    game = make_game("venezia")
    page = touch_page(game.capo, lang)
    page.goto(f"{page.base}/tablet/sessions/{game.session.pk}/")
    post(page, "coup-open")
    half = page.locator(".bettors button[value=half]")
    expect(half.first).to_be_visible()
    for n in range(half.count()):
        expect(half.nth(n)).to_have_accessible_name(f"{words} €\xa0500")
        expect(half.nth(n)).to_have_text(f"{words} €\xa0500")
    wide = [p for p in audit(page) if "wide in a" in p or p.startswith("target")]
    assert wide == []


@PICKER_SIZES
def test_the_reconstruction_s_second_card_is_in_reach(make_game, touch_page, size, lang):
    """The punta (seat 2) and the banker alla Regola; 2S KH 2C 3D; the punta says non on 4 and
    the banker stands on 3, both against the Regola: the reconstruction gives the punta the
    next card, then the banker his. With
    the first card entered (its line and the hands so far above the picker) every key of the
    picker asking the second is on the screen from the top of the page."""
    game = make_game("venezia")
    page = touch_page(game.capo, lang)
    page.set_viewport_size(size)
    page.goto(f"{page.base}/tablet/sessions/{game.session.pk}/")
    post(page, "regola", within=page.locator("table.players tr", has_text=game.seat(2).full_name))
    to_the_banker_s_decision(game, page, ("2S", "KH", "2C", "3D"))
    post(page, "banker-stand")
    expect(page.locator("form[action$='/reconstruction-card/']")).to_be_visible()
    card(page, "4H")
    expect(page.locator("form[action$='/reconstruction-card/'] input[name=expect_cards]")).to_have_value("1")
    far = keys_in_reach(page, "the reconstruction's second card")
    if far:
        pytest.fail("\n".join(far), pytrace=False)


@pytest.mark.parametrize("lang", ["en", "it"])
def test_the_changeur_s_register_by_touch(make_game, touch_page, changeur, commissario, lang):
    """The changeur's register on his tablet (the session's changeur): the form, a quick amount
    and a typed one tapped in, a refusal at the identification threshold, a line's void form
    opened; then the Commissario's reading with its voids."""
    walk = Walk(lang)
    game = make_game("venezia")
    page = touch_page(changeur, lang)
    page.goto(f"{page.base}/tablet/sessions/{game.session.pk}/")
    expect(page.locator("form.cash-form")).to_be_visible()
    walk.check(page, "the changeur's register")
    post(page, "cash-exchange", "button[name=quick_cents]")
    expect(page.locator("table.cash-lines tbody tr")).to_have_count(1)
    page.locator("#cash-amount").fill("2500")
    post(page, "cash-exchange", "span.custom button")
    expect(page.locator("#result.err")).to_be_visible()  # unnamed at the threshold: refused
    walk.check(page, "the register, an exchange refused at the threshold")
    page.locator("#cash-patron").select_option(str(game.seat(2).pk))
    page.locator("#cash-amount").fill("2500")
    post(page, "cash-exchange", "span.custom button")
    expect(page.locator("table.cash-lines tbody tr")).to_have_count(2)
    page.locator("table.cash-lines details.tool summary").first.tap()
    walk.check(page, "the register, two lines, a void form opened")
    page = touch_page(commissario, lang)
    page.goto(f"{page.base}/tablet/sessions/{game.session.pk}/")
    walk.check(page, "the register as the Commissario reads it")
    if walk.found:
        pytest.fail("\n".join(walk.found), pytrace=False)
    assert page.problems == [], "\n".join(page.problems)
