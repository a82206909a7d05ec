"""Database checks (run by `manage.py migrate` and `manage.py check --database default`).

floor.W001: a user holds roles that segregation of duties forbids together (floor.roles):
given before the rule, or written in SQL past its guard. He acts with none of them until
the back office gives him one role; this says who, so that it is done.

floor.W002: the database holds more than one casino. Staff are not tied to a casino: a
Commissario, a Direzione or an auditor acts in every casino of the database (a Capo Partita
and a changeur only at the sessions they are assigned to). A deployment runs one casino's
floor; this says when a database holds more, so that it is a decision, not an accident."""

from __future__ import annotations

from collections import defaultdict

from django.core.checks import Tags, Warning, register
from django.db import DatabaseError


@register(Tags.database)
def conflicting_roles(app_configs=None, databases=None, **kwargs):
    if not databases:
        return []
    from django.contrib.auth import get_user_model

    from .roles import ALL_ROLES, role_conflict, role_names

    user_model = get_user_model()
    through = user_model.groups.through
    held: dict[int, set[str]] = defaultdict(set)
    try:
        for user_id, name in through.objects.filter(group__name__in=ALL_ROLES).values_list("user_id", "group__name"):
            held[user_id].add(name)
        superusers = set(user_model.objects.filter(is_superuser=True).values_list("pk", flat=True))
        names = dict(user_model.objects.filter(pk__in=held).values_list("pk", user_model.USERNAME_FIELD))
    except DatabaseError:  # not migrated yet: nothing to look at
        return []
    warnings = []
    for user_id, roles in sorted(held.items()):
        conflict = role_conflict(roles, superuser=user_id in superusers)
        if conflict:
            warnings.append(Warning(
                f"{names.get(user_id, user_id)} holds roles that may not go together: {role_names(conflict)}; "
                "none of them is in force.",
                hint="Give the user one role in the admin (Users), or Commissario and Direzione.",
                obj=f"user {user_id}",
                id="floor.W001",
            ))  # fmt: skip
    return warnings


@register(Tags.database)
def casinos_share_their_staff(app_configs=None, databases=None, **kwargs):
    if not databases:
        return []
    from .models import Casino

    try:
        casinos = list(Casino.objects.order_by("code").values_list("code", flat=True)[:6])
    except DatabaseError:  # not migrated yet: nothing to look at
        return []
    if len(casinos) < 2:
        return []
    how_many = str(len(casinos)) if len(casinos) < 6 else "six or more"
    named = ", ".join(casinos[:5]) + (", ..." if len(casinos) > 5 else "")
    return [
        Warning(
            f"The database holds {how_many} casinos ({named}): staff are not tied to a casino, so every "
            "Commissario, Direzione Giochi and auditor acts in each of them.",
            hint="Run one deployment (one database) per casino unless their management is one.",
            obj="floor.Casino",
            id="floor.W002",
        )
    ]
