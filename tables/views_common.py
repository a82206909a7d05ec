"""What the browser pages share: the idempotent form post, the 403 page, money parsing.

A page's form carries a hidden `idempotency_key` made when the form was rendered (a uuid4,
{% idempotency_field %}). The post runs through floor.idempotency's idempotent_response, the
same contract as the API's Idempotency-Key header: the first post runs the service and its
outcome (a success message or the service's refusal) is stored in the same transaction; a
retry with the same key (a tablet that lost the answer on a flaky network) gets that stored
outcome back and writes nothing."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any
from urllib.parse import unquote_to_bytes

from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect, QueryDict
from django.http.request import RawPostDataException
from django.utils.translation import get_language, gettext_lazy, ngettext
from django.utils.translation import gettext as _
from rest_framework.response import Response

from config.api import is_strict_int
from config.errors import ApplicationError
from config.htmx import is_htmx as is_htmx  # (the pages import it from here)
from config.htmx import refusal
from floor.idempotency import HEADER, REPLAYED_HEADER, idempotent_response, request_fingerprint, validate_key
from floor.models import IdempotencyKey

KEY_FIELD = "idempotency_key"
# Form fields that are not part of what the user asked for: a retry may carry another CSRF
# token (a fresh page) for the same intended operation.
_NOT_FINGERPRINTED = {"csrfmiddlewaretoken", KEY_FIELD}


# The services speak English with a stable code; the pages say the common refusals in the
# user's language by that code (the stored answer keeps the service's own words).
REFUSALS = {
    "bet_over_bank": gettext_lazy("The bets would exceed the bank."),
    "bet_after_rien_ne_va_plus": gettext_lazy("Betting is closed (rien ne va plus)."),
    "banco_called": gettext_lazy("Banco is called: it covers the whole bank alone."),
    "banco_carried": gettext_lazy("A banco carried from the tie covers the whole bank: no other banco or bet."),
    "bets_already_placed": gettext_lazy("Bets are placed: banco solo covers the whole bank alone."),
    "coup_moved_on": gettext_lazy(
        "The coup has moved on since this page was shown (another tablet?): check its cards, then enter the next one."
    ),
    "bet_already_placed": gettext_lazy("This player has bet already: bets made in time cannot be changed."),
    "avec_la_table_taken": gettext_lazy("Banco avec la table is taken for this coup."),
    "patron_barred": gettext_lazy("A barred player may not hold the cards (faux tirage)."),
    "patron_already_barred": gettext_lazy("This player is barred already."),
    "regola_unchanged": gettext_lazy("The player's Regola is so already."),
    "not_enough_players": gettext_lazy("The game starts when enough seats are taken."),
    "not_first_banker_seat": gettext_lazy(
        "The first bank goes to the player at seat 1, or the next occupied seat in rotation if seat 1 is "
        "empty or declined it."
    ),
    "first_bank_opened": gettext_lazy("The first bank is opened already: the bank passes by its succession."),
    "first_bank_declined_by_all": gettext_lazy("Every seated player has declined the first bank."),
    "bank_below_minimum": gettext_lazy("A new bank is at least the table minimum."),
    "bank_above_maximum": gettext_lazy("The bank is above the table maximum."),
    "bank_already_active": gettext_lazy("A bank is open at this table already."),
    "withdraw_too_early": gettext_lazy("A banker withdraws after at least one completed coup."),
    "coup_in_progress": gettext_lazy(
        "A coup is in play at this table: it is played to its end, or annulled (once its cards have started, "
        "by the Commissario)."
    ),
    "no_active_bank": gettext_lazy("No bank is open at this table."),
    "no_shoe": gettext_lazy("No sabot is loaded at this table."),
    "stop_card_reached": gettext_lazy("The stop card has appeared: load a new sabot."),
    "session_interrupted": gettext_lazy("Play is interrupted at this table."),
    "session_closed": gettext_lazy("The table session is closed."),
    "declaration_required": gettext_lazy("The punta must say carte or non before the next card."),
    "bad_card": gettext_lazy("This is not a card."),
    "card_exhausted": gettext_lazy(
        "This card has come out of the sabot as many times as there are decks: it cannot be right."
    ),
    "shoe_empty": gettext_lazy("The sabot is empty."),
    "card_not_last": gettext_lazy("Only the coup's last card may be corrected."),
    "card_not_latest": gettext_lazy(
        "A declaration or decision was entered after this card: it is no longer corrected here."
    ),
    "coup_settled": gettext_lazy(
        "The coup is settled: its cards are no longer corrected (a dispute goes to the Direzione)."
    ),
    "card_unchanged": gettext_lazy("The right card is the one entered: nothing to correct."),
    "reason_required": gettext_lazy("Give the reason."),
    "minimum_out_of_range": gettext_lazy(
        "The minimum must be at least 1 euro, at most 20,000,000 euro, and not above the maximum."
    ),
    "maximum_out_of_range": gettext_lazy("The maximum must be at least 1 euro and at most 20,000,000 euro."),
    "minimum_unchanged": gettext_lazy("The minimum is this amount already."),
    "seat_taken": gettext_lazy("This seat is taken."),
    "patron_already_seated": gettext_lazy("The patron holds a place already; release it first."),
    "patron_not_at_table": gettext_lazy("The player holds no seat or standing place at this table."),
    "table_session_already_open": gettext_lazy("The table has a session in play."),
    "shoe_in_use": gettext_lazy("This sabot is assigned to another table's session."),
    "capo_partita_busy": gettext_lazy("This Capo Partita runs another table's session."),
    "changeur_busy": gettext_lazy("This changeur works at another table's session."),
    "user_inactive": gettext_lazy("This member of staff's account is inactive."),
    "staff_unchanged": gettext_lazy("This Capo Partita and this changeur run the table already."),
    "no_open_gaming_day": gettext_lazy("The casino has no open gaming day."),
    "gaming_day_already_open": gettext_lazy("The casino has an open gaming day already."),
    "sessions_still_open": gettext_lazy("Tables are still in play: close their sessions first."),
    "gaming_day_closed": gettext_lazy("The gaming day is closed already."),
    "idempotency_key_reused": gettext_lazy("This form was already sent for another entry: reload the page."),
    "bad_idempotency_key": gettext_lazy("This form's key is damaged: reload the page."),
    # the play's and the floor's own refusals, said in the user's language too
    "betting_open": gettext_lazy("Close betting (rien ne va plus) before the cards."),
    "coup_not_betting": gettext_lazy("Betting is not open on this coup."),
    "no_bets": gettext_lazy("No bet is placed: the coup cannot close its betting."),
    "banco_already_called": gettext_lazy("This player has called banco already."),
    "banker_cannot_bet": gettext_lazy("The banker does not bet against his own bank."),
    "bad_kind": gettext_lazy("A bet is individual or avec la table (banco: call it)."),
    "card_after_natural": gettext_lazy("A natural was shown: no further card or decision."),
    "cards_missing": gettext_lazy("The coup needs its cards first."),
    "too_many_cards": gettext_lazy("The coup is complete: no side takes another card."),
    "coup_pending": gettext_lazy("The coup is complete; its reconstruction waits."),
    "declaration_not_expected": gettext_lazy("The punta has no declaration to make now."),
    "decision_not_expected": gettext_lazy("The banker has no decision to make now."),
    "decision_required": gettext_lazy("The reconstruction needs a decision first."),
    "bad_decision": gettext_lazy("Choose carte or non."),
    "bad_side": gettext_lazy("Choose the punta or the banker."),
    "reconstruction_not_pending": gettext_lazy("This coup has no pending reconstruction."),
    "no_eligible_punta": gettext_lazy(
        "No bettor may hold the cards for the punta (a barred player never does): another player bets, "
        "or the coup is annulled."
    ),
    "bank_not_active": gettext_lazy("This bank has ended."),
    "regola_not_allowed": gettext_lazy("This table's profile has no Regola to declare."),
    "shoe_number_required": gettext_lazy("Give the number of the sabot."),
    "shoe_number_mismatch": gettext_lazy("The first sabot is the one assigned to the session."),
    "bad_shoe": gettext_lazy("This sabot cannot be loaded at this table (its decks)."),
    "not_session_capo_partita": gettext_lazy("Only the Capo Partita assigned to this table session records its play."),
    "profile_not_supported": gettext_lazy("This table's profile is not chemin de fer."),
    "not_a_capo_partita": gettext_lazy("This user is not a Capo Partita."),
    "not_a_changeur": gettext_lazy("This user is not a changeur."),
    "seat_out_of_range": gettext_lazy("There is no such seat at this table."),
    "seat_number_required": gettext_lazy("Choose a seat, or standing."),
    "invalid_seat": gettext_lazy("A standing player has no seat number."),
    "seat_already_released": gettext_lazy("This place was released already."),
    "session_not_open": gettext_lazy("Play is interrupted at this table already."),
    "session_not_interrupted": gettext_lazy("Play is not interrupted at this table."),
    "suspended_by_direzione": gettext_lazy(
        "The Direzione Giochi suspended play at this table: only the Direzione resumes it."
    ),
    "table_inactive": gettext_lazy("The table is not active."),
    "gaming_day_exists": gettext_lazy("A gaming day with this date exists already."),
    "gaming_day_date_out_of_range": gettext_lazy("A gaming day opens on its date: today, or the day before or after."),
    "gaming_day_out_of_order": gettext_lazy("A gaming day comes after the casino's last one."),
    "control_register_not_signed": gettext_lazy(
        "The control register of the previous gaming day is not signed yet: the Direzione signs it first."
    ),
    "already_corrected": gettext_lazy("This has been corrected already: correct the correction."),
    "register_not_signed": gettext_lazy("The control register is not signed yet."),
    "invalid_amount": gettext_lazy("The counted cagnotte is an amount of at least 0 euro."),
    "patron_holds_the_bank": gettext_lazy("This player holds the bank: he withdraws before leaving the table."),
    "patron_in_coup": gettext_lazy("This player has a stake in the coup in play: wait until it is settled."),
    "text_too_long": gettext_lazy("A text is too long."),
    "coup_not_annullable": gettext_lazy("The coup is settled: it cannot be annulled."),
    "not_commissario": gettext_lazy(
        "Once its cards have started, only the Commissario di Gioco or the Direzione Giochi may annul a coup."
    ),
    "coup_annulled": gettext_lazy("This coup was annulled: open the next one."),
    "banker_barred": gettext_lazy("The banker is barred from holding the cards: his bank ends; withdraw it."),
    "bank_raise_not_in_profile": gettext_lazy("At this table the bank continues at the stake the rules fix."),
    "bank_raise_too_early": gettext_lazy("A new bank is opened at the amount wanted: raise it after a coup."),
    "bank_raise_not_higher": gettext_lazy("A raise puts the bank above its amount."),
    "bet_not_withdrawable": gettext_lazy("A bet made in time stands; only a bet carried to a replay may be taken back."),
    "no_bet": gettext_lazy("This player has no bet on this coup."),
    # the changeur's register (tables.services.cash)
    "patron_required": gettext_lazy(
        "Identification required (anti-money laundering): choose the patron for this exchange."
    ),
    "not_session_changeur": gettext_lazy("Only the changeur assigned to this table session records its cash exchanges."),
    "not_exchange_recorder": gettext_lazy(
        "Only the changeur who recorded this line, while he serves the table, or the Commissario voids it."
    ),
    "exchange_already_voided": gettext_lazy("This line is voided already."),
    "exchange_above_maximum": gettext_lazy("This amount is above what one exchange may be."),
    "bad_direction": gettext_lazy("Choose cash for chips or chips for cash."),
    # the drawer's count (tables.services.cash_count)
    "bad_figure": gettext_lazy("A drawer's figure is an amount of at least 0 euro."),
    "figure_above_maximum": gettext_lazy("This amount is above what a drawer's figure may be."),
}

# Refusals whose figure the user needs to meet them: said with it when the service's
# details carry it (money in cents, shown in euros).
DETAILED_REFUSALS = {
    "not_enough_players": (gettext_lazy("The game starts when at least {needed} seats are taken."), ("needed",), ()),
    "bet_over_bank": (gettext_lazy("The bets would exceed the bank: € {open} of it is still open."), (), ("open",)),
    "bank_below_minimum": (gettext_lazy("A new bank is at least the table minimum, € {minimum}."), (), ("minimum",)),
    "bank_above_maximum": (gettext_lazy("The bank is above the table maximum, € {maximum}."), (), ("maximum",)),
    "bank_raise_not_higher": (gettext_lazy("A raise puts the bank above its amount, € {bank}."), (), ("bank",)),
    "patron_required": (
        gettext_lazy(
            "Identification required (anti-money laundering): this exchange, with the ones linked to it, comes to "
            "€ {linked_total}, at least € {threshold}. Choose the patron."
        ),
        (),
        ("linked_total", "threshold"),
    ),
    "exchange_above_maximum": (gettext_lazy("One exchange is at most € {maximum}."), (), ("maximum",)),
    "figure_above_maximum": (gettext_lazy("A drawer's figure is at most € {maximum}."), (), ("maximum",)),
}


def _numbers(value: Any) -> bool:
    """A non-empty list of whole numbers (a refusal's details, read before they are printed)."""
    return isinstance(value, list) and bool(value) and all(type(n) is int for n in value)


def _refusal_message(code: str, details: dict[str, Any]) -> str:
    if code == "card_exhausted" and isinstance(details.get("card"), str):
        # Named: cards are tapped in quick succession, and the refusal must say which one
        # was not entered (the entered ones are named in their own message).
        from .templatetags.chemin_ui import card_text

        return f"{card_text(details['card'])}: {REFUSALS[code]}"
    if code == "patron_already_seated" and type(details.get("table_number")) is int:
        # Where he is, so that the Commissario can release that place (or seat another).
        table, seat = details["table_number"], details.get("seat_number")
        if type(seat) is int:
            return _("The patron holds seat %(seat)s at table %(table)s; release it first.") % {
                "seat": seat,
                "table": table,
            }
        return _("The patron stands at table %(table)s; release his place first.") % {"table": table}
    if code == "shoe_number_mismatch" and isinstance(details.get("session_shoe_number"), str):
        # Which one: the Capo Partita has the sabot in front of him, not the session's record.
        return _("The first sabot is the one assigned to the session: %(number)s.") % {
            "number": details["session_shoe_number"]
        }
    if code == "sessions_still_open" and _numbers(details.get("tables")):
        # Which tables, as the close's own form says them: "Tables are still in play" for the one
        # table a second tab had just opened left the Commissario to look for it.
        tables = details["tables"]
        return ngettext(
            "Table %(tables)s is still in play: close its session before closing the gaming day.",
            "Tables %(tables)s are still in play: close their sessions before closing the gaming day.",
            len(tables),
        ) % {"tables": ", ".join(str(n) for n in tables)}
    if code == "minimum_out_of_range" and all(
        type(details.get(k)) is int for k in ("minimum", "maximum", "lowest", "highest")
    ) and details["lowest"] <= details["minimum"] <= details["highest"] and details["minimum"] > details["maximum"]:
        # A minimum in range but above the maximum: which of the two to change, with both figures
        # (the range's message alone read as if the minimum typed were wrong in itself).
        from .templatetags.chemin_ui import euros

        return str(
            _("The minimum, € {minimum}, is above the maximum, € {maximum}: lower the minimum or raise the maximum.")
        ).format(minimum=euros(details["minimum"]), maximum=euros(details["maximum"]))
    if code in DETAILED_REFUSALS:
        message, counts, amounts = DETAILED_REFUSALS[code]
        values = {name: details.get(name) for name in (*counts, *amounts)}
        if all(isinstance(v, int) and not isinstance(v, bool) for v in values.values()):
            from .templatetags.chemin_ui import euros

            return str(message).format(**{k: (euros(v) if k in amounts else v) for k, v in values.items()})
    return str(REFUSALS[code])


@dataclass
class Outcome:
    ok: bool
    message: str
    code: str = ""
    status: int = 200
    replayed: bool = False
    localized: bool = False  # the page's own refusal (BadForm), said precisely already
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.ok and not self.localized and self.code in REFUSALS:
            self.message = _refusal_message(self.code, self.details or {})


def post_only(page: Callable[[int], str]) -> Callable:
    """A form's action that answers a GET with the page the form is on (`page(pk)`, its
    address), where require_POST answered an empty 405. A form posted without htmx leaves the
    browser at the action's address: the language switch (which reloads the address it is
    on), a reload or a bookmark then opened it as a page."""

    def decorate(view: Callable) -> Callable:
        @functools.wraps(view)
        def wrapper(request: HttpRequest, pk: int, *args: Any, **kwargs: Any) -> HttpResponse:
            if request.method == "GET":
                return HttpResponseRedirect(page(pk))
            if request.method != "POST":
                return HttpResponseNotAllowed(["POST"])
            return view(request, pk, *args, **kwargs)

        return wrapper

    return decorate


class BadForm(ApplicationError):
    """A form value that does not parse: the page's own refusal, stored like a service's."""


def _as_outcome_response(exc: Exception) -> Response:
    if isinstance(exc, ApplicationError):
        return Response(
            {"ok": False, "code": exc.code, "message": str(exc.message), "details": exc.details,
             "localized": isinstance(exc, BadForm)},
            status=exc.status_code,
        )  # fmt: skip
    raise exc


def form_post(request: HttpRequest, run: Callable[[], str]) -> Outcome:
    """Run `run()` (one service call, returning the success message) at most once per key.

    Without a key (an old page, a script) the post runs unprotected, like the API's
    optional header. A refusal never raises out of here: it comes back as an Outcome."""
    if any("\x00" in name or any("\x00" in value for value in values) for name, values in request.POST.lists()):
        # as the API refuses them (nothing stored: PostgreSQL and the audit trail hold no NUL)
        return Outcome(False, _("Null characters are not allowed."), "null_characters", 400)
    if _not_utf8(request):  # Django reads it as U+FFFD: garbage the user never typed, written as his
        return Outcome(False, _("The form was not sent as UTF-8 text: reload the page."), "bad_encoding", 400)
    twice = sorted(name for name, values in request.POST.lists() if len(values) > 1)
    if twice:  # every form field holds one value: a second one is not the user's entry
        return Outcome(False, _("A field was sent twice."), "field_repeated", 400)
    raw = request.POST.get(KEY_FIELD) or request.headers.get(HEADER)
    try:
        key = validate_key(raw, required=False)
    except ApplicationError as exc:
        return Outcome(False, str(exc.message), exc.code, exc.status_code)

    def call() -> Response:
        return Response({"ok": True, "message": run()})

    if key is None:
        try:
            response = call()
        except ApplicationError as exc:
            response = _as_outcome_response(exc)
    else:
        try:
            response = idempotent_response(
                user=request.user,
                key=key,
                method="POST",
                path=request.path,
                fingerprint=_fingerprint(request),
                run=call,
                handle_exception=_as_outcome_response,
            )
        except ApplicationError as exc:  # idempotency_key_reused: the key was sent with another form
            return Outcome(False, str(exc.message), exc.code, exc.status_code)
    return _outcome(response.data, response.status_code, replayed=response.headers.get(REPLAYED_HEADER) == "true")


def _not_utf8(request: HttpRequest) -> bool:
    """A form body whose names or values, percent-decoded, are not UTF-8 (a lone surrogate's
    %ED%A0%80, Latin-1 bytes): a browser never sends one from our pages."""
    if request.content_type != "application/x-www-form-urlencoded":
        return False
    try:
        body = request.body
    except RawPostDataException:  # (read as a stream: nothing to check here)
        return False
    for part in re.split(rb"[&=]", body):
        try:
            unquote_to_bytes(part.replace(b"+", b" ")).decode("utf-8")
        except UnicodeDecodeError:
            return True
    return False


def _outcome(body: dict[str, Any], status: int, *, replayed: bool) -> Outcome:
    if "error" in body:  # idempotency_key_reused: the API's error shape
        error = body["error"]
        return Outcome(False, error.get("message", ""), error.get("code", ""), status)
    return Outcome(
        bool(body.get("ok")),
        body.get("message", ""),
        body.get("code", ""),
        status,
        replayed=replayed,
        localized=bool(body.get("localized")),
        details=body.get("details") if isinstance(body.get("details"), dict) else {},
    )


def _fingerprint(request: HttpRequest) -> str:
    data = QueryDict(mutable=True)
    for name in request.POST:
        if name not in _NOT_FINGERPRINTED:
            data.setlist(name, request.POST.getlist(name))
    return request_fingerprint(method="POST", path=request.get_full_path(), data=data)


def stored_outcome(request: HttpRequest) -> Outcome | None:
    """The stored answer to this very post, if the user made it before (same key, same form).

    A tablet's retry of an entry made while its user could still make it (a Capo Partita
    relieved since, whose offline tablet sends it again) gets that answer back, as the API
    replays it, rather than a refusal that would make him think the entry was lost. Nothing
    runs and nothing is written; a new entry is refused as before."""
    try:
        key = validate_key(request.POST.get(KEY_FIELD) or request.headers.get(HEADER), required=False)
    except ApplicationError:
        return None
    if key is None:
        return None
    record = (
        IdempotencyKey.objects.filter(user=request.user, key=key, completed=True)
        .only("fingerprint", "status_code", "response_body")
        .first()
    )
    if record is None or record.fingerprint != _fingerprint(request) or record.status_code is None:
        return None
    return _outcome(record.response_body or {}, record.status_code, replayed=True)


def forbidden(request: HttpRequest, message: str | None = None, *, queue: str | None = None) -> HttpResponse:
    return refusal(request, status=403, message=message or _("Your role does not allow this page."), queue=queue)


def not_found(request: HttpRequest) -> HttpResponse:
    return refusal(request, status=404, title=_("Not found"), message=_("There is no such page."))


def euros_to_cents(raw: str | None, *, field: str = "amount", label: str | None = None) -> int:
    """An amount typed in euros -> cents (money is an integer in cents, ARCHITECTURE.md).

    '150', '150.5', '150,50', '1 500' (any kind of space, as the pages print it) and both
    languages' thousands: '1.500,50' and '1,500.50'. A lone separator followed by three
    digits is the thousands separator of the page's language ('3.000' is three thousand in
    Italian, '3,000' in English); read the other way it would be an amount with three
    decimals, which is refused ('3,000' on an Italian page, '3.000' on an English one)
    rather than taken a thousand times too small.

    `label`: the field's name as its form says it, for a form with more than one amount (the
    drawer's four, the cagnotte's count and tips): the refusal names the one to correct."""

    def bad(message: str = "") -> BadForm:
        said = str(message or _("Enter an amount in euros, e.g. 1,500 or 150.50."))
        if label:
            said = _("%(field)s: %(reason)s") % {"field": label, "reason": said[:1].lower() + said[1:]}
        return BadForm("bad_amount", said, details={field: raw})

    text = _SPACES.sub(" ", raw or "").strip().removeprefix("€").removesuffix("€").strip()
    # A "-" is read (the services refuse a negative amount with their own words); a "+" is
    # not, as the API refuses it: "+150" is no way to write an amount.
    sign, body = (text[0], text[1:]) if text[:1] == "-" else ("", text)
    # ASCII digits, the two separators and spaces only: not Decimal's exponents ('1e9'), NaN,
    # Infinity or other scripts' digits
    if not _AMOUNT.fullmatch(body) or not any(ch.isdigit() for ch in body):
        raise bad()
    grouping = "." if (get_language() or "").startswith("it") else ","
    separators = {ch for ch in body if ch in ".,"}
    if " " in body:  # '2 000', '2 000,50', '1 500.50': spaces group, a mark is the decimal one
        if len(separators) > 1 or any(body.count(sep) > 1 for sep in separators):
            raise bad()
        group, decimal = " ", (next(iter(separators)) if separators else None)
    elif len(separators) == 2:  # '1.500,50', '1,500.50': the last one is the decimal separator
        decimal = max(".,", key=body.rfind)
        group = "," if decimal == "." else "."
    elif separators:
        (sep,) = separators
        after = body.rsplit(sep, 1)[1]
        many_or_thousands = body.count(sep) > 1 or (sep == grouping and len(after) == 3)
        group, decimal = (sep, None) if many_or_thousands else (None, sep)
    else:
        group = decimal = None
    whole, _sep, cents_text = body.rpartition(decimal) if decimal else (body, "", "")
    if decimal and decimal in whole:
        raise bad()
    if group and group in whole:
        if not _GROUPED[group].fullmatch(whole):
            raise bad()
        whole = whole.replace(group, "")
    elif group == " ":  # a space anywhere but between groups of thousands
        raise bad()
    if " " in cents_text:  # nor among the decimals ('1 500, 50'), grouped or not
        raise bad()
    if len(cents_text) > 2:
        raise bad(_("An amount has at most two decimals."))
    value = Decimal(f"{sign}{whole or '0'}.{cents_text or '0'}")
    if sign and not value:  # '-0', '-0,00': a minus on nothing is a slip, not a zero to take
        raise bad()
    if abs(value) > MAX_EUROS:  # the API's bound too: never a database overflow
        raise bad(_("This amount is too large."))
    return int(value * 100)


MAX_EUROS = Decimal(10**10)  # 10^12 cents: ten billion euro
_SPACES = re.compile(r"[\s\u00a0\u2007\u2009\u202f\u2060']")  # (the pages print U+202F; Swiss write ')
_AMOUNT = re.compile(r"[0-9., ]+", re.ASCII)
# thousands in groups of three, the first without a leading zero ('0.001' is no thousand)
_GROUPED = {sep: re.compile(r"[1-9][0-9]{0,2}(?:" + re.escape(sep) + r"[0-9]{3})+", re.ASCII) for sep in ".,' "}


def int_field(raw: str | None, *, field: str, empty: str | None = None) -> int:
    """A whole number from a form field; `empty` is what to say when nothing was chosen (a
    select left on its blank option), rather than that a number is expected."""
    text = (raw or "").strip()
    if not text and empty:
        raise BadForm("choice_required", empty, details={field: raw})
    # As the API reads a whole number (config.api.is_strict_int): ASCII digits, a "-" but no
    # "+"; int() also reads other scripts' digits (Arabic-Indic four is 4)
    if not is_strict_int(text, signed=True):
        raise BadForm("bad_input", _("A whole number is expected."), details={field: raw})
    # Not int() of any length: past 4300 digits it raises ValueError (a 500), and nothing a
    # form counts or names (an id is a 64-bit integer) comes near 19 digits.
    digits = text.lstrip("-").lstrip("0")
    if len(digits) > MAX_INT_DIGITS:
        raise BadForm("number_too_large", _("This number is too large."), details={field: raw})
    return int(("-" if text.startswith("-") else "") + (digits or "0"))


MAX_INT_DIGITS = 19  # (2^63 - 1 has 19: a larger id is looked up, and matches nothing)
