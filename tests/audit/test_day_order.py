"""The control register of a day is entered, with its two signatures, before the next day
starts (RULES.md §8, art. 72): floor's gaming_day_open asks audit (floor/hooks.py)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from audit.models import AuditEvent
from audit.reports import registers
from config.errors import Conflict
from floor import services
from floor.hooks import run_before_gaming_day_open
from floor.models import GamingDay
from floor.roles import Role
from tests.tables.conftest import make_game  # noqa: F401  (fixture re-exported)

pytestmark = pytest.mark.django_db


@pytest.fixture
def closed_day(casino, commissario):
    today = timezone.localdate()
    day = services.gaming_day_open(casino=casino, by=commissario, date=today - dt.timedelta(1))
    services.gaming_day_close(gaming_day=day, by=commissario)
    return day


def _open_next(casino, commissario):
    return services.gaming_day_open(casino=casino, by=commissario, date=timezone.localdate())


def test_the_audit_hook_is_registered_once():
    from floor.hooks import _before_gaming_day_open

    assert _before_gaming_day_open.count(registers.before_gaming_day_open) == 1


def test_the_next_day_waits_for_the_signed_register(casino, commissario, closed_day, direzione, make_user):
    second = make_user("direzione_two", Role.DIREZIONE)
    events = AuditEvent.objects.count()
    with pytest.raises(Conflict) as refused:
        _open_next(casino, commissario)
    assert refused.value.code == "control_register_not_signed"
    assert refused.value.details == {"gaming_day": closed_day.pk, "date": closed_day.date.isoformat(),
                                     "register": None, "status": "missing"}  # fmt: skip
    reg = registers.control_register_prepare(gaming_day=closed_day, by=direzione)  # no table played: 0.00
    registers.control_register_sign(register=reg, by=direzione)
    with pytest.raises(Conflict) as refused:
        _open_next(casino, commissario)
    assert refused.value.details["status"] == "first_signed"
    assert GamingDay.objects.filter(casino=casino).count() == 1
    registers.control_register_sign(register=reg, by=second)
    assert AuditEvent.objects.count() == events + 3  # prepared, signed twice; the refusals wrote nothing
    day = _open_next(casino, commissario)
    assert day.is_open
    event = AuditEvent.objects.filter(action="gaming_day.opened").latest("pk")
    assert "checks" not in event.payload


def test_a_signed_register_behind_its_counts_holds_the_next_day(make_game,  # noqa: F811
                                                                  commissario, direzione, make_user,
                                                                  django_capture_on_commit_callbacks):  # fmt: skip
    from tables import services as table_services

    game = make_game("venezia")
    table_services.coup_record(session=game.session, by=game.capo, cards=["KH", "5S", "3C", "2D", "2S"],
                               punta_draws=True, bets=[{"patron": game.seat(2), "amount": 100_00}])  # fmt: skip
    day = game.session.gaming_day
    with django_capture_on_commit_callbacks(execute=False):
        services.gaming_day_close(gaming_day=day, by=commissario, open_sessions="close")
    second = make_user("direzione_two", Role.DIREZIONE)
    count = registers.cagnotte_count_record(gaming_day=day, table=game.session.table, by=direzione,
                                            witness=second, counted=5_00)  # fmt: skip
    reg = registers.control_register_prepare(gaming_day=day, by=direzione)
    registers.control_register_sign(register=reg, by=direzione)
    registers.control_register_sign(register=reg, by=second)
    registers.cagnotte_count_correct(count=count, by=direzione, witness=second, counted=6_00, note="recount")
    with pytest.raises(Conflict) as refused:
        services.gaming_day_open(casino=day.casino, by=commissario, date=day.date + dt.timedelta(1))
    assert refused.value.details["status"] == "stale"
    new = registers.control_register_correct(register=reg, by=direzione, reason="box recounted")
    registers.control_register_sign(register=new, by=direzione)
    registers.control_register_sign(register=new, by=second)
    assert services.gaming_day_open(casino=day.casino, by=commissario, date=day.date + dt.timedelta(1)).is_open


def test_record_opens_and_says_which_register_was_unsigned(casino, commissario, closed_day, settings):
    settings.GAMING_DAY_OPEN_UNSIGNED_REGISTER = "record"
    day = _open_next(casino, commissario)
    event = AuditEvent.objects.filter(action="gaming_day.opened").latest("pk")
    assert event.subject_id == str(day.pk)
    assert event.payload["checks"] == {"unsigned_register": {
        "gaming_day": closed_day.pk, "date": closed_day.date.isoformat(), "register": None, "status": "missing"}}


def test_the_first_day_of_a_casino_has_nothing_to_wait_for(casino, commissario):
    assert run_before_gaming_day_open(casino=casino, date=timezone.localdate(), by=commissario) == {}


def test_the_api_answers_409_with_the_code(casino, commissario, closed_day, api_client_for):
    r = api_client_for(commissario).post(
        "/api/gaming-days/", {"casino": casino.pk, "date": timezone.localdate().isoformat()}, format="json",
        HTTP_IDEMPOTENCY_KEY="open-next",
    )  # fmt: skip
    assert r.status_code == 409 and r.json()["error"]["code"] == "control_register_not_signed", r.json()


def test_a_second_signature_written_in_sql_does_not_open_the_next_day(casino, commissario, closed_day, direzione,
                                                                      make_user):  # fmt: skip
    # The register read as signed, but the trail recorded one signature: the next day waits
    # for a real one (the opening's check replays the day's registers, as a signature does).
    from audit.models import ControlRegister

    second = make_user("direzione_two", Role.DIREZIONE)
    reg = registers.control_register_prepare(gaming_day=closed_day, by=direzione)
    registers.control_register_sign(register=reg, by=direzione)
    ControlRegister.objects.filter(pk=reg.pk).update(second_signer=second, second_signed_at=timezone.now())
    reg.refresh_from_db()
    assert reg.signed
    events = AuditEvent.objects.count()
    with pytest.raises(Conflict) as refused:
        _open_next(casino, commissario)
    assert refused.value.code == "control_register_not_signed"
    assert refused.value.details["status"] == "not_as_recorded" and refused.value.details["register"] == reg.pk
    assert AuditEvent.objects.count() == events and GamingDay.objects.filter(casino=casino).count() == 1
