"""The game in the admin: readable, never editable. Every change at a table goes through
tables.services (one transaction with its audit event); the admin must not offer a way round."""

from __future__ import annotations

from django.contrib import admin

from .models import (
    Auction,
    BancoCall,
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


class ReadOnlyAdmin(admin.ModelAdmin):
    show_full_result_count = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Shoe)
class ShoeAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "session",
        "seq",
        "number",
        "decks",
        "loaded_at",
        "stop_card_reached_at",
        "finished_at",
    )
    list_select_related = ("session",)
    raw_id_fields = ("session",)


@admin.register(ShoeCard)
class ShoeCardAdmin(ReadOnlyAdmin):
    list_display = ("id", "shoe", "position", "code", "use", "side", "voided", "coup", "at")
    list_filter = ("use", "voided")
    list_select_related = ("shoe", "coup")


@admin.register(Bank)
class BankAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "session",
        "number",
        "banker",
        "amount",
        "initial_amount",
        "status",
        "end_reason",
        "origin",
        "coups_completed",
    )
    list_filter = ("status", "end_reason", "origin")
    list_select_related = ("session", "banker")


@admin.register(Coup)
class CoupAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "session",
        "number",
        "state",
        "bank_amount",
        "covered",
        "banco_solo",
        "winner",
        "conforming",
        "cagnotte",
    )
    list_filter = ("state", "winner", "conforming", "banco_solo")
    list_select_related = ("session",)


@admin.register(BancoCall)
class BancoCallAdmin(ReadOnlyAdmin):
    list_display = ("id", "coup", "patron", "order", "won", "at")
    list_select_related = ("coup", "patron")


@admin.register(Bet)
class BetAdmin(ReadOnlyAdmin):
    list_display = ("id", "coup", "patron", "kind", "amount", "order", "standing", "at")
    list_filter = ("kind",)
    list_select_related = ("coup", "patron")


@admin.register(Posting)
class PostingAdmin(ReadOnlyAdmin):
    list_display = ("id", "coup", "session", "patron", "role", "amount", "at")
    list_filter = ("role",)
    list_select_related = ("coup", "session", "patron")


@admin.register(RegolaMark)
class RegolaMarkAdmin(ReadOnlyAdmin):
    list_display = ("id", "session", "patron", "declared", "set_at", "set_by")
    list_select_related = ("session", "patron", "set_by")


@admin.register(FauxTirageBar)
class FauxTirageBarAdmin(ReadOnlyAdmin):
    list_display = ("id", "session", "patron", "reason", "at", "by")
    list_select_related = ("session", "patron", "by")


@admin.register(FirstBankPass)
class FirstBankPassAdmin(ReadOnlyAdmin):
    list_display = ("id", "session", "patron", "seat_number", "at", "by")
    list_select_related = ("session", "patron", "by")


@admin.register(Succession)
class SuccessionAdmin(ReadOnlyAdmin):
    list_display = ("id", "session", "number", "reason", "kind", "amount", "status", "new_bank", "started_at")
    list_filter = ("reason", "kind", "status")
    list_select_related = ("session", "new_bank")


@admin.register(SuccessionOffer)
class SuccessionOfferAdmin(ReadOnlyAdmin):
    list_display = ("id", "succession", "order", "round", "patron", "seat_number", "standing", "status", "amount")
    list_filter = ("round", "status", "standing")
    list_select_related = ("succession", "patron")


@admin.register(Auction)
class AuctionAdmin(ReadOnlyAdmin):
    list_display = ("id", "succession", "status", "bids_count", "winning_bid", "opened_at", "closed_at")
    list_filter = ("status",)
    list_select_related = ("succession", "winning_bid")


@admin.register(Bid)
class BidAdmin(ReadOnlyAdmin):
    list_display = ("id", "auction", "seq", "patron", "seat_number", "standing", "amount", "at")
    list_filter = ("standing",)
    list_select_related = ("auction", "patron")


@admin.register(CashExchange)
class CashExchangeAdmin(ReadOnlyAdmin):
    list_display = ("id", "session", "number", "direction", "amount", "patron", "identification_required", "at",
                    "by", "voided_at")  # fmt: skip
    list_filter = ("direction", "identification_required")
    list_select_related = ("session", "patron", "by")


@admin.register(CashCount)
class CashCountAdmin(ReadOnlyAdmin):
    list_display = ("id", "session", "staff_change", "float_issued", "net", "expected", "counted", "counted_by",
                    "counted_at", "corrects")  # fmt: skip
    list_select_related = ("session", "counted_by", "staff_change")
