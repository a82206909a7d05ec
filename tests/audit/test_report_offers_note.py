"""The day report's offers of the bank: a blank "Up to" (amount_max) is an offer with no
maximum, and the section's note says so, in the report's language, in the CSV, the PDF and the
XLSX (which prints a note under the header of a section with no rows, as for every section).
A version built before the note was written still verifies: verification holds each stored
file to the SHA-256 its build recorded, and never writes the words again."""

from __future__ import annotations

from pathlib import Path

import openpyxl
import pytest
from django.conf import settings

from audit.exports.xlsx import write_xlsx
from audit.models import DayReport
from audit.reports import builder
from audit.reports import services as report_services
from audit.reports.builder import build_document
from floor import services as floor_services
from tests.audit.test_exports import csv_blocks, pdf_text, written
from tests.tables.conftest import make_game  # noqa: F401  (fixture re-exported)
from tests.tables.test_succession import accept, lose, pass_

pytestmark = pytest.mark.django_db

NOTE = "A blank 'Up to': no maximum."
NOTE_IT = "Un 'Fino a' vuoto: nessun massimo."
TITLE = "Offers of the bank, in the order of the right to it"


@pytest.fixture
def media(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def offered(make_game, commissario, media):  # noqa: F811
    """A table with no maximum: the banker loses, seat 2 passes, seat 3 takes the bank; the
    day closed. (The offers answered had no maximum: their "Up to" is blank.)"""
    game = make_game("venezia", seated=4, standing=0, min_seats_to_start=2)
    succ = lose(game)
    pass_(game, succ, game.seat(2))
    accept(game, succ, game.seat(3), 300_00)
    day = game.session.gaming_day
    floor_services.gaming_day_close(gaming_day=day, by=commissario, open_sessions="close")
    day.refresh_from_db()
    return day


def _build(day) -> DayReport:
    report = report_services.report_build(gaming_day_id=day.pk)
    assert report.status == DayReport.Status.DONE, report.error
    return report


def _data(report: DayReport, fmt: str) -> bytes:
    return (Path(settings.MEDIA_ROOT) / report.files.get(format=fmt).path).read_bytes()


def _section(day, language: str = "en"):
    built = build_document(day=day, version=1, seal="s", streams=[], language=language)
    return next(s for s in built.document.sections if s.key == "succession_offers")


def test_the_note_says_a_blank_up_to_is_no_maximum(offered, tmp_path):
    section = _section(offered)
    assert section.note == NOTE
    maxima = [row[[c.key for c in section.columns].index("amount_max")] for row in section.rows()]
    assert maxima and set(maxima) == {None}  # the blanks the note explains
    assert _section(offered, "it").note == NOTE_IT
    report = _build(offered)
    _preamble, blocks = csv_blocks(_data(report, "csv"))
    block = blocks[TITLE]
    assert block[0] == [f"# {NOTE}"]  # above the header, as the other sections' notes
    header = block[1]
    assert all(row[header.index("amount_max_eur")] == "" for row in block[2:]) and block[2:]
    text = pdf_text(_data(report, "pdf"), tmp_path, drawn_order=True)
    if text is not None:
        assert NOTE in " ".join(text.split())


def test_the_xlsx_says_it_under_an_empty_section(make_game, commissario, media, tmp_path):  # noqa: F811
    """The XLSX prints a section's note under its header when it has no rows (its writer's
    rule for every section's note)."""
    day = make_game("venezia").session.gaming_day
    floor_services.gaming_day_close(gaming_day=day, by=commissario, open_sessions="close")
    day.refresh_from_db()
    for language, note in (("en", NOTE), ("it", NOTE_IT)):
        doc = build_document(day=day, version=1, seal="s", streams=[], language=language).document
        path = tmp_path / f"{language}.xlsx"
        path.write_bytes(written(write_xlsx, doc))
        book = openpyxl.load_workbook(path, read_only=True)
        cells = [str(c) for sheet in book.worksheets for row in sheet.iter_rows(values_only=True) for c in row if c]
        assert any(note in c for c in cells), (language, [c for c in cells if "Up to" in c or "Fino a" in c])


def test_a_version_built_before_the_note_still_verifies(offered, monkeypatch):
    """Built with the old words (the section with no note), then verified with the new: ok.
    Verification recomputes the stored files' SHA-256 against the rows and the `report.built`
    event, and the summary's digest; it never writes the report's words again."""
    section = builder.Section

    def before_the_note(key, *args, **kwargs):
        if key == "succession_offers":
            kwargs.pop("note", None)
        return section(key, *args, **kwargs)

    monkeypatch.setattr(builder, "Section", before_the_note)
    report = _build(offered)
    monkeypatch.undo()
    assert NOTE.encode() not in _data(report, "csv")  # the old words
    assert _section(offered).note == NOTE  # the words now
    verdict = report_services.report_verify(report=DayReport.objects.get(pk=report.pk))
    assert verdict["ok"], verdict["reasons"]
    assert verdict["reasons"] == [] and all(f["ok"] for f in verdict["files"])


def test_the_tables_section_says_each_profile_by_its_title_and_code(offered):
    """The Tables section gave the rules profile by its code alone ("chemmy-fi"), where the
    floor and the tablet say its title: it reads the title in the report's language with the
    code, the CLI's and the README's name for it."""
    from django.utils.translation import override

    from tables.wording import PROFILE_TITLES

    def profiles(language: str) -> list[str]:
        built = build_document(day=offered, version=1, seal="s", streams=[], language=language)
        section = next(s for s in built.document.sections if s.key == "tables")
        at = [c.key for c in section.columns].index("profile")
        return [row[at] for row in section.rows()]

    with override("en"):
        english = f"{PROFILE_TITLES['venezia']} (venezia)"
    assert profiles("en") == [english]
    with override("it"):
        italian = f"{PROFILE_TITLES['venezia']} (venezia)"
    assert profiles("it") == [italian]
