"""The pages in Italian: every string the code marks for translation has its Italian in the
catalogue, and an evening played in Italian shows no English."""

from __future__ import annotations

import ast
import re
import shutil
import uuid
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import Client

from audit.models import CagnotteCount, DayReport
from audit.tasks import report_build
from tables.models import Auction, Bank, Coup, Shoe, Succession

CATALOGUE = Path(settings.BASE_DIR) / "locale" / "it" / "LC_MESSAGES" / "django.po"
SOURCES = ("audit", "config", "floor", "tables", "templates")


def po_entries(text: str) -> list[dict]:
    """A .po file's entries: their flags, msgid and translations (msgstr, msgstr[n])."""
    entries = []
    for block in text.split("\n\n"):
        entry: dict = {"flags": "", "msgstr": []}
        key = None
        for line in block.splitlines():
            if line.startswith("#,"):
                entry["flags"] += line
            elif line.startswith("#"):
                continue
            elif line.startswith(("msgid ", "msgid_plural ", "msgstr")):
                key, _, rest = line.partition(" ")
                if key.startswith("msgstr"):
                    entry["msgstr"].append(ast.literal_eval(rest))
                else:
                    entry[key] = ast.literal_eval(rest)
            elif line.startswith('"') and key:
                if key.startswith("msgstr"):
                    entry["msgstr"][-1] += ast.literal_eval(line)
                else:
                    entry[key] += ast.literal_eval(line)
        if entry.get("msgid"):  # (the header's msgid is empty)
            entries.append(entry)
    return entries


def untranslated(text: str) -> list[str]:
    """The msgids with no Italian, or only a fuzzy guess (which Django does not use)."""
    return [e["msgid"] for e in po_entries(text) if "fuzzy" in e["flags"] or not all(e["msgstr"])]


def test_the_catalogue_has_no_fuzzy_or_empty_translation():
    assert untranslated(CATALOGUE.read_text()) == []


@pytest.mark.skipif(not shutil.which("xgettext"), reason="makemessages needs GNU gettext's xgettext")
def test_every_string_marked_in_the_code_is_translated(tmp_path, monkeypatch, settings):
    """`makemessages -l it` over a copy of the sources, into a copy of the catalogue: a string
    marked in the code and missing from the catalogue (new, or its English changed since it
    was translated, which makemessages turns into a fuzzy guess) was shown in English on the
    Italian pages: the audit desk's checks said a dozen of their findings so."""
    base = Path(settings.BASE_DIR)
    for name in SOURCES:
        shutil.copytree(
            base / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__", "migrations", "static")
        )
    copy = tmp_path / "locale" / "it" / "LC_MESSAGES"
    copy.mkdir(parents=True)
    shutil.copy(CATALOGUE, copy / "django.po")
    settings.LOCALE_PATHS = [tmp_path / "locale"]
    monkeypatch.chdir(tmp_path)
    call_command("makemessages", locale=["it"], verbosity=0)
    assert untranslated((copy / "django.po").read_text()) == []


# ------------------------------------------------------------------ an evening in Italian
# Words of the English pages, any of which on an Italian page is a string left untranslated
# (the French terms the floor uses, "avec la table", are taken out first).
ENGLISH = re.compile(
    r"\b(the|is|are|was|has|have|been|of|and|with|from|this|that|not|by|to|its|his|which|must|please|error|"
    r"bank|bets?|cards?|player|table|session|day|report|left|out|voided|seats?|streams?|events?|checked|"
    r"books|trail|withdrew|barred|open|closed|coup)\b",
    re.IGNORECASE,
)
FRENCH = ("avec la table",)
# The seat map's initials of a patron's first and last name, a text of their own.
INITIALS = re.compile(r"[A-ZÀ-ÖØ-Þ]{1,3}")
# Italian said wrongly: a count of one with a plural ("1 uscite", "Tavolo 1: 1 posti occupati"),
# a time given as a date ("chiusa alle 2026-12-02 12:19"), a man's participle after any
# patron's name ("Alessia Oliboni si è ritirato.", "Dolores Parini è escluso dal tenere..."), the
# cagnotte expected headed "Attesa" (waiting, as the desk's "in attesa" says), the bank's part
# no bet covers said "aperto" (the page's word for it is "scoperto").
WRONG = re.compile(
    r"(?<![\d.,\u202f])\b1 (uscite|rimaste|annullate|posti|flussi|eventi|righe)\b|\balle \d{4}-\d\d-\d\d"
    r"|si è ritirato\.|è escluso dal|^Attesa$|^· aperto$"
)
# The attributes whose words are read (title, aria-label...) or shown by chemin.js (data-slow...).
READ = {"title", "aria-label", "placeholder", "alt"}
SHOWN_BY_JS = {
    "data-one", "data-many", "data-slow", "data-held", "data-unconfirmed", "data-resend", "data-discard",
    "data-sent", "data-refused", "data-card-waiting", "data-card-dropped", "data-entry",
}  # fmt: skip


