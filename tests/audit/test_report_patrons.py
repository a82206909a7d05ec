"""The patrons the end-of-day report names, held to the identity the audit trail registered
(audit/reports/patrons.py): a patron renamed in SQL before the build is printed under the
other name, and the report's verification names him (`patron_mismatch`, as of the build);
renamed after the build, the report is right and the row is named (`patron_not_as_recorded`);
an identity change the trail records is no difference; `manage.py audit_verify` names a
patron row that is not what his events recorded."""

from __future__ import annotations

import itertools
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from audit.models import DayReport
from audit.reports import patrons
from audit.selectors import chain_verify
from audit.services import record
from floor import services as floor_services
from floor.models import Patron
from tables.models import Bank, Bet, Posting
from tests.audit import test_reports
from tests.audit.conftest import raw_sql
from tests.audit.test_exports import csv_blocks
from tests.audit.test_reports import _file, close
from tests.audit.test_reports import media as media

pytestmark = pytest.mark.django_db

NAMES = [("Mario", "Rossi"), ("Anna", "Neri"), ("Carlo", "Verdi"), ("Lucia", "Gallo"), ("Paolo", "Conti"),
         ("Sara", "Greco"), ("Marco", "Bruno"), ("Elena", "Costa")]  # fmt: skip


def _registrar(commissario):
    """A PatronFactory that registers each patron through the service (his `patron.registered`
    event in the `patrons` stream), as the floor does."""
    numbers = itertools.count()

    def register(**_ignored):
        n = next(numbers)
        first, last = NAMES[n % len(NAMES)]
        return floor_services.patron_register(by=commissario, first_name=first, last_name=f"{last}{'' if n < 8 else n}",
                                              document_type="id_card", document_number=f"CA{n:07d}",
                                              nationality="IT")  # fmt: skip

    return register


@pytest.fixture
def world(db, commissario, capo_partita, changeur, direzione, monkeypatch):
    """The reports' day (tests/audit/test_reports.build_day), its patrons registered."""
    monkeypatch.setattr(test_reports, "PatronFactory", _registrar(commissario))
    return test_reports.build_day(
        commissario=commissario, capo=capo_partita, changeur=changeur, direzione=direzione
    )


def _bettor(world) -> Patron:
    """Table 1's first bettor (the coup of 300.00), registered as Anna Neri."""
    bet = Bet.objects.filter(coup__session=world.sessions[0]).order_by("coup__number", "order").first()
    assert (bet.patron.first_name, bet.patron.last_name) == ("Anna", "Neri")
    return bet.patron


def _rename(patron: Patron, first: str, last: str) -> None:
    raw_sql("UPDATE floor_patron SET first_name = %s, last_name = %s WHERE id = %s", (first, last, patron.pk))


def _build(world, django_capture_on_commit_callbacks) -> DayReport:
    close(world, django_capture_on_commit_callbacks)
    report = DayReport.objects.get(gaming_day=world.day, version=1)
    assert report.status == "done", report.error
    return report


def _bet_names(report: DayReport) -> set[str]:
    _preamble, blocks = csv_blocks(_file(report, "csv").read_bytes())
    block = [row for row in blocks["Bets and what each paid or was paid"] if not row[0].startswith("#")]
    header, *rows = block
    return {row[header.index("patron")] for row in rows}


def test_every_patron_the_report_names_is_kept_as_digests_with_the_patrons_head(
    world, media, django_capture_on_commit_callbacks
):
    report = _build(world, django_capture_on_commit_callbacks)
    held = report.summary["patrons"]
    seated = {str(p) for s in world.sessions for p in s.seats.values_list("patron_id", flat=True)}
    assert set(held["as_named"]) == seated and len(seated) == 16
    assert held["head"] == 16  # the patrons stream's seq at the build: sixteen registrations
    bettor = _bettor(world)
    assert held["as_named"][str(bettor.pk)] == [
        patrons.field_digest(bettor.pk, "first_name", "Anna"), patrons.field_digest(bettor.pk, "last_name", "Neri"),
        patrons.field_digest(bettor.pk, "document_type", "id_card"),
        patrons.field_digest(bettor.pk, "document_number", bettor.document_number),
    ]  # fmt: skip
    assert bettor.document_number not in json.dumps(report.summary)  # a digest, never the document


