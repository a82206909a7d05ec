"""Each settled coup, its bets, its postings and the shoe's cards against the events that
recorded them.

The coup, bet, posting and shoe-card rows have no trigger and no chain; the events written
in the same transactions are hash-chained, and they say what the rows hold: the bets at
rien ne va plus, each card as it left the shoe (or was voided), the coup as played, and its
settlement with its postings (patron, role, amount). Money moved in SQL between two patrons
of a coup, or between a bettor and the banker, keeps every coup summing to zero and every
levy as it was; a bet's amount or a card edited changes the report's bets, coups and cards
sections with the money untouched: the report's other checks pass. This one replays each
session's events as of the report's build and compares the rows with them, coup by coup and
card by card, and names the coup or the card."""

from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING, Any

from django.contrib.auth import get_user_model

from audit.models import AuditEvent
from floor import selectors as floor_selectors
from tables.models import Bank, Bet, Coup, Posting, Shoe, ShoeCard

from . import patrons
from .records import (
    RECORD_ACTIONS,
    UNKNOWN,
    RecordTrail,
    day_as_played,
    name_records,
    records_as_played,
    said,
)

if TYPE_CHECKING:
    from audit.models import DayReport
    from floor.models import TableSession

CHUNK = 2000
# The settled coup's figures that its `coup.settled` event records too.
RESULT = ("winner", "bank_amount", "covered", "cagnotte", "banker_net")
# What the `coup.played` event records of the coup as played (RULES.md §3.3).
PLAYED = ("cards", "punta_draws", "banker_draws", "regola_punta", "regola_banker", "banco_solo",
          "conforming", "violations", "as_played")  # fmt: skip
# Every field a coup_mismatch may name, in the order it names them.
FIELDS = (*RESULT, "bank", "punta", *PLAYED, "next_cards", "settled", "settled_at", "settled_by")
# The events the replay reads.
ACTIONS = ("shoe.loaded", "card.dealt", "card.entry_corrected", "card.voided", "reconstruction.card", "bet.placed",
           "bet.withdrawn", "banco.called", "coup.rien_ne_va_plus", "coup.played", "coup.settled", *RECORD_ACTIONS)  # fmt: skip
# A bet's fields beyond its stake (patron, kind, amount) that the report prints and the
# events record: its seat (by number), its place in the betting order, whether standing,
# who recorded it and when (the row's own time: in `bet.placed` since it records it).
BET_FIELDS = ("seat", "order", "standing", "by", "at")
# A posting's fields beyond its entry (patron, role, amount) that the events record: the bet
# it settles (the report sums a bet's result from it; said by the bet's place in the betting
# order) and its time (the settlement's). An event written before it said the bet leaves it
# unheld.
POSTING_FIELDS = ("bet", "at")
# The session's own events in the day's stream.
DAY_ACTIONS = ("table_session.opened", "table_session.closed")
UNUSED = "unused by the reconstruction"  # the reason the settlement gives its void cards

Entry = tuple[int | None, str, int]  # (patron id or None for the house, role, signed cents)
Stake = tuple[int | None, str, int]  # (patron id, kind, cents)


def _id(value: Any) -> int:
    """A patron id to sort by (the house, or a value no patron has, first)."""
    return value if isinstance(value, int) else 0


def _listed(entries: Counter[Entry] | Counter[Stake] | None, label: str) -> list[dict[str, Any]]:
    """A coup's postings (label "role": by role, then patron) or bets ("kind": by patron) as
    the reason lists them, each as many times as it occurs."""
    by_role = label == "role"

    def order(item: tuple) -> tuple:
        (patron, second, amount), _ = item
        return (str(second), _id(patron), amount) if by_role else (_id(patron), str(second), amount)

    return [
        {"patron": patron, label: second, "amount": amount}
        for (patron, second, amount), n in sorted((entries or Counter()).items(), key=order)
        for _ in range(n)
    ]


