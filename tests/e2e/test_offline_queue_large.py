"""A large typed amount queued offline: sent again once the network is back, the server asks
before entering it (409, large_amount_unconfirmed: nothing written). The queue said it was NOT
recorded, with the question's words, and the croupier had to type it again and confirm. It now
keeps it in its place, with the question and the panel's confirmation (the same button, in the
same words: the amount it enters), for him to confirm (recorded once, under the confirmation's
new key) or discard (nothing written)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from audit.models import AuditEvent
from floor.models import IdempotencyKey
from tables.models import Bank, RegolaMark
from tests.e2e.a11y import MIN_TARGET, audit

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

STORED = """() => Object.keys(localStorage).filter((k) => k.startsWith("chemin:pending:"))
  .map((k) => JSON.parse(localStorage.getItem(k)))"""
NNBSP = "\u202f"  # the thousands' separator of the amounts the pages write

# What the pages say, in each language: the question and its button are the panel's own.
WORDS = {
    "en": {
        "open": "Open the bank",
        "pending": "1 entry waiting for the network",
        "pending2": "2 entries waiting for the network",
        "asked": "Open the bank: NOT recorded yet. Sent once the network was back, the server asks before recording it:",
        "question": f"Open a bank of €\xa0100{NNBSP}000.00 for {{name}}? That is 100 times the minimum.",
        "yes": f"Yes, open the bank at €\xa0100{NNBSP}000.00",
        "discard": "Discard this entry",
        "sent": "Open the bank: sent once the network was back. Bank opened: {name}.",
    },
    "it": {
        "open": "Apri il banco",
        "pending": "1 inserimento in attesa della rete",
        "pending2": "2 inserimenti in attesa della rete",
        "asked": "Apri il banco: NON ancora registrato. Inviato al ritorno della rete, il server chiede conferma "
        "prima di registrarlo:",
        "question": f"Aprire un banco di €\xa0100{NNBSP}000,00 per {{name}}? Sono 100 volte il minimo.",
        "yes": f"Sì, apri il banco a €\xa0100{NNBSP}000,00",
        "discard": "Scarta questo inserimento",
        "sent": "Apri il banco: inviato al ritorno della rete. Banco aperto: {name}.",
    },
}


def _tablet(make_game, page_for, lang: str = "en"):
    """A table with no bank yet (minimum € 1,000), its tablet in `lang`; the posts of
    bank-open that reached the server and came back, kept in page.posts."""
    game = make_game("venezia", bank=None, minimum=1000_00)
    page = page_for(game.capo, "portrait")
    page.goto(f"{page.base}/tablet/sessions/{game.session.pk}/")
    if lang != "en":
        page.get_by_label("Language").select_option(lang)
        page.get_by_role("button", name="Change").click()
        expect(page.locator("html")).to_have_attribute("lang", lang)
    page.posts = []
    page.on(
        "requestfinished",
        lambda r: (
            r.method == "POST" and r.url.endswith("/bank-open/") and page.posts.append(r.post_data or "")
        ),
    )
    return game, page


def _asked_offline(game, page, words, *, then_regola: int | None = None):
    """Offline, a bank of 100 times the minimum is typed (and, with `then_regola`, that seat's
    player marked alla Regola after it); back online, the queue sends it and the server asks:
    the queue shows the question. Returns the first key and the entry kept."""
    key = page.locator("form:has(#bank-amount) input[name=idempotency_key]").get_attribute("value")
    page.context.set_offline(True)
    page.locator("#bank-amount").fill("100000")
    page.get_by_role("button", name=words["open"], exact=True).click()
    expect(page.locator("#pending")).to_contain_text(words["pending"])
    if then_regola:
        patron = game.seat(then_regola).pk
        page.locator(f"table.players form:has(input[name=patron][value='{patron}'])").get_by_role(
            "button"
        ).click()
        expect(page.locator("#pending")).to_contain_text(words["pending2"])
    page.context.set_offline(False)
    held = page.locator("#queue-held")
    name = game.seat(1).full_name
    expect(held).to_contain_text(words["asked"], timeout=20_000)
    expect(held).to_contain_text(words["question"].format(name=name))
    # asked, not refused: never "NOT recorded" in the report, and not sent again by itself
    if then_regola:
        # Like a refused entry (and one not confirmed), the question does not hold back the
        # entries behind it: the mark is sent and recorded meanwhile.
        expect(page.locator("#queue-report li")).to_have_count(1, timeout=20_000)
        expect(page.locator("#queue-report li.ok")).to_have_count(1)
        assert RegolaMark.objects.get(session=game.session, patron=game.seat(then_regola)).declared
    else:
        expect(page.locator("#queue-report")).to_be_hidden()
    expect(page.locator("#pending")).to_be_hidden()
    page.wait_for_timeout(1000)
    assert len(page.posts) == 1 and f"idempotency_key={key}" in page.posts[0], page.posts
    assert "confirm_large" not in page.posts[0]
    assert not Bank.objects.filter(session=game.session).exists()
    assert not AuditEvent.objects.filter(action="bank.opened").exists()
    # the server stored its question under the first key, and wrote nothing else
    assert IdempotencyKey.objects.get(key=key).status_code == 409
    (entry,) = page.evaluate(STORED)
    assert entry["key"] == key  # its own entry still, until he answers
    assert entry["large"]["values"]["confirm_large"] == "yes"
    assert entry["large"]["values"]["idempotency_key"] not in ("", key)
    assert entry["large"]["values"]["amount"] == "100000"
    return key, entry


def _touch_targets(page, *buttons) -> None:
    for button in buttons:
        box = button.bounding_box()
        assert box and box["height"] >= MIN_TARGET and box["width"] >= MIN_TARGET, box
    assert [p for p in audit(page) if p.startswith("target")] == []


def _problems(page) -> list[str]:
    # htmx logs the failed send offline and the 409 of the question; the browser, the 409.
    noise = ("ERR_INTERNET_DISCONNECTED", "ERR_FAILED", "status of 409")
    return [p for p in page.problems if not p.startswith("htmx:") and not any(n in p for n in noise)]


@pytest.mark.parametrize("lang", ["en", "it"])
def test_a_large_bank_queued_offline_is_asked_again_and_confirmed_from_the_queue(
    make_game, page_for, shoot, lang
):
    """The queue shows the question and the panel's button saying the amount, and sends the
    entry made after it meanwhile; confirmed, the bank is opened once, under the
    confirmation's new key, with one audit event, and reported sent."""
    words = WORDS[lang]
    game, page = _tablet(make_game, page_for, lang)
    key, entry = _asked_offline(game, page, words, then_regola=3)
    held = page.locator("#queue-held")
    yes = held.get_by_role("button", name=words["yes"], exact=True)
    discard = held.get_by_role("button", name=words["discard"], exact=True)
    expect(yes).to_be_visible()
    _touch_targets(page, yes, discard)
    shoot(page, f"tablet-queue-large-amount-{lang}")
    yes.click()
    report = page.locator("#queue-report")
    expect(report.locator("li.ok").last).to_contain_text(
        words["sent"].format(name=game.seat(1).full_name), timeout=20_000
    )
    expect(report.locator("li")).to_have_count(2)  # the mark, then the bank: nothing refused
    expect(held).to_be_hidden()
    page.wait_for_timeout(1000)
    confirmed = entry["large"]["values"]["idempotency_key"]
    assert len(page.posts) == 2, page.posts
    assert f"idempotency_key={confirmed}" in page.posts[1] and "confirm_large=yes" in page.posts[1]
    bank = Bank.objects.get(session=game.session)
    assert (bank.banker, bank.amount) == (game.seat(1), 100_000_00)
    assert AuditEvent.objects.filter(action="bank.opened").count() == 1
    assert IdempotencyKey.objects.get(key=confirmed).status_code == 200
    assert IdempotencyKey.objects.get(key=key).status_code == 409  # the question, still its answer
    assert page.evaluate(STORED) == []
    page.reload()
    expect(page.locator("#queue-held")).to_be_hidden()
    assert Bank.objects.filter(session=game.session).count() == 1
    assert _problems(page) == [], "\n".join(page.problems)


