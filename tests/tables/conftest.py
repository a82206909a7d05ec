"""Fixtures for the game at a table: `make_game(profile)` builds a table of that profile,
an open session (the first run by the `capo_partita` fixture, each later one by a Capo
Partita of its own: `game.capo`), seated (and standing) patrons, the first shoe loaded and
the first bank opened, all through the services."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from django.apps import apps

from audit.models import AuditEvent
from floor import services as floor_services
from floor.models import Patron, Seat, TableSession
from floor.roles import Role
from tables import services
from tables.models import Bank, Shoe
from tests.factories import PatronFactory


@dataclass
class Game:
    session: TableSession
    capo: Any
    commissario: Any
    seated: list[Patron]  # seated[0] is at seat 1, ...
    standing: list[Patron] = field(default_factory=list)
    shoe: Shoe | None = None
    bank: Bank | None = None

    @property
    def banker(self) -> Patron:
        return self.bank.banker

    def seat(self, number: int) -> Patron:
        return self.seated[number - 1]

    def refresh(self) -> Game:
        self.session.refresh_from_db()
        if self.bank is not None:
            self.bank.refresh_from_db()
        if self.shoe is not None:
            self.shoe.refresh_from_db()
        return self


@pytest.fixture
def make_game(site, direzione, gaming_day, commissario, capo_partita, changeur, make_user):
    """The first game is run by the `capo_partita` fixture; a Capo Partita runs one table at
    a time (RULES.md §6), so each later one gets its own (`game.capo`), unless `capo` says;
    likewise its changeur (one changeur per table), unless `changeur` says."""
    counter = {"n": 0}
    first_changeur = changeur

    def make(
        profile: str = "venezia",
        *,
        capo: Any = None,
        changeur: Any = None,
        seated: int = 8,
        standing: int = 1,
        minimum: int = 100_00,
        maximum: int | None = None,
        bank: int | None = 1000_00,
        shoe: bool = True,
        **table_settings,
    ) -> Game:
        counter["n"] += 1
        if capo is None:
            capo = capo_partita if counter["n"] == 1 else make_user(f"capo_partita_{counter['n']}", Role.CAPO_PARTITA)
        if changeur is None:
            changeur = first_changeur if counter["n"] == 1 else make_user(f"changeur_{counter['n']}", Role.CHANGEUR)
        table = floor_services.table_create(
            casino=site.casino,
            site=site,
            number=counter["n"],
            by=direzione,
            profile=profile,
            **table_settings,
        )
        session = floor_services.table_session_open(
            table=table,
            by=commissario,
            capo_partita=capo,
            changeur=changeur,
            shoe_number=f"S-{counter['n']}",
            minimum=minimum,
            maximum=maximum,
        )
        seats = [
            floor_services.seat_assign(session=session, patron=PatronFactory(), seat_number=n, by=commissario)
            for n in range(1, seated + 1)
        ]
        standers = [
            floor_services.seat_assign(session=session, patron=PatronFactory(), standing=True, by=commissario)
            for _ in range(standing)
        ]
        game = Game(
            session, capo, commissario, [s.patron for s in seats], [s.patron for s in standers]
        )
        if shoe:
            game.shoe = services.shoe_load(session=session, by=capo)
        if bank is not None:
            game.bank = services.bank_open(session=session, by=capo, patron=game.seat(1), amount=bank)
        return game

    return make


@pytest.fixture
def game(make_game) -> Game:
    return make_game("venezia")


TABLE_MODELS = (
    "shoe",
    "shoecard",
    "bank",
    "coup",
    "bancocall",
    "bet",
    "posting",
    "regolamark",
    "fauxtiragebar",
    "cashexchange",
    "cashcount",
)


def snapshot() -> dict[str, int]:
    """Row counts of every table model, the audit events, and the seats (nothing else moves)."""
    counts = {name: apps.get_model("tables", name).objects.count() for name in TABLE_MODELS}
    counts["audit_events"] = AuditEvent.objects.count()
    counts["seats"] = Seat.objects.count()
    return counts


@pytest.fixture
def refused():
    """`refused(code, fn, **kwargs)`: the call raises ApplicationError with `code` and
    writes nothing at all (row counts and audit events unchanged). Returns the error."""
    from config.errors import ApplicationError

    def check(code: str, fn, /, **kwargs):
        before = snapshot()
        with pytest.raises(ApplicationError) as exc:
            fn(**kwargs)
        assert exc.value.code == code, (exc.value.code, exc.value.message, exc.value.details)
        assert snapshot() == before
        return exc.value

    return check
