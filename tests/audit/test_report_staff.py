"""The day report names every member of staff it names as its sessions register does, "Full
Name (username)" (a user with no name: the username alone): each "By", "Entered by", "Opened
by", "Closed by", "Interrupted by", "Resumed by", "Annulled by", "Loaded by", "Recorded by",
"Handed back by" and "Voided by" printed a bare username beside the croupiers named in full. In
the CSV, the XLSX and the PDF, in English and in Italian. The sections that stream their rows
name them in SQL (floor.selectors.staff_said), in the queries they had. The cagnotte register's
API keeps its usernames. A version built with the bare usernames still verifies: its files are
held to the SHA-256 its build recorded, and verification compares people by their ids."""

from __future__ import annotations

import io
from pathlib import Path

import openpyxl
import pytest
from django.conf import settings
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext

from audit.models import DayReport
from audit.reports import builder, registers, unclaimed
from audit.reports import services as report_services
from audit.reports.builder import build_document
from floor import selectors as floor_selectors
from floor import services as floor_services
from floor.roles import Role
from tables import report_selectors
from tables import services as table_services
from tests.audit.conftest import named, staff_said
from tests.audit.test_exports import csv_blocks, pdf_text
from tests.audit.test_reports import media as media  # the fixtures of the day the reports test
from tests.tables.conftest import make_game  # noqa: F401  (fixture re-exported)
from tests.tables.test_succession import pass_, withdraw

pytestmark = pytest.mark.django_db


@pytest.fixture
def evening(make_game, commissario, direzione, changeur, make_user, media):  # noqa: F811
    """One table whose every section names staff: the banker withdraws, both players pass, the
    asta opened, bid at and closed by the Capo Partita Paolo Rossi; the Commissario Marco Conti
    changes the minimum, relieves the changeur and interrupts the session, which
    a Commissario with no name resumes; Paolo voids a card, bars a player and annuls a coup; the changeur Gino
    Bassi exchanges cash, a line the Commissario voids; an unclaimed stake recorded by the
    Commissario and handed back by the Direzione Carla Verdi. The day closed."""
    game = make_game("venezia", seated=3, min_seats_to_start=2)
    named(game.capo, "Paolo", "Rossi")
    named(commissario, "Marco", "Conti")
    named(direzione, "Carla", "Verdi")
    named(changeur, "Gino", "Bassi")
    session = game.session
    succ = withdraw(game)
    pass_(game, succ, game.seat(2), game.seat(3))
    auction = table_services.auction_open(session=session, by=game.capo)
    table_services.auction_bid(auction=auction, by=game.capo, patron=game.seat(2), amount=200_00)
    table_services.auction_close(auction=auction, by=game.capo)
    table_services.card_void(session=session, by=game.capo, card="QS", reason="seen face up in the sabot")
    table_services.faux_tirage_bar(session=session, by=game.capo, patron=game.seat(3), reason="drew on 7")
    floor_services.table_minimum_change(session=session, by=commissario, minimum=150_00, reason="busy evening")
    coup = table_services.coup_open(session=session, by=game.capo)
    table_services.coup_annul(coup=coup, by=game.capo, reason="sabot dropped")
    line = table_services.cash_exchange_record(session=session, by=changeur, direction="buy_in", amount=500_00,
                                               patron=game.seat(2))  # fmt: skip
    table_services.cash_exchange_void(exchange=line, by=commissario, reason="wrong patron")
    relief = named(make_user("changeur_anna", Role.CHANGEUR), "Anna", "Bianchi")
    floor_services.table_session_staff_change(session=session, by=commissario, changeur=relief, reason="break")
    floor_services.table_session_interrupt(session=session, by=commissario, reason="dispute")
    nameless = named(make_user("commissario_x", Role.COMMISSARIO), "", " ")  # a blank name: none
    floor_services.table_session_resume(session=session, by=nameless, reason="settled")
    stake = unclaimed.unclaimed_deposit_record(session=session, by=commissario, kind="stake", amount=100_00,
                                               deposited_in="busta 1")  # fmt: skip
    unclaimed.unclaimed_deposit_return(deposit=stake, by=direzione, returned_to="M. Rossi", note="same night")
    day = session.gaming_day
    floor_services.gaming_day_close(gaming_day=day, by=commissario, open_sessions="close")
    day.refresh_from_db()
    game.day, game.nameless, game.changeur = day, nameless, changeur
    return game