def test_a_large_bank_queued_offline_and_asked_again_may_be_discarded(make_game, page_for):
    """Not the bank he meant (two zeros too many): discarded from the queue, it leaves the
    device and is never sent again; nothing is written."""
    words = WORDS["en"]
    game, page = _tablet(make_game, page_for)
    _asked_offline(game, page, words)
    events = AuditEvent.objects.count()
    held = page.locator("#queue-held")
    held.get_by_role("button", name=words["discard"], exact=True).click()
    expect(held).to_be_hidden()
    assert page.evaluate(STORED) == []
    page.reload()
    expect(page.locator("#queue-held")).to_be_hidden()
    page.wait_for_timeout(1000)
    assert len(page.posts) == 1
    assert not Bank.objects.filter(session=game.session).exists()
    assert AuditEvent.objects.count() == events
    assert _problems(page) == [], "\n".join(page.problems)


def test_the_panels_own_confirmation_answers_the_queues_question(make_game, page_for):
    """The question sent again by the queue is also swapped into the panel, with its
    confirmation (the same key as the queue's button). Confirmed there, the bank opens once and
    the queue's question goes: neither asked twice nor entered twice."""
    words = WORDS["en"]
    game, page = _tablet(make_game, page_for)
    _, entry = _asked_offline(game, page, words)
    panel = page.locator("form.confirm-large")
    assert (
        panel.locator("input[name=idempotency_key]").get_attribute("value")
        == (entry["large"]["values"]["idempotency_key"])
    )
    panel.get_by_role("button", name=words["yes"], exact=True).click()
    expect(page.locator("#result")).to_contain_text(f"Bank opened: {game.seat(1).full_name}.")
    expect(page.locator("#queue-held")).to_be_hidden()
    assert page.evaluate(STORED) == []
    page.wait_for_timeout(1000)
    assert len(page.posts) == 2
    assert Bank.objects.get(session=game.session).amount == 100_000_00
    assert AuditEvent.objects.filter(action="bank.opened").count() == 1
    assert _problems(page) == [], "\n".join(page.problems)
