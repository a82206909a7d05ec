"""The Capo Partita's tablet: his open sessions, and one session's coup step by step.

Thin views (ARCHITECTURE.md): parse the form, authorize by object (only the Capo Partita
assigned to the session posts: floor.permissions.session_writable_by), call ONE service,
render. What the coup needs next, the rule in force and the Regola hint all come from
tables.selectors.session_game_state (the engine); the page only shows them."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_POST

from floor.models import Patron, TableSession
from floor.permissions import session_writable_by
from floor.roles import Role, has_role
from tables import services
from tables.engine import live
from tables.models import Bank, Coup
from tables.selectors import coup_list, session_game_state

from .views_common import BadForm, Outcome, euros_to_cents, forbidden, form_post, int_field, is_htmx

# Who may look at a tablet without writing: the floor's supervisors.
TABLET_READERS = (Role.COMMISSARIO, Role.DIREZIONE, Role.AUDITOR)

RANKS = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"]
SUITS = [("S", "♠", gettext_lazy("spades")), ("H", "♥", gettext_lazy("hearts")),
         ("D", "♦", gettext_lazy("diamonds")), ("C", "♣", gettext_lazy("clubs"))]

RULE_NAMES = {
    "punta_several": gettext_lazy("punta playing for several bettors"),
    "punta_banco_solo": gettext_lazy("punta, banco solo"),
    "punta_regola": gettext_lazy("punta alla Regola"),
    "banker": gettext_lazy("banker, not declared"),
    "banker_regola": gettext_lazy("banker alla Regola"),
}
CELLS = {"draw": gettext_lazy("draws"), "stand": gettext_lazy("stands"), "free": gettext_lazy("free")}
SIDES = {"punta": gettext_lazy("punta"), "banker": gettext_lazy("banker")}
REASONS = {
    "session_closed": gettext_lazy("the session is closed"),
    "session_interrupted": gettext_lazy("play is interrupted"),
    "no_active_bank": gettext_lazy("no bank is open"),
    "no_shoe": gettext_lazy("no sabot is loaded"),
    "stop_card_reached": gettext_lazy("the stop card has appeared: load a new sabot"),
    "coup_in_progress": gettext_lazy("a coup is in play"),
}


def _session_for(request: HttpRequest, pk: int) -> tuple[TableSession, bool] | HttpResponse:
    session = get_object_or_404(TableSession.objects.select_related("table", "capo_partita"), pk=pk)
    writable = session_writable_by(request.user, session)
    if not writable and not has_role(request.user, *TABLET_READERS):
        return forbidden(request, _("Only the Capo Partita assigned to this table session may use its tablet."))
    return session, writable


@login_required
@require_GET
def tablet_home(request: HttpRequest) -> HttpResponse:
    if not has_role(request.user, Role.CAPO_PARTITA):
        return forbidden(request, _("The tablet is the Capo Partita's."))
    sessions = (
        TableSession.objects.filter(capo_partita=request.user)
        .exclude(status=TableSession.Status.CLOSED)
        .select_related("table", "table__site", "gaming_day")
        .order_by("table__number")
    )
    return render(request, "tables/tablet_home.html", {"sessions": sessions})


def _context(session: TableSession, writable: bool, outcome: Outcome | None = None) -> dict:
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
    rule = (coup or {}).get("rule")
    regola_side = None
    if rule:
        regola_side = coup["regola_punta"] if rule["side"] == "punta" else coup["regola_banker"]
        rule = {
            **rule,
            "rule_label": RULE_NAMES.get(rule["rule"], rule["rule"]),
            "cell_label": CELLS.get(rule["cell"], rule["cell"]),
            "advice_label": CELLS.get(rule["advice"]) if rule.get("advice") else None,
            "side_label": SIDES.get(rule["side"], rule["side"]),
            "regola": regola_side,
        }
    shown = coup or last
    postings = []
    if shown and shown["state"] == Coup.State.SETTLED:
        played = coup_list(session=session).filter(pk=shown["id"]).first()
        names = {p["patron"]["id"]: p["patron"]["name"] for p in state["seats"]}
        postings = [
            {"role": p.role, "name": names.get(p.patron_id, "") if p.patron_id else _("house (cagnotte)"),
             "amount": p.amount}
            for p in (played.postings.all() if played else [])
        ]
    return {
        "session": session,
        "state": state,
        "writable": writable and session.is_open,
        "readonly_reason": None if writable else _("Read only: you are not this table's Capo Partita."),
        "coup": coup,
        "last": last,
        "shown": shown,
        "postings": postings,
        "bank": bank,
        "places": places,
        "seated": [p for p in places if not p["standing"]],
        "quick": quick,
        "rule": rule,
        # Which hand the next card goes to (a declaration is not a card).
        "next_card_side": coup["next"]["side"]
        if coup and coup.get("next") and coup["next"]["need"] in (live.CARD, live.BANKER_DECISION)
        else None,
        "ranks": RANKS,
        "suits": SUITS,
        "sides": SIDES,
        "cannot_open": [REASONS.get(r, r) for r in state["cannot_open_because"]],
        "first_bank": bank is None and not state["last_coup"],
        "outcome": outcome,
        "withdrawable": bank is not None and bank["coups_completed"] >= 1 and coup is None,
    }


@login_required
@require_GET
def tablet_session(request: HttpRequest, pk: int) -> HttpResponse:
    found = _session_for(request, pk)
    if isinstance(found, HttpResponse):
        return found
    session, writable = found
    template = "tables/_tablet_panel.html" if is_htmx(request) else "tables/tablet_session.html"
    return render(request, template, _context(session, writable))


# --------------------------------------------------------------------------- actions
# Each action parses its form and calls one service; it returns the message shown on success.


def _patron(request: HttpRequest) -> Patron:
    pk = int_field(request.POST.get("patron"), field="patron")
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
    shoe = services.shoe_load(session=session, by=user, number=request.POST.get("number", ""))
    return _("Sabot %(number)s loaded.") % {"number": shoe.number}


def act_bank_open(request, session, user):
    bank = services.bank_open(
        session=session, by=user, patron=_patron(request), amount=euros_to_cents(request.POST.get("amount"))
    )
    return _("Bank opened: %(name)s.") % {"name": bank.banker.full_name}


def act_bank_withdraw(request, session, user):
    bank = get_object_or_404(Bank, pk=int_field(request.POST.get("bank"), field="bank"), session=session)
    services.bank_withdraw(bank=bank, by=user)
    return _("The banker withdrew, taking the bank.")


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


def act_rien_ne_va_plus(request, session, user):
    services.rien_ne_va_plus(coup=_coup(request, session), by=user)
    return _("Rien ne va plus.")


def act_card(request, session, user):
    card = _card(request)
    services.card_deal(coup=_coup(request, session), by=user, card=card)
    return _("Card %(card)s entered.") % {"card": card}


def act_punta(request, session, user):
    draws = _draws(request)
    services.punta_declare(coup=_coup(request, session), by=user, draws=draws)
    return _("The punta says carte.") if draws else _("The punta says non.")


def act_banker_stand(request, session, user):
    services.banker_decide(coup=_coup(request, session), by=user, draws=False)
    return _("The banker stands.")


def act_reconstruction_card(request, session, user):
    card = _card(request)
    services.reconstruction_card(coup=_coup(request, session), by=user, card=card)
    return _("Reconstruction: card %(card)s entered.") % {"card": card}


def act_reconstruction_decide(request, session, user):
    side = request.POST.get("side", "")
    services.reconstruction_decide(coup=_coup(request, session), by=user, side=side, draws=_draws(request))
    return _("Reconstruction: decision entered.")


def act_regola(request, session, user):
    declared = _draws(request, "declared")
    mark = services.regola_mark(session=session, by=user, patron=_patron(request), declared=declared)
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
    return _("Card %(card)s voided, to the sibilla.") % {"card": card}


ACTIONS: dict[str, Callable] = {
    "shoe-load": act_shoe_load,
    "bank-open": act_bank_open,
    "bank-withdraw": act_bank_withdraw,
    "coup-open": act_coup_open,
    "bet": act_bet,
    "rien-ne-va-plus": act_rien_ne_va_plus,
    "card": act_card,
    "punta": act_punta,
    "banker-stand": act_banker_stand,
    "reconstruction-card": act_reconstruction_card,
    "reconstruction-decide": act_reconstruction_decide,
    "regola": act_regola,
    "bar": act_bar,
    "void": act_void,
}


@login_required
@require_POST
def tablet_action(request: HttpRequest, pk: int, action: str) -> HttpResponse:
    handler = ACTIONS.get(action)
    session = get_object_or_404(TableSession.objects.select_related("table"), pk=pk)
    if not session_writable_by(request.user, session):
        return forbidden(request, _("Only the Capo Partita assigned to this table session may record its play."))
    if handler is None:
        return render(request, "404.html", status=404)
    outcome = form_post(request, lambda: handler(request, session, request.user))
    session.refresh_from_db()
    context = _context(session, True, outcome)
    # htmx swaps 4xx answers too (base.html's htmx-config): the refusal shows in the panel.
    template = "tables/_tablet_panel.html" if is_htmx(request) else "tables/tablet_session.html"
    return render(request, template, context, status=outcome.status)
