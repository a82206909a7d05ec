"""A session's registers against the events that recorded them: its places (seats, RULES.md
§6) and the first bank's declines (§5), its banks (art. 71), its minimum changes, staff
changes and interruptions (art. 70), its faux-tirage bars (art. 60) and Regola marks (§3.2),
its annulled coups, its shoes, its successions with their offers, astas and bids (RULES.md
§5), and the session's own row.

Like the coups (audit.reports.ledger), these rows have no chain and the report prints them:
a bank's last amount, a minimum change's figures, the reason of a bar or of an annulment
edited in SQL went into the report with every other check passing. The events written in
the same transactions say what each row holds; ledger's replay of the session's stream
(and of the day's, for the session's opening and closing) gathers them here, and
`records_as_played` names each row that differs: `record_mismatch`, with the record's kind,
its number (a bank's, a coup's, a shoe's) or its time, and each field in the books and in
the trail. The times the report prints are held to the row's own time, which each event
records beside its own (`at`); an event written before it did (and an offer's lower bound,
the terms it was answered on, before its events said it) leaves that field unheld."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from django.contrib.auth import get_user_model
from django.db.models import BooleanField, ExpressionWrapper, Q

from audit.models import AuditEvent
from floor.models import (
    GamingDay,
    MinimumChange,
    Seat,
    SessionInterruption,
    StaffChange,
    TableSession,
)
from tables.models import (
    Auction,
    Bank,
    Bid,
    Coup,
    FauxTirageBar,
    FirstBankPass,
    RegolaMark,
    Shoe,
    Succession,
    SuccessionOffer,
)

from .patrons import names_of_record

if TYPE_CHECKING:
    from collections.abc import Iterable

UNKNOWN = object()  # a figure the trail does not say (an event written before it said it)

# Each record's fields, as the books' columns give them (name -> column).
BOOKS: dict[str, dict[str, str]] = {
    "day": {"date": "date", "opened_at": "opened_at", "opened_by": "opened_by_id", "closed_at": "closed_at",
            "closed_by": "closed_by_id"},
    "session": {"capo_partita": "capo_partita_id", "changeur": "changeur_id", "shoe_number": "shoe_number",
                "minimum": "minimum", "maximum": "maximum", "status": "status", "opened_at": "opened_at",
                "opened_by": "opened_by_id", "closed_at": "closed_at", "closed_by": "closed_by_id"},
    "seat": {"patron": "patron_id", "seat_number": "seat_number", "standing": "standing", "taken_at": "taken_at",
             "taken_by": "taken_by_id", "left_at": "left_at", "left_by": "left_by_id"},
    "first_bank_pass": {"patron": "patron_id", "seat": "seat_id", "seat_number": "seat_number", "at": "at",
                        "by": "by_id"},
    "bank": {"number": "number", "banker": "banker_id", "seat_number": "seat__seat_number", "origin": "origin",
             "turn_seat": "turn_seat", "initial_amount": "initial_amount", "raised": "raised", "amount": "amount",
             "reserve_returned": "reserve_returned", "coups_completed": "coups_completed", "status": "status",
             "end_reason": "end_reason", "opened_at": "opened_at", "opened_by": "opened_by_id",
             "ended_at": "ended_at", "ended_by": "ended_by_id"},
    "minimum_change": {"old": "old", "new": "new", "old_maximum": "old_maximum", "new_maximum": "new_maximum",
                       "reason": "reason", "at": "at", "by": "by_id"},
    "staff_change": {"old_capo_partita": "old_capo_partita_id", "new_capo_partita": "new_capo_partita_id",
                     "old_changeur": "old_changeur_id", "new_changeur": "new_changeur_id", "reason": "reason",
                     "at": "at", "by": "by_id"},
    "interruption": {"interrupted_at": "interrupted_at", "interrupted_by": "interrupted_by_id",
                     "interrupted_as": "interrupted_as", "reason": "reason", "resumed_at": "resumed_at",
                     "resumed_by": "resumed_by_id", "resume_reason": "resume_reason"},
    "bar": {"patron": "patron_id", "coup": "coup_id", "reason": "reason", "at": "at", "by": "by_id"},
    "regola": {"patron": "patron_id", "declared": "declared", "set_at": "set_at", "set_by": "set_by_id"},
    "annulled_coup": {"state": "state", "annul_reason": "annul_reason", "annulled_at": "annulled_at",
                      "annulled_by": "annulled_by_id"},
    "shoe": {"seq": "seq", "number": "number", "decks": "decks", "loaded_at": "loaded_at",
             "loaded_by": "loaded_by_id", "finished": "finished", "finished_at": "finished_at",
             "finished_by": "finished_by_id"},
    "succession": {"number": "number", "previous_bank": "previous_bank__number",
                   "outgoing_banker": "outgoing_banker_id", "reason": "reason", "kind": "kind", "amount": "amount",
                   "floor": "floor", "status": "status", "lapse_reason": "lapse_reason", "started_at": "started_at",
                   "new_bank": "new_bank__number", "ended_at": "ended_at", "ended_by": "ended_by_id"},
    "auction": {"succession": "succession__number", "status": "status", "bids_count": "bids_count",
                "winning_bid": "winning_bid__seq", "opened_at": "opened_at", "opened_by": "opened_by_id",
                "closed_at": "closed_at", "closed_by": "closed_by_id"},
    "offer": {"succession": "succession__number", "order": "order", "round": "round", "patron": "patron_id",
              "seat_number": "seat_number", "amount_min": "amount_min", "amount_max": "amount_max",
              "status": "status", "reason": "reason",
              "amount": "amount", "answered_at": "answered_at", "answered_by": "answered_by_id"},
    "bid": {"succession": "auction__succession__number", "seq": "seq", "patron": "patron_id",
            "seat_number": "seat_number", "standing": "standing", "amount": "amount", "at": "at", "by": "by_id"},
}  # fmt: skip
ORDER = tuple(kind for kind in BOOKS if kind != "day")  # a session's (the day's: day_as_played)
# Where a record's rows are, and the column that tells it apart in words (else its time).
MODELS = {"session": TableSession, "seat": Seat, "first_bank_pass": FirstBankPass, "bank": Bank,
          "minimum_change": MinimumChange, "staff_change": StaffChange, "regola": RegolaMark,
          "interruption": SessionInterruption, "bar": FauxTirageBar, "annulled_coup": Coup, "shoe": Shoe,
          "succession": Succession, "offer": SuccessionOffer, "auction": Auction, "bid": Bid}  # fmt: skip
NUMBER = {"bank": "number", "annulled_coup": "number", "shoe": "seq", "succession": "number",
          "auction": "succession__number", "offer": "order"}  # fmt: skip
AT = {
    "seat": "taken_at",
    "first_bank_pass": "at",
    "regola": "set_at",
    "minimum_change": "at",
    "staff_change": "at",
    "interruption": "interrupted_at",
    "bar": "at",
    "bid": "at",
}
TIMES = {"opened_at", "closed_at", "ended_at", "interrupted_at", "resumed_at", "at", "annulled_at", "loaded_at",
         "finished_at", "started_at", "answered_at", "taken_at", "left_at", "set_at"}  # fmt: skip
# The fields that name a member of staff, or a patron (the reason gives their names too).
USERS = {"capo_partita", "changeur", "opened_by", "closed_by", "ended_by", "by", "old_capo_partita",
         "new_capo_partita", "old_changeur", "new_changeur", "interrupted_by", "resumed_by", "annulled_by",
         "loaded_by", "finished_by", "taken_by", "left_by", "set_by"}  # fmt: skip
PATRONS = {"banker", "patron", "outgoing_banker"}
MONEY = {"minimum", "maximum", "initial_amount", "raised", "amount", "reserve_returned", "old", "new",
         "old_maximum", "new_maximum", "floor", "amount_min", "amount_max"}  # fmt: skip


class RecordTrail:
    """The record events' part of ledger's replay (mixed into its _Trail): for each record
    (kind, row id), the fields the events say it holds. `self.bank_of` (coup -> bank) comes
    from coup.opened."""

    def __init__(self) -> None:
        self.records: dict[tuple[str, int], dict[str, Any]] = {}
        self.bank_of: dict[int, int] = {}
        self.event_at: Any = None  # the time of the event being replayed
        self.bid_seq: dict[int, Any] = {}  # bid -> its order in its asta
        self.auction_of_bids: dict[int, Any] = {}  # auction -> its succession's number

    def record(self, kind: str, pk: Any, /, **fields: Any) -> dict[str, Any]:
        key = pk if isinstance(pk, tuple) else int(pk)  # an offer: (its succession, its order)
        row = self.records.setdefault((kind, key), {"_at": self.event_at})  # when it was first recorded
        row.update(fields)
        return row

    # The session's opening and closing are in the day's stream (ledger reads them first).
    def session_opened(self, session: int, payload: dict[str, Any], actor: int | None) -> None:
        new = payload.get("new") or {}
        self.record("session", session, opened_by=actor, status=new.get("status", UNKNOWN),
                    opened_at=new.get("opened_at", UNKNOWN),
                    **{f: new.get(f, UNKNOWN) for f in ("capo_partita", "changeur", "shoe_number", "minimum",
                                                         "maximum")},
                    closed_at=None, closed_by=None)  # fmt: skip

    def session_closed(self, session: int, payload: dict[str, Any], actor: int | None) -> None:
        new = payload.get("new") or {}
        self.record("session", session, status=new.get("status", UNKNOWN), closed_at=new.get("closed_at", UNKNOWN),
                    closed_by=actor)  # fmt: skip
        ended = payload.get("interruption_ended")
        if ended is not None:  # a running interruption ends with the session, at its time
            self.record("interruption", ended, resumed_at=new.get("closed_at", UNKNOWN), resumed_by=actor,
                        resume_reason="session closed")  # fmt: skip
        for seat in payload.get("seats_released") or ():  # every place still held is released with it
            if isinstance(seat, int):
                self.record("seat", seat, left_at=new.get("closed_at", UNKNOWN), left_by=actor)

    # The places (floor.services.seat_assign, seat_release), in the session's own stream.
    def _seat_taken(self, seat: int | None, payload: dict[str, Any], actor: int | None) -> None:
        new = payload.get("new") or {}
        if seat is not None:
            self.record("seat", seat, patron=payload.get("patron", UNKNOWN),
                        seat_number=new.get("seat_number", UNKNOWN), standing=new.get("standing", UNKNOWN),
                        taken_at=new.get("taken_at", UNKNOWN), taken_by=actor, left_at=None,
                        left_by=None)  # fmt: skip

    def _seat_released(self, seat: int | None, payload: dict[str, Any], actor: int | None) -> None:
        if seat is not None:
            self.record("seat", seat, left_at=(payload.get("new") or {}).get("left_at", UNKNOWN), left_by=actor)

    def _bank_first_declined(self, row: int | None, payload: dict[str, Any], actor: int | None) -> None:
        """The first bank declined (tables.services.bank.first_bank_pass): its place (the seat
        row) since its event says it."""
        if row is not None:
            self.record("first_bank_pass", row, patron=payload.get("patron", UNKNOWN),
                        seat=payload.get("seat", UNKNOWN), seat_number=payload.get("seat_number", UNKNOWN),
                        at=payload.get("at", UNKNOWN), by=actor)  # fmt: skip

    def _regola_marked(self, mark: int | None, payload: dict[str, Any], actor: int | None) -> None:
        """The patron's one mark, set again in place at each change: what the last says."""
        if mark is not None:
            self.record("regola", mark, patron=payload.get("patron", UNKNOWN), declared=payload.get("new", UNKNOWN),
                        set_at=payload.get("at", UNKNOWN), set_by=actor)  # fmt: skip

    def _minimum_changed(self, session: int | None, payload: dict[str, Any], actor: int | None) -> None:
        fields = {
            f: payload.get(f, UNKNOWN) for f in ("old", "new", "old_maximum", "new_maximum", "reason", "at")
        }
        if payload.get("change") is not None:
            self.record("minimum_change", payload["change"], by=actor, **fields)
        if session is not None:
            self.record("session", session, minimum=fields["new"], maximum=fields["new_maximum"])

    def _table_session_staff_changed(
        self, session: int | None, payload: dict[str, Any], actor: int | None
    ) -> None:
        old, new = payload.get("old") or {}, payload.get("new") or {}
        if payload.get("change") is not None:
            self.record("staff_change", payload["change"], by=actor, reason=payload.get("reason", UNKNOWN),
                        at=payload.get("at", UNKNOWN),
                        **{f"{when}_{role}": side.get(role, UNKNOWN) for when, side in (("old", old), ("new", new))
                           for role in ("capo_partita", "changeur")})  # fmt: skip
        if session is not None:
            self.record("session", session, capo_partita=new.get("capo_partita", UNKNOWN),
                        changeur=new.get("changeur", UNKNOWN))  # fmt: skip

    def _session_status(self, session: int | None, payload: dict[str, Any]) -> None:
        if session is not None:
            self.record("session", session, status=(payload.get("new") or {}).get("status", UNKNOWN))

    def _table_session_interrupted(
        self, session: int | None, payload: dict[str, Any], actor: int | None
    ) -> None:
        self._session_status(session, payload)
        if payload.get("interruption") is not None:
            self.record("interruption", payload["interruption"], interrupted_at=payload.get("at", UNKNOWN),
                        interrupted_by=actor, interrupted_as=payload.get("interrupted_as", UNKNOWN),
                        reason=payload.get("reason", UNKNOWN), resumed_at=None, resumed_by=None,
                        resume_reason="")  # fmt: skip

    def _table_session_resumed(self, session: int | None, payload: dict[str, Any], actor: int | None) -> None:
        self._session_status(session, payload)
        if payload.get("interruption") is not None:
            self.record("interruption", payload["interruption"], resumed_at=payload.get("at", UNKNOWN),
                        resumed_by=actor, resume_reason=payload.get("reason", UNKNOWN))  # fmt: skip

    def _bank_opened(self, bank: int | None, payload: dict[str, Any], actor: int | None) -> None:
        if bank is None:
            return
        amount = payload.get("amount", UNKNOWN)
        self.record("bank", bank, number=payload.get("number", UNKNOWN), banker=payload.get("banker", UNKNOWN),
                    seat_number=payload.get("seat_number", UNKNOWN), origin=payload.get("origin", UNKNOWN),
                    turn_seat=payload.get("turn_seat", UNKNOWN), initial_amount=amount, amount=amount, raised=0,
                    reserve_returned=0, coups_completed=0, status=Bank.Status.ACTIVE, end_reason="",
                    opened_at=payload.get("at", UNKNOWN), opened_by=actor, ended_at=None, ended_by=None)  # fmt: skip

    def _bank_raised(self, bank: int | None, payload: dict[str, Any], actor: int | None) -> None:
        if bank is None:
            return
        row = self.record("bank", bank, amount=payload.get("new", UNKNOWN))
        added = payload.get("added")
        row["raised"] = (
            row.get("raised", 0) + added
            if isinstance(added, int) and row.get("raised") is not UNKNOWN
            else UNKNOWN
        )

    def _bank_ended(self, bank: int | None, payload: dict[str, Any], actor: int | None) -> None:
        if bank is None:
            return
        self.record("bank", bank, status=Bank.Status.ENDED, end_reason=payload.get("end_reason", UNKNOWN),
                    amount=payload.get("amount", UNKNOWN), coups_completed=payload.get("coups_completed", UNKNOWN),
                    ended_at=payload.get("at", UNKNOWN), ended_by=actor)  # fmt: skip

    _bank_lost = _bank_withdrawn = _bank_session_closed = _bank_ended

    def bank_settled(self, coup: int, payload: dict[str, Any]) -> None:
        """A coup settled: its bank's amount, status and reserve after it, one more coup."""
        bank = self.bank_of.get(coup)
        if bank is None:
            return
        after = payload.get("bank") or {}
        row = self.record("bank", bank, amount=after.get("new", UNKNOWN), status=after.get("status", UNKNOWN),
                          reserve_returned=after.get("reserve_returned", UNKNOWN))  # fmt: skip
        done = row.get("coups_completed", UNKNOWN)
        row["coups_completed"] = done + 1 if isinstance(done, int) else UNKNOWN

    def _coup_opened(self, coup: int | None, payload: dict[str, Any], actor: int | None) -> None:
        if coup is not None and isinstance(payload.get("bank"), int):
            self.bank_of[coup] = payload["bank"]

    def _coup_annulled(self, coup: int | None, payload: dict[str, Any], actor: int | None) -> None:
        if coup is not None:
            self.record("annulled_coup", coup, state=Coup.State.ANNULLED, annul_reason=payload.get("reason", UNKNOWN),
                        annulled_at=payload.get("at", UNKNOWN), annulled_by=actor)  # fmt: skip

    def _faux_tirage_barred(self, bar: int | None, payload: dict[str, Any], actor: int | None) -> None:
        if bar is not None:
            self.record("bar", bar, patron=payload.get("patron", UNKNOWN), coup=payload.get("coup", UNKNOWN),
                        reason=payload.get("reason", UNKNOWN), at=payload.get("at", UNKNOWN), by=actor)  # fmt: skip

    def shoe_loaded(self, shoe: int, payload: dict[str, Any], actor: int | None) -> None:
        previous = (payload.get("previous") or {}).get("shoe")
        at = payload.get("at", UNKNOWN)
        if previous is not None:  # the shoe it replaced ends as it is loaded
            self.record("shoe", previous, finished=True, finished_at=at, finished_by=actor)
        self.record("shoe", shoe, seq=payload.get("seq", UNKNOWN), number=payload.get("number", UNKNOWN),
                    decks=payload.get("decks", UNKNOWN), loaded_at=at, loaded_by=actor, finished=False,
                    finished_at=None, finished_by=None)  # fmt: skip

    def _shoe_finished(self, shoe: int | None, payload: dict[str, Any], actor: int | None) -> None:
        if shoe is not None:
            self.record(
                "shoe", shoe, finished=True, finished_at=payload.get("at", UNKNOWN), finished_by=actor
            )

    # Successions and the asta (RULES.md §5): banks and successions said by their numbers in
    # the session, as the report does; a bid by its order in its asta.
    def _bank_number(self, bank: Any) -> Any:
        row = self.records.get(("bank", bank)) if isinstance(bank, int) else None
        return row.get("number", UNKNOWN) if row is not None else UNKNOWN

    def _succession_started(self, succ: int | None, payload: dict[str, Any], actor: int | None) -> None:
        if succ is None:
            return
        self.record("succession", succ, number=payload.get("number", UNKNOWN),
                    previous_bank=self._bank_number(payload.get("previous_bank")),
                    outgoing_banker=payload.get("outgoing_banker", UNKNOWN), reason=payload.get("reason", UNKNOWN),
                    kind=payload.get("kind", UNKNOWN), amount=payload.get("amount", UNKNOWN),
                    floor=payload.get("floor", UNKNOWN), status=Succession.Status.OFFERING, lapse_reason="",
                    started_at=payload.get("at", UNKNOWN), new_bank=None, ended_at=None, ended_by=None)  # fmt: skip
        number = self.records[("succession", succ)]["number"]
        for offer in payload.get("offers") or ():
            if isinstance(offer, dict) and isinstance(offer.get("order"), int):
                self.record("offer", (succ, offer["order"]), succession=number, answered_at=None, answered_by=None,
                            **{f: offer.get(f, UNKNOWN) for f in ("order", "round", "patron", "seat_number",
                                                                   "amount_min", "amount_max", "status", "reason",
                                                                   "amount")})  # fmt: skip

    def _offers_changed(self, payload: dict[str, Any], actor: int | None) -> None:
        """The offers an answer, a departure, a lapse or the asta's opening changed, as the
        event lists them (tables.services.succession._save)."""
        succ = payload.get("succession")
        if not isinstance(succ, int):
            return
        for change in payload.get("changes") or ():
            if isinstance(change, dict) and isinstance(change.get("order"), int):
                # amount_max: the maximum an answered offer was bound by, said by the changes
                # written since it is kept; an older change leaves the one laid out.
                kept = {"amount_max": change["amount_max"]} if "amount_max" in change else {}
                self.record("offer", (succ, change["order"]), answered_by=actor, **kept,
                            **{f: change.get(f, UNKNOWN) for f in ("status", "reason", "amount", "amount_min",
                                                                   "answered_at")})  # fmt: skip

    def _succession_offer_passed(self, succ: int | None, payload: dict[str, Any], actor: int | None) -> None:
        self._offers_changed(payload, actor)

    _succession_offer_claimed = _succession_offer_accepted = _succession_offers_skipped = (
        _succession_offer_passed
    )

    def _succession_unclaimed(self, succ: int | None, payload: dict[str, Any], actor: int | None) -> None:
        if succ is not None:
            self.record("succession", succ, status=Succession.Status.UNCLAIMED)

    def _succession_taken(self, succ: int | None, payload: dict[str, Any], actor: int | None) -> None:
        if succ is not None:
            self.record("succession", succ, status=Succession.Status.TAKEN,
                        new_bank=self._bank_number(payload.get("bank")), ended_at=payload.get("at", UNKNOWN),
                        ended_by=actor)  # fmt: skip

    def _succession_lapsed(self, succ: int | None, payload: dict[str, Any], actor: int | None) -> None:
        self._offers_changed(payload, actor)
        if succ is not None:
            self.record("succession", succ, status=Succession.Status.LAPSED,
                        lapse_reason=payload.get("reason", UNKNOWN), ended_at=payload.get("at", UNKNOWN),
                        ended_by=actor)  # fmt: skip

    def _succession_number(self, succ: Any) -> Any:
        row = self.records.get(("succession", succ)) if isinstance(succ, int) else None
        return row.get("number", UNKNOWN) if row is not None else UNKNOWN

    def _auction_opened(self, auction: int | None, payload: dict[str, Any], actor: int | None) -> None:
        self._offers_changed(payload, actor)
        if auction is None:
            return
        number = self._succession_number(payload.get("succession"))
        self.record("auction", auction, succession=number, status=Auction.Status.OPEN, bids_count=0,
                    winning_bid=None, opened_at=payload.get("at", UNKNOWN), opened_by=actor, closed_at=None,
                    closed_by=None)  # fmt: skip
        if isinstance(payload.get("succession"), int):
            self.record("succession", payload["succession"], status=Succession.Status.AUCTION)
        self.auction_of_bids[auction] = number

    def _auction_bid(self, bid: int | None, payload: dict[str, Any], actor: int | None) -> None:
        if bid is None:
            return
        auction = payload.get("auction")
        self.record("bid", bid, succession=self.auction_of_bids.get(auction, UNKNOWN),
                    seq=payload.get("seq", UNKNOWN), patron=payload.get("patron", UNKNOWN),
                    seat_number=payload.get("seat_number", UNKNOWN), standing=payload.get("standing", UNKNOWN),
                    amount=payload.get("amount", UNKNOWN), at=payload.get("at", UNKNOWN), by=actor)  # fmt: skip
        self.bid_seq[bid] = payload.get("seq", UNKNOWN)
        if isinstance(auction, int):
            self.record("auction", auction, bids_count=payload.get("seq", UNKNOWN))

    def _auction_closed(self, auction: int | None, payload: dict[str, Any], actor: int | None) -> None:
        if auction is None:
            return
        winning = payload.get("winning_bid", UNKNOWN)
        self.record("auction", auction, status=Auction.Status.CLOSED, closed_at=payload.get("at", UNKNOWN),
                    closed_by=actor,
                    winning_bid=self.bid_seq.get(winning, UNKNOWN) if isinstance(winning, int) else winning)  # fmt: skip


