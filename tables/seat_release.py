"""The table's part of releasing a patron's place, registered into floor/hooks.py by
tables/apps.py (floor never imports tables).

Runs inside floor.services.seat_release's transaction, after it locked the session and the
seat: a patron whose money is on this table cannot leave it, or he could be seated at
another table while he still holds this one's bank or has a stake in its coup in play
(RULES.md §6: no one holds places at several tables). The banker withdraws first (between
coups, RULES.md §4); a bettor waits for the coup to be settled.

After the release (same transaction): a bank being offered in turn does not wait for him
(while play is interrupted, what that decides waits for the resumption: tables/session_resume.py)."""

from __future__ import annotations

from typing import Any

from config.errors import Conflict
from floor.models import TableSession

from .models import BancoCall, Bank, Bet
from .services._common import coup_in_play
from .services.succession import succession_departure


def before_seat_release(*, seat: Any, by: Any) -> None:
    session_id, patron_id = seat.session_id, seat.patron_id
    bank = Bank.objects.filter(session_id=session_id, banker_id=patron_id, status=Bank.Status.ACTIVE).first()
    if bank is not None:
        raise Conflict(
            "patron_holds_the_bank",
            "This player holds the bank: he withdraws (or loses it) before leaving the table.",
            details={"patron": patron_id, "bank": bank.pk},
        )
    in_play = coup_in_play(TableSession(pk=session_id))
    if in_play is not None and (
        Bet.objects.filter(coup=in_play, patron_id=patron_id).exists()
        or BancoCall.objects.filter(coup=in_play, patron_id=patron_id).exists()
    ):
        raise Conflict(
            "patron_in_coup",
            "This player has a stake in the coup in play: release his place once it is settled.",
            details={"patron": patron_id, "coup": in_play.pk, "number": in_play.number},
        )


def after_seat_release(*, seat: Any, by: Any) -> None:
    """The patron has left: if the bank is being offered, his turn is skipped now (and a
    claim he made withdrawn), which may give the bank to the next or leave it to the asta;
    while play is interrupted, not before it resumes (succession_departure)."""
    succession_departure(session=TableSession.objects.select_related("table").get(pk=seat.session_id), by=by)
