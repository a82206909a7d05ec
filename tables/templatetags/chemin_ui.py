"""Template helpers for the browser pages: the per-form idempotency key, money, cards."""

from __future__ import annotations

import uuid

from django import template
from django.utils.html import format_html

register = template.Library()

SUITS = {"S": "♠", "H": "♥", "D": "♦", "C": "♣"}
RED = {"H", "D"}


@register.simple_tag
def idempotency_field() -> str:
    """A fresh key each time the form is rendered: a retry of this very form sends it again,
    a new form (after the answer re-renders the page) gets a new one."""
    return format_html('<input type="hidden" name="idempotency_key" value="{}">', uuid.uuid4())


@register.filter
def euros(cents) -> str:
    """12345 -> '123.45'; whole euros without decimals: 10000 -> '100'."""
    if cents is None or cents == "":
        return ""
    cents = int(cents)
    sign = "-" if cents < 0 else ""
    whole, rest = divmod(abs(cents), 100)
    return f"{sign}{whole:,}".replace(",", "\u202f") + (f".{rest:02d}" if rest else "")


@register.filter
def euros_exact(cents) -> str:
    """For the books: always the cents, 1000 -> '10.00' (next to '9.60')."""
    if cents is None or cents == "":
        return ""
    cents = int(cents)
    sign = "-" if cents < 0 else ""
    whole, rest = divmod(abs(cents), 100)
    return f"{sign}{whole:,}".replace(",", "\u202f") + f".{rest:02d}"


@register.filter
def signed_euros(cents) -> str:
    if cents is None:
        return ""
    return ("+" if int(cents) > 0 else "") + euros(cents)


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
