"""A Commissario, in the browser: changes a running table's minimum (with a reason, in
place) and opens another table; the table's drawing shows its seats."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from floor import services as floor_services
from floor.models import MinimumChange, TableSession

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("viewport", ["landscape", "portrait"])
def test_commissario_changes_a_minimum_and_opens_a_table(
    make_game, page_for, shoot, viewport, site, direzione, make_user
):
    game = make_game("venezia")
    free_capo = make_user("capo_free", "capo_partita")  # game.capo runs table 1: one table each
    free_changeur = make_user("changeur_free", "changeur")  # and so does its changeur
    idle = floor_services.table_create(casino=site.casino, site=site, number=7, by=direzione, seats=9)
    page = page_for(game.commissario, viewport)
    page.goto(page.base + "/floor/")
    shoot(page, f"floor-{viewport}")

    card = page.locator(f"#table-{game.session.table.pk}")
    card.get_by_label("New minimum (euros)").fill("250")
    card.get_by_label("Reason (told to the players)").fill("Saturday evening")
    card.get_by_role("button", name="Change the limits").click()
    card = page.locator(f"#table-{game.session.table.pk}")
    expect(card.locator(".outcome")).to_contain_text("Limits: minimum €\xa0250")
    expect(card.locator(".facts")).to_contain_text("250")
    change = MinimumChange.objects.get()
    assert change.new == 250_00 and change.reason == "Saturday evening"

    other = page.locator(f"#table-{idle.pk}")
    other.get_by_label("Capo Partita").select_option(str(free_capo.pk))
    other.get_by_label("Changeur").select_option(str(free_changeur.pk))
    other.get_by_label("Sabot number").fill("S-77")
    other.get_by_label("Minimum (euros)").fill("100")
    other.get_by_role("button", name="Open the table").click()
    other = page.locator(f"#table-{idle.pk}")
    expect(other.locator(".outcome")).to_contain_text("Table 7 open")
    expect(other.locator("svg.kidney .seat")).to_have_count(9)  # the Grande Tavolo
    session = TableSession.objects.get(table=idle)
    assert session.shoe_number == "S-77" and session.minimum == 100_00
    shoot(page, f"floor-after-{viewport}")
    assert page.problems == [], "\n".join(page.problems)


def test_a_poll_the_network_dropped_is_not_kept_as_an_entry(make_game, page_for):
    """The dashboard's cards ask the server for their table every 5 s. The network down, those
    requests fail: they are no entries (no key, nothing entered) and are not kept to be sent
    again, nor listed as waiting; the cards ask again once it is back."""
    game = make_game("venezia")
    page = page_for(game.commissario, "landscape")
    page.goto(page.base + "/floor/")
    page.context.set_offline(True)
    page.wait_for_timeout(6_500)  # a poll (every 5 s) fails meanwhile
    stored = page.evaluate("() => Object.keys(localStorage).filter((k) => k.startsWith('chemin:pending:'))")
    assert stored == []
    expect(page.locator("#pending")).to_be_hidden()
    page.context.set_offline(False)
    expect(page.locator("#offline")).to_be_hidden(timeout=10_000)
    page.wait_for_timeout(1_000)
    expect(page.locator("#queue-report")).to_be_hidden()


def _floor_with_an_idle_table(make_game, page_for, site, direzione, make_user):
    """A running table, an idle one (table 7) and a free changeur; the Commissario's floor."""
    game = make_game("venezia")
    make_user("changeur_free", "changeur")
    idle = floor_services.table_create(casino=site.casino, site=site, number=7, by=direzione, seats=9)
    page = page_for(game.commissario, "landscape")
    page.goto(page.base + "/floor/")
    return game, idle, page


