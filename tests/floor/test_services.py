"""The floor's services: the rules of RULES.md §6, and the audit event each one writes
(old and new values, in the same transaction as the change)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from audit.models import AuditEvent
from config.errors import ApplicationError, Conflict
from floor import hooks, selectors, services
from floor.models import GamingDay, MinimumChange, Patron, Seat, SessionInterruption, Table, TableSession
from floor.roles import Role
from tests.factories import PatronFactory, SiteFactory, TableFactory, UserFactory

pytestmark = pytest.mark.django_db


def last_event(stream: str) -> AuditEvent:
    return AuditEvent.objects.filter(stream__name=stream).order_by("-seq").first()


# --------------------------------------------------------------------------- tables


def test_table_create_takes_its_defaults_from_its_profile(site, direzione):
    venezia = services.table_create(casino=site.casino, site=site, number=1, by=direzione)
    assert (venezia.decks, venezia.cagnotte_rate_bp, venezia.cagnotte_unit_cents) == (6, 500, 10)
    assert (venezia.cagnotte_rounding, venezia.min_seats_to_start, venezia.seats) == ("nearest", 6, 8)

    domestic = services.table_create(casino=site.casino, site=site, number=2, profile="domestic", by=direzione)
    assert domestic.cagnotte_rate_bp == 0  # RULES.md §3.2: no cagnotte in private games

    punto = services.table_create(casino=site.casino, site=site, number=3, profile="punto-banco", by=direzione)
    assert (punto.decks, punto.min_seats_to_start, punto.cagnotte_unit_cents) == (8, 1, 1)

    event = last_event(f"casino:{site.casino_id}")
    assert event.action == "table.created"
    assert event.actor_id == direzione.pk
    assert event.payload["new"]["profile"] == "punto-banco"
    assert event.payload["new"]["decks"] == 8

    # RULES.md §3.2: 8 decks at a classic table only (and punto banco's default).
    assert services.table_create(casino=site.casino, site=site, number=5, profile="classic", decks=8,
                                 by=direzione).decks == 8  # fmt: skip
    for number, profile in ((6, "venezia"), (7, "domestic"), (8, "chemmy-fi")):
        with pytest.raises(ApplicationError) as refused:
            services.table_create(casino=site.casino, site=site, number=number, profile=profile, decks=8, by=direzione)
        assert refused.value.code == "decks_not_allowed" and refused.value.details["allowed"] == [6]


def test_grande_tavolo_has_nine_seats(site, direzione):
    table = services.table_create(casino=site.casino, site=site, number=4, seats=9, by=direzione)
    assert table.seats == 9


@pytest.mark.parametrize(
    ("changes", "code"),
    [
        ({"seats": 7}, "seats_out_of_range"),
        ({"decks": 5}, "decks_not_allowed"),
        ({"profile": "baccarat"}, "unknown_profile"),
        ({"min_seats_to_start": 9}, "min_seats_out_of_range"),
        ({"cagnotte_rate_bp": 10_001}, "cagnotte_rate_out_of_range"),
        ({"cagnotte_rate_bp": 10_000}, "cagnotte_rate_out_of_range"),  # 100%: nothing left to win
        ({"cagnotte_rounding": "banker"}, "unknown_rounding"),
        # RULES.md §3.2: the private games take no cagnotte; classic's rate is the house's
        ({"profile": "domestic", "cagnotte_rate_bp": 500}, "cagnotte_not_in_profile"),
        ({"profile": "chemmy-fi", "cagnotte_rate_bp": 1}, "cagnotte_not_in_profile"),
    ],
)
def test_table_create_refuses_bad_settings(site, direzione, changes, code):
    with pytest.raises(ApplicationError) as refused:
        services.table_create(casino=site.casino, site=site, number=1, by=direzione, **changes)
    assert refused.value.code == code
    assert not Table.objects.exists()
    assert not AuditEvent.objects.exists()


def test_table_create_refuses_a_site_of_another_casino_and_a_taken_number(site, direzione):
    other_site = SiteFactory()
    with pytest.raises(ApplicationError) as refused:
        services.table_create(casino=site.casino, site=other_site, number=1, by=direzione)
    assert refused.value.code == "site_not_in_casino"
    services.table_create(casino=site.casino, site=site, number=1, by=direzione)
    with pytest.raises(Conflict) as taken:
        services.table_create(casino=site.casino, site=site, number=1, by=direzione)
    assert taken.value.code == "table_number_taken"


def test_table_update_audits_old_and_new_values(table, direzione):
    services.table_update(table=table, by=direzione, cagnotte_rate_bp=250, active=False)
    table.refresh_from_db()
    assert (table.cagnotte_rate_bp, table.active) == (250, False)
    event = last_event(f"casino:{table.casino_id}")
    assert event.action == "table.updated"
    assert event.payload == {
        "old": {"active": True, "cagnotte_rate_bp": 500},
        "new": {"active": False, "cagnotte_rate_bp": 250},
    }


def test_the_private_games_take_no_cagnotte(site, table, direzione):
    """RULES.md §3.2: cagnotte 0 in the domestic and chemmy-fi rules; the house sets it for
    venezia and classic (classic: "5% at a casino, 0 in private games")."""
    classic = services.table_create(
        casino=site.casino, site=site, number=2, profile="classic", cagnotte_rate_bp=0, by=direzione
    )
    assert classic.cagnotte_rate_bp == 0
    services.table_update(table=classic, by=direzione, cagnotte_rate_bp=400)
    chemmy = services.table_create(casino=site.casino, site=site, number=3, profile="chemmy-fi", by=direzione)
    assert chemmy.cagnotte_rate_bp == 0
    before = AuditEvent.objects.count()
    with pytest.raises(ApplicationError) as refused:
        services.table_update(table=chemmy, by=direzione, cagnotte_rate_bp=500)
    assert refused.value.code == "cagnotte_not_in_profile"
    assert AuditEvent.objects.count() == before
    # A table moved to a private game's rules takes no cagnotte with them, on record.
    services.table_update(table=table, by=direzione, profile="domestic")
    table.refresh_from_db()
    assert (table.profile, table.cagnotte_rate_bp) == ("domestic", 0)
    assert last_event(f"casino:{table.casino_id}").payload == {
        "old": {"cagnotte_rate_bp": 500, "profile": "venezia"},
        "new": {"cagnotte_rate_bp": 0, "profile": "domestic"},
    }
    with pytest.raises(ApplicationError) as refused:
        services.table_update(table=chemmy, by=direzione, profile="domestic", cagnotte_rate_bp=500)
    assert refused.value.code == "cagnotte_not_in_profile"


def test_table_update_without_a_change_writes_nothing(table, direzione):
    before = AuditEvent.objects.count()
    services.table_update(table=table, by=direzione, seats=8)
    assert AuditEvent.objects.count() == before


def test_table_update_refused_while_in_play(table_session, direzione):
    with pytest.raises(Conflict) as refused:
        services.table_update(table=table_session.table, by=direzione, seats=9)
    assert refused.value.code == "table_in_play"
    assert Table.objects.get(pk=table_session.table_id).seats == 8


# --------------------------------------------------------------------------- gaming days


def test_gaming_day_open_and_close_are_audited(casino, commissario):
    day = services.gaming_day_open(casino=casino, by=commissario)
    assert day.is_open and day.date == timezone.localdate() and day.opened_by == commissario
    opened = last_event(f"gaming_day:{day.pk}")
    assert opened.action == "gaming_day.opened"
    assert opened.payload["old"] == {"open": False}
    assert opened.payload["new"] == {"open": True, "opened_at": day.opened_at.isoformat()}
    assert opened.payload["date"] == day.date.isoformat()

    services.gaming_day_close(gaming_day=day, by=commissario)
    day.refresh_from_db()
    assert not day.is_open and day.closed_by == commissario
    closed = last_event(f"gaming_day:{day.pk}")
    assert closed.action == "gaming_day.closed"
    assert closed.payload["old"] == {"open": True}
    assert closed.payload["new"]["open"] is False


def test_only_one_open_gaming_day_per_casino(gaming_day, commissario):
    with pytest.raises(Conflict) as refused:
        services.gaming_day_open(casino=gaming_day.casino, by=commissario, date=gaming_day.date + dt.timedelta(1))
    assert refused.value.code == "gaming_day_already_open"
    assert refused.value.details["gaming_day"] == gaming_day.pk
    assert GamingDay.objects.count() == 1


def test_a_date_has_one_gaming_day(gaming_day, commissario, settings):
    settings.GAMING_DAY_OPEN_UNSIGNED_REGISTER = "record"  # the register's rule: tests/audit/test_day_order.py
    services.gaming_day_close(gaming_day=gaming_day, by=commissario)
    with pytest.raises(Conflict) as refused:
        services.gaming_day_open(casino=gaming_day.casino, by=commissario, date=gaming_day.date)
    assert refused.value.code == "gaming_day_exists"
    nxt = services.gaming_day_open(casino=gaming_day.casino, by=commissario, date=gaming_day.date + dt.timedelta(1))
    assert nxt.is_open


def test_gaming_day_close_refused_while_sessions_are_not_closed(table_session, commissario):
    services.table_session_interrupt(session=table_session, by=commissario, reason="dispute")
    with pytest.raises(Conflict) as refused:
        services.gaming_day_close(gaming_day=table_session.gaming_day, by=commissario)
    assert refused.value.code == "sessions_still_open"
    assert refused.value.details == {"sessions": [table_session.pk], "tables": [table_session.table.number]}
    assert GamingDay.objects.get(pk=table_session.gaming_day_id).is_open


def test_closing_a_closed_day_is_refused(gaming_day, commissario):
    services.gaming_day_close(gaming_day=gaming_day, by=commissario)
    with pytest.raises(Conflict) as refused:
        services.gaming_day_close(gaming_day=gaming_day, by=commissario)
    assert refused.value.code == "gaming_day_closed"


# --------------------------------------------------------------------------- sessions


def test_session_open_numbers_sessions_per_table_and_day(table_session, commissario, capo_partita, changeur):
    assert table_session.number == 1 and table_session.status == "open"
    event = last_event(f"gaming_day:{table_session.gaming_day_id}")
    assert event.action == "table_session.opened"
    assert event.payload["new"] == {
        "status": "open",
        "capo_partita": capo_partita.pk,
        "changeur": changeur.pk,
        "shoe_number": "S-101",
        "minimum": 100_00,
        "maximum": None,
        "opened_at": table_session.opened_at.isoformat(),  # the row's own time (the event has its own)
    }
    services.table_session_close(session=table_session, by=commissario)
    second = services.table_session_open(
        table=table_session.table, by=commissario, capo_partita=capo_partita, changeur=changeur,
        shoe_number="S-102", minimum=50_00,
    )
    assert second.number == 2


def test_session_open_needs_an_open_day(table, commissario, capo_partita, changeur):
    with pytest.raises(ApplicationError) as refused:
        services.table_session_open(
            table=table, by=commissario, capo_partita=capo_partita, changeur=changeur, shoe_number="S", minimum=100
        )
    assert refused.value.code == "no_open_gaming_day"


@pytest.mark.parametrize(
    ("who", "code"),
    [("capo", "not_a_capo_partita"), ("changeur", "not_a_changeur")],
)
def test_session_staff_must_hold_their_roles(table, gaming_day, commissario, capo_partita, changeur, who, code):
    stranger = UserFactory(roles=[Role.AUDITOR])
    with pytest.raises(ApplicationError) as refused:
        services.table_session_open(
            table=table,
            by=commissario,
            capo_partita=stranger if who == "capo" else capo_partita,
            changeur=stranger if who == "changeur" else changeur,
            shoe_number="S-1",
            minimum=100,
        )
    assert refused.value.code == code
    assert not TableSession.objects.exists()


@pytest.mark.parametrize(("minimum", "maximum"), [(99, None), (0, None), (-100, None), (500, 400)])
def test_session_minimum_at_least_one_euro_and_not_above_maximum(
    table, gaming_day, commissario, capo_partita, changeur, minimum, maximum
):
    with pytest.raises(ApplicationError) as refused:
        services.table_session_open(
            table=table, by=commissario, capo_partita=capo_partita, changeur=changeur,
            shoe_number="S-1", minimum=minimum, maximum=maximum,
        )
    assert refused.value.code == "minimum_out_of_range"


def test_one_live_session_per_table_and_one_table_per_shoe(table_session, commissario, capo_partita, changeur):
    with pytest.raises(Conflict) as refused:
        services.table_session_open(
            table=table_session.table, by=commissario, capo_partita=capo_partita, changeur=changeur,
            shoe_number="S-9", minimum=100,
        )
    assert refused.value.code == "table_session_already_open"
    other = TableFactory(casino=table_session.table.casino, site=table_session.table.site, number=2)
    with pytest.raises(Conflict) as busy:
        services.table_session_open(
            table=other, by=commissario, capo_partita=capo_partita, changeur=changeur,
            shoe_number="S-101", minimum=100,
        )
    assert busy.value.code == "shoe_in_use"


def test_interrupt_resume_close_cycle_is_registered(table_session, commissario):
    session = services.table_session_interrupt(session=table_session, by=commissario, reason="lights out")
    assert session.status == "interrupted"
    event = last_event(session.audit_stream)
    assert event.action == "table_session.interrupted"
    assert event.payload["old"] == {"status": "open"} and event.payload["new"] == {"status": "interrupted"}
    assert event.payload["reason"] == "lights out"

    session = services.table_session_resume(session=session, by=commissario, reason="lights back")
    assert session.status == "open"
    event = last_event(session.audit_stream)
    assert event.action == "table_session.resumed"
    assert event.payload["old"] == {"status": "interrupted"} and event.payload["new"] == {"status": "open"}
    interruption = SessionInterruption.objects.get(session=session)
    assert interruption.resumed_by == commissario and interruption.resume_reason == "lights back"


def test_resume_runs_the_after_resume_hooks_in_its_transaction(table_session, commissario):
    """floor/hooks.py: the hooks see the session open again, after the resumption's event;
    a hook's refusal rolls the whole resumption back."""
    seen = []

    def hook(*, session, by):
        seen.append((session.status, last_event(session.audit_stream).action, by))
        if len(seen) == 1:
            raise Conflict("not_now", "Refused by a hook.")

    hooks.register_after_session_resume(hook)
    try:
        session = services.table_session_interrupt(session=table_session, by=commissario, reason="lights out")
        with pytest.raises(Conflict) as refused:
            services.table_session_resume(session=session, by=commissario)
        assert refused.value.code == "not_now"
        session.refresh_from_db()
        assert session.status == "interrupted" and last_event(session.audit_stream).action == "table_session.interrupted"
        assert SessionInterruption.objects.get(session=session).resumed_at is None
        services.table_session_resume(session=session, by=commissario)
    finally:
        hooks.unregister_after_session_resume(hook)
    assert seen == [("open", "table_session.resumed", commissario)] * 2
    session.refresh_from_db()
    assert session.status == "open"