class _Words(HTMLParser):
    """A page's words as its user reads or hears them: its text and the attributes above."""

    def __init__(self):
        super().__init__()
        self.words: list[str] = []
        self.lang: str | None = None
        self._hidden = 0

    def handle_starttag(self, tag, attrs):
        if tag == "html":
            self.lang = dict(attrs).get("lang")
        if tag in ("script", "style"):
            self._hidden += 1
        self.words += [value for name, value in attrs if value and (name in READ or name in SHOWN_BY_JS)]

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self._hidden -= 1

    def handle_data(self, data):
        if not self._hidden and data.strip():
            self.words.append(" ".join(data.split()))


class Evening:
    """Every page and answer seen in the evening, checked for English and wrong Italian."""

    def __init__(self):
        self.problems: list[str] = []
        self.seen = 0

    def client(self, user=None) -> Client:
        client = Client(HTTP_ACCEPT_LANGUAGE="it")
        if user is not None:
            client.force_login(user)
        return client

    def check(self, response, what: str):
        assert response.status_code < 500, (what, response.status_code)
        if not response.get("Content-Type", "").startswith("text/html") or not response.content:
            return response
        self.seen += 1
        page = _Words()
        page.feed(response.content.decode())
        if page.lang not in (None, "it"):  # (an htmx panel has no <html>)
            self.problems.append(f"{what}: lang={page.lang}")
        for line in page.words:
            text = re.sub(r"\{\w+\}", "", line)  # (chemin.js's placeholders: {card}, {entry})
            for term in FRENCH:
                text = text.replace(term, "")
            if INITIALS.fullmatch(text):
                continue  # a seat's initials ("IS": Ilaria Serra, a random patron), not a word
            if ENGLISH.search(text) or WRONG.search(text):
                self.problems.append(f"{what}: {line}")
        return response

    def get(self, client, url):
        return self.check(client.get(url), f"GET {url}")

    def post(self, client, url, **data):
        data.setdefault("idempotency_key", str(uuid.uuid4()))
        return self.check(client.post(url, data), f"POST {url} {data}")


