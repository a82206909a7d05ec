"""The Capo Partita's tablet: his open sessions, and one session's coup step by step.

Thin views (ARCHITECTURE.md): parse the form, authorize by object (only the Capo Partita
assigned to the session posts: floor.permissions.session_writable_by), call ONE service,
render. What the coup needs next, the rule in force and the Regola hint all come from
tables.selectors.session_game_state (the engine); the page only shows them."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.db.models import Max, OuterRef, Q, QuerySet, Subquery
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.formats import get_format
from django.utils.text import capfirst
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, pgettext_lazy
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from config.errors import ApplicationError
from config.htmx import refusal
from floor.models import Patron, SessionInterruption, TableSession
from floor.permissions import readable_sessions, session_readable_by, session_writable_by
from floor.roles import Role, has_role
from floor.selectors import staff_change_list
from tables import services
from tables.engine import get_profile, live
from tables.engine import succession as succession_rules
from tables.engine.errors import EngineError
from tables.engine.profiles import BancoSuivi, TieRule
from tables.models import (
    Auction,
    Bank,
    Bet,
    CashCount,
    CashExchange,
    Coup,
    FauxTirageBar,
    Succession,
    SuccessionOffer,
)
from tables.selectors import (
    cash_count_history,
    cash_exchange_list,
    cash_exchange_nets_until,
    cash_exchange_totals,
    coup_list,
    drawer_count_window,
    first_bank_pass_list,
    first_bank_start_needs,
    session_game_state,
)
from tables.services.cash import VOIDS_ANY
from tables.services.cash_count import COUNTS_DRAWER
from tables.services.coup import ANNULS_STARTED

from .templatetags.chemin_ui import card_text, clock, euros, euros_exact, signed_euros
from .views_common import (
    BadForm,
    Outcome,
    euros_to_cents,
    forbidden,
    form_post,
    int_field,
    is_htmx,
    not_found,
    stored_outcome,
)
from .wording import RULE_NAMES

RANKS = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"]
SUITS = [("S", "♠", gettext_lazy("spades")), ("H", "♥", gettext_lazy("hearts")),
         ("D", "♦", gettext_lazy("diamonds")), ("C", "♣", gettext_lazy("clubs"))]

CELLS = {"draw": gettext_lazy("draws"), "stand": gettext_lazy("stands"), "free": gettext_lazy("free")}
SIDES = {"punta": gettext_lazy("punta"), "banker": gettext_lazy("banker")}
REASONS = {
    "session_closed": gettext_lazy("the session is closed"),
    "session_interrupted": gettext_lazy("play is interrupted"),
    "no_active_bank": gettext_lazy("no bank is open"),
    "not_enough_players": gettext_lazy("too few seats are taken for the game to start"),
    "no_shoe": gettext_lazy("no sabot is loaded"),
    "stop_card_reached": gettext_lazy("the stop card has appeared: load a new sabot"),
    "coup_in_progress": gettext_lazy("a coup is in play"),
    "banker_barred": gettext_lazy("the banker is barred (faux tirage): his bank ends, withdraw it"),
}

# ----- passing the bank (RULES.md §5): the words of the succession panel
SUCCESSION_KINDS = {
    "rotation": gettext_lazy("a new bank from the minimum"),
    "all_altezza": gettext_lazy("seguito all'altezza"),
    "equal_bank": gettext_lazy("an equal bank"),
    "continuation": gettext_lazy("the continuation"),
}
ROUNDS = {
    "new_bank": gettext_lazy("new bank, in rotation"),
    "seated": gettext_lazy("all'altezza, seated in order"),
    "standing": gettext_lazy("all'altezza, standing: first to speak"),
    "claim": gettext_lazy("equal bank: the nearest claimant"),
    "height": gettext_lazy("at least the continuation"),
    "minimum": gettext_lazy("new bank from the minimum"),
}
OFFER_STATUSES = {
    "pending": gettext_lazy("pending"),
    "accepted": gettext_lazy("accepted"),
    "claimed": gettext_lazy("claimed"),
    "passed": gettext_lazy("passed"),
    "skipped": gettext_lazy("skipped"),
}
SKIP_REASONS = {
    "barred": gettext_lazy("barred: faux tirage"),  # in brackets after the status: none nested
    "left": gettext_lazy("left the table"),
    "taken": gettext_lazy("the bank was taken"),
    "outranked": gettext_lazy("a nearer player claimed it"),
    "auction": gettext_lazy("the asta opened"),
    "lapsed": gettext_lazy("the succession ended first"),
}
# Why a bid of an open asta no longer stands (engine bid_void): it cannot win.
BID_VOID = {
    "left": gettext_lazy("left the table: cannot win"),
    "barred": gettext_lazy("barred: cannot win"),
    "below_minimum": gettext_lazy("below the minimum now: cannot win"),
    "above_maximum": gettext_lazy("above the maximum now: cannot win"),
}
LAPSE_REASONS = {
    "nobody_accepted": gettext_lazy("nobody took the bank"),
    "no_bids": gettext_lazy("the asta closed without bids"),
    "no_valid_bids": gettext_lazy(
        "no bid stood at the close (its bidders left or were barred, or it was outside the limits in force)"
    ),
    "bank_opened_directly": gettext_lazy("the bank was opened directly"),
    "session_closed": gettext_lazy("the session closed"),
}
# The succession and auction services' refusals, in the user's language by code (the
# common ones are views_common.REFUSALS).
SUCCESSION_REFUSALS = {
    "not_your_turn": gettext_lazy("Another player has the right to the bank first."),
    "offer_answered": gettext_lazy("This player has answered already."),
    "offers_pending": gettext_lazy("The bank is still offered in turn: every seated player answers first."),
    "bank_claimed": gettext_lazy("A player has taken or claimed the bank."),
    "amount_not_offered": gettext_lazy("The bank is taken at the terms offered."),
    "not_offered": gettext_lazy("This player has no offer in this succession."),
    "outgoing_banker": gettext_lazy("The outgoing banker does not take his own bank back."),
    "bank_already_taken": gettext_lazy("The bank has been taken already."),
    "succession_not_open": gettext_lazy("The bank is no longer offered in turn."),
    "no_succession": gettext_lazy("No bank is waiting for a successor at this table."),
    "auction_already_open": gettext_lazy("The asta is open already."),
    "auction_closed": gettext_lazy("The asta is closed."),
    "auction_in_progress": gettext_lazy("The bank is at auction: close the asta."),
    "auction_not_in_profile": gettext_lazy("This table's profile has no asta."),
    "bid_below_minimum": gettext_lazy("A bid is at least the table minimum."),
    "bid_above_maximum": gettext_lazy("A bid is at most the table maximum."),
    "bid_below_best": gettext_lazy("A bid is at least the best bid so far."),
    "bad_amount": gettext_lazy("Enter a positive amount in euros, e.g. 1,500 or 150.50."),
    "not_capo_partita_or_commissario": gettext_lazy(
        "Only the table's Capo Partita or a Commissario opens and closes the asta."
    ),
}


def _succession_refusal(code: str, details: dict) -> str:
    """A succession refusal in the user's language. An amount outside the offer's terms is
    said with the terms (the engine's amount_min / amount_max): "the terms offered" alone
    did not tell the Capo Partita that the continuation he must reach is € 4 000."""
    if code == "amount_not_offered":
        low, high = details.get("amount_min"), details.get("amount_max")
        if type(low) is int:
            if high == low:
                return _("The bank is taken at the terms offered: exactly € %(amount)s.") % {"amount": euros(low)}
            if type(high) is int:
                return _("The bank is taken at the terms offered: from € %(low)s to € %(high)s.") % {
                    "low": euros(low),
                    "high": euros(high),
                }
            return _("The bank is taken at the terms offered: at least € %(amount)s.") % {"amount": euros(low)}
    # A bid refused is said with the figure it must meet (the services' details).
    figure = {"bid_below_minimum": "minimum", "bid_above_maximum": "maximum", "bid_below_best": "best"}.get(code)
    if figure and type(details.get(figure)) is int:
        words = {
            "minimum": _("A bid is at least the table minimum, € %(amount)s."),
            "maximum": _("A bid is at most the table maximum, € %(amount)s."),
            "best": _("A bid is at least the best bid so far, € %(amount)s."),
        }[figure]
        return words % {"amount": euros(details[figure])}
    return str(SUCCESSION_REFUSALS[code])


# Actions a Commissario may take on a table's tablet besides its Capo Partita.
# Annulling a coup: the service decides whose it is (before its cards the Capo Partita's, once
# they have started the Commissario's or the Direzione's).
FLOOR_ACTIONS = frozenset({"auction-open", "auction-close", "coup-annul"})
# The Direzione Giochi, to whom disputes go (RULES.md §6), takes one of them: the annulment.
DIREZIONE_ACTIONS = frozenset({"coup-annul"})
# The changeur's register (tables.services.cash): its changeur records and voids his lines; the
# Commissario voids any.
CASH_ACTIONS = frozenset({"cash-exchange", "cash-void"})
# The drawer of a closed session (tables.services.cash_count): counted, and a count corrected, by
# the Commissario or the Direzione.
DRAWER_ACTIONS = frozenset({"cash-count", "cash-count-correct"})
# The register's quick amounts: these multiples of the table minimum (the bet form's quick
# buttons are the minimum and the bank's open part; a changeur changes round sums).
CASH_QUICK_MULTIPLES = (1, 2, 5, 10, 20)


def _session_for(
    request: HttpRequest, pk: int, sessions: QuerySet[TableSession] | None = None
) -> tuple[TableSession, bool] | HttpResponse:
    sessions = TableSession.objects.all() if sessions is None else sessions
    session = get_object_or_404(sessions.select_related("table", "capo_partita"), pk=pk)
    writable = session_writable_by(request.user, session)
    # Read only for whoever the API lets read the session (session_readable_by): the
    # supervisors, its staff now, and a Capo Partita or changeur relieved there (or its Capo
    # Partita once it closed), who still read the session they worked. Writing stays
    # session_writable_by's (tablet_action: 403).
    if not writable and not session_readable_by(request.user, session):
        # His entries for this table still waiting on the tablet (the session closed, or he was
        # relieved, before they were sent) are sent from here and answered with the reason.
        if session.capo_partita_id == request.user.pk and session.status == TableSession.Status.CLOSED:
            # His own table, closed: the reason is the close, not someone else's assignment.
            message = _("This table session is closed: its tablet takes no more entries.")
        elif has_role(request.user, Role.CHANGEUR) and not has_role(request.user, Role.CAPO_PARTITA):
            # A changeur follows his own table's page: told of the Capo Partita, he would look
            # for one to ask rather than for his table.
            message = _("Only the changeur assigned to this table session follows its play here.")
        else:
            message = _("Only the Capo Partita assigned to this table session may use its tablet.")
        return forbidden(request, message, queue=f"{request.user.pk}:{session.pk}")
    return session, writable


@never_cache
@login_required
@require_GET
def tablet_home(request: HttpRequest) -> HttpResponse:
    mine = Q(pk__in=[])
    if has_role(request.user, Role.CAPO_PARTITA):
        mine |= Q(capo_partita=request.user)
    if has_role(request.user, Role.CHANGEUR):
        mine |= Q(changeur=request.user)  # to follow, read only
    if not has_role(request.user, Role.CAPO_PARTITA, Role.CHANGEUR):
        return forbidden(request, _("The tablet is the Capo Partita's."))
    sessions = list(
        TableSession.objects.filter(mine)
        .exclude(status=TableSession.Status.CLOSED)
        .select_related("table", "table__site", "gaming_day")
        .order_by("table__number")
    )
    # The sessions of the open days he worked and serves no more (relieved, or closed since):
    # read only, as the API lets him read them (floor.permissions.readable_sessions).
    worked = (
        readable_sessions(request.user, TableSession.objects.filter(gaming_day__closed_at__isnull=True))
        .exclude(pk__in=[s.pk for s in sessions])
        .select_related("table", "table__site")
        .order_by("table__number", "number")
    )
    return render(request, "tables/tablet_home.html", {"sessions": sessions, "worked": worked})


def plain_euros(cents: int | None) -> str:
    """An amount for a form field: '1095' or '1095.50' ('1095,50' on an Italian page), never
    the display's thin-space thousands separator (euros_to_cents reads plain digits)."""
    if cents is None:
        return ""
    whole, rest = divmod(cents, 100)
    return f"{whole}{get_format('DECIMAL_SEPARATOR')}{rest:02d}" if rest else f"{whole}"


def next_shoe_number(number: str) -> str:
    """The number after a sabot's, proposed for the next one: its last run of digits plus one,
    as wide as it was ("S-101" -> "S-102", "S-009" -> "S-010", "7" -> "8"); a number without
    digits proposes nothing (the Capo Partita types it)."""
    digits = re.search(r"(\d+)(\D*)$", number)
    if digits is None:
        return ""
    run = digits.group(1)
    return f"{number[: digits.start(1)]}{int(run) + 1:0{len(run)}d}{digits.group(2)}"


def _when(iso: str | None) -> datetime | None:
    return None if not iso else timezone.localtime(datetime.fromisoformat(iso))


def _succession_panel(session: TableSession, state: dict, places: list[dict]) -> dict | None:
    """The live succession (RULES.md §5) as the tablet shows it: the terms of each offer in
    words, whose turn it is, whether the asta may open, the bids and who leads. The rules
    are the engine's (tables.engine.succession); the page only reads them."""
    succ = state.get("succession")
    if succ is None:
        return None
    profile = get_profile(session.table.profile)
    minimum, maximum = state["session"]["minimum"], state["session"]["maximum"]
    sequential = {str(r) for r in succession_rules.SEQUENTIAL}
    offers = []
    for o in succ["offers"]:
        # Each offer's terms as the game state gives them (selectors._succession_state): a
        # pending one's in force now (a new bank at today's minimum, bound by today's
        # maximum), an answered or skipped one's as it keeps them (those it was settled
        # under). An offer settled before it kept its maximum has none stored: it shows its
        # minimum alone ("≥ €"), saying nothing of a maximum rather than today's.
        low, high = o["amount_min"], o["amount_max"]
        offers.append({
            **o,
            "low": low,
            "high": high,
            "fixed": high is not None and high == low,
            "low_input": plain_euros(low),
            "round_label": ROUNDS.get(o["round"], o["round"]),
            "status_label": OFFER_STATUSES.get(o["status"], o["status"]),
            "reason_label": SKIP_REASONS.get(o["reason"], o["reason"]) if o["reason"] else None,
        })
    status = succ["status"]
    live_status = status in Succession.LIVE
    auction_allowed = succession_rules.auction_allowed(profile)
    can_open_auction = auction_allowed and (
        status == Succession.Status.UNCLAIMED
        or (
            status == Succession.Status.OFFERING
            and not any(o["status"] in ("accepted", "claimed") for o in offers)
            and not any(o["status"] == "pending" and o["round"] in sequential for o in offers)
        )
    )
    outgoing = succ["outgoing_banker"]["id"] if succ["outgoing_banker"] else None
    bidders = [p for p in places if not p["barred"] and p["patron"]["id"] != outgoing]
    auction = succ["auction"]
    if auction is not None:
        # The bids that stand now (the selector applies rules.bid_void: present, not barred,
        # within today's limits), as the close will judge them.
        candidates = [
            succession_rules.Bid(b["patron"]["id"], b["amount"], b["seat_number"], b["seq"], not b["void"])
            for b in auction["bids"]
        ]
        leader = succession_rules.auction_winner(
            candidates, after=succ["after_seat"], rotation=profile.rotation, table_seats=session.table.seats
        )
        best = auction["best"]
        low = max(minimum, best or 0)
        raised = best + minimum if best is not None else None
        if raised is not None and maximum is not None and raised > maximum:
            raised = None
        auction = {
            **auction,
            "open": auction["status"] == Auction.Status.OPEN,
            "bids": [
                {**b, "at": _when(b["at"]), "leads": leader is not None and b["seq"] == leader.seq,
                 "void_label": BID_VOID.get(b["void"]) if b["void"] else None}
                for b in auction["bids"]
            ],
            "leader": None if leader is None else next(b for b in auction["bids"] if b["seq"] == leader.seq),
            "quick_minimum": low if maximum is None or low <= maximum else None,
            "quick_raise": raised,
            "quick_minimum_input": plain_euros(low),
            "quick_raise_input": plain_euros(raised),
        }
    return {
        **succ,
        "live": live_status,
        "kind_label": SUCCESSION_KINDS.get(succ["kind"], succ["kind"]),
        "lapse_label": LAPSE_REASONS.get(succ["lapse_reason"], succ["lapse_reason"]) if succ["lapse_reason"] else None,
        "offers": offers,
        "turn": [o for o in offers if o["current"]],
        "first_to_speak": any(o["current"] and o["round"] not in sequential for o in offers),
        # chemmy-fi: everyone may claim at once, so the asta may open before anyone answers.
        "claim_round": any(o["current"] and o["round"] == succession_rules.Round.CLAIM for o in offers),
        "can_open_auction": can_open_auction,
        "auction_allowed": auction_allowed,
        "auction": auction,
        "bidders": bidders,
        "maximum": maximum,
    }


def _rotation_said(rotation: dict, bank: dict | None, succession: dict | None) -> dict:
    """What the header's rotation says (RULES.md §5). With a bank: the seat whose turn it
    holds and the seat it goes to next. With none after a bank ended, the pointer is the seat
    whose turn has just ended, not a turn held: "passing from" it, and then the seat the bank
    is offered to now (the succession's current offer, which moves on as they pass; the
    rotation's next seat is only the first one asked), or, with no succession live (it
    lapsed), the next seat, the one the bank's form proposes. An offer to several at once
    (chemmy-fi's claims), to the standing players or the asta: the flow section says it."""
    turn, following = rotation["turn_seat"], rotation["next_seat"]
    if bank is not None or turn is None:  # a bank in play, or the session's first bank
        return {"turn_seat": turn, "next_seat": following, "passing_from": None, "offered_to": None}
    offered = None
    if succession is not None and succession["live"]:
        following = None
        seats = [o["seat_number"] for o in succession["turn"] if not o["standing"]]
        if len(succession["turn"]) == 1 and len(seats) == 1 and succession["status"] == "offering":
            offered = seats[0]
    return {"turn_seat": None, "next_seat": following, "passing_from": turn, "offered_to": offered}


def _offer_bets(places: list[dict], coup: dict, state: dict) -> None:
    """Which bet buttons each row offers: none the bet services would refuse at once
    (tables.services.coup: a banco called takes the whole bank alone; banco avec la table
    once; no banco solo once bets are placed; one bet a player). At a chemmy-fi replay a
    player's own carried stake is no obstacle: a new bet of his replaces it."""
    profile = get_profile(state["session"]["profile"])
    replay = profile.tie == TieRule.REPLAY
    # chemmy-fi: no second consecutive banco by the punta who lost one, as
    # tables.services.coup._previous_banco_loser reads it (an annulled coup is passed over).
    suivi = None
    if profile.banco_suivi == BancoSuivi.FORBIDDEN:
        prev = (
            Coup.objects.filter(session_id=state["session"]["id"], number__lt=coup["number"], state=Coup.State.SETTLED)
            .order_by("-number").values("banco_solo", "winner", "punta_id").first()
        )  # fmt: skip
        if prev and prev["banco_solo"] and prev["winner"] == "banker":
            suivi = prev["punta_id"]

    def others(stakes: list[dict], pid: int) -> list[dict]:
        return [x for x in stakes if not (x["patron"]["id"] == pid and replay and x["carried"])]

    for place in places:
        pid = place["patron"]["id"]
        bets, calls = others(coup["bets"], pid), others(coup["banco_calls"], pid)
        covered = sum(b["amount"] for b in bets)
        may_bet = not calls and not any(b["patron"]["id"] == pid for b in bets) and covered < coup["bank_amount"]
        place["offer"] = {
            "banco": not place["barred"] and not bets and not any(c["patron"]["id"] == pid for c in calls)
            and pid != suivi,
            "bet": may_bet,
            "half": may_bet and not place["barred"]
            and not any(b["kind"] == Bet.Kind.AVEC_LA_TABLE for b in bets)
            and covered + live.avec_la_table_stake(coup["bank_amount"]) <= coup["bank_amount"],
        }


def _reconstruction_so_far(coup: dict) -> dict | None:
    """The hands of the reconstruction where it waits for a side's decision (RULES.md §3.3):
    the coup as played may hold the card in the other hand (a punta alla Regola who stood
    wrongly: the banker's third card is the punta's in the replay), and the Capo Partita
    must ask the player in the replay's situation. The punta decides on his two cards; the
    banker on his two cards against the punta's third card of the replay, if he draws
    there: he draws there when the rule required it of him, else as he did in the coup."""
    side = (coup.get("needs") or {}).get("decision")
    if side not in ("punta", "banker"):
        return None
    cards = list(coup["cards"])
    if side == "punta":
        return live.hands(cards[:4]).as_dict()
    punta = next((v for v in coup["violations"] if v["side"] == "punta"), None)
    punta_draws = punta["required"] == "draw" if punta else bool(coup["punta_draws"])
    pool = cards[4:] + list(coup["next_cards"] or [])
    return live.hands(cards[:4] + pool[:1] if punta_draws else cards[:4], punta_draws=punta_draws).as_dict()


def _correctable_card(coup: dict | None) -> str | None:
    """The coup's last card while services.card_entry_correct takes it: dealt, in a coup not
    settled nor annulled, still the coup's latest step (the engine's live.undeal). None else."""
    if not coup or not coup["cards"] or coup["state"] not in (Coup.State.DEALING, Coup.State.PENDING):
        return None
    if coup["next_cards"]:
        return None
    if coup["state"] == Coup.State.PENDING and Coup.objects.filter(pk=coup["id"]).exclude(reconstruction={}).exists():
        return None  # a reconstruction decision was entered after it
    try:
        live.undeal(coup["cards"], punta_draws=coup["punta_draws"], banker_draws=coup["banker_draws"])
    except EngineError:
        return None
    return coup["cards"][-1]


def _serves_as_changeur(user: Any, session: TableSession) -> bool:
    return user is not None and session.changeur_id == user.pk and has_role(user, Role.CHANGEUR)


def _cash_panel(session: TableSession, viewer: Any, places: list[dict], minimum: int) -> dict | None:
    """The changeur's register as the tablet shows it: his form (direction, the patron from
    the table's places, quick amounts), the session's lines and totals, and each patron's
    linked total against the identification threshold. None for the Capo Partita: his tablet
    records the play, and the table's cash is the changeur's (segregation of duties, floor.roles)."""
    if viewer is None or has_role(viewer, Role.CAPO_PARTITA):
        return None
    closed = session.status == TableSession.Status.CLOSED
    writable = not closed and _serves_as_changeur(viewer, session)
    voids_any = not closed and has_role(viewer, *VOIDS_ANY)
    rows = list(cash_exchange_list(session=session))
    totals = cash_exchange_totals(session=session)
    # The changeurs relieved (their drawers counted at the handover) and the counts, read once
    # for the handovers' panel and the closed session's drawer.
    changes = [c for c in staff_change_list(session=session) if c.old_changeur_id != c.new_changeur_id]
    history = cash_count_history(session=session) if closed or changes else []
    window = drawer_count_window(session=session) if closed or changes else None
    threshold = settings.AML_IDENTIFY_CENTS
    linked: dict[int, dict] = {}
    for row in rows:
        row.voidable = not row.voided and (voids_any or (writable and row.by_id == viewer.pk))
        if row.patron is not None and not row.voided:
            entry = linked.setdefault(row.patron_id, {"name": row.patron.full_name, "total": 0})
            entry["total"] += row.amount
    for entry in linked.values():
        entry["reached"] = entry["total"] >= threshold
    return {
        "writable": writable,
        "rows": rows,
        "totals": totals,
        "drawer": _drawer_panel(session, viewer, totals, history) if closed else None,
        "handovers": _handovers_panel(session, viewer, changes, history, window),
        "threshold": threshold,
        # what unnamed exchanges may still come to, together, before each names its patron
        "unnamed_left": max(threshold - totals["unnamed"], 0),
        "places": places,
        "linked": sorted(linked.values(), key=lambda e: (-e["total"], e["name"])),
        "quick": [minimum * m for m in CASH_QUICK_MULTIPLES],
    }


def _handovers_panel(
    session: TableSession, viewer: Any, changes: list, history: list[CashCount], window: str | None
) -> list[dict]:
    """Each changeur's handover (a staff change that relieved the changeur), the session
    running or closed: the drawer he handed over, its count in force (the register's net up to
    the handover, expected, counted, difference, and the part of it since the handover counted
    before) and its corrections, for every reader of the register; its count form, or the
    correction's, for the Commissario and the Direzione while a count is taken (the day open,
    or closed until its books are signed: tables.services.cash_count). A drawer not counted says
    what it should hold, as the final one does: the register's net up to the handover (one
    query for all of them, however many; the session's totals above run on past it), and, to
    whoever may count it once the day is closed, that the count goes into the day's books."""
    counts = window in ("open", "late") and has_role(viewer, *COUNTS_DRAWER)
    in_force_of = {row.staff_change_id: row for row in history if row.staff_change_id is not None and row.in_force}
    uncounted = [change for change in changes if change.pk not in in_force_of]
    nets = dict(zip((c.pk for c in uncounted),
                    cash_exchange_nets_until(session=session, until=[c.at for c in uncounted]), strict=True))  # fmt: skip
    panel = []
    for change in changes:
        mine = [row for row in history if row.staff_change_id == change.pk]
        in_force = in_force_of.get(change.pk)
        net = nets.get(change.pk)
        panel.append({
            "change": change, "in_force": in_force, "corrected": [row for row in mine if not row.in_force],
            "can_count": counts and in_force is None, "can_correct": counts and in_force is not None,
            "late": counts and window == "late", "books_signed": window == "books_signed", "net": net,
            "ids": f"-{change.pk}",  # its forms' ids' suffix (tables/_drawer_count_fields.html)
        })  # fmt: skip
    return panel


def _drawer_panel(session: TableSession, viewer: Any, totals: dict, history: list[CashCount]) -> dict:
    """A closed session's drawer, counted against the register: the count in force (float,
    the register's net, expected, counted, difference; and, when it counted them, the chips'
    float, the chips handed out for that net, expected, counted, difference) and its history, for every reader of
    the register; the count form, or the correction's, for the Commissario and the Direzione
    while the gaming day is open, and after its close until its control register is signed by
    both (a late count, into the day's books: tables.services.cash_count). The final count
    only: the changeurs' handovers have their own panel (_handovers_panel)."""
    history = [row for row in history if row.staff_change_id is None]
    in_force = next((row for row in history if row.in_force), None)
    # Read for every reader: once the books are signed a drawer not counted never will be, and
    # "not counted yet" would say to the auditor too that a count may still come.
    window = drawer_count_window(session=session)
    counts = window in ("open", "late") and has_role(viewer, *COUNTS_DRAWER)
    return {
        "in_force": in_force,
        "history": history,
        "corrected": [row for row in history if not row.in_force],
        "can_count": counts and in_force is None,
        "can_correct": counts and in_force is not None,
        # Told to whoever may count: a count now goes into the closed day's books; to every
        # reader: no more counts, the books are signed.
        "late": counts and window == "late",
        "books_signed": window == "books_signed",
        # what the drawer should hold with no float: the register's net, shown before the count
        "net": totals["net"],
    }


def _context(
    session: TableSession,
    writable: bool,
    outcome: Outcome | None = None,
    floor_writable: bool = False,
    viewer: Any = None,
    annuls_started: bool | None = None,
) -> dict:
    state = session_game_state(session)
    coup = state["coup"]
    last = state["last_coup"]
    places = sorted(state["seats"], key=lambda s: (s["standing"], s["seat_number"] or 0, s["patron"]["name"]))
    balances = {b["patron"]: b["balance"] for b in state["balances"]}
    for place in places:
        place["balance"] = balances.get(place["patron"]["id"], 0)
    bank = state["bank"]
    quick = None
    if coup and coup["state"] == Coup.State.BETTING:
        quick = {
            "minimum": min(state["session"]["minimum"], coup["open"]),
            "half": live.avec_la_table_stake(coup["bank_amount"]),
            "open": coup["open"],
        }
        quick["minimum_input"], quick["open_input"] = plain_euros(quick["minimum"]), plain_euros(quick["open"])
        _offer_bets(places, coup, state)
    rule = (coup or {}).get("rule")
    regola_side = None
    if rule:
        regola_side = coup["regola_punta"] if rule["side"] == "punta" else coup["regola_banker"]
        rule = {
            **rule,
            # "not declared" only where the profile lets him declare (venezia): at a domestic
            # or chemmy-fi table nobody declares, and the words suggested a mark was missing.
            "rule_label": SIDES["banker"]
            if rule["rule"] == "banker" and not get_profile(state["session"]["profile"]).regola_allowed
            else RULE_NAMES.get(rule["rule"], rule["rule"]),
            "cell_label": CELLS.get(rule["cell"], rule["cell"]),
            "advice_label": CELLS.get(rule["advice"]) if rule.get("advice") else None,
            # the free cell's advice is the Regola's where the profile has one, else the usual play
            "advice_by_regola": get_profile(state["session"]["profile"]).regola_allowed,
            "side_label": SIDES.get(rule["side"], rule["side"]),
            "regola": regola_side,
        }
    shown = coup or last
    correct_card = _correctable_card(coup) if writable and session.is_open else None
    so_far = _reconstruction_so_far(coup) if coup and coup["state"] == Coup.State.PENDING else None
    postings = []
    if shown and shown["state"] == Coup.State.SETTLED:
        played = coup_list(session=session).filter(pk=shown["id"]).first()
        # (a bettor who has left since is no longer seated; his balance row still names him)
        names = {b["patron"]: b["name"] for b in state["balances"]}
        names.update({p["patron"]["id"]: p["patron"]["name"] for p in state["seats"]})
        postings = [
            {"role": p.role, "name": names.get(p.patron_id, "") if p.patron_id else _("house (cagnotte)"),
             "amount": p.amount}
            for p in (played.postings.all() if played else [])
        ]
    # Punto banco has a profile (odds, settlement) but no chemin de fer to record: every step
    # would be refused (profile_not_supported), so the tablet offers none and says why.
    playable = not get_profile(state["session"]["profile"]).house_bank
    closed = session.status == TableSession.Status.CLOSED
    if closed:
        # Its places were released at the close: the players are those with a balance, as
        # the session ended.
        places = [
            {"patron": {"id": b["patron"], "name": b["name"]}, "standing": False, "seat_number": None,
             "balance": b["balance"], "regola": False, "barred": False}
            for b in sorted(state["balances"], key=lambda b: b["name"])
        ]  # fmt: skip
    cash = _cash_panel(session, viewer, [] if closed else places, state["session"]["minimum"])
    # A changeur relieved here reads when, by whom, and his drawer's handover count, the session
    # running or closed (read from the register's panel: no query of its own).
    relief = _relief_words(viewer, session, cash)
    readonly_reason = None
    if not playable:
        readonly_reason = _("This table's profile is not chemin de fer: the tablet records chemin de fer only.")
    elif closed:
        readonly_reason = _("This table session is closed: its final balances are listed.")
        if relief:
            readonly_reason = f"{readonly_reason} {relief}"
    elif not writable:
        readonly_reason = relief or _read_only_words(viewer, session)
    writable = writable and playable
    succession = _succession_panel(session, state, places) if bank is None else None
    first_bank = bank is None and state["succession"] is None and state["rotation"]["turn_seat"] is None
    # Who declined the first bank so far: the panel says them, and whom it is offered to now.
    first_bank_passed = first_bank_pass_list(session) if first_bank and playable and not closed else []
    # While play is interrupted, in which capacity it was (the banner says whose decision it
    # is: the Direzione's is lifted by the Direzione alone, RULES.md §6).
    suspended_as = (
        session.interruptions.filter(resumed_at__isnull=True).values_list("interrupted_as", flat=True).first()
        if session.status == TableSession.Status.INTERRUPTED
        else None
    )
    return {
        "session": session,
        "suspended_as": suspended_as,
        # What the page's poll (tablet_live) says it shows: the state of play and the limits.
        "live_said": _live_said(session, suspended_as),
        "state": state,
        "writable": writable and session.is_open,
        "readonly_reason": readonly_reason,
        "playable": playable,
        "closed": closed,
        "coup": coup,
        "last": last,
        "shown": shown,
        "postings": postings,
        "bank": bank,
        "places": places,
        "seated": [p for p in places if not p["standing"]],
        "quick": quick,
        "rule": rule,
        "so_far": so_far,
        # The last card entered, while it may be corrected (tapped wrongly): its button beside the picker.
        "correct_card": correct_card,
        # Which hand the next card goes to (a declaration is not a card).
        "next_card_side": coup["next"]["side"]
        if coup and coup.get("next") and coup["next"]["need"] in (live.CARD, live.BANKER_DECISION)
        else None,
        "ranks": RANKS,
        "suits": SUITS,
        # chemmy-fi burns 7 after the shuffle, the top one face up (RULES.md §1): the sabot's
        # form takes that card, so the shoe knows it is out.
        "burn_cards": get_profile(state["session"]["profile"]).burn_cards,
        # The stop card reached, the new sabot's form proposes the number after this one's.
        "next_shoe_number": next_shoe_number(state["shoe"]["number"]) if state["shoe"] else "",
        "sides": SIDES,
        "cannot_open": [REASONS.get(r, r) for r in state["cannot_open_because"]],
        # Before the session's first bank (none ended, so no succession and no turn yet): it
        # goes to the game state's rotation.next_seat, who may also decline it (RULES.md §5-§6).
        "first_bank": first_bank,
        "first_bank_passed": first_bank_passed,
        "first_bank_offered": next(
            (p["patron"]["name"] for p in places if not p["standing"] and p["seat_number"] == state["rotation"]["next_seat"]),
            "",
        ) if first_bank_passed else "",
        # ...which waits for the table's min_seats_to_start seats taken (RULES.md §6): said
        # before the Capo Partita tries (bank_open refuses it, `not_enough_players`).
        "start_needs": {
            "needed": session.table.min_seats_to_start,
            "seated": sum(1 for p in places if not p["standing"]),
        } if "not_enough_players" in state["cannot_open_because"] else None,
        # The side's bar form, where it is, shows this player first (its list's default, none
        # selected): the start-needs banner names him, so that its poll tells the form unchanged.
        "bar_default": next((str(p["patron"]["id"]) for p in places if not p["barred"]), "")
        if writable and playable and session.is_open else None,
        "outcome": outcome,
        # Before its first card a coup may be annulled, also while play is interrupted.
        # A barred player's banco call cannot stand (RULES.md §4): the tablet offers to take it back.
        "barred_ids": {b["patron"]["id"] for b in state["bars"]},
        "annullable": writable and not session.is_closed and bool(coup)
        and coup["state"] in (Coup.State.BETTING, Coup.State.CLOSED),
        # Once its cards have started, a coup that cannot be played to its end (its settlement
        # refused, a tablet lost) or that the Direzione annuls in a dispute is annulled by the
        # Commissario or the Direzione alone, also while play is interrupted.
        "annullable_started": (floor_writable if annuls_started is None else annuls_started)
        and playable and not session.is_closed and bool(coup)
        and coup["state"] in (Coup.State.DEALING, Coup.State.PENDING),
        # domestic: the bank continues at least at the required stake; the banker may put up more.
        "raisable": bank is not None and coup is None and bank["coups_completed"] >= 1
        and state["session"]["profile"] == "domestic" and "banker_barred" not in state["cannot_open_because"],
        "withdrawable": bank is not None and coup is None and (
            bank["coups_completed"] >= 1 or "banker_barred" in state["cannot_open_because"]
        ),
        "succession": succession,
        "rotation": state["rotation"],
        "rotation_said": _rotation_said(state["rotation"], bank, succession),
        # The asta may be opened and closed by a Commissario too (tables.services.succession).
        "floor_writable": (writable or floor_writable) and playable and session.is_open,
        "cash": cash,
        # The tablet's list of tables (/tablet/) is the table staff's; a supervisor reading a
        # table's page goes back to the floor, whose card led him here, not to a refusal.
        "back_to_floor": viewer is not None and not has_role(viewer, Role.CAPO_PARTITA, Role.CHANGEUR),
    }


@never_cache
@login_required
@require_GET
def tablet_session(request: HttpRequest, pk: int) -> HttpResponse:
    found = _session_for(request, pk)
    if isinstance(found, HttpResponse):
        return found
    session, writable = found
    template = "tables/_tablet_panel.html" if is_htmx(request) else "tables/tablet_session.html"
    return render(request, template, _context(session, writable, viewer=request.user, **_floor_powers(request)))


@never_cache
@login_required
@require_GET
def tablet_start_needs(request: HttpRequest, pk: int) -> HttpResponse:
    """The tablet's banner "The bank cannot open yet" (_tablet_start_needs.html) asks here every
    5 s while the first bank waits for seats (RULES.md §6): the Commissario seats the players on
    the floor's page, and the Capo Partita waits at his. The answer:
    - still waiting, with the counts the banner says (its ?seated= and ?needed=): 204, nothing
      swapped (nothing moves under the croupier's fingers every 5 s);
    - still waiting, with other counts: the banner again, saying them (it polls on);
    - play interrupted meanwhile (the seats cannot start it; once resumed, they do): the banner
      again, with the counts it said and the capacity play is interrupted in (its
      ?interrupted=), polling on, and out of band the notices above the panel ("Play is
      interrupted"); interrupted as it says (?interrupted=commissario or direzione): 204;
    - resumed, still waiting, where the banner says it is interrupted: the banner (saying it is
      not) and the notices out of band, without the interruption's banner;
    - otherwise (the game may start, or a bank opened meanwhile, or the session closed): the
      flow section the banner is in (#flow: the bank's form, or what stands now), swapped for
      the one on the page (HX-Retarget), and out of band the header's facts (the next seat),
      the notices above the panel (a session closed meanwhile: the read-only banner) and the
      side's Players table (the players seated meanwhile, their Regola toggles: buttons, no
      text typed in it). Nothing else: the side's forms (a bar's, a void's, whose text
      fields he may be typing in) and the register keep what he typed. The banner goes with
      its section, so the polling stops. Only the bar form's player list (#bar-patron) comes
      too, out of band, when the banner sends that form as it was shown (?bar=, the player it
      showed first, is its ?patron=, and its ?reason= is empty): its players seated meanwhile.
    While waiting: one query for the seats and the banks (first_bank_start_needs) besides the
    session and the user's, however many seats (interrupted: the interruption's, instead);
    then the panel's own, once (interrupted or resumed meanwhile, or the game may start)."""
    if not is_htmx(request):
        return redirect("tablet-session", pk=pk)  # the address opened as a page: the tablet
    found = _session_for(request, pk)
    if isinstance(found, HttpResponse):
        return found
    session, writable = found
    said = {"seated": request.GET.get("seated"), "needed": request.GET.get("needed")}
    said_interrupted = request.GET.get("interrupted", "0")  # (an older banner does not say: "0")
    # The bar form's player shown first, where the banner names it: echoed, it stays the form's.
    bar_default = request.GET.get("bar")
    if session.status == TableSession.Status.INTERRUPTED:
        suspended_as = (
            session.interruptions.filter(resumed_at__isnull=True).values_list("interrupted_as", flat=True).first()
        ) or "1"
        if said_interrupted == suspended_as:
            return HttpResponse(status=204)
        try:  # the counts it said (the seats cannot start the game meanwhile: not asked)
            needs = {"seated": int(said["seated"]), "needed": int(said["needed"])}
        except (TypeError, ValueError):
            return HttpResponse(status=204)
        return _start_needs_with_notices(request, session, writable, needs, bar_default)
    needs = first_bank_start_needs(session)
    if needs is not None:
        if said_interrupted != "0":  # resumed meanwhile: the interruption's banner goes
            return _start_needs_with_notices(request, session, writable, needs, bar_default)
        if (said["seated"], said["needed"]) == (str(needs["seated"]), str(needs["needed"])):
            return HttpResponse(status=204)
        # (the link "Check the seats again", beside it, stays: it is not swapped)
        return render(request, "tables/_tablet_start_needs.html",
                      {"session": session, "start_needs": needs, "bar_default": bar_default})  # fmt: skip
    context = _context(session, writable, viewer=request.user, **_floor_powers(request))
    # The bar form's player list, as the banner sent that form: shown as it came, nothing typed.
    oob_bar = bar_default is not None and request.GET.get("reason") == "" and (
        request.GET.get("patron", "") == bar_default
    )
    response = render(request, "tables/_tablet_panel.html", {**context, "oob_facts": True, "oob_bar": oob_bar})
    response["HX-Retarget"] = "#flow"
    response["HX-Reselect"] = "#flow"
    response["HX-Reswap"] = "outerHTML"
    return response


def _live_said(session: TableSession, suspended_as: str | None) -> dict[str, str]:
    """What a tablet page says of its session, as its poll (tablet_live) sends it back: the
    state of play (open, interrupted, closed), the capacity play is interrupted in, and the
    table's limits in cents (no maximum: empty)."""
    return {
        "status": str(session.status),
        "by": (suspended_as or "") if session.status == TableSession.Status.INTERRUPTED else "",
        "minimum": str(session.minimum),
        "maximum": "" if session.maximum is None else str(session.maximum),
    }


@never_cache
@login_required
@require_GET
def tablet_live(request: HttpRequest, pk: int) -> HttpResponse:
    """The tablet page asks here every 5 s (#tablet-live, at the foot of its flow section) what
    others may change at its table without a tap of his: play interrupted or resumed (from the
    floor, the API, the Direzione), the session closed, the minimum or the maximum changed by
    the Commissario. It sends what the page shows (?status=, ?by=, ?minimum=, ?maximum=):
    - the same: 204, nothing swapped (nothing moves under the croupier's fingers every 5 s);
    - changed: the panel's parts that follow them, out of band, and nothing else (HX-Reswap
      none): the flow section (the play, or the interruption's "once play resumes", or the
      close; the bank's form with the minimum as its amount; the quick bets; the succession's
      terms), the header's facts, the notices above the panel, the side's Players table and its
      tools (the bar's and the void's forms, which an interruption takes away and a resume
      brings back). The register and the outcome stay. A part holding the field the croupier is
      typing in is left as it is by the page's script (chemin.js), and the poll inside it still
      says the old state, so it is asked again 5 s later; the other fields he changed keep
      what he typed. Closed, the flow section comes without the poll: it ends.
    One query for the session, its limits and its running interruption, besides the user's,
    however long the session (the panel's reads only when something changed)."""
    if not is_htmx(request):
        return redirect("tablet-session", pk=pk)  # the address opened as a page: the tablet
    running = SessionInterruption.objects.filter(session=OuterRef("pk"), resumed_at__isnull=True)
    found = _session_for(
        request, pk, TableSession.objects.annotate(suspended_as=Subquery(running.values("interrupted_as")[:1]))
    )
    if isinstance(found, HttpResponse):
        return found
    session, writable = found
    said = {name: request.GET.get(name) for name in ("status", "by", "minimum", "maximum")}
    if said == _live_said(session, session.suspended_as):
        return HttpResponse(status=204)
    context = _context(session, writable, viewer=request.user, **_floor_powers(request))
    response = render(request, "tables/_tablet_panel.html", {**context, "oob_live": True})
    response["HX-Reswap"] = "none"  # its parts come out of band, each in its place
    return response


def _start_needs_with_notices(
    request: HttpRequest, session: TableSession, writable: bool, needs: dict[str, int], bar_default: str | None
) -> HttpResponse:
    """The start-needs banner, saying the counts `needs` and whether play is interrupted, and
    out of band the notices above the panel, as the page says them now (the panel's reads)."""
    context = _context(session, writable, viewer=request.user, **_floor_powers(request))
    return render(request, "tables/_tablet_start_needs.html", {
        "session": session, "start_needs": needs, "bar_default": bar_default, "oob_notices": True,
        "suspended_as": context["suspended_as"], "readonly_reason": context["readonly_reason"],
    })  # fmt: skip


def _difference_words(difference: int) -> str:
    kind = _("surplus") if difference > 0 else _("shortfall") if difference < 0 else _("exact")
    return f"€ {signed_euros(difference)} ({kind})"


def _relief_words(user: Any, session: TableSession, cash: dict | None) -> str | None:
    """What a changeur relieved at this session, and serving it no more, reads on its page: when
    he was relieved and by whom (the latest relief that relieved him: relieved, back, relieved
    again, the last), and his drawer's handover count (tables.services.cash_count): awaited,
    counted (when, and its difference, the chips' too when counted: he signs the count sheet,
    and the register's panel below shows every reader the same figures), or never counted once
    the day's books are signed. None for anyone else. From the register's panel (the handovers
    and their counts in force, read once for it): no query of its own."""
    if cash is None or user is None or not has_role(user, Role.CHANGEUR) or _serves_as_changeur(user, session):
        return None
    mine = [h for h in cash["handovers"] if h["change"].old_changeur_id == user.pk]
    if not mine:
        return None
    handover = max(mine, key=lambda h: (h["change"].at, h["change"].pk))
    change, count = handover["change"], handover["in_force"]
    successor = change.new_changeur.get_full_name() or change.new_changeur.username
    words = [_("You were relieved as this table's changeur at %(at)s by %(successor)s.")
             % {"at": clock(change.at), "successor": successor}]  # fmt: skip
    if count is not None:
        same_day = timezone.localtime(count.counted_at).date() == timezone.localtime(change.at).date()
        figures = {"at": clock(count.counted_at), "day": clock(count.counted_at, "Y-m-d"),
                   "difference": _difference_words(count.difference)}  # fmt: skip
        words.append(
            (_("Your drawer was counted at %(at)s: a difference of %(difference)s.") if same_day
             else _("Your drawer was counted on %(day)s at %(at)s: a difference of %(difference)s.")) % figures
        )  # fmt: skip
        if count.chips_difference is not None:
            words.append(_("The chips in your tray: a difference of %(difference)s.")
                         % {"difference": _difference_words(count.chips_difference)})  # fmt: skip
    elif handover["books_signed"]:
        words.append(_("Your drawer was not counted before the day's books were signed."))
    else:
        words.append(_("Your drawer is not counted yet: it is counted by the Commissario or the Direzione."))
    return " ".join(words)


def _read_only_words(user: Any, session: TableSession | None = None) -> str:
    """Why the tablet takes no coup from this reader, in his role's words (it told the
    changeur, the auditor and the Commissario alike that they were not the Capo Partita)."""
    if has_role(user, Role.COMMISSARIO):
        return _("The Capo Partita records the play: here you annul a coup whose cards have started, and run the asta.")
    if session is not None and _serves_as_changeur(user, session):
        return _("The Capo Partita records the play; the changeur records here the cash he exchanges at the table.")
    if has_role(user, Role.CHANGEUR):  # relieved: he reads the session he served
        return _("Read only: the changeur follows the play; the Capo Partita records it.")
    if has_role(user, Role.AUDITOR):
        return _("Read only: an auditor reads the play and writes nothing.")
    if has_role(user, Role.DIREZIONE):
        return _(
            "The Capo Partita records the play: here you annul a coup whose cards have started, "
            "when a dispute calls for it."
        )
    return _("Read only: you are not this table's Capo Partita.")


def _commissario(request: HttpRequest) -> bool:
    return has_role(request.user, Role.COMMISSARIO)


def _floor_powers(request: HttpRequest) -> dict[str, bool]:
    """What the reader does on the tablet besides its Capo Partita: the Commissario annuls a
    coup whose cards have started and runs the asta; the Direzione only annuls."""
    return {
        "floor_writable": _commissario(request),
        "annuls_started": has_role(request.user, *ANNULS_STARTED),
    }


# --------------------------------------------------------------------------- actions
# Each action parses its form and calls one service; it returns the message shown on success.


def _patron(request: HttpRequest) -> Patron:
    pk = int_field(request.POST.get("patron"), field="patron", empty=_("Choose a player at the table."))
    patron = Patron.objects.filter(pk=pk).first()
    if patron is None:
        raise BadForm("unknown_patron", _("Choose a player at the table."), details={"patron": pk})
    return patron


def _coup(request: HttpRequest, session: TableSession) -> Coup:
    pk = int_field(request.POST.get("coup"), field="coup")
    coup = Coup.objects.filter(pk=pk, session=session).first()
    if coup is None:
        raise BadForm("unknown_coup", _("This coup is not at this table."), details={"coup": pk})
    return coup


def _card(request: HttpRequest) -> str:
    rank, suit = request.POST.get("rank", ""), request.POST.get("suit", "")
    if rank not in RANKS or suit not in {s for s, _sym, _name in SUITS}:
        raise BadForm("bad_card", _("Choose the rank, then the suit."), details={"rank": rank, "suit": suit})
    return f"{rank}{suit}"


def _draws(request: HttpRequest, field: str = "draws") -> bool:
    value = request.POST.get(field)
    if value not in ("true", "false"):
        raise BadForm("bad_decision", _("Choose one of the two answers."), details={field: value})
    return value == "true"


def act_shoe_load(request, session, user):
    face_up = (request.POST.get("burn_face_up") or "").strip()
    burn = None
    if face_up:  # the top card of the burn, turned face up; the others unseen
        burn = [face_up] + [None] * (get_profile(session.table.profile).burn_cards - 1)
    shoe = services.shoe_load(session=session, by=user, number=request.POST.get("number", ""), burn=burn)
    if face_up:
        return _("Sabot %(number)s loaded; %(card)s burned face up.") % {
            "number": shoe.number,
            "card": card_text(face_up),
        }
    return _("Sabot %(number)s loaded.") % {"number": shoe.number}


# A typed bank or bid this many times the table minimum (or the least the entry may be: a
# continuation's floor, the best bid at the asta), or more, is asked again before it is
# entered. A bank has no upper bound where the house sets no maximum (RULES.md §2.1), so the
# services and the API take € 30,000,000 at a € 1,000 table; on the tablet such a figure is far
# likelier a slip of the finger (two zeros too many make exactly 100 times a bank at the
# minimum) than a bank. 100, not 10: a new bank is put up at or near the minimum, and a banker
# who opens at ten times it is no rarity; one extra zero is left to the figure the answer shows.
LARGE_AMOUNT_TIMES = 100
LARGE_AMOUNT_UNCONFIRMED = "large_amount_unconfirmed"


def _entered_unless_large(
    request: HttpRequest, enter: Callable[[], Any], *, amount: int, least: int | None, question: str, name: str
) -> Any:
    """Enter the typed amount (`enter()`: the one service call) and, when it is at least
    LARGE_AMOUNT_TIMES `least` (the table minimum, or the least the form's entry may be) and
    the form does not say `confirm_large`, undo it and refuse (nothing written but the form's
    stored answer): the panel then shows `question` (naming `name`, the patron whose money it
    is) and a form to send the same entry again, confirmed, with a new key.

    The rules come first: the service runs, in a savepoint, before the question, so that only
    an entry the rules take is asked again (asked first, a bank for a player not at the first
    banker's seat, or above the maximum, was confirmed and then refused for another reason).
    The tables' services have no effect outside the database (no on_commit), so the rollback
    undoes all of it, its audit events with it."""
    with transaction.atomic():
        result = enter()
        if request.POST.get("confirm_large") == "yes" or not least or least <= 0:
            return result
        if amount >= LARGE_AMOUNT_TIMES * least:
            times = amount // least
            raise BadForm(
                LARGE_AMOUNT_UNCONFIRMED,
                question % {"amount": euros_exact(amount), "times": euros(times * 100), "name": name},
                details={"amount": amount, "least": least, "times": times},
                status_code=409,
            )
    return result


def act_bank_open(request, session, user):
    patron, amount = _patron(request), euros_to_cents(request.POST.get("amount"))
    bank = _entered_unless_large(
        request, lambda: services.bank_open(session=session, by=user, patron=patron, amount=amount),
        amount=amount, least=session.minimum, name=patron.full_name,
        question=_("Open a bank of € %(amount)s for %(name)s? That is %(times)s times the minimum."),
    )  # fmt: skip
    return _("Bank opened: %(name)s.") % {"name": bank.banker.full_name}


def act_first_bank_pass(request, session, user):
    passed = services.first_bank_pass(session=session, by=user, patron=_patron(request))
    return _("%(name)s declines the first bank (passe).") % {"name": passed.patron.full_name}


def _bank(request: HttpRequest, session: TableSession) -> Bank:
    pk = int_field(request.POST.get("bank"), field="bank")
    bank = Bank.objects.filter(pk=pk, session=session).first()
    if bank is None:
        raise BadForm("unknown_bank", _("This bank is not at this table."), details={"bank": pk})
    return bank


def act_bank_withdraw(request, session, user):
    bank = services.bank_withdraw(bank=_bank(request, session), by=user)
    # A barred banker's bank ends whenever he is barred (RULES.md §4): not his "dare seguito".
    if FauxTirageBar.objects.filter(session=session, patron_id=bank.banker_id).exists():
        return _("%(name)s is barred from holding the cards: his bank ends, he takes it back, and it passes.") % {
            "name": bank.banker.full_name
        }
    return _("%(name)s withdrew (dare seguito), taking the bank: it passes.") % {"name": bank.banker.full_name}


def act_bank_raise(request, session, user):
    bank, amount = _bank(request, session), euros_to_cents(request.POST.get("amount"))
    # The raise types the bank's new total: measured against the bank as it stands (a large bank
    # raised a little is no slip; two zeros too many make it a hundred times what it was).
    bank = _entered_unless_large(
        request, lambda: services.bank_raise(bank=bank, by=user, amount=amount),
        amount=amount, least=bank.amount, name=bank.banker.full_name,
        question=_("Raise %(name)s's bank to € %(amount)s? That is %(times)s times the bank."),
    )  # fmt: skip
    return _("The bank is raised to € %(amount)s.") % {"amount": euros(bank.amount)}


def act_coup_open(request, session, user):
    coup = services.coup_open(session=session, by=user)
    return _("Coup %(number)s open: faites vos jeux.") % {"number": coup.number}


def act_bet(request, session, user):
    coup, patron = _coup(request, session), _patron(request)
    quick = request.POST.get("quick", "custom")
    if quick == "half":
        services.bet_place(coup=coup, by=user, patron=patron, kind="avec_la_table")
    elif quick == "banco":
        services.banco_call(coup=coup, by=user, patron=patron)
        return _("Banco! %(name)s.") % {"name": patron.full_name}
    else:
        field = {"minimum": "amount_minimum", "open": "amount_open"}.get(quick, "amount")
        amount = euros_to_cents(request.POST.get(field))
        services.bet_place(coup=coup, by=user, patron=patron, amount=amount)
    return _("Bet recorded: %(name)s.") % {"name": patron.full_name}


def act_bet_withdraw(request, session, user):
    patron, coup = _patron(request), _coup(request, session)
    # What is taken back, read before the service removes it (bet_withdraw takes a player's bet
    # before his banco call, as here): the words say which stake and why it may go.
    call = not coup.bets.filter(patron=patron).exists() and coup.banco_calls.filter(patron=patron).exists()
    barred = call and FauxTirageBar.objects.filter(session=session, patron=patron).exists()
    services.bet_withdraw(coup=coup, by=user, patron=patron)
    if barred:
        return _("%(name)s's banco call is withdrawn: a barred player may not hold the cards.") % {
            "name": patron.full_name
        }
    if call:
        return _("%(name)s withdraws the banco call carried from the tie.") % {"name": patron.full_name}
    return _("%(name)s takes back the bet carried from the tie.") % {"name": patron.full_name}


def act_rien_ne_va_plus(request, session, user):
    services.rien_ne_va_plus(coup=_coup(request, session), by=user)
    return _("Rien ne va plus.")


def act_coup_annul(request, session, user):
    coup = services.coup_annul(coup=_coup(request, session), by=user, reason=request.POST.get("reason", ""))
    if coup.cards:
        return _(
            "Coup %(number)s annulled: no money moves, the bets go back to the players; its cards %(cards)s "
            "stay out of the sabot."
        ) % {"number": coup.number, "cards": " ".join(coup.cards + coup.next_cards)}
    return _("Coup %(number)s annulled: the bets go back to the players.") % {"number": coup.number}


def _expect_cards(request: HttpRequest) -> int | None:
    # The cards the page showed (its picker's hidden field); an old form without it: unchecked.
    raw = request.POST.get("expect_cards")
    return None if raw is None else int_field(raw, field="expect_cards")


def act_card(request, session, user):
    card = _card(request)
    coup = services.card_deal(coup=_coup(request, session), by=user, card=card, expect_cards=_expect_cards(request))
    if coup.dealt_side == "punta":  # the message names the hand the engine gave it to
        return _("Card %(card)s entered, to the punta.") % {"card": card_text(card)}
    return _("Card %(card)s entered, to the banker.") % {"card": card_text(card)}


CARD_CORRECT_UNCONFIRMED = "card_correct_unconfirmed"


def act_card_correct(request, session, user):
    """The last card, tapped wrongly: the card it really is (the picker beside the cards),
    asked again naming both before it is changed. The service runs first, in a savepoint
    undone unless confirmed (as _entered_unless_large), so only a correction the rules take is
    asked: a refused one says why at once."""
    was, card = request.POST.get("was", ""), _card(request)
    coup = _coup(request, session)
    with transaction.atomic():
        services.card_entry_correct(coup=coup, by=user, was=was, card=card)
        if request.POST.get("confirm_card") != "yes":
            raise BadForm(
                CARD_CORRECT_UNCONFIRMED,
                _("Correct the last card: %(was)s was entered, it is %(card)s?")
                % {"was": card_text(was), "card": card_text(card)},
                details={"was": was, "card": card},
                status_code=409,
            )
    return _("Last card corrected: %(was)s is %(card)s.") % {"was": card_text(was), "card": card_text(card)}


def act_punta(request, session, user):
    draws = _draws(request)
    coup = services.punta_declare(coup=_coup(request, session), by=user, draws=draws)
    if draws and coup.state == Coup.State.SETTLED and len(coup.cards) == 4:
        # RULES.md §2.6: the banker showed a natural, so the card the punta asked for is not
        # given; "the punta says carte" alone sent the croupier to the sabot for it.
        return _("The punta says carte, but the banker shows a natural: no card is given.")
    return _("The punta says carte.") if draws else _("The punta says non.")


def act_banker_stand(request, session, user):
    services.banker_decide(coup=_coup(request, session), by=user, draws=False)
    return _("The banker stands.")


def act_reconstruction_card(request, session, user):
    card = _card(request)
    services.reconstruction_card(coup=_coup(request, session), by=user, card=card, expect_cards=_expect_cards(request))
    return _("Reconstruction: card %(card)s entered.") % {"card": card_text(card)}


def act_reconstruction_decide(request, session, user):
    side = request.POST.get("side", "")
    try:
        services.reconstruction_decide(coup=_coup(request, session), by=user, side=side, draws=_draws(request))
    except ApplicationError as exc:
        # The play's own words would say "the banker has no decision", whichever side this is.
        words = {
            "decision_not_expected": _("The reconstruction does not wait for this decision."),
            "card_required": _("The reconstruction needs the next card of the sabot first."),
        }
        if exc.code in words:
            raise BadForm(exc.code, words[exc.code], details=exc.details) from None
        raise
    return _("Reconstruction: decision entered.")


def act_regola(request, session, user):
    declared = _draws(request, "declared")
    mark = services.regola_mark(session=session, by=user, patron=_patron(request), declared=declared)
    # Each coup takes the marks at rien ne va plus: past it, a change is for the next coup.
    coup = Coup.objects.filter(
        session=session, state__in=(Coup.State.CLOSED, Coup.State.DEALING, Coup.State.PENDING)
    ).first()
    if coup is not None:
        words = {"name": mark.patron.full_name, "number": coup.number + 1}
        if declared:
            return _("%(name)s plays alla Regola from the next coup (coup %(number)s): "
                     "this coup is played as marked at rien ne va plus.") % words
        return _("%(name)s no longer plays alla Regola from the next coup (coup %(number)s): "
                 "this coup is played as marked at rien ne va plus.") % words
    if declared:
        return _("%(name)s plays alla Regola.") % {"name": mark.patron.full_name}
    return _("%(name)s no longer plays alla Regola.") % {"name": mark.patron.full_name}


def act_bar(request, session, user):
    bar = services.faux_tirage_bar(
        session=session, by=user, patron=_patron(request), reason=request.POST.get("reason", "")
    )
    return _("%(name)s is barred from holding the cards (faux tirage).") % {"name": bar.patron.full_name}


def act_void(request, session, user):
    card = _card(request)
    services.card_void(session=session, by=user, card=card, reason=request.POST.get("reason", ""))
    return _("Card %(card)s voided, to the sibilla.") % {"card": card_text(card)}


def act_cash_exchange(request, session, user):
    raw = request.POST.get("patron") or ""
    patron = _patron(request) if raw.strip() else None
    quick = request.POST.get("quick_cents") or ""
    amount = (
        int_field(quick, field="quick_cents") if quick.strip() else euros_to_cents(request.POST.get("amount"))
    )
    row = services.cash_exchange_record(
        session=session, by=user, direction=request.POST.get("direction", ""), amount=amount, patron=patron
    )
    words = {"number": row.number, "amount": euros(row.amount)}
    if row.direction == CashExchange.Direction.BUY_IN:
        message = _("Line %(number)s: € %(amount)s of cash for chips.") % words
    else:
        message = _("Line %(number)s: € %(amount)s of chips for cash.") % words
    if row.identification_required:
        message += " " + _("Patron identified (anti-money laundering): %(name)s, linked exchanges € %(total)s.") % {
            "name": row.patron.full_name, "total": euros(row.linked_total)}
    return message


def act_cash_void(request, session, user):
    pk = int_field(request.POST.get("exchange"), field="exchange")
    row = CashExchange.objects.filter(pk=pk, session=session).first()
    if row is None:
        raise BadForm("unknown_exchange", _("This line is not in this table's register."), details={"exchange": pk})
    row = services.cash_exchange_void(exchange=row, by=user, reason=request.POST.get("reason", ""))
    return _("Line %(number)s voided: € %(amount)s leaves the totals.") % {
        "number": row.number, "amount": euros(row.amount)}


# The drawer's refusals whose codes the other books use too (the cagnotte's count on the desk):
# said here in the drawer's words, not in the floor's common ones for the code.
DRAWER_REFUSALS = {
    "session_not_closed": gettext_lazy("The session is still in play: its drawer is counted once it is closed."),
    "already_counted": gettext_lazy("This drawer is counted already: correct the count in force."),
    "nothing_to_correct": gettext_lazy("Give a float, a cash counted or chips figures other than the count's."),
    "chips_incomplete": gettext_lazy(
        "The chips are counted with both figures: the chips' float and the chips counted, or neither."
    ),
    "books_signed": gettext_lazy(
        "The day's control register is signed by both: its books are final, the drawer is no longer counted."
    ),
    "unknown_staff_change": gettext_lazy("This handover is not of this table session."),
    "changeur_not_changed": gettext_lazy("This staff change kept the changeur: no drawer was handed over."),
}


def _drawer_service(service: Callable, **kwargs) -> CashCount:
    try:
        return service(**kwargs)
    except ApplicationError as exc:
        if exc.code in DRAWER_REFUSALS:
            raise BadForm(exc.code, str(DRAWER_REFUSALS[exc.code]), details=exc.details,
                          status_code=exc.status_code) from None  # fmt: skip
        raise


def _drawer_words(count: CashCount) -> str:
    words = {
        "expected": euros(count.expected),
        "counted": euros(count.counted),
        "difference": euros(abs(count.difference)),
    }
    if count.difference > 0:
        said = _("Expected € %(expected)s, counted € %(counted)s: a surplus of € %(difference)s.")
    elif count.difference < 0:
        said = _("Expected € %(expected)s, counted € %(counted)s: a shortfall of € %(difference)s.")
    else:
        said = _("Expected € %(expected)s, counted € %(counted)s: the drawer is exact.")
    # The chips' sentence follows the cash's whatever the cash's difference (it followed an
    # exact drawer only: a tray short beside a cash surplus went unsaid).
    return said % words + _chips_words(count)


def _chips_words(count: CashCount) -> str:
    """The chips' sentence after the cash's, when the chips were counted."""
    if count.chips_difference is None:
        return ""
    words = {
        "expected": euros(count.chips_expected),  # below 0 with its sign: the slip or the register is wrong
        "counted": euros(count.chips_counted),
        "difference": euros(abs(count.chips_difference)),
    }
    if count.chips_difference > 0:
        said = _("Chips: expected € %(expected)s, counted € %(counted)s: a surplus of € %(difference)s.")
    elif count.chips_difference < 0:
        said = _("Chips: expected € %(expected)s, counted € %(counted)s: a shortfall of € %(difference)s.")
    else:
        said = _("Chips: expected € %(expected)s, counted € %(counted)s: the tray is exact.")
    return " " + said % words


# The drawer form's four amounts, as a refused figure names its field (euros_to_cents' label):
# "Enter an amount in euros" alone left the Commissario to guess which of the four it was.
DRAWER_FIELDS = {
    "float_issued": gettext_lazy("Float issued"),
    "counted": pgettext_lazy("drawer", "Counted"),
    "chips_float": capfirst(gettext_lazy("chips' float")),
    "chips_counted": gettext_lazy("Chips counted"),
}


def _drawer_euros(raw: str | None, field: str) -> int:
    return euros_to_cents(raw, field=field, label=str(DRAWER_FIELDS[field]))


def _chips_figures(request: HttpRequest) -> dict[str, int]:
    """The chips' figures typed (euros), a blank one left out: both blank, the chips not
    counted (or, in a correction, restated); one alone, the service says which is missing."""
    return {
        field: _drawer_euros(raw, field)
        for field in ("chips_float", "chips_counted")
        if (raw := (request.POST.get(field) or "").strip())
    }


def act_cash_count(request, session, user):
    # A changeur's handover: the staff change whose drawer is counted (none: the final count).
    raw = (request.POST.get("staff_change") or "").strip()
    handover = {"staff_change": int_field(raw, field="staff_change")} if raw else {}
    count = _drawer_service(
        services.cash_count_record,
        session=session,
        by=user,
        **handover,
        float_issued=_drawer_euros(request.POST.get("float_issued") or "0", "float_issued"),
        counted=_drawer_euros(request.POST.get("counted"), "counted"),
        note=request.POST.get("note", ""),
        **_chips_figures(request),
    )
    if count.staff_change_id is not None:
        return _("Handover counted.") + " " + _drawer_words(count)
    return _("Drawer counted.") + " " + _drawer_words(count)


def act_cash_count_correct(request, session, user):
    pk = int_field(request.POST.get("count"), field="count")
    count = CashCount.objects.filter(pk=pk, session=session).first()
    if count is None:
        raise BadForm("unknown_count", _("This count is not of this table's drawer."), details={"count": pk})
    figures = {
        field: _drawer_euros(raw, field)
        for field in ("float_issued", "counted")
        if (raw := (request.POST.get(field) or "").strip())
    }
    figures.update(_chips_figures(request))
    new = _drawer_service(
        services.cash_count_correct, count=count, by=user, reason=request.POST.get("reason", ""), **figures
    )
    if new.staff_change_id is not None:  # said as the count was: a handover's is not the session's drawer
        return _("Handover count corrected.") + " " + _drawer_words(new)
    return _("Count corrected.") + " " + _drawer_words(new)


def _succession(request: HttpRequest, session: TableSession) -> Succession:
    pk = int_field(request.POST.get("succession"), field="succession")
    succ = Succession.objects.filter(pk=pk, session=session).first()
    if succ is None:
        raise BadForm("unknown_succession", _("This succession is not at this table."), details={"succession": pk})
    return succ


def _auction(request: HttpRequest, session: TableSession) -> Auction:
    pk = int_field(request.POST.get("auction"), field="auction")
    auction = Auction.objects.filter(pk=pk, session=session).first()
    if auction is None:
        raise BadForm("unknown_auction", _("This asta is not at this table."), details={"auction": pk})
    return auction


def _after_answer(succ: Succession) -> str:
    succ.refresh_from_db()
    if succ.status == Succession.Status.TAKEN:
        bank = succ.new_bank
        return " " + _("%(name)s holds the bank: € %(amount)s.") % {
            "name": bank.banker.full_name, "amount": euros(bank.amount)}
    if succ.status == Succession.Status.UNCLAIMED:
        return " " + _("Nobody took the bank in turn: it may go to the asta.")
    if succ.status == Succession.Status.LAPSED:
        return " " + _("Nobody took the bank: open a new bank.")
    return ""


def act_offer_accept(request, session, user):
    succ, patron = _succession(request, session), _patron(request)
    amount = euros_to_cents(request.POST.get("amount"))
    # the least his offer takes: a new bank's, today's minimum (as the service reads it); a
    # continuation's, its floor (a large bank carried on is no slip)
    offer = succ.offers.filter(patron=patron, status=SuccessionOffer.Status.PENDING).order_by("order").first()
    least = None  # (not his turn: the service refuses it, and nothing is asked)
    if offer is not None:
        new_bank = offer.round in (SuccessionOffer.Round.NEW_BANK, SuccessionOffer.Round.MINIMUM)
        least = session.minimum if new_bank else offer.amount_min
    _entered_unless_large(
        request, lambda: services.offer_accept(succession=succ, by=user, patron=patron, amount=amount),
        amount=amount, least=least, name=patron.full_name,
        question=_("Take the bank at € %(amount)s for %(name)s? That is %(times)s times the least this offer takes."),
    )  # fmt: skip
    after = _after_answer(succ)
    if succ.status == Succession.Status.TAKEN:  # the new bank says it all
        return after.strip()
    # Accepted but not taken: a chemmy-fi claim, which a nearer player may still outrank
    # (RULES.md §5); "accepts the bank" read as if the bank were his already.
    return _("%(name)s claims the bank: it is his unless a nearer player claims it too.") % {
        "name": patron.full_name
    } + after


def act_offer_pass(request, session, user):
    succ, patron = _succession(request, session), _patron(request)
    services.offer_pass(succession=succ, by=user, patron=patron)
    return _("%(name)s passes.") % {"name": patron.full_name} + _after_answer(succ)


def act_auction_open(request, session, user):
    services.auction_open(session=session, by=user)
    return _("The asta is open: the highest bid takes the bank.")


def act_auction_bid(request, session, user):
    auction, patron = _auction(request, session), _patron(request)
    field = {"minimum": "amount_minimum", "raise": "amount_raise"}.get(request.POST.get("quick", ""), "amount")
    amount = euros_to_cents(request.POST.get(field))
    least, question = None, ""
    if field == "amount":  # typed (the quick bids' figures are the page's own)
        # measured against the going price: a bid far above the best one is the slip, not a
        # bid that meets a large one confirmed before it
        best = auction.bids.aggregate(best=Max("amount"))["best"] or 0
        if best > session.minimum:
            least, question = best, _("Bid € %(amount)s for %(name)s? That is %(times)s times the best bid.")
        else:
            least, question = session.minimum, _("Bid € %(amount)s for %(name)s? That is %(times)s times the minimum.")
    bid = _entered_unless_large(
        request, lambda: services.auction_bid(auction=auction, by=user, patron=patron, amount=amount),
        amount=amount, least=least, question=question, name=patron.full_name,
    )
    return _("Bid %(seq)s: %(name)s, € %(amount)s.") % {
        "seq": bid.seq, "name": patron.full_name, "amount": euros(bid.amount)}


def act_auction_close(request, session, user):
    auction = services.auction_close(auction=_auction(request, session), by=user)
    if auction.winning_bid is None and auction.bids_count:
        return _("The asta is closed: no bid stood (see why below). Open a new bank.")
    if auction.winning_bid is None:
        return _("The asta is closed without bids: open a new bank.")
    bid = auction.winning_bid
    return _("The asta is closed: %(name)s holds the bank, € %(amount)s.") % {
        "name": bid.patron.full_name, "amount": euros(bid.amount)}


ACTIONS: dict[str, Callable] = {
    "shoe-load": act_shoe_load,
    "bank-open": act_bank_open,
    "first-bank-pass": act_first_bank_pass,
    "bank-withdraw": act_bank_withdraw,
    "bank-raise": act_bank_raise,
    "coup-open": act_coup_open,
    "bet": act_bet,
    "rien-ne-va-plus": act_rien_ne_va_plus,
    "bet-withdraw": act_bet_withdraw,
    "coup-annul": act_coup_annul,
    "card": act_card,
    "card-correct": act_card_correct,
    "punta": act_punta,
    "banker-stand": act_banker_stand,
    "reconstruction-card": act_reconstruction_card,
    "reconstruction-decide": act_reconstruction_decide,
    "regola": act_regola,
    "bar": act_bar,
    "void": act_void,
    "offer-accept": act_offer_accept,
    "offer-pass": act_offer_pass,
    "auction-open": act_auction_open,
    "auction-bid": act_auction_bid,
    "auction-close": act_auction_close,
    "cash-exchange": act_cash_exchange,
    "cash-void": act_cash_void,
    "cash-count": act_cash_count,
    "cash-count-correct": act_cash_count_correct,
}


# The actions whose typed amount is asked again when large (_confirm_large), with the button
# that sends it confirmed; and the fields that button does not send again: its form has its
# own CSRF token and a new key (a new entry: the first post's key holds the question).
CONFIRMS_LARGE = {
    "bank-open": gettext_lazy("Yes, open the bank at € %(amount)s"),
    "bank-raise": gettext_lazy("Yes, raise the bank to € %(amount)s"),
    "auction-bid": gettext_lazy("Yes, bid € %(amount)s"),
    "offer-accept": gettext_lazy("Yes, take the bank at € %(amount)s"),
}
NOT_RESENT = frozenset({"csrfmiddlewaretoken", "idempotency_key", "confirm_large", "confirm_card"})
# The other forms shown again as they were sent when refused. The changeur's exchange: its
# direction is a radio choice, which the page's script does not carry over a refusal (it keeps
# typed fields and chosen options only); back at "cash for chips", an amount corrected after
# a refused "chips for cash" would be entered the wrong way round.
KEEPS_TYPED = frozenset({"cash-exchange"})


@login_required
def tablet_action(request: HttpRequest, pk: int, action: str) -> HttpResponse:
    if request.method == "GET":
        # An action's address opened as a page (after a login that followed a post, a
        # bookmark): the tablet it belongs to, rather than an empty 405.
        return redirect("tablet-session", pk=pk)
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    handler = ACTIONS.get(action)
    session = get_object_or_404(TableSession.objects.select_related("table", "capo_partita"), pk=pk)
    writable = session_writable_by(request.user, session)
    floor = (action in FLOOR_ACTIONS and _commissario(request)) or (
        action in DIREZIONE_ACTIONS and has_role(request.user, Role.DIREZIONE)
    )
    # The register's lines: its changeur, whatever the session's state (the service answers a
    # closed session with 409); a void, the Commissario too.
    cash = action in CASH_ACTIONS and (
        _serves_as_changeur(request.user, session) or (action == "cash-void" and has_role(request.user, *VOIDS_ANY))
    )
    # The drawer of a closed session: the Commissario or the Direzione (the service answers a
    # session still in play with 409); anyone else is refused here, its Capo Partita included.
    drawer = action in DRAWER_ACTIONS and has_role(request.user, *COUNTS_DRAWER)
    if action in DRAWER_ACTIONS and not drawer:
        return forbidden(
            request, _("Only the Commissario di Gioco or the Direzione Giochi counts a table's drawer.")
        )
    cash = cash or drawer
    # Its own Capo Partita, once the session is closed: told so (409), as the API tells him.
    closed_to_its_capo = (
        session.is_closed and session.capo_partita_id == request.user.pk and has_role(request.user, Role.CAPO_PARTITA)
    )
    # An entry its user made while he could (a tablet's queue sending it again after its answer
    # was lost) gets that answer back, even once he is relieved or the session is closed: told
    # "closed", he would think it was never entered.
    replay = None if (writable or floor or cash) else stored_outcome(request)
    if not (writable or floor or cash or closed_to_its_capo or replay):
        if action in CASH_ACTIONS:
            return forbidden(request, _("Only the changeur assigned to this table session records its cash exchanges."))
        if has_role(request.user, Role.CAPO_PARTITA) and not session.is_closed:  # relieved, or another table's
            return forbidden(request, _("%(name)s runs this table now: you do not record its play.") % {
                "name": session.capo_partita.get_full_name() or session.capo_partita.get_username()})
        return forbidden(request, _("Only the Capo Partita assigned to this table session may record its play."))
    if handler is None:
        return not_found(request)
    if replay is not None:
        # His own entry, made before he was relieved: its answer again, and nothing of the
        # table as it is now (he may no longer see it).
        return refusal(
            request, status=replay.status, title=_("Already recorded"),
            message=f"{replay.message} ({_('already recorded: the same answer again')})",
        )  # fmt: skip
    if closed_to_its_capo and not (floor or cash):
        outcome = Outcome(False, "", "session_closed", 409)
    else:
        outcome = form_post(request, lambda: handler(request, session, request.user))
    if not outcome.ok and not outcome.localized and outcome.code in SUCCESSION_REFUSALS:
        outcome.message = _succession_refusal(outcome.code, outcome.details or {})
    session.refresh_from_db()
    context = _context(session, writable, outcome, viewer=request.user, **_floor_powers(request))
    if not outcome.ok and (action in CONFIRMS_LARGE or action in KEEPS_TYPED):
        # the refused form's figures, shown again (without htmx, whose script keeps them)
        context["typed"] = {"form": action, "pk": "", "values": request.POST}
        if outcome.code == LARGE_AMOUNT_UNCONFIRMED:
            context["confirm_large"] = {
                "url": request.path,
                "fields": [(k, v) for k, v in request.POST.items() if k not in NOT_RESENT],
                # the amount it enters, said on the button: the form below still holds the typed
                # figure, and one corrected there is not what this button sends
                "button": CONFIRMS_LARGE[action] % {"amount": euros_exact(outcome.details["amount"])},
            }
    if outcome.code == CARD_CORRECT_UNCONFIRMED:
        # A card correction, asked again naming both cards: the same entry, confirmed, under a new key.
        context["confirm_large"] = {
            "url": request.path,
            "fields": [(k, v) for k, v in request.POST.items() if k not in NOT_RESENT],
            "field": "confirm_card",
            "button": _("Yes: %(was)s is %(card)s") % {
                "was": card_text(outcome.details["was"]), "card": card_text(outcome.details["card"])},
        }  # fmt: skip
    # htmx swaps 4xx answers too (base.html's htmx-config): the refusal shows in the panel.
    template = "tables/_tablet_panel.html" if is_htmx(request) else "tables/tablet_session.html"
    return render(request, template, context, status=outcome.status)
