"""End of day (RULES.md §8): closing the day, the report task, the cagnotte count, the
control register and its sign-offs, the auditors' API. Tasks run eagerly here (the real
worker on Redis is tests/audit/test_reports_worker.py).

Every figure is checked against the postings, recomputed here independently."""

from __future__ import annotations

import csv
import hashlib
import io
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Sum
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from openpyxl.utils import get_column_letter

from audit.models import AuditEvent, AuditStream, CagnotteCount, ControlRegister, DayReport, ReportFile
from audit.reports import registers
from audit.reports.builder import banker_rate_check, expected_banker_rate
from audit.selectors import day_seal
from audit.services import record
from audit.tasks import report_build
from config.errors import ApplicationError
from floor import services as floor_services
from floor.models import GamingDay, MinimumChange, Patron, Table, TableSession
from floor.roles import Role
from tables import services as table_services
from tables.models import Bank, Bet, Coup, Posting, ShoeCard
from tests.audit.conftest import append, raw_sql, reseal, staff_said, trigger_disabled
from tests.factories import CasinoFactory, PatronFactory, SiteFactory, UserFactory


@dataclass
class Day:
    day: GamingDay
    tables: list[Table]
    sessions: list[TableSession]
    commissario: Any
    direzione: Any


def _session(table, *, commissario, capo, changeur, shoe: str) -> tuple[TableSession, list]:
    session = floor_services.table_session_open(
        table=table, by=commissario, capo_partita=capo, changeur=changeur, shoe_number=shoe, minimum=100_00
    )
    patrons = [PatronFactory() for _ in range(8)]
    for number, patron in enumerate(patrons, start=1):
        floor_services.seat_assign(session=session, patron=patron, seat_number=number, by=commissario)
    table_services.shoe_load(session=session, by=capo)
    return session, patrons


def build_day(*, commissario, capo, changeur, direzione, code: str = "venezia") -> Day:
    """Two venezia tables. Table 1 (closed session): banker wins (levies 15.00 and 26.20),
    a tie, a punta natural, a voided card, a faux-tirage bar, a minimum change, an
    interruption. Table 2 (session left open): a Regola banker's non-conforming coup,
    reconstructed and settled for the banker (levy 10.00), then a relief Capo Partita
    ("capo_relief")."""
    casino = CasinoFactory(name=f"Casinò {code}", code=code)
    site = SiteFactory(casino=casino)
    day = floor_services.gaming_day_open(casino=casino, by=commissario)
    t1 = floor_services.table_create(casino=casino, site=site, number=1, by=direzione)
    t2 = floor_services.table_create(casino=casino, site=site, number=2, by=direzione)

    s1, p1 = _session(t1, commissario=commissario, capo=capo, changeur=changeur, shoe="S-1")
    table_services.bank_open(session=s1, by=capo, patron=p1[0], amount=1000_00)
    floor_services.table_minimum_change(session=s1, by=commissario, minimum=150_00, reason="busy evening")
    table_services.coup_record(session=s1, by=capo, cards=["KH", "5S", "3C", "2D", "2S"],
                               bets=[{"patron": p1[1], "amount": 300_00}], punta_draws=True, banker_draws=False)
    table_services.coup_record(session=s1, by=capo, cards=["9H", "9S", "KC", "KD"],
                               bets=[{"patron": p1[2], "amount": 200_00}])
    table_services.coup_record(session=s1, by=capo, cards=["KH", "5S", "3C", "2D", "2S"],
                               bets=[{"patron": p1[2], "amount": 523_40}], punta_draws=True, banker_draws=False)
    table_services.card_void(session=s1, by=capo, card="QS", reason="seen face up in the sabot")
    table_services.coup_record(session=s1, by=capo, cards=["9H", "2S", "KD", "3C"],
                               bets=[{"patron": p1[3], "amount": 400_00}])
    table_services.faux_tirage_bar(session=s1, by=capo, patron=p1[4], reason="drew on 7")
    floor_services.table_session_interrupt(session=s1, by=commissario, reason="dispute")
    floor_services.table_session_resume(session=s1, by=commissario, reason="settled by the Direzione")
    floor_services.table_session_close(session=s1, by=commissario)

    s2, p2 = _session(t2, commissario=commissario, capo=capo, changeur=changeur, shoe="S-2")
    table_services.regola_mark(session=s2, by=capo, patron=p2[0], declared=True)
    table_services.bank_open(session=s2, by=capo, patron=p2[0], amount=500_00)
    table_services.coup_record(session=s2, by=capo, cards=["KH", "2S", "3C", "AS", "2D"],
                               bets=[{"patron": p2[1], "amount": 200_00}], punta_draws=True, banker_draws=False,
                               next_cards=["4H"])  # fmt: skip
    relief = UserFactory(username=f"capo_relief_{code}", roles=[Role.CAPO_PARTITA])
    floor_services.table_session_staff_change(session=s2, by=commissario, capo_partita=relief, reason="break at 23:00")
    return Day(day, [t1, t2], [s1, s2], commissario, direzione)


def house(**filters) -> int:
    return Posting.objects.filter(role=Posting.Role.HOUSE, **filters).aggregate(s=Sum("amount"))["s"] or 0


def close(day: Day, django_capture_on_commit_callbacks, *, policy: str = "close") -> GamingDay:
    with django_capture_on_commit_callbacks(execute=True):
        return floor_services.gaming_day_close(gaming_day=day.day, by=day.commissario, open_sessions=policy)