def test_state_transitions_refused_in_the_wrong_state(table_session, commissario):
    with pytest.raises(Conflict) as not_interrupted:
        services.table_session_resume(session=table_session, by=commissario)
    assert not_interrupted.value.code == "session_not_interrupted"
    services.table_session_interrupt(session=table_session, by=commissario, reason="x")
    with pytest.raises(Conflict) as twice:
        services.table_session_interrupt(session=table_session, by=commissario, reason="y")
    assert twice.value.code == "session_not_open"
    services.table_session_close(session=table_session, by=commissario)
    for call in (
        lambda: services.table_session_interrupt(session=table_session, by=commissario, reason="z"),
        lambda: services.table_session_resume(session=table_session, by=commissario),
        lambda: services.table_session_close(session=table_session, by=commissario),
        lambda: services.table_minimum_change(session=table_session, by=commissario, minimum=200, reason="r"),
        lambda: services.seat_assign(session=table_session, patron=PatronFactory(), seat_number=1, by=commissario),
    ):
        with pytest.raises(Conflict) as closed:
            call()
        assert closed.value.code == "session_closed"


def test_closing_an_interrupted_session_ends_its_interruption_and_frees_its_places(
    table_session, commissario, seat_patrons
):
    seats = seat_patrons(table_session, 3)
    services.table_session_interrupt(session=table_session, by=commissario, reason="dispute")
    session = services.table_session_close(session=table_session, by=commissario)
    assert session.status == "closed" and session.closed_by == commissario
    interruption = SessionInterruption.objects.get(session=session)
    assert interruption.resumed_at == session.closed_at
    assert not Seat.objects.filter(session=session, left_at__isnull=True).exists()
    event = last_event(f"gaming_day:{session.gaming_day_id}")
    assert event.action == "table_session.closed"
    assert event.payload["old"] == {"status": "interrupted"}
    assert event.payload["new"]["status"] == "closed"
    assert event.payload["interruption_ended"] == interruption.pk
    assert event.payload["seats_released"] == [s.pk for s in seats]
    # A released patron may sit at another table at once (RULES.md §6).
    other = TableFactory(casino=session.table.casino, site=session.table.site, number=2)
    later = services.table_session_open(
        table=other, by=commissario, capo_partita=session.capo_partita, changeur=session.changeur,
        shoe_number="S-7", minimum=100,
    )
    services.seat_assign(session=later, patron=seats[0].patron, seat_number=1, by=commissario)


