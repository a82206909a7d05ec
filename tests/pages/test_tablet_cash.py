"""The changeur's register on the tablet page: his form (direction, the patron from the
table's places, quick amounts), the lines and totals, the identification required at the
threshold, his voids; the read-only register for the other readers, nothing new on the Capo
Partita's page; the section in Italian."""

from __future__ import annotations

import uuid

import pytest

from floor import services as floor_services
from tables import services
from tables.models import CashExchange
from tests.pages.test_italian import Evening

pytestmark = pytest.mark.django_db

SECTION = "Cash exchanged at the table"


@pytest.fixture(autouse=True)
def _threshold(settings):
    settings.AML_IDENTIFY_CENTS = 2_000_00


def post(client, game, action: str, **data):
    data.setdefault("idempotency_key", str(uuid.uuid4()))
    return client.post(f"/tablet/sessions/{game.session.pk}/{action}/", data)


def page(client, game) -> str:
    r = client.get(f"/tablet/sessions/{game.session.pk}/")
    assert r.status_code == 200
    return r.content.decode()


def test_the_changeur_records_with_a_quick_amount_and_a_typed_one(game, client_for, changeur):
    client = client_for(changeur)
    html = page(client, game)
    assert SECTION in html and 'name="quick_cents" value="10000"' in html and 'value="200000"' in html
    assert game.seat(3).full_name in html.split('id="cash-patron"', 1)[1].split("</select>", 1)[0]
    r = post(client, game, "cash-exchange", direction="buy_in", quick_cents="50000", patron="")
    assert r.status_code == 200
    assert "Line 1: €\xa0500 of cash for chips." in r.content.decode()
    r = post(client, game, "cash-exchange", direction="cash_out", amount="120,50", patron=str(game.seat(3).pk))
    assert r.status_code == 200 and "Line 2: €\xa0120.50 of chips for cash." in r.content.decode()
    rows = list(CashExchange.objects.order_by("number").values_list("direction", "amount", "patron_id", "by_id"))
    assert rows == [("buy_in", 500_00, None, changeur.pk), ("cash_out", 120_50, game.seat(3).pk, changeur.pk)]
    html = page(client, game)
    facts = html.split(SECTION, 1)[1].split("</dl>", 1)[0]
    assert "500" in facts and "120.50" in facts and "379.50" in facts


def test_the_page_asks_the_patron_at_the_threshold_alone_or_linked(game, client_for, changeur):
    client = client_for(changeur)
    assert "Identification required from €\xa02" in page(client, game)
    r = post(client, game, "cash-exchange", direction="buy_in", quick_cents="200000", patron="")
    assert r.status_code == 400
    assert "Identification required (anti-money laundering)" in r.content.decode()
    assert not CashExchange.objects.exists()
    post(client, game, "cash-exchange", direction="buy_in", amount="1500", patron="")
    r = post(client, game, "cash-exchange", direction="buy_in", amount="500", patron="")
    assert r.status_code == 400 and "comes to €\xa02" in r.content.decode()
    r = post(client, game, "cash-exchange", direction="buy_in", amount="500", patron=str(game.seat(2).pk))
    assert r.status_code == 200
    # the patron's own linked exchanges reach it: he is named, and the line says so
    r = post(client, game, "cash-exchange", direction="buy_in", amount="1500", patron=str(game.seat(2).pk))
    assert r.status_code == 200 and "Patron identified (anti-money laundering)" in r.content.decode()
    assert CashExchange.objects.filter(identification_required=True).count() == 1
    assert "Unnamed exchanges may still come to less than €\xa0500" in page(client, game)


def _checked_direction(html: str) -> list[str]:
    form = html.split('class="cash-form"', 1)[1].split("</fieldset>", 1)[0]
    return [value for value in ("buy_in", "cash_out") if f'value="{value}" checked' in form]


def test_a_refused_exchange_comes_back_as_it_was_sent_its_direction_included(game, client_for, changeur):
    """A refused "chips for cash" (a figure mistyped) is shown again as "chips for cash", with
    its amount and patron: back at the default, "cash for chips", the changeur who corrects
    the figure and taps Record enters it the wrong way round."""
    client = client_for(changeur)
    assert _checked_direction(page(client, game)) == ["buy_in"]
    patron = str(game.seat(3).pk)
    for amount in ("abc", "10.555", "-5"):
        r = post(client, game, "cash-exchange", direction="cash_out", amount=amount, patron=patron)
        assert r.status_code == 400, amount
        html = r.content.decode()
        assert _checked_direction(html) == ["cash_out"], amount
        assert f'value="{amount}"' in html.split('id="cash-amount"', 1)[1].split(">", 1)[0]
        assert f'<option value="{patron}" selected>' in html.split('id="cash-patron"', 1)[1].split("</select>", 1)[0]
    assert not CashExchange.objects.exists()
    # entered, the form is new again: the default direction, nothing typed
    r = post(client, game, "cash-exchange", direction="cash_out", amount="120", patron=patron)
    assert r.status_code == 200 and _checked_direction(r.content.decode()) == ["buy_in"]
    assert list(CashExchange.objects.values_list("direction", "amount")) == [("cash_out", 120_00)]