def _play_the_evening(evening: Evening, game, quiet, auditor, direzione, capture) -> None:
    capo, floor = evening.client(game.capo), evening.client(game.commissario)
    session = game.session
    tablet = f"/tablet/sessions/{session.pk}/"
    table = f"/floor/tables/{session.table.pk}/"

    def act(action, client=capo, **data):
        return evening.post(client, f"{tablet}{action}/", **data)

    def coup():
        act("coup-open")
        return Coup.objects.filter(session=session).latest("pk").pk

    for url in ("/", "/tablet/", tablet):
        evening.get(capo, url)
    evening.get(floor, "/floor/")
    evening.get(floor, f"{table}live/")
    # A Regola coup played wrongly, reconstructed; the refusals the tablet can be given meanwhile.
    act("regola", patron=game.banker.pk, declared="true")
    first = coup()
    act("card", coup=first, rank="5", suit="H")  # before rien ne va plus
    act("bet", coup=first, patron=game.seat(2).pk, quick="custom", amount="5000")  # over the bank
    act("bet", coup=first, patron="", quick="custom", amount="100")  # nobody chosen
    act("bet", coup=first, patron=game.seat(3).pk, quick="custom", amount="cento")
    act("bet", coup=first, patron=game.seat(2).pk, quick="banco")
    act("bet", coup=first, patron=game.seat(3).pk, quick="custom", amount="100")  # banco covers it all
    act("rien-ne-va-plus", coup=first)
    act("bet", coup=first, patron=game.seat(4).pk, quick="custom", amount="100")  # after rien ne va plus
    act("card", coup=first, rank="Z", suit="H")
    for rank, suit in (("2", "S"), ("K", "H"), ("3", "C"), ("3", "D")):
        act("card", coup=first, rank=rank, suit=suit)
    evening.get(capo, tablet)
    act("punta", coup=first, draws="false")
    act("banker-stand", coup=first)
    evening.get(capo, tablet)
    act("reconstruction-card", coup=first, rank="5", suit="H")
    # A tie (7 against 7), a card voided, a player barred.
    tie = coup()
    act("bet", coup=tie, patron=game.seat(2).pk, quick="custom", amount="100")
    act("rien-ne-va-plus", coup=tie)
    for rank, suit in (("K", "S"), ("K", "D"), ("7", "C"), ("7", "D")):
        act("card", coup=tie, rank=rank, suit=suit)
    act("punta", coup=tie, draws="false")
    act("banker-stand", coup=tie)
    act("void", rank="7", suit="C", reason="vista scoperta")
    act("bar", patron=game.seat(3).pk, reason="falso tiraggio")
    # The banker withdraws: the bank offered in turn, passed by all, then the asta.
    act("bank-withdraw", bank=Bank.objects.get(session=session, status="active").pk)
    succession = Succession.objects.get(session=session)
    act("offer-accept", succession=succession.pk, patron=game.seat(5).pk, amount="1")  # not his turn
    for seat in range(2, 9):
        act("offer-pass", succession=succession.pk, patron=game.seat(seat).pk)
    act("auction-open", client=floor)
    auction = Auction.objects.get(session=session).pk
    act("auction-bid", auction=auction, patron=game.seat(4).pk, amount="5")  # under the minimum
    act("auction-bid", auction=auction, patron=game.seat(4).pk, amount="2000")
    act("auction-bid", auction=auction, patron=game.standing[0].pk, amount="2000")
    evening.get(capo, tablet)
    act("auction-close", client=floor, auction=auction)
    # The stop card, a new sabot.
    shoe = Shoe.objects.filter(session=session).latest("pk")
    Shoe.objects.filter(pk=shoe.pk).update(stop_card_reached_at=shoe.loaded_at)
    act("coup-open")
    evening.get(capo, tablet)
    act("shoe-load", number="S-2")
    # The floor: a minimum without its reason, an interruption, the close.
    evening.post(floor, f"{table}minimum/", session=session.pk, minimum="200", reason="")
    evening.post(floor, f"{table}interrupt/", session=session.pk, reason="contestazione")
    evening.get(capo, tablet)
    evening.post(floor, f"{table}resume/", session=session.pk)
    evening.post(floor, f"{table}close/", session=session.pk)  # not confirmed
    evening.post(floor, f"{table}close/", session=session.pk, confirm="yes")
    evening.post(floor, f"/floor/tables/{quiet.session.table.pk}/close/", session=quiet.session.pk, confirm="yes")
    evening.get(capo, tablet)
    day = session.gaming_day
    with capture(execute=True):
        evening.post(floor, f"/floor/days/{day.pk}/close/", confirm="yes")
    report_build.delay(day.pk)  # (the close sends it by name, which eager mode skips)
    report = DayReport.objects.get(gaming_day=day)
    evening.get(floor, "/floor/")
    # The desk: the auditor's pages, the Direzione's count, then that count edited in SQL.
    desk = evening.client(auditor)
    for url in ("/desk/", f"/desk/days/{day.pk}/", "/desk/verify/", f"/desk/reports/{report.pk}/"):
        evening.get(desk, url)
    evening.post(desk, "/desk/verify/")
    direction = evening.client(direzione)
    evening.post(direction, f"/desk/days/{day.pk}/cagnotte/", table=session.table.pk, counted="", witness=auditor.pk)
    evening.post(direction, f"/desk/days/{day.pk}/cagnotte/", table=session.table.pk, counted="5,10",
                 witness=auditor.pk, note="")  # fmt: skip
    CagnotteCount.objects.update(counted=1)
    evening.post(direction, f"/desk/days/{day.pk}/register/")
    evening.get(direction, f"/desk/days/{day.pk}/")
    evening.post(desk, f"/desk/reports/{report.pk}/verify/")
    # Refusal pages, the login, the lockout.
    evening.get(capo, "/floor/")
    evening.get(capo, "/desk/")
    evening.get(capo, "/nowhere/")
    stranger = evening.client()
    evening.get(stranger, "/accounts/login/")
    for _ in range(6):
        evening.post(stranger, "/accounts/login/", username=game.capo.username, password="wrong")
    evening.post(stranger, "/admin/login/", username="nobody", password="wrong")


