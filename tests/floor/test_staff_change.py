"""The croupiers' relief: a session's Capo Partita or changeur replaced while it runs, one
croupier per table (RULES.md §6), every change on record in the same transaction."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from audit.models import AuditEvent
from config.errors import ApplicationError, Conflict
from floor import selectors, services
from floor.models import StaffChange, TableSession
from floor.roles import Role
from tests.factories import TableFactory

pytestmark = pytest.mark.django_db


def events(session: TableSession) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(stream__name=session.audit_stream, action="table_session.staff_changed"))


@pytest.fixture
def relief(make_user):
    return make_user("capo_relief", Role.CAPO_PARTITA)


def test_the_commissario_relieves_the_capo_partita(
    table_session, commissario, capo_partita, changeur, relief, make_user
):
    session = services.table_session_staff_change(
        session=table_session, by=commissario, capo_partita=relief, reason="  break at 22:00 "
    )
    session.refresh_from_db()
    assert (session.capo_partita, session.changeur) == (relief, changeur)
    change = StaffChange.objects.get()
    assert (change.old_capo_partita, change.new_capo_partita) == (capo_partita, relief)
    assert (change.old_changeur, change.new_changeur) == (changeur, changeur)
    assert change.by == commissario and change.reason == "break at 22:00"
    [event] = events(session)
    assert event.actor == commissario and event.subject_id == str(session.pk)
    assert event.payload == {
        "change": change.pk,
        "reason": "break at 22:00",
        "at": change.at.isoformat(),
        "old": {"capo_partita": capo_partita.pk, "changeur": changeur.pk},
        "new": {"capo_partita": relief.pk, "changeur": changeur.pk},
    }
    assert list(selectors.staff_change_list(session=session)) == [change]
    # The relieved Capo Partita is free again: he may take another table.
    other = TableFactory(casino=session.table.casino, site=session.table.site, number=2)
    later = services.table_session_open(
        table=other, by=commissario, capo_partita=capo_partita, changeur=make_user("changeur_2", Role.CHANGEUR),
        shoe_number="S-2", minimum=100_00,
    )
    assert later.capo_partita == capo_partita


def test_the_changeur_alone_and_both_at_once(table_session, commissario, capo_partita, make_user, relief):
    changeur_2 = make_user("changeur_2", Role.CHANGEUR)
    services.table_session_staff_change(session=table_session, by=commissario, changeur=changeur_2, reason="relief")
    table_session.refresh_from_db()
    assert (table_session.capo_partita, table_session.changeur) == (capo_partita, changeur_2)
    changeur_3 = make_user("changeur_3", Role.CHANGEUR)
    services.table_session_staff_change(
        session=table_session, by=commissario, capo_partita=relief, changeur=changeur_3, reason="shift change"
    )
    table_session.refresh_from_db()
    assert (table_session.capo_partita, table_session.changeur) == (relief, changeur_3)
    assert StaffChange.objects.count() == 2 and len(events(table_session)) == 2


def test_while_play_is_interrupted(table_session, commissario, relief):
    services.table_session_interrupt(session=table_session, by=commissario, reason="count")
    session = services.table_session_staff_change(session=table_session, by=commissario, capo_partita=relief, reason="x")
    assert session.status == TableSession.Status.INTERRUPTED and session.capo_partita == relief


def refused(call, code: str) -> ApplicationError:
    before = (StaffChange.objects.count(), AuditEvent.objects.count())
    with pytest.raises(ApplicationError) as caught:
        call()
    assert caught.value.code == code, caught.value.code
    assert (StaffChange.objects.count(), AuditEvent.objects.count()) == before
    return caught.value


def test_refusals_write_nothing(table_session, commissario, capo_partita, changeur, auditor, relief):
    def change(**kwargs):
        kwargs.setdefault("reason", "relief")
        return lambda: services.table_session_staff_change(session=table_session, by=commissario, **kwargs)

    refused(change(capo_partita=relief, reason="   "), "reason_required")
    refused(change(), "staff_unchanged")
    refused(change(capo_partita=capo_partita, changeur=changeur), "staff_unchanged")
    refused(change(capo_partita=auditor), "not_a_capo_partita")
    refused(change(changeur=auditor), "not_a_changeur")
    refused(change(capo_partita=relief, reason="x" * 201), "text_too_long")
    relief.is_active = False
    relief.save()
    refused(change(capo_partita=relief), "user_inactive")  # he could not log in to his tablet
    with pytest.raises(ApplicationError) as inactive:
        other = TableFactory(casino=table_session.table.casino, site=table_session.table.site, number=2)
        services.table_session_open(
            table=other, by=commissario, capo_partita=relief, changeur=changeur, shoe_number="S-2", minimum=100
        )
    assert inactive.value.code == "user_inactive"
    services.table_session_close(session=table_session, by=commissario)
    assert isinstance(refused(change(capo_partita=relief), "session_closed"), Conflict)
    table_session.refresh_from_db()
    assert table_session.capo_partita == capo_partita


def test_the_new_capo_partita_may_not_run_another_table(table_session, commissario, make_user, relief):
    other = TableFactory(casino=table_session.table.casino, site=table_session.table.site, number=2)
    busy = services.table_session_open(
        table=other, by=commissario, capo_partita=relief, changeur=make_user("changeur_2", Role.CHANGEUR),
        shoe_number="S-2", minimum=100_00,
    )
    error = refused(
        lambda: services.table_session_staff_change(
            session=table_session, by=commissario, capo_partita=relief, reason="relief"
        ),
        "capo_partita_busy",
    )
    assert isinstance(error, Conflict)
    assert error.details == {"capo_partita": relief.pk, "session": busy.pk, "table": 2, "as": "capo_partita"}
    # Once his own session is closed, he is free.
    services.table_session_close(session=busy, by=commissario)
    services.table_session_staff_change(session=table_session, by=commissario, capo_partita=relief, reason="relief")


def test_a_capo_partita_runs_one_table_at_a_time(table_session, commissario, capo_partita, changeur, make_user):
    other = TableFactory(casino=table_session.table.casino, site=table_session.table.site, number=2)
    free_changeur = make_user("changeur_2", Role.CHANGEUR)
    with pytest.raises(Conflict) as busy:
        services.table_session_open(
            table=other, by=commissario, capo_partita=capo_partita, changeur=free_changeur, shoe_number="S-2",
            minimum=100,
        )
    assert busy.value.code == "capo_partita_busy"
    assert busy.value.details == {
        "capo_partita": capo_partita.pk, "session": table_session.pk, "table": 1, "as": "capo_partita"
    }
    assert not TableSession.objects.filter(table=other).exists()
    # An interrupted session is still his table.
    services.table_session_interrupt(session=table_session, by=commissario, reason="count")
    with pytest.raises(Conflict):
        services.table_session_open(
            table=other, by=commissario, capo_partita=capo_partita, changeur=free_changeur, shoe_number="S-2",
            minimum=100,
        )
    assert not TableSession.objects.filter(table=other).exists()


def test_a_changeur_works_at_one_table_at_a_time(table_session, commissario, capo_partita, changeur, make_user):
    """RULES.md §6: one croupier and one changeur per table; the changeur is always near his
    table with its float (seed 001), so he serves one table at a time, in either role."""
    other = TableFactory(casino=table_session.table.casino, site=table_session.table.site, number=2)
    capo_2 = make_user("capo_2", Role.CAPO_PARTITA)

    def open_other(**staff):
        return lambda: services.table_session_open(
            table=other, by=commissario, shoe_number="S-2", minimum=100, **staff
        )

    error = refused(open_other(capo_partita=capo_2, changeur=changeur), "changeur_busy")
    assert isinstance(error, Conflict)
    assert error.details == {"changeur": changeur.pk, "session": table_session.pk, "table": 1, "as": "changeur"}
    # Nor the croupier of a table, made changeur meanwhile, the changeur of another.
    capo_partita.groups.set([Group.objects.get(name=Role.CHANGEUR)])
    capo_partita = type(capo_partita).objects.get(pk=capo_partita.pk)  # roles are cached on the object
    error = refused(open_other(capo_partita=capo_2, changeur=capo_partita), "changeur_busy")
    assert error.details["as"] == "capo_partita"
    # A relief may not take the changeur of another table either.
    session_2 = services.table_session_open(
        table=other, by=commissario, capo_partita=capo_2, changeur=make_user("changeur_2", Role.CHANGEUR),
        shoe_number="S-2", minimum=100,
    )
    refused(
        lambda: services.table_session_staff_change(
            session=session_2, by=commissario, changeur=changeur, reason="relief"
        ),
        "changeur_busy",
    )
    # Closed, his table frees him.
    services.table_session_close(session=table_session, by=commissario)
    services.table_session_staff_change(session=session_2, by=commissario, changeur=changeur, reason="relief")
    session_2.refresh_from_db()
    assert session_2.changeur == changeur


def test_a_reason_is_kept_as_plain_text(table_session, commissario, relief):
    """A bell or a terminal's escape sequence never reaches the registers and exports."""
    services.table_session_staff_change(
        session=table_session, by=commissario, capo_partita=relief, reason="a\u0007\u001b[31mb\tc"
    )
    assert StaffChange.objects.get().reason == "a[31mb c"


def test_a_reason_cannot_reverse_what_follows_it(table_session, commissario, relief):
    """A bidirectional override ("Trojan source") would show the rest reversed on every page
    and register; the plain direction marks stay (an Arabic or Hebrew reason needs them)."""
    reason = "\u202eesuaceb\u202c \u2066x\u2069 \u200fok\u200e"
    services.table_session_staff_change(session=table_session, by=commissario, capo_partita=relief, reason=reason)
    assert StaffChange.objects.get().reason == "esuaceb x \u200fok\u200e"
