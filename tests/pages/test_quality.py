"""Across the pages: the Content-Security-Policy, the languages, the weight, the home links."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.staticfiles import finders

from tables.models import Coup

pytestmark = pytest.mark.django_db

PAGE_BUDGET = 200 * 1024  # bytes: HTML + CSS + JS, before images


def pages_of(game) -> list[tuple[object, str]]:
    return [
        (game.capo, "/tablet/"),
        (game.capo, f"/tablet/sessions/{game.session.pk}/"),
        (game.commissario, "/floor/"),
        (game.capo, "/"),
    ]


def test_every_page_sends_the_csp(client_for, game, client):
    for user, url in [*pages_of(game), (None, "/accounts/login/")]:
        response = (client_for(user) if user else client).get(url)
        assert response.status_code == 200, url
        csp = response["Content-Security-Policy"]
        for directive in (
            "default-src 'self'",
            "script-src 'self'",
            "style-src 'self'",
            "frame-ancestors 'none'",
            "form-action 'self'",
        ):
            assert directive in csp, (url, directive)
        assert "unsafe-inline" not in csp and "unsafe-eval" not in csp


def test_no_inline_script_or_style_in_the_pages(client_for, game):
    for user, url in pages_of(game):
        html = client_for(user).get(url).content.decode()
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html), url
        assert "<style" not in html and " style=" not in html, url
        assert not re.search(r"\son[a-z]+=", html), url  # no inline event handlers


def _asset_bytes(html: str) -> int:
    total = 0
    for ref in re.findall(r'(?:src|href)="(/static/[^"]+\.(?:js|css))"', html):
        path = finders.find(ref.removeprefix(settings.STATIC_URL if settings.STATIC_URL.startswith("/") else "/static/"))
        assert path, ref
        total += Path(path).stat().st_size
    return total


def test_no_page_is_over_200_kb_before_images(client_for, game):
    client = client_for(game.capo)
    client.post(f"/tablet/sessions/{game.session.pk}/coup-open/", {"idempotency_key": str(uuid.uuid4())})
    assert Coup.objects.exists()
    for user, url in pages_of(game):
        html = client_for(user).get(url).content.decode()
        weight = len(html.encode()) + _asset_bytes(html)
        assert weight < PAGE_BUDGET, (url, weight)


def test_italian_by_the_language_switch(client_for, game):
    client = client_for(game.capo)
    response = client.post("/i18n/setlang/", {"language": "it", "next": "/tablet/"})
    assert response.status_code == 302 and response["Location"] == "/tablet/"
    html = client.get(f"/tablet/sessions/{game.session.pk}/").content.decode()
    assert 'lang="it"' in html
    assert "Apri il colpo" in html and "Giocatori" in html
    # the tablet's queue says its entries in Italian too (chemin.js reads them from #pending)
    assert "{entry}: inviato, in attesa della risposta del server. Non reinserirlo" in html
    html = client_for(game.commissario).get("/floor/", HTTP_ACCEPT_LANGUAGE="it").content.decode()
    assert "Cambia i limiti" in html


def test_a_refusal_is_said_in_italian(client_for, game):
    client = client_for(game.capo)
    client.post("/i18n/setlang/", {"language": "it", "next": "/"})
    client.post(f"/tablet/sessions/{game.session.pk}/coup-open/", {"idempotency_key": str(uuid.uuid4())})
    coup = Coup.objects.get()
    response = client.post(
        f"/tablet/sessions/{game.session.pk}/bet/",
        {"coup": coup.pk, "patron": game.seat(2).pk, "quick": "custom", "amount": "5000",
         "idempotency_key": str(uuid.uuid4())},
    )
    assert response.status_code == 400
    assert "Le puntate supererebbero il banco: ne restano scoperti €\xa01\u202f000." in response.content.decode()
    # the play's own refusals too (a card before rien ne va plus)
    response = client.post(
        f"/tablet/sessions/{game.session.pk}/card/",
        {"coup": coup.pk, "rank": "5", "suit": "H", "idempotency_key": str(uuid.uuid4())},
    )
    assert response.status_code == 409
    assert "Chiudere le puntate (rien ne va plus) prima delle carte." in response.content.decode()


def test_every_refusal_the_pages_say_has_its_italian():
    """Every message the pages give by code has a translation in the catalogue."""
    from django.utils import translation

    from tables.views_common import REFUSALS
    from tables.views_tablet import SUCCESSION_REFUSALS

    def said(message, language: str) -> str:
        with translation.override(language):
            return str(message)

    messages = {**REFUSALS, **SUCCESSION_REFUSALS}
    untranslated = [code for code, message in messages.items() if said(message, "it") == said(message, "en")]
    assert untranslated == []


def test_the_compiled_catalogue_is_committed_with_its_source():
    base = Path(settings.BASE_DIR) / "locale" / "it" / "LC_MESSAGES"
    assert (base / "django.po").exists() and (base / "django.mo").exists()
    assert (base / "django.mo").stat().st_mtime >= (base / "django.po").stat().st_mtime - 5


@pytest.mark.parametrize(
    ("role", "target"),
    [("capo_partita", "/tablet/"), ("commissario", "/floor/"), ("auditor", "/api/docs/")],
)
def test_home_leads_each_role_to_its_screen(client_for, make_user, role, target):
    html = client_for(make_user(f"u_{role}", role)).get("/").content.decode()
    assert f'href="{target}"' in html


def test_swagger_ui_is_served_locally(client_for, auditor):
    html = client_for(auditor).get("/api/docs/").content.decode()
    assert "cdn" not in html.lower()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/" in html


# "€" and its amount are one word: a plain space let a line end on "€" and start the next
# with "1 500,50" (the tablet's narrow columns, the desk's sentences). A no-break space (U+00A0)
# holds them together; the thousands are grouped by a narrow no-break space already.
EURO_THEN_PLAIN_SPACE = re.compile(r"€ (?=[-+\d{%])")


def test_a_euro_sign_stays_with_its_amount_on_the_pages(client_for, game, auditor):
    from tables import services

    services.coup_record(session=game.session, by=game.capo, cards=["KH", "5S", "3C", "2D", "2S"], punta_draws=True,
                         bets=[{"patron": game.seat(2), "amount": 300_00}])  # fmt: skip
    for language in ("en", "it"):
        for user, url in [
            (game.capo, f"/tablet/sessions/{game.session.pk}/"),
            (game.commissario, "/floor/"),
            (auditor, f"/desk/days/{game.session.gaming_day_id}/"),
        ]:
            html = client_for(user).get(url, HTTP_ACCEPT_LANGUAGE=language).content.decode()
            assert not EURO_THEN_PLAIN_SPACE.search(html), (language, url, html[EURO_THEN_PLAIN_SPACE.search(html).start() - 80:][:160])
        # the tablet says its amounts (the bank, the cagnotte) with the no-break space
        tablet = client_for(game.capo).get(f"/tablet/sessions/{game.session.pk}/", HTTP_ACCEPT_LANGUAGE=language)
        assert re.search(r"€\xa0\d", tablet.content.decode()), language


def _python_strings(path: Path):
    import io
    import tokenize

    for token in tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline):
        if token.type == tokenize.STRING:
            yield token.start[0], token.string


def test_no_euro_sign_is_written_with_a_plain_space_in_the_sources():
    """Every text the pages may show: the templates, the catalogue (msgid and msgstr), the
    tablet's script and the Python strings of the views (their messages). Docstrings may say
    "€ 1,000" as prose; they are not shown."""
    root = Path(settings.BASE_DIR)
    found = []
    for path in [*root.glob("templates/**/*.html"), root / "locale/it/LC_MESSAGES/django.po",
                 *root.glob("*/static/**/*.js")]:  # fmt: skip
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.lstrip().startswith("//"):  # the script's comments are not shown
                continue
            if EURO_THEN_PLAIN_SPACE.search(line) or re.search(r"\"€ \"", line):
                found.append(f"{path.relative_to(root)}:{number}")
    for package in ("tables", "floor", "audit"):
        for path in (root / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            for number, text in _python_strings(path):
                if EURO_THEN_PLAIN_SPACE.search(text) and not text.lstrip("rbuf").startswith(('"""', "'''")):
                    found.append(f"{path.relative_to(root)}:{number}")
                if "€\\u00a0" in text or "€\\xa0" in text:  # an escape: xgettext reads it as is, untranslated
                    found.append(f"{path.relative_to(root)}:{number} (escaped)")
    assert not found, found
