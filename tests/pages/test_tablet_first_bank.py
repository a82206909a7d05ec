"""The tablet and the first bank (RULES.md §5, §6): it offers the seat the game state and
the API agree on (seat 1, else the next occupied seat), and the player whose turn it is may
decline it from the page."""

from __future__ import annotations

import re
import uuid

import pytest

from floor import services as floor_services
from tables.models import Bank, FirstBankPass
from tests.factories import PatronFactory

pytestmark = pytest.mark.django_db


def post(client, session, action, **data):
    data["idempotency_key"] = str(uuid.uuid4())
    return client.post(f"/tablet/sessions/{session.pk}/{action}/", data)


def selected_banker(html: str) -> str:
    select = html.split('id="bank-patron"', 1)[1].split("</select>", 1)[0]
    return re.search(r'<option value="(\d+)" selected>', select).group(1)


def test_with_seat_1_empty_the_tablet_offers_the_first_bank_to_the_next_occupied_seat(client_for, make_game):
    game = make_game("venezia", seated=0, standing=0, bank=None)
    patrons = {
        n: floor_services.seat_assign(
            session=game.session, patron=PatronFactory(), seat_number=n, by=game.commissario
        ).patron
        for n in range(2, 9)
    }
    client = client_for(game.capo)
    html = client.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    assert selected_banker(html) == str(patrons[2].pk)
    assert "The first bank goes to the player at seat 2" in html
    response = post(client, game.session, "bank-open", patron=patrons[2].pk, amount="1000")
    assert response.status_code == 200, response.content.decode()[:500]
    assert Bank.objects.get(session=game.session).banker_id == patrons[2].pk


def test_the_tablet_records_a_declined_first_bank(client_for, make_game):
    game = make_game("venezia", bank=None)
    client = client_for(game.capo)
    html = client.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    assert "declines the first bank" in html and selected_banker(html) == str(game.seat(1).pk)
    response = post(client, game.session, "first-bank-pass", patron=game.seat(1).pk)
    assert response.status_code == 200, response.content.decode()[:500]
    assert FirstBankPass.objects.get(session=game.session).patron_id == game.seat(1).pk
    html = client.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    assert selected_banker(html) == str(game.seat(2).pk)
    refused = post(client, game.session, "bank-open", patron=game.seat(1).pk, amount="1000")
    assert refused.status_code == 400 and not Bank.objects.exists()
