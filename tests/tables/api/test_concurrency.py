"""Real parallel requests on PostgreSQL: threads with their own client and connection,
released together by a barrier. The session lock serializes a table's tablets: exactly one
coup opens, a card the coup can take once is taken once, and one Idempotency-Key records
one coup however many tablets send it."""

from __future__ import annotations

import pytest
from django.db import connection
from rest_framework.test import APIClient

from tables.models import Coup, ShoeCard
from tests.concurrency import race

from .conftest import BANKER_WINS

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="row locks need PostgreSQL"),
]




def post(url, body=None, key=None):
    import uuid

    return lambda client: client.post(
        url, body or {}, format="json", HTTP_IDEMPOTENCY_KEY=key or uuid.uuid4().hex
    )


def test_two_tablets_open_a_coup_at_once(game):
    url = f"/api/sessions/{game.session.pk}/coups/"
    responses = race([post(url), post(url), post(url)], game.capo)
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [201, 409, 409], responses
    assert {r.json()["error"]["code"] for r in responses if r.status_code == 409} == {"coup_in_progress"}
    assert Coup.objects.filter(session=game.session).count() == 1


def _closed_coup(game) -> int:
    client = APIClient()
    client.force_authenticate(game.capo)
    key = iter(range(1000))

    def p(url, body=None):
        response = client.post(url, body or {}, format="json", HTTP_IDEMPOTENCY_KEY=f"setup-{next(key)}")
        assert response.status_code in (200, 201), response.json()
        return response.json()

    cid = p(f"/api/sessions/{game.session.pk}/coups/")["coup"]["id"]
    p(f"/api/coups/{cid}/bets/", {"patron": game.seat(2).pk, "amount": 100_00})
    p(f"/api/coups/{cid}/rien-ne-va-plus/")
    return cid, p


def test_two_tablets_deal_the_last_card_at_once(game):
    cid, p = _closed_coup(game)
    for card in ["7H", "5S", "KH", "KD"]:  # punta 7 stands; the banker (5) may take one card
        p(f"/api/coups/{cid}/cards/", {"card": card})
    p(f"/api/coups/{cid}/declaration/", {"draws": False})
    url = f"/api/coups/{cid}/cards/"
    responses = race([post(url, {"card": "2C"}), post(url, {"card": "3C"})], game.capo)
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200, 400], responses
    loser = next(r for r in responses if r.status_code == 400)
    assert loser.json()["error"]["code"] == "too_many_cards"
    winner = next(r for r in responses if r.status_code == 200).json()
    assert winner["coup"]["state"] == "settled" and len(winner["coup"]["cards"]) == 5
    assert ShoeCard.objects.filter(coup_id=cid).count() == 5


def test_two_tablets_deal_at_once_are_serialized_in_shoe_order(game):
    cid, _ = _closed_coup(game)
    url = f"/api/coups/{cid}/cards/"
    responses = race([post(url, {"card": "AS"}), post(url, {"card": "2S"})], game.capo)
    assert [r.status_code for r in responses] == [200, 200], responses
    cards = list(ShoeCard.objects.filter(coup_id=cid).order_by("position").values_list("position", "code", "side"))
    assert [c[0] for c in cards] == [1, 2] and {c[1] for c in cards} == {"AS", "2S"}
    assert [c[2] for c in cards] == ["punta", "banker"]
    assert Coup.objects.get(pk=cid).cards == [c[1] for c in cards]


def test_the_same_one_shot_from_two_tablets_records_one_coup(game):
    url = f"/api/sessions/{game.session.pk}/coups/record/"
    body = {"cards": BANKER_WINS, "punta_draws": True, "bets": [{"patron": game.seat(2).pk, "amount": 100_00}]}
    responses = race([post(url, body, key="tablet:coup-1")] * 4, game.capo)
    assert [r.status_code for r in responses] == [201] * 4, responses
    # Equal JSON (a replay comes back from jsonb, which may order keys differently).
    assert all(r.json() == responses[0].json() for r in responses)
    assert sorted(r.headers.get("Idempotent-Replayed", "") for r in responses) == ["", "true", "true", "true"]
    assert Coup.objects.filter(session=game.session).count() == 1


def test_two_tables_load_the_same_sabot_at_once(make_game):
    """A numbered sabot is at one table at a time (RULES.md §6): of two tables loading the
    same number at the same moment, one gets it and the other is refused."""
    one, two = make_game("venezia"), make_game("venezia")
    responses = race(
        [post(f"/api/sessions/{game.session.pk}/shoes/", {"number": "S-77"}) for game in (one, two)],
        [one.capo, two.capo],  # each table's own Capo Partita
    )
    assert sorted(r.status_code for r in responses) == [201, 409], responses
    refused = next(r for r in responses if r.status_code == 409)
    assert refused.json()["error"]["code"] == "shoe_in_use"
    from tables.models import Shoe

    assert Shoe.objects.filter(number="S-77", finished_at__isnull=True).count() == 1
