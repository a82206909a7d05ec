"""Who may do what on the floor (RULES.md §6 and the vocabulary).

- Commissario di Gioco: opens and closes gaming days and table sessions, interrupts and
  resumes play, assigns and releases seats, changes minimums, registers patrons.
- Direzione Giochi: creates and edits tables (management; the admin's back office).
- Every staff role (capo_partita, changeur, auditor, direzione, commissario) reads the floor.
- The auditor reads everything and writes nothing.
- An authenticated user without a role may do nothing at all (403 everywhere).

Refusals raise DRF's PermissionDenied, which config.errors maps to
{"error": {"code": "permission_denied", ...}} with status 403."""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import SAFE_METHODS, BasePermission

from .roles import ALL_ROLES, Role, has_role

FLOOR_READERS = ALL_ROLES


class _RolePermission(BasePermission):
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


class CanReadFloor(_RolePermission):
    """Read-only endpoints: any staff role; writes are refused whoever asks."""

    message = "Reading the floor needs a staff role."


class CommissarioWrites(_RolePermission):
    message = "Only the Commissario di Gioco may do this."
    write_roles = (Role.COMMISSARIO,)


class DirezioneWrites(_RolePermission):
    message = "Only the Direzione Giochi may do this."
    write_roles = (Role.DIREZIONE,)


class IsCommissario(_RolePermission):
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

    has_permission lets any capo_partita reach the view (he may read the whole floor);
    has_object_permission then requires that he be the one running this session. Reads stay
    open to every floor role."""

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
            return has_role(request.user, *FLOOR_READERS)
        return session_writable_by(request.user, _session_of(obj))
