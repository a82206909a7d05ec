"""A coup's violations and versions in words, the one phrasing the tablet's page and the
end-of-day report share (RULES.md §3.3): "banker stood on 3 against the punta's third card
2D (banker alla Regola: draw)", "punta 5 (KH 3C 2D), banker 7 (2S AS 4H): the banker wins".

The words are gettext's: the page says them in its language, the report in its own
(DayReport.language, settings.REPORT_LANGUAGE when requested), under translation.override
while its writers read the rows. A card is written by the caller's `card`:
the page's '2♦' in a coloured span, the report's code '2D' (the code its cards column
prints, and a glyph every PDF font has). With `html=True` the values are escaped, the cards
left as given when safe markup, so the page can show them as they are."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from django.utils.html import format_html
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

# The rule in force for a side (tables.engine.profiles.Profile.punta_rule / banker_rule).
RULE_NAMES = {
    # RULES.md §3.2 calls it "playing for several bettors": whoever did not call banco solo,
    # one bettor or more. No brackets of its own: a violation says the rule in brackets
    # ("punta drew on 6 (punta playing for the table, not banco solo: stand)").
    "punta_several": gettext_lazy("punta playing for the table, not banco solo"),
    "punta_banco_solo": gettext_lazy("punta, banco solo"),
    "punta_regola": gettext_lazy("punta alla Regola"),
    "banker": gettext_lazy("banker, not declared"),
    "banker_regola": gettext_lazy("banker alla Regola"),
}

# The rules profiles' titles (tables.engine.profiles.PROFILES[...].title), in the page's
# language: the engine is pure Python and keeps its English titles; the pages say these,
# keyed by the profile's code (which stays the code: the templates compare it, the API
# and the reports give it).
PROFILE_TITLES = {
    "venezia": gettext_lazy("Casinò di Venezia"),
    "classic": gettext_lazy("Classic casino chemin de fer"),
    "domestic": gettext_lazy("Private game (domestic rules)"),
    "chemmy-fi": gettext_lazy("Finnish chemmy"),
    "punto-banco": gettext_lazy("Punto Banco (house bank, fixed tableau)"),
}


def profile_title(code: str) -> str:
    """A profile's title in the active language; an unknown code as it is."""
    title = PROFILE_TITLES.get(code)
    return code if title is None else str(title)


# One whole sentence per case (side, what was done, whether the punta drew): a translator
# orders the words of each as the language wants.
_VIOLATIONS = {
    ("punta", "draw", None): gettext_lazy("punta drew on %(total)s (%(rule)s: stand)"),
    ("punta", "stand", None): gettext_lazy("punta stood on %(total)s (%(rule)s: draw)"),
    # Declared before the banker showed a natural: no card was given (RULES.md §2.6).
    ("punta", "draw", "natural"): gettext_lazy(
        "punta asked for a card on %(total)s before the banker's natural (%(rule)s: stand)"),
    ("punta", "stand", "natural"): gettext_lazy(
        "punta said non on %(total)s before the banker's natural (%(rule)s: draw)"),
    ("banker", "draw", True): gettext_lazy(
        "banker drew on %(total)s against the punta's third card %(card)s (%(rule)s: stand)"),
    ("banker", "stand", True): gettext_lazy(
        "banker stood on %(total)s against the punta's third card %(card)s (%(rule)s: draw)"),
    ("banker", "draw", False): gettext_lazy("banker drew on %(total)s, the punta having stood (%(rule)s: stand)"),
    ("banker", "stand", False): gettext_lazy("banker stood on %(total)s, the punta having stood (%(rule)s: draw)"),
}  # fmt: skip


_PLACEHOLDER = re.compile(r"%\((\w+)\)s")


def _say(template: str, params: dict[str, Any], html: bool) -> str:
    if not html:
        return template % params
    # The words are ours (as a {% blocktrans %}'s); the values escaped unless safe markup.
    return format_html(_PLACEHOLDER.sub(r"{\1}", template.replace("{", "{{").replace("}", "}}")), **params)


def violation_text(v: Mapping[str, Any], *, card: Callable[[Any], str] = str, html: bool = False) -> str:
    """One violation (tables.engine.coup.Violation as stored: side, rule, the two-card
    totals, the punta's third card, required, done) as a sentence: which side did what on
    which total, and what the rule in force required."""
    side = v["side"]
    third = v.get("punta_third_card")
    if side == "punta":
        key = (side, v["done"], "natural" if v["banker_total"] >= 8 else None)
    else:
        key = (side, v["done"], third is not None)
    template = str(_VIOLATIONS[key])
    params = {
        "total": v["punta_total"] if side == "punta" else v["banker_total"],
        "rule": str(RULE_NAMES.get(v["rule"], v["rule"])),
        "card": card(third) if third is not None else "",
    }
    return _say(template, params, html)


def violations_text(violations: list[Mapping[str, Any]] | None, *, card: Callable[[Any], str] = str) -> str:
    """Every violation of a coup, one sentence each, joined by "; "."""
    return "; ".join(violation_text(v, card=card) for v in violations or ())


_WINNERS = {
    "banker": gettext_lazy("the banker wins"),
    "punta": gettext_lazy("the punta wins"),
    "tie": gettext_lazy("égalité (coup nul)"),
}


def _hand(hand: Mapping[str, Any], card: Callable[[Any], str]) -> str:
    return f"{hand['total']} ({' '.join(card(c) for c in hand['cards'])})"


def version_text(version: Mapping[str, Any] | None, *, card: Callable[[Any], str] = str) -> str:
    """A coup as played or as reconstructed (Coup.as_dict / Settled.as_dict): "punta 5
    (KH 3C 2D), banker 7 (2S AS 4H): the banker wins", the natural and the void cards said
    when there are; a pending reconstruction says what it waits for."""
    if not version:
        return ""
    if version.get("status") == "pending":
        needs = version.get("needs") or {}
        if needs.get("decision") == "punta":
            return _("pending: the punta's decision")
        if needs.get("decision") == "banker":
            return _("pending: the banker's decision")
        return _("pending: the next card of the sabot")
    text = _("punta %(punta)s, banker %(banker)s: %(winner)s") % {
        "punta": _hand(version["punta"], card),
        "banker": _hand(version["banker"], card),
        "winner": str(_WINNERS.get(version.get("winner"), version.get("winner"))),
    }
    if version.get("natural"):
        text += _(", on a natural")
    if version.get("void_cards"):
        text += _("; void, to the sibilla: %(cards)s") % {"cards": " ".join(card(c) for c in version["void_cards"])}
    return text
