"""Staff roles. Each role is a Django auth group of the same name (created by migration)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from enum import StrEnum
from typing import Any


class Role(StrEnum):
    COMMISSARIO = "commissario"  # floor manager: days, tables, seats, minimums
    CAPO_PARTITA = "capo_partita"  # croupier: records the coups of the sessions assigned to him
    CHANGEUR = "changeur"  # exchanges cash for chips at a table
    AUDITOR = "auditor"  # reads everything, writes nothing
    DIREZIONE = "direzione"  # management: back office, disputes, count and sign-offs


ALL_ROLES = tuple(Role)
logger = logging.getLogger(__name__)

# Segregation of duties: who records the play (the Capo Partita), who handles the cash at
# the table (the changeur) and who audits the books are three people, and none of them is
# also the floor's supervisor or its management. Only the two supervising roles, Commissario
# and Direzione, may be held together (the director on duty also runs the floor).
COMPATIBLE_ROLES = frozenset({frozenset({Role.COMMISSARIO, Role.DIREZIONE})})


# A superuser administers the system (roles, authenticators): not someone who records the
# play, handles the cash or audits it.
NOT_FOR_SUPERUSERS = frozenset({Role.CAPO_PARTITA, Role.CHANGEUR, Role.AUDITOR})
SUPERUSER = "superuser"

ROLE_NAMES = {
    Role.COMMISSARIO: "Commissario di Gioco",
    Role.CAPO_PARTITA: "Capo Partita",
    Role.CHANGEUR: "changeur",
    Role.AUDITOR: "auditor",
    Role.DIREZIONE: "Direzione Giochi",
    SUPERUSER: "superuser",
}


def role_conflict(roles: Iterable[str], *, superuser: bool = False) -> tuple[str, ...] | None:
    """The staff roles among `roles` (and "superuser" for a superuser) that one person may
    not hold together, or None.

    Groups other than the five roles are not this module's concern and are ignored."""
    held = frozenset(str(role) for role in roles if str(role) in ALL_ROLES)
    if superuser and held & NOT_FOR_SUPERUSERS:
        return (SUPERUSER, *(role for role in ALL_ROLES if role in held & NOT_FOR_SUPERUSERS))
    if len(held) < 2 or held in COMPATIBLE_ROLES:
        return None
    return tuple(role for role in ALL_ROLES if role in held)


def role_names(roles: Iterable[str]) -> str:
    return ", ".join(ROLE_NAMES.get(role, str(role)) for role in roles)


def _effective(user: Any, roles: frozenset[str]) -> frozenset[str]:
    """A user who holds roles that may not go together (given before the guard existed, or
    written past it in SQL) acts with none of them until the back office fixes his roles."""
    conflict = role_conflict(roles, superuser=bool(getattr(user, "is_superuser", False)))
    if conflict:
        # (floor.W001 names him at migrate; here, once per request, only for debugging)
        logger.debug("user %s holds conflicting roles %s: none of them is in force", user.pk, conflict)
        return frozenset()
    return roles


def cache_roles(user: Any, roles: Iterable[str]) -> None:
    """Remember `roles` as the user's for this request (read along with the user: see
    floor.authentication), so that user_roles does not query them."""
    user._chemin_roles = _effective(user, frozenset(str(role) for role in roles))


def user_roles(user: Any) -> frozenset[str]:
    """The role names of a user, cached on the user object for the request."""
    if user is None or not getattr(user, "is_authenticated", False):
        return frozenset()
    cached = getattr(user, "_chemin_roles", None)
    if cached is None:
        cached = _effective(user, frozenset(user.groups.filter(name__in=ALL_ROLES).values_list("name", flat=True)))
        user._chemin_roles = cached
    return cached


def has_role(user: Any, *roles: Role | str) -> bool:
    return bool(user_roles(user).intersection(str(r) for r in roles))
