"""The patrons the end-of-day report names, held to the identity the audit trail registered.

The report names patrons (the bets, the banks and coups, the balances, the successions and
astas, the unclaimed deposits, the changeur's register and its AML section) by reading the
Patron rows at its build. Those rows have no chain, and every other check holds the patron
by his id: a patron renamed in SQL before the build ("Mario Rossi" into "Luigi Bianchi") went
into the report under the other name and the report verified. His identity (first and last
name, document type and number) is recorded by `patron.registered` in the `patrons` stream,
and by any later event of that stream about him that records it (`new`): the identity of
record is those events folded in order.

At the build the report keeps, for each patron the day's rows refer to, one digest per
identity field of his row as it printed it (`summary["patrons"]`, with the `patrons` stream's
head then): digests, so the summary carries no document number, and one per field, so the
verification names the field. The verification then holds:
- the report to the trail as of its build: `patron_mismatch` (`patron`, `fields`), each field
  the report named otherwise than the events up to that head registered it (a rename before
  the build, even put back since);
- each such patron's row as it stands to all his events (`patron_not_as_recorded`: the row,
  not the report; a rename after the build). A later audited change of his identity is one
  of his events, so it is no difference.
A patron no event registered (a row written behind the services) has no identity of record
and is not held here; what the trail says of his places, bets and lines holds him by his id.
A field no event recorded is not held either. The queries do not grow with the patrons: two
at the build (the rows, the head), two at the verification (the events, the rows).

The verification's other reasons that name patrons (a record's, a bet's or posting's, a
coup's punta) name them by the same identity of record (`names_of_record`), never by the
rows they are checking beside them: a row renamed in SQL is one reason, not the name the
others put on him. A patron no event registered is named by his row, and said so."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from django.db import connection
from django.db.models import TextField
from django.db.models.functions import Cast, Collate

from audit.models import AuditEvent, AuditStream
from floor.models import Patron

STREAM = "patrons"
SUBJECT = Patron._meta.label_lower
# The identity of record, in the order the summary keeps its digests.
IDENTITY = ("first_name", "last_name", "document_type", "document_number")
CHUNK = 2000


def field_digest(pk: int, field: str, value: Any) -> str:
    """One identity field of one patron as a SHA-256 (the patron's id in it: the same
    document of two patrons does not read alike)."""
    text = json.dumps([pk, field, value], separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def identity_digests(pk: int, identity: dict[str, Any]) -> list[str | None]:
    """A patron's identity as the summary keeps it: a digest per field of IDENTITY (None
    where the identity does not say the field)."""
    return [field_digest(pk, f, identity[f]) if f in identity else None for f in IDENTITY]


def stream_head() -> int:
    """The `patrons` stream's seq now (0: no patron registered yet)."""
    return AuditStream.objects.filter(name=STREAM).values_list("seq", flat=True).first() or 0


def named(ids: Iterable[int]) -> dict[str, Any]:
    """What a report keeps of the patrons it names (`ids`), read in the build's snapshot:
    {"head": the patrons stream's seq, "as_named": {id: [digest per IDENTITY field]}}."""
    ids = sorted(set(ids))
    rows = Patron.objects.filter(pk__in=ids).values_list("pk", *IDENTITY) if ids else []
    return {
        "head": stream_head(),
        "as_named": {str(pk): identity_digests(pk, dict(zip(IDENTITY, values, strict=True)))
                     for pk, *values in rows},
    }  # fmt: skip


def _fold(identity: dict[str, Any], doc: str) -> None:
    """One event's identity fields (`new`) into `identity`; an event that records none (or
    whose payload is not what a service writes: the chain check names it) changes nothing."""
    try:
        new = json.loads(doc).get("new")
    except (ValueError, AttributeError):
        return
    if isinstance(new, dict):
        identity.update({f: new[f] for f in IDENTITY if f in new})


def recorded(
    ids: Iterable[int], *, head: int | None
) -> tuple[dict[int, dict[str, Any]], dict[int, dict[str, Any]]]:
    """The identity of record of each patron of `ids`: as of `head` (the patrons stream's seq
    at a build; None: no head, nothing then) and now. One query, streamed."""
    then: dict[int, dict[str, Any]] = {}
    now: dict[int, dict[str, Any]] = {}
    keys = [str(pk) for pk in set(ids)]
    if not keys:
        return then, now
    events = AuditEvent.objects.filter(stream__name=STREAM, subject_type=SUBJECT, subject_id__in=keys)
    for subject, seq, doc in (
        events.order_by("seq").values_list("subject_id", "seq", "payload_json").iterator(chunk_size=CHUNK)
    ):
        pk = int(subject)
        _fold(now.setdefault(pk, {}), doc)
        if head is not None and seq <= head:
            _fold(then.setdefault(pk, {}), doc)
    return then, now


class Name(NamedTuple):
    """A patron as a verification reason names him: `of_record` True when his events in the
    `patrons` stream recorded both names (the name is theirs), False when they did not (a row
    written behind the services: the name is his row's as it stands, which nothing holds)."""

    name: str
    of_record: bool