def test_a_card_refreshed_out_of_band_keeps_what_the_commissario_was_typing(
    make_game, page_for, site, direzione, make_user
):
    """A relief at one table frees its Capo Partita: the other tables' cards are sent again
    out of band to offer him. What the Commissario had begun in another card stays: the
    sabot number he typed, the Capo Partita he chose (still free), the tool he opened, the
    field he was in with its caret; only what he did not touch takes the new values."""
    relief_capo = make_user("capo_relief", "capo_partita")
    chosen_capo = make_user("capo_chosen", "capo_partita")
    game, idle, page = _floor_with_an_idle_table(make_game, page_for, site, direzione, make_user)

    other = page.locator(f"#table-{idle.pk}")
    other.get_by_label("Capo Partita").select_option(str(chosen_capo.pk))
    other.get_by_label("Sabot number").fill("S-9")
    assert str(game.capo.pk) not in other.get_by_label("Capo Partita").inner_html()

    busy = page.locator(f"#table-{game.session.table.pk}")
    busy.locator("summary", has_text="Relieve the staff").click()
    busy.get_by_label("Capo Partita").select_option(str(relief_capo.pk))
    busy.get_by_label("Reason for the change").fill("break")
    other.get_by_label("Minimum (euros)").fill("150")
    other.get_by_label("Minimum (euros)").press("ArrowLeft")  # the caret between 15 and 0
    # sent as the button would, with the focus left where the Commissario is typing
    page.evaluate(
        "(id) => document.querySelector('#table-' + id + ' details form').requestSubmit()",
        game.session.table.pk,
    )
    busy = page.locator(f"#table-{game.session.table.pk}")
    expect(busy.locator(".outcome")).to_be_visible()
    other = page.locator(f"#table-{idle.pk}")
    # the card is the server's new one: it offers the Capo Partita the relief freed
    expect(other.get_by_label("Capo Partita").locator(f"option[value='{game.capo.pk}']")).to_have_count(1)
    expect(other.get_by_label("Capo Partita")).to_have_value(str(chosen_capo.pk))
    expect(other.get_by_label("Sabot number")).to_have_value("S-9")
    expect(other.get_by_label("Minimum (euros)")).to_have_value("150")
    assert page.evaluate("() => [document.activeElement.id, document.activeElement.selectionStart]") == [
        f"min-{idle.pk}",
        2,
    ]
    # and the relief itself was recorded
    assert TableSession.objects.get(pk=game.session.pk).capo_partita_id == relief_capo.pk
    assert page.problems == [], "\n".join(page.problems)


def test_a_choice_taken_meanwhile_gives_way_to_the_new_card(make_game, page_for, site, direzione, make_user):
    """The Capo Partita chosen in one card's open form is the one a relief at another table
    takes: refreshed, the card no longer offers him, and its select shows what it offers."""
    wanted = make_user("capo_wanted", "capo_partita")
    game, idle, page = _floor_with_an_idle_table(make_game, page_for, site, direzione, make_user)
    other = page.locator(f"#table-{idle.pk}")
    other.get_by_label("Capo Partita").select_option(str(wanted.pk))
    other.locator("summary", has_text="Open a session").click()  # closes the open tool
    busy = page.locator(f"#table-{game.session.table.pk}")
    busy.locator("summary", has_text="Relieve the staff").click()
    busy.get_by_label("Capo Partita").select_option(str(wanted.pk))
    busy.get_by_label("Reason for the change").fill("break")
    busy.get_by_role("button", name="Change the staff").click()
    expect(page.locator(f"#table-{game.session.table.pk} .outcome")).to_be_visible()
    other = page.locator(f"#table-{idle.pk}")
    expect(other.get_by_label("Capo Partita").locator(f"option[value='{wanted.pk}']")).to_have_count(0)
    expect(other.get_by_label("Capo Partita")).to_have_value(str(game.capo.pk))
    expect(other.locator("details")).not_to_have_attribute("open", "")  # still closed, as he left it
    assert page.problems == [], "\n".join(page.problems)


def test_a_session_closed_on_its_card_lists_its_drawer_at_once(make_game, page_for):
    """The list of the day's closed sessions, with their drawers, is swapped in with the card's
    answer (out of band), as the close of the day: the drawer just closed is linked without
    reloading the page, and the link leads to its count."""
    game = make_game("venezia")
    page = page_for(game.commissario, "landscape")
    page.goto(page.base + "/floor/")
    casino = game.session.table.casino_id
    expect(page.locator(f"#floor-drawers-{casino} a")).to_have_count(0)
    card = page.locator(f"#table-{game.session.table.pk}")
    card.get_by_label("Close: every place is released, and a bank or a succession in progress ends").check()
    card.get_by_role("button", name="Close the session").click()
    expect(page.locator(f"#table-{game.session.table.pk} .outcome")).to_contain_text("Session closed.")
    drawer = page.locator(f"#floor-drawers-{casino} a", has_text=f"Table {game.session.table.number}, session")
    expect(drawer).to_have_count(1)
    expect(page.locator(f"#floor-drawers-{casino}")).to_contain_text("drawer not counted")
    expect(page.locator(f"#day-close-{casino} form")).to_have_count(1)  # (the close of the day, as before)
    drawer.click()
    expect(page.locator("#drawer-title")).to_be_visible()
    expect(page.locator("form.drawer-form")).to_have_count(1)
    assert page.problems == [], "\n".join(page.problems)