class _Trail(RecordTrail):
    """One session's events as of the report's build, replayed: what each row should hold."""

    def __init__(self) -> None:
        super().__init__()
        self.closing: list[tuple] = []  # the session's close, replayed after its own events
        self.unreadable: list[dict[str, Any]] = []  # events whose payload cannot be replayed
        self.annulled: set[int] = set()  # the annulled coups (their cards, if any, stay as dealt)
        self.results: dict[int, dict[str, Any]] = {}  # coup -> RESULT, from coup.settled
        self.postings: dict[int, Counter[Entry]] = {}
        self.posting_fields: dict[int, dict[tuple[Any, Any], dict[str, Any]]] = {}  # coup -> POSTING_FIELDS
        self.coups: dict[int, dict[str, Any]] = {}  # coup -> punta, PLAYED, next_cards, settled
        self.bets: dict[int, Counter[Stake]] = {}  # coup -> the bets at rien ne va plus
        self.placed: dict[tuple[Any, Any], dict[str, Any]] = {}  # (coup, patron) -> a bet's BET_FIELDS
        self.called: dict[tuple[Any, Any], dict[str, Any]] = {}  # (coup, patron) -> a banco call's seat
        self.bet_fields: dict[int, dict[Any, dict[str, Any]]] = {}  # coup -> patron -> BET_FIELDS held
        self.cards: dict[tuple[int, int], dict[str, Any]] = {}  # (shoe, position) -> the card
        self.dealt: dict[int, list[tuple[int, int]]] = {}  # coup -> its dealt cards, in shoe order
        self.shoe: int | None = None  # the shoe in play as the events go

    def read(self, stream: str, head: int) -> None:
        events = AuditEvent.objects.filter(stream__name=stream, action__in=ACTIONS, seq__lte=head)
        rows = events.order_by("seq").values_list(
            "seq", "action", "subject_id", "payload_json", "actor_id", "at"
        )
        for seq, action, subject, doc, actor, self.event_at in rows.iterator(chunk_size=CHUNK):
            handler = getattr(self, "_" + action.replace(".", "_"))
            self._apply(stream, seq, action, handler, int(subject) if subject.isdigit() else None, doc, actor)

    def _apply(self, stream: str, seq: int, action: str, handler, subject, doc: str, actor) -> None:
        """One event replayed. An event whose payload is not what its action writes (not
        JSON, a key missing, a figure of another type: rewritten, its chain rebuilt) is not
        a verdict to crash on: it is named (`event_unreadable`) and the rows it recorded are
        held to the events around it only."""
        try:
            payload = json.loads(doc)
            if not isinstance(payload, dict):
                raise TypeError("not an object")
            handler(subject, payload, actor)
        except (ValueError, KeyError, TypeError, AttributeError):
            self.unreadable.append({"stream": stream, "seq": seq, "action": action})

    def read_session_events(self, session: TableSession, head: int) -> None:
        """The session's opening and closing, from the day's stream."""
        events = AuditEvent.objects.filter(
            stream__name=f"gaming_day:{session.gaming_day_id}", subject_type="floor.tablesession",
            subject_id=str(session.pk), action__in=DAY_ACTIONS, seq__lte=head,
        )  # fmt: skip
        stream = f"gaming_day:{session.gaming_day_id}"
        for seq, action, doc, actor in events.order_by("seq").values_list(
            "seq", "action", "payload_json", "actor_id"
        ):
            if action == "table_session.opened":
                self._apply(stream, seq, action, self.session_opened, session.pk, doc, actor)
            else:  # applied after the session's own events, which all come before its close
                self.closing.append((stream, seq, action, self.session_closed, session.pk, doc, actor))

    def _coup(self, coup: int) -> dict[str, Any]:
        return self.coups.setdefault(coup, {"next_cards": []})

    def _shoe_loaded(self, shoe: int | None, payload: dict[str, Any], actor: int | None) -> None:
        self.shoe = shoe
        if shoe is not None:
            self.shoe_loaded(shoe, payload, actor)

    def _card(self, payload: dict[str, Any], use: str, **more: Any) -> tuple[int, int] | None:
        if self.shoe is None or not isinstance(payload.get("position"), int):
            return None
        key = (self.shoe, payload["position"])
        self.cards[key] = {"card": payload.get("card"), "use": use, "coup": payload.get("coup"),
                           "side": "", "voided": False, "reason": "", **more}  # fmt: skip
        return key

    def _card_dealt(self, coup: int | None, payload: dict[str, Any], actor: int | None) -> None:
        key = self._card(payload, ShoeCard.Use.DEALT, side=payload.get("side", ""))
        if key is not None:
            self.dealt.setdefault(payload.get("coup"), []).append(key)

    def _card_entry_corrected(self, coup: int | None, payload: dict[str, Any], actor: int | None) -> None:
        """A dealt card entered wrongly: the same shoe card (its position), its code as corrected.
        The coup's cards are its next `coup.played`'s (or the shoe's, while it is in play)."""
        card = self.cards.get((payload["shoe"], payload["position"]))
        if card is not None:
            card["card"] = payload["card"]

    def _card_voided(self, card: int | None, payload: dict[str, Any], actor: int | None) -> None:
        self._card(payload, ShoeCard.Use.VOID, voided=True, reason=payload.get("reason", ""))

    def _reconstruction_card(self, coup: int | None, payload: dict[str, Any], actor: int | None) -> None:
        self._card(payload, ShoeCard.Use.RECONSTRUCTION)
        self._coup(payload["coup"])["next_cards"].append(payload.get("card"))

    def _bet_placed(self, bet: int | None, payload: dict[str, Any], actor: int | None) -> None:
        """A bet's fields as placed (a changed bet is placed again, in its place)."""
        self.placed[(payload["coup"], payload["patron"])] = {
            "seat": payload.get("seat_number", UNKNOWN), "order": payload.get("order", UNKNOWN),
            "standing": payload.get("standing", UNKNOWN), "by": actor, "at": payload.get("at", UNKNOWN),
        }  # fmt: skip

    def _bet_withdrawn(self, coup: int | None, payload: dict[str, Any], actor: int | None) -> None:
        self.placed.pop((payload["coup"], payload["patron"]), None)

    def _banco_called(self, call: int | None, payload: dict[str, Any], actor: int | None) -> None:
        self.called[(payload["coup"], payload["patron"])] = {
            "seat": payload.get("seat_number", UNKNOWN), "standing": payload.get("standing", UNKNOWN)}  # fmt: skip

    def _fields_of(self, coup: int, bets: Any, actor: int | None) -> dict[Any, dict[str, Any]]:
        """The BET_FIELDS of a coup's bets as the trail holds them (UNKNOWN: not said). A bet
        placed at the coup: its `bet.placed`. The banco solo's bet, written at rien ne va plus
        by whoever called it: first in order, at its caller's seat (its `banco.called`). A bet
        carried from a tie has no event of its own at the replay: its fields are not held."""
        fields: dict[Any, dict[str, Any]] = {}
        for bet in bets or ():
            patron = bet.get("patron")
            said = self.placed.get((coup, patron))
            if said is None and bet.get("kind") == Bet.Kind.BANCO and (coup, patron) in self.called:
                said = {"order": 1, "by": actor, "at": UNKNOWN, **self.called[(coup, patron)]}
            fields[patron] = said or dict.fromkeys(BET_FIELDS, UNKNOWN)
        return fields

    def _coup_rien_ne_va_plus(self, coup: int | None, payload: dict[str, Any], actor: int | None) -> None:
        if coup is None:
            return
        self._coup(coup)["punta"] = payload.get("punta", UNKNOWN)
        self.bets[coup] = Counter(
            (b.get("patron"), b.get("kind"), int(b.get("amount") or 0)) for b in payload.get("bets") or ()
        )
        self.bet_fields[coup] = self._fields_of(coup, payload.get("bets"), actor)

    def _coup_annulled(self, coup: int | None, payload: dict[str, Any], actor: int | None) -> None:
        """An annulled coup: its register row (records), and the bets it gave back."""
        super()._coup_annulled(coup, payload, actor)
        if coup is not None:
            self.annulled.add(coup)
            self.bets[coup] = Counter(
                (b.get("patron"), b.get("kind"), int(b.get("amount") or 0))
                for b in payload.get("bets_returned") or ()
            )
            if coup not in self.bet_fields:  # annulled before rien ne va plus: as placed
                self.bet_fields[coup] = self._fields_of(coup, payload.get("bets_returned"), actor)

    def _coup_played(self, coup: int | None, payload: dict[str, Any], actor: int | None) -> None:
        coup = int(payload["coup"])
        played = self._coup(coup)
        played.update({field: payload.get(field, UNKNOWN) for field in PLAYED})
        settled = payload.get("settled") or {}
        if settled.get("status") != "pending":
            self._resolved(coup, settled)

    def _coup_settled(self, coup: int | None, payload: dict[str, Any], actor: int | None) -> None:
        coup = int(payload["coup"])
        self.results[coup] = {field: payload.get(field) for field in RESULT}
        self.results[coup]["settled_at"] = payload.get("at", UNKNOWN)  # the row's time (not said before)
        self.results[coup]["settled_by"] = actor  # who settled it: the event's actor
        # Each posting's bet (since the event says it) and time (the settlement's), by its
        # patron and role (one bet per patron and coup, one banker's, one house's).
        self.posting_fields[coup] = {
            (p.get("patron"), p.get("role")): {"bet": p.get("bet", UNKNOWN), "at": payload.get("at", UNKNOWN)}
            for p in payload.get("postings") or ()
        }
        self.postings[coup] = Counter(
            (p.get("patron"), p.get("role"), int(p.get("amount") or 0)) for p in payload.get("postings") or ()
        )
        if "settled" not in self._coup(coup):  # settled on a reconstruction, after its coup.played
            self._resolved(coup, payload.get("resolution", UNKNOWN))
        self._coup(coup)["bank"] = self.bank_of.get(coup, UNKNOWN)
        self.bank_settled(coup, payload)

    def _resolved(self, coup: int, settled: Any) -> None:
        """The version the coup was settled on; its void cards (drawn, unused by the
        reconstruction, RULES.md §3.3) are the last ones dealt in the coup, voided."""
        self._coup(coup)["settled"] = settled
        void = len(settled.get("void_cards") or ()) if isinstance(settled, dict) else 0
        dealt = self.dealt.get(coup, [])
        for key in dealt[len(dealt) - void :] if void else ():
            self.cards[key].update(voided=True, reason=UNUSED)
        if settled is UNKNOWN:
            for key in dealt:  # whether they were voided, the trail does not say
                self.cards[key].update(voided=UNKNOWN, reason=UNKNOWN)


