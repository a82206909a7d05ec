"""The end-of-day report in the casino's language (settings.REPORT_LANGUAGE, kept on the
report as DayReport.language): its words in Italian in the CSV, the XLSX and the PDF, its
machine-readable parts (the CSV's column keys and codes, the summary) the same as in English;
a rebuild writes the same bytes whatever the setting says by then; verification reads it
as it reads an English one."""

from __future__ import annotations

import io

import openpyxl
import pytest
from django.utils import translation

from audit.exports.document import Column, Money, ReportDocument, Section
from audit.exports.formatting import csv_header, display_cell, fact_text, money_display
from audit.models import DayReport
from audit.reports import services as report_services
from audit.reports.builder import build_document
from tables.models import Coup, Posting
from tests.audit.test_exports import csv_blocks, pdf_text, written
from tests.audit.test_reports import _file, close
from tests.audit.test_reports import closed as closed
from tests.audit.test_reports import direzione2 as direzione2
from tests.audit.test_reports import media as media  # the fixtures of the day the reports test
from tests.audit.test_reports import world as world

pytestmark = pytest.mark.django_db

TABLES_IT = "Tavoli: cifre della giornata e percentuale di vittorie del banchiere"
CASH_IT = "Cambi di denaro ai tavoli (changeur)"
NO_CASH_IT = "Nessun cambio di denaro ai tavoli in questa giornata."
NONCONF_IT = "Colpi non conformi: come giocati e ricostruiti (RULES.md §3.3)"


def _shas(report: DayReport) -> dict[str, str]:
    return dict(report.files.values_list("format", "sha256"))


def _rebuild(report: DayReport) -> DayReport:
    """The operator's rebuild (`manage.py report_build DAY VERSION`) of a report whose build is
    to be done again: every file written anew from the books and the report's row."""
    DayReport.objects.filter(pk=report.pk).update(status=DayReport.Status.FAILED, error="files lost")
    rebuilt = report_services.report_build(gaming_day_id=report.gaming_day_id, version=report.version, retry=True)
    assert rebuilt.status == DayReport.Status.DONE, rebuilt.error
    return DayReport.objects.get(pk=report.pk)


def _csv_headers(data: bytes) -> list[list[str]]:
    """Each section's header line (its column keys), in order."""
    _preamble, blocks = csv_blocks(data)
    return [next(r for r in block if not r[0].startswith("# ")) for title, block in blocks.items()
            if not title.startswith("Chart: ")]  # fmt: skip


