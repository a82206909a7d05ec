"""Boolean list filters refuse what is not true or false (400 invalid_input) instead of
answering the whole list as if the filter had applied (found fuzzing: ?conforming=maybe)."""

from __future__ import annotations

import pytest

from .conftest import BANKER_WINS, Tablet

pytestmark = pytest.mark.django_db


@pytest.fixture
def game(make_game):
    return make_game("venezia")


def _record(tablet: Tablet, game) -> None:
    body = {"cards": BANKER_WINS, "punta_draws": True, "bets": [{"patron": game.seat(2).pk, "amount": 50_00}]}
    assert tablet.post(f"/api/sessions/{game.session.pk}/coups/record/", body).status_code == 201


# 1, 0 and True too: a boolean is true or false, in a filter as in a body (README "The API").
@pytest.mark.parametrize("value", ["maybe", "yes", "2", "tru", "1", "0", "True", "FALSE"])
def test_bad_boolean_values_are_a_400_on_every_boolean_filter(game, capo_partita, commissario, value):
    tablet, floor = Tablet(capo_partita), Tablet(commissario)
    _record(tablet, game)
    sid = game.session.pk
    for client, url in (
        (tablet, f"/api/sessions/{sid}/coups/?conforming={value}"),
        (floor, f"/api/gaming-days/?is_open={value}"),
        (floor, f"/api/tables/?active={value}"),
        (floor, f"/api/sessions/{sid}/seats/?active={value}"),
        (floor, f"/api/sessions/{sid}/seats/?standing={value}"),
    ):
        response = client.client.get(url)
        assert response.status_code == 400, (url, response.status_code)
        assert response.json()["error"]["code"] == "invalid_input", url


@pytest.mark.parametrize(("value", "expected"), [("true", 1), ("false", 0), ("", 1)])
def test_true_false_and_empty_still_filter(game, capo_partita, value, expected):
    tablet = Tablet(capo_partita)
    _record(tablet, game)  # a conforming coup
    response = tablet.client.get(f"/api/sessions/{game.session.pk}/coups/?conforming={value}")
    assert response.status_code == 200
    assert response.json()["count"] == expected


def test_seats_filter_active_and_standing(game, commissario):
    floor = Tablet(commissario)
    url = f"/api/sessions/{game.session.pk}/seats/"
    everyone = floor.client.get(url).json()["count"]
    standing = floor.client.get(url + "?standing=true").json()["count"]
    seated = floor.client.get(url + "?standing=false").json()["count"]
    assert standing == 1 and seated == 8 and everyone == standing + seated
