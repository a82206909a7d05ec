"""Shoes and the cards out of them (RULES.md §1, §6 art. 58)."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction

from config.errors import ApplicationError, Conflict
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
    """Take one card out of the shoe: the engine checks it (bad_card, card_exhausted,
    shoe_empty), the card is recorded in order, and the stop card is noticed when it appears.
    The caller holds the session lock."""
    state = engine_shoe(shoe)
    with engine_errors():
        code = state.void(card) if use == ShoeCard.Use.VOID else state.draw(card)
    at = now()
    shoe_card = ShoeCard.objects.create(
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
    shoe.state = state.to_dict()
    fields = ["state"]
    if state.stop_card_reached and shoe.stop_card_reached_at is None:
        # RULES.md §6 (art. 58): the current coup is finished; no further coup until a new shoe.
        shoe.stop_card_reached_at = at
        fields.append("stop_card_reached_at")
        audit(
            session,
            by,
            "shoe.stop_card_reached",
            shoe,
            {"shoe": shoe.pk, "seq": shoe.seq, "position": shoe_card.position, **_shoe_facts(state)},
        )
    shoe.save(update_fields=fields)
    return shoe_card


def void_drawn(*, shoe: Shoe, shoe_cards: Sequence[ShoeCard], reason: str) -> None:
    """Cards already drawn that went to the sibilla unused (a reconstruction's void cards, §3.3)."""
    if not shoe_cards:
        return
    state = engine_shoe(shoe)
    with engine_errors():
        for sc in shoe_cards:
            state.void_drawn(sc.code)
    shoe.state = state.to_dict()
    shoe.save(update_fields=["state"])
    ShoeCard.objects.filter(pk__in=[sc.pk for sc in shoe_cards]).update(voided=True, void_reason=reason)


@transaction.atomic
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
    number = (number or "").strip() or (session.shoe_number if last_seq == 0 else "")
    if not number:
        raise ApplicationError("shoe_number_required", "Give the number of the shoe being loaded.")
    if last_seq == 0 and number != session.shoe_number:
        raise ApplicationError(
            "shoe_number_mismatch",
            "The first shoe is the one assigned to the session.",
            details={"number": number, "session_shoe_number": session.shoe_number},
        )
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
            "previous": None
            if previous is None
            else {"shoe": previous.pk, "seq": previous.seq, "cards_left": engine_shoe(previous).cards_left},
        },
    )
    return shoe


@transaction.atomic
def card_void(*, session: TableSession, by: User, card: str, reason: str) -> ShoeCard:
    """A card seen face up in the sabot, or dropped: void, out of the shoe, to the sibilla (§1)."""
    session = lock_session(session, by)
    reason = (reason or "").strip()
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
