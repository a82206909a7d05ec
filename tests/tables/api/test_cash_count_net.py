"""A count's `net` is the register's, held by the database (tables migration 0018, a PostgreSQL
row trigger): every count the service writes passes (the final count and its corrections, early
or late, a handover's and its corrections, voided lines left out as they stand when counted, a
line at the very time of the relief counted as the outgoing changeur's); a row written behind the
service with another net, by an INSERT or an UPDATE in SQL, is refused; and the service does not
take that refusal for `already_counted`."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from audit.models import AuditEvent
from floor import services as floor_services
from floor.roles import Role
from tables import services
from tables.models import CashCount, CashExchange

from .conftest import Tablet
from .test_cash_count import _close_day, events, register, url
from .test_cash_count import closed as closed  # the fixtures
from .test_cash_count import game as game
from .test_cash_count_handover import relieve

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="the guard is a PostgreSQL trigger (the SQLite demo has the "
                                                   "service's rule only)"),
]  # fmt: skip

TABLE = CashCount._meta.db_table
CONSTRAINT = "tables_cash_count_net_of_register"


def refused_in_sql(sql: str, params: list) -> IntegrityError:
    """The statement is refused by the net's trigger (a savepoint: the test goes on)."""
    with pytest.raises(IntegrityError) as caught, transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)
    error = caught.value
    assert "is not the register's net" in str(error)
    assert (error.__cause__.sqlstate, error.__cause__.diag.constraint_name) == ("23514", CONSTRAINT)
    return error


def insert_sql(count: CashCount, *, net: int, corrects: CashCount | None = None, staff_change=None) -> tuple:
    """A row as the service writes one, of `count`'s session, with `net` given (expected adding up)."""
    return (
        f"INSERT INTO {TABLE} (session_id, staff_change_id, float_issued, net, expected, counted, counted_by_id,"
        " counted_at, note, corrects_id) VALUES (%s, %s, 0, %s, %s, 1, %s, %s, 'in SQL', %s)",
        [count.session_id, staff_change, net, net, count.counted_by_id, timezone.now(),
         None if corrects is None else corrects.pk],
    )  # fmt: skip


def insert(count: CashCount, **kwargs) -> None:
    with connection.cursor() as cursor:
        cursor.execute(*insert_sql(count, **kwargs))


def refused_insert(count: CashCount, **kwargs) -> None:
    refused_in_sql(*insert_sql(count, **kwargs))


def set_net(count: CashCount, net: int) -> tuple[str, list]:
    # expected moves with it (the CHECK tables_cash_count_expected_adds_up): only the trigger refuses.
    return f"UPDATE {TABLE} SET net = %s, expected = float_issued + %s WHERE id = %s", [net, net, count.pk]


# --------------------------------------------------------------------------- the final count


@pytest.mark.parametrize("late", [False, True], ids=["day_open", "after_the_close"])
def test_the_final_count_and_its_corrections_pass_and_another_net_is_refused(closed, commissario, direzione, late):
    """The register nets 750.00 with a buy-in of 90.00 voided (tests.tables.api.test_cash_count.
    register): the service's count and correction pass, the day open or closed (a late count);
    a row in SQL with the voided line in it, or a cent off, is refused; with the register's net,
    a correction written in SQL passes too."""
    if late:
        _close_day(closed, commissario)
    first = services.cash_count_record(session=closed.session, by=commissario, float_issued=100_00, counted=850_00)
    second = services.cash_count_correct(count=first, by=direzione, counted=849_00, chips_float=2_000_00,
                                         chips_counted=1_250_00, reason="a note stuck to another")  # fmt: skip
    assert (first.net, second.net, second.chips_expected) == (750_00, 750_00, 1_250_00)
    for net in (750_00 + 90_00, 750_00 + 1, 750_00 - 1, 0, -750_00):
        refused_insert(second, net=net, corrects=second)
        refused_in_sql(*set_net(second, net))
    second.refresh_from_db()
    assert (second.net, second.expected) == (750_00, 850_00)
    insert(second, net=750_00, corrects=second)  # the rule's own row
    # An UPDATE that leaves the net as it stands is not held again (a note's, a whole row saved).
    second.note = "recounted"
    second.save()


def test_an_update_of_the_net_with_the_checks_made_to_add_up_is_refused_the_chips_too(closed, commissario):
    count = services.cash_count_record(session=closed.session, by=commissario, float_issued=0, counted=750_00,
                                       chips_float=1_000_00, chips_counted=250_00)  # fmt: skip
    refused_in_sql(f"UPDATE {TABLE} SET net = 0, expected = float_issued, chips_expected = chips_float "
                   "WHERE id = %s", [count.pk])  # fmt: skip
    count.refresh_from_db()
    assert (count.net, count.expected, count.chips_expected, count.difference) == (750_00, 750_00, 250_00, 0)


# --------------------------------------------------------------------------- a changeur's handover


@pytest.fixture
def at_the_relief(game, changeur, commissario, relief):
    """The first changeur's register (net 750.00, a buy-in of 90.00 voided); he is relieved, and
    his buy-in of 300.00 stands at the very time of the relief (the same microsecond: a line at
    the change's time is his, `at <= staff_change.at`); his successor takes a buy-in of 100.00
    after it (the session's net: 850.00)."""
    register(game, changeur)
    change = relieve(game, commissario, relief)
    line = CashExchange.objects.get(session=game.session, direction="buy_in", amount=300_00)
    CashExchange.objects.filter(pk=line.pk).update(at=change.at)
    services.cash_exchange_record(session=game.session, by=relief, direction="buy_in", amount=100_00)
    assert CashExchange.objects.filter(session=game.session, at__gt=change.at).count() == 1
    game.change, game.line = change, line
    return game