def books_as_played(report: DayReport) -> list[dict[str, Any]]:
    """For each session the report sealed, its rows against its events (as of the build):
    - `coup_mismatch`: a settled coup's figures (winner, bank, covered stake, levy, banker's
      net), who settled it, its punta, its cards and draws, its Regola marks, its conformity, violations and
      versions (as played, settled on) differ from the events' (`fields`: each one, in the
      books and in the trail), or a coup is settled in one and not in the other;
    - `bets_mismatch`: a settled coup's bets differ from those at its rien ne va plus (their
      stakes, or a bet's seat, order, standing, recorder or time, where the trail says them);
    - `postings_mismatch`: a posting changed, added or removed, or booked with no event, or
      its bet or time changed (`fields`, where the trail says them);
    - `cards_mismatch`: a card out of a shoe changed, added or removed (its code, what it
      was used for, its coup and hand, whether and why it was voided).
    Read one session at a time, the events streamed: memory grows with a session's coups,
    never with the day's."""
    heads = {name: seq for name, seq, _ in (report.sealed_heads or [])}
    if not heads:
        return []  # a report built before its heads were kept: nothing to hold the rows to
    reasons: list[dict[str, Any]] = []
    day = heads.get(f"gaming_day:{report.gaming_day_id}")
    if day is not None:
        reasons += day_as_played(report.gaming_day, day)
    for session in floor_selectors.day_sessions(gaming_day_id=report.gaming_day_id):
        if session.audit_stream in heads:
            reasons += session_as_played(session, heads[session.audit_stream], day)
    _name_patrons(reasons)
    name_records(reasons)
    return reasons


