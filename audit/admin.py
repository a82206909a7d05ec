"""The audit trail in the admin: readable, never editable. Nobody, superusers included,
may add, change or delete an event or a head here (in PostgreSQL the trigger would refuse
the write anyway; the admin should not offer it)."""

from __future__ import annotations

from django.contrib import admin

from .models import AuditEvent, AuditStream


class ReadOnlyAdmin(admin.ModelAdmin):
    # Counting a large append-only table on every page is the slow part of a changelist.
    show_full_result_count = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(AuditStream)
class AuditStreamAdmin(ReadOnlyAdmin):
    list_display = ("name", "seq", "head_hash", "created_at")
    search_fields = ("name",)
    readonly_fields = ("name", "seq", "head_hash", "head_seal", "created_at")


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = ("id", "stream", "seq", "at", "actor_name", "action", "subject_type", "subject_id")
    list_filter = ("action", "stream")
    list_select_related = ("stream",)
    # "=" makes the id an exact match (it is text, an index hit); the type is a prefix.
    search_fields = ("=subject_id", "^subject_type")
    readonly_fields = (
        "stream", "seq", "at", "actor", "actor_name", "action", "subject_type", "subject_id",
        "payload", "prev_hash", "hash",
    )  # fmt: skip
    raw_id_fields = ("actor",)
