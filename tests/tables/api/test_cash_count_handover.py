"""The changeur's drawer counted at his handover (tables.services.cash_count, tables/api/cash.py):
a relieved changeur's drawer is counted against the register's lines up to the relief, by the
Commissario or the Direzione, while the session runs or once closed, corrected as the final count;
the final count stays the whole session's, and the part of its difference since the handover is
derived; every refusal writes nothing."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from audit.models import AuditEvent
from floor import services as floor_services
from floor.models import StaffChange
from floor.roles import Role
from tables import services
from tables.models import CashCount
from tables.report_selectors import cash_count_payload

from .conftest import Tablet
from .test_cash_count import _close_day, _sign_the_register, books_events, correct_url, events, register, url
from .test_cash_count import game as game  # the fixture

pytestmark = pytest.mark.django_db


@pytest.fixture
def relief(make_user):
    return make_user("changeur_relief", Role.CHANGEUR)


def relieve(game, commissario, changeur) -> StaffChange:
    floor_services.table_session_staff_change(session=game.session, by=commissario, changeur=changeur, reason="break")
    return StaffChange.objects.filter(session=game.session).latest("at", "pk")


@pytest.fixture
def relieved(game, changeur, commissario, relief):
    """The first changeur's register nets 750.00 (tests.tables.api.test_cash_count.register); he
    is relieved; his successor takes a buy-in of 100.00 (the session's net: 850.00)."""
    register(game, changeur)
    change = relieve(game, commissario, relief)
    r = Tablet(relief).post(f"/api/sessions/{game.session.pk}/cash-exchanges/", {"direction": "buy_in",
                                                                                  "amount": 100_00})  # fmt: skip
    assert r.status_code == 201, r.json()
    game.change = change
    return game


def body(change, **figures) -> dict:
    return {"float_issued": 2_000_00, "counted": 2_745_00, "staff_change": change.pk, **figures}


# --------------------------------------------------------------------------- the happy path


def test_a_handover_count_holds_the_lines_up_to_the_relief_while_the_session_runs(relieved, commissario, changeur):
    r = Tablet(commissario).post(url(relieved), body(relieved.change, note="handover slip"))
    assert r.status_code == 201, r.json()
    answer = r.json()
    assert answer["in_force"] is None  # the session's final count: not yet
    [count] = answer["handovers"]
    assert answer["history"] == [count]
    row = CashCount.objects.get()
    # The successor's buy-in of 100.00, after the relief, is not in it: net 750.00, not 850.00.
    assert (row.staff_change_id, row.net, row.expected, row.counted, row.difference) == (
        relieved.change.pk, 750_00, 2_750_00, 2_745_00, -5_00
    )  # fmt: skip
    assert {k: count[k] for k in ("id", "staff_change", "outgoing_changeur", "net", "difference", "since_handover",
                                  "since_staff_change", "in_force")} == {
        "id": row.pk, "staff_change": relieved.change.pk, "outgoing_changeur": changeur.pk, "net": 750_00,
        "difference": -5_00, "since_handover": None, "since_staff_change": None, "in_force": True}  # fmt: skip
    assert count["handover_at"] is not None
    # Its event, in the session's stream (the day open), names the staff change.
    [said] = events(relieved, "cash.drawer_counted")
    assert said == {"old": None, "new": cash_count_payload(row)}
    assert said["new"]["staff_change"] == relieved.change.pk


def test_the_cutoff_is_the_handovers_time_and_voids_stand_as_of_the_count(relieved, commissario):
    """A line the first changeur recorded, voided by the Commissario after the relief, is left
    out as of the count (as the totals leave it out)."""
    first = relieved.session.cash_exchanges.get(number=1)  # a buy-in of 700.00
    services.cash_exchange_void(exchange=first, by=commissario, reason="counterfeit")
    count = services.cash_count_record(session=relieved.session, by=commissario, float_issued=0, counted=50_00,
                                       staff_change=relieved.change)  # fmt: skip
    assert (count.net, count.difference) == (50_00, 0)


def test_a_handover_count_is_corrected_with_the_same_cutoff(relieved, commissario, direzione, refused_api):
    first = services.cash_count_record(session=relieved.session, by=commissario, float_issued=2_000_00,
                                       counted=2_745_00, staff_change=relieved.change.pk)  # fmt: skip
    r = Tablet(direzione).post(correct_url(first.pk), {"counted": 2_750_00, "reason": "a 5 under the tray"})
    assert r.status_code == 201, r.json()
    second = CashCount.objects.get(corrects=first)
    assert (second.staff_change_id, second.net, second.difference) == (relieved.change.pk, 750_00, 0)
    answer = r.json()
    assert answer["in_force"] is None
    assert [h["id"] for h in answer["handovers"]] == [second.pk]
    assert [(h["id"], h["in_force"]) for h in answer["history"]] == [(first.pk, False), (second.pk, True)]
    [said] = events(relieved, "cash.drawer_count_corrected")
    assert said == {"old": cash_count_payload(first), "new": cash_count_payload(second),
                    "reason": "a 5 under the tray"}  # fmt: skip
    error = refused_api(409, "already_corrected", lambda: Tablet(commissario).post(
        correct_url(first.pk), {"counted": 1, "reason": "x"}))  # fmt: skip
    assert (error["details"]["correction"], error["details"]["in_force"]) == (second.pk, second.pk)


def test_the_chips_part_since_the_handover_is_derived_as_the_cash_s(relieved, commissario):
    """A tray 10.00 short at the handover and as short at the end: the successor's tray is exact
    (chips_since_handover 0), not 10.00 short. None where either count left the chips out."""
    services.cash_count_record(session=relieved.session, by=commissario, float_issued=2_000_00, counted=2_750_00,
                               chips_float=3_000_00, chips_counted=2_240_00, staff_change=relieved.change)  # fmt: skip
    floor_services.table_session_close(session=relieved.session, by=commissario)
    # The whole session's net 850.00: the tray should hold 2,150.00; 2,140.00 is 10.00 short.
    r = Tablet(commissario).post(url(relieved), {"float_issued": 2_000_00, "counted": 2_850_00,
                                                 "chips_float": 3_000_00, "chips_counted": 2_140_00})  # fmt: skip
    assert r.status_code == 201, r.json()
    final, [handover] = r.json()["in_force"], r.json()["handovers"]
    assert (final["chips_difference"], final["chips_since_handover"]) == (-10_00, 0)
    assert (handover["chips_difference"], handover["chips_since_handover"]) == (-10_00, None)
    # The final count's tray corrected to 2,150.00 (exact in all): the successor's part is +10.00.
    r = Tablet(commissario).post(correct_url(final["id"]), {"chips_counted": 2_150_00, "reason": "a plaque"})
    assert r.status_code == 201, r.json()
    assert r.json()["in_force"]["chips_since_handover"] == 10_00


def test_no_chips_part_since_the_handover_when_the_handover_left_the_chips_out(relieved, commissario):
    services.cash_count_record(session=relieved.session, by=commissario, float_issued=2_000_00, counted=2_750_00,
                               staff_change=relieved.change)  # fmt: skip
    floor_services.table_session_close(session=relieved.session, by=commissario)
    r = Tablet(commissario).post(url(relieved), {"float_issued": 2_000_00, "counted": 2_850_00,
                                                 "chips_float": 3_000_00, "chips_counted": 2_140_00})  # fmt: skip
    assert r.status_code == 201, r.json()
    final = r.json()["in_force"]
    assert (final["since_handover"], final["chips_difference"], final["chips_since_handover"]) == (0, -10_00, None)


def test_already_counted_per_handover_and_each_handover_and_the_final_count_apart(
    relieved, commissario, direzione, make_user, refused_api
):
    first = services.cash_count_record(session=relieved.session, by=commissario, float_issued=2_000_00,
                                       counted=2_745_00, staff_change=relieved.change)  # fmt: skip
    error = refused_api(409, "already_counted",
                        lambda: Tablet(direzione).post(url(relieved), body(relieved.change, counted=1)))  # fmt: skip
    assert (error["details"]["in_force"], error["details"]["staff_change"]) == (first.pk, relieved.change.pk)
    # A second relief: the successor's drawer, counted at his own handover (net 850.00 by then).
    third = make_user("changeur_three", Role.CHANGEUR)
    second_change = relieve(relieved, commissario, third)
    second = services.cash_count_record(session=relieved.session, by=direzione, float_issued=2_000_00,
                                        counted=2_840_00, staff_change=second_change)  # fmt: skip
    assert (second.net, second.difference) == (850_00, -10_00)
    # The session closes, still another buy-in by the third changeur; its final count is the whole drawer.
    Tablet(third).post(f"/api/sessions/{relieved.session.pk}/cash-exchanges/", {"direction": "buy_in",
                                                                                "amount": 50_00})  # fmt: skip
    floor_services.table_session_close(session=relieved.session, by=commissario)
    r = Tablet(commissario).post(url(relieved), {"float_issued": 2_000_00, "counted": 2_890_00})
    assert r.status_code == 201, r.json()
    answer = r.json()
    final = answer["in_force"]
    assert (final["staff_change"], final["net"], final["difference"]) == (None, 900_00, -10_00)
    # The part since the last handover counted: -10.00 less its -10.00, none; the second
    # changeur's, since the first handover: -10.00 less -5.00.
    assert (final["since_staff_change"], final["since_handover"]) == (second_change.pk, 0)
    assert [(h["id"], h["since_staff_change"], h["since_handover"]) for h in answer["handovers"]] == [
        (first.pk, None, None), (second.pk, relieved.change.pk, -5_00)
    ]  # fmt: skip
    assert len(answer["history"]) == 3
    refused_api(409, "already_counted",
                lambda: Tablet(commissario).post(url(relieved), {"float_issued": 0, "counted": 1}))  # fmt: skip
    assert CashCount.objects.count() == 3


def test_the_final_count_keeps_its_rules_a_handover_does_not_open_it(relieved, commissario, refused_api):
    error = refused_api(409, "session_not_closed",
                        lambda: Tablet(commissario).post(url(relieved), {"float_issued": 0, "counted": 0}))  # fmt: skip
    assert error["details"]["status"] == "open"


def test_a_handover_is_counted_after_the_session_closed_too(relieved, commissario):
    floor_services.table_session_close(session=relieved.session, by=commissario)
    count = services.cash_count_record(session=relieved.session, by=commissario, float_issued=0, counted=750_00,
                                       staff_change=relieved.change)  # fmt: skip
    assert (count.net, count.difference) == (750_00, 0)
    assert len(events(relieved, "cash.drawer_counted")) == 1


def test_the_database_holds_one_original_count_per_handover(relieved, commissario):
    services.cash_count_record(session=relieved.session, by=commissario, float_issued=0, counted=1,
                               staff_change=relieved.change)  # fmt: skip
    with pytest.raises(IntegrityError), transaction.atomic():
        CashCount.objects.create(session=relieved.session, staff_change=relieved.change, float_issued=0, net=750_00,
                                 expected=750_00, counted=1, counted_by=commissario,
                                 counted_at=timezone.now())  # fmt: skip
    # The final count is another drawer: the database takes it beside the handover's.
    CashCount.objects.create(session=relieved.session, float_issued=0, net=850_00, expected=850_00, counted=1,
                             counted_by=commissario, counted_at=timezone.now())  # fmt: skip


def test_the_database_holds_a_count_s_staff_change_to_its_session(relieved, make_game, commissario, make_user):
    """Behind the service (tables migration 0017, a row trigger): a count whose staff change is
    another session's is not written, by an INSERT nor an UPDATE in SQL, and a counted staff
    change does not move to another session."""
    if connection.vendor != "postgresql":
        pytest.skip("the guard is a PostgreSQL trigger (the SQLite demo has the service's rule only)")
    other = make_game("venezia")
    elsewhere = relieve(other, commissario, make_user("changeur_other", Role.CHANGEUR))
    with pytest.raises(IntegrityError, match="is not of session"), transaction.atomic():
        CashCount.objects.create(session=relieved.session, staff_change=elsewhere, float_issued=0, net=0, expected=0,
                                 counted=1, counted_by=commissario, counted_at=timezone.now())  # fmt: skip
    count = services.cash_count_record(session=relieved.session, by=commissario, float_issued=0, counted=1,
                                       staff_change=relieved.change)  # fmt: skip
    final = CashCount.objects.create(session=other.session, float_issued=0, net=0, expected=0, counted=0,
                                     counted_by=commissario, counted_at=timezone.now())  # fmt: skip
    table = CashCount._meta.db_table
    for sql, params in (
        (f"UPDATE {table} SET session_id = %s WHERE id = %s", [other.session.pk, count.pk]),
        (f"UPDATE {table} SET staff_change_id = %s WHERE id = %s", [elsewhere.pk, count.pk]),
        (f"UPDATE {table} SET staff_change_id = %s WHERE id = %s", [relieved.change.pk, final.pk]),
        (f"UPDATE {StaffChange._meta.db_table} SET session_id = %s WHERE id = %s", [other.session.pk,
                                                                                    relieved.change.pk]),
    ):  # fmt: skip
        with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, params)
    count.refresh_from_db()
    assert (count.session_id, count.staff_change_id) == (relieved.session.pk, relieved.change.pk)
    assert CashCount.objects.get(pk=final.pk).staff_change_id is None
    # The rule's own rows pass: its session's staff change, and the final count's none.
    CashCount.objects.filter(pk=count.pk).update(note="recounted by the Direzione")
    CashCount.objects.create(session=other.session, staff_change=elsewhere, float_issued=0, net=0, expected=0,
                             counted=0, counted_by=commissario, counted_at=timezone.now())  # fmt: skip


