"""The table's rules profile on the pages: its title in the page's language, not its code.
The floor's table cards and the tablet's header printed the bare code ("venezia",
"chemmy-fi"), an English word on an Italian page; the code stays in data-profile."""

from __future__ import annotations

import re

import pytest
from django.utils import translation

from tables.engine.profiles import PROFILES
from tables.wording import PROFILE_TITLES

pytestmark = pytest.mark.django_db

ITALIAN = {
    "venezia": "Casinò di Venezia",
    "classic": "Chemin de fer classico da casinò",
    "domestic": "Partita privata (regole domestiche)",
    "chemmy-fi": "Chemmy finlandese",
    "punto-banco": "Punto Banco (banco della casa, tableau fisso)",
}


def test_every_profile_has_its_engine_title_translated():
    # One entry per profile of the engine, in English the engine's own title (the floor's
    # admin choices say it): a profile added to the engine without its title here fails.
    assert set(PROFILE_TITLES) == set(PROFILES) == set(ITALIAN)
    with translation.override("en"):
        assert {code: str(title) for code, title in PROFILE_TITLES.items()} == {
            code: profile.title for code, profile in PROFILES.items()
        }
    with translation.override("it"):
        assert {code: str(title) for code, title in PROFILE_TITLES.items()} == ITALIAN


def _shown(html: str, code: str) -> str:
    found = re.search(rf'<span class="profile" data-profile="{re.escape(code)}">([^<]*)</span>', html)
    assert found, f"no profile {code!r} on the page"
    return found.group(1)


@pytest.mark.parametrize("code", ["venezia", "chemmy-fi", "punto-banco"])
def test_the_floor_card_says_the_profile_s_title(client_for, make_game, code):
    game = make_game(code, shoe=False, bank=None, seated=2, standing=0)
    client = client_for(game.commissario)
    html = client.get("/floor/").content.decode()
    assert _shown(html, code) == PROFILES[code].title
    title = re.search(r'<h3 id="t-\d+-title">.*?</h3>', html, re.S).group(0)
    assert f"<small>{code} ·" not in title
    italian = client.get("/floor/", HTTP_ACCEPT_LANGUAGE="it").content.decode()
    assert _shown(italian, code) == ITALIAN[code]


@pytest.mark.parametrize("code", ["venezia", "classic", "domestic", "chemmy-fi", "punto-banco"])
def test_the_tablet_header_says_the_profile_s_title(client_for, make_game, code):
    game = make_game(code, shoe=False, bank=None, seated=2, standing=0)
    client = client_for(game.capo)
    page = f"/tablet/sessions/{game.session.pk}/"
    header = re.search(r'<header class="table-head">.*?</h1>', client.get(page).content.decode(), re.S).group(0)
    assert _shown(header, code) == PROFILES[code].title
    assert f"· {code}</small>" not in header
    italian = client.get(page, HTTP_ACCEPT_LANGUAGE="it").content.decode()
    header = re.search(r'<header class="table-head">.*?</h1>', italian, re.S).group(0)
    assert _shown(header, code) == ITALIAN[code]
