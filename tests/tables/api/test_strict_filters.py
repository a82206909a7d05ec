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


def test_a_key_a_list_does_not_filter_by_is_a_400_naming_it_not_the_whole_list(game, capo_partita, commissario):
    # ?date= on the sessions (which had no such filter) answered every session of every day.
    tablet, floor = Tablet(capo_partita), Tablet(commissario)
    _record(tablet, game)
    sid = game.session.pk
    for client, url, key in (
        (floor, "/api/sessions/?dat=2026-12-02", "dat"),
        (floor, "/api/gaming-days/?day=2026-12-02", "day"),
        (tablet, f"/api/sessions/{sid}/coups/?conforming=true&winner=banco", "winner"),
        (floor, "/api/audit/events/?at_afterr=2026-12-02T00:00:00Z", "at_afterr"),
    ):
        response = client.client.get(url)
        assert response.status_code == 400, (url, response.status_code)
        error = response.json()["error"]
        assert error["code"] == "invalid_input", url
        assert key in error["details"], (url, error)
    # what a list does read still works: its filters (a range's suffixed ends), the pages, the format
    for client, url in (
        (floor, "/api/audit/events/?at_after=2020-01-01T00:00:00Z&page=1&page_size=5"),
        (tablet, f"/api/sessions/{sid}/coups/?conforming=true&format=json"),
    ):
        assert client.client.get(url).status_code == 200, url


def test_sessions_filter_by_their_gaming_day_s_date(game, commissario):
    floor = Tablet(commissario)
    day = game.session.gaming_day.date
    assert floor.client.get(f"/api/sessions/?date={day.isoformat()}").json()["count"] == 1
    assert floor.client.get(f"/api/sessions/?date={day.replace(year=day.year - 1).isoformat()}").json()["count"] == 0
    assert floor.client.get(f"/api/sessions/?date_from={day.isoformat()}&date_to={day.isoformat()}").json()["count"] == 1
    assert floor.client.get(f"/api/sessions/?date_from={day.replace(year=day.year + 1).isoformat()}").json()["count"] == 0
    assert floor.client.get("/api/sessions/?date=2026-12-3").status_code == 400
