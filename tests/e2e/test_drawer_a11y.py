"""A closed session's drawer as the Commissario reads it on a tablet (1024x768 in landscape,
768x1024 held upright), by touch, in English and Italian: the count in force and the table of
the counts it corrected, chips figures included, checked as tests/e2e/a11y.py says (targets
of 44x44 px and apart, names, labels, no overflow, headings, contrast, the page's language)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from floor import services as floor_services
from tables import services
from tests.e2e.a11y import audit, lang_of, logged_in_page
from tests.e2e.conftest import VIEWPORTS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def touch_page(browser, live_server, client):
    contexts = []

    def make(user, lang: str):
        return logged_in_page(browser, live_server, client, contexts, user, lang,
                              viewport=VIEWPORTS["landscape"], has_touch=True, is_mobile=True)  # fmt: skip

    yield make
    for context in contexts:
        context.close()


def _walked(page, shoot, shot: str, lang: str, where: str = "") -> list[str]:
    """The page at both tablet sizes: a screenshot and what tests/e2e/a11y.py finds at each, then
    its language; the findings, each naming where."""
    found = []
    for name, size in VIEWPORTS.items():
        page.set_viewport_size(size)
        shoot(page, f"{shot}-{name}-{lang}")
        found += [f"{where}{name}, {lang}: {p}" for p in audit(page)]
    if lang_of(page) != lang:
        found.append(f"{where}<html lang={lang_of(page)!r}> in a page in {lang!r}")
    return found


@pytest.mark.parametrize("lang", ["en", "it"])
def test_the_corrected_counts_with_their_chips_by_touch(make_game, touch_page, shoot, changeur, commissario, lang):
    """Three counts: the first without the chips, the second with them (a large tray, its
    figures at their widest), the third in force. The table of the two corrected ones carries
    the chips' columns, and the page still fits the tablet either way it is held."""
    game = make_game("venezia")
    services.cash_exchange_record(session=game.session, by=changeur, direction="buy_in", amount=999_999_99,
                                  patron=game.seat(2))  # fmt: skip
    floor_services.table_session_close(session=game.session, by=commissario)
    first = services.cash_count_record(session=game.session, by=commissario, float_issued=1_000_000_00,
                                       counted=999_999_99, note="slip 12")  # fmt: skip
    second = services.cash_count_correct(count=first, by=commissario, counted=0, chips_float=0,
                                         chips_counted=999_999_99, reason="the tray counted too")  # fmt: skip
    services.cash_count_correct(count=second, by=commissario, counted=1_000_000_00,
                                reason="a plaque under the tray, recounted by the Direzione")  # fmt: skip
    page = touch_page(commissario, lang)
    page.goto(f"{page.base}/tablet/sessions/{game.session.pk}/")
    table = page.locator("table.drawer-counts")
    expect(table.locator("tbody")).to_have_count(2)  # the two corrected counts, each its cash and chips rows
    expect(table.locator("tbody tr.chips-row")).to_have_count(2)
    expect(table.locator("tbody").nth(1).locator("tr.chips-row del")).to_be_visible()
    found = _walked(page, shoot, "drawer-counts", lang)
    if found:
        pytest.fail("\n".join(found), pytrace=False)


@pytest.mark.parametrize("lang", ["en", "it"])
def test_a_handover_s_count_with_its_chips_by_touch(make_game, touch_page, shoot, changeur, commissario, make_user,
                                                    lang):  # fmt: skip
    """A changeur relieved while the session runs, his drawer counted at the handover with its
    chips, at their widest, and corrected: the handover's panel carries the chips' block and the
    corrected count's chips row, and the running session's page still fits the tablet."""
    from floor.models import StaffChange
    from floor.roles import Role

    game = make_game("venezia")
    services.cash_exchange_record(session=game.session, by=changeur, direction="buy_in", amount=999_999_99,
                                  patron=game.seat(2))  # fmt: skip
    floor_services.table_session_staff_change(session=game.session, by=commissario,
                                              changeur=make_user("changeur_relief", Role.CHANGEUR), reason="break")  # fmt: skip
    change = StaffChange.objects.get(session=game.session)
    first = services.cash_count_record(session=game.session, by=commissario, float_issued=1_000_000_00,
                                       counted=999_999_99, chips_float=1_000_000_00, chips_counted=0,
                                       staff_change=change)  # fmt: skip
    services.cash_count_correct(count=first, by=commissario, counted=1_000_000_00, chips_counted=999_999_99,
                                reason="a plaque under the tray, recounted by the Direzione")  # fmt: skip
    page = touch_page(commissario, lang)
    page.goto(f"{page.base}/tablet/sessions/{game.session.pk}/")
    panel = page.locator(f"section.handover[aria-labelledby=handover-title-{change.pk}]")
    expect(panel.locator("dl.drawer-chips dt")).to_have_count(5)
    expect(panel.locator("table.drawer-counts tbody tr.chips-row del")).to_be_visible()
    found = _walked(page, shoot, "handover-chips", lang)
    if found:
        pytest.fail("\n".join(found), pytrace=False)