def test_a_patron_renamed_in_sql_before_the_build_is_named_by_the_verification(
    world, media, api, auditor, django_capture_on_commit_callbacks
):
    """The report prints the other name, and holds it: once the row is put back, the row's
    check passes and the report's names, held to the trail as of the build, still fail."""
    from audit.views import _explain

    bettor = _bettor(world)
    _rename(bettor, "Luigi", "Bianchi")
    report = _build(world, django_capture_on_commit_callbacks)
    assert "Luigi Bianchi" in _bet_names(report) and "Anna Neri" not in _bet_names(report)

    def verify() -> dict:
        return api(auditor).post(f"/api/reports/{report.pk}/verify/").json()

    mismatch = {"code": "patron_mismatch", "patron": bettor.pk, "fields": ["first_name", "last_name"]}
    row = {"code": "patron_not_as_recorded", "patron": bettor.pk, "fields": ["first_name", "last_name"],
           "in_books": True}  # fmt: skip
    body = verify()
    assert body["ok"] is False and body["reasons"] == [mismatch, row]
    _rename(bettor, "Anna", "Neri")
    body = verify()
    assert body["ok"] is False and body["reasons"] == [mismatch]
    assert _explain(body)["lines"] == [
        f"Patron {bettor.pk}: the report names him otherwise than the audit trail registered him when the report "
        "was built (first name, last name)."]  # fmt: skip


def test_a_patron_renamed_after_the_build_names_the_row_not_the_report(
    world, media, api, auditor, django_capture_on_commit_callbacks
):
    from audit.views import _explain

    bettor = _bettor(world)
    report = _build(world, django_capture_on_commit_callbacks)
    assert "Anna Neri" in _bet_names(report)
    assert api(auditor).post(f"/api/reports/{report.pk}/verify/").json()["ok"] is True
    _rename(bettor, "Luigi", "Neri")
    body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
    assert body["ok"] is False
    assert body["reasons"] == [{"code": "patron_not_as_recorded", "patron": bettor.pk, "fields": ["first_name"],
                                "in_books": True}]  # fmt: skip
    assert _explain(body)["lines"] == [
        f"Patron {bettor.pk}: his row is not the identity the audit trail registered (first name)."]  # fmt: skip
    _rename(bettor, "Anna", "Neri")
    assert api(auditor).post(f"/api/reports/{report.pk}/verify/").json()["ok"] is True


def test_a_document_changed_in_sql_is_named_by_its_field_never_by_its_number(
    world, media, api, auditor, django_capture_on_commit_callbacks
):
    bettor = _bettor(world)
    raw_sql("UPDATE floor_patron SET document_number = 'ZZ9999999' WHERE id = %s", (bettor.pk,))
    report = _build(world, django_capture_on_commit_callbacks)
    body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
    assert [(r["code"], r["patron"], r["fields"]) for r in body["reasons"]] == [
        ("patron_mismatch", bettor.pk, ["document_number"]), ("patron_not_as_recorded", bettor.pk, ["document_number"]),
    ]  # fmt: skip
    text = json.dumps(body)
    assert "ZZ9999999" not in text and bettor.document_number not in text


def _change_identity(patron: Patron, by, **new) -> None:
    """An identity change as a service would record it: the row and its event in the `patrons`
    stream, in one transaction (the floor has no such service yet; any event of that stream
    about the patron that records `new` identity fields is of record)."""
    with transaction.atomic():
        old = {f: getattr(patron, f) for f in new}
        Patron.objects.filter(pk=patron.pk).update(**new)
        record(stream="patrons", actor=by, action="patron.identity_corrected", subject=patron,
               data={"old": old, "new": new})  # fmt: skip


@pytest.mark.parametrize("when", ["before", "after"])
def test_an_identity_change_the_trail_records_is_no_difference(
    when, world, media, api, auditor, commissario, django_capture_on_commit_callbacks
):
    bettor = _bettor(world)
    if when == "before":
        _change_identity(bettor, commissario, last_name="Neri-Sala")
    report = _build(world, django_capture_on_commit_callbacks)
    if when == "after":
        _change_identity(bettor, commissario, last_name="Neri-Sala", document_number="CB0000001")
    assert ("Anna Neri-Sala" in _bet_names(report)) is (when == "before")
    body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
    assert body["ok"] is True and body["reasons"] == [], body["reasons"]
    assert chain_verify().ok


def test_the_verifications_queries_do_not_grow_with_the_patrons(commissario):
    """Three queries (the events, the rows, the head is the build's) for three patrons or
    twelve, renamed or not."""
    register = _registrar(commissario)
    few = [register() for _ in range(3)]
    many = few + [register() for _ in range(9)]

    def queries(people) -> tuple[int, list]:
        summary = {"patrons": patrons.named(p.pk for p in people)}
        for p in people:
            _rename(p, "Luigi", "Bianchi")
        with CaptureQueriesContext(connection) as captured:
            found = patrons.as_named(summary)
        for p, (first, last) in zip(people, itertools.cycle(NAMES), strict=False):
            _rename(p, first, last)
        return len(captured), found

    (n_few, found_few), (n_many, found_many) = queries(few), queries(many)
    assert n_few == n_many == 2
    assert [r["patron"] for r in found_many if r["code"] == "patron_not_as_recorded"] == [p.pk for p in many]
    assert len(found_few) == 3