# --------------------------------------------------------------------------- minimums


def test_minimum_change_keeps_history_and_audits(table_session, commissario):
    session = services.table_minimum_change(session=table_session, by=commissario, minimum=200_00, reason="busy night")
    assert session.minimum == 200_00
    change = MinimumChange.objects.get(session=session)
    assert (change.old, change.new, change.reason, change.by) == (100_00, 200_00, "busy night", commissario)
    event = last_event(session.audit_stream)
    assert event.action == "minimum.changed"
    assert event.payload == {
        "change": change.pk, "old": 100_00, "new": 200_00, "old_maximum": None, "new_maximum": None,
        "reason": "busy night", "at": change.at.isoformat(),
    }  # fmt: skip


def test_the_maximum_changes_with_the_minimum_on_record(table_session, commissario):
    session = services.table_minimum_change(
        session=table_session, by=commissario, minimum=100_00, maximum=3000_00, reason="a maximum tonight"
    )
    assert (session.minimum, session.maximum) == (100_00, 3000_00)
    session = services.table_minimum_change(session=session, by=commissario, minimum=200_00, reason="busier")
    assert session.maximum == 3000_00  # left out: kept
    session = services.table_minimum_change(session=session, by=commissario, minimum=200_00, maximum=None, reason="lifted")
    assert session.maximum is None
    rows = list(MinimumChange.objects.order_by("pk").values_list("old", "new", "old_maximum", "new_maximum"))
    assert rows == [(100_00, 100_00, None, 3000_00), (100_00, 200_00, 3000_00, 3000_00), (200_00, 200_00, 3000_00, None)]
    assert last_event(session.audit_stream).payload["new_maximum"] is None
    for maximum, code in ((150_00, "minimum_out_of_range"), (99, "maximum_out_of_range")):
        with pytest.raises(ApplicationError) as refused:
            services.table_minimum_change(session=session, by=commissario, minimum=200_00, maximum=maximum, reason="r")
        assert refused.value.code == code
    assert MinimumChange.objects.count() == 3


