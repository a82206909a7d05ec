"""Real parallel requests on PostgreSQL: threads, each with its own client and database
connection, released together by a barrier. The locks of the services must let exactly one
win, and the loser must get the service's own refusal (not a constraint error)."""

from __future__ import annotations

import pytest
from django.db import connection

from floor import services
from floor.models import GamingDay, Seat, TableSession
from floor.roles import Role
from tests.concurrency import race
from tests.factories import CasinoFactory, PatronFactory, SiteFactory, UserFactory

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="row locks need PostgreSQL"),
]




@pytest.fixture
def floor():
    commissari = [UserFactory(roles=[Role.COMMISSARIO]) for _ in range(2)]
    capo = UserFactory(roles=[Role.CAPO_PARTITA])
    other_capo = UserFactory(roles=[Role.CAPO_PARTITA])
    changeur = UserFactory(roles=[Role.CHANGEUR])
    other_changeur = UserFactory(roles=[Role.CHANGEUR])  # one changeur per table (RULES.md §6)
    direzione = UserFactory(roles=[Role.DIREZIONE])
    casino = CasinoFactory()
    site = SiteFactory(casino=casino)
    tables = [services.table_create(casino=casino, site=site, number=n, by=direzione) for n in (1, 2)]
    services.gaming_day_open(casino=casino, by=commissari[0])
    return {
        "commissari": commissari, "capo": capo, "other_capo": other_capo, "changeur": changeur,
        "other_changeur": other_changeur, "casino": casino,
        "tables": tables,
    }


def test_two_commissari_open_a_session_on_one_table(floor):
    table = floor["tables"][0]

    def open_session(shoe: str):
        body = {
            "table": table.pk,
            "capo_partita": floor["capo"].pk,
            "changeur": floor["changeur"].pk,
            "shoe_number": shoe,
            "minimum": 100_00,
        }
        return lambda client: client.post("/api/sessions/", body, format="json")

    responses = race([open_session("S-1"), open_session("S-2")], floor["commissari"])
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [201, 409], responses
    loser = next(r for r in responses if r.status_code == 409)
    assert loser.json()["error"]["code"] == "table_session_already_open"
    assert TableSession.objects.filter(table=table).count() == 1


def test_one_capo_partita_given_two_tables_at_once(floor):
    """RULES.md §6, one croupier per table: the day's lock orders the two opens."""

    def open_session(table):
        body = {
            "table": table.pk,
            "capo_partita": floor["capo"].pk,
            "changeur": floor["changeur"].pk,
            "shoe_number": f"S-{table.number}",
            "minimum": 100_00,
        }
        return lambda client: client.post("/api/sessions/", body, format="json")

    responses = race([open_session(table) for table in floor["tables"]], floor["commissari"])
    assert sorted(r.status_code for r in responses) == [201, 409], responses
    loser = next(r for r in responses if r.status_code == 409)
    assert loser.json()["error"]["code"] == "capo_partita_busy"
    assert TableSession.objects.filter(capo_partita=floor["capo"]).count() == 1


def test_one_relief_capo_partita_sent_to_two_tables_at_once(floor):
    """The staff change takes the day's lock too: of two tables given one relief at once,
    one gets him and the other is told he runs a table."""
    commissario = floor["commissari"][0]
    sessions = [
        services.table_session_open(
            table=table, by=commissario, capo_partita=capo, changeur=changeur,
            shoe_number=f"S-{table.number}", minimum=100_00,
        )
        for table, capo, changeur in zip(
            floor["tables"], (floor["capo"], floor["other_capo"]), (floor["changeur"], floor["other_changeur"]),
            strict=True,
        )
    ]
    relief = UserFactory(roles=[Role.CAPO_PARTITA])

    def relieve(session):
        return lambda client: client.post(
            f"/api/sessions/{session.pk}/staff/", {"capo_partita": relief.pk, "reason": "break"}, format="json"
        )

    responses = race([relieve(session) for session in sessions], floor["commissari"])
    assert sorted(r.status_code for r in responses) == [200, 409], responses
    loser = next(r for r in responses if r.status_code == 409)
    assert loser.json()["error"]["code"] == "capo_partita_busy"
    assert TableSession.objects.filter(capo_partita=relief).count() == 1


def test_one_patron_seated_at_two_tables_at_once(floor):
    commissario = floor["commissari"][0]
    sessions = [
        services.table_session_open(
            table=table, by=commissario, capo_partita=capo, changeur=changeur,
            shoe_number=f"S-{table.number}", minimum=100_00,
        )
        for table, capo, changeur in zip(
            floor["tables"], (floor["capo"], floor["other_capo"]), (floor["changeur"], floor["other_changeur"]),
            strict=True,
        )
    ]
    patron = PatronFactory()

    def seat_at(session):
        return lambda client: client.post(
            f"/api/sessions/{session.pk}/seats/", {"patron": patron.pk, "seat_number": 3}, format="json"
        )

    responses = race([seat_at(sessions[0]), seat_at(sessions[1])], floor["commissari"])
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [201, 409], responses
    loser = next(r for r in responses if r.status_code == 409)
    assert loser.json()["error"]["code"] == "patron_already_seated"
    assert Seat.objects.filter(patron=patron, left_at__isnull=True).count() == 1


def test_two_patrons_for_one_seat(floor):
    commissario = floor["commissari"][0]
    session = services.table_session_open(
        table=floor["tables"][0], by=commissario, capo_partita=floor["capo"], changeur=floor["changeur"],
        shoe_number="S-1", minimum=100_00,
    )
    patrons = [PatronFactory(), PatronFactory()]

    def seat(patron):
        return lambda client: client.post(
            f"/api/sessions/{session.pk}/seats/", {"patron": patron.pk, "seat_number": 5}, format="json"
        )

    responses = race([seat(p) for p in patrons], floor["commissari"])
    assert sorted(r.status_code for r in responses) == [201, 409]
    assert next(r for r in responses if r.status_code == 409).json()["error"]["code"] == "seat_taken"
    assert Seat.objects.filter(session=session, seat_number=5).count() == 1


def test_two_commissari_open_the_day_at_once():
    commissari = [UserFactory(roles=[Role.COMMISSARIO]) for _ in range(2)]
    casino = CasinoFactory()

    def open_day(client):
        return client.post("/api/gaming-days/", {"casino": casino.pk}, format="json")

    responses = race([open_day, open_day], commissari)
    assert sorted(r.status_code for r in responses) == [201, 409]
    assert next(r for r in responses if r.status_code == 409).json()["error"]["code"] == "gaming_day_already_open"
    assert GamingDay.objects.filter(casino=casino).count() == 1