def session_as_played(session: TableSession, head: int, day_head: int | None) -> list[dict[str, Any]]:
    """One session's rows against its events up to `head` (its stream's seq), and its own
    row against its opening and closing in the day's stream up to `day_head` (None: not
    checked): the reasons books_as_played gives, unnamed."""
    where = {"table": session.table.number, "session": session.number}
    trail = _Trail()
    if day_head is not None:
        trail.read_session_events(session, day_head)
    trail.read(session.audit_stream, head)
    for closed in trail.closing:
        trail._apply(*closed)
    if day_head is None:  # the close is in the day's stream, unread: what it ended is not known
        for (kind, _), row in trail.records.items():
            if kind == "interruption" and row.get("resumed_at") is None:
                row.update(resumed_at=UNKNOWN, resumed_by=UNKNOWN, resume_reason=UNKNOWN)
            if kind == "seat" and row.get("left_at") is None:  # a place the close released
                row.update(left_at=UNKNOWN, left_by=UNKNOWN)
    numbers: dict[int, int] = {}
    books: dict[int, dict[str, Any]] = {}  # the settled coups' rows
    columns = (*RESULT, "bank_id", "punta_id", *PLAYED, "next_cards", "settled", "settled_at", "settled_by_id")
    coups = Coup.objects.filter(session=session).values_list("pk", "number", "state", *columns)
    for coup, number, state, *values in coups.order_by("pk").iterator(chunk_size=CHUNK):
        numbers[coup] = number
        if state == Coup.State.SETTLED:
            books[coup] = dict(zip(FIELDS, values, strict=True))
            books[coup]["settled_at"] = said(books[coup]["settled_at"])  # as the event says it
    found: list[dict[str, Any]] = []
    for coup in sorted(set(trail.results) | set(books)):
        row, event = books.get(coup), trail.results.get(coup)
        in_trail = {**(event or {}), **trail.coups.get(coup, {})} if event is not None else None
        fields = {
            field: {"in_books": (row or {}).get(field), "in_trail": (in_trail or {}).get(field)}
            for field in FIELDS
            if row is not None and in_trail is not None and in_trail.get(field, UNKNOWN) is not UNKNOWN
            and row.get(field) != in_trail[field]
        }  # fmt: skip
        if row is None or in_trail is None or fields:
            found.append({"code": "coup_mismatch", **where, "coup": numbers.get(coup),
                          "settled_in_books": row is not None, "settled_in_trail": in_trail is not None,
                          "fields": fields})  # fmt: skip
    found += _bets(session, trail, books, numbers, where)
    found += _postings(session, trail, numbers, where)
    found.sort(
        key=lambda r: (
            r["coup"] or 0,
            ("coup_mismatch", "bets_mismatch", "postings_mismatch").index(r["code"]),
        )
    )
    _bank_numbers(session, found)
    unreadable = [{"code": "event_unreadable", **where, **event} for event in trail.unreadable]
    return [*unreadable, *found, *_cards(session, trail, numbers, where),
            *records_as_played(session, trail, where, numbers, own_row=day_head is not None)]  # fmt: skip


