"""Fixtures for the page tests: the game tables' `make_game` (a venezia table with its
session run by the `capo_partita` fixture, 8 seated and 1 standing, the sabot loaded and
the first bank open) and a logged-in Django test client per user."""

from __future__ import annotations

import uuid

import pytest
from django.test import Client

from tests.tables.conftest import Game, make_game  # noqa: F401  (fixture re-exported)


@pytest.fixture
def client_for():
    def make(user) -> Client:
        client = Client()
        client.force_login(user)
        return client

    return make


@pytest.fixture
def game(make_game) -> Game:  # noqa: F811
    return make_game("venezia")


@pytest.fixture
def replay_after_tie(make_game, client_for):  # noqa: F811
    """A chemmy-fi table whose first coup was a tie (7-7) with a 300 € bet from seat 2, and
    the replay opened on the Capo Partita's tablet: the bet carried to it. (game, his client)."""
    from tables import services

    game = make_game("chemmy-fi")
    services.coup_record(
        session=game.session, by=game.capo, cards=["7H", "7S", "KH", "KD"], punta_draws=False,
        bets=[{"patron": game.seat(2), "amount": 300_00}],
    )  # fmt: skip
    client = client_for(game.capo)
    opened = client.post(f"/tablet/sessions/{game.session.pk}/coup-open/", {"idempotency_key": str(uuid.uuid4())})
    assert opened.status_code == 200
    return game, client
