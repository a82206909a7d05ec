"""A write that takes no body (opening a coup, rien ne va plus, a bank's withdrawal...) still
takes an empty one, `{}` or none at all, and refuses any key (config.api.TakesNoBody)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tables.models import Coup

pytestmark = pytest.mark.django_db


def test_a_write_without_a_body_takes_none_empty_or_absent(game):
    client = APIClient()
    client.force_authenticate(game.capo)
    url = f"/api/sessions/{game.session.pk}/coups/"
    refused = client.post(url, {"foo": "1"}, HTTP_IDEMPOTENCY_KEY="form")  # a form body too
    assert refused.status_code == 400 and "foo" in refused.json()["error"]["details"]
    refused = client.post(url, [], format="json", HTTP_IDEMPOTENCY_KEY="list")
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid_input"
    assert not Coup.objects.exists()

    opened = client.post(url, HTTP_IDEMPOTENCY_KEY="none")  # no body, no Content-Type
    assert opened.status_code == 201, opened.json()
    coup = opened.json()["coup"]["id"]
    annul = client.post(f"/api/coups/{coup}/annul/", {"reason": "test"}, format="json", HTTP_IDEMPOTENCY_KEY="a1")
    assert annul.status_code == 200, annul.json()
    opened = client.post(url, {}, format="json", HTTP_IDEMPOTENCY_KEY="empty")
    assert opened.status_code == 201, opened.json()
    coup = opened.json()["coup"]["id"]
    annul = client.post(f"/api/coups/{coup}/annul/", {"reason": "test"}, format="json", HTTP_IDEMPOTENCY_KEY="a2")
    assert annul.status_code == 200, annul.json()
    opened = client.generic("POST", url, b"", content_type="application/json", HTTP_IDEMPOTENCY_KEY="blank")
    assert opened.status_code == 201, opened.json()



def test_a_body_is_refused_only_to_whom_may_write_the_object(game, make_game):
    """The Capo Partita of another table gets his 403 with a body as without one (the 400
    came first, before the object's permission); the session's own gets the 400 and nothing
    is written. The same for the Commissario closing the session (that view checks no object
    permission: the refusal follows its own lookup)."""
    from tables.models import Bank, TableSession

    from ..conftest import snapshot

    stranger = APIClient()
    stranger.force_authenticate(make_game("venezia").capo)  # another table's Capo Partita
    own = APIClient()
    own.force_authenticate(game.capo)
    writes = [f"/api/sessions/{game.session.pk}/coups/", f"/api/banks/{game.bank.pk}/withdraw/"]
    before = snapshot()
    for n, url in enumerate(writes):
        with_body = stranger.post(url, {"foo": 1}, format="json", HTTP_IDEMPOTENCY_KEY=f"s{n}")
        without = stranger.post(url, HTTP_IDEMPOTENCY_KEY=f"t{n}")
        assert with_body.status_code == without.status_code == 403, (url, with_body.json(), without.json())
        assert with_body.json()["error"]["code"] == without.json()["error"]["code"]
        refused = own.post(url, {"foo": 1}, format="json", HTTP_IDEMPOTENCY_KEY=f"o{n}")
        assert refused.status_code == 400 and list(refused.json()["error"]["details"]) == ["foo"], refused.json()
    assert snapshot() == before
    assert Bank.objects.get(pk=game.bank.pk).status == game.bank.status

    commissario = APIClient()
    commissario.force_authenticate(game.commissario)
    url = f"/api/sessions/{game.session.pk}/close/"
    refused = commissario.post(url, {"foo": 1}, format="json", HTTP_IDEMPOTENCY_KEY="c1")
    assert refused.status_code == 400 and list(refused.json()["error"]["details"]) == ["foo"], refused.json()
    assert TableSession.objects.get(pk=game.session.pk).status == game.session.status
    assert snapshot() == before


def test_a_handler_that_forgets_to_refuse_the_body_is_refused_all_the_same(game, monkeypatch):
    """TakesNoBody's net: a handler that never calls refuse_body (nor checks an object's
    permission) still answers a body's key with the 400, and what it wrote is rolled back."""
    from tables.api.coups import CoupListApi

    from ..conftest import snapshot

    monkeypatch.setattr(CoupListApi, "refuse_body", lambda self: None)  # the forgotten call
    client = APIClient()
    client.force_authenticate(game.capo)
    before = snapshot()
    refused = client.post(f"/api/sessions/{game.session.pk}/coups/", {"foo": 1}, format="json",
                          HTTP_IDEMPOTENCY_KEY="net")  # fmt: skip
    assert refused.status_code == 400 and list(refused.json()["error"]["details"]) == ["foo"], refused.json()
    assert snapshot() == before and not Coup.objects.exists()
