"""The floor the fuzzer plays against: every kind of object an API path names exists, so
the generated requests reach the services behind the ids and not only the 404s.

The open gaming day (the suite's `gaming_day`, casino venezia) has three venezia tables:
  - `main`: eight seated and one standing patron, a shoe, a bank, a coup in betting, and a
    line in its changeur's register;
  - `succession`: the banker won, then withdrew; the seguito is on offer;
  - `auction`: the seguito was passed by everyone; the asta is open.
A second casino has a closed day: its report built (Celery runs eagerly in the tests), a
table's cagnotte counted and the control register prepared (not signed)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from audit.models import DayReport
from audit.reports import registers, unclaimed
from floor import services as floor_services
from floor.models import GamingDay, Patron, Seat, Table, TableSession
from floor.roles import Role
from tables import services as table_services
from tables.models import Auction, Bank, Coup, Succession
from tests.factories import CasinoFactory, PatronFactory, SiteFactory
from tests.tables.conftest import make_game  # noqa: F401  (the tables' fixture, used by fuzz_floor)

BANKER_WINS = ["KH", "5S", "3C", "2D", "2S"]  # punta 3 draws a 2 -> 5; banker 7 stands


@dataclass
class FuzzFloor:
    open_day: GamingDay
    closed_day: GamingDay
    table: Table
    session: TableSession
    seat: Seat
    patron: Patron
    bank: Bank
    coup: Coup
    succession_session: TableSession
    succession: Succession
    auction_session: TableSession
    auction: Auction
    report: DayReport
    cagnotte_count: object
    control_register: object
    unclaimed_deposit: object
    cash_exchange: object
    cash_count: object
    drawer_session: TableSession
    capos: dict[str, object]  # the Capo Partita of the succession's table and of the asta's (one table each)


def _withdraw(game) -> Succession:
    """The banker wins a coup against seat 2, then withdraws: the seguito is on offer."""
    table_services.coup_record(
        session=game.session,
        by=game.capo,
        cards=BANKER_WINS,
        punta_draws=True,
        bets=[{"patron": game.seat(2), "amount": 100_00}],
    )
    bank = table_services.bank_withdraw(bank=game.bank, by=game.capo)
    return Succession.objects.get(previous_bank=bank)


def _closed_day(*, commissario, capo, changeur, direzione, auditor) -> tuple[GamingDay, Table]:
    casino = CasinoFactory(name="Casinò del Lido", code="lido")
    site = SiteFactory(casino=casino)
    day = floor_services.gaming_day_open(casino=casino, by=commissario)
    table = floor_services.table_create(casino=casino, site=site, number=1, by=direzione, min_seats_to_start=2)
    session = floor_services.table_session_open(
        table=table, by=commissario, capo_partita=capo, changeur=changeur, shoe_number="L-1", minimum=100_00
    )
    patrons = [PatronFactory() for _ in range(2)]
    for number, patron in enumerate(patrons, start=1):
        floor_services.seat_assign(session=session, patron=patron, seat_number=number, by=commissario)
    table_services.shoe_load(session=session, by=capo)
    table_services.bank_open(session=session, by=capo, patron=patrons[0], amount=1000_00)
    table_services.coup_record(
        session=session, by=capo, cards=BANKER_WINS, punta_draws=True, bets=[{"patron": patrons[1], "amount": 300_00}]
    )
    return day, table


@pytest.fixture
def fuzz_floor(
    make_game,  # noqa: F811
    gaming_day,
    commissario,
    capo_partita,
    changeur,
    auditor,
    direzione,
    settings,
    tmp_path,
    django_capture_on_commit_callbacks,
    make_user,
) -> FuzzFloor:
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.SECURITY_EVENTS = True  # the token login's odd usernames reach the security stream too
    main = make_game("venezia", seated=8, standing=1)
    coup = table_services.coup_open(session=main.session, by=capo_partita)

    offered = make_game("venezia", seated=3, standing=0, min_seats_to_start=2)
    succession = _withdraw(offered)

    asta = make_game("venezia", seated=3, standing=0, min_seats_to_start=2)
    passed = _withdraw(asta)
    for patron in (asta.seat(2), asta.seat(3)):
        table_services.offer_pass(succession=passed, by=asta.capo, patron=patron)
    auction = table_services.auction_open(session=asta.session, by=asta.capo)

    closed_day, closed_table = _closed_day(
        commissario=commissario, capo=make_user("capo_lido", Role.CAPO_PARTITA),
        changeur=make_user("changeur_lido", Role.CHANGEUR), direzione=direzione, auditor=auditor
    )
    with django_capture_on_commit_callbacks(execute=True):
        floor_services.gaming_day_close(gaming_day=closed_day, by=commissario, open_sessions="close")
    report = DayReport.objects.get(gaming_day=closed_day)
    assert report.status == "done", report.error
    count = registers.cagnotte_count_record(
        gaming_day=closed_day, table=closed_table, by=direzione, witness=auditor, counted=15_00
    )
    register = registers.control_register_prepare(gaming_day=closed_day, by=direzione)
    deposit = unclaimed.unclaimed_deposit_record(
        session=main.session, by=commissario, kind="stake", amount=50_00, deposited_in="busta 1", patron=main.seat(2)
    )
    exchange = table_services.cash_exchange_record(
        session=main.session, by=changeur, direction="buy_in", amount=500_00, patron=main.seat(2)
    )
    # Two closed sessions of the open day: one whose drawer is counted (the corrections'), one
    # not yet (the counts': a valid body reaches the service and is written).
    counted = make_game("venezia", seated=2, standing=0, min_seats_to_start=2)
    floor_services.table_session_close(session=counted.session, by=commissario)
    cash_count = table_services.cash_count_record(session=counted.session, by=commissario, float_issued=100_00,
                                                  counted=100_00)  # fmt: skip
    uncounted = make_game("venezia", seated=2, standing=0, min_seats_to_start=2)
    floor_services.table_session_close(session=uncounted.session, by=commissario)

    return FuzzFloor(
        open_day=gaming_day,
        closed_day=closed_day,
        table=main.session.table,
        session=main.session,
        seat=Seat.objects.get(session=main.session, patron=main.seat(3)),
        patron=main.seat(3),
        bank=main.bank,
        coup=coup,
        succession_session=offered.session,
        succession=succession,
        auction_session=asta.session,
        auction=auction,
        report=report,
        cagnotte_count=count,
        control_register=register,
        unclaimed_deposit=deposit,
        cash_exchange=exchange,
        cash_count=cash_count,
        drawer_session=uncounted.session,
        capos={"capo_seguito": offered.capo, "capo_asta": asta.capo},
    )