@pytest.fixture
def media(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def world(db, commissario, capo_partita, changeur, direzione) -> Day:
    return build_day(commissario=commissario, capo=capo_partita, changeur=changeur, direzione=direzione)


@pytest.fixture
def direzione2(user_factory):
    return user_factory("direzione2", Role.DIREZIONE)


@pytest.fixture
def closed(world, media, django_capture_on_commit_callbacks) -> Day:
    close(world, django_capture_on_commit_callbacks)
    world.day.refresh_from_db()
    return world


# --------------------------------------------------------------------------- the day's data


def test_the_fixture_day_is_what_the_tests_assume(world):
    coups = Coup.objects.filter(session__gaming_day=world.day).order_by("session__table__number", "number")
    assert [(c.session.table.number, c.winner, c.cagnotte) for c in coups] == [
        (1, "banker", 15_00), (1, "tie", 0), (1, "banker", 26_20), (1, "punta", 0), (2, "banker", 10_00),
    ]  # fmt: skip
    assert [c.conforming for c in coups] == [True, True, True, True, False]
    assert house(session__gaming_day=world.day) == 51_20


# --------------------------------------------------------------------------- closing


def test_close_refuses_open_sessions_by_default_and_writes_nothing(world, django_capture_on_commit_callbacks):
    events = AuditEvent.objects.count()
    with django_capture_on_commit_callbacks(execute=True) as callbacks, pytest.raises(ApplicationError) as exc:
        floor_services.gaming_day_close(gaming_day=world.day, by=world.commissario)
    assert exc.value.code == "sessions_still_open"
    assert exc.value.details == {"sessions": [world.sessions[1].pk], "tables": [world.sessions[1].table.number]}
    assert callbacks == [] and AuditEvent.objects.count() == events and DayReport.objects.count() == 0
    world.day.refresh_from_db()
    assert world.day.is_open


def test_close_with_policy_close_closes_sessions_and_builds_the_report(closed):
    s2 = TableSession.objects.get(pk=closed.sessions[1].pk)
    assert s2.is_closed and s2.closed_by == closed.commissario
    assert s2.banks.get().end_reason == "session_closed"  # the tables' hook ended the bank
    report = DayReport.objects.get(gaming_day=closed.day)
    assert report.version == 1 and report.status == "done", report.error
    assert {f.format for f in report.files.all()} == {"csv", "xlsx", "pdf"}
    closing = AuditEvent.objects.filter(action="gaming_day.closed").get()
    assert closing.payload["sessions_closed"] == [s2.pk]


def test_beat_closes_days_past_the_close_hour(world, media, settings, django_capture_on_commit_callbacks):
    import datetime as dt

    from django.utils import timezone

    settings.GAMING_DAY_CLOSE_HOUR = 6
    settings.GAMING_DAY_CLOSE_OPEN_SESSIONS = "close"
    date = world.day.date
    tz = timezone.get_current_timezone()
    before = dt.datetime.combine(date + dt.timedelta(days=1), dt.time(5, 59), tz)
    assert floor_services.gaming_days_close_due(now=before) == {"closed": [], "refused": []}
    after = dt.datetime.combine(date + dt.timedelta(days=1), dt.time(6, 0), tz)
    with django_capture_on_commit_callbacks(execute=True):
        assert floor_services.gaming_days_close_due(now=after) == {"closed": [world.day.pk], "refused": []}
    world.day.refresh_from_db()
    assert not world.day.is_open and world.day.closed_by is None
    assert DayReport.objects.get(gaming_day=world.day).status == "done"
    # Run again: nothing is due any more.
    assert floor_services.gaming_days_close_due(now=after) == {"closed": [], "refused": []}


def test_beat_leaves_a_day_with_open_sessions_under_refuse(world, settings):
    import datetime as dt

    from django.utils import timezone

    settings.GAMING_DAY_CLOSE_OPEN_SESSIONS = "refuse"
    later = dt.datetime.combine(world.day.date + dt.timedelta(days=2), dt.time(12), timezone.get_current_timezone())
    assert floor_services.gaming_days_close_due(now=later) == {"closed": [], "refused": [world.day.pk]}


# --------------------------------------------------------------------------- the report


def _file(report: DayReport, fmt: str) -> Path:
    return Path(settings.MEDIA_ROOT) / report.files.get(format=fmt).path


def test_report_figures_reconcile_with_the_postings_to_the_cent(closed):
    report = DayReport.objects.get(gaming_day=closed.day)
    s = report.summary
    day_house = house(session__gaming_day=closed.day)
    assert s["expected_cagnotte"] == day_house == 51_20
    assert s["levies_recorded"] == Coup.objects.filter(session__gaming_day=closed.day).aggregate(
        t=Sum("cagnotte"))["t"] == day_house  # fmt: skip
    for table in closed.tables:
        figures = s["tables"][str(table.number)]
        assert figures["expected_cagnotte"] == house(session__gaming_day=closed.day, session__table=table)
    assert sum(t["expected_cagnotte"] for t in s["tables"].values()) == day_house
    assert (s["coups"], s["banker_wins"], s["punta_wins"], s["ties"], s["non_conforming"]) == (5, 3, 1, 1, 1)
    assert s["tables"]["1"]["banker_rate"]["observed"] == f"{2 / 3:.6f}"
    # The seal is the day's seal over its streams, recomputed.
    assert report.seal == day_seal(streams=report.sealed_streams)
    assert f"gaming_day:{closed.day.pk}" in report.sealed_streams
    assert f"table_session:{closed.sessions[0].pk}" in report.sealed_streams


def _section_rows(day: GamingDay, key: str) -> list[dict[str, Any]]:
    from audit.reports.builder import build_document

    built = build_document(day=day, version=9, seal="s", streams=[], counts=[], count_history=[])
    section = next(s for s in built.document.sections if s.key == key)
    keys = [c.key for c in section.columns]
    return [dict(zip(keys, row, strict=True)) for row in section.rows()]


def test_no_section_has_two_columns_of_the_same_title(closed):
    # The XLSX and PDF show titles, not keys: the Coups sheet had "Bank" twice (the bank's
    # number, then its amount, which the XLSX shows without a unit), the interruptions and
    # the auctions "By" and "Reason" twice. A spreadsheet filter then cannot tell them apart.
    from audit.reports.builder import build_document

    built = build_document(day=closed.day, version=9, seal="s", streams=[], counts=[], count_history=[])
    for section in built.document.sections:
        titles = [c.title for c in section.columns]
        assert len(titles) == len(set(titles)), (section.key, titles)


def test_the_coups_section_says_which_coups_ended_on_a_natural(closed):
    """build_day's table 1: two coups of 5 against 2 drawn to, then 9 against 9 (a tie on
    naturals), then 9 against 5 (the punta's natural); table 2's coup is a drawn one."""
    rows = _section_rows(closed.day, "coups")
    assert [(r["table"], r["coup"], r["natural"]) for r in rows] == [
        (1, 1, False), (1, 2, True), (1, 3, False), (1, 4, True), (2, 1, False),
    ]
    assert [r["winner"] for r in rows if r["natural"]] == ["tie", "punta"]


def test_a_coup_the_commissario_annulled_once_its_cards_had_started_is_reported_and_verifies(
    world, media, django_capture_on_commit_callbacks, api, auditor
):
    s2 = TableSession.objects.get(pk=world.sessions[1].pk)
    by = s2.capo_partita
    coup = table_services.coup_open(session=s2, by=by)
    table_services.bet_place(coup=coup, by=by, patron=s2.seats.filter(seat_number=3).get().patron, amount=250_00)
    table_services.rien_ne_va_plus(coup=coup, by=by)
    for card in ("KH", "5S", "3C"):
        table_services.card_deal(coup=coup, by=by, card=card)
    table_services.coup_annul(coup=coup, by=world.commissario, reason="settlement refused")
    close(world, django_capture_on_commit_callbacks)
    world.day.refresh_from_db()

    [annulled] = _section_rows(world.day, "annulled")
    assert (annulled["coup"], annulled["annulled_by"], annulled["reason"], annulled["cards"]) == (
        coup.number, staff_said(world.commissario), "settlement refused", "KH 5S 3C")  # fmt: skip
    assert (annulled["bets"], annulled["bets_total"]) == (1, 250_00)
    report = DayReport.objects.get(gaming_day=world.day)
    assert report.summary["annulled"] == 1
    body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
    assert body["ok"] is True and body["reasons"] == []


def _coup_with_a_corrected_card(world) -> Coup:
    """Table 2: the punta's third card tapped as 2C, corrected to 2S, then the banker stands on 7."""
    s2 = TableSession.objects.get(pk=world.sessions[1].pk)
    by = s2.capo_partita
    coup = table_services.coup_open(session=s2, by=by)
    table_services.bet_place(coup=coup, by=by, patron=s2.seats.filter(seat_number=3).get().patron, amount=250_00)
    table_services.rien_ne_va_plus(coup=coup, by=by)
    for card in ("KH", "5S", "3C", "2D"):
        table_services.card_deal(coup=coup, by=by, card=card)
    table_services.punta_declare(coup=coup, by=by, draws=True)
    table_services.card_deal(coup=coup, by=by, card="2C")
    table_services.card_entry_correct(coup=coup, by=by, was="2C", card="2S")
    table_services.banker_decide(coup=coup, by=by, draws=False)
    coup.refresh_from_db()
    assert coup.state == Coup.State.SETTLED and coup.cards == ["KH", "5S", "3C", "2D", "2S"]
    return coup


def test_a_coup_with_a_corrected_card_verifies(world, media, django_capture_on_commit_callbacks, api, auditor):
    coup = _coup_with_a_corrected_card(world)
    assert Posting.objects.filter(coup=coup).aggregate(s=Sum("amount"))["s"] == 0
    close(world, django_capture_on_commit_callbacks)
    report = DayReport.objects.get(gaming_day=world.day)
    body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
    assert body["ok"] is True and body["reasons"] == []


def test_a_corrected_card_edited_in_sql_still_fails_verify(world, media, django_capture_on_commit_callbacks, api,
                                                           auditor):  # fmt: skip
    coup = _coup_with_a_corrected_card(world)
    card = ShoeCard.objects.get(coup=coup, code="2S")
    ShoeCard.objects.filter(pk=card.pk).update(code="2C")  # back to the card as first entered
    Coup.objects.filter(pk=coup.pk).update(cards=["KH", "5S", "3C", "2D", "2C"])
    close(world, django_capture_on_commit_callbacks)
    report = DayReport.objects.get(gaming_day=world.day)
    body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
    assert body["ok"] is False
    reasons = {(r["code"], r.get("coup"), r.get("position")) for r in body["reasons"]}
    assert reasons == {("coup_mismatch", coup.number, None), ("cards_mismatch", None, card.position)}
    [cards] = [r for r in body["reasons"] if r["code"] == "cards_mismatch"]
    assert (cards["in_books"]["card"], cards["in_trail"]["card"]) == ("2C", "2S")


def test_the_report_lists_annulled_coups_every_bet_and_each_patron_s_balance(
    world, media, django_capture_on_commit_callbacks
):
    s2 = TableSession.objects.get(pk=world.sessions[1].pk)  # run by the relief now
    coup = table_services.coup_open(session=s2, by=s2.capo_partita)
    patron = s2.seats.filter(seat_number=3).get().patron
    table_services.bet_place(coup=coup, by=s2.capo_partita, patron=patron, amount=250_00)
    table_services.coup_annul(coup=coup, by=s2.capo_partita, reason="sabot dropped")
    close(world, django_capture_on_commit_callbacks)

    [annulled] = _section_rows(world.day, "annulled")
    assert (annulled["table"], annulled["coup"], annulled["annulled_by"], annulled["reason"]) == (
        2, coup.number, staff_said(s2.capo_partita), "sabot dropped")  # fmt: skip
    assert (annulled["bets"], annulled["bets_total"], annulled["cards"]) == (1, 250_00, "")

    bets = _section_rows(world.day, "bets")
    settled_bets = Posting.objects.filter(session__gaming_day=world.day, bet__isnull=False)
    assert len(bets) == 5  # one per settled coup of the fixture day; the annulled coup's is not paid
    assert sum(b["result"] for b in bets) == settled_bets.aggregate(s=Sum("amount"))["s"]
    first = bets[0]
    assert (first["table"], first["coup"], first["amount"], first["winner"], first["result"]) == (
        1, 1, 300_00, "banker", -300_00)  # fmt: skip

    balances = _section_rows(world.day, "patron_balances")
    for session in world.sessions:
        want = {
            row["patron"]: row["balance"]
            for row in Posting.objects.filter(session=session, patron__isnull=False)
            .values("patron").annotate(balance=Sum("amount"))
        }
        got = {b["patron_id"]: b["balance"] for b in balances if b["session"] == session.number
               and b["table"] == session.table.number}  # fmt: skip
        assert got == want and want
    assert sum(b["balance"] for b in balances) + house(session__gaming_day=world.day) == 0
    assert all(b["won"] + b["lost"] == b["balance"] for b in balances)


def test_a_bet_carried_over_a_tie_names_the_coup_it_was_placed_on(world, media, django_capture_on_commit_callbacks):
    """Classic ties carry the bets (RULES.md §3.2): the report's bets say from which coup,
    not an internal bet id the report lists nowhere."""
    casino = world.tables[0].casino
    t3 = floor_services.table_create(casino=casino, site=world.tables[0].site, number=3, profile="classic",
                                     by=world.direzione)  # fmt: skip
    capo = UserFactory(username="capo_classic", roles=[Role.CAPO_PARTITA])
    changeur = UserFactory(username="changeur_classic", roles=[Role.CHANGEUR])
    s3, p3 = _session(t3, commissario=world.commissario, capo=capo, changeur=changeur, shoe="S-3")
    table_services.bank_open(session=s3, by=capo, patron=p3[0], amount=1000_00)
    tie = table_services.coup_record(session=s3, by=capo, cards=["7H", "7S", "KH", "KD"], punta_draws=False,
                                     bets=[{"patron": p3[1], "amount": 300_00}])  # fmt: skip
    assert tie.winner == "tie"
    table_services.coup_record(session=s3, by=capo, cards=["KH", "5S", "3C", "2D", "2S"], punta_draws=True,
                               banker_draws=False, bets=[])  # fmt: skip
    close(world, django_capture_on_commit_callbacks)
    rows = [b for b in _section_rows(world.day, "bets") if b["table"] == 3]
    assert [(b["coup"], b["amount"], b["carried_from"], b["result"]) for b in rows] == [
        (1, 300_00, None, 0), (2, 300_00, 1, -300_00)]  # fmt: skip


def test_report_files_and_checksums(closed):
    report = DayReport.objects.get(gaming_day=closed.day)
    for f in report.files.all():
        data = (Path(settings.MEDIA_ROOT) / f.path).read_bytes()
        assert hashlib.sha256(data).hexdigest() == f.sha256 and len(data) == f.size > 0
    text = _file(report, "csv").read_text("utf-8-sig")
    assert report.seal in text
    # Every coup's levy is in the CSV: the per-coup section reconciles with the postings.
    rows = list(csv.reader(io.StringIO(text)))
    assert any("26.20" in "".join(r) or "2620" in "".join(r) for r in rows)
    # The croupiers' relief is on record with who, when and why.
    [relief] = [r for r in rows if "break at 23:00" in r]
    # Before, after, each named as the register names them (name and username).
    before, after = (next(i for i, cell in enumerate(relief) if cell.endswith(f"({who})"))
                     for who in ("capo_partita", "capo_relief_venezia"))  # fmt: skip
    assert before < after and relief[before] != "(capo_partita)"
    # The sessions' register names both croupiers of table 2, in turn (art. 70).
    [t2] = [r for r in rows if r[:2] == ["2", "1"] and any("→" in cell for cell in r)]
    turn = next(cell for cell in t2 if "→" in cell)
    assert turn.index("(capo_partita)") < turn.index("(capo_relief_venezia)")
    assert _file(report, "pdf").read_bytes().startswith(b"%PDF")
    assert _file(report, "xlsx").read_bytes().startswith(b"PK")


def test_running_the_task_twice_gives_one_report(closed):
    first = DayReport.objects.get(gaming_day=closed.day)
    shas = dict(first.files.values_list("format", "sha256"))
    result = report_build.apply(args=[closed.day.pk]).get()
    assert result["report"] == first.pk and result["status"] == "done"
    assert DayReport.objects.filter(gaming_day=closed.day).count() == 1
    assert ReportFile.objects.filter(report=first).count() == 3
    assert dict(first.files.values_list("format", "sha256")) == shas
    assert AuditEvent.objects.filter(action="report.built").count() == 1


def test_the_task_refuses_an_open_day_and_builds_nothing(world):
    assert report_build.apply(args=[world.day.pk]).get() == {
        "gaming_day": world.day.pk, "version": 1, "error": "day_not_closed"}  # fmt: skip
    assert DayReport.objects.count() == 0


def test_expected_banker_rate_is_exact_and_the_interval_flags():
    p = expected_banker_rate("venezia", 6, False, True, False)
    assert 0 < p < 1 and p.denominator > 1
    from collections import Counter

    usage = Counter({(False, True, False): 10})
    inside = banker_rate_check(profile="venezia", decks=6, usage=usage, banker_wins=round(float(p) * 400),
                               punta_wins=400 - round(float(p) * 400))  # fmt: skip
    assert not inside["flagged"] and float(inside["low"]) < float(p) < float(inside["high"])
    assert inside["method"] == "normal approximation"  # n·p0·(1-p0) ≈ 100: the normal curve is fine
    outside = banker_rate_check(profile="venezia", decks=6, usage=usage, banker_wins=400, punta_wins=0)
    assert outside["flagged"] and outside["rules"]["regola_banker"] is True
    none = banker_rate_check(profile="venezia", decks=6, usage=None, banker_wins=0, punta_wins=0)
    assert none["flagged"] is False and none["method"] is None and none["low"] is None


def test_the_exact_binomial_region_against_hand_computed_tails():
    from fractions import Fraction

    from audit.reports.builder import binomial_acceptance

    half = Fraction(1, 2)
    # n = 5, p = 1/2: P(X = 0) = P(X = 5) = 1/32 = 3.1% > 2.5%: no count is rejected.
    assert binomial_acceptance(5, half) == (0, 5)
    # n = 10, p = 1/2: P(X <= 1) = 11/1024 = 1.07% <= 2.5% < P(X <= 2) = 56/1024 = 5.5%; symmetric.
    assert binomial_acceptance(10, half) == (2, 8)
    # n = 5, p = 1/10: P(X = 0) = 0.59; P(X >= 3) = 0.00856 <= 2.5% < P(X >= 2) = 0.08146.
    assert binomial_acceptance(5, Fraction(1, 10)) == (0, 2)
    assert binomial_acceptance(1, half) == (0, 1) and binomial_acceptance(0, half) == (0, 0)


def test_a_table_with_five_decided_coups_uses_the_exact_region():
    """Five banker wins out of five: the normal approximation flagged it (its 95% high is
    p0 + 1.96·sqrt(p0(1-p0)/5) ≈ 0.947), though at p0 ≈ 0.5085 it happens 3.4% of the time,
    more than the 2.5% a tail may hold. The exact region: P(X = 0) = (1-p0)^5 ≈ 2.86% and
    P(X = 5) = p0^5 ≈ 3.40%, both over 2.5%, so [0, 5]: every count of five is accepted."""
    from collections import Counter

    from audit.reports.builder import Z95

    usage = Counter({(False, True, False): 5})
    p = expected_banker_rate("venezia", 6, False, True, False)
    assert f"{float(p):.4f}" == "0.5085"
    assert (1 - p) ** 5 > Fraction(1, 40) and p**5 > Fraction(1, 40)  # the hand computation, exactly
    assert float(p) + Z95 * (float(p) * (1 - float(p)) / 5) ** 0.5 < 1  # where the normal curve flagged
    five = banker_rate_check(profile="venezia", decks=6, usage=usage, banker_wins=5, punta_wins=0)
    assert (five["method"], five["low"], five["high"], five["observed"], five["flagged"]) == (
        "exact binomial", "0.000000", "1.000000", "1.000000", False)  # fmt: skip
    # Forty decided coups: n·p0·(1-p0) ≈ 9.997, still exact: [14, 26] (P(X <= 13) ≈ 1.47%,
    # P(X <= 14) ≈ 3.18%; P(X >= 27) ≈ 2.49%, P(X >= 26) ≈ 5.06%); 3 of 40 is flagged.
    forty = banker_rate_check(profile="venezia", decks=6, usage=usage, banker_wins=3, punta_wins=37)
    assert (forty["method"], forty["low"], forty["high"], forty["flagged"]) == (
        "exact binomial", f"{14 / 40:.6f}", f"{26 / 40:.6f}", True)  # fmt: skip
    assert banker_rate_check(profile="venezia", decks=6, usage=usage, banker_wins=20,
                             punta_wins=21)["method"] == "normal approximation"  # fmt: skip


def test_the_report_says_which_interval_each_table_used_alike_in_csv_xlsx_and_pdf(closed, tmp_path):
    """build_day's tables decided 3 and 1 coups: both exact, [0, 1] (at p0 ≈ 0.5085 no count
    of 3 or 1 coups is in a tail of 2.5%: (1-p0)^3 ≈ 11.9%, p0^3 ≈ 13.2%)."""
    import openpyxl

    from tests.audit.test_exports import csv_blocks, pdf_text

    report = DayReport.objects.get(gaming_day=closed.day)
    rates = {n: t["banker_rate"] for n, t in report.summary["tables"].items()}
    assert {n: (r["decided"], r["method"], r["low"], r["high"], r["flagged"]) for n, r in rates.items()} == {
        "1": (3, "exact binomial", "0.000000", "1.000000", False),
        "2": (1, "exact binomial", "0.000000", "1.000000", False),
    }
    note = "Exact binomial: tables 1, 2."
    _preamble, blocks = csv_blocks(_file(report, "csv").read_bytes())
    block = blocks["Tables: figures of the day and the banker's win rate"]
    assert block[0][0].startswith("# Expected rate:") and block[0][0].endswith(note)
    assert "each tail at most 2.5%" in block[0][0]
    header, *rows = [r for r in block if not r[0].startswith("#")]
    csv_rows = {r[0]: r for r in rows}
    ws = openpyxl.load_workbook(_file(report, "xlsx"))["Tables"]
    titles = [c.value for c in ws[1]]
    for row in ws.iter_rows(min_row=2, values_only=True):
        table = str(row[titles.index("Table")])
        assert row[titles.index("95% method")] == csv_rows[table][header.index("method")] == "exact binomial"
        assert f"{row[titles.index('95% low')]:.6f}" == csv_rows[table][header.index("low")] == rates[table]["low"]
        assert f"{row[titles.index('95% high')]:.6f}" == csv_rows[table][header.index("high")] == rates[table]["high"]
    text = pdf_text(_file(report, "pdf").read_bytes(), tmp_path, drawn_order=True)
    if text is not None:
        assert note in text and "exact binomial" in text


# --------------------------------------------------------------------------- cagnotte count


def _post_count(api, user, day, table, **body):
    return api(user).post(f"/api/gaming-days/{day.pk}/cagnotte-counts/", {"table": table.pk, **body}, format="json")


def test_count_refusals_write_nothing(world, api, direzione, direzione2, auditor, commissario, capo_partita, changeur):
    t1 = world.tables[0]
    before = (CagnotteCount.objects.count(), AuditEvent.objects.count())
    r = _post_count(api, direzione, world.day, t1, counted=100, witness=direzione2.pk)
    assert r.status_code == 409 and r.json()["error"]["code"] == "day_not_closed"
    assert (CagnotteCount.objects.count(), AuditEvent.objects.count()) == before
    with transaction.atomic():
        floor_services.gaming_day_close(gaming_day=world.day, by=commissario, open_sessions="close")
    before = (CagnotteCount.objects.count(), AuditEvent.objects.count())
    r = _post_count(api, auditor, world.day, t1, counted=100, witness=direzione2.pk)
    assert r.status_code == 403 and r.json()["error"]["code"] == "permission_denied"
    r = _post_count(api, direzione, world.day, t1, counted=100, witness=direzione.pk)
    assert r.status_code == 400 and r.json()["error"]["code"] == "witness_must_differ"
    r = _post_count(api, direzione, world.day, t1, counted=-1, witness=direzione2.pk)
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_input"
    for table_staff in (capo_partita, changeur):  # their box: they do not vouch for its count
        r = _post_count(api, direzione, world.day, t1, counted=41_20, witness=table_staff.pk)
        assert r.status_code == 400 and r.json()["error"]["code"] == "witness_not_management"
    assert (CagnotteCount.objects.count(), AuditEvent.objects.count()) == before
    r = _post_count(api, direzione, world.day, t1, counted=41_20, witness=auditor.pk)
    assert r.status_code == 201, r.json()
    r = _post_count(api, direzione2, world.day, t1, counted=41_20, witness=auditor.pk)
    assert r.status_code == 409 and r.json()["error"]["code"] == "already_counted"
    assert CagnotteCount.objects.count() == before[0] + 1


def test_a_count_s_correction_needs_a_reason_one_can_read(closed, api, direzione, auditor):
    """QA: the reason of a count's correction made of nothing but
    invisible characters (a zero-width space, a BOM) was taken, and the desk and the report
    then gave a blank reason for it. It is no reason: 400 reason_required, nothing written."""
    t1 = closed.tables[0]
    count = registers.cagnotte_count_record(gaming_day=closed.day, table=t1, by=direzione, witness=auditor,
                                            counted=41_20)  # fmt: skip
    before = (CagnotteCount.objects.count(), AuditEvent.objects.count())
    r = api(direzione).post(f"/api/cagnotte-counts/{count.pk}/correct/",
                            {"counted": 41_00, "witness": auditor.pk, "note": "\u200b \ufeff"}, format="json")  # fmt: skip
    assert r.status_code == 400 and r.json()["error"]["code"] == "reason_required", r.json()
    assert (CagnotteCount.objects.count(), AuditEvent.objects.count()) == before


def test_surplus_and_shortfall_never_offset_and_the_higher_is_carried(closed, api, direzione, direzione2):
    t1, t2 = closed.tables
    e1, e2 = house(session__table=t1), house(session__table=t2)
    r1 = _post_count(api, direzione, closed.day, t1, counted=e1 + 1_00, witness=direzione2.pk)  # surplus 1.00
    r2 = _post_count(api, direzione, closed.day, t2, counted=e2 - 5_00, witness=direzione2.pk)  # short 5.00
    assert r1.json()["surplus"] == 1_00 and r1.json()["carried"] == e1 + 1_00 and r1.json()["expected"] == e1
    assert r2.json()["shortfall"] == 5_00 and r2.json()["carried"] == e2
    reg = registers.control_register_prepare(gaming_day=closed.day, by=direzione)
    assert reg.total == e1 + 1_00 + e2  # not e1 + e2 - 4.00: the tables never offset
    assert reg.total_words_it == "cinquantadue euro e venti centesimi"
    assert reg.total_words_en == "fifty-two euros and twenty cents"
    # A correction is a new count that refers to the old one; the register follows it.
    old = CagnotteCount.objects.get(pk=r2.json()["id"])
    r = api(direzione).post(f"/api/cagnotte-counts/{old.pk}/correct/",
                            {"counted": e2 + 2_00, "witness": direzione2.pk, "note": "box recounted"},
                            format="json")  # fmt: skip
    assert r.status_code == 201 and r.json()["corrects"] == old.pk
    assert CagnotteCount.objects.filter(pk=old.pk, counted=e2 - 5_00).exists()
    reg = registers.control_register_prepare(gaming_day=closed.day, by=direzione)
    assert reg.total == e1 + 1_00 + e2 + 2_00
    # The report lists the corrected count with its correction; its figures use the latter.
    from audit.reports.builder import build_document

    built = build_document(
        day=closed.day, version=2, seal="s", streams=[],
        counts=list(registers.current_counts(gaming_day_id=closed.day.pk)),
        count_history=list(registers.day_counts(gaming_day_id=closed.day.pk)),
    )  # fmt: skip
    section = next(s for s in built.document.sections if s.key == "cagnotte_counts")
    keys = [c.key for c in section.columns]
    rows = [dict(zip(keys, row, strict=True)) for row in section.rows()]
    new_pk = r.json()["id"]
    assert [(row["count"], row["counted"], row["corrects"], row["corrected_by"]) for row in rows if row["table"] == t2.number] == [
        (old.pk, e2 - 5_00, None, new_pk), (new_pk, e2 + 2_00, old.pk, None)
    ]
    assert built.summary["counted"] == e1 + 1_00 + e2 + 2_00
    # Every section's column titles fit their header in the PDF: none is cut short.
    from audit.exports import pdf

    reg = registers.control_register_prepare(gaming_day=closed.day, by=direzione)
    reg = registers.control_register_sign(register=reg, by=direzione)
    reg = registers.control_register_sign(register=reg, by=direzione2)
    built = build_document(
        day=closed.day, version=2, seal="s", streams=[], register=reg,
        counts=list(registers.current_counts(gaming_day_id=closed.day.pk)),
    )  # fmt: skip
    keys = {section.key for section in built.document.sections}
    assert {"tables", "coups", "cagnotte_counts", "control_register"} <= keys
    fonts = pdf.fonts()
    for section in built.document.sections:
        table = pdf._layout(section.columns, fonts, [])
        assert not [t for t in table.titles if "…" in t[-1]], (section.key, table.titles)
        # Nor, with figures far beyond a real day's in every column, is a figure shortened: a
        # table too wide for the page is set in a smaller type instead.
        for figures in BIG_FIGURES:
            sample = [[figures[column.kind] for column in section.columns]]
            table = pdf._layout(section.columns, fonts, sample)
            assert table.size >= pdf.MIN_BODY_SIZE and not [t for t in table.titles if "…" in t[-1]]
            for column, width, text in zip(section.columns, table.widths, sample[0], strict=True):
                parts = text.split() if column.kind == "datetime" else [text]  # (a moment may take two lines)
                if column.kind != "text":
                    widest = max(pdf._width(part, fonts.cond, table.size) for part in parts)
                    assert widest <= width - 2 * pdf.CELL_PAD, (section.key, column.key, table.size)


BIG_FIGURES = [
    {"money": "9,999,999.99", "int": "99,999", "datetime": "2026-11-30 23:59:59", "bool": "yes", "text": "a note",
     "rate": "0.999999"},
    {"money": "999,999,999.99", "int": "9,999,999", "datetime": "2026-11-30 23:59:59", "bool": "yes", "text": "x",
     "rate": "0.000001"},
]


def test_cagnotte_register_api(closed, api, auditor, outsider):
    r = api(auditor).get(f"/api/gaming-days/{closed.day.pk}/cagnotte-register/")
    assert r.status_code == 200, r.json()
    tables = {t["table"]["number"]: t for t in r.json()["tables"]}
    t1 = tables[1]
    session = t1["sessions"][0]
    assert session["capo_partita"]["username"] and session["changeur"]["username"]
    assert session["closed_at"] and len(session["interruptions"]) == 1 and session["interruptions"][0]["resumed_at"]
    assert session["shoes"][0]["voided"] == 1
    banks = session["banks"]
    assert [len(b["coups_detail"]) for b in banks] == [4]
    assert [c["levy"] for c in banks[0]["coups_detail"]] == [15_00, 0, 26_20, 0]
    assert t1["expected_cagnotte"] == sum(c["levy"] for b in banks for c in b["coups_detail"]) == 41_20
    assert tables[2]["expected_cagnotte"] == 10_00
    assert api(outsider).get(f"/api/gaming-days/{closed.day.pk}/cagnotte-register/").status_code == 403


def test_the_cagnotte_register_describes_the_coups_played_not_an_annulled_one(
    world, media, api, auditor, django_capture_on_commit_callbacks
):
    # Art. 71 describes each banker's coups with their levies; an annulled coup was not
    # played (the report lists it apart): it is not a coup of the bank with no winner.
    s2 = TableSession.objects.get(pk=world.sessions[1].pk)
    coup = table_services.coup_open(session=s2, by=s2.capo_partita)
    table_services.coup_annul(coup=coup, by=s2.capo_partita, reason="sabot dropped")
    close(world, django_capture_on_commit_callbacks)
    r = api(auditor).get(f"/api/gaming-days/{world.day.pk}/cagnotte-register/?table={s2.table_id}")
    assert r.status_code == 200, r.json()
    [bank] = [b for s in r.json()["tables"][0]["sessions"] for b in s["banks"] if b["bank"] == coup.bank.number]
    assert coup.number not in [c["coup"] for c in bank["coups_detail"]]
    assert len(bank["coups_detail"]) == bank["coups"] >= 1
    assert all(c["settled_at"] and c["winner"] for c in bank["coups_detail"])


# --------------------------------------------------------------------------- control register


def _count_all(day, by, witness):
    for table in day.tables:
        registers.cagnotte_count_record(gaming_day=day.day, table=table, by=by, witness=witness,
                                        counted=house(session__table=table))  # fmt: skip


def test_no_register_over_levies_changed_since_the_count(closed, api, direzione, direzione2):
    # A levy edited in SQL after the count: the register's sessions would say one expected
    # cagnotte and the count another (the QA signed one showing 210.70 against 220.70).
    _count_all(closed, direzione, direzione2)
    url = f"/api/gaming-days/{closed.day.pk}/control-register/"
    house_posting = Posting.objects.filter(session__table__number=2, role=Posting.Role.HOUSE).order_by("pk").first()
    raw_sql("UPDATE tables_posting SET amount = amount - 100 WHERE id = %s", (house_posting.pk,))
    events = AuditEvent.objects.count()
    r = api(direzione).post(url)
    assert r.status_code == 409, r.json()
    assert r.json()["error"]["code"] == "levies_changed_since_count"
    assert r.json()["error"]["details"] == {"tables": [2]}
    assert AuditEvent.objects.count() == events and not ControlRegister.objects.exists()


def test_control_register_two_different_signers(
    closed, api, direzione, direzione2, auditor, django_capture_on_commit_callbacks
):
    url = f"/api/gaming-days/{closed.day.pk}/control-register/"
    r = api(direzione).post(url)
    assert r.status_code == 409 and r.json()["error"]["code"] == "cagnotte_not_counted"
    assert r.json()["error"]["details"] == {"tables": [1, 2]}
    _count_all(closed, direzione, direzione2)
    r = api(direzione).post(url)
    assert r.status_code == 200, r.json()
    reg = r.json()
    assert reg["status"] == "draft" and reg["total"] == 51_20
    assert reg["total_words_it"] == "cinquantuno euro e venti centesimi"
    assert reg["total_words_en"] == "fifty-one euros and twenty cents"
    assert [line["carried"] for line in reg["lines"]] == [41_20, 10_00]
    sign = f"/api/control-registers/{reg['id']}/sign/"

    def refused(user, status, code):
        before = AuditEvent.objects.count(), ControlRegister.objects.get(pk=reg["id"]).status
        r = api(user).post(sign)
        assert r.status_code == status and r.json()["error"]["code"] == code, r.json()
        assert (AuditEvent.objects.count(), ControlRegister.objects.get(pk=reg["id"]).status) == before

    refused(auditor, 403, "permission_denied")
    assert api(direzione).post(sign).json()["status"] == "first_signed"
    refused(direzione, 409, "second_signer_must_differ")
    r = api(direzione).post(url)  # editing once signed
    assert r.status_code == 409 and r.json()["error"]["code"] == "register_signed"
    with django_capture_on_commit_callbacks(execute=True):
        r = api(direzione2).post(sign)
    assert r.json()["status"] == "signed" and r.json()["second_signer"] == direzione2.pk
    refused(direzione2, 409, "already_signed")
    refused(direzione, 409, "already_signed")
    # The signed register asked for report version 2, which includes it.
    v2 = DayReport.objects.get(gaming_day=closed.day, version=2)
    assert v2.status == "done", v2.error
    assert v2.control_register_id == reg["id"] and v2.summary["register_total"] == 51_20
    assert f"day_books:{closed.day.pk}" in v2.sealed_streams
    assert "cinquantuno euro e venti centesimi" in _file(v2, "csv").read_text("utf-8-sig")
    assert api(auditor).get(url).json()["agrees_with_counts"] is True
    # Nothing to correct while the signed register agrees with the counts in force.
    r = api(direzione).post(f"/api/control-registers/{reg['id']}/correct/", {"reason": "again"}, format="json")
    assert r.status_code == 409 and r.json()["error"]["code"] == "register_unchanged", r.json()
    assert not ControlRegister.objects.filter(corrects_id=reg["id"]).exists()
    # A count corrected after the signatures: the signed register no longer agrees with the
    # counts in force and says so; report v2 still verifies, naming what came after it.
    count = next(iter(registers.current_counts(gaming_day_id=closed.day.pk)))
    registers.cagnotte_count_correct(count=count, by=direzione, witness=direzione2, counted=count.counted + 1_00,
                                     note="recount")  # fmt: skip
    assert api(auditor).get(url).json()["agrees_with_counts"] is False
    verified = api(auditor).post(f"/api/reports/{v2.pk}/verify/").json()
    assert verified["ok"] is True and verified["later_events"] == {f"day_books:{closed.day.pk}": 1}
    # A later correction is a new register referring to the signed one.
    r = api(direzione).post(f"/api/control-registers/{reg['id']}/correct/", {"reason": "late count"}, format="json")
    assert r.status_code == 201 and r.json()["corrects"] == reg["id"] and r.json()["status"] == "draft"
    assert r.json()["agrees_with_counts"] is True
    assert ControlRegister.objects.get(pk=reg["id"]).signed
    assert api(auditor).get(url).json()["id"] == r.json()["id"]
    # Signed twice, it goes into report version 3, which says what it corrects and why.
    with django_capture_on_commit_callbacks(execute=True):
        for user in (direzione, direzione2):
            assert api(user).post(f"/api/control-registers/{r.json()['id']}/sign/").status_code == 200
    v3 = DayReport.objects.get(gaming_day=closed.day, version=3)
    assert v3.status == "done", v3.error
    csv_text = _file(v3, "csv").read_text("utf-8-sig")
    assert f"control register {reg['id']}: late count" in csv_text
    assert f"({direzione.username}" in csv_text  # "Signed by": the name, then the username


def test_a_first_signature_on_figures_no_longer_in_force_is_withdrawn(closed, direzione, direzione2):
    _count_all(closed, direzione, direzione2)
    reg = registers.control_register_prepare(gaming_day=closed.day, by=direzione)
    registers.control_register_sign(register=reg, by=direzione)
    with pytest.raises(ApplicationError) as exc:  # nothing changed: a signed page is not rewritten
        registers.control_register_prepare(gaming_day=closed.day, by=direzione)
    assert exc.value.code == "register_signed"
    count = next(iter(registers.current_counts(gaming_day_id=closed.day.pk)))
    registers.cagnotte_count_correct(count=count, by=direzione, witness=direzione2, counted=count.counted + 50,
                                     note="recount")  # fmt: skip
    with pytest.raises(ApplicationError) as exc:
        registers.control_register_sign(register=reg, by=direzione2)
    assert exc.value.code == "register_stale"
    updated = registers.control_register_prepare(gaming_day=closed.day, by=direzione2)
    assert updated.pk == reg.pk and updated.status == "draft" and updated.total == reg.total + 50
    event = AuditEvent.objects.filter(action="control_register.updated").latest("pk")
    assert event.payload["old"]["first_signer"] == direzione.pk
    registers.control_register_sign(register=updated, by=direzione)
    assert registers.control_register_sign(register=updated, by=direzione2).signed


# --------------------------------------------------------------------------- auditor API


def test_auditor_reads_downloads_and_verifies(closed, api, auditor, outsider, direzione):
    report = DayReport.objects.get(gaming_day=closed.day)
    r = api(auditor).get(f"/api/gaming-days/{closed.day.pk}/report/")
    assert r.status_code == 200 and r.json()["id"] == report.pk
    assert r.json()["progress"]["state"] == "SUCCESS" and r.json()["progress"]["done"] == r.json()["progress"]["total"]
    assert api(auditor).get(f"/api/reports/?gaming_day={closed.day.pk}").json()["results"][0]["id"] == report.pk
    for fmt in ("csv", "xlsx", "pdf"):
        r = api(auditor).get(f"/api/reports/{report.pk}/files/{fmt}/")
        assert r.status_code == 200
        body = b"".join(r.streaming_content)
        assert hashlib.sha256(body).hexdigest() == r["X-Checksum-SHA256"] == report.files.get(format=fmt).sha256
    assert api(auditor).get(f"/api/reports/{report.pk}/files/doc/").status_code == 404
    assert api(outsider).get(f"/api/reports/{report.pk}/").status_code == 403
    events = AuditEvent.objects.count()
    r = api(auditor).post(f"/api/reports/{report.pk}/verify/")
    assert r.status_code == 200 and r.json()["ok"] is True, r.json()
    assert AuditEvent.objects.count() == events


def test_the_list_gives_each_report_without_its_figures_the_detail_with_them(closed, api, auditor):
    # A list of whole summaries weighed 261 KB a page at a season; a list says what each report
    # is and where it stands, the report's own answer gives its figures.
    report = DayReport.objects.get(gaming_day=closed.day)
    client = api(auditor)
    client.get("/api/me/")  # the user's roles are looked up once, then cached on him
    with CaptureQueriesContext(connection) as captured:
        [listed] = client.get(f"/api/reports/?gaming_day={closed.day.pk}").json()["results"]
    [read] = [q["sql"] for q in captured if 'FROM "audit_dayreport"' in q["sql"] and "COUNT(" not in q["sql"]]
    detail = client.get(f"/api/reports/{report.pk}/").json()
    assert set(detail) - set(listed) == {"summary"}
    assert detail["summary"] == report.summary and detail["summary"]["tables"]
    assert {key: detail[key] for key in listed} == listed
    assert listed["date"] == closed.day.date.isoformat() and listed["gaming_day"] == closed.day.pk
    assert listed["progress"] == {"state": "SUCCESS", "done": report.summary["rows"], "total": report.summary["rows"]}
    assert [(f["format"], f["url"]) for f in listed["files"]] == [
        (fmt, f"/api/reports/{report.pk}/files/{fmt}/") for fmt in ("csv", "pdf", "xlsx")
    ]
    assert (listed["seal"], listed["current"], listed["superseded_by"]) == (report.seal, True, None)
    # Nor is the summary read from the database for the list (its rows are, for the progress).
    columns = read.replace(""""audit_dayreport"."summary" -> 'rows'""", "")
    assert '"audit_dayreport"."summary"' not in columns and '"audit_dayreport"."sealed_heads"' not in columns


def test_the_schema_gives_the_list_no_summary(api, auditor):
    schema = api(auditor).get("/api/schema/?format=json").json()
    listing = schema["paths"]["/api/reports/"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    item = schema["components"]["schemas"][listing["$ref"].rsplit("/", 1)[1]]["properties"]["results"]["items"]
    listed = schema["components"]["schemas"][item["$ref"].rsplit("/", 1)[1]]["properties"]
    whole = schema["components"]["schemas"]["ReportOutput"]["properties"]
    assert set(whole) - set(listed) == {"summary"}
    assert {"id", "gaming_day", "date", "version", "status", "files", "seal", "progress", "current"} <= set(listed)


@pytest.mark.parametrize(
    "accept",
    ["{type}", "{type}, */*;q=0.1", "application/octet-stream", "text/html"],
)
def test_a_download_asking_for_its_own_type_is_served(closed, api, auditor, accept):
    # A client that says what it wants (Accept: application/pdf, curl -H, a PDF viewer) got
    # 406 not_acceptable: the file endpoint negotiated against the JSON renderer.
    report = DayReport.objects.get(gaming_day=closed.day)
    types = {"csv": "text/csv", "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
             "pdf": "application/pdf"}  # fmt: skip
    for fmt, content_type in types.items():
        r = api(auditor).get(f"/api/reports/{report.pk}/files/{fmt}/", HTTP_ACCEPT=accept.format(type=content_type))
        assert r.status_code == 200, (fmt, accept, r.content)
        assert r["Content-Type"].startswith(content_type)
        assert hashlib.sha256(b"".join(r.streaming_content)).hexdigest() == report.files.get(format=fmt).sha256
    # errors keep the API's one shape whatever was asked for
    r = api(auditor).get(f"/api/reports/{report.pk}/files/doc/", HTTP_ACCEPT="application/pdf")
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"


def test_odd_ids_and_formats_are_4xx_never_500(closed, api, auditor):
    # str.isdigit() takes "²", int() does not; a NUL byte in a format reached PostgreSQL (tests/fuzz).
    report = DayReport.objects.get(gaming_day=closed.day)
    client = api(auditor)
    for url in (
        "/api/reports/?gaming_day=²",
        f"/api/gaming-days/{closed.day.pk}/report/?version=²",
        f"/api/gaming-days/{closed.day.pk}/cagnotte-register/?table=①",
    ):
        r = client.get(url)
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_input", (url, r.content)
    for fmt in ("%00", "csv%00", "doc"):
        r = client.get(f"/api/reports/{report.pk}/files/{fmt}/")
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found", (fmt, r.content)
    assert client.get(f"/api/reports/?gaming_day={10**30}").json()["count"] == 0
    r = client.get(f"/api/gaming-days/{closed.day.pk}/report/?version={10**30}")
    assert r.status_code == 404 and r.json()["error"]["code"] == "report_not_found"


def test_a_count_past_a_bigint_is_a_400_and_writes_nothing(closed, api, direzione, direzione2):
    t1 = closed.tables[0]
    before = (CagnotteCount.objects.count(), AuditEvent.objects.count())
    r = _post_count(api, direzione, closed.day, t1, counted=10**19, witness=direzione2.pk)
    assert r.status_code == 400 and r.json()["error"]["details"].keys() == {"counted"}, r.json()
    assert (CagnotteCount.objects.count(), AuditEvent.objects.count()) == before
    count = registers.cagnotte_count_record(gaming_day=closed.day, table=t1, by=direzione, witness=direzione2,
                                            counted=house(session__table=t1))  # fmt: skip
    before = (CagnotteCount.objects.count(), AuditEvent.objects.count())
    r = api(direzione).post(f"/api/cagnotte-counts/{count.pk}/correct/",
                            {"counted": 10**19, "witness": direzione2.pk, "note": "recount"}, format="json")  # fmt: skip
    assert r.status_code == 400 and r.json()["error"]["details"].keys() == {"counted"}, r.json()
    assert (CagnotteCount.objects.count(), AuditEvent.objects.count()) == before


def test_a_later_event_is_not_tampering(closed, api, auditor):
    """A count corrected after the build (say) appends to a sealed stream: the report still
    verifies, and says how many events came after it."""
    report = DayReport.objects.get(gaming_day=closed.day)
    assert report.sealed_heads and report.seal == day_seal(streams=report.sealed_streams)
    with transaction.atomic():
        record(stream=f"gaming_day:{closed.day.pk}", actor=None, action="late.event", data={})
    body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
    assert body["ok"] is True and body["reasons"] == [] and body["seal"]["ok"] is True
    assert body["later_events"] == {f"gaming_day:{closed.day.pk}": 1}


def test_verify_names_a_changed_file_and_a_moved_seal(closed, api, auditor):
    report = DayReport.objects.get(gaming_day=closed.day)
    path = _file(report, "csv")
    path.write_bytes(path.read_bytes() + b"tampered\n")
    # An attacker rewrites the last sealed event of the day's stream (hash and all).
    name, seq, _ = next(h for h in report.sealed_heads if h[0] == f"gaming_day:{closed.day.pk}")
    with trigger_disabled():
        AuditEvent.objects.filter(stream__name=name, seq=seq).update(hash="f" * 64)
    r = api(auditor).post(f"/api/reports/{report.pk}/verify/")
    body = r.json()
    assert r.status_code == 200 and body["ok"] is False
    assert {reason["code"] for reason in body["reasons"]} == {"checksum_mismatch", "seal_mismatch", "chain_broken"}
    assert [f["ok"] for f in body["files"]] == [True, False, True] or {f["format"]: f["ok"] for f in body["files"]} == {
        "csv": False, "pdf": True, "xlsx": True}  # fmt: skip
    path.unlink()
    assert {x["code"] for x in api(auditor).post(f"/api/reports/{report.pk}/verify/").json()["reasons"]} >= {
        "file_missing"}  # fmt: skip


def test_a_levy_edited_in_the_coup_rows_before_the_build_is_caught(world, media, api, auditor,
                                                                    django_capture_on_commit_callbacks):
    """The coup and posting rows have no trigger and no chain; the report is built from them.
    A levy edited there in SQL (coup, house posting and banker's posting, summing to zero)
    went into the next report with every check passing: verify now compares each table's
    levies with its sessions' `coup.settled` events as of the build."""
    coup = Coup.objects.filter(session__gaming_day=world.day, cagnotte__gt=0).order_by("pk").first()
    levy = coup.cagnotte
    Coup.objects.filter(pk=coup.pk).update(cagnotte=0)
    Posting.objects.filter(coup=coup, role="house").update(amount=0)
    banker = Posting.objects.filter(coup=coup, role="banker").get()
    Posting.objects.filter(pk=banker.pk).update(amount=banker.amount + levy)
    close(world, django_capture_on_commit_callbacks)
    report = DayReport.objects.get(gaming_day=world.day)
    body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
    assert body["ok"] is False
    table = coup.session.table.number
    levies = [r for r in body["reasons"] if r["code"] == "levies_mismatch"]
    assert [(r["code"], r["table"], r["figure"], r["in_trail"] - r["in_report"]) for r in levies] == [
        ("levies_mismatch", table, "levies_recorded", levy), ("levies_mismatch", table, "expected_cagnotte", levy)]
    # The coup's levy and its house and banker postings edited: neither matches its event now.
    assert [(r["code"], r["coup"]) for r in body["reasons"][len(levies):]] == [
        ("coup_mismatch", coup.number), ("postings_mismatch", coup.number)]
    assert body["reasons"][len(levies)]["fields"] == {"cagnotte": {"in_books": 0, "in_trail": levy}}
    from audit.views import _explain

    assert _explain(body)["lines"][0] == (
        f"Table {table}, levies recorded: {levies[0]['in_report'] / 100:.2f} in the report, "
        f"{levies[0]['in_trail'] / 100:.2f} by the coups the audit trail recorded.")  # fmt: skip


def test_money_moved_between_a_coups_postings_is_caught(world, media, api, auditor,
                                                        django_capture_on_commit_callbacks):
    """Ten euros moved in SQL from the banker's posting to a bettor's: the coup still sums to
    zero and its levy is untouched, so the levies check passes; the coup's postings no longer
    match its `coup.settled` event, and verify names the coup."""
    bettor = Posting.objects.filter(coup__session__gaming_day=world.day, role="bettor").order_by("pk").first()
    coup = bettor.coup
    banker = Posting.objects.get(coup=coup, role="banker")
    Posting.objects.filter(pk=bettor.pk).update(amount=bettor.amount + 10_00)
    Posting.objects.filter(pk=banker.pk).update(amount=banker.amount - 10_00)
    close(world, django_capture_on_commit_callbacks)
    report = DayReport.objects.get(gaming_day=world.day)
    body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
    assert body["ok"] is False
    [reason] = body["reasons"]
    assert (reason["code"], reason["table"], reason["session"], reason["coup"]) == (
        "postings_mismatch", coup.session.table.number, coup.session.number, coup.number)
    moved = {("bettor", bettor.patron_id): 10_00, ("banker", banker.patron_id): -10_00}
    books = {(p["role"], p["patron"]): p["amount"] for p in reason["in_books"]}
    trail = {(p["role"], p["patron"]): p["amount"] for p in reason["in_trail"]}
    assert {k: books[k] - trail[k] for k in books} == {k: moved.get(k, 0) for k in books}
    from audit.views import _explain

    line = _explain(body)["lines"][0]
    assert line.startswith(f"Table {coup.session.table.number}, session {coup.session.number}, coup {coup.number}: ")
    name = f"{bettor.patron.first_name} {bettor.patron.last_name}"
    # The fixture's patrons are rows no event registered: named by their rows, and said so.
    assert f"{name} [no registration on record] (patron {bettor.patron_id}, bettor) " in line.split(
        "In the audit trail")[0]  # fmt: skip
    assert {(e["name"], e["name_of_record"]) for e in reason["in_books"] if e["patron"] == bettor.patron_id} == {
        (name, False)}  # fmt: skip
    assert "the house" not in line  # the entries both sides share are left out


def test_a_coup_edited_or_unsettled_in_sql_is_caught(world, media, api, auditor, django_capture_on_commit_callbacks):
    """A settled coup's covered stake edited, another turned back to a pending reconstruction: the rows
    the report reads no longer match the coups' `coup.settled` events."""
    edited, hidden = Coup.objects.filter(session__gaming_day=world.day, state="settled").order_by("pk")[:2]
    Coup.objects.filter(pk=edited.pk).update(covered=edited.covered + 5_00)
    Coup.objects.filter(pk=hidden.pk).update(state="pending")
    close(world, django_capture_on_commit_callbacks)
    report = DayReport.objects.get(gaming_day=world.day)
    body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
    coups = {r["coup"]: r for r in body["reasons"] if r["code"] == "coup_mismatch"}
    assert coups[edited.number]["fields"] == {"covered": {"in_books": edited.covered + 5_00, "in_trail": edited.covered}}
    assert (coups[hidden.number]["settled_in_books"], coups[hidden.number]["settled_in_trail"]) == (False, True)
    from audit.views import _explain

    lines = _explain(body)["lines"]
    assert any(line.endswith(f"Covered: {(edited.covered + 5_00) / 100:.2f} in the books, "
                             f"{edited.covered / 100:.2f} in the audit trail.") for line in lines), lines  # fmt: skip
    assert any(line.endswith("The books do not hold it as settled.") for line in lines), lines


def test_a_bet_and_a_card_edited_in_sql_are_said_on_the_desk(world, media, api, auditor,
                                                             django_capture_on_commit_callbacks):
    """A bet's amount and a voided card's reason edited: the money is untouched, so every
    other check passes; verify names the coup's bets and the card, and the desk says both
    sides of each."""
    bet = Bet.objects.filter(coup__session__gaming_day=world.day).order_by("pk").first()
    Bet.objects.filter(pk=bet.pk).update(amount=bet.amount + 1_00)
    card = ShoeCard.objects.get(shoe__session__gaming_day=world.day, use="void")
    ShoeCard.objects.filter(pk=card.pk).update(void_reason="dropped")
    close(world, django_capture_on_commit_callbacks)
    report = DayReport.objects.get(gaming_day=world.day)
    body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
    assert body["ok"] is False
    assert [(r["code"], r.get("coup"), r.get("position")) for r in body["reasons"]] == [
        ("bets_mismatch", bet.coup.number, None), ("cards_mismatch", None, card.position)]  # fmt: skip
    from audit.views import _explain

    name = f"{bet.patron.first_name} {bet.patron.last_name} [no registration on record]"  # a row no event registered
    amount = f"{bet.amount / 100:.2f}"
    bets_line, card_line = _explain(body)["lines"]
    assert bets_line == (
        f"Table 1, session 1, coup {bet.coup.number}: the bets in the books differ from those the audit trail "
        f"recorded at rien ne va plus. In the books: {name} (patron {bet.patron_id}, individual) "
        f"{(bet.amount + 1_00) / 100:.2f}. In the audit trail: {name} (patron {bet.patron_id}, individual) {amount}.")
    assert card_line == (
        f"Table 1, session 1, shoe 1 (S-1), card {card.position} out of the shoe: the card in the books differs "
        "from the one the audit trail recorded. In the books: QS, voided (dropped). In the audit trail: QS, "
        "voided (seen face up in the sabot).")  # fmt: skip


def test_a_coup_version_edited_is_said_in_words(world, media, api, auditor, django_capture_on_commit_callbacks):
    """The reconstructed coup's version settled on and its shoe card edited: the desk says each
    version in the report's words, and the cards by their codes."""
    coup = Coup.objects.get(session__gaming_day=world.day, conforming=False)
    Coup.objects.filter(pk=coup.pk).update(next_cards=["5H"], settled={**coup.settled, "winner": "punta"})
    close(world, django_capture_on_commit_callbacks)
    body = api(auditor).post(f"/api/reports/{DayReport.objects.get(gaming_day=world.day).pk}/verify/").json()
    [reason] = body["reasons"]
    assert (reason["code"], set(reason["fields"])) == ("coup_mismatch", {"next_cards", "settled"})
    from audit.views import _explain

    [line] = _explain(body)["lines"]
    assert "Shoe cards drawn for the reconstruction: 5H in the books, 4H in the audit trail." in line
    assert "Settled on: punta 5 (KH 3C 2D), banker 7 (2S AS 4H): the punta wins in the books, " in line, line


def test_a_register_edited_in_sql_is_said_on_the_desk(world, media, api, auditor, django_capture_on_commit_callbacks):
    """A minimum change's new minimum and a bank's last amount edited in SQL: no money moved
    in a coup, so only the registers' check names them, on the API and in the desk's words."""
    change = MinimumChange.objects.get(session=world.sessions[0])
    MinimumChange.objects.filter(pk=change.pk).update(new=120_00, by=world.direzione)
    bank = Bank.objects.get(session=world.sessions[0], number=1)
    Bank.objects.filter(pk=bank.pk).update(amount=bank.amount + 500_00)
    close(world, django_capture_on_commit_callbacks)
    body = api(auditor).post(f"/api/reports/{DayReport.objects.get(gaming_day=world.day).pk}/verify/").json()
    assert body["ok"] is False
    assert [(r["code"], r["record"], set(r["fields"])) for r in body["reasons"]] == [
        ("record_mismatch", "bank", {"amount"}), ("record_mismatch", "minimum_change", {"new", "by"})]  # fmt: skip
    from audit.views import _explain
    from tables.templatetags.chemin_ui import euros_exact

    bank_line, change_line = _explain(body)["lines"]
    assert bank_line == (f"Table 1, session 1, bank 1: Last bank: {euros_exact(bank.amount + 500_00)} in the books, "
                         f"{euros_exact(bank.amount)} in the audit trail.")  # fmt: skip
    at = timezone.localtime(change.at).strftime("%H:%M:%S")
    assert change_line == (
        f"Table 1, session 1, the minimum change of {at}: New minimum: 120.00 in the books, 150.00 in the audit "
        f"trail. By: {world.direzione.username} in the books, {world.commissario.username} in the audit trail.")  # fmt: skip


def test_the_days_row_edited_before_the_build_is_said_on_the_desk(world, media, api, auditor,
                                                                   django_capture_on_commit_callbacks):
    """The report's first page prints the day's date, opening and close: the day's row is
    held to its gaming_day.opened and gaming_day.closed events (each records the row's time)."""
    from datetime import timedelta

    from audit.views import _explain

    opened = world.day.opened_at
    GamingDay.objects.filter(pk=world.day.pk).update(opened_at=opened - timedelta(hours=2))
    close(world, django_capture_on_commit_callbacks)
    body = api(auditor).post(f"/api/reports/{DayReport.objects.get(gaming_day=world.day).pk}/verify/").json()
    assert body["ok"] is False
    [reason] = body["reasons"]
    assert (reason["code"], reason["record"], reason["fields"]) == ("record_mismatch", "day", {"opened_at": {
        "in_books": (opened - timedelta(hours=2)).isoformat(), "in_trail": opened.isoformat()}})
    local = timezone.localtime(opened)
    assert _explain(body)["lines"] == [
        f"The gaming day's row: Opened: {local - timedelta(hours=2):%Y-%m-%d %H:%M:%S} in the books, "
        f"{local:%Y-%m-%d %H:%M:%S} in the audit trail."]  # fmt: skip


def test_the_days_close_and_date_are_held_too(closed):
    from audit.reports.records import day_as_played

    day = closed.day
    head = AuditEvent.objects.filter(stream__name=day.audit_stream).order_by("-seq").values_list("seq", flat=True)[0]
    assert day_as_played(day, head) == []
    GamingDay.objects.filter(pk=day.pk).update(date=day.date.replace(year=day.date.year - 1), closed_by=None)
    [reason] = day_as_played(day, head)
    assert set(reason["fields"]) == {"date", "closed_by"}
    assert reason["fields"]["date"]["in_trail"] == day.date.isoformat()


def test_a_payload_rewritten_into_garbage_gets_a_verdict_not_an_error(closed, api, auditor):
    """A coup.settled event's payload rewritten into text that is not JSON: the chain says
    it was changed, the ledger names the event, and the levies check counts it as nothing;
    the answer is a verdict (200), never a 500."""
    report = DayReport.objects.get(gaming_day=closed.day)
    event = AuditEvent.objects.filter(stream__name=closed.sessions[0].audit_stream, action="coup.settled").first()
    with trigger_disabled():
        AuditEvent.objects.filter(pk=event.pk).update(payload_json="not json")
    r = api(auditor).post(f"/api/reports/{report.pk}/verify/")
    assert r.status_code == 200 and r.json()["ok"] is False
    codes = [reason["code"] for reason in r.json()["reasons"]]
    assert {"chain_broken", "event_unreadable", "levies_mismatch"} <= set(codes), codes
    from django.test import Client

    desk = Client()
    desk.force_login(auditor)
    page = desk.post(f"/desk/reports/{report.pk}/verify/")
    assert page.status_code == 200 and "does not hold what its action records" in page.content.decode()


def test_an_honest_report_has_no_levies_mismatch(closed, api, auditor):
    report = DayReport.objects.get(gaming_day=closed.day)
    assert sum(t["levies_recorded"] for t in report.summary["tables"].values()) > 0
    body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
    assert body["ok"] is True and body["reasons"] == []


def test_a_file_forged_with_its_stored_checksum_is_caught(closed, api, auditor):
    """The report's file rows are not chained; the `report.built` event that recorded each
    file's SHA-256 is. A file edited together with its row fails against the event."""
    report = DayReport.objects.get(gaming_day=closed.day)
    path = _file(report, "csv")
    forged = path.read_bytes().replace(b"26.20", b"16.20")
    path.write_bytes(forged)
    ReportFile.objects.filter(report=report, format="csv").update(
        sha256=hashlib.sha256(forged).hexdigest(), size=len(forged)
    )
    body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
    assert body["ok"] is False
    [reason] = body["reasons"]
    built = AuditEvent.objects.get(action="report.built", subject_id=str(report.pk))
    assert reason == {"code": "checksum_mismatch", "format": "csv", "recorded_sha256": built.payload["files"]["csv"],
                      "event": built.pk}  # fmt: skip
    assert {f["format"]: f["ok"] for f in body["files"]} == {"csv": False, "pdf": True, "xlsx": True}


def test_a_rewritten_seal_or_summary_is_caught(closed, api, auditor):
    report = DayReport.objects.get(gaming_day=closed.day)
    DayReport.objects.filter(pk=report.pk).update(summary={**report.summary, "expected_cagnotte": 1})
    codes = [r["code"] for r in api(auditor).post(f"/api/reports/{report.pk}/verify/").json()["reasons"]]
    assert codes == ["summary_mismatch"]
    # The seal and the sealed heads rewritten together still disagree with the build's record.
    DayReport.objects.filter(pk=report.pk).update(summary=report.summary, seal="0" * 64, sealed_heads=[])
    body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
    assert "seal_mismatch" in [r["code"] for r in body["reasons"]] and body["ok"] is False


def counted_and_signed_once(day: Day, direzione, witness) -> tuple[CagnotteCount, ControlRegister]:
    """Both tables' boxes counted, the control register prepared and signed once."""
    count = registers.cagnotte_count_record(
        gaming_day=day.day, table=day.tables[0], by=direzione, witness=witness, counted=41_20
    )
    registers.cagnotte_count_record(gaming_day=day.day, table=day.tables[1], by=direzione, witness=witness,
                                    counted=10_00)  # fmt: skip
    reg = registers.control_register_prepare(gaming_day=day.day, by=direzione)
    registers.control_register_sign(register=reg, by=direzione)
    return count, reg


def test_books_edited_behind_the_services_are_caught(closed, api, auditor, direzione, direzione2):
    count, reg = counted_and_signed_once(closed, direzione, direzione2)
    report = DayReport.objects.get(gaming_day=closed.day, version=1)

    def codes() -> list:
        body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
        return [(r["code"], r.get("problem"), r.get("count") or r.get("register")) for r in body["reasons"]]

    assert codes() == []
    # The auditor made the second signer, in SQL.
    ControlRegister.objects.filter(pk=reg.pk).update(second_signer=auditor)
    assert codes() == [("books_mismatch", "register_not_as_recorded", reg.pk)]
    ControlRegister.objects.filter(pk=reg.pk).update(second_signer=None)
    CagnotteCount.objects.filter(pk=count.pk).update(counted=51_20)
    assert codes() == [("books_mismatch", "count_not_as_recorded", count.pk)]
    CagnotteCount.objects.filter(pk=count.pk).update(counted=41_20)
    assert codes() == []
    # A count with no event behind it.
    forged = CagnotteCount.objects.get(pk=count.pk)
    forged.pk, forged.corrects = None, count
    forged.save()
    assert codes() == [("books_mismatch", "count_not_as_recorded", forged.pk)]


def test_a_count_or_a_signature_moved_in_time_is_caught(closed, api, auditor, direzione, direzione2):
    """The report prints when each box was counted and when each signature was given: their
    events record the rows' own times, and the books check holds them."""
    from datetime import timedelta

    count, reg = counted_and_signed_once(closed, direzione, direzione2)
    registers.control_register_sign(register=reg, by=direzione2)
    reg.refresh_from_db()

    def problems() -> list:
        return [(p["code"], p.get("count") or p.get("register")) for p in registers.books_verify(
            gaming_day_id=closed.day.pk)]  # fmt: skip

    assert problems() == []
    CagnotteCount.objects.filter(pk=count.pk).update(counted_at=count.counted_at - timedelta(minutes=5))
    assert problems() == [("count_not_as_recorded", count.pk)]
    CagnotteCount.objects.filter(pk=count.pk).update(counted_at=count.counted_at)
    ControlRegister.objects.filter(pk=reg.pk).update(second_signed_at=reg.second_signed_at + timedelta(hours=1))
    assert problems() == [("register_not_as_recorded", reg.pk)]
    ControlRegister.objects.filter(pk=reg.pk).update(second_signed_at=reg.second_signed_at)
    assert problems() == []


def test_books_events_written_before_they_said_the_times_leave_them_unheld(closed, direzione, direzione2):
    """A count's and a signature's events from before they recorded the rows' times: the
    times are not held to anything, the rest is."""
    import json
    from datetime import timedelta

    count, reg = counted_and_signed_once(closed, direzione, direzione2)
    stream = registers.books_stream(closed.day.pk)
    with trigger_disabled():
        for event in AuditEvent.objects.filter(stream__name=stream,
                                               action__in=("cagnotte.counted", "control_register.signed")):  # fmt: skip
            new = {k: v for k, v in event.payload["new"].items() if k not in ("counted_at", "signed_at")}
            AuditEvent.objects.filter(pk=event.pk).update(payload_json=json.dumps({**event.payload, "new": new}))
    CagnotteCount.objects.filter(pk=count.pk).update(counted_at=count.counted_at - timedelta(minutes=5))
    ControlRegister.objects.filter(pk=reg.pk).update(first_signed_at=timezone.now() - timedelta(days=3))
    assert registers.books_verify(gaming_day_id=closed.day.pk) == []
    CagnotteCount.objects.filter(pk=count.pk).update(note="edited")
    assert [p["code"] for p in registers.books_verify(gaming_day_id=closed.day.pk)] == ["count_not_as_recorded"]


def test_a_missing_sealed_stream_fails_the_check_not_the_request(closed, api, auditor):
    report = DayReport.objects.get(gaming_day=closed.day)
    gone = f"table_session:{closed.sessions[0].pk}"
    with trigger_disabled():  # renaming a head is refused; the owner switches the trigger off first
        raw_sql("UPDATE audit_auditstream SET name = name || 'x' WHERE name = %s", (gone,))
    r = api(auditor).post(f"/api/reports/{report.pk}/verify/")
    assert r.status_code == 200, r.json()
    body = r.json()
    assert body["ok"] is False and "stream_missing" in [x["code"] for x in body["reasons"]]
    assert body["chains"]["ok"] is True  # the streams still there verify


def _sealed_session_tail(report: DayReport) -> tuple[str, int, str]:
    name, seq, head = next(h for h in report.sealed_heads if h[0].startswith("table_session:"))
    return name, int(seq), head


def _delete_sealed_tail(report: DayReport, *, with_key: bool = True) -> tuple[str, int, str]:
    """The attacker deletes a sealed stream's last event and moves its head back. With the
    application's key he seals the head again: every chain verifies, and only the seal kept
    with the report says what the stream held."""
    name, seq, sealed = _sealed_session_tail(report)
    last = AuditEvent.objects.get(stream__name=name, seq=seq)
    with trigger_disabled():
        raw_sql("DELETE FROM audit_auditevent WHERE id = %s", (last.pk,))
        raw_sql("UPDATE audit_auditstream SET seq = %s, head_hash = %s WHERE name = %s", (seq - 1, last.prev_hash, name))
        if with_key:
            reseal(name)
    return name, seq, sealed


def _rechain_sealed_tail(report: DayReport) -> tuple[str, int, str, str, int]:
    """The attacker rewrites a sealed event, recomputes its hash and the head (it is the
    last: no later link to mend)."""
    from audit.hashing import canonical_time, document_hash

    name, seq, sealed = _sealed_session_tail(report)
    victim = AuditEvent.objects.get(stream__name=name, seq=seq)
    payload = victim.payload_json.replace("}", ',"x":1}', 1)
    forged = document_hash(name, seq, canonical_time(victim.at), victim.actor_id, victim.actor_name, victim.action,
                           victim.subject_type, victim.subject_id, payload, victim.prev_hash)  # fmt: skip
    with trigger_disabled():
        raw_sql("UPDATE audit_auditevent SET payload_json = %s, hash = %s WHERE id = %s", (payload, forged, victim.pk))
        raw_sql("UPDATE audit_auditstream SET head_hash = %s WHERE name = %s", (forged, name))
        reseal(name)  # with the application's key (without it: head_seal_mismatch, tested below)
    return name, seq, sealed, forged, victim.pk


def test_a_sealed_tail_deleted_with_its_head_is_named_by_the_report_check(closed, api, auditor):
    from audit.views import _explain

    report = DayReport.objects.get(gaming_day=closed.day)
    name, seq, sealed = _delete_sealed_tail(report)
    body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
    assert body["ok"] is False and body["chains"]["ok"] is True
    [reason] = [r for r in body["reasons"] if r["code"] == "seal_mismatch"]
    assert reason["streams"] == [{"stream": name, "seq": seq, "sealed": sealed, "now": None, "event_id": None}]
    line = next(x for x in _explain(body, report)["lines"] if x.startswith("The day's seal"))
    session = TableSession.objects.get(pk=int(name.partition(":")[2]))
    said = f"table {session.table.number} session {session.number} (stream {name})"
    assert line.endswith(f"Event {seq} of {said}: the sealed event is gone.")


def test_a_broken_sealed_stream_is_said_in_words_on_the_desk(closed, client, auditor):
    """The desk's report check and its whole-trail check named a broken stream by its raw
    name alone ("table_session:14"): the auditor reads which table and session, or which
    day's books, with the name the events page filters by."""
    report = DayReport.objects.get(gaming_day=closed.day)
    name, seq, _sealed = _delete_sealed_tail(report)
    session = TableSession.objects.get(pk=int(name.partition(":")[2]))
    said = f"table {session.table.number} session {session.number} (stream {name})"
    client.force_login(auditor)
    page = client.post(f"/desk/reports/{report.pk}/verify/").content.decode()
    assert f"Event {seq} of {said}: the sealed event is gone." in page
    trail = client.post("/desk/verify/").content.decode()
    assert f"First broken event: event {seq} of {said}, id —:" in trail


def test_a_day_stream_is_said_by_its_date_without_a_report(closed):
    """The whole-trail check has no report to say whose day a stream is: its date says it,
    read with the sessions named in two queries at most."""
    from django.utils.formats import date_format
    from django.utils.translation import override

    from audit.views import _streams_said

    day = closed.day
    names = [f"day_books:{day.pk}", f"gaming_day:{day.pk}", f"reports:{day.pk}", "day_books:999999", "odd",
             closed.sessions[0].audit_stream]  # fmt: skip
    with override("en"), CaptureQueriesContext(connection) as queries:
        said = _streams_said(names, None)
    assert len(queries) == 2
    with override("en"):
        when = date_format(day.date, "DATE_FORMAT")  # "Dec. 4, 2026"
    assert said[f"day_books:{day.pk}"] == f"the books of the gaming day of {when} (stream day_books:{day.pk})"
    assert said[f"gaming_day:{day.pk}"] == f"the floor of the gaming day of {when} (stream gaming_day:{day.pk})"
    assert said[f"reports:{day.pk}"] == f"the report builds of the gaming day of {when} (stream reports:{day.pk})"
    assert said["day_books:999999"] == "day_books:999999" and said["odd"] == "odd"
    session = closed.sessions[0]
    assert said[session.audit_stream] == (
        f"table {session.table.number} session {session.number} (stream {session.audit_stream})")
    with override("it"):
        assert _streams_said([f"day_books:{day.pk}"], None)[f"day_books:{day.pk}"].startswith(
            "i libri della giornata di gioco del ")


def test_a_sealed_event_rewritten_and_rechained_is_named_by_the_report_check(closed, api, auditor):
    report = DayReport.objects.get(gaming_day=closed.day)
    name, seq, sealed, forged, event_id = _rechain_sealed_tail(report)
    body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
    assert body["chains"]["ok"] is True
    [reason] = [r for r in body["reasons"] if r["code"] == "seal_mismatch"]
    assert reason["streams"] == [{"stream": name, "seq": seq, "sealed": sealed, "now": forged, "event_id": event_id}]


def test_the_whole_trail_check_names_a_sealed_tail_deleted_with_its_head(closed):
    """audit_verify, the API and the desk's whole-trail check said "intact" here: every
    chain verifies once the head is moved back. The reports' sealed heads say otherwise."""
    from audit.selectors import chain_verify

    report = DayReport.objects.get(gaming_day=closed.day)
    name, seq, _sealed = _delete_sealed_tail(report)
    assert chain_verify(streams=[name]).ok  # the chain alone cannot show it
    broken = chain_verify().first_broken
    assert (broken.stream, broken.seq, broken.event_id, broken.reason) == (name, seq, None, "sealed_event_missing")
    assert f"report {report.pk} (gaming day {closed.day.pk}, version 1) sealed seq {seq}" in broken.message
    assert f"the stream now ends at seq {seq - 1}" in broken.message


def test_the_whole_trail_check_names_a_sealed_event_rewritten_and_rechained(closed, api, auditor):
    report = DayReport.objects.get(gaming_day=closed.day)
    name, seq, _sealed, forged, event_id = _rechain_sealed_tail(report)
    body = api(auditor).post("/api/audit/verify/").json()
    assert body["ok"] is False
    broken = body["first_broken"]
    assert (broken["stream"], broken["seq"], broken["event_id"], broken["reason"]) == (
        name, seq, event_id, "sealed_event_changed")  # fmt: skip
    assert f"hash is now {forged[:12]}" in broken["message"]


def test_the_whole_trail_check_names_a_report_whose_sealed_heads_were_rewritten(closed):
    """The attacker cuts a sealed stream short and rewrites the report's sealed heads to
    match: the heads no longer hash to the seal its report.built event recorded."""
    from audit.selectors import chain_verify

    report = DayReport.objects.get(gaming_day=closed.day)
    name, seq, _sealed = _delete_sealed_tail(report)
    last = AuditEvent.objects.get(stream__name=name, seq=seq - 1)
    heads = [[n, seq - 1, last.hash] if n == name else [n, s, h] for n, s, h in report.sealed_heads]
    DayReport.objects.filter(pk=report.pk).update(sealed_heads=heads)
    built = AuditEvent.objects.get(action="report.built", subject_id=str(report.pk))
    broken = chain_verify().first_broken
    # The build recorded the heads themselves (count and digest): the rewrite is named as such.
    assert (broken.stream, broken.seq, broken.event_id, broken.reason) == (
        f"reports:{closed.day.pk}", built.seq, built.pk, "sealed_heads_altered")  # fmt: skip
    assert "are not the" in broken.message and "its report.built event recorded" in broken.message
    # The seal rewritten too, to the forged heads: still not the seal the build recorded.
    from audit.selectors import seal_of

    DayReport.objects.filter(pk=report.pk).update(seal=seal_of(heads))
    broken = chain_verify().first_broken
    assert broken.reason == "report_seal_altered"
    assert "its seal is not the one its report.built event recorded" in broken.message


def _empty_sealed_heads(report: DayReport) -> None:
    """The attacker empties the report's sealed heads in SQL (its row has no trigger): the
    report then looked like one built before heads were kept, and no check looked at it."""
    assert raw_sql("UPDATE audit_dayreport SET sealed_heads = '[]'::jsonb WHERE id = %s", (report.pk,)) == 1


def test_the_build_records_its_sealed_heads_and_an_untouched_report_verifies(closed, api, auditor):
    from audit.selectors import chain_verify, heads_digest

    report = DayReport.objects.get(gaming_day=closed.day)
    built = AuditEvent.objects.get(action="report.built", subject_id=str(report.pk))
    assert built.payload["sealed_heads"] == heads_digest(report.sealed_heads)
    assert built.payload["sealed_heads"]["count"] == len(report.sealed_heads) == len(report.sealed_streams) >= 3
    body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
    assert body["ok"] is True and body["reasons"] == []
    assert chain_verify().ok


def test_sealed_heads_emptied_in_sql_are_named_by_both_checks(closed, api, auditor):
    """Emptied heads hid a sealed tail deleted with its head moved back from the whole-trail
    check (a report without heads was skipped); now the build's record of them says so."""
    from audit.selectors import chain_verify
    from audit.views import _explain

    report = DayReport.objects.get(gaming_day=closed.day)
    count = len(report.sealed_heads)
    _delete_sealed_tail(report)
    _empty_sealed_heads(report)
    built = AuditEvent.objects.get(action="report.built", subject_id=str(report.pk))
    broken = chain_verify().first_broken
    assert (broken.stream, broken.seq, broken.event_id, broken.reason) == (
        f"reports:{closed.day.pk}", built.seq, built.pk, "sealed_heads_altered")  # fmt: skip
    assert f"its sealed heads (0) are not the {count} its report.built event recorded" in broken.message
    body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
    assert body["ok"] is False
    [reason] = [r for r in body["reasons"] if r["code"] == "sealed_heads_altered"]
    assert reason == {"code": "sealed_heads_altered", "stored": 0, "recorded": count, "event": built.pk}
    assert (f"The report's sealed stream heads (0) differ from the {count} recorded when it was built: the "
            "report's row was edited.") in _explain(body)["lines"]  # fmt: skip
    whole = api(auditor).post("/api/audit/verify/").json()
    assert whole["ok"] is False and whole["first_broken"]["reason"] == "sealed_heads_altered"


@pytest.mark.parametrize("dropped", ["all", "one session's"])
def test_sealed_heads_emptied_or_cut_alone_are_named_too(closed, api, auditor, dropped):
    """Without its session's head, a table's coups read as unsealed: the levies and postings
    checks, which read the trail as of the heads, are not run on heads that are not the
    build's (they named a table with "no levies" twice; the heads are the finding)."""
    from audit.selectors import chain_verify

    report = DayReport.objects.get(gaming_day=closed.day)
    if dropped == "all":
        _empty_sealed_heads(report)
    else:
        session = next(h for h in report.sealed_heads if h[0].startswith("table_session:"))
        report.sealed_heads = [h for h in report.sealed_heads if h != session]
        report.save(update_fields=["sealed_heads"])
    assert chain_verify().first_broken.reason == "sealed_heads_altered"
    codes = [r["code"] for r in api(auditor).post(f"/api/reports/{report.pk}/verify/").json()["reasons"]]
    assert codes[-1] == "sealed_heads_altered" and not {"levies_mismatch", "postings_mismatch", "coup_mismatch"} & set(
        codes)  # fmt: skip


def test_a_report_whose_build_event_predates_the_heads_record_verifies_as_before(
    world, media, api, auditor, monkeypatch, django_capture_on_commit_callbacks
):
    """A `report.built` event written before the build recorded its heads has no
    `sealed_heads`: the report verifies, and its heads are checked as before (against its
    seal), emptied ones as a report from before heads were kept."""
    from audit.reports import services as report_services
    from audit.selectors import chain_verify

    real = report_services.record

    def old_record(**kwargs):
        if kwargs.get("action") == "report.built":
            kwargs["data"] = {k: v for k, v in kwargs["data"].items() if k != "sealed_heads"}
        return real(**kwargs)

    monkeypatch.setattr(report_services, "record", old_record)
    close(world, django_capture_on_commit_callbacks)
    report = DayReport.objects.get(gaming_day=world.day)
    built = AuditEvent.objects.get(action="report.built", subject_id=str(report.pk))
    assert "sealed_heads" not in built.payload and report.sealed_heads
    body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
    assert body["ok"] is True and body["reasons"] == [] and chain_verify().ok
    _empty_sealed_heads(report)
    body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
    assert body["ok"] is True and body["reasons"] == [] and chain_verify().ok


def test_close_through_the_api_is_the_commissario_s(world, api, auditor, commissario, media,
                                                   django_capture_on_commit_callbacks):  # fmt: skip
    assert api(auditor).post(f"/api/gaming-days/{world.day.pk}/close/").status_code == 403
    r = api(commissario).post(f"/api/gaming-days/{world.day.pk}/close/")
    assert r.status_code == 409 and r.json()["error"]["code"] == "sessions_still_open"
    floor_services.table_session_close(session=world.sessions[1], by=commissario)
    with django_capture_on_commit_callbacks(execute=True):
        r = api(commissario).post(f"/api/gaming-days/{world.day.pk}/close/", HTTP_IDEMPOTENCY_KEY="close-1")
    assert r.status_code == 200, r.json()
    assert DayReport.objects.get(gaming_day=world.day).status == "done"


# --------------------------------------------------------------------------- names in CJK scripts


def test_the_pdf_prints_chinese_japanese_and_korean_names(world, media, django_capture_on_commit_callbacks):
    """DejaVu has no CJK glyphs: a patron's name in Chinese, Japanese or Korean is drawn in
    the CID font of its script (not as boxes) and reads back as itself; Latin beside it
    stays in DejaVu."""
    from tests.audit.test_exports import HANAKO, KIM, TABLE_FONT, WANG, YAMADA, drawn_runs, pdf_text

    s1 = world.sessions[0]
    bettors = [bet.patron for coup in Coup.objects.filter(session=s1).order_by("number")
               for bet in coup.bets.order_by("order")]  # fmt: skip
    names = {
        s1.banks.get().banker.pk: ("Xiaoming", WANG),  # Latin and Chinese in one name
        bettors[0].pk: (HANAKO, YAMADA[:2]),  # kana: Japanese
        bettors[-1].pk: (KIM[1:], KIM[0]),  # Hangul: Korean
    }
    for pk, (first, last) in names.items():
        Patron.objects.filter(pk=pk).update(first_name=first, last_name=last)
    close(world, django_capture_on_commit_callbacks)
    report = DayReport.objects.get(gaming_day=world.day)
    assert report.status == "done", report.error
    data = _file(report, "pdf").read_bytes()
    runs = drawn_runs(data)
    for expected in [("Xiaoming", TABLE_FONT), (WANG, "STSong-Light"), (HANAKO, "HeiseiKakuGo-W5"),
                     (YAMADA[:2], "HeiseiKakuGo-W5"), (KIM[1:], "HYGothic-Medium"), (KIM[0], "HYGothic-Medium")]:  # fmt: skip
        assert expected in runs, expected
    from audit.exports import pdf

    assert {font for text, font in runs if pdf._CJK.search(text)} == set(pdf.CJK_FONTS.values())
    text = pdf_text(data, Path(media))
    if text is not None:
        for first, last in names.values():
            assert f"{first} {last}" in text, (first, last)
    # The CSV and the XLSX had them right already; they still do.
    assert f"Xiaoming {WANG}" in _file(report, "csv").read_text("utf-8")


# --------------------------------------------------------------------------- the XLSX's figures


def test_the_xlsx_has_the_register_total_row_and_the_summary_figures_as_numbers(
    closed, direzione, direzione2, django_capture_on_commit_callbacks
):
    from decimal import Decimal

    import openpyxl

    from audit.exports import xlsx

    _count_all(closed, direzione, direzione2)
    reg = registers.control_register_prepare(gaming_day=closed.day, by=direzione)
    reg = registers.control_register_sign(register=reg, by=direzione)
    with django_capture_on_commit_callbacks(execute=True):
        reg = registers.control_register_sign(register=reg, by=direzione2)
    v2 = DayReport.objects.get(gaming_day=closed.day, version=2)
    assert v2.status == "done", v2.error
    wb = openpyxl.load_workbook(_file(v2, "xlsx"))

    # The control register ends with the day's line: the tables' lines summed, the carried
    # total the register's own (the signed figure), all numbers in the sheets' formats.
    ws = wb["Control register (art. 72)"]
    rows = list(ws.iter_rows(values_only=True))
    assert rows[0] == ("Table", "Session (blank: table total)", "Coups", "Expected", "Counted", "Carried",
                       "Tips (staff's)")  # fmt: skip
    tables = [row for row in rows[1:-1] if row[1] is None]
    assert [row[0] for row in tables] == [1, 2]
    total = rows[-1]
    assert total[:2] == ("Total", None)
    assert total[2] == sum(row[2] for row in tables) == sum(s["coups"] for line in reg.lines for s in line["sessions"])
    assert [Decimal(str(v)) for v in total[3:6]] == [
        Decimal(sum(line[k] for line in reg.lines)).scaleb(-2) for k in ("expected", "counted", "carried")
    ]
    assert total[6] is None and reg.tips_total is None  # no tips counted: a blank cell, as on the lines
    assert Decimal(str(total[5])) == Decimal(reg.total).scaleb(-2) == Decimal("51.20")
    last = ws[len(rows)]
    assert [c.number_format for c in last[2:6]] == [xlsx.INT_FORMAT] + [xlsx.EURO_FORMAT] * 3
    assert all(c.font.b for c in last) and ws.auto_filter.ref == f"A1:G{len(rows) - 1}"

    # The Summary's figures are numbers: counts ints, amounts euros with the euro format.
    facts = {row[0].value: row[1] for row in wb["Summary"].iter_rows(max_col=2) if row[0].value}
    s = v2.summary
    for key, value in (("Report version", 2), ("Sessions", s["sessions"]), ("Coups", s["coups"]),
                       ("Coups annulled", s["annulled"])):  # fmt: skip
        assert facts[key].value == value and facts[key].data_type == "n", key
        assert facts[key].number_format == xlsx.INT_FORMAT, key
    for key, cents in (("Levies recorded", s["levies_recorded"]), ("Counted cagnotte", s["counted"]),
                       ("Expected cagnotte (sum of the house postings)", s["expected_cagnotte"]),
                       ("Control register total", reg.total)):  # fmt: skip
        assert Decimal(str(facts[key].value)) == Decimal(cents).scaleb(-2), key
        assert facts[key].data_type == "n" and facts[key].number_format == xlsx.EURO_FORMAT, key
    assert facts["Audit seal (SHA-256 over the day's stream heads)"].value == v2.seal

    # The CSV is as it was: the register's rows and, in its note, the total; no total row.
    from tests.audit.test_exports import csv_blocks

    preamble, blocks = csv_blocks(_file(v2, "csv").read_bytes())
    assert ["# Control register total", "51.20 EUR"] in preamble and ["# Coups", str(s["coups"])] in preamble
    block = blocks["Control register (art. 72)"]
    assert block[0][0].startswith("# Total: 51.20 EUR: cinquantuno euro e venti centesimi")
    # The CSV's header says only "session": the note says what a line without one is.
    assert block[0][0].endswith(". A line with no session is its table's line, after its sessions': the count of "
                                "its box and the amount carried (the higher of expected and counted).")  # fmt: skip
    assert [r[1] for r in block[2:]].count("") == len(tables)
    assert len(block) == 2 + len(rows) - 2 and not [r for r in block if r[0] == "Total"]


def test_the_banker_win_rates_are_numbers_in_the_xlsx_and_the_same_text_in_the_csv(closed):
    """The rates were written as text cells ("Number stored as text"): an auditor could not
    sort, filter or compare the Tables sheet's rates. They are numbers now, to the same six
    decimals; the CSV and the PDF keep the exact text."""
    import openpyxl

    from audit.exports import xlsx

    report = DayReport.objects.get(gaming_day=closed.day)
    ws = openpyxl.load_workbook(_file(report, "xlsx"))["Tables"]
    header = [c.value for c in ws[1]]
    cols = [header.index(t) for t in ("Table", "Banker win rate", "Expected (exact)", "95% low", "95% high")]
    with _file(report, "csv").open(encoding="utf-8") as fp:
        lines = fp.read().split("\n\n")[1].splitlines()
    csv_rows = {row["table"]: row for row in csv.DictReader(line for line in lines if not line.lstrip('"').startswith('#'))}
    checked = 0
    for row in ws.iter_rows(min_row=2):
        table = row[cols[0]].value
        rate = report.summary["tables"][str(table)]["banker_rate"]
        for i, key, csv_key in zip(cols[1:], ("observed", "expected", "low", "high"),
                                   ("win_rate", "expected", "low", "high"), strict=True):  # fmt: skip
            cell = row[i]
            if rate[key] is None:
                assert cell.value is None
                continue
            assert cell.data_type == "n" and cell.number_format == xlsx.RATE_FORMAT, (table, key)
            assert f"{cell.value:.6f}" == rate[key] == csv_rows[str(table)][csv_key], (table, key)
            checked += 1
    assert checked >= 4


# --------------------------------------------------------------------------- non-conforming coups in words


def test_the_non_conforming_coups_are_in_words_in_the_csv_and_the_xlsx(
    world, media, django_capture_on_commit_callbacks
):
    """The section printed the violations and both versions as JSON; an auditor reads them
    as the tablet says them. build_day's table 2: a banker alla Regola stood on 3 against a
    punta's third card 2 (he must draw), reconstructed with the next card 4H for the banker.
    Added here: a punta playing for several who drew on 6 (he must stand); the replay has
    him stand, gives his card 3D to the banker alla Regola (3 draws when the punta stood),
    and leaves the banker's own 4C void."""
    import openpyxl

    s2 = TableSession.objects.get(pk=world.sessions[1].pk)
    p2 = [seat.patron for seat in s2.seats.order_by("seat_number")]
    coup = table_services.coup_record(session=s2, by=s2.capo_partita, cards=["6H", "2S", "KC", "AS", "3D", "4C"],
                                      bets=[{"patron": p2[1], "amount": 200_00}], punta_draws=True,
                                      banker_draws=True)  # fmt: skip
    assert [v["side"] for v in coup.violations] == ["punta"]
    close(world, django_capture_on_commit_callbacks)
    report = DayReport.objects.get(gaming_day=world.day)
    assert report.status == "done", report.error

    banker = (
        ["2", "1", "1", "KH 2S 3C AS 2D"],
        "banker stood on 3 against the punta's third card 2D (banker alla Regola: draw)",
        "punta 5 (KH 3C 2D), banker 3 (2S AS): the punta wins",
        "punta 5 (KH 3C 2D), banker 7 (2S AS 4H): the banker wins",
        "4H",
    )
    punta = (
        ["2", "1", "2", "6H 2S KC AS 3D 4C"],
        "punta drew on 6 (punta playing for the table, not banco solo: stand)",
        "punta 9 (6H KC 3D), banker 7 (2S AS 4C): the punta wins",
        "punta 6 (6H KC), banker 6 (2S AS 3D): égalité (coup nul); void, to the sibilla: 4C",
        "",
    )
    title = "Non-conforming coups: as played and reconstructed (RULES.md §3.3)"
    from tests.audit.test_exports import csv_blocks

    _preamble, blocks = csv_blocks(_file(report, "csv").read_bytes())
    header, *rows = [r for r in blocks[title] if not r[0].startswith("#")]
    at = {key: header.index(key) for key in ("violations", "as_played", "reconstruction", "next_cards")}
    got = [(r[:4], r[at["violations"]], r[at["as_played"]], r[at["reconstruction"]], r[at["next_cards"]])
           for r in rows]  # fmt: skip
    assert got == [banker, punta]
    assert not any("{" in cell or "[" in cell for r in rows for cell in r)

    wb = openpyxl.load_workbook(_file(report, "xlsx"))
    [ws] = [ws for ws in wb.worksheets if ws["A1"].value == "Table" and any(
        c.value == "Violations" for c in ws[1])]  # fmt: skip
    titles = [c.value for c in ws[1]]
    cols = [titles.index(t) for t in ("Violations", "As played", "Reconstruction (settled)")]
    assert [tuple(row[i] for i in cols) for row in ws.iter_rows(min_row=2, values_only=True)] == [
        banker[1:4], punta[1:4]]  # fmt: skip
    # sentences get wide columns (a text column is 28 wide)
    assert [ws.column_dimensions[get_column_letter(i + 1)].width for i in cols] == [70, 70, 70]


OLD_RULE = "punta playing for the table (not banco solo)"


def test_a_version_built_with_the_nested_brackets_still_verifies(world, media, monkeypatch,
                                                                 django_capture_on_commit_callbacks):  # fmt: skip
    """The punta's rule read "(punta playing for the table (not banco solo): stand)": a version
    built with those words, verified once they are "(punta playing for the table, not banco
    solo: stand)", is ok. Verification holds the coups' violations as data to the trail's
    (`coup_mismatch`) and the files to the SHA-256 their build recorded; it never writes the
    words again."""
    from audit.reports.services import report_verify
    from tables import wording

    s2 = TableSession.objects.get(pk=world.sessions[1].pk)
    p2 = [seat.patron for seat in s2.seats.order_by("seat_number")]
    table_services.coup_record(session=s2, by=s2.capo_partita, cards=["6H", "2S", "KC", "AS", "3D", "4C"],
                               bets=[{"patron": p2[1], "amount": 200_00}], punta_draws=True,
                               banker_draws=True)  # fmt: skip
    monkeypatch.setitem(wording.RULE_NAMES, "punta_several", OLD_RULE)  # the words before
    close(world, django_capture_on_commit_callbacks)
    monkeypatch.undo()
    report = DayReport.objects.get(gaming_day=world.day)
    assert report.status == "done", report.error
    old = f"punta drew on 6 ({OLD_RULE}: stand)"
    assert old.encode() in _file(report, "csv").read_bytes()
    assert str(wording.RULE_NAMES["punta_several"]) != OLD_RULE  # the words now
    verdict = report_verify(report=report)
    assert verdict["ok"] and verdict["reasons"] == [], verdict["reasons"]


def test_a_coup_s_violation_reads_the_same_on_the_tablet_in_italian():
    """The tablet's words are the report's (tables.wording), in the page's language."""
    from django.utils import translation

    from tables.templatetags.chemin_ui import violation

    v = {"side": "banker", "rule": "banker_regola", "punta_total": 5, "banker_total": 3, "punta_third_card": "2D",
         "punta_third_value": 2, "required": "draw", "done": "stand"}  # fmt: skip
    with translation.override("it"):
        html = violation(v)
    assert html.startswith("il banchiere non ha tirato con 3 contro la terza carta della punta <span")
    assert html.endswith("(banchiere alla Regola: tirare)") and "2♦" in html


# --------------------------------------------------------------------------- what the trail says must exist


def _signed_v2(day: Day, direzione, direzione2, django_capture_on_commit_callbacks) -> DayReport:
    _count_all(day, direzione, direzione2)
    reg = registers.control_register_prepare(gaming_day=day.day, by=direzione)
    reg = registers.control_register_sign(register=reg, by=direzione)
    with django_capture_on_commit_callbacks(execute=True):
        registers.control_register_sign(register=reg, by=direzione2)
    v2 = DayReport.objects.get(gaming_day=day.day, version=2)
    assert v2.status == "done", v2.error
    return v2


def _delete_reports(where: str = "", params: tuple = ()) -> None:
    raw_sql(f"DELETE FROM audit_reportfile {where.replace('id', 'report_id')}", params)
    raw_sql(f"DELETE FROM audit_dayreport {where}", params)


@pytest.mark.parametrize("fast", [True, False])
def test_a_session_deleted_with_every_report_row_is_named_by_the_trail(closed, fast):
    """QA: a whole session deleted in SQL (its stream, its events, its rows) together with
    every report row passed audit_verify: no row named its stream any more. The day's stream
    still holds the session's opening and close, and reports:D its report.built event."""
    from audit.selectors import chain_verify

    session = closed.sessions[0]
    name = session.audit_stream
    closing = AuditEvent.objects.get(action="table_session.closed", subject_id=str(session.pk))
    assert closing.payload["events"] == AuditStream.objects.get(name=name).seq > 0
    built = AuditEvent.objects.get(action="report.built", stream__name=f"reports:{closed.day.pk}")
    assert name in built.payload["sealed_streams"]
    assert chain_verify(fast=fast).ok
    with trigger_disabled():
        raw_sql("DELETE FROM audit_auditevent WHERE stream_id = (SELECT id FROM audit_auditstream WHERE name = %s)",
                (name,))  # fmt: skip
        raw_sql("ALTER TABLE audit_auditstream DISABLE TRIGGER audit_stream_no_delete")
        raw_sql("DELETE FROM audit_auditstream WHERE name = %s", (name,))
        raw_sql("ALTER TABLE audit_auditstream ENABLE TRIGGER audit_stream_no_delete")
        raw_sql("DELETE FROM tables_posting WHERE session_id = %s", (session.pk,))
    _delete_reports()
    broken = chain_verify(fast=fast).first_broken
    assert (broken.reason, broken.stream) == ("stream_missing", name)
    assert "the trail's own events" in broken.message
    # Were the session's stream there, the report.built event still names the report gone.
    with trigger_disabled():
        append(name)  # a stream of that name again, so that only the report is missing
    broken = chain_verify(fast=fast).first_broken
    assert (broken.stream, broken.seq, broken.event_id, broken.reason) == (
        built.stream.name, built.seq, built.pk, "report_missing")  # fmt: skip
    assert f"report {built.subject_id} (version 1)" in broken.message


def test_a_session_with_no_event_of_its_own_needs_no_stream(world, commissario, user_factory):
    """Opened and closed with no play: no stream, and none is asked for."""
    from audit.selectors import chain_verify

    capo, changeur = user_factory("capo9", Role.CAPO_PARTITA), user_factory("changeur9", Role.CHANGEUR)
    idle = floor_services.table_session_open(table=world.tables[0], by=commissario, capo_partita=capo,
                                             changeur=changeur, shoe_number="S-9", minimum=100_00)  # fmt: skip
    floor_services.table_session_close(session=idle, by=commissario)
    assert AuditEvent.objects.get(action="table_session.closed", subject_id=str(idle.pk)).payload["events"] == 0
    assert not AuditStream.objects.filter(name=idle.audit_stream).exists()
    assert chain_verify().ok


def test_a_later_report_version_deleted_is_named(closed, api, auditor, direzione, direzione2,
                                                django_capture_on_commit_callbacks):  # fmt: skip
    """QA: version 2 deleted in SQL passed audit_verify and the API's verify, and version 1
    was then served as current. Its report.built event says it was built."""
    from audit.selectors import chain_verify
    from audit.views import _explain

    v2 = _signed_v2(closed, direzione, direzione2, django_capture_on_commit_callbacks)
    v1 = DayReport.objects.get(gaming_day=closed.day, version=1)
    assert chain_verify().ok
    assert api(auditor).post(f"/api/reports/{v1.pk}/verify/").json()["ok"] is True
    built = AuditEvent.objects.get(action="report.built", subject_id=str(v2.pk))
    _delete_reports("WHERE id = %s", (v2.pk,))
    for fast in (True, False):
        broken = chain_verify(fast=fast).first_broken
        assert (broken.stream, broken.seq, broken.event_id, broken.reason) == (
            f"reports:{closed.day.pk}", built.seq, built.pk, "report_missing")  # fmt: skip
    body = api(auditor).post(f"/api/reports/{v1.pk}/verify/").json()
    assert body["ok"] is False
    assert [r for r in body["reasons"] if r["code"] == "report_missing"] == [
        {"code": "report_missing", "report": str(v2.pk), "version": 2, "event": built.pk}]  # fmt: skip
    lines = _explain(body)["lines"]
    assert any("version 2" in line and "was built" in line for line in lines), lines


def test_a_report_row_rewritten_into_another_version_is_named(closed):
    from audit.selectors import chain_verify

    report = DayReport.objects.get(gaming_day=closed.day)
    DayReport.objects.filter(pk=report.pk).update(version=3)
    assert chain_verify().first_broken.reason == "report_missing"
    DayReport.objects.filter(pk=report.pk).update(version=1, status=DayReport.Status.FAILED)
    assert chain_verify().first_broken.reason == "report_missing"


def test_any_figure_of_the_summary_rewritten_is_caught(closed, api, auditor):
    """QA: the summary's figures other than the expected cagnotte could be rewritten in SQL
    unseen. The build records the whole summary's digest."""
    from audit.selectors import chain_verify, summary_digest

    report = DayReport.objects.get(gaming_day=closed.day)
    built = AuditEvent.objects.get(action="report.built", subject_id=str(report.pk))
    assert built.payload["summary_sha256"] == summary_digest(report.summary)
    raw_sql("""UPDATE audit_dayreport SET summary = summary || '{"register_total": 12000}' WHERE id = %s""",
            (report.pk,))  # fmt: skip
    body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
    assert body["ok"] is False
    assert [r for r in body["reasons"] if r["code"] == "summary_mismatch"] == [
        {"code": "summary_mismatch", "recorded": "summary_sha256", "event": built.pk}]  # fmt: skip
    for fast in (True, False):
        broken = chain_verify(fast=fast).first_broken
        assert (broken.stream, broken.seq, broken.event_id, broken.reason) == (
            f"reports:{closed.day.pk}", built.seq, built.pk, "report_summary_altered")  # fmt: skip


def test_a_report_built_before_the_summary_digest_is_held_to_its_expected_cagnotte(closed, api, auditor):
    import json

    report = DayReport.objects.get(gaming_day=closed.day)
    built = AuditEvent.objects.get(action="report.built", subject_id=str(report.pk))
    old = {k: v for k, v in built.payload.items() if k not in ("summary_sha256", "sealed_streams")}
    with trigger_disabled():  # the event as builds wrote it before (its chain is not the point here)
        AuditEvent.objects.filter(pk=built.pk).update(payload_json=json.dumps(old))
    DayReport.objects.filter(pk=report.pk).update(summary={**report.summary, "register_total": 12000})
    reasons = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()["reasons"]
    assert "summary_mismatch" not in [r["code"] for r in reasons]  # not recorded then: not held
    DayReport.objects.filter(pk=report.pk).update(summary={**report.summary, "expected_cagnotte": 1})
    reasons = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()["reasons"]
    assert {"code": "summary_mismatch", "recorded": "expected_cagnotte", "event": built.pk} in reasons


# --------------------------------------------------------------------------- counts edited behind the services


def test_no_register_prepared_signed_or_corrected_over_a_count_edited_in_sql(closed, api, direzione, direzione2):
    """QA: a count edited in SQL showed on the desk as a legitimate later correction, and a
    register, its correction and their signatures were accepted over it; verification named
    it only afterwards. Each is refused now, as levies changed since the count are."""
    _count_all(closed, direzione, direzione2)
    count = CagnotteCount.objects.get(gaming_day=closed.day, table=closed.tables[0])
    url = f"/api/gaming-days/{closed.day.pk}/control-register/"

    def refused(user, path: str, body: dict | None = None) -> None:
        before = AuditEvent.objects.count(), list(ControlRegister.objects.values().order_by("pk"))
        r = api(user).post(path, body or {}, format="json")
        assert r.status_code == 409, r.json()
        assert r.json()["error"]["code"] == "count_not_as_recorded"
        assert r.json()["error"]["details"] == {"counts": [count.pk], "tables": [1]}
        assert (AuditEvent.objects.count(), list(ControlRegister.objects.values().order_by("pk"))) == before

    raw_sql("UPDATE audit_cagnottecount SET counted = 4560 WHERE id = %s", (count.pk,))
    refused(direzione, url)
    assert not ControlRegister.objects.exists()
    raw_sql("UPDATE audit_cagnottecount SET counted = %s WHERE id = %s", (house(session__table=closed.tables[0]),
                                                                          count.pk))  # fmt: skip
    reg = api(direzione).post(url).json()
    raw_sql("UPDATE audit_cagnottecount SET counted = 4560 WHERE id = %s", (count.pk,))
    refused(direzione, f"/api/control-registers/{reg['id']}/sign/")
    raw_sql("UPDATE audit_cagnottecount SET counted = %s WHERE id = %s", (house(session__table=closed.tables[0]),
                                                                          count.pk))  # fmt: skip
    assert api(direzione).post(f"/api/control-registers/{reg['id']}/sign/").status_code == 200
    assert api(direzione2).post(f"/api/control-registers/{reg['id']}/sign/").json()["status"] == "signed"
    # A count corrected (through the services), then the correction's row edited in SQL.
    new = registers.cagnotte_count_correct(count=count, by=direzione, witness=direzione2, counted=40_00, note="recount")
    raw_sql("UPDATE audit_cagnottecount SET counted = 4560 WHERE id = %s", (new.pk,))
    count = new
    refused(direzione, f"/api/control-registers/{reg['id']}/correct/", {"reason": "count corrected"})


def test_no_register_signed_prepared_or_corrected_over_a_register_edited_in_sql(closed, api, auditor, direzione,
                                                                                direzione2):  # fmt: skip
    """QA: a control register's row edited in SQL (a first signature slipped in, its words
    changed) was refused on nothing: only counts were held before signing. Signing, bringing
    up to date and correcting now refuse while a register of the day is not what its events
    recorded (409 `register_not_as_recorded`, naming it; nothing written)."""
    _count_all(closed, direzione, direzione2)
    url = f"/api/gaming-days/{closed.day.pk}/control-register/"
    reg = api(direzione).post(url).json()
    sign = f"/api/control-registers/{reg['id']}/sign/"

    def refused(user, path: str, body: dict | None = None, registers_named: list | None = None) -> None:
        before = AuditEvent.objects.count(), list(ControlRegister.objects.values().order_by("pk"))
        r = api(user).post(path, body or {}, format="json")
        assert r.status_code == 409, r.json()
        assert r.json()["error"]["code"] == "register_not_as_recorded"
        assert r.json()["error"]["details"] == {"registers": registers_named or [reg["id"]]}
        assert (AuditEvent.objects.count(), list(ControlRegister.objects.values().order_by("pk"))) == before

    # The auditor made the first signer in SQL: the Direzione's signature would complete it.
    raw_sql("UPDATE audit_controlregister SET first_signer_id = %s, first_signed_at = now() WHERE id = %s",
            (auditor.pk, reg["id"]))  # fmt: skip
    refused(direzione, sign)
    refused(direzione, url)  # nor is the edited signature withdrawn as if it had been given
    raw_sql("UPDATE audit_controlregister SET first_signer_id = NULL, first_signed_at = NULL WHERE id = %s",
            (reg["id"],))  # fmt: skip
    assert api(direzione).post(sign).status_code == 200
    # The total in words edited (the figures left alone, so the register is not stale).
    raw_sql("UPDATE audit_controlregister SET total_words_en = 'one million' WHERE id = %s", (reg["id"],))
    refused(direzione2, sign)
    raw_sql("UPDATE audit_controlregister SET total_words_en = %s WHERE id = %s", (reg["total_words_en"], reg["id"]))
    assert api(direzione2).post(sign).json()["status"] == "signed"
    # A count corrected since: the signed register is corrected, unless its row was edited.
    count = CagnotteCount.objects.get(gaming_day=closed.day, table=closed.tables[0])
    registers.cagnotte_count_correct(count=count, by=direzione, witness=direzione2, counted=40_00, note="recount")
    for column, edited, was in [("second_signer_id", auditor.pk, direzione2.pk), ("reason", "slipped in", ""),
                                ("prepared_by_id", direzione2.pk, direzione.pk)]:  # fmt: skip
        raw_sql(f"UPDATE audit_controlregister SET {column} = %s WHERE id = %s", (edited, reg["id"]))
        refused(direzione, f"/api/control-registers/{reg['id']}/correct/", {"reason": "count corrected"})
        raw_sql(f"UPDATE audit_controlregister SET {column} = %s WHERE id = %s", (was, reg["id"]))
    new = api(direzione).post(f"/api/control-registers/{reg['id']}/correct/", {"reason": "count corrected"},
                              format="json")  # fmt: skip
    assert new.status_code == 201, new.json()
    # The correction deleted in SQL: the signed register would read as the one in force again.
    raw_sql("DELETE FROM audit_controlregister WHERE id = %s", (new.json()["id"],))
    refused(direzione, url, registers_named=[new.json()["id"]])


def test_the_desk_names_the_table_and_the_count_edited_in_sql(closed, api, auditor, direzione, direzione2):
    from audit.views import _explain

    _count_all(closed, direzione, direzione2)
    count = CagnotteCount.objects.get(gaming_day=closed.day, table=closed.tables[1])
    raw_sql("UPDATE audit_cagnottecount SET counted = 4560 WHERE id = %s", (count.pk,))
    report = DayReport.objects.get(gaming_day=closed.day)
    body = api(auditor).post(f"/api/reports/{report.pk}/verify/").json()
    [reason] = [r for r in body["reasons"] if r["code"] == "books_mismatch"]
    assert reason == {"code": "books_mismatch", "problem": "count_not_as_recorded", "count": count.pk,
                      "table": closed.tables[1].pk, "table_number": 2}  # fmt: skip
    [line] = [x for x in _explain(body)["lines"] if "cagnotte count" in x]
    assert line.endswith(f"Table 2, cagnotte count {count.pk}: the count in the books is not the one the audit "
                         "trail recorded.")  # fmt: skip


def test_a_registers_preparer_reason_or_time_edited_in_sql_is_caught(closed, direzione, direzione2):
    """The report prints who prepared a register, when, and why a correction was made: the
    events record them (the time since its event says it), and the books check holds them;
    an event written before it said the time leaves the time unheld."""
    import json
    from datetime import timedelta

    _, reg = counted_and_signed_once(closed, direzione, direzione2)

    def problems() -> list:
        return [(p["code"], p.get("register")) for p in registers.books_verify(gaming_day_id=closed.day.pk)]

    assert problems() == []
    for column, edited in [("prepared_at", reg.prepared_at - timedelta(hours=2)), ("prepared_by", direzione2),
                           ("reason", "slipped in")]:  # fmt: skip
        ControlRegister.objects.filter(pk=reg.pk).update(**{column: edited})
        assert problems() == [("register_not_as_recorded", reg.pk)], column
        ControlRegister.objects.filter(pk=reg.pk).update(**{column: getattr(reg, column)})
        assert problems() == []
    event = AuditEvent.objects.get(action="control_register.prepared", subject_id=str(reg.pk))
    new = {k: v for k, v in event.payload["new"].items() if k != "prepared_at"}
    with trigger_disabled():
        AuditEvent.objects.filter(pk=event.pk).update(payload_json=json.dumps({**event.payload, "new": new}))
    ControlRegister.objects.filter(pk=reg.pk).update(prepared_at=reg.prepared_at - timedelta(hours=2))
    assert problems() == []