def test_audit_verify_names_a_patron_row_that_is_not_what_his_events_recorded(world, capsys):
    bettor = _bettor(world)
    assert chain_verify().ok
    raw_sql("UPDATE floor_patron SET last_name = 'Bianchi' WHERE id = %s", (bettor.pk,))
    result = chain_verify()
    broken = result.first_broken
    assert not result.ok and broken.reason == "patron_not_as_recorded" and broken.stream == "patrons"
    assert f"patron {bettor.pk}:" in broken.message and "last_name" in broken.message
    assert "Bianchi" not in broken.message and bettor.document_number not in broken.message
    with pytest.raises(CommandError) as exc:
        call_command("audit_verify")
    assert exc.value.returncode == 1 and "patron_not_as_recorded" in str(exc.value)
    raw_sql("UPDATE floor_patron SET last_name = 'Neri' WHERE id = %s", (bettor.pk,))
    assert chain_verify().ok


# The verification's other reasons name the patrons they involve by the identity of record
# (patrons.names_of_record), never by the rows they are checking beside them.


def _verify(api, auditor, report: DayReport) -> dict:
    return api(auditor).post(f"/api/reports/{report.pk}/verify/").json()


def test_bets_and_postings_edited_in_sql_name_a_renamed_patron_by_his_registered_name(
    world, media, api, auditor, django_capture_on_commit_callbacks
):
    """A bet's stake and ten euros of its coup's postings moved in SQL, then the bettor renamed
    in SQL after the build: the bets' and postings' reasons say "Anna Neri" as the trail
    registered her, and the rename is a reason of its own."""
    from audit.views import _explain

    bettor = _bettor(world)
    bet = Bet.objects.filter(coup__session=world.sessions[0], patron=bettor).order_by("coup__number").first()
    Bet.objects.filter(pk=bet.pk).update(amount=bet.amount + 1_00)
    mine = Posting.objects.get(coup=bet.coup, role="bettor", patron=bettor)
    banker = Posting.objects.get(coup=bet.coup, role="banker")
    Posting.objects.filter(pk=mine.pk).update(amount=mine.amount + 10_00)
    Posting.objects.filter(pk=banker.pk).update(amount=banker.amount - 10_00)
    report = _build(world, django_capture_on_commit_callbacks)
    _rename(bettor, "Luigi", "Bianchi")
    body = _verify(api, auditor, report)
    by_code = {r["code"]: r for r in body["reasons"]}
    assert {"bets_mismatch", "postings_mismatch", "patron_not_as_recorded"} <= set(by_code), body["reasons"]
    assert by_code["patron_not_as_recorded"]["patron"] == bettor.pk
    for code in ("bets_mismatch", "postings_mismatch"):
        hers = [e for side in ("in_books", "in_trail") for e in by_code[code][side] if e["patron"] == bettor.pk]
        assert len(hers) == 2 and {(e["name"], e["name_of_record"]) for e in hers} == {("Anna Neri", True)}
    assert "Luigi" not in json.dumps([by_code["bets_mismatch"], by_code["postings_mismatch"]])
    lines = dict(zip([r["code"] for r in body["reasons"]], _explain(body)["lines"], strict=True))
    assert f"In the books: Anna Neri (patron {bettor.pk}, individual) " in lines["bets_mismatch"]
    books, trail = lines["postings_mismatch"].split("In the audit trail: ")
    assert f"Anna Neri (patron {bettor.pk}, bettor) {(mine.amount + 10_00) / 100:.2f}" in books
    assert f"Anna Neri (patron {bettor.pk}, bettor) {mine.amount / 100:.2f}" in trail
    assert not any("Luigi" in lines[code] or "[" in lines[code] for code in ("bets_mismatch", "postings_mismatch"))


def test_a_records_patron_field_names_both_patrons_by_their_registered_names(
    world, media, api, auditor, django_capture_on_commit_callbacks
):
    """A bank's banker swapped in SQL for another patron, both renamed in SQL after the build:
    the bank's record_mismatch names each side as the trail registered him."""
    from audit.views import _explain

    bank = Bank.objects.get(session=world.sessions[0], number=1)
    banker, other = bank.banker, _bettor(world)
    assert banker != other
    registered = {p.pk: f"{p.first_name} {p.last_name}" for p in (banker, other)}
    Bank.objects.filter(pk=bank.pk).update(banker=other)
    report = _build(world, django_capture_on_commit_callbacks)
    _rename(banker, "Gino", "Ladro")
    _rename(other, "Luigi", "Bianchi")
    body = _verify(api, auditor, report)
    [(i, reason)] = [(i, r) for i, r in enumerate(body["reasons"]) if r["code"] == "record_mismatch"]
    assert reason["record"] == "bank" and reason["fields"]["banker"] == {
        "in_books": other.pk, "in_trail": banker.pk,
        "names": {"in_books": registered[other.pk], "in_trail": registered[banker.pk]},
        "names_of_record": {"in_books": True, "in_trail": True}}  # fmt: skip
    line = _explain(body)["lines"][i]
    assert f"Banker: {registered[other.pk]} in the books, {registered[banker.pk]} in the audit trail." in line
    assert "Luigi" not in line and "Gino" not in line


