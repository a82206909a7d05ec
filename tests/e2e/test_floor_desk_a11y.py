"""The Commissario's floor and the auditors' and the Direzione's desk at 1280x800 (and the
landscape tablet's 1024x768; the floor at 768x1024 too), by touch, in English and Italian: the checks of
tests/e2e/a11y.py (targets of 44x44 px and apart, names, labels, no overflow, headings,
contrast, the page's language)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from audit.tasks import report_build
from floor import services as floor_services
from tests.e2e.a11y import audit, lang_of, logged_in_page

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SIZES = {"desktop": {"width": 1280, "height": 800}, "landscape": {"width": 1024, "height": 768}}
# the floor on a tablet held upright too: its table drawings' seats are touch targets
FLOOR_SIZES = {**SIZES, "portrait": {"width": 768, "height": 1024}}


@pytest.fixture
def open_as(browser, live_server, client):
    contexts = []

    def make(user, lang: str):
        return logged_in_page(browser, live_server, client, contexts, user, lang,
                              viewport=SIZES["desktop"], has_touch=True)  # fmt: skip

    yield make
    for context in contexts:
        context.close()


def problems(page, where: str, lang: str, sizes: dict = SIZES) -> list[str]:
    found = []
    for name, size in sizes.items():
        page.set_viewport_size(size)
        found += [f"{where} ({name}, {lang}): {p}" for p in audit(page)]
    if lang_of(page) != lang:
        found.append(f"{where}: <html lang={lang_of(page)!r}> in a page in {lang!r}")
    return found


@pytest.mark.parametrize("lang", ["en", "it"])
def test_the_floor_by_touch(make_game, open_as, site, direzione, commissario, lang):
    make_game("venezia")
    make_game("venezia", seats=9, seated=9, bank=None)  # the Grande Tavolo, every seat drawn taken
    floor_services.table_create(casino=site.casino, site=site, number=7, by=direzione, seats=9)
    page = open_as(commissario, lang)
    page.goto(page.base + "/floor/")
    page.locator("details.tool summary").first.tap()  # a tool opened: its form is checked too
    found = problems(page, "the floor", lang, FLOOR_SIZES)
    if found:
        pytest.fail("\n".join(found), pytrace=False)


def test_the_floor_before_the_day_opens(open_as, site, commissario):
    page = open_as(commissario, "en")
    page.goto(page.base + "/floor/")
    found = problems(page, "the floor, no day open", "en", FLOOR_SIZES)
    if found:
        pytest.fail("\n".join(found), pytrace=False)


@pytest.mark.parametrize("lang", ["en", "it"])
def test_the_desk_by_touch(make_game, open_as, auditor, direzione, settings, tmp_path, lang):
    settings.MEDIA_ROOT = tmp_path / "media"
    game = make_game("venezia")
    day = game.session.gaming_day
    floor_services.gaming_day_close(gaming_day=day, by=game.commissario, open_sessions="close")
    report_build.delay(day.pk)
    found = []
    for user in (auditor, direzione):
        page = open_as(user, lang)
        for url in ("/desk/", f"/desk/days/{day.pk}/", "/desk/verify/"):
            page.goto(page.base + url)
            found += problems(page, f"{url} as {user.username}", lang)
    if found:
        pytest.fail("\n".join(found), pytrace=False)


def test_a_refusal_on_a_table_card_is_where_the_focus_goes(make_game, open_as, commissario):
    """A table card is swapped whole by its answer, its outcome with it: a live region put in
    the page with its words is not read out (it must be there before they change), so a
    Commissario with a screen reader heard nothing of a refused limit. As on the tablet, the
    focus goes to the card's outcome, which is read."""
    game = make_game("venezia")
    page = open_as(commissario, "en")
    page.goto(page.base + "/floor/")
    card = page.locator(f"#table-{game.session.table.pk}")
    card.get_by_label("New minimum (euros)").fill("not an amount")
    card.get_by_label("Reason (told to the players)").fill("Saturday evening")
    card.get_by_role("button", name="Change the limits").tap()
    outcome = page.locator(f"#table-{game.session.table.pk} .outcome.err")
    expect(outcome).to_be_visible()
    expect(outcome).to_be_focused()
