"""config/htmx.py: the page a request came from is only ever a path of this site."""

from __future__ import annotations

import pytest
from django.test import RequestFactory

from config.htmx import current_page


@pytest.mark.parametrize(
    ("header", "page"),
    [
        ("http://testserver/tablet/sessions/1/?a=1", "/tablet/sessions/1/?a=1"),
        ("/tablet/", "/tablet/"),
        ("https://evil.example/x", None),
        ("//evil.example/x", None),
        ("/\\evil.example", None),
        ("http://testserver\\@evil.example/", None),
        ("javascript:alert(1)", None),
        ("", None),
    ],
)
def test_the_page_a_request_came_from_is_a_path_of_this_site(header, page):
    assert current_page(RequestFactory().get("/", HTTP_HX_CURRENT_URL=header)) == page
    assert current_page(RequestFactory().get("/", HTTP_REFERER=header)) == page
