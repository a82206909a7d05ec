"""Who may do what on the floor (RULES.md §6 and the vocabulary).

- Commissario di Gioco: opens and closes gaming days and table sessions, interrupts and
  resumes play, assigns and releases seats, changes minimums, registers patrons.
- Direzione Giochi: creates and edits tables (management; the admin's back office), and
  suspends (interrupts) and resumes play at any table, as the Commissario does; a suspension
  the Direzione ordered only the Direzione lifts (its decision is final: the service refuses
  the Commissario, `suspended_by_direzione`, floor.services.may_resume).
- Every staff role (capo_partita, changeur, auditor, direzione, commissario) reads the floor;
  a table session's own records (its game, coups, banks, seats, balances, succession) only
  the supervisors and auditors (SESSION_READERS) read whatever the table, the table staff
  (Capo Partita, changeur) only at the sessions they work or worked at: data minimisation,
  GDPR art. 5(1)(c), as for the patrons' identity (session_readable_by).
- The auditor reads everything and writes nothing.
- An authenticated user without a role may do nothing at all (403 everywhere).

Refusals raise DRF's PermissionDenied, which config.errors maps to
{"error": {"code": "permission_denied", ...}} with status 403."""

from __future__ import annotations

from typing import Any

from django.db.models import Q, QuerySet
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.permissions import SAFE_METHODS, BasePermission

from .roles import ALL_ROLES, Role, has_role

FLOOR_READERS = ALL_ROLES
# Who reads every table session: the floor's supervisors and the auditors (the tablet page's
# readers too). The table staff read the sessions they work or worked at.
SESSION_READERS = (Role.COMMISSARIO, Role.DIREZIONE, Role.AUDITOR)
SESSION_READ_REFUSED = "Table staff read only the table sessions they work or worked at."


class RolePermission(BasePermission):
    """Reads need any floor role; writes need one of `write_roles`."""

    read_roles: tuple[str, ...] = FLOOR_READERS
    write_roles: tuple[str, ...] = ()
    message = "Your role does not allow this."

    def has_permission(self, request, view) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False
        if not hasattr(view, request.method.lower()):
            # A method the view does not have: let the view answer 405, not a misleading 403.
            return True
        roles = self.read_roles if request.method in SAFE_METHODS else self.write_roles
        return has_role(request.user, *roles)


class CanReadFloor(RolePermission):
    """Read-only endpoints: any staff role; writes are refused whoever asks."""

    message = "Reading the floor needs a staff role."


class CommissarioWrites(RolePermission):
    message = "Only the Commissario di Gioco may do this."
    write_roles = (Role.COMMISSARIO,)


class DirezioneWrites(RolePermission):
    message = "Only the Direzione Giochi may do this."
    write_roles = (Role.DIREZIONE,)


class SuspendsPlay(RolePermission):
    """Interrupting and resuming play: the Commissario, and the Direzione Giochi, whose right it
    is to suspend play at any moment of the day (RULES.md §6; seed 001: "È facoltà della
    Direzione sospendere la partita in qualsiasi momento della giornata"). Which suspension
    one may lift is the object's question, the service's (floor.services.may_resume)."""

    message = "Only the Commissario di Gioco or the Direzione Giochi may do this."
    write_roles = (Role.COMMISSARIO, Role.DIREZIONE)


class IsCommissario(RolePermission):
    """Commissario only, whatever the method."""

    message = "Only the Commissario di Gioco may do this."
    read_roles = write_roles = (Role.COMMISSARIO,)


def _session_of(obj: Any):
    """The table session an object belongs to: the session itself, or anything with a
    `session` / `table_session` attribute (a seat, a coup, a bank...)."""
    for attr in ("table_session", "session"):
        related = getattr(obj, attr, None)
        if related is not None:
            return related
    return obj


def serves_session(user: Any, session: Any) -> bool:
    """Is `user` the session's Capo Partita or changeur now, holding that role? (No query: the
    session's row says who.) The tablet page follows its table for them alone."""
    if user is None or not getattr(user, "is_authenticated", False):
        return False
    return (session.capo_partita_id == user.pk and has_role(user, Role.CAPO_PARTITA)) or (
        session.changeur_id == user.pk and has_role(user, Role.CHANGEUR)
    )