@pytest.mark.parametrize("lang", ["en", "it"])
def test_the_floor_s_drawers_left_to_count_by_touch(make_game, touch_page, shoot, commissario, lang):
    """The day closed with two drawers not counted: the floor lists them, each link a touch
    target apart from the next, and fits the tablet either way it is held."""
    games = [make_game("venezia"), make_game("venezia")]
    for game in games:
        floor_services.table_session_close(session=game.session, by=commissario)
    floor_services.gaming_day_close(gaming_day=games[0].session.gaming_day, by=commissario, open_sessions="refuse")
    page = touch_page(commissario, lang)
    page.goto(f"{page.base}/floor/")
    expect(page.locator("section.drawers-late ul.drawer-links a")).to_have_count(2)
    found = _walked(page, shoot, "floor-drawers-late", lang)
    if found:
        pytest.fail("\n".join(found), pytrace=False)
    page.locator("section.drawers-late ul.drawer-links a").first.tap()
    expect(page.locator("form.drawer-form")).to_have_count(1)  # the late count, offered


@pytest.mark.parametrize("lang", ["en", "it"])
def test_the_handovers_not_counted_on_the_floor_and_the_desk_by_touch(make_game, touch_page, shoot, commissario,
                                                                      direzione, make_user, lang):  # fmt: skip
    """Two changeurs relieved at one table and one at another, no handover counted: the floor
    lists the three, and each table's card links its own, the desk's day page names them under
    each session's drawer (one counted since, its differences at their widest), each link a
    touch target apart from the next, and both pages fit the tablet either way it is held."""
    from floor.models import StaffChange
    from floor.roles import Role

    games = [make_game("venezia"), make_game("venezia")]
    for n, game in enumerate((games[0], games[0], games[1])):
        floor_services.table_session_staff_change(session=game.session, by=commissario, reason="break",
                                                  changeur=make_user(f"relief_{n}", Role.CHANGEUR))  # fmt: skip
    found = []
    page = touch_page(commissario, lang)
    page.goto(f"{page.base}/floor/")
    expect(page.locator("section.handovers-uncounted ul.handover-links a")).to_have_count(3)
    expect(page.locator("article.table-card ul.card-handovers a")).to_have_count(3)
    found += _walked(page, shoot, "floor-handovers", lang, "floor, ")
    page.locator("section.handovers-uncounted ul.handover-links a").first.tap()
    expect(page.locator("section.handover form.drawer-form").first).to_be_visible()  # its count's form
    for game in games:
        floor_services.table_session_close(session=game.session, by=commissario)
    day = games[0].session.gaming_day
    floor_services.gaming_day_close(gaming_day=day, by=commissario, open_sessions="refuse")
    services.cash_count_record(session=games[1].session, by=commissario, float_issued=999_999_99, counted=0,
                               chips_float=0, chips_counted=999_999_99,
                               staff_change=StaffChange.objects.get(session=games[1].session))  # fmt: skip
    desk = touch_page(direzione, lang)
    desk.goto(f"{desk.base}/desk/days/{day.pk}/")
    expect(desk.locator("td.drawer a.handover-uncounted")).to_have_count(2)
    expect(desk.locator("td.drawer a.handover-counted")).to_have_count(1)
    found += _walked(desk, shoot, "desk-handovers", lang, "desk, ")
    if found:
        pytest.fail("\n".join(found), pytrace=False)


@pytest.mark.parametrize("lang", ["en", "it"])
def test_the_floor_s_closed_sessions_by_touch(make_game, touch_page, shoot, commissario, lang):
    """The day's closed sessions on the floor, each a link to its drawer: the links were running
    text (23 px high) under the Commissario's thumb. Each is a touch target apart from the next."""
    for _ in range(2):
        floor_services.table_session_close(session=make_game("venezia").session, by=commissario)
    page = touch_page(commissario, lang)
    page.goto(f"{page.base}/floor/")
    links = page.locator("ul.closed-drawers li a")
    expect(links).to_have_count(2)
    found = []
    for name, size in VIEWPORTS.items():
        page.set_viewport_size(size)
        shoot(page, f"floor-closed-sessions-{name}-{lang}")
        boxes = [links.nth(i).bounding_box() for i in range(2)]
        found += [f"{name}, {lang}: link {i} is {box['height']} px high" for i, box in enumerate(boxes)
                  if box["height"] < 44]  # fmt: skip
        if boxes[1]["y"] < boxes[0]["y"] + boxes[0]["height"]:
            found.append(f"{name}, {lang}: the links overlap")
        found += [f"{name}, {lang}: {p}" for p in audit(page)]
    if found:
        pytest.fail("\n".join(found), pytrace=False)