def test_a_report_requested_in_italian_is_written_in_italian_with_the_same_keys(
    world, media, settings, api, auditor, tmp_path, django_capture_on_commit_callbacks
):
    settings.REPORT_LANGUAGE = "it"
    close(world, django_capture_on_commit_callbacks)
    report = DayReport.objects.get(gaming_day=world.day, version=1)
    assert report.status == DayReport.Status.DONE and report.language == "it"
    files = {fmt: _file(report, fmt).read_bytes() for fmt in ("csv", "xlsx", "pdf")}

    # CSV: the words in Italian, the keys (the header of each section) and the codes as in English.
    english = build_document(day=world.day, version=1, seal=report.seal, streams=report.sealed_streams,
                             language="en").document  # fmt: skip
    assert _csv_headers(files["csv"]) == [[csv_header(c) for c in s.columns] for s in english.sections]
    preamble, blocks = csv_blocks(files["csv"])
    assert preamble[0] == [f"# Chemin de Fer: rapporto di fine giornata, {world.day.date.isoformat()}"]
    assert ["# Giornata di gioco", f"{world.day.date.isoformat()} ({world.day.casino.name})"] in preamble
    assert ["# Cagnotte attesa (somma delle registrazioni della casa)", "51,20 EUR"] in preamble
    assert ["# Sigillo di audit (SHA-256 sulle teste dei flussi della giornata)", report.seal] in preamble
    tables = blocks[TABLES_IT]
    assert tables[0][0].startswith("# Percentuale prevista: probabilità esatte") and tables[0][0].endswith(
        "Binomiale esatta: tavoli 1, 2.")  # fmt: skip
    header, *rows = tables[1:]
    assert {r[header.index("method")] for r in rows} == {"exact binomial"}  # the code, as the summary keeps it
    assert blocks[CASH_IT] == [[f"# {NO_CASH_IT}"], [csv_header(c) for c in next(s for s in english.sections if s.key == "cash_exchanges").columns]]
    coups = blocks["Colpi: il prelievo di ogni colpo (art. 56-1)"]
    assert {r[coups[0].index("winner")] for r in coups[1:]} == {"banker", "punta", "tie"}
    assert any(r[coups[0].index("levy_eur")] == "26.20" for r in coups[1:])  # amounts stay plain decimals
    nonconf = blocks[NONCONF_IT]
    [coup] = nonconf[1:]
    violations = coup[nonconf[0].index("violations")]  # the tablet's words (tables.wording), in Italian
    assert violations == ("il banchiere non ha tirato con 3 contro la terza carta della punta 2D "
                          "(banchiere alla Regola: tirare)")  # fmt: skip
    assert coup[nonconf[0].index("reconstruction")] == "punta 5 (KH 3C 2D), banchiere 7 (2S AS 4H): vince il banchiere"
    assert report.summary["tables"]["1"]["banker_rate"]["method"] == "exact binomial"

    # XLSX: Italian sheets, titles, facts, code words; a section with no rows says so.
    wb = openpyxl.load_workbook(io.BytesIO(files["xlsx"]))
    assert wb.sheetnames[:3] == ["Riepilogo", "Tavoli", "Registro della cagnotte"]
    listing = {row[0]: row[1:] for row in wb["Riepilogo"].iter_rows(values_only=True) if row and row[0]}
    assert listing["Giornata di gioco"][0] == f"{world.day.date.isoformat()} ({world.day.casino.name})"
    assert listing["Colpi"][0] == 5
    ws = wb["Tavoli"]
    titles = [c.value for c in ws[1]]
    assert titles[:3] == ["Tavolo", "Profilo", "Mazzi"] and "Metodo 95%" in titles
    assert {row[titles.index("Metodo 95%")] for row in ws.iter_rows(min_row=2, values_only=True)} == {
        "binomiale esatta"}  # fmt: skip
    coups_ws = wb[listing["Colpi: il prelievo di ogni colpo (art. 56-1)"][0]]
    coup_titles = [c.value for c in coups_ws[1]]
    assert {row[coup_titles.index("Vincitore")] for row in coups_ws.iter_rows(min_row=2, values_only=True)} == {
        "banchiere", "punta", "égalité"}  # fmt: skip
    cash_rows = list(wb[listing[CASH_IT][0]].iter_rows(values_only=True))
    assert cash_rows[1][0] == f"Nessuna riga. {NO_CASH_IT}" and len(cash_rows) == 2

    # PDF: the same words, the figures the Italian way.
    text = pdf_text(files["pdf"], tmp_path, drawn_order=True)
    if text is None:
        pytest.skip("pypdf is not installed")
    for said in (TABLES_IT, "Dati", "Indice", "Pagina 1 di", f"Sigillo di audit {report.seal}", NO_CASH_IT,
                 "Nessuna riga.", "Cagnotte attesa (somma delle registrazioni della casa) 51,20 EUR",
                 "Vincitore", "banchiere", "binomiale esatta", "Grafici", "Cagnotte attesa per tavolo (€)",
                 "Tavolo 1", violations.split(" (")[0]):  # fmt: skip
        assert said in text, said
    for english_word in ("Facts", "Contents", "Page 1 of", "No rows.", "Audit seal", "51.20 EUR"):
        assert english_word not in text, english_word

    # The API says in which language the report is written.
    body = api(auditor).get(f"/api/reports/{report.pk}/").json()
    assert body["language"] == "it"
    assert api(auditor).get("/api/reports/").json()["results"][0]["language"] == "it"


def test_an_italian_report_rebuilt_after_the_setting_changed_is_the_same_bytes_and_verifies(
    world, media, settings, api, auditor, django_capture_on_commit_callbacks
):
    settings.REPORT_LANGUAGE = "it"
    close(world, django_capture_on_commit_callbacks)
    report = DayReport.objects.get(gaming_day=world.day, version=1)
    shas = _shas(report)
    settings.REPORT_LANGUAGE = "en"  # the deployment's setting changed since
    rebuilt = _rebuild(report)
    assert rebuilt.language == "it" and _shas(rebuilt) == shas
    assert csv_blocks(_file(rebuilt, "csv").read_bytes())[0][0][0].startswith("# Chemin de Fer: rapporto di fine giornata")
    body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
    assert body["ok"] is True and body["reasons"] == [], body["reasons"]


def test_a_report_requested_in_english_stays_english_when_the_setting_changes(
    world, media, settings, django_capture_on_commit_callbacks
):
    # Requested (its row made) before the change, built after it: the language of the request.
    with django_capture_on_commit_callbacks(execute=False):
        from floor import services as floor_services

        floor_services.gaming_day_close(gaming_day=world.day, by=world.commissario, open_sessions="close")
    requested = report_services.report_request(gaming_day_id=world.day.pk)
    assert requested.language == "en"
    settings.REPORT_LANGUAGE = "it"
    report = report_services.report_build(gaming_day_id=world.day.pk)
    assert report.language == "en"
    preamble, blocks = csv_blocks(_file(report, "csv").read_bytes())
    assert preamble[0][0].startswith("# Chemin de Fer: end-of-day report") and "Cash exchanged at the tables (changeur)" in blocks
    shas = _shas(report)
    rebuilt = _rebuild(report)
    assert rebuilt.language == "en" and _shas(rebuilt) == shas


