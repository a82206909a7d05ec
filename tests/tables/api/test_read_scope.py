"""Who reads a table session's records through the API (floor.permissions.session_readable_by):
the Commissario, the Direzione and the auditors any table's; the table staff (Capo Partita,
changeur) only the sessions they work or worked at, as the tablet page lets them follow
their own table and not another's (data minimisation, GDPR art. 5(1)(c)): another table's
game, coups, banks, seats and every patron's balance are a 403, and the lists hold only
theirs. A relieved Capo Partita or changeur still reads the session he worked."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from floor import services as floor_services
from floor.roles import Role
from tests.factories import UserFactory

from .conftest import Tablet, error

pytestmark = pytest.mark.django_db


def session_reads(session_id: int, coup_id: int) -> list[str]:
    s = session_id
    return [
        f"/api/sessions/{s}/",
        f"/api/sessions/{s}/game/",
        f"/api/sessions/{s}/balances/",
        f"/api/sessions/{s}/succession/",
        f"/api/sessions/{s}/coups/",
        f"/api/sessions/{s}/banks/",
        f"/api/sessions/{s}/seats/",
        f"/api/sessions/{s}/minimum-changes/",
        f"/api/sessions/{s}/staff-changes/",
        f"/api/coups/{coup_id}/",
    ]


@pytest.fixture
def tables(make_game):
    mine, other = make_game("venezia"), make_game("venezia")
    coups = {}
    for game in (mine, other):
        tablet = Tablet(game.capo)
        coups[game.session.pk] = tablet.ok(tablet.post(f"/api/sessions/{game.session.pk}/coups/"), 201)["coup"]["id"]
    return mine, other, coups


def listed(tablet: Tablet) -> set[int]:
    return {s["id"] for s in tablet.get("/api/sessions/").json()["results"]}


def page_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_table_staff_read_their_table_not_another(tables):
    mine, other, coups = tables
    for user in (mine.capo, mine.session.changeur):
        tablet = Tablet(user)
        for url in session_reads(mine.session.pk, coups[mine.session.pk]):
            assert tablet.get(url).status_code == 200, (user.username, url)
        for url in session_reads(other.session.pk, coups[other.session.pk]):
            response = tablet.get(url)
            assert (response.status_code, error(response)) == (403, "permission_denied"), (user.username, url)
            assert "balance" not in response.content.decode()
        assert listed(tablet) == {mine.session.pk}
        # the tablet page says the same
        assert page_client(user).get(f"/tablet/sessions/{other.session.pk}/").status_code == 403
        assert tablet.get("/api/sessions/999999/game/").status_code == 404
        assert tablet.get("/api/coups/999999/").status_code == 404


@pytest.mark.parametrize("role", [Role.COMMISSARIO, Role.DIREZIONE, Role.AUDITOR])
def test_the_supervisors_and_auditors_read_every_table(tables, role):
    mine, other, coups = tables
    tablet = Tablet(UserFactory(roles=[role]))
    for game in (mine, other):
        for url in session_reads(game.session.pk, coups[game.session.pk]):
            assert tablet.get(url).status_code == 200, (role, url)
    assert listed(tablet) >= {mine.session.pk, other.session.pk}


def test_a_relieved_capo_and_changeur_still_read_the_session_they_worked(tables):
    mine, other, coups = tables
    old_capo, old_changeur = mine.capo, mine.session.changeur
    Tablet(old_capo).ok(Tablet(old_capo).post(f"/api/coups/{coups[mine.session.pk]}/annul/", {"reason": "relief"}))
    relief_capo = UserFactory(username="capo_relief", roles=[Role.CAPO_PARTITA])
    relief_changeur = UserFactory(username="changeur_relief", roles=[Role.CHANGEUR])
    floor_services.table_session_staff_change(
        session=mine.session, by=mine.commissario, capo_partita=relief_capo, changeur=relief_changeur, reason="break"
    )
    for user in (old_capo, old_changeur, relief_capo, relief_changeur):
        tablet = Tablet(user)
        for url in session_reads(mine.session.pk, coups[mine.session.pk]):
            assert tablet.get(url).status_code == 200, (user.username, url)
        assert listed(tablet) == {mine.session.pk}
        assert tablet.get(f"/api/sessions/{other.session.pk}/balances/").status_code == 403
    floor_services.table_session_close(session=mine.session, by=mine.commissario)
    for user in (old_capo, relief_changeur):  # and once the session is closed
        assert Tablet(user).get(f"/api/sessions/{mine.session.pk}/coups/").status_code == 200
        assert listed(Tablet(user)) == {mine.session.pk}


def test_a_capo_partita_who_lost_his_role_no_longer_reads_the_session_he_ran(tables):
    mine, _other, coups = tables
    mine.capo.groups.clear()
    tablet = Tablet(type(mine.capo).objects.get(pk=mine.capo.pk))
    for url in session_reads(mine.session.pk, coups[mine.session.pk]):
        assert tablet.get(url).status_code == 403, url


def test_the_session_list_of_a_capo_partita_takes_the_same_queries_however_many_sessions(make_game):
    first = make_game("venezia")
    tablet = Tablet(first.capo)
    tablet.get("/api/sessions/")  # the user's roles, read once per request's user

    def count() -> int:
        with CaptureQueriesContext(connection) as ctx:
            response = tablet.get("/api/sessions/")
        assert response.status_code == 200
        return len(ctx.captured_queries)

    one = count()
    for _ in range(3):
        game = make_game("venezia")
        floor_services.table_session_staff_change(
            session=game.session, by=game.commissario, capo_partita=UserFactory(roles=[Role.CAPO_PARTITA]),
            reason="break",
        )  # fmt: skip
    floor_services.table_session_staff_change(
        session=first.session, by=first.commissario, capo_partita=UserFactory(roles=[Role.CAPO_PARTITA]),
        reason="break",
    )  # fmt: skip
    assert count() == one
    assert listed(tablet) == {first.session.pk}