def test_minimum_change_during_an_interruption_is_allowed(table_session, commissario):
    services.table_session_interrupt(session=table_session, by=commissario, reason="pause")
    assert services.table_minimum_change(session=table_session, by=commissario, minimum=150, reason="r").minimum == 150


@pytest.mark.parametrize(
    ("minimum", "reason", "code"),
    [
        (99, "r", "minimum_out_of_range"),
        (1_000_01, "r", "minimum_out_of_range"),  # above the maximum
        (100_00, "r", "minimum_unchanged"),  # and the maximum with it
        (200_00, "  ", "reason_required"),
    ],
)
def test_minimum_change_refusals(table, gaming_day, commissario, capo_partita, changeur, minimum, reason, code):
    session = services.table_session_open(
        table=table, by=commissario, capo_partita=capo_partita, changeur=changeur,
        shoe_number="S-1", minimum=100_00, maximum=1_000_00,
    )
    before = AuditEvent.objects.count()
    with pytest.raises(ApplicationError) as refused:
        services.table_minimum_change(session=session, by=commissario, minimum=minimum, reason=reason)
    assert refused.value.code == code
    session.refresh_from_db()
    assert session.minimum == 100_00
    assert not MinimumChange.objects.exists()
    assert AuditEvent.objects.count() == before


