"""The end-of-day report read as the Casinò di Venezia's auditor reads it, in Italian: each
word the files show in the report's language, each column told apart from the others by its
title, each note whole."""

from __future__ import annotations

import pytest
from django.utils import translation

from audit.exports.formatting import datetime_display
from audit.models import DayReport
from audit.reports.builder import build_document
from audit.reports.ledger import UNUSED
from tests.audit.test_reports import closed as closed
from tests.audit.test_reports import media as media  # the fixtures of the day the reports test
from tests.audit.test_reports import world as world

pytestmark = pytest.mark.django_db


def _document(day, language: str):
    report = DayReport.objects.get(gaming_day=day, version=1)
    return build_document(day=day, version=1, seal=report.seal, streams=report.sealed_streams,
                          language=language).document  # fmt: skip


def test_a_card_the_reconstruction_left_unused_is_said_so_in_italian_and_stays_a_code_in_the_csv(closed):
    """The settlement voids the cards a reconstruction did not use with its own reason, which the
    PDF and the XLSX printed in English in an Italian report ("unused by the reconstruction");
    a reason the Capo Partita typed stays as he typed it."""
    with translation.override("it"):
        section = next(s for s in _document(closed.day, "it").sections if s.key == "voided_cards")
        reason = next(c for c in section.columns if c.key == "reason")
        assert reason.shown(UNUSED) == "non usata dalla ricostruzione"
        assert reason.shown("carta scoperta") == "carta scoperta"
    english = next(s for s in _document(closed.day, "en").sections if s.key == "voided_cards")
    assert next(c for c in english.columns if c.key == "reason").shown(UNUSED) == UNUSED


@pytest.mark.parametrize("language", ["it", "en"])
def test_each_column_of_a_section_has_a_title_of_its_own(closed, language):
    """The coups' "Bank" (its number) and "Banco" (a banco solo, yes or no) were both "Banco" in
    Italian: two columns an auditor could not tell apart in the PDF and the XLSX."""
    with translation.override(language):
        for section in _document(closed.day, language).sections:
            titles = [c.title for c in section.columns]
            assert len(set(titles)) == len(titles), (section.key, titles)


def test_the_day_s_opening_and_close_read_as_the_casino_s_clock_among_the_facts(closed):
    """The facts said "2026-12-03T18:18:35+01:00" (ISO, with its "T" and the offset) where every
    other time of the PDF reads the wall clock, "2026-12-03 18:18:35"; the same text went to
    the CSV's preamble and the XLSX's summary."""
    day = closed.day
    with translation.override("it"):
        facts = dict(_document(day, "it").facts)
    assert facts["Aperta"] == datetime_display(day.opened_at) and "T" not in facts["Aperta"]
    assert facts["Chiusa"] == datetime_display(day.closed_at) and "+" not in facts["Chiusa"]


def test_a_relief_of_the_staff_is_a_cambio_turno_in_italian(closed):
    """A relief (a croupier's or a changeur's) is a "cambio turno" to a Venetian reader; a bare
    "cambio" is the cash exchanged at the table ("Cambi di denaro ai tavoli")."""
    with translation.override("it"):
        titles = {s.key: s.title for s in _document(closed.day, "it").sections}
    assert titles["staff_changes"] == "Cambi del personale (il cambio turno dei croupier)"
    assert titles["cash_exchanges"] == "Cambi di denaro ai tavoli (changeur)"