def test_the_verification_of_an_italian_report_still_names_a_levy_edited_before_the_build(
    world, media, settings, api, auditor, django_capture_on_commit_callbacks
):
    """As test_reports' English case: the levy edited in the coup and posting rows before the
    build went into the report; the trail's events say otherwise."""
    settings.REPORT_LANGUAGE = "it"
    coup = Coup.objects.filter(session__gaming_day=world.day, cagnotte__gt=0).order_by("pk").first()
    levy = coup.cagnotte
    Coup.objects.filter(pk=coup.pk).update(cagnotte=0)
    Posting.objects.filter(coup=coup, role="house").update(amount=0)
    banker = Posting.objects.filter(coup=coup, role="banker").get()
    Posting.objects.filter(pk=banker.pk).update(amount=banker.amount + levy)
    close(world, django_capture_on_commit_callbacks)
    report = DayReport.objects.get(gaming_day=world.day)
    assert report.language == "it"
    body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
    assert body["ok"] is False
    table = coup.session.table.number
    assert [(r["code"], r["table"], r["figure"], r["in_trail"] - r["in_report"])
            for r in body["reasons"] if r["code"] == "levies_mismatch"] == [
        ("levies_mismatch", table, "levies_recorded", levy), ("levies_mismatch", table, "expected_cagnotte", levy)]
    assert ("coup_mismatch", coup.number) in [(r["code"], r.get("coup")) for r in body["reasons"]]
    # And a file changed since its build is named, as in English.
    path = _file(report, "xlsx")
    path.write_bytes(path.read_bytes() + b"\0")
    body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
    assert {"code": "checksum_mismatch", "format": "xlsx"} in body["reasons"]


# Each section's sheet: its own short title, in the report's language (never its title cut).
SHEETS = {
    "en": {
        "tables": "Tables", "sessions": "Cagnotte register", "interruptions": "Interruptions",
        "minimum_changes": "Minimum & maximum changes", "staff_changes": "Staff changes", "shoes": "Shoes used",
        "banks": "Bankers", "coups": "Coups", "annulled": "Coups annulled", "bets": "Bets",
        "patron_balances": "Patron balances", "non_conforming": "Non-conforming coups", "voided_cards": "Voided cards",
        "faux_tirage_bars": "Faux-tirage bars (art. 60)", "successions": "Successions of the bank",
        "succession_offers": "Offers of the bank", "auctions": "Auctions of the bank",
        "auction_bids": "Bids at the asta", "cagnotte_counts": "Cagnotte counts", "unclaimed": "Unclaimed deposits",
        "cash_exchanges": "Cash exchanges", "cash_aml": "AML threshold patrons",
        "cash_drawers": "Cash drawers", "control_register": "Control register (art. 72)",
    },
    "it": {
        "tables": "Tavoli", "sessions": "Registro della cagnotte", "interruptions": "Interruzioni e riprese",
        "minimum_changes": "Modifiche minimo e massimo", "staff_changes": "Cambi del personale",
        "shoes": "Sabot usati", "banks": "Banchieri", "coups": "Colpi", "annulled": "Colpi annullati",
        "bets": "Puntate", "patron_balances": "Saldi dei clienti", "non_conforming": "Colpi non conformi",
        "voided_cards": "Carte annullate", "faux_tirage_bars": "Esclusioni per faux tirage",
        "successions": "Successioni del banco", "succession_offers": "Offerte del banco",
        "auctions": "Aste del banco", "auction_bids": "Offerte all'asta", "cagnotte_counts": "Conteggi della cagnotte",
        "unclaimed": "Somme non riscosse", "cash_exchanges": "Cambi di denaro ai tavoli",
        "cash_aml": "Clienti alla soglia AML", "cash_drawers": "Cassetti del cambio",
        "control_register": "Registro di controllo",
    },
}  # fmt: skip
WRITERS_SHEETS = {"en": ("Summary", "Charts"), "it": ("Riepilogo", "Grafici")}