RECORD_ACTIONS = (
    "seat.taken", "seat.released", "bank.first_declined", "regola.marked", "minimum.changed", "table_session.staff_changed", "table_session.interrupted", "table_session.resumed",
    "bank.opened", "bank.raised", "bank.lost", "bank.withdrawn", "bank.session_closed", "coup.opened",
    "coup.annulled", "faux_tirage.barred", "shoe.finished", "succession.started", "succession.unclaimed",
    "succession.taken", "succession.lapsed", "auction.opened", "auction.bid", "auction.closed",
    "succession.offer_passed", "succession.offer_claimed", "succession.offer_accepted", "succession.offers_skipped",
)  # fmt: skip


def day_as_played(day: GamingDay, head: int) -> list[dict[str, Any]]:
    """The gaming day's own row (its date, opening and close, printed on the report's first
    page) against its `gaming_day.opened` and `gaming_day.closed` events up to `head`: a
    `record_mismatch` of record "day" when a field differs. Its times are held where the
    events record the row's own (the close always has; the opening since it does)."""
    expected: dict[str, Any] = {}
    events = AuditEvent.objects.filter(stream__name=day.audit_stream, seq__lte=head,
                                       action__in=("gaming_day.opened", "gaming_day.closed"))  # fmt: skip
    for action, doc, actor in events.order_by("seq").values_list("action", "payload_json", "actor_id"):
        try:
            payload = json.loads(doc)
            new = payload.get("new") or {}
            if action == "gaming_day.opened":
                expected.update(date=payload.get("date", UNKNOWN), opened_at=new.get("opened_at", UNKNOWN),
                                opened_by=actor, closed_at=None, closed_by=None)  # fmt: skip
            else:
                expected.update(closed_at=new.get("closed_at", UNKNOWN), closed_by=actor)
        except (ValueError, TypeError, AttributeError):  # named by the chain checks if rewritten
            expected.update(dict.fromkeys(BOOKS["day"], UNKNOWN))
    books = dict(zip(BOOKS["day"], GamingDay.objects.filter(pk=day.pk).values_list(*BOOKS["day"].values()).get(),
                     strict=True))  # fmt: skip
    differ = {name: {"in_books": said(value), "in_trail": expected[name]} for name, value in books.items()
              if expected.get(name, UNKNOWN) is not UNKNOWN and not _same(value, expected[name])}  # fmt: skip
    if not differ:
        return []
    return [{"code": "record_mismatch", "record": "day", "number": None, "at": said(books["opened_at"]),
             "in_books": True, "in_trail": bool(expected), "fields": differ}]  # fmt: skip


