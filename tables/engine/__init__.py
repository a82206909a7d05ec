"""The rules engine: pure Python, no Django import, ever (ARCHITECTURE.md).

Plain values in (card codes, ints, profiles), plain values out (NamedTuples with
`as_dict()`); every inconsistency raises EngineError with a stable code.
"""

from .cards import ALL_CARDS, VALUES, Card, card_value, hand_total, is_natural, parse_card, parse_cards
from .coup import (
    BANKER,
    FINAL,
    PENDING,
    PUNTA,
    TIE,
    Coup,
    Hand,
    Resolution,
    RuleHint,
    Rules,
    Settled,
    Violation,
    check,
    play,
    reconstruct,
    resolve,
    rule_in_force,
    rules_in_force,
)
from .errors import EngineError
from .profiles import PROFILES, STOOD, Cell, Profile, Side, get_profile
from .settlement import (
    NextBank,
    Posting,
    SettlementResult,
    TieOutcome,
    cagnotte_for,
    next_bank,
    round_to_unit,
    settle,
    tie_outcome,
)
from .shoe import Shoe

__all__ = [
    "ALL_CARDS",
    "BANKER",
    "FINAL",
    "PENDING",
    "PROFILES",
    "PUNTA",
    "STOOD",
    "TIE",
    "VALUES",
    "Card",
    "Cell",
    "Coup",
    "EngineError",
    "Hand",
    "NextBank",
    "Posting",
    "Profile",
    "Resolution",
    "RuleHint",
    "Rules",
    "Settled",
    "SettlementResult",
    "Shoe",
    "Side",
    "TieOutcome",
    "Violation",
    "cagnotte_for",
    "card_value",
    "check",
    "get_profile",
    "hand_total",
    "is_natural",
    "next_bank",
    "parse_card",
    "parse_cards",
    "play",
    "reconstruct",
    "resolve",
    "round_to_unit",
    "rule_in_force",
    "rules_in_force",
    "settle",
    "tie_outcome",
]