def test_the_change_and_its_event_commit_together(table_session, commissario, monkeypatch):
    """A failure after the audit event was written rolls back the event with the change."""
    real_record = services.record

    def record_then_fail(**kwargs):
        real_record(**kwargs)
        raise RuntimeError("crash after the event")

    monkeypatch.setattr(services, "record", record_then_fail)
    events = AuditEvent.objects.count()
    with pytest.raises(RuntimeError):
        services.table_minimum_change(session=table_session, by=commissario, minimum=300_00, reason="r")
    assert AuditEvent.objects.count() == events
    assert not MinimumChange.objects.exists()
    assert TableSession.objects.get(pk=table_session.pk).minimum == 100_00


# --------------------------------------------------------------------------- patrons


def test_patron_register_normalizes_and_audits(commissario):
    patron = services.patron_register(
        by=commissario, first_name=" Lorenzo ", last_name="Zanetti", document_type="id_card",
        document_number="ca 12345 ab", nationality="it", birth_date=dt.date(1968, 3, 14),
    )
    assert (patron.first_name, patron.document_number, patron.nationality) == ("Lorenzo", "CA12345AB", "IT")
    event = last_event("patrons")
    assert event.action == "patron.registered"
    assert event.payload["old"] is None
    assert event.payload["new"]["document_number"] == "CA12345AB"
    assert event.payload["new"]["birth_date"] == "1968-03-14"
    with pytest.raises(Conflict) as again:
        services.patron_register(
            by=commissario, first_name="L", last_name="Z", document_type="id_card",
            document_number="CA12345AB", nationality="IT",
        )
    assert again.value.code == "patron_already_registered"
    assert again.value.details == {"patron": patron.pk}