@pytest.fixture
def relief(make_user):
    return make_user("changeur_relief", Role.CHANGEUR)


def test_a_handover_count_takes_a_line_at_the_very_time_of_the_relief(at_the_relief, commissario, direzione):
    game, change = at_the_relief, at_the_relief.change
    count = services.cash_count_record(session=game.session, by=commissario, float_issued=0, counted=750_00,
                                       staff_change=change)  # fmt: skip
    assert count.net == 750_00
    # Without the line at the relief's time, or with the successor's line: not the register's.
    for net in (750_00 - 300_00, 850_00, 750_00 + 90_00):
        refused_insert(count, net=net, corrects=count, staff_change=change.pk)
        refused_in_sql(*set_net(count, net))
    # The final count, once closed, is the whole session's: the handover's net is not its.
    floor_services.table_session_close(session=game.session, by=commissario)
    refused_in_sql(f"UPDATE {TABLE} SET staff_change_id = NULL WHERE id = %s", [count.pk])
    # Moved with the net of where it goes, the database takes it (the verification names it), and back.
    move = f"UPDATE {TABLE} SET staff_change_id = %s, net = %s, expected = float_issued + %s WHERE id = %s"
    with connection.cursor() as cursor:
        cursor.execute(move, [None, 850_00, 850_00, count.pk])
        cursor.execute(move, [change.pk, 750_00, 750_00, count.pk])
    final = services.cash_count_record(session=game.session, by=direzione, float_issued=0, counted=850_00)
    assert final.net == 850_00
    refused_in_sql(f"UPDATE {TABLE} SET staff_change_id = %s WHERE id = %s", [change.pk, final.pk])


def test_a_counted_handover_keeps_its_time_the_cutoff_of_its_count(at_the_relief, commissario):
    """Moving a staff change's time would move its count's cutoff under it (the successor's line
    would become the relieved changeur's): once its handover is counted the database refuses it;
    before, nothing holds it there (no count depends on it)."""
    from floor.models import StaffChange

    game, change = at_the_relief, at_the_relief.change
    later = change.at + timezone.timedelta(hours=1)
    staff = StaffChange._meta.db_table
    with transaction.atomic(), connection.cursor() as cursor:  # not counted yet: taken (and undone)
        cursor.execute(f"UPDATE {staff} SET at = %s WHERE id = %s", [later, change.pk])
        transaction.set_rollback(True)
    services.cash_count_record(session=game.session, by=commissario, float_issued=0, counted=750_00,
                               staff_change=change)  # fmt: skip
    with pytest.raises(IntegrityError) as caught, transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"UPDATE {staff} SET at = %s WHERE id = %s", [later, change.pk])
    assert "its handover is counted" in str(caught.value)
    assert (caught.value.__cause__.sqlstate, caught.value.__cause__.diag.constraint_name) == ("23514", CONSTRAINT)
    with connection.cursor() as cursor:  # another column of it stays writable (only the time is held)
        cursor.execute(f"UPDATE {staff} SET at = at WHERE id = %s", [change.pk])
    assert StaffChange.objects.get(pk=change.pk).at == change.at


def test_a_line_voided_after_a_handover_count_leaves_it_and_its_correction_takes_the_void(
    at_the_relief, commissario, direzione
):
    """The session still running, a line of the outgoing changeur voided after his drawer was
    counted: the count stands as counted (its note still editable: the trigger does not read it
    again), and its correction, computed then, leaves the voided line out, as the trigger does."""
    game, change = at_the_relief, at_the_relief.change
    count = services.cash_count_record(session=game.session, by=commissario, float_issued=0, counted=750_00,
                                       staff_change=change)  # fmt: skip
    services.cash_exchange_void(exchange=game.line, by=commissario, reason="recorded at the wrong table")
    CashCount.objects.filter(pk=count.pk).update(note="slip 4")
    count.refresh_from_db()
    count.save()  # every column written back, the net as it was: not held again
    assert CashCount.objects.get(pk=count.pk).net == 750_00
    new = services.cash_count_correct(count=count, by=direzione, counted=451_00, reason="the void")
    assert (new.net, new.expected, new.difference) == (450_00, 450_00, 1_00)
    refused_insert(new, net=750_00, corrects=new, staff_change=change.pk)  # the void as it stood before
    refused_in_sql(*set_net(new, 750_00))


# --------------------------------------------------------------------------- the service's answer


def test_a_net_the_register_does_not_say_is_refused_under_the_service_and_not_called_already_counted(
    closed, commissario, monkeypatch
):
    """Were the service to compute another net (a bug), the database refuses the count: the API
    answers 409 `conflict` naming the constraint, not `already_counted`, and nothing is written."""
    from tables.services import cash_count

    real = cash_count._net
    monkeypatch.setattr(cash_count, "_net", lambda session, change=None: real(session, change) + 1)
    events_before = AuditEvent.objects.count()
    r = Tablet(commissario).post(url(closed), {"float_issued": 0, "counted": 750_00})
    assert r.status_code == 409, r.json()
    assert r.json()["error"]["code"] == "conflict"
    assert r.json()["error"]["details"] == {"constraint": CONSTRAINT}
    assert not CashCount.objects.exists() and AuditEvent.objects.count() == events_before
    assert events(closed, "cash.drawer_counted") == []
