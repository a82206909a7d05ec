"""Read-only queries over a gaming day's games, for the end-of-day report and the
registers (RULES.md §8). Nothing here writes.

Rows that grow with the day (coups, cards) are returned as `values_list` querysets, for
the caller to stream with `.iterator(chunk_size=...)`: on PostgreSQL that is a server-side
cursor, so memory stays flat however many coups the day had. Figures per table, session or
bank are aggregated by PostgreSQL (GROUP BY), never summed in Python.

A member of staff a row names (who annulled a coup, voided a card, barred a patron, ended a
succession, entered an answer or a bid, opened or closed an asta) is named as the report names
every one, "Full Name (username)" (floor.selectors.staff_said, in the row's own query); shoe_rows
gives the username unless asked `named` (the cagnotte register's API reads it too)."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from django.db.models import (
    BigIntegerField,
    Case,
    CharField,
    Count,
    F,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
    Value,
    When,
)
from django.db.models.functions import Coalesce, Concat

from floor.models import Seat
from floor.selectors import staff_said

from .engine.coup import BANKER, PUNTA, TIE
from .models import (
    Auction,
    Bank,
    Bet,
    Bid,
    CashCount,
    CashExchange,
    Coup,
    FauxTirageBar,
    FirstBankPass,
    Posting,
    RegolaMark,
    Shoe,
    ShoeCard,
    Succession,
    SuccessionOffer,
)

DECIDED = (BANKER, PUNTA)


def coup_get(*, pk: int) -> Coup | None:
    """One coup, for the books that refer to it (an unclaimed stake's coup)."""
    return Coup.objects.filter(pk=pk).first()


def coup_by_number(*, session_id: int, number: int) -> Coup | None:
    return Coup.objects.filter(session_id=session_id, number=number).first()


def _day_coups(gaming_day_id: int) -> QuerySet[Coup]:
    return Coup.objects.filter(session__gaming_day_id=gaming_day_id)


def _name(prefix: str) -> Case:
    """The person's full name; none (not " ") when there is nobody (an asta with no winner)."""
    return Case(
        When(**{f"{prefix}id__isnull": True}, then=Value(None)),
        default=Concat(F(f"{prefix}first_name"), Value(" "), F(f"{prefix}last_name")),
        output_field=CharField(),
    )


# Paid to the winner of a coup (art. 56-1): the banker's gain after the levy when he wins,
# the covered bets S (paid 1:1) when the punta wins, nothing on a tie.
_PAID = Case(
    When(winner=BANKER, then=F("banker_net")),
    When(winner=PUNTA, then=F("covered")),
    default=Value(0),
    output_field=BigIntegerField(),
)

COUP_COLUMNS = (
    "table", "session", "coup", "bank", "banker", "settled_at", "bank_amount", "covered", "banco_solo",
    "regola_punta", "regola_banker", "winner", "natural", "levy", "paid_to_winner", "conforming", "state",
)  # fmt: skip


def coup_rows(*, gaming_day_id: int, table_id: int | None = None) -> QuerySet:
    """One row per coup of the day (COUP_COLUMNS), in register order."""
    coups = _day_coups(gaming_day_id)
    if table_id is not None:
        coups = coups.filter(session__table_id=table_id)
    return (
        coups.annotate(banker_name=_name("bank__banker__"), paid=_PAID)
        .order_by("session__table__number", "session__number", "number")
        .values_list(
            "session__table__number", "session__number", "number", "bank__number", "banker_name",
            "settled_at", "bank_amount", "covered", "banco_solo", "regola_punta", "regola_banker",
            "winner", "as_played__natural", "cagnotte", "paid", "conforming", "state",
        )
    )  # fmt: skip


def annulled_rows(*, gaming_day_id: int) -> QuerySet:
    """(table, session, coup, annulled at, by, reason, cards, reconstruction cards, bets
    returned, their total) per annulled coup: before its cards, or once they had started by
    the Commissario (the cards it drew stay out of the shoe). No money moved, the bets went back."""
    return (
        _day_coups(gaming_day_id)
        .filter(state=Coup.State.ANNULLED)
        .annotate(n_bets=Count("bets"), bets_total=Coalesce(Sum("bets__amount"), 0, output_field=BigIntegerField()),
                  annulled_said=staff_said("annulled_by"))
        .order_by("session__table__number", "session__number", "number")
        .values_list(
            "session__table__number", "session__number", "number", "annulled_at", "annulled_said",
            "annul_reason", "cards", "next_cards", "n_bets", "bets_total",
        )
    )  # fmt: skip


def bet_rows(*, gaming_day_id: int) -> QuerySet:
    """Every bet of the day's settled coups, in betting order, with what its owner was paid
    or paid (his posting on that bet: +amount won 1:1, -amount lost, 0 on a tie that returns
    it). A bet carried over a tie names the coup it was placed on (the one before, in its
    session). The banker's side is the coups section's; the sum per patron is patron_balance_rows."""
    return (
        Bet.objects.filter(coup__session__gaming_day_id=gaming_day_id, coup__state=Coup.State.SETTLED)
        .annotate(
            patron_name=_name("patron__"),
            result=Coalesce(Sum("postings__amount"), 0, output_field=BigIntegerField()),
        )
        .order_by("coup__session__table__number", "coup__session__number", "coup__number", "order")
        .values_list(
            "coup__session__table__number", "coup__session__number", "coup__number", "order", "patron_name",
            "seat__seat_number", "standing", "kind", "amount", "carried_from__coup__number", "coup__winner", "result",
        )
    )  # fmt: skip


def patron_balance_rows(*, gaming_day_id: int) -> QuerySet:
    """Each patron's balance per session (his postings summed: bets, bank, and the levy he
    paid as banker is in the bank's net), with the coups he had money in."""
    return (
        Posting.objects.filter(session__gaming_day_id=gaming_day_id, patron__isnull=False)
        .values("session__table__number", "session__number", "patron_id")
        .annotate(
            patron_name=_name("patron__"),
            coups=Count("coup", distinct=True),
            won=Coalesce(Sum("amount", filter=Q(amount__gt=0)), 0, output_field=BigIntegerField()),
            lost=Coalesce(Sum("amount", filter=Q(amount__lt=0)), 0, output_field=BigIntegerField()),
            balance=Sum("amount"),
        )
        .order_by("session__table__number", "session__number", "patron_name", "patron_id")
        .values_list(
            "session__table__number", "session__number", "patron_id", "patron_name", "coups", "won", "lost",
            "balance",
        )
    )  # fmt: skip


def coup_count(*, gaming_day_id: int) -> int:
    return _day_coups(gaming_day_id).count()


NON_CONFORMING_COLUMNS = (
    "table", "session", "coup", "cards", "punta_draws", "banker_draws", "regola_punta", "regola_banker",
    "violations", "as_played", "reconstruction", "next_cards", "winner", "levy",
)  # fmt: skip


def non_conforming_rows(*, gaming_day_id: int) -> QuerySet:
    """The non-conforming coups (RULES.md §3.3) with both versions: as played and as
    reconstructed (the version settled on), the violations and the shoe cards the
    reconstruction drew."""
    return (
        _day_coups(gaming_day_id)
        .filter(conforming=False)
        .order_by("session__table__number", "session__number", "number")
        .values_list(
            "session__table__number", "session__number", "number", "cards", "punta_draws", "banker_draws",
            "regola_punta", "regola_banker", "violations", "as_played", "settled", "next_cards", "winner",
            "cagnotte",
        )
    )  # fmt: skip


def non_conforming_count(*, gaming_day_id: int) -> int:
    return _day_coups(gaming_day_id).filter(conforming=False).count()


# The coups played: an annulled coup (before its cards, its bets returned) is counted apart.
_PLAYED = ~Q(state=Coup.State.ANNULLED)


def _figures(qs: QuerySet, key: str) -> dict[Any, dict[str, int]]:
    rows = qs.values(key).annotate(
        coups=Count("pk", filter=_PLAYED),
        annulled=Count("pk", filter=Q(state=Coup.State.ANNULLED)),
        settled=Count("pk", filter=Q(state=Coup.State.SETTLED)),
        banker_wins=Count("pk", filter=Q(winner=BANKER)),
        punta_wins=Count("pk", filter=Q(winner=PUNTA)),
        ties=Count("pk", filter=Q(winner=TIE)),
        non_conforming=Count("pk", filter=Q(conforming=False)),
        covered=Coalesce(Sum("covered", filter=_PLAYED), 0, output_field=BigIntegerField()),
        levies_recorded=Coalesce(Sum("cagnotte"), 0, output_field=BigIntegerField()),
    )
    return {r.pop(key): r for r in rows}


def _house(qs: QuerySet, key: str) -> dict[Any, int]:
    rows = qs.filter(role=Posting.Role.HOUSE).values(key).annotate(total=Coalesce(Sum("amount"), 0, output_field=BigIntegerField()))
    return {r[key]: r["total"] for r in rows}


def table_figures(*, gaming_day_id: int) -> dict[int, dict[str, int]]:
    """table id -> coups (played), annulled, settled, banker/punta wins, ties, non-conforming, covered, and the
    levies twice: as recorded on the coups and as posted to the house (the expected cagnotte
    is the latter, RULES.md §8 art. 70)."""
    figures = _figures(_day_coups(gaming_day_id), "session__table_id")
    house = _house(Posting.objects.filter(session__gaming_day_id=gaming_day_id), "session__table_id")
    for table_id in set(figures) | set(house):
        figures.setdefault(table_id, dict.fromkeys(
            ("coups", "annulled", "settled", "banker_wins", "punta_wins", "ties", "non_conforming", "covered",
             "levies_recorded"), 0))  # fmt: skip
        figures[table_id]["expected_cagnotte"] = house.get(table_id, 0)
    return figures


def session_figures(*, gaming_day_id: int) -> dict[int, dict[str, int]]:
    """session id -> the same figures as table_figures, per session."""
    figures = _figures(_day_coups(gaming_day_id), "session_id")
    house = _house(Posting.objects.filter(session__gaming_day_id=gaming_day_id), "session_id")
    for session_id, row in figures.items():
        row["expected_cagnotte"] = house.get(session_id, 0)
    return figures


def expected_cagnotte(*, gaming_day_id: int, table_id: int) -> int:
    """The sum of the levies posted to the house at this table on this day, cents."""
    return (
        Posting.objects.filter(
            session__gaming_day_id=gaming_day_id, session__table_id=table_id, role=Posting.Role.HOUSE
        ).aggregate(s=Coalesce(Sum("amount"), 0, output_field=BigIntegerField()))["s"]
    )


def rule_usage(*, gaming_day_id: int) -> dict[int, Counter]:
    """table id -> Counter of (regola_punta, regola_banker, banco_solo) over decided coups."""
    usage: dict[int, Counter] = defaultdict(Counter)
    rows = (
        _day_coups(gaming_day_id)
        .filter(winner__in=DECIDED)
        .values_list("session__table_id", "regola_punta", "regola_banker", "banco_solo")
        .annotate(n=Count("pk"))
        .order_by()
    )
    for table_id, regola_punta, regola_banker, banco_solo, n in rows:
        usage[table_id][(regola_punta, regola_banker, banco_solo)] += n
    return dict(usage)


BANK_COLUMNS = (
    "table", "session", "bank", "banker", "origin", "opened_at", "ended_at", "end_reason", "initial_amount",
    "raised", "amount", "coups", "banker_wins", "covered", "levies", "banker_net",
)  # fmt: skip


def bank_rows(*, gaming_day_id: int, table_id: int | None = None) -> QuerySet:
    """Each banker's tenure described separately (RULES.md §8, art. 71), with its figures."""
    banks = Bank.objects.filter(session__gaming_day_id=gaming_day_id)
    if table_id is not None:
        banks = banks.filter(session__table_id=table_id)
    return (
        banks.annotate(
            banker_name=_name("banker__"),
            n_coups=Count("coups", filter=~Q(coups__state=Coup.State.ANNULLED)),
            n_banker_wins=Count("coups", filter=Q(coups__winner=BANKER)),
            sum_covered=Coalesce(
                Sum("coups__covered", filter=~Q(coups__state=Coup.State.ANNULLED)), 0, output_field=BigIntegerField()
            ),
            sum_levies=Coalesce(Sum("coups__cagnotte"), 0, output_field=BigIntegerField()),
            sum_net=Coalesce(Sum("coups__banker_net"), 0, output_field=BigIntegerField()),
        )
        .order_by("session__table__number", "session__number", "number")
        .values_list(
            "session__table__number", "session__number", "number", "banker_name", "origin", "opened_at",
            "ended_at", "end_reason", "initial_amount", "raised", "amount", "n_coups", "n_banker_wins", "sum_covered",
            "sum_levies", "sum_net",
        )
    )  # fmt: skip


SHOE_COLUMNS = (
    "table", "session", "shoe", "number", "decks", "loaded_at", "loaded_by", "finished_at", "cards_out", "voided",
)  # fmt: skip


def shoe_rows(*, gaming_day_id: int, table_id: int | None = None, named: bool = False) -> QuerySet:
    """Each shoe (SHOE_COLUMNS). Who loaded it: the username (the cagnotte register's API), or
    with `named` as the end-of-day report names staff (floor.selectors.staff_said)."""
    shoes = Shoe.objects.filter(session__gaming_day_id=gaming_day_id)
    if table_id is not None:
        shoes = shoes.filter(session__table_id=table_id)
    return (
        shoes.annotate(
            n_cards=Count("cards"), n_voided=Count("cards", filter=Q(cards__voided=True) | Q(cards__use="void")),
            **({"loaded_said": staff_said("loaded_by")} if named else {}),
        )
        .order_by("session__table__number", "session__number", "seq")
        .values_list(
            "session__table__number", "session__number", "seq", "number", "decks", "loaded_at",
            "loaded_said" if named else "loaded_by__username", "finished_at", "n_cards", "n_voided",
        )
    )  # fmt: skip


VOIDED_CARD_COLUMNS = ("table", "session", "shoe", "shoe_number", "position", "card", "reason", "at", "by")


def voided_card_rows(*, gaming_day_id: int) -> QuerySet:
    """Cards voided (seen face up in the sabot, dropped, or unused by a reconstruction): RULES.md §1, §3.3."""
    return (
        ShoeCard.objects.filter(shoe__session__gaming_day_id=gaming_day_id)
        .filter(Q(voided=True) | Q(use=ShoeCard.Use.VOID))
        .annotate(by_said=staff_said("by"))
        .order_by("shoe__session__table__number", "shoe__session__number", "shoe__seq", "position")
        .values_list(
            "shoe__session__table__number", "shoe__session__number", "shoe__seq", "shoe__number", "position",
            "code", "void_reason", "at", "by_said",
        )
    )  # fmt: skip


BAR_COLUMNS = ("table", "session", "patron", "coup", "reason", "at", "by")


def faux_tirage_bar_rows(*, gaming_day_id: int) -> QuerySet:
    return (
        FauxTirageBar.objects.filter(session__gaming_day_id=gaming_day_id)
        .annotate(patron_name=_name("patron__"), by_said=staff_said("by"))
        .order_by("session__table__number", "session__number", "at", "pk")
        .values_list(
            "session__table__number", "session__number", "patron_name", "coup__number", "reason", "at", "by_said",
        )
    )


def succession_rows(*, gaming_day_id: int) -> QuerySet:
    """Each time the bank passed (RULES.md §5), one row: whose bank ended and why, how it was
    offered (and at what), and how it ended: taken (by whom, at what, by which way), or
    lapsed and why (nobody took it, a bank entered directly, the close, no bid that stood)."""
    return (
        Succession.objects.filter(session__gaming_day_id=gaming_day_id)
        .annotate(
            outgoing=_name("outgoing_banker__"),
            successor=_followed(_name("new_bank__banker__"), _name("banker__")),
            successor_bank=_followed(F("new_bank__initial_amount"), F("initial_amount")),
            successor_origin=_followed(F("new_bank__origin"), F("origin")),
            ended_said=staff_said("ended_by"),
        )
        .order_by("session__table__number", "session__number", "number")
        .values_list(
            "session__table__number", "session__number", "number", "started_at", "outgoing", "reason", "kind",
            "amount", "floor", "minimum", "status", "lapse_reason", "successor", "successor_bank",
            "successor_origin", "ended_at", "ended_said",
        )
    )  # fmt: skip


def _followed(taken, direct):
    """The bank that followed a succession: its new bank when taken; when it lapsed because
    the Capo Partita entered a bank directly, that bank (the session's next, origin direct)."""
    entered = Bank.objects.filter(session_id=OuterRef("session_id"), number=OuterRef("previous_bank__number") + 1)
    return Case(
        When(lapse_reason="bank_opened_directly", then=Subquery(entered.annotate(v=direct).values("v")[:1])),
        default=taken,
    )


def succession_offer_rows(*, gaming_day_id: int) -> QuerySet:
    """Every offer of the bank, in the order of the right to it: who was asked, in which
    round, at what terms, and his answer (taken, claimed, passed, or skipped and why: barred,
    left, taken by another, outranked, the asta opened, the succession lapsed)."""
    return (
        SuccessionOffer.objects.filter(succession__session__gaming_day_id=gaming_day_id)
        .annotate(patron_name=_name("patron__"), answered_said=staff_said("answered_by"))
        .order_by("succession__session__table__number", "succession__session__number", "succession__number", "order")
        .values_list(
            "succession__session__table__number", "succession__session__number", "succession__number", "order",
            "round", "patron_name", "seat_number", "amount_min", "amount_max", "status", "reason", "amount",
            "answered_at", "answered_said",
        )
    )  # fmt: skip


def auction_rows(*, gaming_day_id: int) -> QuerySet:
    """The day's asta (RULES.md §5), one row each: who opened and closed it, how many bids,
    the winner and his bid (the new bank)."""
    return (
        Auction.objects.filter(session__gaming_day_id=gaming_day_id)
        .annotate(winner_name=_name("winning_bid__patron__"), opened_said=staff_said("opened_by"),
                  closed_said=staff_said("closed_by"))
        .order_by("session__table__number", "session__number", "pk")
        .values_list(
            "session__table__number", "session__number", "succession__number", "status", "opened_at",
            "opened_said", "closed_at", "closed_said", "bids_count", "winner_name",
            "winning_bid__amount",
        )
    )  # fmt: skip


def bid_rows(*, gaming_day_id: int) -> QuerySet:
    """Every bid of the day's asta, in its definite order, with whether it won."""
    return (
        Bid.objects.filter(auction__session__gaming_day_id=gaming_day_id)
        .annotate(patron_name=_name("patron__"), won=Q(won_auction__isnull=False), by_said=staff_said("by"))
        .order_by("auction__session__table__number", "auction__session__number", "auction_id", "seq")
        .values_list(
            "auction__session__table__number", "auction__session__number", "auction__succession__number", "seq",
            "patron_name", "seat_number", "standing", "amount", "at", "by_said", "won",
        )
    )  # fmt: skip


def day_row_counts(*, gaming_day_id: int) -> dict[str, int]:
    """How many rows the growing sections have (for the progress total): plain counts on
    the tables themselves, not on the annotated report querysets (cheaper by far)."""
    day = {"session__gaming_day_id": gaming_day_id}
    return {
        "banks": Bank.objects.filter(**day).count(),
        "shoes": Shoe.objects.filter(**day).count(),
        "voided_cards": ShoeCard.objects.filter(shoe__session__gaming_day_id=gaming_day_id)
        .filter(Q(voided=True) | Q(use=ShoeCard.Use.VOID))
        .count(),
        "bars": FauxTirageBar.objects.filter(**day).count(),
        "successions": Succession.objects.filter(**day).count(),
        "succession_offers": SuccessionOffer.objects.filter(succession__session__gaming_day_id=gaming_day_id).count(),
        "auctions": Auction.objects.filter(**day).count(),
        "bids": Bid.objects.filter(auction__session__gaming_day_id=gaming_day_id).count(),
    }


def day_named_patron_ids(*, gaming_day_id: int, also: tuple[QuerySet, ...] = ()) -> QuerySet:
    """The ids of every patron the day's rows refer to, whom the report may name: a place, a
    bank, a coup's punta, a bet, a posting, a Regola mark, a bar, a first bank declined, a
    succession's outgoing banker, an offer, a bid, a line of the changeur's register; `also`:
    more querysets of patron ids (the books' deposits). One query (a UNION), a superset of the
    patrons the report prints: each is held to the identity the trail registered."""
    day = {"session__gaming_day_id": gaming_day_id}
    parts = [
        qs.values_list(column, flat=True).order_by()
        for qs, column in (
            (Seat.objects.filter(**day), "patron_id"),
            (Bank.objects.filter(**day), "banker_id"),
            (Coup.objects.filter(**day, punta_id__isnull=False), "punta_id"),
            (Bet.objects.filter(coup__session__gaming_day_id=gaming_day_id), "patron_id"),
            (Posting.objects.filter(**day, patron_id__isnull=False), "patron_id"),
            (RegolaMark.objects.filter(**day), "patron_id"),
            (FauxTirageBar.objects.filter(**day), "patron_id"),
            (FirstBankPass.objects.filter(**day), "patron_id"),
            (Succession.objects.filter(**day), "outgoing_banker_id"),
            (SuccessionOffer.objects.filter(succession__session__gaming_day_id=gaming_day_id), "patron_id"),
            (Bid.objects.filter(auction__session__gaming_day_id=gaming_day_id), "patron_id"),
            (CashExchange.objects.filter(**day, patron_id__isnull=False), "patron_id"),
        )
    ]
    return parts[0].union(*parts[1:], *also)  # UNION, not UNION ALL: each id once
def cash_count_payload(count: CashCount) -> dict[str, Any]:
    """What a drawer count's event records of it (tables.services.cash_count): the end-of-day
    report keeps it of each count it lists, and the verification holds the rows to it
    (`drawer_mismatch`, `drawer_not_as_recorded`).

    The chips' figures are in it only when the chips were counted: a count recorded before they
    were counted at all has an event without those keys, and its payload stays byte for byte
    what that event says (the verification finds it as recorded). A count with chips has all
    four keys; the keys' presence is itself held to the event (chips written in SQL into a count
    without them, or taken out of one, make the payload differ).

    `staff_change` likewise, only for a changeur's handover count: a final count's payload (and
    every count recorded before handovers were counted) has no such key, byte for byte as its
    event; a staff change set or cleared in SQL makes the payload differ from the event."""
    payload = {
        "count": count.pk,
        "session": count.session_id,
        "float_issued": count.float_issued,
        "net": count.net,
        "expected": count.expected,
        "counted": count.counted,
        "difference": count.difference,
        "counted_by": count.counted_by_id,
        "counted_at": count.counted_at.isoformat(),  # the row's time (the event has its own)
        "note": count.note,
        "corrects": count.corrects_id,
    }
    if count.staff_change_id is not None:
        payload["staff_change"] = count.staff_change_id
    if count.chips_float is not None or count.chips_counted is not None or count.chips_expected is not None:
        payload.update(
            chips_float=count.chips_float,
            chips_expected=count.chips_expected,
            chips_counted=count.chips_counted,
            chips_difference=count.chips_difference,
        )
    return payload
