"""What the Capo Partita marks about players: the Regola (RULES.md §3.2) and the
faux-tirage bar (§4, art. 60)."""

from __future__ import annotations

from config.errors import ApplicationError, Conflict, clean_text
from config.transactions import service_atomic
from floor.models import Patron, Seat, TableSession

from ..models import FauxTirageBar, RegolaMark
from ._common import User, audit, coup_in_play, lock_session, now, place_of, profile_of
from .succession import succession_departure


@service_atomic
def regola_mark(*, session: TableSession, by: User, patron: Patron, declared: bool) -> RegolaMark:
    """Mark (or unmark) a player who declared he plays alla Regola. Only where the profile
    has the Regola (venezia). Each coup snapshots the marks at rien ne va plus, so a mark
    changed during a coup applies from the next one."""
    session = lock_session(session, by, play=False)
    profile = profile_of(session)
    if not profile.regola_allowed:
        raise ApplicationError(
            "regola_not_allowed",
            "This table's profile has no Regola to declare.",
            details={"profile": profile.name},
        )
    if type(declared) is not bool:
        raise ApplicationError("bad_decision", "declared is true or false.")
    place_of(session, patron)
    mark = RegolaMark.objects.filter(session=session, patron=patron).first()
    old = None if mark is None else mark.declared
    if bool(old) == declared:  # nothing to record (never declared counts as not alla Regola)
        raise Conflict(
            "regola_unchanged",
            "This player plays alla Regola already." if declared else "This player does not play alla Regola.",
            details={"patron": patron.pk, "declared": declared},
        )
    if mark is None:
        mark = RegolaMark(session=session, patron=patron)
    mark.declared, mark.set_at, mark.set_by = declared, now(), by
    mark.save()
    coup = coup_in_play(session)
    audit(
        session,
        by,
        "regola.marked",
        mark,
        {
            "patron": patron.pk,
            "old": old,
            "new": declared,
            "applies_from_coup": None if coup is None or coup.state == "betting" else coup.number + 1,
            "at": mark.set_at.isoformat(),  # the row's time (audit.reports.records holds it)
        },
    )
    return mark


@service_atomic
def faux_tirage_bar(*, session: TableSession, by: User, patron: Patron, reason: str) -> FauxTirageBar:
    """Bar a player from holding the cards for the rest of the session: the only sanction
    for a false draw (RULES.md §4). He may still bet."""
    session = lock_session(session, by, play=False)
    reason = clean_text(reason, FauxTirageBar, "reason")
    if not reason:
        raise ApplicationError("reason_required", "Say why the player is barred.")
    if FauxTirageBar.objects.filter(session=session, patron=patron).exists():
        raise Conflict(
            "patron_already_barred", "The patron is barred already.", details={"patron": patron.pk}
        )
    if not Seat.objects.filter(session=session, patron=patron).exists():
        raise ApplicationError(
            "patron_not_at_table", "The patron has not played at this table.", details={"patron": patron.pk}
        )
    coup = coup_in_play(session)
    at = now()
    bar = FauxTirageBar.objects.create(session=session, patron=patron, coup=coup, reason=reason, at=at, by=by)
    audit(
        session,
        by,
        "faux_tirage.barred",
        bar,
        {"patron": patron.pk, "reason": reason, "coup": coup.pk if coup else None, "at": at.isoformat()},
    )
    # A barred player may not hold the cards: if the bank is being offered, not to him (at
    # once; what that decides waits for the resumption while play is interrupted).
    succession_departure(session=session, by=by)
    return bar