def _expected(game) -> dict[tuple[str, str], set]:
    """(section, column) -> the people its rows name (a blank cell left out)."""
    capo, boss = staff_said(game.capo), staff_said(game.commissario)
    return {
        ("interruptions", "interrupted_by"): {boss}, ("interruptions", "resumed_by"): {"commissario_x"},
        ("minimum_changes", "by"): {boss}, ("staff_changes", "by"): {boss},
        ("shoes", "loaded_by"): {capo}, ("annulled", "annulled_by"): {capo}, ("voided_cards", "by"): {capo},
        ("faux_tirage_bars", "by"): {capo}, ("successions", "ended_by"): {capo},
        ("succession_offers", "answered_by"): {capo}, ("auctions", "opened_by"): {capo},
        ("auctions", "closed_by"): {capo}, ("auction_bids", "by"): {capo},
        ("unclaimed", "recorded_by"): {boss}, ("unclaimed", "returned_by"): {"Carla Verdi (direzione)"},
        ("cash_exchanges", "by"): {"Gino Bassi (changeur)"}, ("cash_exchanges", "voided_by"): {boss},
    }  # fmt: skip


def _document(day, language: str = "en"):
    return build_document(day=day, version=1, seal="s", streams=[], language=language,
                          counts=list(registers.current_counts(gaming_day_id=day.pk)),
                          count_history=list(registers.day_counts(gaming_day_id=day.pk))).document  # fmt: skip


def _named_in(document) -> dict[tuple[str, str], set]:
    out = {}
    sections = {s.key: s for s in document.sections}
    for section, column in _expected_keys():
        keys = [c.key for c in sections[section].columns]
        out[(section, column)] = {row[keys.index(column)] for row in sections[section].rows()} - {None, ""}
    return out


def _expected_keys():
    return [("interruptions", "interrupted_by"), ("interruptions", "resumed_by"), ("minimum_changes", "by"),
            ("staff_changes", "by"), ("shoes", "loaded_by"), ("annulled", "annulled_by"), ("voided_cards", "by"),
            ("faux_tirage_bars", "by"), ("successions", "ended_by"), ("succession_offers", "answered_by"),
            ("auctions", "opened_by"), ("auctions", "closed_by"), ("auction_bids", "by"),
            ("unclaimed", "recorded_by"), ("unclaimed", "returned_by"), ("cash_exchanges", "by"),
            ("cash_exchanges", "voided_by")]  # fmt: skip


def test_every_section_names_each_member_of_staff_in_full_with_the_username(evening):
    want = _expected(evening)
    assert _named_in(_document(evening.day)) == want
    assert _named_in(_document(evening.day, "it")) == want  # names are no words: the same in Italian


def _files(report: DayReport) -> dict[str, bytes]:
    return {f.format: (Path(settings.MEDIA_ROOT) / f.path).read_bytes() for f in report.files.all()}


@pytest.mark.parametrize("language", ["en", "it"])
def test_the_csv_the_xlsx_and_the_pdf_name_them_alike_and_the_report_verifies(evening, language, tmp_path, api,
                                                                              auditor):  # fmt: skip
    settings.REPORT_LANGUAGE = language
    report = report_services.report_build(gaming_day_id=evening.day.pk)
    assert report.status == DayReport.Status.DONE and report.language == language, report.error
    files = _files(report)
    document = _document(evening.day, language)
    sections = {s.key: s for s in document.sections}
    want = _expected(evening)
    _preamble, blocks = csv_blocks(files["csv"])
    book = openpyxl.load_workbook(io.BytesIO(files["xlsx"]), read_only=True)
    for (key, column), people in want.items():
        section = sections[key]
        index = [c.key for c in section.columns].index(column)
        block = blocks[section.title]
        header = next(row for row in block if column in row)
        rows = block[block.index(header) + 1:]
        assert {row[header.index(column)] for row in rows} - {""} == people, (key, column, "csv")
        cells = list(book[section.sheet].iter_rows(values_only=True))
        title_row = next(i for i, row in enumerate(cells) if section.columns[index].title in row)
        assert {row[index] for row in cells[title_row + 1:] if row and len(row) > index} - {None, ""} == people, (
            key, column, "xlsx")
    text = pdf_text(files["pdf"], tmp_path, drawn_order=True)
    if text is not None:
        flat = "".join(text.split())  # a name a narrow cell wrapped reads whole without its spaces
        for people in want.values():
            for person in people:
                assert "".join(person.split()) in flat, person
    r = api(auditor).post(f"/api/reports/{report.pk}/verify/")
    assert r.status_code == 200 and r.json()["ok"] is True and r.json()["reasons"] == [], r.json()


