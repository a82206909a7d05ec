"""Output serializers of the floor API (inputs live beside their views in apis.py).

Outputs only read attributes the selectors prepared (select_related / prefetch / annotate),
so serializing a page never issues a query per row."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from config.api import StrictIntegerField

from .models import (
    Casino,
    GamingDay,
    MinimumChange,
    Patron,
    Seat,
    SessionInterruption,
    Site,
    StaffChange,
    Table,
    TableSession,
)
from .roles import user_roles
from .selectors import session_can_start, session_seated_count


class UserRefSerializer(serializers.Serializer):
    id = StrictIntegerField()
    username = serializers.CharField()
    name = serializers.SerializerMethodField()

    def get_name(self, user) -> str:
        return user.get_full_name() or user.get_username()


class MeSerializer(serializers.Serializer):
    id = StrictIntegerField()
    username = serializers.CharField()
    first_name = serializers.CharField()
    last_name = serializers.CharField()
    roles = serializers.SerializerMethodField()

    def get_roles(self, user) -> list[str]:
        return sorted(user_roles(user))


class TokenOutputSerializer(serializers.Serializer):
    token = serializers.CharField()
    user = MeSerializer()
    roles = serializers.ListField(child=serializers.CharField())
    recovery_codes_left = serializers.IntegerField(
        allow_null=True,
        help_text="Null, except after a login by recovery code: how many the user has left.",
    )


class SiteSerializer(serializers.ModelSerializer):
    class Meta:
        model = Site
        fields = ["id", "name"]


class CasinoSerializer(serializers.ModelSerializer):
    sites = SiteSerializer(many=True, read_only=True)

    class Meta:
        model = Casino
        fields = ["id", "name", "code", "sites"]


class TableSerializer(serializers.ModelSerializer):
    site_name = serializers.CharField(source="site.name", read_only=True)

    class Meta:
        model = Table
        fields = [
            "id",
            "casino",
            "site",
            "site_name",
            "number",
            "seats",
            "profile",
            "decks",
            "cagnotte_rate_bp",
            "cagnotte_unit_cents",
            "cagnotte_rounding",
            "min_seats_to_start",
            "active",
        ]


class GamingDaySerializer(serializers.ModelSerializer):
    opened_by = UserRefSerializer()
    closed_by = UserRefSerializer(allow_null=True)
    is_open = serializers.BooleanField()

    class Meta:
        model = GamingDay
        fields = ["id", "casino", "date", "is_open", "opened_at", "opened_by", "closed_at", "closed_by"]


class PatronRefSerializer(serializers.ModelSerializer):
    class Meta:
        model = Patron
        fields = ["id", "first_name", "last_name"]


# Who reads a patron's identity (document, birth date, notes): the Commissario registers
# and seats patrons, the Direzione and the auditors answer for the register. The table staff
# (Capo Partita, changeur) need the name only; for them those fields are null (GDPR art.
# 5(1)(c), data minimisation).
IDENTITY_READERS = ("commissario", "direzione", "auditor")
_IDENTITY = ("document_type", "document_number", "birth_date", "notes")


class PatronSerializer(serializers.ModelSerializer):
    """A patron. His identity fields are null unless the reader's role needs them
    (`IDENTITY_READERS`); the view says so through the context's `identity`."""

    created_by = UserRefSerializer()
    document_type = serializers.ChoiceField(choices=Patron.DocumentType.choices, allow_null=True)
    document_number = serializers.CharField(allow_null=True)
    notes = serializers.CharField(allow_null=True)

    def to_representation(self, instance):
        data = super().to_representation(instance)
        if not self.context.get("identity", False):
            data.update(dict.fromkeys(_IDENTITY))
        return data

    class Meta:
        model = Patron
        fields = [
            "id",
            "first_name",
            "last_name",
            "document_type",
            "document_number",
            "nationality",
            "birth_date",
            "notes",
            "created_at",
            "created_by",
        ]


class SeatSerializer(serializers.ModelSerializer):
    patron = PatronRefSerializer()
    taken_by = UserRefSerializer()
    left_by = UserRefSerializer(allow_null=True)
    active = serializers.BooleanField(source="is_active")

    class Meta:
        model = Seat
        fields = [
            "id",
            "session",
            "patron",
            "seat_number",
            "standing",
            "active",
            "taken_at",
            "taken_by",
            "left_at",
            "left_by",
        ]


class InterruptionSerializer(serializers.ModelSerializer):
    interrupted_by = UserRefSerializer()
    resumed_by = UserRefSerializer(allow_null=True)

    class Meta:
        model = SessionInterruption
        fields = [
            "id", "interrupted_at", "interrupted_by", "interrupted_as", "reason", "resumed_at", "resumed_by",
            "resume_reason",
        ]  # fmt: skip


class MinimumChangeSerializer(serializers.ModelSerializer):
    by = UserRefSerializer()

    class Meta:
        model = MinimumChange
        fields = ["id", "session", "at", "by", "old", "new", "old_maximum", "new_maximum", "reason"]


class StaffChangeSerializer(serializers.ModelSerializer):
    by = UserRefSerializer()
    old_capo_partita = UserRefSerializer()
    new_capo_partita = UserRefSerializer()
    old_changeur = UserRefSerializer()
    new_changeur = UserRefSerializer()

    class Meta:
        model = StaffChange
        fields = [
            "id", "session", "at", "by", "old_capo_partita", "new_capo_partita", "old_changeur", "new_changeur",
            "reason",
        ]  # fmt: skip


class TableSessionSerializer(serializers.ModelSerializer):
    """A session as listed: who runs it, the current minimum, and whether play may start."""

    table_number = StrictIntegerField(source="table.number", read_only=True)
    capo_partita = UserRefSerializer()
    changeur = UserRefSerializer()
    opened_by = UserRefSerializer()
    closed_by = UserRefSerializer(allow_null=True)
    seated_count = serializers.SerializerMethodField()
    min_seats_to_start = StrictIntegerField(source="table.min_seats_to_start", read_only=True)
    can_start = serializers.SerializerMethodField()

    class Meta:
        model = TableSession
        fields = [
            "id",
            "table",
            "table_number",
            "gaming_day",
            "number",
            "status",
            "capo_partita",
            "changeur",
            "shoe_number",
            "minimum",
            "maximum",
            "seated_count",
            "min_seats_to_start",
            "can_start",
            "opened_at",
            "opened_by",
            "closed_at",
            "closed_by",
        ]

    def get_seated_count(self, session) -> int:
        return session_seated_count(session)

    def get_can_start(self, session) -> bool:
        return session_can_start(session)


class TableSessionDetailSerializer(TableSessionSerializer):
    seats = serializers.SerializerMethodField()
    interruptions = InterruptionSerializer(many=True, read_only=True)

    class Meta(TableSessionSerializer.Meta):
        fields = [*TableSessionSerializer.Meta.fields, "seats", "interruptions"]

    @extend_schema_field(SeatSerializer(many=True))
    def get_seats(self, session) -> list:
        # The places held now; the history is at /api/sessions/{id}/seats/.
        seats = getattr(session, "active_seats", None)
        if seats is None:
            seats = session.seats.filter(left_at__isnull=True).select_related("patron", "taken_by", "left_by")
        return SeatSerializer(seats, many=True).data