def _books(session: TableSession, kind: str) -> Iterable[tuple[int, dict[str, Any], Any, Any]]:
    """(row id, fields, number, time) of each of the session's rows of this kind."""
    columns = BOOKS[kind]
    model = MODELS[kind]
    if kind == "session":
        rows = model.objects.filter(pk=session.pk)
    elif kind == "annulled_coup":
        rows = model.objects.filter(session=session, state=Coup.State.ANNULLED)
    elif kind == "bid":
        rows = model.objects.filter(auction__session=session)
    elif kind == "offer":
        rows = model.objects.filter(succession__session=session)
    else:
        rows = model.objects.filter(session=session)
    if kind == "shoe":
        rows = rows.annotate(
            finished=ExpressionWrapper(Q(finished_at__isnull=False), output_field=BooleanField())
        )
    extra = [c for c in (NUMBER.get(kind), AT.get(kind)) if c and c not in columns.values()]
    key = ("succession_id", "order") if kind == "offer" else ("pk",)
    for row in rows.order_by(*key).values_list(*key, *columns.values(), *extra):
        ids, values = row[: len(key)], row[len(key) :]
        pk = tuple(ids) if kind == "offer" else ids[0]
        fields = dict(zip(columns, values[: len(columns)], strict=True))
        more = {**dict(zip(columns.values(), values, strict=False)), **dict(zip(extra, values[len(columns) :],
                                                                                 strict=True))}  # fmt: skip
        yield pk, fields, more.get(NUMBER.get(kind)), more.get(AT.get(kind))