def test_the_changeur_voids_his_line_on_the_page(game, client_for, changeur):
    client = client_for(changeur)
    line = services.cash_exchange_record(session=game.session, by=changeur, direction="buy_in", amount=300_00)
    assert f'name="exchange" value="{line.pk}"' in page(client, game)
    r = post(client, game, "cash-void", exchange=str(line.pk), reason="typed twice")
    assert r.status_code == 200 and "Line 1 voided" in r.content.decode()
    line.refresh_from_db()
    assert line.voided and line.void_reason == "typed twice"
    r = post(client, game, "cash-void", exchange=str(line.pk), reason="again")
    assert r.status_code == 409 and "This line is voided already." in r.content.decode()


def test_the_capo_partitas_page_shows_nothing_of_the_register(game, client_for, changeur):
    services.cash_exchange_record(session=game.session, by=changeur, direction="buy_in", amount=300_00)
    html = page(client_for(game.capo), game)
    assert SECTION not in html and "cash-exchange" not in html
    r = post(client_for(game.capo), game, "cash-exchange", direction="buy_in", amount="100")
    assert r.status_code == 403 and CashExchange.objects.count() == 1


def test_the_other_readers_read_the_register_and_the_commissario_voids(game, client_for, changeur, auditor):
    line = services.cash_exchange_record(session=game.session, by=changeur, direction="buy_in", amount=300_00)
    html = page(client_for(auditor), game)
    assert SECTION in html and 'id="cash-patron"' not in html and "cash-void" not in html
    commissario = client_for(game.commissario)
    html = page(commissario, game)
    assert 'id="cash-patron"' not in html and "cash-void" in html
    assert post(commissario, game, "cash-exchange", direction="buy_in", amount="100").status_code == 403
    r = post(commissario, game, "cash-void", exchange=str(line.pk), reason="disputed")
    assert r.status_code == 200
    line.refresh_from_db()
    assert line.voided_by_id == game.commissario.pk


def test_a_changeur_of_another_table_neither_reads_nor_records_here(game, make_game, client_for):
    other = make_game("venezia")
    client = client_for(other.session.changeur)
    assert client.get(f"/tablet/sessions/{game.session.pk}/").status_code == 403
    r = post(client, game, "cash-exchange", direction="buy_in", amount="100")
    assert r.status_code == 403 and not CashExchange.objects.exists()
    assert "records its cash exchanges" in r.content.decode()


def test_a_closed_session_shows_its_register_read_only_and_refuses_a_line(game, client_for, changeur):
    services.cash_exchange_record(session=game.session, by=changeur, direction="buy_in", amount=300_00)
    floor_services.table_session_close(session=game.session, by=game.commissario)
    client = client_for(changeur)
    html = page(client, game)
    assert SECTION in html and 'id="cash-patron"' not in html
    r = post(client, game, "cash-exchange", direction="buy_in", amount="100")
    assert r.status_code == 409 and CashExchange.objects.count() == 1


def test_the_register_in_italian_is_all_italian(game, changeur, settings):
    evening = Evening()
    mine = evening.client(changeur)
    tablet = f"/tablet/sessions/{game.session.pk}/"
    evening.get(mine, tablet)
    evening.post(mine, tablet + "cash-exchange/", direction="buy_in", quick_cents="50000", patron="")
    evening.post(mine, tablet + "cash-exchange/", direction="buy_in", amount="2000", patron="")
    evening.post(mine, tablet + "cash-exchange/", direction="cash_out", amount="2000", patron=str(game.seat(2).pk))
    evening.post(mine, tablet + "cash-exchange/", direction="sideways", amount="10", patron="")
    line = CashExchange.objects.order_by("number").first()
    evening.post(mine, tablet + "cash-void/", exchange=str(line.pk), reason="sbagliato")
    evening.post(mine, tablet + "cash-void/", exchange=str(line.pk), reason="ancora")
    evening.post(mine, tablet + "cash-exchange/", direction="buy_in", amount="1000", patron="")
    evening.post(mine, tablet + "cash-exchange/", direction="buy_in", amount="1000", patron="")
    html = evening.get(mine, tablet).content.decode()
    assert "Denaro cambiato al tavolo" in html and "Identificazione obbligatoria" in html
    assert "I cambi senza cliente possono ancora arrivare, insieme, a meno di €\xa01\u202f000" in html
    settings.AML_IDENTIFY_CENTS = 500_00  # lowered: the unnamed ones are past it
    html = evening.get(mine, tablet).content.decode()
    assert "I cambi senza cliente hanno raggiunto la soglia" in html
    evening.get(evening.client(game.commissario), tablet)
    assert evening.problems == []