def _worked_q(user: Any) -> Q:
    """The sessions `user` is or was assigned to in his role: its Capo Partita or changeur now,
    or one relieved there (a StaffChange names every outgoing one). One query's condition."""
    from .models import StaffChange  # (models import the engine; permissions stay light)

    worked = Q(pk__in=[])
    if has_role(user, Role.CAPO_PARTITA):
        relieved = StaffChange.objects.filter(old_capo_partita=user).values("session_id")
        worked |= Q(capo_partita=user) | Q(pk__in=relieved)
    if has_role(user, Role.CHANGEUR):
        relieved = StaffChange.objects.filter(old_changeur=user).values("session_id")
        worked |= Q(changeur=user) | Q(pk__in=relieved)
    return worked


def readable_sessions(user: Any, sessions: QuerySet) -> QuerySet:
    """`sessions` narrowed to those `user` may read (session_readable_by), in the same query."""
    if has_role(user, *SESSION_READERS):
        return sessions
    if not (user and getattr(user, "is_authenticated", False)):
        return sessions.none()
    return sessions.filter(_worked_q(user))


def session_readable_by(user: Any, session: Any) -> bool:
    """May `user` read `session`'s records (its game, coups, banks, seats, balances,
    succession, staff and minimum changes)? The supervisors and auditors (SESSION_READERS),
    any session; the table staff, a session they serve now (serves_session, the tablet page's
    rule) or served that day: a relieved Capo Partita or changeur still reads the session he
    worked, its closing included. Another table's play and balances are not theirs to read."""
    if has_role(user, *SESSION_READERS) or serves_session(user, session):
        return True
    if not has_role(user, Role.CAPO_PARTITA, Role.CHANGEUR):
        return False
    return readable_sessions(user, type(session).objects.filter(pk=session.pk)).exists()


def check_session_readable(user: Any, session_id: int) -> None:
    """For an endpoint that reads session `session_id`'s records: 403 permission_denied when
    `user` may not read it (session_readable_by), 404 when it does not exist. One query for the
    table staff, none for SESSION_READERS (the view's own lookup answers 404 then)."""
    if has_role(user, *SESSION_READERS):
        return
    from .models import TableSession

    if readable_sessions(user, TableSession.objects.filter(pk=session_id)).exists():
        return
    if not TableSession.objects.filter(pk=session_id).exists():
        raise NotFound()
    raise PermissionDenied(SESSION_READ_REFUSED)


def session_writable_by(user: Any, session: Any) -> bool:
    """May `user` write into `session` as its Capo Partita (record coups, bets, banks)?

    Yes when he holds the capo_partita role now, is the one assigned to this session, and
    the session is not closed. Whether play is interrupted is a state the writing service
    refuses with its own code (e.g. "session_interrupted"), not a permission question."""
    if user is None or not getattr(user, "is_authenticated", False):
        return False
    if not has_role(user, Role.CAPO_PARTITA):
        return False
    return session.capo_partita_id == user.pk and session.status != "closed"


class IsAssignedCapoPartita(BasePermission):
    """Object-level: only the Capo Partita assigned to the object's table session may write.

    has_permission lets any capo_partita reach the view; has_object_permission then requires
    that he be the one running this session. Reads of the object: session_readable_by."""

    message = "Only the Capo Partita assigned to this table session may do this."

    def has_permission(self, request, view) -> bool:
        user = request.user
        if not (user and user.is_authenticated):
            return False
        if request.method in SAFE_METHODS:
            return has_role(user, *FLOOR_READERS)
        return has_role(user, Role.CAPO_PARTITA)

    def has_object_permission(self, request, view, obj) -> bool:
        if request.method in SAFE_METHODS:
            if not session_readable_by(request.user, _session_of(obj)):
                raise PermissionDenied(SESSION_READ_REFUSED)
            return True
        return session_writable_by(request.user, _session_of(obj))
