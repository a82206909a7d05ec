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
