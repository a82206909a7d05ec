"""The table's part of closing a table session, registered into floor/hooks.py by
tables/apps.py (floor never imports tables).

Runs inside floor.services.table_session_close's transaction, after it locked the gaming
day and the session and marked the session closed: refuse while a coup is in play (its
bets are on the table, RULES.md §2), otherwise end the active bank (reason session_closed,
RULES.md §8 art. 71: the banker's operations end in the register) and the shoe in play,
and put the changeur's register's totals into the session's stream (tables.services.cash)."""

from __future__ import annotations

from typing import Any

from config.errors import Conflict

from .models import COUP_FINISHED, Coup
from .services import bank_end_for_session_close, cash_totals_for_session_close, shoe_finish_for_session_close


def before_table_session_close(*, session: Any, by: Any) -> None:
    in_play = (
        Coup.objects.filter(session_id=session.pk)
        .exclude(state__in=COUP_FINISHED)
        .values("pk", "number", "state")
        .first()
    )
    if in_play is not None:
        raise Conflict(
            "coup_in_progress",
            "A coup is in play at this table: finish it, or annul it (before its first card the Capo Partita, once its "
            "cards have started the Commissario), before closing the session.",
            details={"coup": in_play["pk"], "number": in_play["number"], "state": in_play["state"]},
        )
    bank_end_for_session_close(session=session, by=by)
    shoe_finish_for_session_close(session=session, by=by)
    cash_totals_for_session_close(session=session, by=by)
