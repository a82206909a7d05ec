"""A suspension ordered by the Direzione Giochi is lifted by the Direzione alone (RULES.md §6:
"Management may suspend play at any moment; disputes go to the Direzione Giochi, whose
decision is final"). QA: a Commissario resumed a table the Direzione had suspended, overriding
management. Each interruption now records the capacity it was ordered in (`interrupted_as`);
a user holding both supervising roles acts as the Direzione."""

from __future__ import annotations

import pytest

from audit.models import AuditEvent
from config.errors import NotAllowed
from floor import services
from floor.models import SessionInterruption
from floor.roles import Role

from .conftest import dump

pytestmark = pytest.mark.django_db


@pytest.fixture
def director_commissario(make_user):
    """The director on duty who also runs the floor (the two roles are compatible)."""
    return make_user("direttore_di_sala", Role.COMMISSARIO, Role.DIREZIONE)


@pytest.fixture
def second_commissario(make_user):
    return make_user("commissario_2", Role.COMMISSARIO)


def interrupt(api_client_for, user, session, reason="disputa al tavolo"):
    response = api_client_for(user).post(f"/api/sessions/{session.pk}/interrupt/", {"reason": reason}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def resume(api_client_for, user, session):
    return api_client_for(user).post(f"/api/sessions/{session.pk}/resume/", {"reason": "ripresa"}, format="json")


def running(body: dict) -> dict:
    (interruption,) = [i for i in body["interruptions"] if i["resumed_at"] is None]
    return interruption


@pytest.mark.parametrize(
    ("who", "capacity"),
    [("commissario", "commissario"), ("direzione", "direzione"), ("director_commissario", "direzione")],
)
def test_the_interruption_records_its_capacity_in_the_row_the_api_and_the_event(
    request, world, api_client_for, who, capacity
):
    user = request.getfixturevalue(who)
    body = interrupt(api_client_for, user, world.session)
    assert running(body)["interrupted_as"] == capacity
    assert running(body)["interrupted_by"]["id"] == user.pk
    row = SessionInterruption.objects.get(session=world.session)
    assert row.interrupted_as == capacity
    event = AuditEvent.objects.filter(action="table_session.interrupted", stream__name=world.session.audit_stream)
    assert event.get().payload["interrupted_as"] == capacity
    # the session's detail says it too, for as long as the interruption is on record
    detail = api_client_for(user).get(f"/api/sessions/{world.session.pk}/").json()
    assert running(detail)["interrupted_as"] == capacity


@pytest.mark.parametrize("commissario_only", ["commissario", "second_commissario"])
def test_a_commissario_may_not_lift_a_suspension_the_direzione_ordered(
    request, world, api_client_for, direzione, commissario_only
):
    interrupt(api_client_for, direzione, world.session)
    before = dump()
    refused = resume(api_client_for, request.getfixturevalue(commissario_only), world.session)
    assert refused.status_code == 403, refused.content
    error = refused.json()["error"]
    assert error["code"] == "suspended_by_direzione"
    assert error["details"]["session"] == world.session.pk
    assert dump() == before, "a refused resumption writes nothing, not even an event"
    world.session.refresh_from_db()
    assert world.session.status == "interrupted"
    # the Direzione lifts it
    answered = resume(api_client_for, direzione, world.session)
    assert answered.status_code == 200, answered.content
    assert answered.json()["status"] == "open"
    event = AuditEvent.objects.filter(action="table_session.resumed", stream__name=world.session.audit_stream).get()
    assert event.actor_id == direzione.pk and event.payload["interrupted_as"] == "direzione"


def test_the_dual_role_user_acts_as_the_direzione(
    world, api_client_for, commissario, direzione, director_commissario
):
    """His suspension is the Direzione's (a Commissario cannot lift it, another Direzione can);
    and he lifts any Direzione's suspension, as the Direzione does."""
    interrupt(api_client_for, director_commissario, world.session)
    before = dump()
    assert resume(api_client_for, commissario, world.session).status_code == 403
    assert dump() == before
    assert resume(api_client_for, direzione, world.session).status_code == 200

    interrupt(api_client_for, direzione, world.session, reason="seconda disputa")
    answered = resume(api_client_for, director_commissario, world.session)
    assert answered.status_code == 200, answered.content
    assert answered.json()["status"] == "open"


@pytest.mark.parametrize("resumer", ["commissario", "second_commissario", "direzione", "director_commissario"])
def test_a_commissario_suspension_is_lifted_by_any_commissario_or_the_direzione(
    request, world, api_client_for, resumer
):
    """world.interrupted was interrupted by the Commissario: unchanged, whoever of the floor's
    supervisors lifts it."""
    assert world.interrupted.interruptions.get().interrupted_as == "commissario"
    answered = resume(api_client_for, request.getfixturevalue(resumer), world.interrupted)
    assert answered.status_code == 200, answered.content
    assert answered.json()["status"] == "open"


def test_the_service_refuses_whoever_calls_it(world, commissario, direzione):
    """The rule is the service's: the pages and the commands call it too."""
    services.table_session_interrupt(session=world.session, by=direzione, reason="disputa")
    events = AuditEvent.objects.count()
    with pytest.raises(NotAllowed) as refused:
        services.table_session_resume(session=world.session, by=commissario)
    assert refused.value.code == "suspended_by_direzione" and refused.value.status_code == 403
    assert AuditEvent.objects.count() == events
    assert SessionInterruption.objects.get(session=world.session).resumed_at is None


def test_closing_the_session_still_ends_a_direzione_suspension_with_it(world, commissario, direzione):
    """Closing the session (the Commissario's) is not a resumption: play does not go on, and the
    running interruption ends with the session as before, whoever ordered it."""
    services.table_session_interrupt(session=world.session, by=direzione, reason="disputa")
    closed = services.table_session_close(session=world.session, by=commissario)
    assert closed.status == "closed"
    interruption = SessionInterruption.objects.get(session=world.session)
    assert interruption.resume_reason == "session closed" and interruption.interrupted_as == "direzione"


def test_the_migration_gives_the_interruptions_on_record_their_interrupter_s_capacity(
    world, commissario, direzione, director_commissario
):
    """floor 0011: the rows recorded before the capacity was (added as the Commissario's) are
    the Direzione's when the one who ordered them holds the Direzione role: a suspension the
    Direzione ordered, running at the upgrade, stays his to lift."""
    from importlib import import_module

    from django.apps import apps

    migration = import_module("floor.migrations.0011_interruption_capacity")
    services.table_session_interrupt(session=world.session, by=direzione, reason="disputa")
    services.table_session_resume(session=world.session, by=direzione)
    services.table_session_interrupt(session=world.session, by=director_commissario, reason="disputa")
    # world.interrupted: the Commissario's, running
    SessionInterruption.objects.update(interrupted_as="commissario")  # as the AddField left them

    migration.capacity_from_roles(apps, None)

    by_user = dict(SessionInterruption.objects.values_list("interrupted_by__username", "interrupted_as"))
    assert by_user == {"commissario": "commissario", "direzione": "direzione", "direttore_di_sala": "direzione"}
    with pytest.raises(NotAllowed) as refused:
        services.table_session_resume(session=world.session, by=commissario)
    assert refused.value.code == "suspended_by_direzione"