@pytest.mark.parametrize(
    "same",
    [
        "\uff23\uff21\uff11\uff12\uff13\uff14\uff15\uff21\uff22",  # fullwidth: NFKC gives CA12345AB
        "CA12345AB\u200b",  # a zero-width space
        "\u200eCA 12345 ab",  # a direction mark, spaces, lower case
        "CA\u00a012345AB",  # a no-break space
    ],
)
def test_the_same_document_written_otherwise_is_the_same_patron(commissario, same):
    first = services.patron_register(by=commissario, first_name="Lorenzo", last_name="Zanetti",
                                     document_type="id_card", document_number="CA12345AB", nationality="IT")  # fmt: skip
    with pytest.raises(Conflict) as again:
        services.patron_register(by=commissario, first_name="Lorenzo", last_name="Zanetti",
                                 document_type="id_card", document_number=same, nationality="IT")  # fmt: skip
    assert again.value.code == "patron_already_registered" and again.value.details == {"patron": first.pk}


@pytest.mark.parametrize("lookalike", ["\u0421A12345AB", "C\u039112345AB", "CA12345A\u0392", "CA12345AB\u00e9", "CA_12345"])
def test_a_document_number_in_lookalike_letters_is_refused(commissario, lookalike):
    # A Cyrillic ES, a Greek ALPHA or BETA passed for the Latin letters: the same person registered
    # twice, who could then sit at two tables.
    with pytest.raises(ApplicationError) as refused:
        services.patron_register(by=commissario, first_name="Lorenzo", last_name="Zanetti",
                                 document_type="id_card", document_number=lookalike, nationality="IT")  # fmt: skip
    assert refused.value.code == "invalid_document_number"
    assert not Patron.objects.exists()


@pytest.mark.parametrize("nationality", ["\u0399\u03a4", "I\u0422", "\u00c9S", "I1", "XX", "UK", "ITA", "I"])
def test_a_nationality_in_other_letters_is_refused(commissario, nationality):
    with pytest.raises(ApplicationError) as refused:
        services.patron_register(by=commissario, first_name="Lorenzo", last_name="Zanetti",
                                 document_type="id_card", document_number="CA1", nationality=nationality)  # fmt: skip
    assert refused.value.code == "invalid_nationality"
    patron = services.patron_register(by=commissario, first_name="Lorenzo", last_name="Zanetti",
                                      document_type="id_card", document_number="CA1", nationality="\uff29\uff34")  # fmt: skip
    assert patron.nationality == "IT"  # fullwidth letters: NFKC gives IT


@pytest.mark.parametrize("name", ["\u200b", "\ufeff", "\u2800", "\u0301", "--", "12"])
def test_a_name_without_a_letter_is_refused(commissario, name):
    with pytest.raises(ApplicationError) as refused:
        services.patron_register(by=commissario, first_name=name, last_name="Zanetti",
                                 document_type="id_card", document_number="CA1", nationality="IT")  # fmt: skip
    assert refused.value.code == "name_required"


def test_a_document_is_found_however_it_is_written(commissario, auditor, api_client_for):
    patron = services.patron_register(by=commissario, first_name="Lorenzo", last_name="Zanetti",
                                      document_type="id_card", document_number="CA12345AB", nationality="IT")  # fmt: skip
    client = api_client_for(auditor)
    for query in ("CA12345AB", "ca 12345 ab", "\uff43\uff41\uff11\uff12\uff13\uff14\uff15\uff41\uff42"):
        found = client.get("/api/patrons/", {"document_number": query}).json()
        assert [p["id"] for p in found["results"]] == [patron.pk], query


# --------------------------------------------------------------------------- seats