def _bank_numbers(session: TableSession, reasons: list[dict[str, Any]]) -> None:
    """A coup's bank said by its number in the session, as the report does (a query only when
    a coup's bank differs)."""
    differ = [r["fields"]["bank"] for r in reasons if "bank" in r.get("fields", {})]
    if differ:
        numbers = dict(Bank.objects.filter(session=session).values_list("pk", "number"))
        for sides in differ:
            for side in ("in_books", "in_trail"):
                if isinstance(sides[side], int):
                    sides[side] = numbers.get(sides[side], sides[side])


def _bets(session, trail: _Trail, books: dict, numbers: dict, where: dict) -> list[dict[str, Any]]:
    """The settled coups' bet rows against the bets their rien ne va plus recorded; the
    annulled coups' against the bets their annulment gave back: the stakes (patron, kind,
    amount), and each bet's BET_FIELDS where the trail holds them (`fields`: per bet and
    field, both sides; a bet is one per patron and coup)."""
    in_books: dict[int, Counter[Stake]] = {coup: Counter() for coup in books}
    held: dict[int, dict[int, dict[str, Any]]] = {}  # coup -> patron -> BET_FIELDS in the books
    ended = (Coup.State.SETTLED, Coup.State.ANNULLED)
    rows = Bet.objects.filter(coup__session=session, coup__state__in=ended).values_list(
        "coup_id", "patron_id", "kind", "amount", "seat__seat_number", "order", "standing", "by_id", "at"
    )
    for coup, patron, kind, amount, *rest in rows.order_by("coup_id", "order").iterator(chunk_size=CHUNK):
        in_books.setdefault(coup, Counter())[(patron, kind, amount)] += 1
        held.setdefault(coup, {})[patron] = dict(zip(BET_FIELDS, [*rest[:-1], said(rest[-1])], strict=True))
    found = []
    for coup in sorted(set(in_books) | {c for c in trail.bets if c in trail.results or c in trail.annulled}):
        fields = [
            {"patron": patron, "field": field, "in_books": row[field], "in_trail": said_[field]}
            for patron, row in sorted(held.get(coup, {}).items())
            for said_ in [trail.bet_fields.get(coup, {}).get(patron, {})]
            for field in BET_FIELDS
            if said_.get(field, UNKNOWN) is not UNKNOWN and row[field] != said_[field]
        ]  # fmt: skip
        if fields or (in_books.get(coup) or Counter()) != (trail.bets.get(coup) or Counter()):  # none and no bets alike
            found.append({"code": "bets_mismatch", **where, "coup": numbers.get(coup),
                          "in_books": _listed(in_books.get(coup), "kind"),
                          "in_trail": _listed(trail.bets.get(coup), "kind"), "fields": fields})  # fmt: skip
    return found


