"""Each settled coup and its postings against the `coup.settled` event that booked them.

The posting rows have no trigger and no chain; the event that the settlement wrote in the
same transaction is hash-chained, and it lists the coup's postings (patron, role, amount).
Money moved in SQL between two patrons of a coup, or between a bettor and the banker, keeps
every coup summing to zero and every levy as it was: the report's other checks pass. This
one compares the rows with the events, coup by coup, and names the coup."""

from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING, Any

from audit.models import AuditEvent
from floor import selectors as floor_selectors
from floor.models import Patron
from tables.models import Coup, Posting

if TYPE_CHECKING:
    from audit.models import DayReport

CHUNK = 2000
# The settled coup's figures that its `coup.settled` event records too.
RESULT = ("winner", "bank_amount", "covered", "cagnotte", "banker_net")

Entry = tuple[int | None, str, int]  # (patron id or None for the house, role, signed cents)


def _listed(entries: Counter[Entry] | None) -> list[dict[str, Any]]:
    return [
        {"patron": patron, "role": role, "amount": amount}
        for (patron, role, amount), n in sorted(
            (entries or Counter()).items(), key=lambda kv: (kv[0][1], kv[0][0] or 0, kv[0][2])
        )
        for _ in range(n)
    ]


def postings_as_played(report: DayReport) -> list[dict[str, Any]]:
    """For each coup of the day's sealed sessions, its row and its posting rows against its
    `coup.settled` event (as of the report's build):
    - `coup_mismatch`: the settled coup's winner, bank, covered stake, levy or banker's net
      differ from the event's (`fields`: each one, in the books and in the trail), or a coup
      is settled in one and not in the other;
    - `postings_mismatch`: a posting changed, added or removed, or booked with no event.
    Read one session at a time, the events streamed: memory grows with a session's coups,
    never with the day's."""
    heads = {name: seq for name, seq, _ in (report.sealed_heads or [])}
    if not heads:
        return []  # a report built before its heads were kept: nothing to hold the rows to
    reasons: list[dict[str, Any]] = []
    for session in floor_selectors.day_sessions(gaming_day_id=report.gaming_day_id):
        stream = session.audit_stream
        if stream not in heads:
            continue
        where = {"table": session.table.number, "session": session.number}
        found: list[dict[str, Any]] = []  # this session's, in coup order once sorted
        numbers: dict[int, int] = {}
        results: dict[int, dict[str, Any]] = {}
        in_trail: dict[int, Counter[Entry]] = {}
        payloads = AuditEvent.objects.filter(
            stream__name=stream, action="coup.settled", seq__lte=heads[stream]
        ).values_list("payload_json", flat=True)
        for doc in payloads.iterator(chunk_size=CHUNK):
            payload = json.loads(doc)
            coup = int(payload["coup"])
            numbers[coup] = payload.get("number")
            results[coup] = {field: payload.get(field) for field in RESULT}
            in_trail[coup] = Counter(
                (p.get("patron"), p.get("role"), int(p.get("amount") or 0))
                for p in payload.get("postings") or ()
            )
        settled = Coup.objects.filter(session=session, state=Coup.State.SETTLED).values_list(
            "pk", "number", *RESULT
        )
        booked: dict[int, dict[str, Any]] = {}
        for coup, number, *values in settled.order_by("pk").iterator(chunk_size=CHUNK):
            numbers[coup] = number
            booked[coup] = dict(zip(RESULT, values, strict=True))
        for coup in sorted(set(results) | set(booked)):
            books, trail = booked.get(coup), results.get(coup)
            if books != trail:
                fields = {
                    field: {"in_books": (books or {}).get(field), "in_trail": (trail or {}).get(field)}
                    for field in RESULT
                    if (books or {}).get(field) != (trail or {}).get(field)
                }
                found.append({"code": "coup_mismatch", **where, "coup": numbers[coup],
                                "settled_in_books": books is not None, "settled_in_trail": trail is not None,
                                "fields": fields})  # fmt: skip
        in_books: dict[int, Counter[Entry]] = {}
        rows = Posting.objects.filter(session=session).values_list(
            "coup_id", "coup__number", "patron_id", "role", "amount"
        )
        for coup, number, patron, role, amount in rows.order_by("coup_id", "id").iterator(chunk_size=CHUNK):
            numbers.setdefault(coup, number)
            in_books.setdefault(coup, Counter())[(patron, role, amount)] += 1
        for coup in sorted(set(in_trail) | set(in_books)):
            if in_trail.get(coup) != in_books.get(coup):
                found.append({
                    "code": "postings_mismatch", **where, "coup": numbers.get(coup),
                    "in_books": _listed(in_books.get(coup)), "in_trail": _listed(in_trail.get(coup)),
                })  # fmt: skip
        reasons += sorted(found, key=lambda r: (r["coup"] or 0, r["code"] != "coup_mismatch"))
    _name_patrons(reasons)
    return reasons


def _name_patrons(reasons: list[dict[str, Any]]) -> None:
    """Each posting entry of a postings_mismatch gets its patron's name ("name"; none for the
    house), as the report names them: one query for them all."""
    entries = [e for r in reasons if r["code"] == "postings_mismatch" for e in (*r["in_books"], *r["in_trail"])]
    ids = {e["patron"] for e in entries if e["patron"] is not None}
    names = {pk: f"{first} {last}" for pk, first, last in
             Patron.objects.filter(pk__in=ids).values_list("pk", "first_name", "last_name")} if ids else {}  # fmt: skip
    for entry in entries:
        entry["name"] = names.get(entry["patron"])