def test_seat_assign_and_release_are_audited(table_session, commissario, patron):
    seat = services.seat_assign(session=table_session, patron=patron, seat_number=3, by=commissario)
    event = last_event(table_session.audit_stream)
    assert event.action == "seat.taken"
    # The row's time too, since the records check holds the place to its event.
    assert event.payload == {
        "patron": patron.pk, "old": None,
        "new": {"seat": seat.pk, "seat_number": 3, "standing": False, "taken_at": seat.taken_at.isoformat()},
    }  # fmt: skip
    services.seat_release(seat=seat, by=commissario)
    seat.refresh_from_db()
    assert seat.left_by == commissario
    event = last_event(table_session.audit_stream)
    assert event.action == "seat.released"
    assert event.payload["old"] == {"seat_number": 3, "standing": False, "active": True}
    assert event.payload["new"]["active"] is False
    with pytest.raises(Conflict) as twice:
        services.seat_release(seat=seat, by=commissario)
    assert twice.value.code == "seat_already_released"


def test_a_patron_holds_one_place_on_the_whole_floor(table_session, commissario, patron, make_user):
    services.seat_assign(session=table_session, patron=patron, standing=True, by=commissario)
    # Standing counts as his place: no seat at this table...
    with pytest.raises(Conflict) as here:
        services.seat_assign(session=table_session, patron=patron, seat_number=1, by=commissario)
    assert here.value.code == "patron_already_seated"
    # ...nor at another.
    other = TableFactory(casino=table_session.table.casino, site=table_session.table.site, number=2)
    later = services.table_session_open(
        table=other, by=commissario, capo_partita=make_user("capo_2", Role.CAPO_PARTITA),
        changeur=make_user("changeur_2", Role.CHANGEUR), shoe_number="S-2", minimum=100,
    )
    with pytest.raises(Conflict) as there:
        services.seat_assign(session=later, patron=patron, seat_number=1, by=commissario)
    assert there.value.code == "patron_already_seated"
    assert there.value.details["session"] == table_session.pk
    assert Seat.objects.filter(patron=patron).count() == 1


def test_seat_rules(table_session, commissario):
    services.seat_assign(session=table_session, patron=PatronFactory(), seat_number=8, by=commissario)
    for kwargs, code in (
        ({"seat_number": 8}, "seat_taken"),
        ({"seat_number": 9}, "seat_out_of_range"),  # 8 seats; only the Grande Tavolo has a 9th
        ({"seat_number": 0}, "seat_out_of_range"),
        ({}, "seat_number_required"),
        ({"seat_number": 2, "standing": True}, "invalid_seat"),
    ):
        with pytest.raises(ApplicationError) as refused:
            services.seat_assign(session=table_session, patron=PatronFactory(), by=commissario, **kwargs)
        assert refused.value.code == code, kwargs
    assert Seat.objects.filter(session=table_session).count() == 1


def test_a_released_seat_can_be_taken_again(table_session, commissario):
    first = services.seat_assign(session=table_session, patron=PatronFactory(), seat_number=1, by=commissario)
    services.seat_release(seat=first, by=commissario)
    services.seat_assign(session=table_session, patron=PatronFactory(), seat_number=1, by=commissario)
    assert Seat.objects.filter(session=table_session, seat_number=1).count() == 2


def test_grande_tavolo_seat_nine(site, gaming_day, direzione, commissario, capo_partita, changeur):
    grande = services.table_create(casino=site.casino, site=site, number=4, seats=9, by=direzione)
    session = services.table_session_open(
        table=grande, by=commissario, capo_partita=capo_partita, changeur=changeur, shoe_number="G", minimum=100
    )
    assert services.seat_assign(session=session, patron=PatronFactory(), seat_number=9, by=commissario).seat_number == 9


def test_session_can_start_with_six_of_eight_seats(table_session, commissario, seat_patrons):
    seat_patrons(table_session, 5)
    services.seat_assign(session=table_session, patron=PatronFactory(), standing=True, by=commissario)
    # Standing players do not count (RULES.md §6).
    assert selectors.session_seated_count(table_session) == 5
    assert not selectors.session_can_start(table_session)
    seat_patrons(table_session, 1, start=6)
    assert selectors.session_seated_count(table_session) == 6
    assert selectors.session_can_start(table_session)
    services.table_session_interrupt(session=table_session, by=commissario, reason="pause")
    table_session.refresh_from_db()
    assert not selectors.session_can_start(table_session)


# --------------------------------------------------------------------------- constraints as backstops


