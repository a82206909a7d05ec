"""The day report names a person as its sessions register does, "Full Name (username)" (a user
with no name: the username): the staff changes' croupiers and changeurs and the cagnotte counts'
counter and witness printed a bare username. Who made a change is named so too, as every
section's "By" (tests/audit/test_report_staff.py). A version built before still verifies: its files are held to the SHA-256 its
build recorded, never written again."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from django.conf import settings

from audit.models import DayReport
from audit.reports import builder, registers
from audit.reports import services as report_services
from audit.reports.builder import build_document
from floor import services as floor_services
from floor.roles import Role
from tables import report_selectors
from tests.audit.conftest import named, staff_said
from tests.audit.test_reports import media as media  # the fixtures of the day the reports test
from tests.tables.conftest import make_game  # noqa: F401  (fixture re-exported)

pytestmark = pytest.mark.django_db


@pytest.fixture
def relieved(make_game, commissario, direzione, auditor, make_user, media):  # noqa: F811
    """The changeur Mario Rossi relieved by Anna Bianchi, then the croupier by a user with no
    name; the day closed and table 1's cagnotte counted by the Direzione, an auditor witness."""
    game = make_game("venezia")
    session = game.session
    game.mario = named(session.changeur, "Mario", "Rossi")
    relief = named(make_user("changeur_anna", Role.CHANGEUR), "Anna", "Bianchi")
    floor_services.table_session_staff_change(session=session, by=commissario, changeur=relief, reason="break")
    nameless = named(make_user("capo_nameless", Role.CAPO_PARTITA), "", "")
    floor_services.table_session_staff_change(session=session, by=commissario, capo_partita=nameless,
                                              reason="break")  # fmt: skip
    named(direzione, "Carla", "Verdi")
    named(auditor, "Luca", "Neri")
    day = session.gaming_day
    floor_services.gaming_day_close(gaming_day=day, by=commissario, open_sessions="close")
    day.refresh_from_db()
    table = session.table
    registers.cagnotte_count_record(
        gaming_day=day, table=table, by=direzione, witness=auditor,
        counted=report_selectors.expected_cagnotte(gaming_day_id=day.pk, table_id=table.pk),
    )  # fmt: skip
    game.day = day
    return game


def _rows(day, key: str) -> list[dict]:
    built = build_document(day=day, version=1, seal="s", streams=[],
                           counts=list(registers.current_counts(gaming_day_id=day.pk)),
                           count_history=list(registers.day_counts(gaming_day_id=day.pk)))  # fmt: skip
    section = next(s for s in built.document.sections if s.key == key)
    keys = [c.key for c in section.columns]
    return [dict(zip(keys, row, strict=True)) for row in section.rows()]


def test_the_staff_changes_and_the_counts_name_each_person_as_the_register(relieved, commissario, direzione,
                                                                          auditor):  # fmt: skip
    capo, mario = relieved.session.capo_partita, relieved.mario
    first, second = _rows(relieved.day, "staff_changes")
    assert (first["by"], first["old_changeur"], first["new_changeur"]) == (
        staff_said(commissario), f"Mario Rossi ({mario.username})", "Anna Bianchi (changeur_anna)")
    assert first["old_capo_partita"] == first["new_capo_partita"] == f"{capo.get_full_name()} ({capo.username})"
    assert (second["old_capo_partita"], second["new_capo_partita"]) == (
        f"{capo.get_full_name()} ({capo.username})", "capo_nameless")  # no name: the username alone
    assert second["old_changeur"] == second["new_changeur"] == "Anna Bianchi (changeur_anna)"
    [count] = _rows(relieved.day, "cagnotte_counts")
    assert (count["counted_by"], count["witness"]) == (f"Carla Verdi ({direzione.username})",
                                                       f"Luca Neri ({auditor.username})")  # fmt: skip
    # As the sessions register names them.
    [session] = _rows(relieved.day, "sessions")
    assert session["changeur"] == f"Mario Rossi ({mario.username}) → Anna Bianchi (changeur_anna)"


def test_a_version_built_with_the_bare_usernames_still_verifies(relieved, monkeypatch):
    monkeypatch.setattr(builder, "_who", lambda user: user.get_username())  # the words before
    report = report_services.report_build(gaming_day_id=relieved.day.pk)
    monkeypatch.undo()
    assert report.status == DayReport.Status.DONE, report.error
    text = (Path(settings.MEDIA_ROOT) / report.files.get(format="csv").path).read_text("utf-8")
    lines = list(csv.reader(io.StringIO(text)))
    assert any("changeur_anna" in line and "Anna Bianchi (changeur_anna)" not in line for line in lines)
    assert _rows(relieved.day, "staff_changes")[0]["new_changeur"] == "Anna Bianchi (changeur_anna)"  # now
    verdict = report_services.report_verify(report=DayReport.objects.get(pk=report.pk))
    assert verdict["ok"] and verdict["reasons"] == [], verdict["reasons"]