def _postings(session, trail: _Trail, numbers: dict, where: dict) -> list[dict[str, Any]]:
    """The postings against their coups' `coup.settled`: the entries (patron, role, amount),
    and each posting's POSTING_FIELDS where the trail holds them (`fields`: per posting, by
    its patron and role, and field, both sides; a bet said by its place in the betting order)."""
    in_books: dict[int, Counter[Entry]] = {}
    held: dict[int, dict[tuple[Any, Any], dict[str, Any]]] = {}  # coup -> (patron, role) -> fields
    rows = Posting.objects.filter(session=session).values_list(
        "coup_id", "coup__number", "patron_id", "role", "amount", "bet_id", "at"
    )
    for coup, number, patron, role, amount, bet, at in rows.order_by("coup_id", "id").iterator(chunk_size=CHUNK):
        numbers.setdefault(coup, number)
        in_books.setdefault(coup, Counter())[(patron, role, amount)] += 1
        held.setdefault(coup, {})[(patron, role)] = {"bet": bet, "at": said(at)}
    found = []
    for coup in sorted(set(trail.postings) | set(in_books)):
        fields = [
            {"patron": patron, "role": role, "field": field, "in_books": row[field], "in_trail": said_[field]}
            for (patron, role), row in sorted(held.get(coup, {}).items(), key=lambda i: (str(i[0][1]), _id(i[0][0])))
            for said_ in [trail.posting_fields.get(coup, {}).get((patron, role), {})]
            for field in POSTING_FIELDS
            if said_.get(field, UNKNOWN) is not UNKNOWN and row[field] != said_[field]
        ]  # fmt: skip
        if fields or trail.postings.get(coup) != in_books.get(coup):
            found.append({"code": "postings_mismatch", **where, "coup": numbers.get(coup),
                          "in_books": _listed(in_books.get(coup), "role"),
                          "in_trail": _listed(trail.postings.get(coup), "role"), "fields": fields})  # fmt: skip
    _bet_orders([e for r in found for e in r["fields"] if e["field"] == "bet"])
    return found


def _bet_orders(entries: list[dict[str, Any]]) -> None:
    """A posting's bet said by its place in its coup's betting order, as the report does (a
    query only when a posting's bet differs; a bet no row holds stays said by its id)."""
    ids = {e[side] for e in entries for side in ("in_books", "in_trail") if isinstance(e[side], int)}
    if ids:
        orders = dict(Bet.objects.filter(pk__in=ids).values_list("pk", "order"))
        for entry in entries:
            for side in ("in_books", "in_trail"):
                if isinstance(entry[side], int):
                    entry[side] = orders.get(entry[side], entry[side])