def _same(value: Any, expected: Any) -> bool:
    if hasattr(value, "isoformat"):  # a time: the event recorded it as ISO 8601
        return value.isoformat() == expected
    return value == expected


def records_as_played(session: TableSession, trail: RecordTrail, where: dict[str, Any],
                      coup_numbers: dict[int, int], *, own_row: bool = True) -> list[dict[str, Any]]:  # fmt: skip
    """Each record of the session against the trail (a `record_mismatch` per row that
    differs, or that one side has and the other not), in the order of BOOKS: the session,
    its places, first bank declines, banks, changes, interruptions, bars, Regola marks,
    annulled coups, shoes, successions, astas, offers and bids. `own_row`: whether the trail holds the session's opening and close (the
    day's stream was read)."""
    found: list[dict[str, Any]] = []
    by_kind: dict[str, dict[Any, dict[str, Any]]] = {}
    for (k, pk), row in trail.records.items():
        by_kind.setdefault(k, {})[pk] = row
    for kind in ORDER if own_row else ORDER[1:]:
        books = {pk: (fields, number, at) for pk, fields, number, at in _books(session, kind)}
        trail_rows = by_kind.get(kind, {})
        if kind == "session":
            trail_rows = {pk: row for pk, row in trail_rows.items() if pk == session.pk}
        for pk in sorted(set(books) | set(trail_rows)):
            fields, number, at = books.get(pk, (None, None, None))
            expected = trail_rows.get(pk)
            differ = {}
            if fields is not None and expected is not None:
                differ = {
                    name: {"in_books": said(value), "in_trail": expected[name]}
                    for name, value in fields.items()
                    if expected.get(name, UNKNOWN) is not UNKNOWN and not _same(value, expected[name])
                }
            if fields is not None and expected is not None and not differ:
                continue
            if number is None and expected is not None:
                number = expected.get("succession" if kind == "auction" else NUMBER.get(kind, ""))
            if kind == "annulled_coup":
                number = coup_numbers.get(pk, number)
            if at is None and expected is not None:  # not in the books: the time it was recorded
                at = expected.get("_at")
            if kind in ("offer", "bid"):  # said within its succession, as the report does
                where_in = {"succession": (fields or expected or {}).get("succession")}
            else:
                where_in = {}
            if kind == "bar" and "coup" in differ:  # a coup said by its number, as the report does
                for side in ("in_books", "in_trail"):
                    value = differ["coup"][side]
                    differ["coup"][side] = coup_numbers.get(value, value) if isinstance(value, int) else value
            found.append({"code": "record_mismatch", **where, **where_in, "record": kind, "number": number,
                          "at": at.isoformat() if hasattr(at, "isoformat") else None,
                          "in_books": fields is not None, "in_trail": expected is not None, "fields": differ})  # fmt: skip
    return found


