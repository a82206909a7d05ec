"""What every table service shares: the locks, the actor and session checks, the engine's
errors as ApplicationErrors, and the table's settings as the engine wants them.

Lock order, everywhere (ARCHITECTURE.md): gaming day -> table session -> bank -> coup.
Every table service locks its session row first: all writes at one table are serialized
by that row, so read-then-write decisions (is a coup in play? how much of the bank is
still open?) are race-free. The partial unique indexes in tables/models.py are the backstop."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from fractions import Fraction
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from audit.services import record
from config.errors import ApplicationError, Conflict, NotAllowed
from config.prepared import Prepared
from floor.models import Patron, Seat, TableSession
from tables.engine import EngineError, Profile, get_profile
from tables.engine.profiles import Rounding

from ..models import COUP_FINISHED, Bank, Coup, FauxTirageBar

User = AbstractBaseUser

__all__ = ["User", "now", "record"]


def now():
    return timezone.now()


@contextmanager
def engine_errors() -> Iterator[None]:
    """The engine's refusals keep their stable codes, as 400s with their details."""
    try:
        yield
    except EngineError as exc:
        raise ApplicationError(exc.code, exc.message, details=_plain(exc.details)) from None


def _plain(details: dict[str, Any]) -> dict[str, Any]:
    return {
        k: (v if isinstance(v, str | int | bool | list | dict | type(None)) else str(v))
        for k, v in details.items()
    }


def profile_of(session: TableSession) -> Profile:
    profile = get_profile(session.table.profile)
    if profile.house_bank:
        # Punto Banco (RULES.md §7) has no banker among the players: not this game.
        raise ApplicationError(
            "profile_not_supported",
            "This table's profile is not chemin de fer.",
            details={"profile": profile.name},
        )
    return profile


def cagnotte_settings(session: TableSession) -> tuple[Fraction, int, Rounding]:
    """The table's own cagnotte rate, unit and rounding (RULES.md §4: table settings)."""
    table = session.table
    return (
        Fraction(table.cagnotte_rate_bp, 10_000),
        table.cagnotte_unit_cents,
        Rounding(table.cagnotte_rounding),
    )


# The hot reads of every coup, compiled once per connection (config.prepared).
_LOCK_SESSION = Prepared(
    lambda pk: TableSession.objects.select_for_update(of=("self",)).select_related("table").filter(pk=pk)
)
ACTIVE_BANK = Prepared(
    lambda session_id: (
        Bank.objects.select_for_update(of=("self",))
        .select_related("seat", "banker")
        .filter(session_id=session_id, status=Bank.Status.ACTIVE)
        .order_by("pk")[:1]
    )
)


def lock_session(
    session: TableSession | int, by: User, *, play: bool = True, any_actor: bool = False
) -> TableSession:
    """Lock the session row (only it: `of` keeps the table row free), then check the actor
    and, for play, that the session is open (RULES.md §6: management may suspend play).
    A session this transaction locked already (`locked_session`) is not read again.
    any_actor: the caller checks who may act, once it has seen the locked rows (coup_annul)."""
    if isinstance(session, TableSession) and _still_locked(session):
        locked = session
    else:
        pk = session if isinstance(session, int) else session.pk
        locked = _LOCK_SESSION.get(pk)
    if not any_actor:
        check_actor(locked, by)
    if locked.is_closed:
        raise Conflict("session_closed", "The table session is closed.", details={"session": locked.pk})
    if play and not locked.is_open:
        raise Conflict(
            "session_interrupted", "Play is interrupted at this table.", details={"session": locked.pk}
        )
    return locked


def _still_locked(session: TableSession) -> bool:
    """Whether `locked_session` locked this object in a savepoint that is still open (its id
    is a new string object for every savepoint: never another transaction's)."""
    mark = getattr(session, "_locked_in", None)
    connection = transaction.get_connection()
    return mark is not None and connection.in_atomic_block and any(sid is mark for sid in connection.savepoint_ids)


def locked_session(pk: int) -> TableSession:
    """The session row locked for this transaction, for a caller (the API's view) that must
    see it before calling a service: the service then takes it as locked, without a second
    read, while the savepoint it was locked in is open. Raises TableSession.DoesNotExist."""
    locked = _LOCK_SESSION.get(pk)
    connection = transaction.get_connection()
    locked._locked_in = connection.savepoint_ids[-1] if connection.savepoint_ids else None
    return locked


def check_actor(session: TableSession, by: User) -> None:
    # The API authorizes (floor.permissions.IsAssignedCapoPartita); the service still
    # refuses an actor who is not the one running this table, whoever calls it.
    if by is None or by.pk != session.capo_partita_id:
        raise NotAllowed(
            "not_session_capo_partita",
            "Only the Capo Partita assigned to this table session records its play.",
            details={"session": session.pk},
        )


def lock_coup(
    coup: Coup | int, by: User, *, play: bool = True, any_actor: bool = False
) -> tuple[TableSession, Coup]:
    """Session, then the coup's bank, then the coup (the lock order). play, any_actor: as lock_session."""
    pk = coup if isinstance(coup, int) else coup.pk
    if isinstance(coup, Coup) and coup.session_id is not None and coup.bank_id is not None:
        session_id, bank_id = coup.session_id, coup.bank_id  # a coup's session and bank never change
    else:
        session_id, bank_id = Coup.objects.values_list("session_id", "bank_id").get(pk=pk)
    session = lock_session(session_id, by, play=play, any_actor=any_actor)
    bank = Bank.objects.select_for_update(of=("self",)).select_related("seat", "banker").get(pk=bank_id)
    locked = Coup.objects.select_for_update().get(pk=pk)
    locked.bank = bank
    locked.session = session
    return session, locked


def active_bank(session: TableSession) -> Bank | None:
    return ACTIVE_BANK.first(session.pk)


def coup_in_play(session: TableSession) -> Coup | None:
    return Coup.objects.filter(session=session).exclude(state__in=COUP_FINISHED).first()


_PLACE = Prepared(
    lambda session_id, patron_id: Seat.objects.filter(
        session_id=session_id, patron_id=patron_id, left_at__isnull=True
    ).order_by("pk")[:1],
    args=(int, int),
)
_BARRED = Prepared(
    lambda session_id, patron_id: FauxTirageBar.objects.filter(session_id=session_id, patron_id=patron_id).values(
        "pk"
    )[:1],
    args=(int, int),
)


def place_of(session: TableSession, patron: Patron) -> Seat:
    """The patron's active place at this session, seated or standing (RULES.md §6)."""
    seat = _PLACE.first(session.pk, patron.pk)
    if seat is None:
        raise ApplicationError(
            "patron_not_at_table",
            "The patron holds no seat or standing place at this table.",
            details={"patron": patron.pk, "session": session.pk},
        )
    return seat


def is_barred(session: TableSession, patron_id: int) -> bool:
    return _BARRED.first(session.pk, patron_id) is not None


def audit(session: TableSession, by: User, action: str, subject: Any, data: dict[str, Any]) -> None:
    record(stream=session.audit_stream, actor=by, action=action, subject=subject, data=data)