# --------------------------------------------------------------------------- refusals


def test_an_unknown_or_another_sessions_staff_change_is_refused(
    relieved, make_game, commissario, make_user, refused_api, refused
):
    other = make_game("venezia")
    elsewhere = relieve(other, commissario, make_user("changeur_other", Role.CHANGEUR))
    for change_id in (elsewhere.pk, 999_999_999):
        error = refused_api(400, "unknown_staff_change", lambda change_id=change_id: Tablet(commissario).post(
            url(relieved), {"float_issued": 0, "counted": 1, "staff_change": change_id}))  # fmt: skip
        assert error["details"] == {"staff_change": change_id, "session": relieved.session.pk}
    for bad in (True, "3", 4.0):
        refused("unknown_staff_change", services.cash_count_record, session=relieved.session, by=commissario,
                float_issued=0, counted=1, staff_change=bad)  # fmt: skip
    assert CashCount.objects.count() == 0


def test_a_staff_change_that_kept_the_changeur_is_refused(relieved, commissario, make_user, refused_api):
    capo_only = StaffChange.objects.get(pk=relieve_capo(relieved, commissario, make_user).pk)
    error = refused_api(400, "changeur_not_changed", lambda: Tablet(commissario).post(
        url(relieved), {"float_issued": 0, "counted": 1, "staff_change": capo_only.pk}))  # fmt: skip
    assert error["details"]["staff_change"] == capo_only.pk
    assert CashCount.objects.count() == 0