def test_constraints_catch_what_a_service_would_miss(table_session, commissario, patron):
    services.seat_assign(session=table_session, patron=patron, seat_number=1, by=commissario)
    now = timezone.now()
    with pytest.raises(IntegrityError), transaction.atomic():
        Seat.objects.create(session=table_session, patron=patron, seat_number=2, taken_at=now, taken_by=commissario)
    with pytest.raises(IntegrityError), transaction.atomic():
        Seat.objects.create(
            session=table_session, patron=PatronFactory(), seat_number=1, taken_at=now, taken_by=commissario
        )
    with pytest.raises(IntegrityError), transaction.atomic():
        GamingDay.objects.create(
            casino=table_session.table.casino, date=dt.date(2000, 1, 1), opened_at=now, opened_by=commissario
        )
    with pytest.raises(IntegrityError), transaction.atomic():
        TableSession.objects.create(
            table=table_session.table, gaming_day=table_session.gaming_day, number=2,
            capo_partita=commissario, changeur=commissario, shoe_number="X", minimum=100,
            opened_at=now, opened_by=commissario,
        )


def test_a_gaming_day_opens_on_its_date_after_the_last_one(casino, commissario, settings):
    settings.GAMING_DAY_OPEN_UNSIGNED_REGISTER = "record"  # the register's rule: tests/audit/test_day_order.py
    today = timezone.localdate()
    for far in (dt.date(1, 1, 1), dt.date(9999, 12, 31), today - dt.timedelta(2), today + dt.timedelta(2)):
        with pytest.raises(ApplicationError) as refused:
            services.gaming_day_open(casino=casino, by=commissario, date=far)
        assert refused.value.code == "gaming_day_date_out_of_range"
    day = services.gaming_day_open(casino=casino, by=commissario, date=today)
    services.gaming_day_close(gaming_day=day, by=commissario)
    with pytest.raises(Conflict) as refused:
        services.gaming_day_open(casino=casino, by=commissario, date=today - dt.timedelta(1))
    assert refused.value.code == "gaming_day_out_of_order"
    assert refused.value.details == {"date": (today - dt.timedelta(1)).isoformat(), "last": today.isoformat()}
    assert GamingDay.objects.filter(casino=casino).count() == 1
    assert services.gaming_day_open(casino=casino, by=commissario, date=today + dt.timedelta(1)).is_open


def test_a_patron_is_an_adult_born_after_1900(commissario):
    today = timezone.localdate()
    body = {"first_name": "Aldo", "last_name": "Zeno", "document_type": "passport", "nationality": "IT"}
    body["by"] = commissario
    leap_day = (today.month, today.day) == (2, 29)
    eighteen_years_ago = dt.date(today.year - 18, 3, 1) if leap_day else today.replace(year=today.year - 18)
    turns_18_tomorrow = eighteen_years_ago + dt.timedelta(1)
    for n, (born, code) in enumerate(
        [(turns_18_tomorrow, "patron_under_age"), (dt.date(2020, 1, 1), "patron_under_age"), (dt.date(1, 1, 1), "invalid_birth_date")]
    ):
        with pytest.raises(ApplicationError) as refused:
            services.patron_register(document_number=f"U{n}", birth_date=born, **body)
        assert refused.value.code == code
    adult = services.patron_register(document_number="A1", birth_date=turns_18_tomorrow - dt.timedelta(1), **body)
    assert adult.pk is not None


def test_migration_0009_fills_the_maximums_in_one_statement(table_session, commissario):
    """floor 0009: the changes recorded before the maximum could change show the session's
    maximum before and after, written by one UPDATE (not a save per row, under the lock of
    the ALTER TABLE), whatever the number of changes."""
    import importlib

    from django.apps import apps
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    migration = importlib.import_module("floor.migrations.0009_minimum_change_maximum")
    table_session.maximum = 5000_00
    table_session.save(update_fields=["maximum"])
    for new in (200_00, 300_00, 400_00):
        services.table_minimum_change(session=table_session, by=commissario, minimum=new, reason="busy")
    MinimumChange.objects.update(old_maximum=None, new_maximum=None)  # as before the migration
    with CaptureQueriesContext(connection) as ctx:
        migration.maximum_unchanged(apps, None)
    assert len(ctx.captured_queries) == 1
    assert set(MinimumChange.objects.values_list("old_maximum", "new_maximum")) == {(5000_00, 5000_00)}
