"""The table's part of resuming play, registered into floor/hooks.py by tables/apps.py
(floor never imports tables).

Runs inside floor.services.table_session_resume's transaction, after it locked the session,
opened it again and recorded the resumption: a bank succession that players' departures
decided while play was interrupted (a claim now won, or nobody left to ask) is decided now,
in the same transaction, with its audit events (RULES.md §5, §6; tables.services.succession)."""

from __future__ import annotations

from typing import Any

from floor.models import TableSession

from .services.succession import succession_resume


def after_table_session_resume(*, session: Any, by: Any) -> None:
    succession_resume(session=TableSession.objects.select_related("table").get(pk=session.pk), by=by)