def _bare_usernames(monkeypatch):
    """The words before: every "By" the username, in the selectors and in the builder."""
    bare = lambda prefix: F(f"{prefix}__username")  # noqa: E731
    monkeypatch.setattr(floor_selectors, "staff_said", bare)
    monkeypatch.setattr(report_selectors, "staff_said", bare)
    monkeypatch.setattr(builder, "_who", lambda user: user.get_username())


def test_a_version_built_with_the_bare_usernames_still_verifies(evening, monkeypatch):
    with monkeypatch.context() as old:
        _bare_usernames(old)
        assert _named_in(_document(evening.day))[("shoes", "loaded_by")] == {evening.capo.username}
        report = report_services.report_build(gaming_day_id=evening.day.pk)
    assert report.status == DayReport.Status.DONE, report.error
    csv_text = _files(report)["csv"].decode()
    assert evening.capo.username in csv_text and staff_said(evening.capo) not in csv_text  # the old words
    assert _named_in(_document(evening.day)) == _expected(evening)  # the words now
    verdict = report_services.report_verify(report=DayReport.objects.get(pk=report.pk))
    assert verdict["ok"] and verdict["reasons"] == [], verdict["reasons"]
    assert all(f["ok"] for f in verdict["files"])


def _queries(day) -> int:
    with CaptureQueriesContext(connection) as captured:
        for section in _document(day).sections:
            list(section.rows())
    return len(captured)


def test_naming_them_costs_no_query(evening, monkeypatch):
    """The build's queries, every section's rows read: as many as with the bare usernames, and
    as many with more people named (no user looked up per row)."""
    _queries(evening.day)  # warm: the day's casino, loaded once on the day's object
    named = _queries(evening.day)
    with monkeypatch.context() as old:
        _bare_usernames(old)
        assert _queries(evening.day) == named
    session = evening.session
    session.refresh_from_db()
    for n in range(3):  # more changes, more interruptions, more people who made them
        someone = _named_in_role(f"commissario_{n}", Role.COMMISSARIO, f"Nome{n}", f"Cognome{n}")
        from floor.models import MinimumChange, SessionInterruption, StaffChange

        StaffChange.objects.create(session=session, by=someone, at=session.closed_at,
                                   old_capo_partita=session.capo_partita, new_capo_partita=someone,
                                   old_changeur=session.changeur, new_changeur=session.changeur, reason="x")
        MinimumChange.objects.create(session=session, by=someone, at=session.closed_at, old=100_00, new=100_00,
                                     reason="x")
        SessionInterruption.objects.create(session=session, interrupted_by=someone, interrupted_at=session.closed_at,
                                           resumed_by=someone, resumed_at=session.closed_at, reason="x",
                                           interrupted_as="commissario")
    assert _queries(evening.day) == named


def _named_in_role(username, role, first, last):
    from tests.factories import UserFactory

    return UserFactory(username=username, roles=[role], first_name=first, last_name=last)


def test_the_cagnotte_registers_api_keeps_the_usernames(evening, api, auditor):
    """The register's API (its interruptions' `by`, its shoes' `loaded_by`) is not the report's
    files: it says usernames, as before."""
    body = api(auditor).get(f"/api/gaming-days/{evening.day.pk}/cagnotte-register/").json()
    session = body["tables"][0]["sessions"][0] if "tables" in body else body[0]["sessions"][0]
    [interruption] = session["interruptions"]
    assert (interruption["by"], interruption["resumed_by"]) == ("commissario", "commissario_x")
    assert {shoe["loaded_by"] for shoe in session["shoes"]} == {evening.capo.username}


def test_the_sql_strips_a_name_as_get_full_name_does():
    assert "".join(c for c in map(chr, range(0x110000)) if c.isspace()) == floor_selectors.STRIPPED