@pytest.mark.parametrize("language", ["en", "it"])
def test_every_section_has_its_own_short_sheet_name_whole_in_both_languages(
    closed, settings, direzione, direzione2, django_capture_on_commit_callbacks, language
):
    """Sheet names were the sections' titles cut at Excel's 31 characters: in Italian "Offerte
    del banco, nell'", "Modifiche del minimo", "Clienti alla soglia" (the AML's), in English
    "Patrons at or above". Each section has a short title of its own, translated: the XLSX of a
    report with every section (version 2, with the signed register) names each sheet by it,
    whole, unique, within Excel's limit (with room for a continuation's " (99)")."""
    from audit.exports.xlsx import _DANGLING, _SHEET_BAD
    from audit.reports import registers
    from tests.audit.test_reports import _count_all

    world = closed
    _count_all(world, direzione, direzione2)
    reg = registers.control_register_prepare(gaming_day=world.day, by=direzione)
    reg = registers.control_register_sign(register=reg, by=direzione)
    settings.REPORT_LANGUAGE = language  # the version the second signature requests
    with django_capture_on_commit_callbacks(execute=True):
        reg = registers.control_register_sign(register=reg, by=direzione2)
    report = DayReport.objects.get(gaming_day=world.day, version=2)
    assert report.status == DayReport.Status.DONE and report.language == language, report.error
    document = build_document(day=world.day, version=2, seal=report.seal, streams=report.sealed_streams,
                              register=reg, language=language).document  # fmt: skip
    titles = {section.key: section.title for section in document.sections}
    assert set(titles) == set(SHEETS[language])  # every section of the report

    wb = openpyxl.load_workbook(io.BytesIO(_file(report, "xlsx").read_bytes()))
    summary, charts = WRITERS_SHEETS[language]
    assert wb.sheetnames == [summary, *SHEETS[language].values(), charts]
    listing = {row[0]: row[1] for row in wb[summary].iter_rows(values_only=True) if row and row[0]}
    names = set()
    for key, title in titles.items():
        name = listing[title]  # the Summary's list: the section's title, then its sheet
        assert name == SHEETS[language][key], (key, name)
        assert len(name) <= 26 and not _SHEET_BAD.search(name) and name == name.strip(" '"), name
        assert name.casefold() not in names, name
        names.add(name.casefold())
        # Not a title cut: neither its first 31 characters nor ending on a dangling word or a comma.
        assert name == title or name != title[:31].rstrip(), (name, title)
        assert name.split()[-1].casefold() not in _DANGLING and name[-1] not in ",;:-'", name
    assert not names & {summary.casefold(), charts.casefold()}


# --------------------------------------------------------------------------- the writers alone


def test_figures_read_the_italian_way_in_italian_and_stay_plain_in_the_csv():
    money = Column("amount", "Amount", "money")
    with translation.override("it"):
        assert money_display(123_450) == "1.234,50" and money_display(-5) == "-0,05"
        assert fact_text(Money(1_234_567_89)) == "1.234.567,89 EUR"
        assert display_cell(Column("n", "N", "int"), 12_345) == "12.345"
        assert display_cell(Column("r", "R", "rate"), "0.508538") == "0,508538"
        assert display_cell(Column("b", "B", "bool"), True) == "sì"
    assert money_display(123_450) == "1,234.50" and display_cell(Column("b", "B", "bool"), True) == "yes"
    doc = ReportDocument("T", "", [], [Section("s", "S", [money], lambda: iter([[123_450]]))], language="it")
    from audit.exports import write_csv

    assert written(write_csv, doc).decode().splitlines()[-1] == "1234.50"


def test_a_code_column_shows_its_words_in_the_pdf_and_xlsx_and_its_code_in_the_csv(tmp_path):
    from audit.exports import write_csv, write_pdf, write_xlsx

    column = Column("direction", "Direction", "text", labels={"buy_in": "denaro in fiches"})
    doc = ReportDocument("T", "", [], [Section("cash", "Cash", [column], lambda: iter([["buy_in"], ["other"]]))])
    assert written(write_csv, doc).decode().splitlines()[-2:] == ["buy_in", "other"]
    ws = openpyxl.load_workbook(io.BytesIO(written(write_xlsx, doc)))["Cash"]
    assert [row[0] for row in ws.iter_rows(min_row=2, values_only=True)] == ["denaro in fiches", "other"]
    text = pdf_text(written(write_pdf, doc), tmp_path, drawn_order=True)
    if text is not None:
        assert "denaro in fiches" in text and "buy_in" not in text


def test_an_empty_section_says_so_in_the_report_s_language():
    from audit.exports import write_xlsx

    doc = ReportDocument("T", "", [], [Section("empty", "Empty", [Column("table", "Table", "int")], lambda: iter(()),
                                               note="Nessun deposito.")], language="it")  # fmt: skip
    with translation.override("en"):  # whatever the process's language: the document's
        ws = openpyxl.load_workbook(io.BytesIO(written(write_xlsx, doc)))["Empty"]
    assert ws["A2"].value == "Nessuna riga. Nessun deposito."
