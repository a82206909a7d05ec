"""The hour the October change repeats, for the pages' tests: in Europe/Rome on 2026-10-25
the clock reads 02:00-02:59 twice (CEST, then CET). A page prints a moment of that hour with
its UTC offset (the `clock` filter), any other moment as the clock alone reads it."""

from __future__ import annotations

import datetime as dt
from typing import NamedTuple


class Moment(NamedTuple):
    at: dt.datetime  # aware, UTC
    day: str  # the local date, "Y-m-d"
    hm: str  # the local clock, "H:i"
    s: str  # its seconds, ":ss"
    offset: str  # what the page adds to the time: the UTC offset in the repeated hour only

    @property
    def minute(self) -> str:
        """The time as "H:i" and, in the repeated hour, its offset: "02:30+02:00"."""
        return f"{self.hm}{self.offset}"

    @property
    def second(self) -> str:
        return f"{self.hm}{self.s}{self.offset}"


MOMENTS = (
    Moment(dt.datetime(2026, 10, 25, 0, 30, 15, tzinfo=dt.UTC), "2026-10-25", "02:30", ":15", "+02:00"),  # CEST
    Moment(dt.datetime(2026, 10, 25, 1, 30, 15, tzinfo=dt.UTC), "2026-10-25", "02:30", ":15", "+01:00"),  # CET
    Moment(dt.datetime(2026, 10, 25, 2, 30, 15, tzinfo=dt.UTC), "2026-10-25", "03:30", ":15", ""),  # after it
)