def said(value: Any) -> Any:
    """A value as the trail says it: a time (or date) as ISO 8601, anything else as is."""
    return value.isoformat() if hasattr(value, "isoformat") else value


def name_records(reasons: list[dict[str, Any]]) -> None:
    """Each staff or patron field of a record_mismatch gets the names of both sides
    ("names": {"in_books": ..., "in_trail": ...}): staff by their usernames, patrons by the
    name the trail registered (patrons.names_of_record: not a row renamed in SQL), with
    whether it is of record ("names_of_record": False, his row's, for a patron no event
    registered; None where there is no name). A query for the staff and one reading for the
    patrons, none when no such field differs."""
    fields = [(name, sides) for r in reasons if r["code"] == "record_mismatch"
              for name, sides in r["fields"].items() if name in USERS | PATRONS]  # fmt: skip
    ids = {kind: {v for name, sides in fields if name in members
                  for v in (sides["in_books"], sides["in_trail"]) if isinstance(v, int)}
           for kind, members in (("users", USERS), ("patrons", PATRONS))}  # fmt: skip
    users = dict(get_user_model().objects.filter(pk__in=ids["users"]).values_list("pk", "username")) if ids[
        "users"] else {}  # fmt: skip
    patrons = names_of_record(ids["patrons"])
    for name, sides in fields:
        both = {side: sides[side] if isinstance(sides[side], int) else None for side in ("in_books", "in_trail")}
        if name in USERS:
            sides["names"] = {side: users.get(pk) for side, pk in both.items()}
            continue
        named = {side: patrons.get(pk) for side, pk in both.items()}
        sides["names"] = {side: None if n is None else n.name for side, n in named.items()}
        sides["names_of_record"] = {side: None if n is None else n.of_record for side, n in named.items()}
