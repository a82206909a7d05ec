"""The tablet's correction of a card tapped wrongly: beside the picker, "Correct the last
card: 7♦" opens a picker for the right card; the tablet asks again naming both cards, and
only the confirmation changes it (tables.services.card_entry_correct)."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest
from django.conf import settings

from audit.models import AuditEvent
from tables.models import Coup, ShoeCard

pytestmark = pytest.mark.django_db


def post(client, session, action, key=None, **data):
    data["idempotency_key"] = key or str(uuid.uuid4())
    return client.post(f"/tablet/sessions/{session.pk}/{action}/", data)


def _dealing(client, game, cards):
    post(client, game.session, "coup-open")
    coup = Coup.objects.get(session=game.session)
    assert post(client, game.session, "bet", coup=coup.pk, patron=game.seat(2).pk, quick="banco").status_code == 200
    assert post(client, game.session, "rien-ne-va-plus", coup=coup.pk).status_code == 200
    for rank, suit in cards:
        assert post(client, game.session, "card", coup=coup.pk, rank=rank, suit=suit).status_code == 200
    return coup


def _page(client, game) -> str:
    return client.get(f"/tablet/sessions/{game.session.pk}/").content.decode()


def test_the_last_card_is_corrected_from_the_tablet_after_a_confirmation(client_for, game):
    client = client_for(game.capo)
    coup = _dealing(client, game, [("7", "H"), ("7", "D")])
    page = _page(client, game)
    # The button beside the picker (a summary: the tools' 48px touch target) names the card.
    summary = re.search(r'<details class="tool card-correct" id="card-correct">\s*<summary>(.*?)</summary>', page, re.S)
    assert summary and "Correct the last card:" in summary.group(1) and "7♦" in summary.group(1)
    css = (Path(settings.BASE_DIR) / "floor/static/floor/chemin.css").read_text()
    assert "--touch: 48px" in css and re.search(r"details\.tool summary \{ min-height: var\(--touch\)", css)
    assert 'class="picker-fix"' in page and 'name="was" value="7D"' in page
    assert f'action="/tablet/sessions/{game.session.pk}/card-correct/"' in page
    events = AuditEvent.objects.count()
    # The suit asks first, naming both cards; nothing is changed.
    asked = post(client, game.session, "card-correct", coup=coup.pk, was="7D", rank="7", suit="H")
    html = asked.content.decode()
    assert asked.status_code == 409
    assert "Correct the last card: " in html and 'name="confirm_card" value="yes"' in html
    assert AuditEvent.objects.count() == events and Coup.objects.get(pk=coup.pk).cards == ["7H", "7D"]
    # The confirmation changes it.
    done = post(client, game.session, "card-correct", coup=coup.pk, was="7D", rank="7", suit="H", confirm_card="yes")
    assert done.status_code == 200 and "Last card corrected:" in done.content.decode()
    assert Coup.objects.get(pk=coup.pk).cards == ["7H", "7H"]
    assert ShoeCard.objects.get(coup=coup, position=2).code == "7H"
    assert AuditEvent.objects.filter(action="card.entry_corrected").count() == 1


def test_no_correction_is_offered_once_the_punta_declared_nor_before_a_card(client_for, game):
    client = client_for(game.capo)
    coup = _dealing(client, game, [])
    assert 'id="card-correct"' not in _page(client, game)
    for rank, suit in (("K", "H"), ("5", "S"), ("3", "C"), ("2", "D")):
        post(client, game.session, "card", coup=coup.pk, rank=rank, suit=suit)
    assert 'id="card-correct"' in _page(client, game)
    assert post(client, game.session, "punta", coup=coup.pk, draws="true").status_code == 200
    assert 'id="card-correct"' not in _page(client, game)
    # Posted anyway (an old page): refused, with the reason, and nothing changed.
    refused = post(client, game.session, "card-correct", coup=coup.pk, was="2D", rank="3", suit="D", confirm_card="yes")
    assert refused.status_code == 409 and "no longer corrected" in refused.content.decode()
    assert Coup.objects.get(pk=coup.pk).cards == ["KH", "5S", "3C", "2D"]


def test_the_commissario_reading_the_tablet_is_offered_no_correction(client_for, game):
    _dealing(client_for(game.capo), game, [("7", "H"), ("7", "D")])
    page = client_for(game.commissario).get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    assert 'id="card-correct"' not in page


def test_the_void_tool_points_a_card_entered_by_mistake_to_the_correction(client_for, game):
    client = client_for(game.capo)
    _dealing(client, game, [("7", "H")])
    html = _page(client, game)
    tool = html[html.index('<details class="tool" id="void-card">') :]
    tool = tool[: tool.index("</details>")]
    assert "Not for a card entered by mistake" in tool and "“Correct the last card”, beside the cards" in tool
    client.cookies["chemin_language"] = "it"
    italian = _page(client, game)
    assert "<summary>Correggi l'ultima carta: <span class=\"pc red\">7♥</span></summary>" in italian
    assert "«Correggi l'ultima carta»" in italian
