"""seed_demo builds the Venezia demo floor through the services, and running it twice
changes nothing."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import CommandError, call_command

from audit.models import AuditEvent
from floor import selectors
from floor.models import Casino, GamingDay, Patron, Seat, Site, Table, TableSession
from floor.roles import user_roles

pytestmark = pytest.mark.django_db

User = get_user_model()


def counts() -> dict[str, int]:
    models = (User, Casino, Site, Table, GamingDay, TableSession, Patron, Seat, AuditEvent)
    return {model.__name__: model.objects.count() for model in models}


def seed() -> str:
    out = io.StringIO()
    call_command("seed_demo", "--force", stdout=out)
    return out.getvalue()


def test_seed_demo_builds_the_demo_floor():
    output = seed()
    casino = Casino.objects.get(code="venezia")
    assert casino.name == "Casinò di Venezia"
    assert sorted(casino.sites.values_list("name", flat=True)) == ["Ca' Noghera", "Ca' Vendramin Calergi"]
    tables = {t.number: t for t in Table.objects.filter(casino=casino)}
    assert sorted(tables) == [1, 2, 3, 4, 5]
    assert all(tables[n].seats == 8 and tables[n].cagnotte_rate_bp == 500 for n in (1, 2, 3))
    assert tables[4].seats == 9  # the Grande Tavolo
    assert tables[5].profile == "classic" and tables[5].site.name == "Ca' Noghera"

    for username, role in [
        ("commissario", "commissario"), ("capo1", "capo_partita"), ("capo2", "capo_partita"),
        ("changeur", "changeur"), ("changeur2", "changeur"), ("auditor", "auditor"), ("direzione", "direzione"),
        ("direzione2", "direzione"),
    ]:
        user = authenticate(username=username, password=f"chemin-demo-{username}")
        assert user is not None, username
        assert user_roles(user) == {role}
        assert f"chemin-demo-{username}" in output
    assert authenticate(username="admin", password="chemin-demo-admin").is_superuser

    assert Patron.objects.count() == 12
    day = GamingDay.objects.get(casino=casino, closed_at__isnull=True)
    session = selectors.table_session_detail().get(gaming_day=day)
    assert session.table == tables[1] and session.status == "open"
    assert (session.capo_partita.username, session.changeur.username) == ("capo1", "changeur")
    assert (session.shoe_number, session.minimum) == ("S-101", 100_00)
    seats = Seat.objects.filter(session=session, left_at__isnull=True)
    assert sorted(s.seat_number for s in seats if not s.standing) == [1, 2, 3, 4, 5, 6, 7]
    assert sum(s.standing for s in seats) == 1
    assert selectors.session_can_start(session)
    # Everything went through the services: the trail has the session's story.
    actions = list(AuditEvent.objects.filter(stream__name=session.audit_stream).values_list("action", flat=True))
    assert actions == ["seat.taken"] * 8
    assert AuditEvent.objects.filter(action="table.created").count() == 5
    assert AuditEvent.objects.filter(action="patron.registered").count() == 12


def test_seed_demo_is_idempotent():
    seed()
    first = counts()
    seed()
    assert counts() == first


def test_seed_demo_after_the_demo_day_was_closed_serves_the_floor_as_it_is():
    """The README's end of day closes the demo's day; `make run` again must still start."""
    from floor import services

    seed()
    day = GamingDay.objects.get()
    commissario = User.objects.get(username="commissario")
    for session in TableSession.objects.exclude(status="closed"):
        services.table_session_close(session=session, by=commissario)
    services.gaming_day_close(gaming_day=day, by=commissario)
    before = counts()
    out = seed()
    assert "no gaming day opened" in out
    assert counts() == before


def test_seed_demo_refuses_without_debug(settings):
    settings.DEBUG = False
    with pytest.raises(CommandError):
        call_command("seed_demo", stdout=io.StringIO())
    assert not Casino.objects.exists()