def test_an_evening_in_italian_shows_no_english(make_game, auditor, direzione, settings, tmp_path,
                                                django_capture_on_commit_callbacks):  # fmt: skip
    """Found so: the plurals of one ("Sabot S-1: 1 uscite, ..., 1 annullate", "Tavolo 1: 1 posti
    occupati"), a day "chiusa alle 2026-12-02 12:19", the desk's findings of books edited behind
    the services in English."""
    settings.MEDIA_ROOT = tmp_path
    evening = Evening()
    game = make_game("venezia")
    quiet = make_game("venezia", seated=1, standing=0, bank=None, shoe=False)  # one player yet
    _play_the_evening(evening, game, quiet, auditor, direzione, django_capture_on_commit_callbacks)
    assert evening.seen > 80
    assert evening.problems == [], "\n".join(evening.problems)


# ------------------------------------------------------------- the tablet's script's words
class _Attributes(HTMLParser):
    def __init__(self):
        super().__init__()
        self.values: dict[str, list[str]] = {}

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in SHOWN_BY_JS:
                self.values.setdefault(name, []).append(value or "")


def _script_words(client, url: str, language: str) -> dict[str, list[str]]:
    page = _Attributes()
    page.feed(client.get(url, HTTP_ACCEPT_LANGUAGE=language).content.decode())
    return page.values


def test_the_words_chemin_js_shows_come_from_the_page_in_its_language(client_for, game):
    """The offline queue's lines, the cards waiting, the confirmations: chemin.js writes no
    words of its own, it fills in the page's (data-slow, data-card-waiting...), which are
    Italian on an Italian page."""
    client = client_for(game.capo)
    client.post(f"/tablet/sessions/{game.session.pk}/coup-open/", {"idempotency_key": str(uuid.uuid4())})
    url = f"/tablet/sessions/{game.session.pk}/"
    italian, english = _script_words(client, url, "it"), _script_words(client, url, "en")
    assert set(italian) == SHOWN_BY_JS
    for name, values in italian.items():
        assert all(values) and values != english[name], name
    source = (Path(settings.BASE_DIR) / "tables" / "static" / "tables" / "chemin.js").read_text()
    source = re.sub(r"(?m)//.*$", "", re.sub(r"/\*.*?\*/", "", source, flags=re.S))  # (its comments)
    literals = re.findall(r'"((?:[^"\\\n]|\\.)*)"', source) + re.findall(r"'((?:[^'\\\n]|\\.)*)'", source)
    sentences = {s for s in literals if re.search(r"[A-Za-z]{2,}\s+[A-Za-z]{2,}", s) and not re.search(r"[#.\[]", s)}
    assert sentences == {"use strict", "another tab is sending"}  # (an error's message, compared, never shown)


def test_each_language_is_offered_by_its_own_name(client_for, game):
    """The switch offered "Inglese" marked lang="en" on an Italian page: read out with English
    sounds, and not found by whoever looks for English."""
    html = client_for(game.capo).get("/tablet/", HTTP_ACCEPT_LANGUAGE="it").content.decode()
    offered = dict(re.findall(r'<option value="(\w+)"[^>]*lang="\w+">([^<]+)</option>', html))
    assert offered == {"en": "English", "it": "Italiano"}


def test_an_open_gaming_day_is_aperta_beside_the_closed_ones_chiusa(client_for, auditor, gaming_day):
    html = client_for(auditor).get("/desk/", HTTP_ACCEPT_LANGUAGE="it").content.decode()
    assert '<span class="status open">aperta</span>' in html  # (it was "aperto", a giornata being "chiusa")


def test_a_bet_carried_from_a_tie_says_egalite_as_the_result_did(replay_after_tie):
    """The result said "Égalité: colpo nullo.", the carried bet under it "riportata dal pareggio"."""
    game, client = replay_after_tie
    html = client.get(f"/tablet/sessions/{game.session.pk}/", HTTP_ACCEPT_LANGUAGE="it").content.decode()
    assert "title=\"riportata dall'égalité\"" in html and "pareggio" not in html
