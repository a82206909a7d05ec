"""Fixtures for the page tests: the game tables' `make_game` (a venezia table with its
session run by the `capo_partita` fixture, 8 seated and 1 standing, the sabot loaded and
the first bank open) and a logged-in Django test client per user."""

from __future__ import annotations

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
