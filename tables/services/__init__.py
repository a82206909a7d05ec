"""The game at one table: the public services (one transaction each, the session lock
first, the rules from tables.engine, the audit event inside). See each module."""

from ._common import locked_session
from .bank import bank_end_for_session_close, bank_open, bank_raise, bank_withdraw, first_bank_pass
from .cash import cash_exchange_record, cash_exchange_void, cash_totals_for_session_close
from .cash_count import cash_count_correct, cash_count_record
from .coup import (
    banco_call,
    banker_decide,
    bet_place,
    bet_withdraw,
    card_deal,
    card_entry_correct,
    coup_annul,
    coup_open,
    coup_record,
    punta_declare,
    reconstruction_card,
    reconstruction_decide,
    rien_ne_va_plus,
)
from .marks import faux_tirage_bar, regola_mark
from .shoe import card_void, shoe_finish_for_session_close, shoe_load
from .succession import auction_bid, auction_close, auction_open, offer_accept, offer_pass, succession_start

__all__ = [
    "auction_bid",
    "auction_close",
    "auction_open",
    "banco_call",
    "bank_end_for_session_close",
    "bank_open",
    "bank_raise",
    "bank_withdraw",
    "banker_decide",
    "bet_place",
    "bet_withdraw",
    "card_deal",
    "card_entry_correct",
    "card_void",
    "cash_count_correct",
    "cash_count_record",
    "cash_exchange_record",
    "cash_exchange_void",
    "cash_totals_for_session_close",
    "coup_annul",
    "coup_open",
    "coup_record",
    "faux_tirage_bar",
    "first_bank_pass",
    "locked_session",
    "offer_accept",
    "offer_pass",
    "punta_declare",
    "reconstruction_card",
    "reconstruction_decide",
    "regola_mark",
    "rien_ne_va_plus",
    "shoe_finish_for_session_close",
    "shoe_load",
    "succession_start",
]
