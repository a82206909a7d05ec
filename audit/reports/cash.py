"""The changeur's register in the end-of-day report (tables.services.cash): the day's cash
exchanged at the tables, and the patrons whose exchanges of the gaming day reached the
identification threshold (settings.AML_IDENTIFY_CENTS) summed across every table and
session of the day, both directions, voided lines left out (EU AMLD art. 11(d): operations
that appear to be linked; the register itself links them within a session only).

Each exchange the report lists is kept in its summary as one digest of what the events
record of it (`exchange_payload`), so the verification holds the rows it printed to the
session streams' `cash.exchanged` and `cash.exchange_voided` events up to the sealed heads
(`trail_payloads`, `cash_mismatch` in audit/reports/services.py).

The drawers' counts (tables.services.cash_count) likewise: each count listed is kept as the
digest of its payload, held to the `cash.drawer_counted` and `cash.drawer_count_corrected`
event that recorded it as of the build (`drawer_mismatch`), and each row as it stands to the
last event about it (`drawer_not_as_recorded`). A count's event is in its session's stream
when the day was open, in the day's books stream when the drawer was counted after the close:
both are read, in one query."""

from __future__ import annotations

import json
from typing import Any

from django.db.models import QuerySet

from audit.models import AuditEvent
from tables.models import CashCount, CashExchange

EXCHANGED, VOIDED = "cash.exchanged", "cash.exchange_voided"


def day_exchanges(*, gaming_day_id: int) -> QuerySet[CashExchange]:
    """Every line of the day's registers, voided ones included, by table, session and line,
    with what the report prints of them (one query)."""
    return (
        CashExchange.objects.filter(session__gaming_day_id=gaming_day_id)
        .select_related("session__table", "patron", "by", "voided_by")
        .order_by("session__table__number", "session__number", "number", "pk")
    )


def exchange_payload(x: CashExchange) -> dict[str, Any]:
    """What the events record of a line: the `cash.exchanged` event (its actor the recorder)
    and, once voided, the `cash.exchange_voided` one (its actor who voided it)."""
    return {
        "exchange": x.pk,
        "session": x.session_id,
        "number": x.number,
        "direction": x.direction,
        "amount": x.amount,
        "patron": x.patron_id,
        "linked_total": x.linked_total,
        "identification_required": x.identification_required,
        "at": x.at.isoformat(),
        "by": x.by_id,
        "voided_at": None if x.voided_at is None else x.voided_at.isoformat(),
        "voided_by": x.voided_by_id,
        "void_reason": x.void_reason,
    }


def trail_payloads(heads: dict[str, int]) -> dict[str, dict[str, Any]]:
    """The lines as the session streams' events said them up to `heads` ({stream: seq}),
    keyed by the exchange's id (text), each in exchange_payload's shape. An event whose
    payload is not what the services write is skipped (the chain check names it; its line
    then differs here)."""
    trail: dict[str, dict[str, Any]] = {}
    if not heads:
        return trail
    events = (
        AuditEvent.objects.filter(stream__name__in=list(heads), action__in=(EXCHANGED, VOIDED))
        .order_by("stream_id", "seq")
        .values_list("stream__name", "seq", "action", "subject_id", "actor_id", "payload_json")
    )
    for stream, seq, action, subject, actor, doc in events.iterator(chunk_size=2000):
        if seq > heads[stream]:
            continue  # after the build: a later event, not what the report listed
        try:
            data = json.loads(doc)
            if action == EXCHANGED:
                trail[subject] = {
                    "exchange": int(subject),
                    "session": int(stream.rpartition(":")[2]),
                    **{key: data[key] for key in ("number", "direction", "amount", "patron", "linked_total",
                                                  "identification_required", "at")},
                    "by": actor,
                    "voided_at": None,
                    "voided_by": None,
                    "void_reason": "",
                }  # fmt: skip
            elif subject in trail:
                trail[subject].update(voided_at=data["at"], voided_by=actor, void_reason=data["reason"])
            else:
                trail[subject] = {"exchange": subject, "voided_at": data["at"]}  # a void of no recorded line
        except (ValueError, KeyError, TypeError):
            continue
    return trail


# --------------------------------------------------------------------------- the drawers' counts

DRAWER_COUNTED, DRAWER_CORRECTED = "cash.drawer_counted", "cash.drawer_count_corrected"
DRAWER_ACTIONS = (DRAWER_COUNTED, DRAWER_CORRECTED)


def day_cash_counts(*, gaming_day_id: int) -> QuerySet[CashCount]:
    """Every count of the day's drawers, the changeurs' handovers' and the final ones, corrected
    ones included, by table, session and time, with what the report prints of them (one query:
    a handover's staff change and the changeur it relieved)."""
    return (
        CashCount.objects.filter(session__gaming_day_id=gaming_day_id)
        .select_related("session__table", "counted_by", "staff_change__old_changeur")
        .order_by("session__table__number", "session__number", "counted_at", "pk")
    )


def drawer_trail(streams: dict[str, int | None]) -> dict[str, Any]:
    """The drawers' counts as the events of `streams` said them (the day's session streams,
    and its books stream for the counts made after the close), keyed by the count's id
    (text), each the `new` of its event (tables.services.cash_count.count_payload's shape): up
    to each stream's seq (None: every event of it). One query, however many streams. An event
    whose payload is not what the service writes is skipped (the chain check names it; its
    count then differs)."""
    trail: dict[str, Any] = {}
    if not streams:
        return trail
    events = (
        AuditEvent.objects.filter(
            stream__name__in=list(streams), action__in=DRAWER_ACTIONS
        )
        .order_by("stream_id", "seq")
        .values_list("stream__name", "seq", "subject_id", "payload_json")
    )
    for stream, seq, subject, doc in events.iterator(chunk_size=2000):
        head = streams[stream]
        if head is not None and seq > head:
            continue  # after the build: a later event, not what the report listed
        try:
            trail[subject] = json.loads(doc)["new"]
        except (ValueError, KeyError, TypeError):
            continue
    return trail
