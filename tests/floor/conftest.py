"""A small floor in a known state, for the API tests: what each endpoint needs to succeed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from audit.models import AuditEvent, AuditStream
from floor import services
from floor.models import (
    ApiToken,
    Casino,
    GamingDay,
    MinimumChange,
    Patron,
    Seat,
    SessionInterruption,
    Site,
    Table,
    TableSession,
)
from floor.roles import Role
from tests.factories import CasinoFactory, PatronFactory, SiteFactory

DUMPED = (Casino, Site, Table, GamingDay, TableSession, SessionInterruption, MinimumChange, Patron, Seat,
          AuditStream, AuditEvent, ApiToken)


def dump() -> dict[str, list[dict[str, Any]]]:
    """Every row of the floor, the audit trail and the tokens: 'nothing written' means this
    is equal before and after."""
    return {model.__name__: list(model.objects.order_by("pk").values()) for model in DUMPED}


@dataclass
class World:
    casino: Casino
    site: Site
    day: GamingDay
    table: Table  # with the open session `session`
    free_table: Table  # no session: may be edited, or get a session
    session: TableSession  # open, run by the capo_partita fixture, patron seated at 1
    interrupted: TableSession  # on a third table, run by another Capo Partita (one table each)
    seat: Seat
    seated: Patron
    free_patron: Patron
    free_capo: Any  # a Capo Partita with no table: the one a new session can have
    free_changeur: Any  # a changeur with no table, likewise (one changeur per table)
    other_day: GamingDay  # open day of a second casino, no session: may be closed
    dayless_casino: Casino  # no gaming day: one may be opened


@pytest.fixture
def world(commissario, capo_partita, changeur, direzione, make_user) -> World:
    casino = CasinoFactory(name="Casinò di Venezia", code="venezia")
    site = SiteFactory(casino=casino, name="Ca' Vendramin Calergi")
    table = services.table_create(casino=casino, site=site, number=1, by=direzione)
    free_table = services.table_create(casino=casino, site=site, number=2, by=direzione)
    third = services.table_create(casino=casino, site=site, number=3, by=direzione)
    day = services.gaming_day_open(casino=casino, by=commissario)
    session = services.table_session_open(
        table=table, by=commissario, capo_partita=capo_partita, changeur=changeur, shoe_number="S-101", minimum=100_00
    )
    interrupted = services.table_session_open(
        table=third,
        by=commissario,
        capo_partita=make_user("capo_partita_3", Role.CAPO_PARTITA),
        changeur=make_user("changeur_3", Role.CHANGEUR),
        shoe_number="S-103",
        minimum=100_00,
    )
    services.table_session_interrupt(session=interrupted, by=commissario, reason="count")
    interrupted.refresh_from_db()
    seated = PatronFactory()
    seat = services.seat_assign(session=session, patron=seated, seat_number=1, by=commissario)
    other_casino = CasinoFactory(name="Casinò di Lido", code="lido")
    other_day = services.gaming_day_open(casino=other_casino, by=commissario)
    return World(
        casino=casino,
        site=site,
        day=day,
        table=table,
        free_table=free_table,
        session=session,
        interrupted=interrupted,
        seat=seat,
        seated=seated,
        free_patron=PatronFactory(),
        free_capo=make_user("capo_partita_free", Role.CAPO_PARTITA),
        free_changeur=make_user("changeur_free", Role.CHANGEUR),
        other_day=other_day,
        dayless_casino=CasinoFactory(name="Casinò di Sanremo", code="sanremo"),
    )


@pytest.fixture
def role_user(request, commissario, capo_partita, changeur, auditor, direzione, outsider):
    """The user of a role name ("anonymous" is None)."""
    users = {
        "commissario": commissario,
        "capo_partita": capo_partita,
        "changeur": changeur,
        "auditor": auditor,
        "direzione": direzione,
        "outsider": outsider,
        "anonymous": None,
    }
    return users.__getitem__