def names_of_record(ids: Iterable[int]) -> dict[int, Name]:
    """Each patron of `ids` by his name of record ("First Last", folded from his events as
    `recorded` reads them, the trail as it stands): the reasons that name patrons say who
    the trail says they are, not what a row renamed in SQL reads (a rename is itself a
    reason: `patron_not_as_recorded`). A patron whose events do not record both names falls
    back to his row's, `of_record` False; one with neither (no event, no row) is left out.
    One query, and one more only when some patron has no name of record, whatever their
    number."""
    ids = {pk for pk in ids if isinstance(pk, int) and not isinstance(pk, bool)}
    if not ids:
        return {}
    _then, now = recorded(ids, head=None)
    names = {pk: Name(f"{identity['first_name']} {identity['last_name']}", True) for pk, identity in now.items()
             if "first_name" in identity and "last_name" in identity}  # fmt: skip
    rest = ids - set(names)
    if rest:
        names.update({pk: Name(f"{first} {last}", False) for pk, first, last in
                      Patron.objects.filter(pk__in=rest).values_list("pk", "first_name", "last_name")})  # fmt: skip
    return names


def _differ(pk: int, digests: list[Any], identity: dict[str, Any]) -> list[str]:
    """The fields whose digest is not that of the identity of record (fields it does not
    record are not held)."""
    return [f for f, kept in zip(IDENTITY, digests, strict=False)
            if f in identity and kept != field_digest(pk, f, identity[f])]  # fmt: skip


def rows_differ(row: dict[str, Any], identity: dict[str, Any]) -> list[str]:
    """The fields whose value in the row is not the identity of record's."""
    return [f for f in IDENTITY if f in identity and row.get(f) != identity[f]]


def as_named(summary: Any) -> list[dict[str, Any]]:
    """The report's patrons against the trail (module docstring): `patron_mismatch` then
    `patron_not_as_recorded`, by patron id. Two queries, whatever their number."""
    held = summary.get("patrons") if isinstance(summary, dict) else None
    listed = held.get("as_named") if isinstance(held, dict) else None
    if not isinstance(listed, dict):
        return []  # a report built before it kept its patrons (or reshaped: summary_mismatch says it)
    head = held.get("head")
    ids = sorted(int(pk) for pk in listed if isinstance(pk, str) and pk.isdigit())
    then, now = recorded(ids, head=head if isinstance(head, int) else None)
    reasons = []
    for pk in ids:
        digests = listed[str(pk)]
        fields = _differ(pk, digests if isinstance(digests, list) else [], then.get(pk, {}))
        if fields:
            reasons.append({"code": "patron_mismatch", "patron": pk, "fields": fields})
    reasons += not_as_recorded(ids, now)
    return reasons


def not_as_recorded(ids: list[int], identities: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    """Each patron of `ids` whose row is not the identity of record (`identities`, now):
    `patron_not_as_recorded` (`patron`, `fields`). One query, for those the trail registered."""
    held = [pk for pk in ids if identities.get(pk)]
    rows = {pk: dict(zip(IDENTITY, values, strict=True))
            for pk, *values in Patron.objects.filter(pk__in=held).values_list("pk", *IDENTITY)} if held else {}  # fmt: skip
    found = []
    for pk in held:
        row = rows.get(pk)
        fields = list(identities[pk]) if row is None else rows_differ(row, identities[pk])
        if fields:
            found.append(
                {
                    "code": "patron_not_as_recorded",
                    "patron": pk,
                    "fields": fields,
                    "in_books": row is not None,
                }
            )
    return found


def _byte_order() -> str:
    """The collation that orders text by its bytes: PostgreSQL's "C", SQLite's "BINARY" (the
    demo's database, where `audit_verify` runs too)."""
    return "BINARY" if connection.vendor == "sqlite" else "C"


def first_not_as_recorded() -> tuple[dict[str, Any], tuple[int, int]] | None:
    """The first patron (by id) whose row is not the identity his events in the `patrons`
    stream recorded, for `manage.py audit_verify`: ({"patron", "fields", "in_books"}, (seq, id)
    of his last identity event), or None. Two queries, both streamed and read side by side in
    the same order (the ids as text, byte order): memory stays flat in the number of patrons."""
    events = (
        AuditEvent.objects.filter(stream__name=STREAM, subject_type=SUBJECT)
        .order_by(Collate("subject_id", _byte_order()), "seq")
        .values_list("subject_id", "seq", "pk", "payload_json")
        .iterator(chunk_size=CHUNK)
    )
    rows = (
        Patron.objects.annotate(key=Collate(Cast("pk", TextField()), _byte_order()))
        .order_by("key")
        .values_list("key", *IDENTITY)
        .iterator(chunk_size=CHUNK)
    )
    row = next(rows, None)
    for subject, identity, last in _by_subject(events):
        while row is not None and row[0] < subject:
            row = next(rows, None)
        book = dict(zip(IDENTITY, row[1:], strict=True)) if row is not None and row[0] == subject else None
        if not identity:
            continue
        fields = list(identity) if book is None else rows_differ(book, identity)
        if fields:
            patron = int(subject) if subject.isdigit() else subject
            return {"patron": patron, "fields": fields, "in_books": book is not None}, last
    return None


def _by_subject(events: Iterator[tuple]) -> Iterator[tuple[str, dict[str, Any], tuple[int, int]]]:
    """(subject, identity folded over its events, (seq, id) of its last event), a subject at a
    time from events ordered by subject, then seq."""
    subject, identity, last = None, {}, (0, 0)
    for key, seq, pk, doc in events:
        if key != subject:
            if subject is not None:
                yield subject, identity, last
            subject, identity = key, {}
        _fold(identity, doc)
        last = (seq, pk)
    if subject is not None:
        yield subject, identity, last