def _cards(session, trail: _Trail, numbers: dict, where: dict) -> list[dict[str, Any]]:
    """The session's shoe cards against the card events, card by card in shoe order."""
    shoes, numbers_of = {}, {}
    for pk, seq, number in Shoe.objects.filter(session=session).values_list("pk", "seq", "number"):
        shoes[pk], numbers_of[pk] = seq, number
    in_books: dict[tuple[int, int], dict[str, Any]] = {}
    rows = ShoeCard.objects.filter(shoe__session=session).values_list(
        "shoe_id", "position", "code", "use", "coup_id", "side", "voided", "void_reason"
    )
    for shoe, position, code, use, coup, side, voided, reason in rows.order_by(
        "shoe_id", "position"
    ).iterator(chunk_size=CHUNK):
        in_books[(shoe, position)] = {"card": code, "use": use, "coup": coup, "side": side, "voided": voided,
                                      "reason": reason}  # fmt: skip
    found = []
    for key in sorted(set(in_books) | set(trail.cards), key=lambda k: (shoes.get(k[0], 0), k[1])):
        row, card = in_books.get(key), trail.cards.get(key)
        if row is not None and card is not None:
            card = {name: row[name] if value is UNKNOWN else value for name, value in card.items()}
        if row != card:
            found.append({"code": "cards_mismatch", **where, "shoe": shoes.get(key[0]),
                          "shoe_number": numbers_of.get(key[0]), "position": key[1],
                          "in_books": _card_said(row, numbers), "in_trail": _card_said(card, numbers)})  # fmt: skip
    return found


def _card_said(card: dict[str, Any] | None, numbers: dict[int, int]) -> dict[str, Any] | None:
    """A card as a reason shows it: its coup by number, as the report does."""
    if card is None:
        return None
    coup = card["coup"]
    return {**card, "coup": numbers.get(coup) if isinstance(coup, int) else coup}


def _name_patrons(reasons: list[dict[str, Any]]) -> None:
    """Each posting or bet entry of a mismatch gets its patron's name ("name"; none for the
    house), and a coup's punta both sides' ("names"), by the name the trail registered
    (patrons.names_of_record: a patron renamed in SQL is not named by the other name), each
    with whether it is of record ("name_of_record", "names_of_record": False, his row's, for a
    patron no event registered; None where there is no name): one reading for them all."""
    entries = [e for r in reasons if r["code"] in ("postings_mismatch", "bets_mismatch")
               for e in (*r["in_books"], *r["in_trail"], *r.get("fields", ()))]  # fmt: skip
    puntas = [
        r["fields"]["punta"] for r in reasons if r["code"] == "coup_mismatch" and "punta" in r["fields"]
    ]
    sides_of = ("in_books", "in_trail")
    names = patrons.names_of_record([*(e["patron"] for e in entries), *(p[s] for p in puntas for s in sides_of)])
    for entry in entries:
        name = names.get(entry["patron"]) if isinstance(entry["patron"], int) else None
        entry["name"], entry["name_of_record"] = (None, None) if name is None else name
    for sides in puntas:
        both = {side: names.get(sides[side]) if isinstance(sides[side], int) else None for side in sides_of}
        sides["names"] = {side: None if name is None else name.name for side, name in both.items()}
        sides["names_of_record"] = {side: None if name is None else name.of_record for side, name in both.items()}
    # Who settled a coup: a member of staff, by his username (a query only when it differs).
    settlers = [
        r["fields"]["settled_by"] for r in reasons if r["code"] == "coup_mismatch" and "settled_by" in r["fields"]
    ]
    ids = {v for sides in settlers for v in (sides["in_books"], sides["in_trail"]) if isinstance(v, int)}
    users = dict(get_user_model().objects.filter(pk__in=ids).values_list("pk", "username")) if ids else {}
    for sides in settlers:
        sides["names"] = {side: users.get(sides[side]) if isinstance(sides[side], int) else None
                          for side in ("in_books", "in_trail")}  # fmt: skip