def relieve_capo(game, commissario, make_user) -> StaffChange:
    floor_services.table_session_staff_change(
        session=game.session, by=commissario, capo_partita=make_user("capo_relief", Role.CAPO_PARTITA), reason="break"
    )
    return StaffChange.objects.filter(session=game.session).latest("at", "pk")


@pytest.mark.parametrize("bad", [0, -1, "x", 1.5, [1], 10**30])
def test_a_malformed_staff_change_is_invalid_input(relieved, commissario, bad, refused_api):
    error = refused_api(400, "invalid_input", lambda: Tablet(commissario).post(
        url(relieved), {"float_issued": 0, "counted": 1, "staff_change": bad}))  # fmt: skip
    assert "staff_change" in error["details"]


@pytest.mark.parametrize("who", ["changeur", "relief", "capo_partita", "auditor"])
def test_only_the_commissario_or_the_direzione_counts_a_handover(relieved, who, request, refused_api, refused):
    user = request.getfixturevalue(who)
    refused_api(403, "permission_denied", lambda: Tablet(user).post(url(relieved), body(relieved.change)))
    refused("permission_denied", services.cash_count_record, session=relieved.session, by=user, float_issued=0,
            counted=1, staff_change=relieved.change)  # fmt: skip


@pytest.mark.parametrize("who", ["changeur", "relief", "capo_partita", "auditor"])
def test_only_the_commissario_or_the_direzione_corrects_a_handover(relieved, commissario, who, request, refused_api):
    count = services.cash_count_record(session=relieved.session, by=commissario, float_issued=0, counted=1,
                                       staff_change=relieved.change)  # fmt: skip
    user = request.getfixturevalue(who)
    refused_api(403, "permission_denied",
                lambda: Tablet(user).post(correct_url(count.pk), {"counted": 2, "reason": "x"}))  # fmt: skip
    assert CashCount.objects.count() == 1


