"""Swagger UI works under the Content-Security-Policy: served from the sidecar, its
start-up script a file (no inline script), no violation reported by the browser."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_swagger_ui_renders_under_the_csp(auditor, page_for, shoot):
    page = page_for(auditor)
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(page.base + "/api/docs/")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("Chemin API", timeout=20_000)
    shoot(page, "api-docs")
    assert all(url.startswith(page.base) or url.startswith("data:") for url in requests), requests
    violations = [p for p in page.problems if "Content Security Policy" in p]
    assert violations == [], "\n".join(violations)
