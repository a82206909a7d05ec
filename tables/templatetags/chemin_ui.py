"""Template helpers for the browser pages: the per-form idempotency key, money, cards."""

from __future__ import annotations

import uuid

from django import template
from django.utils import dateformat, timezone
from django.utils.formats import get_format
from django.utils.html import format_html

from tables.wording import profile_title as _profile_title
from tables.wording import violation_text

register = template.Library()

SUITS = {"S": "♠", "H": "♥", "D": "♦", "C": "♣"}
RED = {"H", "D"}


@register.simple_tag
def idempotency_field() -> str:
    """A fresh key each time the form is rendered: a retry of this very form sends it again,
    a new form (after the answer re-renders the page) gets a new one."""
    return format_html('<input type="hidden" name="idempotency_key" value="{}">', uuid.uuid4())


@register.simple_tag(takes_context=True)
def typed(context, form: str, field: str, pk="") -> str:
    """What was typed in `field` of the form `form` (of the row `pk`) when the page answers
    that form's refusal (the view's `typed`: its name, row and posted values), else "": a
    refused form is shown again as it was sent, to correct the one figure the reason names."""
    kept = context.get("typed")
    if not kept or kept["form"] != form or kept["pk"] != str(pk):
        return ""
    value = kept["values"].get(field) or ""
    return "" if "\x00" in value else value[:1000]


def _amount(cents, *, always_cents: bool) -> str:
    """Thousands grouped by a narrow no-break space (read alike in both languages, and by
    euros_to_cents), the decimal mark the page's language's: '1 234.50', '1 234,50'."""
    if cents is None or cents == "":
        return ""
    cents = int(cents)
    sign = "-" if cents < 0 else ""
    whole, rest = divmod(abs(cents), 100)
    grouped = f"{sign}{whole:,}".replace(",", "\u202f")
    return grouped + (f"{get_format('DECIMAL_SEPARATOR')}{rest:02d}" if rest or always_cents else "")


@register.filter
def euros(cents) -> str:
    """12345 -> '123.45' ('123,45' on an Italian page); whole euros without decimals: 10000 -> '100'."""
    return _amount(cents, always_cents=False)


@register.filter
def euros_exact(cents) -> str:
    """For the books: always the cents, 1000 -> '10.00' (next to '9.60'; '10,00' in Italian)."""
    return _amount(cents, always_cents=True)


@register.filter
def signed_euros(cents) -> str:
    if cents is None:
        return ""
    return ("+" if int(cents) > 0 else "") + euros(cents)


@register.filter
def signed_euros_exact(cents) -> str:
    """For the books, a difference: always the cents and its sign, 500 -> '+5.00', -500 -> '-5.00'."""
    if cents is None:
        return ""
    return ("+" if int(cents) > 0 else "") + euros_exact(cents)


@register.filter
def clock(moment, fmt="H:i") -> str:
    """An aware moment as the pages print it in the casino's zone: "H:i" unless another Django
    date format is given (`|clock:"H:i:s"`, `|clock:"Y-m-d H:i"`); in the hour the October
    change repeats (02:00-02:59 CEST, then CET) with its UTC offset, "02:15+02:00",
    "2026-10-25 02:10+01:00", as the report writes it (audit.exports.formatting.repeated_offset).
    A pure date needs no offset: it stays `|date:"Y-m-d"`."""
    if not moment:
        return ""
    from audit.exports.formatting import repeated_offset

    return dateformat.format(timezone.localtime(moment), fmt) + repeated_offset(moment, timezone.get_current_timezone())


def card_text(code) -> str:
    """'10H' (or 'TH') -> '10♥': the suit as its symbol, in every language (messages too)."""
    code = str(code)
    rank, suit = code[:-1], code[-1]
    return f"{'10' if rank == 'T' else rank}{SUITS.get(suit, suit)}"


@register.filter
def card(code) -> str:
    """'10H' -> '10♥' in a span the stylesheet colours (red suits in dark red)."""
    if not code:
        return ""
    klass = "pc red" if str(code)[-1] in RED else "pc"
    return format_html('<span class="{}">{}</span>', klass, card_text(code))


@register.filter
def violation(v) -> str:
    """A coup's violation in words, its cards as the pages show them (tables.wording, the
    report's phrasing too)."""
    return violation_text(v, card=card, html=True)


@register.filter
def profile_title(code) -> str:
    """A rules profile's title in the page's language (tables.wording.PROFILE_TITLES), for
    its code ("venezia" -> "Casinò di Venezia")."""
    return _profile_title(code)
