"""Dependency inversion for the floor: what other apps must do when the floor changes state.

ARCHITECTURE.md: `floor` never imports `tables` (only its pure rules engine's profiles, which
a table is created with; no model, service or page of tables). But closing a table session is not only
the floor's business: a coup still in play must stop the close, and the active bank ends
with the session (RULES.md §4, art. 71: each banker's operations end in the register). So
the floor publishes an explicit, ordered registry of callables, and the apps that depend on
the floor register into it from their AppConfig.ready() (tables/apps.py does).

Contract of a "before a table session closes" hook, `hook(*, session, by) -> None`:
- it runs INSIDE table_session_close's transaction, after the gaming day and the session
  rows are locked and the session is marked closed (not yet committed), so it sees the
  closed status and may act on it (e.g. end the active bank) under the same locks;
- it refuses the close by raising ApplicationError / Conflict with a stable code; everything
  (the close, the released seats, its own writes) is then rolled back together;
- it takes its own locks only after those (the lock order: gaming day -> table session ->
  bank -> coup), and it must be safe to run again for another close attempt.

Contract of a "before a place is released" hook, `hook(*, seat, by) -> None`: it runs
inside seat_release's transaction, after the session and the seat rows are locked and
before the seat is released; it refuses the release by raising ApplicationError / Conflict
(a patron who holds the bank or has a stake in the coup in play cannot leave the table, or
he could sit at another while his money is on this one, RULES.md §6).

Contract of an "after a place is released" hook, `hook(*, seat, by) -> None`: it runs
inside seat_release's transaction once the seat is released and its event recorded, so it
sees the patron gone; what it writes commits with the release (tables: nobody waits for a
player who left, so his turn to take the bank is skipped at once, RULES.md §5).

Contract of an "after a table session resumes" hook, `hook(*, session, by) -> None`: it runs
inside table_session_resume's transaction, after the session row is locked, the session is
open again and the resumption's event recorded (not yet committed); what it writes commits
with the resumption, and a refusal (ApplicationError / Conflict) rolls the resumption back
(tables: a bank succession that departures decided while play was interrupted is decided
now, RULES.md §5, §6). It takes its own locks only after the session's (the lock order).

Contract of a "before a gaming day opens" hook, `hook(*, casino, date, by) -> dict | None`:
it runs inside gaming_day_open's transaction, after the casino row is locked and the
floor's own checks passed; it refuses the opening by raising ApplicationError / Conflict,
or returns facts (a dict) that the opening's audit event records under "checks" (audit
registers the control register's check, RULES.md §8 art. 72).

Hooks run in registration order. Registering the same callable twice registers it once
(ready() may run more than once in a test process)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

SessionCloseHook = Callable[..., None]
SeatReleaseHook = Callable[..., None]
SessionResumeHook = Callable[..., None]

class _Hooks(list):
    """One ordered registry: a callable registered twice is registered once."""

    def register(self, hook: Callable[..., Any]) -> Callable[..., Any]:
        """Register `hook`; usable as a decorator. Returns the hook."""
        if hook not in self:
            self.append(hook)
        return hook

    def unregister(self, hook: Callable[..., Any]) -> None:
        """For tests that need the floor alone."""
        if hook in self:
            self.remove(hook)

    def run(self, **kwargs: Any) -> list[Any]:
        """Every hook in registration order (over a copy: a hook may unregister), their answers."""
        return [hook(**kwargs) for hook in tuple(self)]


_before_session_close = _Hooks()  # hook(*, session, by)
_before_seat_release = _Hooks()  # hook(*, seat, by)
_after_seat_release = _Hooks()  # hook(*, seat, by)
_after_session_resume = _Hooks()  # hook(*, session, by)
_before_gaming_day_open = _Hooks()  # hook(*, casino, date, by) -> dict | None

register_before_session_close = _before_session_close.register
unregister_before_session_close = _before_session_close.unregister
register_before_seat_release = _before_seat_release.register
register_after_seat_release = _after_seat_release.register
register_after_session_resume = _after_session_resume.register
unregister_after_session_resume = _after_session_resume.unregister
register_before_gaming_day_open = _before_gaming_day_open.register


def before_session_close_hooks() -> tuple[SessionCloseHook, ...]:
    return tuple(_before_session_close)


def run_before_session_close(*, session: Any, by: Any) -> None:
    """Called by floor.services.table_session_close inside its transaction (see above)."""
    _before_session_close.run(session=session, by=by)


def run_before_seat_release(*, seat: Any, by: Any) -> None:
    """Called by floor.services.seat_release inside its transaction (see above)."""
    _before_seat_release.run(seat=seat, by=by)


def run_after_seat_release(*, seat: Any, by: Any) -> None:
    """Called by floor.services.seat_release inside its transaction (see above)."""
    _after_seat_release.run(seat=seat, by=by)


def run_after_session_resume(*, session: Any, by: Any) -> None:
    """Called by floor.services.table_session_resume inside its transaction (see above)."""
    _after_session_resume.run(session=session, by=by)


def run_before_gaming_day_open(*, casino: Any, date: Any, by: Any) -> dict:
    """Called by floor.services.gaming_day_open inside its transaction (see above): the
    facts the hooks return, merged."""
    checks: dict = {}
    for facts in _before_gaming_day_open.run(casino=casino, date=date, by=by):
        checks.update(facts or {})
    return checks
