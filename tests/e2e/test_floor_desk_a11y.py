"""The Commissario's floor and the auditors' and the Direzione's desk at 1280x800 and on a
tablet (1024x768 in landscape, 768x1024 held upright: managers on the floor carry one too), by
touch, in English and Italian: the checks of tests/e2e/a11y.py (targets of 44x44 px and apart,
none overlapping another, names, labels, no overflow, headings, contrast, the page's
language)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.utils.text import slugify
from playwright.sync_api import expect

from audit.models import DayReport
from audit.reports import registers
from audit.tasks import report_build
from floor import services as floor_services
from floor.roles import Role
from tests.e2e.a11y import audit, lang_of, logged_in_page

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SIZES = {
    "desktop": {"width": 1280, "height": 800},
    "landscape": {"width": 1024, "height": 768},
    "portrait": {"width": 768, "height": 1024},
}


@pytest.fixture
def open_as(browser, live_server, client):
    contexts = []

    def make(user, lang: str):
        return logged_in_page(browser, live_server, client, contexts, user, lang,
                              viewport=SIZES["desktop"], has_touch=True)  # fmt: skip

    yield make
    for context in contexts:
        context.close()


def problems(page, where: str, lang: str, shoot=None) -> list[str]:
    """What the audit finds in the page at each size; `shoot`: a screenshot at each too, to
    look at (test-artifacts/screenshots/)."""
    found = []
    for name, size in SIZES.items():
        page.set_viewport_size(size)
        if shoot:
            shoot(page, slugify(f"a11y {where} {name} {lang}"))
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
    found = problems(page, "the floor", lang)
    if found:
        pytest.fail("\n".join(found), pytrace=False)


def test_the_floor_before_the_day_opens(open_as, site, commissario):
    page = open_as(commissario, "en")
    page.goto(page.base + "/floor/")
    found = problems(page, "the floor, no day open", "en")
    if found:
        pytest.fail("\n".join(found), pytrace=False)


def closed_day(make_game, settings, tmp_path):
    """A day played at one table, closed, its first report built."""
    settings.MEDIA_ROOT = tmp_path / "media"
    game = make_game("venezia")
    day = game.session.gaming_day
    floor_services.gaming_day_close(gaming_day=day, by=game.commissario, open_sessions="close")
    report_build.delay(day.pk)
    return day


@pytest.mark.parametrize("lang", ["en", "it"])
def test_the_desk_by_touch(make_game, open_as, shoot, auditor, direzione, settings, tmp_path, lang):
    day = closed_day(make_game, settings, tmp_path)
    found = []
    for user in (auditor, direzione):
        page = open_as(user, lang)
        for url in ("/desk/", f"/desk/days/{day.pk}/", "/desk/verify/", "/desk/events/",
                    f"/desk/events/?stream=gaming_day%3A{day.pk}&page_size=10", "/desk/events/?actor=x"):
            page.goto(page.base + url)
            found += problems(page, f"{url} as {user.username}", lang, shoot)
    if found:
        pytest.fail("\n".join(found), pytrace=False)


@pytest.mark.parametrize("lang", ["en", "it"])
def test_the_desk_s_books_and_verifications_by_touch(
    make_game, open_as, shoot, auditor, direzione, make_user, settings, tmp_path, lang
):
    """The day's page past its first state: a count entered and being corrected, the register
    with one signature (the second one the signer may not give), then signed by two and behind
    a corrected count (its correction's form), a report whose file was changed failing its
    verification (the findings listed), and the whole trail verified."""
    day = closed_day(make_game, settings, tmp_path)
    count = registers.cagnotte_count_record(gaming_day=day, table=day.sessions.get().table, by=direzione,
                                            witness=auditor, counted=12_50, note="the box of table one")  # fmt: skip
    register = registers.control_register_prepare(gaming_day=day, by=direzione)
    registers.control_register_sign(register=register, by=direzione)
    page = open_as(direzione, lang)
    page.goto(f"{page.base}/desk/days/{day.pk}/")
    page.locator("details.tool summary").first.tap()  # "Correct this count": its form checked too
    found = problems(page, "the day, one signature", lang, shoot)

    registers.control_register_sign(register=register, by=make_user("direzione_two", Role.DIREZIONE))
    registers.cagnotte_count_correct(
        count=count, by=direzione, witness=auditor, counted=13_00, note="recounted"
    )
    report = DayReport.objects.get(gaming_day=day, version=1)
    stored = Path(settings.MEDIA_ROOT) / report.files.get(format="csv").path
    stored.write_bytes(stored.read_bytes() + b"changed\n")
    page.goto(f"{page.base}/desk/days/{day.pk}/")
    page.locator(f"#report-{report.pk} form button").tap()
    expect(page.locator(f"#verified-{report.pk} .verify-result.err")).to_be_visible()
    found += problems(page, "the day, a signed register behind, a verification failed", lang, shoot)

    page.goto(page.base + "/desk/verify/")
    page.locator("main form button").tap()
    expect(page.locator("#trail-result .verify-result")).to_be_visible()
    found += problems(page, "the trail verified", lang, shoot)
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


# a field and the button under it: 8 px apart (156 px), or the button up over the field (130 px)
OVERLAPPING = """<!doctype html><html lang="en"><head><title>t</title><style>
  body { margin: 0; font: 16px sans-serif; }
  input, button { position: absolute; left: 16px; box-sizing: border-box; height: 48px; width: 16rem;
                  touch-action: manipulation; }
  input { top: 100px; } button { top: %dpx; }
</style></head><body><main><h1>Books</h1>
  <label for="counted">Counted (euros)</label><input id="counted">
  <button>Write the control register</button>
</main></body></html>"""


@pytest.mark.parametrize("top", [156, 130], ids=["apart", "over"])
def test_the_audit_says_when_two_controls_overlap(browser, top):
    """The desk's field ran over the register's button on a tablet held upright: the audit's
    spacing check names two controls that overlap, as it names two too close."""
    context = browser.new_context(viewport=SIZES["portrait"], has_touch=True)
    try:
        page = context.new_page()
        page.set_content(OVERLAPPING % top)
        found = audit(page)
    finally:
        context.close()
    overlap = 'targets overlap: input#counted "" / button "Write the control register"'
    assert found == ([] if top == 156 else [overlap])


@pytest.mark.parametrize("lang", ["en", "it"])
def test_the_unclaimed_deposits_on_the_desk_by_touch(
    make_game, open_as, commissario, direzione, settings, tmp_path, lang
):
    """The day's unclaimed stakes and winnings (RULES.md §6): the Commissario's form to record
    one, a deposit outstanding with its "Hand it back" form opened, one handed back; then the
    Direzione's reading of the same section."""
    from audit.reports import unclaimed

    day = closed_day(make_game, settings, tmp_path)
    session = day.sessions.get()
    kept = unclaimed.unclaimed_deposit_record(session=session, by=commissario, kind="winnings", amount=1_500_50,
                                              deposited_in="envelope 12", note="left on the table")  # fmt: skip
    back = unclaimed.unclaimed_deposit_record(session=session, by=commissario, kind="stake", amount=200_00,
                                              deposited_in="receipt 7")  # fmt: skip
    unclaimed.unclaimed_deposit_return(deposit=back, by=direzione, returned_to="Giulia Zanetti")
    found = []
    page = open_as(commissario, lang)
    page.goto(f"{page.base}/desk/days/{day.pk}/")
    expect(page.locator("section.unclaimed")).to_contain_text("envelope 12")
    page.locator("section.unclaimed details:has(form.return-form) summary").first.tap()
    found += problems(page, "the unclaimed deposits as the Commissario", lang)
    assert not kept.returned
    page = open_as(direzione, lang)
    page.goto(f"{page.base}/desk/days/{day.pk}/")
    found += problems(page, "the unclaimed deposits as the Direzione", lang)
    if found:
        pytest.fail("\n".join(found), pytrace=False)
