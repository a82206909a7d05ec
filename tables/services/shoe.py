"""Shoes and the cards out of them (RULES.md §1, §6 art. 58)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from django.db import transaction

from config import prepared
from config.errors import ApplicationError, Conflict, clean_text
from config.transactions import service_atomic
from floor.models import TableSession
from tables.engine import Shoe as EngineShoe

from ..models import Coup, Shoe, ShoeCard
from ._common import User, audit, coup_in_play, engine_errors, lock_session, now, profile_of


def engine_shoe(shoe: Shoe) -> EngineShoe:
    with engine_errors():
        return EngineShoe.from_dict(shoe.state)


def _shoe_facts(state: EngineShoe) -> dict:
    return {
        "cards_left": state.cards_left,
        "dealable": state.dealable,
        "stop_card_reached": state.stop_card_reached,
    }


class ShoeDraw:
    """One shoe as a request takes cards out of it: its state parsed once, each card checked
    by the engine as it is drawn, and everything written by flush(), once: the new cards in
    one INSERT, the state in one UPDATE. The caller holds the session lock and flushes before
    its transaction ends (and before anything reads the shoe's cards back)."""

    def __init__(self, shoe: Shoe):
        self.shoe = shoe
        self.state = engine_shoe(shoe)
        self.new_cards: list[ShoeCard] = []
        self._fields: set[str] = set()
        self._voids: list[tuple[list[int], str]] = []
        self._corrected: list[ShoeCard] = []

    def draw(
        self,
        *,
        session: TableSession,
        by: User,
        card: object,
        use: str,
        coup: Coup | None = None,
        side: str = "",
        void_reason: str = "",
    ) -> ShoeCard:
        """Take one card out of the shoe: the engine checks it (bad_card, card_exhausted,
        shoe_empty), the card is recorded in order, and the stop card is noticed when it appears."""
        shoe, state = self.shoe, self.state
        with engine_errors():
            code = state.void(card) if use == ShoeCard.Use.VOID else state.draw(card)
        at = now()
        shoe_card = ShoeCard(
            shoe=shoe,
            position=len(state.drawn),
            code=code,
            use=use,
            coup=coup,
            side=side,
            voided=use == ShoeCard.Use.VOID,
            void_reason=void_reason,
            at=at,
            by=by,
        )
        self.new_cards.append(shoe_card)
        self._fields.add("state")
        if state.stop_card_reached and shoe.stop_card_reached_at is None:
            # RULES.md §6 (art. 58): the current coup is finished; no further coup until a new shoe.
            shoe.stop_card_reached_at = at
            self._fields.add("stop_card_reached_at")
            audit(
                session,
                by,
                "shoe.stop_card_reached",
                shoe,
                {"shoe": shoe.pk, "seq": shoe.seq, "position": shoe_card.position, **_shoe_facts(state)},
            )
        return shoe_card

    def correct(self, shoe_card: ShoeCard, card: object) -> ShoeCard:
        """A card drawn and recorded wrongly (`shoe_card`, as written): the same physical card,
        at the same position, read as `card`. The engine checks the shoe as if `card` had been
        drawn there (bad_card, card_exhausted, burned_card_mismatch); the row's code is written
        by flush()."""
        with engine_errors():
            shoe_card.code = self.state.correct(shoe_card.position, shoe_card.code, card)
        self._fields.add("state")
        self._corrected.append(shoe_card)
        return shoe_card

    def void_drawn(self, shoe_cards: Sequence[ShoeCard], reason: str) -> None:
        """Cards already drawn that went to the sibilla unused (a reconstruction's void cards, §3.3)."""
        if not shoe_cards:
            return
        with engine_errors():
            for sc in shoe_cards:
                self.state.void_drawn(sc.code)
        self._fields.add("state")
        written = []
        for sc in shoe_cards:
            sc.voided, sc.void_reason = True, reason
            if sc.pk is not None:
                written.append(sc.pk)
        if written:
            self._voids.append((written, reason))

    def flush(self) -> None:
        """The new cards (their ids set), the voids and the shoe's state: one round trip
        (config.prepared.write) where the database allows it."""
        prepared.write_rows(self.take_writes())

    def take_writes(self) -> list:
        """What flush() writes, for a caller that writes it with its own writes, first, in one
        round trip (config.prepared.write_rows): the new cards, then the shoe's state. The voids
        and corrections of cards written earlier are written at once."""
        cards, self.new_cards = self.new_cards, []
        for pks, reason in self._voids:
            ShoeCard.objects.filter(pk__in=pks).update(voided=True, void_reason=reason)
        self._voids = []
        for shoe_card in self._corrected:
            ShoeCard.objects.filter(pk=shoe_card.pk).update(code=shoe_card.code)
        self._corrected = []
        writes: list = [cards]
        if self._fields:
            self.shoe.state = self.state.to_dict()
            writes.append(prepared.update_sql(self.shoe, sorted(self._fields)))
            self._fields = set()
        return writes


def draw_card(
    *,
    session: TableSession,
    shoe: Shoe,
    by: User,
    card: object,
    use: str,
    coup: Coup | None = None,
    side: str = "",
    void_reason: str = "",
) -> ShoeCard:
    """One card out of the shoe, written at once (ShoeDraw.draw, then flush)."""
    draw = ShoeDraw(shoe)
    shoe_card = draw.draw(
        session=session, by=by, card=card, use=use, coup=coup, side=side, void_reason=void_reason
    )
    draw.flush()
    return shoe_card


def void_drawn(*, shoe: Shoe, shoe_cards: Sequence[ShoeCard], reason: str) -> None:
    """Cards already drawn that went to the sibilla unused, written at once."""
    if not shoe_cards:
        return
    draw = ShoeDraw(shoe)
    draw.void_drawn(shoe_cards, reason)
    draw.flush()


@service_atomic
def shoe_load(
    *,
    session: TableSession,
    by: User,
    number: str | None = None,
    decks: int | None = None,
    burn: Sequence[str | None] | None = None,
) -> Shoe:
    """Load a new shoe: the previous one ends. A new shoe never changes the banker (§1).

    The first shoe of a session is the one assigned to it (its number is the session's
    shoe_number, §6); later shoes may be the same sabot reshuffled. Profiles that burn
    (chemmy-fi: 7) record the burned cards, None for the unseen ones (all unseen if not given)."""
    session = lock_session(session, by)
    profile = profile_of(session)
    if coup_in_play(session) is not None:
        raise Conflict("coup_in_progress", "Finish the coup in play before changing the shoe.")
    previous = Shoe.objects.select_for_update().filter(session=session, finished_at__isnull=True).first()
    last_seq = (
        Shoe.objects.filter(session=session).order_by("-seq").values_list("seq", flat=True).first() or 0
    )
    number = clean_text(number, Shoe, "number") or (session.shoe_number if last_seq == 0 else "")
    if not number:
        raise ApplicationError("shoe_number_required", "Give the number of the shoe being loaded.")
    if last_seq == 0 and number.casefold() != session.shoe_number.casefold():
        raise ApplicationError(
            "shoe_number_mismatch",
            "The first shoe is the one assigned to the session.",
            details={"number": number, "session_shoe_number": session.shoe_number},
        )
    if last_seq == 0:
        number = session.shoe_number  # as assigned, whatever the case typed
    _refuse_shoe_in_use(session, number)
    decks = session.table.decks if decks is None else decks
    with engine_errors():
        state = EngineShoe.for_profile(profile, decks)
        if state.burn_cards:
            state.burn(list(burn) if burn is not None else [None] * state.burn_cards)
        elif burn:
            state.burn(list(burn))  # refused by the engine: this profile burns no card
    at = now()
    if previous is not None:
        previous.finished_at, previous.finished_by = at, by
        previous.save(update_fields=["finished_at", "finished_by"])
    shoe = Shoe.objects.create(
        session=session,
        seq=last_seq + 1,
        number=number,
        decks=decks,
        burn_cards=state.burn_cards,
        stop_card_from_end=state.stop_card_from_end,
        state=state.to_dict(),
        loaded_at=at,
        loaded_by=by,
    )
    audit(
        session,
        by,
        "shoe.loaded",
        shoe,
        {
            "seq": shoe.seq,
            "number": number,
            "decks": decks,
            "burned": state.to_dict()["burned"],
            "stop_at": state.stop_at,
            "at": at.isoformat(),
            "previous": None
            if previous is None
            else {"shoe": previous.pk, "seq": previous.seq, "cards_left": engine_shoe(previous).cards_left},
        },
    )
    return shoe


def shoe_finish_for_session_close(*, session: TableSession, by: User) -> Shoe | None:
    """After the Commissario closes the session (tables/session_close.py, in the close's
    transaction), the shoe in play ends with it: the day's report gives every shoe its end.
    None when no shoe is loaded."""
    shoe = Shoe.objects.select_for_update().filter(session=session, finished_at__isnull=True).first()
    if shoe is None:
        return None
    shoe.finished_at, shoe.finished_by = session.closed_at or now(), by
    shoe.save(update_fields=["finished_at", "finished_by"])
    audit(
        session,
        by,
        "shoe.finished",
        shoe,
        {"seq": shoe.seq, "number": shoe.number, "cards_left": engine_shoe(shoe).cards_left, "reason": "session_closed",
         "at": shoe.finished_at.isoformat()},
    )
    return shoe


def _refuse_shoe_in_use(session: TableSession, number: str) -> None:
    """A numbered sabot is at one table at a time (RULES.md §6): refused if it is the shoe in
    play at another open session of the gaming day. Shoe loads of one gaming day take turns
    on a transaction-scoped advisory lock (PostgreSQL), so two tables cannot both load it;
    it waits on no other lock, so it cannot deadlock with the session locks."""
    connection = transaction.get_connection()
    if connection.vendor == "postgresql":
        key = int.from_bytes(
            hashlib.sha256(f"chemin:shoe-numbers:{session.gaming_day_id}".encode()).digest()[:8],
            "big",
            signed=True,
        )
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [key])
    elsewhere = (
        Shoe.objects.filter(
            number__iexact=number, finished_at__isnull=True, session__gaming_day_id=session.gaming_day_id
        )
        .exclude(session_id=session.pk)
        .exclude(session__status=TableSession.Status.CLOSED)
        .values_list("session_id", flat=True)
        .first()
    )
    if elsewhere is not None:
        raise Conflict(
            "shoe_in_use",
            "This shoe is in play at another table.",
            details={"shoe_number": number, "session": elsewhere},
        )


@service_atomic
def card_void(*, session: TableSession, by: User, card: str, reason: str) -> ShoeCard:
    """A card seen face up in the sabot, or dropped: void, out of the shoe, to the sibilla (§1)."""
    session = lock_session(session, by)
    reason = clean_text(reason, ShoeCard, "void_reason")
    if not reason:
        raise ApplicationError("reason_required", "Say why the card is void.")
    shoe = Shoe.objects.select_for_update().filter(session=session, finished_at__isnull=True).first()
    if shoe is None:
        raise Conflict("no_shoe", "No shoe is loaded at this table.")
    coup = coup_in_play(session)
    shoe_card = draw_card(
        session=session, shoe=shoe, by=by, card=card, use=ShoeCard.Use.VOID, coup=coup, void_reason=reason
    )
    audit(
        session,
        by,
        "card.voided",
        shoe_card,
        {
            "shoe": shoe.pk,
            "card": shoe_card.code,
            "position": shoe_card.position,
            "reason": reason,
            "coup": coup.pk if coup else None,
        },
    )
    return shoe_card