# --------------------------------------------------------------------------- after the day's close


def test_after_the_days_close_a_handover_is_counted_into_the_books_until_they_are_signed(
    relieved, commissario, direzione, make_user, refused_api, refused
):
    floor_services.table_session_close(session=relieved.session, by=commissario)
    _close_day(relieved, commissario)
    session_events = AuditEvent.objects.filter(stream__name=relieved.session.audit_stream).count()
    r = Tablet(commissario).post(url(relieved), body(relieved.change))
    assert r.status_code == 201, r.json()
    count = CashCount.objects.get()
    [said] = books_events(relieved, "cash.drawer_counted")
    assert (said.subject_id, said.payload) == (str(count.pk), {"old": None, "new": cash_count_payload(count)})
    assert said.payload["new"]["staff_change"] == relieved.change.pk
    assert AuditEvent.objects.filter(stream__name=relieved.session.audit_stream).count() == session_events
    # The books signed by both: the handover's count is no longer corrected.
    _sign_the_register(relieved, direzione, make_user)
    refused_api(409, "books_signed",
                lambda: Tablet(direzione).post(correct_url(count.pk), {"counted": 1, "reason": "x"}))  # fmt: skip
    refused("books_signed", services.cash_count_correct, count=count, by=direzione, counted=1, reason="x")
    assert CashCount.objects.count() == 1


def test_a_handover_not_yet_counted_is_refused_once_the_books_are_signed(
    relieved, commissario, direzione, make_user, refused_api
):
    floor_services.table_session_close(session=relieved.session, by=commissario)
    _close_day(relieved, commissario)
    _box, reg, _second = _sign_the_register(relieved, direzione, make_user)
    error = refused_api(409, "books_signed", lambda: Tablet(commissario).post(url(relieved), body(relieved.change)))
    assert error["details"]["register"] == reg.pk
    assert CashCount.objects.count() == 0