def test_a_patron_no_event_registered_is_named_by_his_row_and_the_page_says_so(
    world, media, api, auditor, django_capture_on_commit_callbacks
):
    """A bet handed in SQL to a patron written behind the services: he has no name of record,
    so his row's name is given, flagged, and the desk says so (in Italian too)."""
    from django.utils import translation

    from audit.views import _explain
    from tests.factories import PatronFactory

    bettor = _bettor(world)
    stranger = PatronFactory(first_name="Ugo", last_name="Ombra", document_number="XX0000001")  # no patron.registered
    bet = Bet.objects.filter(coup__session=world.sessions[0], patron=bettor).order_by("coup__number").first()
    Bet.objects.filter(pk=bet.pk).update(patron=stranger)
    report = _build(world, django_capture_on_commit_callbacks)
    body = _verify(api, auditor, report)
    [(i, reason)] = [(i, r) for i, r in enumerate(body["reasons"]) if r["code"] == "bets_mismatch"]
    named = {e["patron"]: (e["name"], e["name_of_record"]) for side in ("in_books", "in_trail") for e in reason[side]}
    assert named[stranger.pk] == ("Ugo Ombra", False) and named[bettor.pk] == ("Anna Neri", True)
    assert f"Ugo Ombra [no registration on record] (patron {stranger.pk}, individual)" in _explain(body)["lines"][i]
    assert "Anna Neri [" not in _explain(body)["lines"][i]
    with translation.override("it"):
        assert "Ugo Ombra [nessuna registrazione agli atti]" in _explain(body)["lines"][i]


def test_naming_the_patrons_of_the_reasons_reads_in_queries_that_do_not_grow(commissario):
    """One patron or eight, renamed in SQL: the bets' and the records' naming read the trail
    once each (and the rows once more each for patrons no event registered), and name each by
    his registered name."""
    from audit.reports.ledger import _name_patrons
    from audit.reports.records import name_records
    from tests.factories import PatronFactory

    register = _registrar(commissario)
    people = [register() for _ in range(8)]
    registered = {p.pk: f"{p.first_name} {p.last_name}" for p in people}
    for p in people:
        _rename(p, "Luigi", "Bianchi")
    strangers = [PatronFactory(first_name="Ugo", last_name=f"Ombra{n}", document_number=f"XX{n:07d}") for n in range(8)]

    def named(some: list[Patron]) -> tuple[int, list[dict]]:
        reasons = [
            {"code": "bets_mismatch", "in_books": [{"patron": p.pk, "kind": "individual", "amount": 1_00} for p in some],
             "in_trail": [], "fields": []},
            {"code": "record_mismatch", "record": "bank",
             "fields": {"banker": {"in_books": some[0].pk, "in_trail": some[-1].pk}}},
        ]  # fmt: skip
        with CaptureQueriesContext(connection) as captured:
            _name_patrons(reasons)
            name_records(reasons)
        return len(captured), reasons

    (n_one, one), (n_many, many) = named(people[:1]), named(people)
    assert n_one == n_many == 2
    assert [e["name"] for e in many[0]["in_books"]] == [registered[p.pk] for p in people]
    assert [e["name"] for e in one[0]["in_books"]] == [registered[people[0].pk]]
    assert many[1]["fields"]["banker"]["names"] == {"in_books": registered[people[0].pk],
                                                    "in_trail": registered[people[-1].pk]}  # fmt: skip
    (n_one, one), (n_many, many) = named(people[:1] + strangers[:1]), named(people + strangers)
    assert n_one == n_many == 4
    assert [(e["name"], e["name_of_record"]) for e in many[0]["in_books"]] == [
        *((registered[p.pk], True) for p in people), *((f"Ugo Ombra{n}", False) for n in range(8))]  # fmt: skip
    assert many[1]["fields"]["banker"]["names_of_record"] == {"in_books": True, "in_trail": False}


def test_names_of_record_folds_a_recorded_identity_change_and_leaves_out_an_unknown_id(commissario):
    register = _registrar(commissario)
    mario, anna = register(), register()
    _change_identity(anna, commissario, last_name="Neri-Sala")
    _rename(mario, "Luigi", "Bianchi")
    assert patrons.names_of_record([mario.pk, anna.pk, 10**9, None]) == {
        mario.pk: patrons.Name("Mario Rossi", True), anna.pk: patrons.Name("Anna Neri-Sala", True)}  # fmt: skip
    assert patrons.names_of_record([]) == {}
