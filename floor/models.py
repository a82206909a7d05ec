"""The floor as the Commissario runs it (RULES.md §6): casinos and their sites, tables,
gaming days, table sessions with their interruptions and minimum history, patrons and seats.

Money is integer cents. The invariants that concurrent requests could break are also
database constraints (partial unique indexes), so a race the services' locks somehow miss
ends in an IntegrityError and a rollback, never in two open days or two seats for one patron.
Business rules live in floor/services.py, never in save() or signals."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from tables.engine.profiles import DEFAULT_PROFILE, PROFILES, Rounding

# RULES.md §6 (art. 58): the table minimum is never below 1 euro.
MIN_STAKE_CENTS = 100
# The stakes are cents in an integer column (PostgreSQL: at most 2,147,483,647): a bound
# every way in (API, pages, commands) checks, so an absurd amount is a refusal, never a 500.
MAX_STAKE_CENTS = 2_000_000_000

_venezia = PROFILES[DEFAULT_PROFILE]

PROFILE_CHOICES = [(name, profile.title) for name, profile in PROFILES.items()]
ROUNDING_CHOICES = [(r.value, r.value) for r in Rounding]
SEATS_CHOICES = [(8, "8 seats"), (9, "9 seats (Grande Tavolo)")]


def rate_to_bp(rate) -> int:
    """A profile's cagnotte rate (a Fraction) in basis points: 5/100 -> 500."""
    bp = rate * 10_000
    if bp.denominator != 1:
        raise ValueError(f"cagnotte rate {rate} is not a whole number of basis points")
    return int(bp)


class Casino(models.Model):
    name = models.CharField(max_length=120)
    code = models.SlugField(max_length=40, unique=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def audit_stream(self) -> str:
        return f"casino:{self.pk}"


class Site(models.Model):
    casino = models.ForeignKey(Casino, on_delete=models.PROTECT, related_name="sites")
    name = models.CharField(max_length=120)

    class Meta:
        ordering = ["casino_id", "name"]
        constraints = [models.UniqueConstraint(fields=["casino", "name"], name="floor_site_casino_name_unique")]

    def __str__(self) -> str:
        return self.name


class Table(models.Model):
    casino = models.ForeignKey(Casino, on_delete=models.PROTECT, related_name="tables")
    site = models.ForeignKey(Site, on_delete=models.PROTECT, related_name="tables")
    number = models.PositiveSmallIntegerField()
    # RULES.md §6: 8 numbered seats plus the Capo Partita's place; the Grande Tavolo has 9.
    seats = models.PositiveSmallIntegerField(choices=SEATS_CHOICES, default=8)
    profile = models.CharField(max_length=20, choices=PROFILE_CHOICES, default=DEFAULT_PROFILE)
    # The defaults below are the venezia profile's; table_create fills them from the
    # table's own profile when they are not given.
    decks = models.PositiveSmallIntegerField(default=_venezia.decks)
    cagnotte_rate_bp = models.PositiveIntegerField(
        default=rate_to_bp(_venezia.cagnotte_rate), help_text="Basis points of the covered stake: 500 = 5%."
    )
    cagnotte_unit_cents = models.PositiveIntegerField(default=_venezia.cagnotte_unit)
    cagnotte_rounding = models.CharField(max_length=10, choices=ROUNDING_CHOICES, default=_venezia.cagnotte_rounding)
    min_seats_to_start = models.PositiveSmallIntegerField(default=_venezia.min_seats_taken)
    active = models.BooleanField(default=True)

    class Meta:
        ordering = ["casino_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["casino", "number"], name="floor_table_casino_number_unique"),
            models.CheckConstraint(condition=Q(seats__in=[8, 9]), name="floor_table_seats_8_or_9"),
            models.CheckConstraint(
                condition=Q(min_seats_to_start__gte=1, min_seats_to_start__lte=F("seats")),
                name="floor_table_min_seats_within_seats",
            ),
            # Under 100%: the engine's cagnotte takes a share of the banker's win, never all of it.
            models.CheckConstraint(condition=Q(cagnotte_rate_bp__lt=10_000), name="floor_table_rate_under_100pct"),
            models.CheckConstraint(condition=Q(cagnotte_unit_cents__gte=1), name="floor_table_unit_positive"),
            models.CheckConstraint(condition=Q(decks__gte=1), name="floor_table_decks_positive"),
        ]

    def __str__(self) -> str:
        return f"Table {self.number}"


class GamingDay(models.Model):
    casino = models.ForeignKey(Casino, on_delete=models.PROTECT, related_name="gaming_days")
    date = models.DateField()
    opened_at = models.DateTimeField()
    opened_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    closed_at = models.DateTimeField(null=True, blank=True)
    closed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["-date", "-id"]
        constraints = [
            # The control register is totalled per gaming day (RULES.md §8, art. 72): one day per date.
            models.UniqueConstraint(fields=["casino", "date"], name="floor_gaming_day_casino_date_unique"),
            # At most one open day per casino; gaming_day_open also locks the casino row.
            models.UniqueConstraint(
                fields=["casino"], condition=Q(closed_at__isnull=True), name="floor_gaming_day_one_open_per_casino"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.casino_id}/{self.date}"

    @property
    def is_open(self) -> bool:
        return self.closed_at is None

    @property
    def audit_stream(self) -> str:
        return f"gaming_day:{self.pk}"


class TableSession(models.Model):
    class Status(models.TextChoices):
        OPEN = "open", "open"
        INTERRUPTED = "interrupted", "interrupted"
        CLOSED = "closed", "closed"

    table = models.ForeignKey(Table, on_delete=models.PROTECT, related_name="sessions")
    gaming_day = models.ForeignKey(GamingDay, on_delete=models.PROTECT, related_name="sessions")
    number = models.PositiveIntegerField(help_text="1, 2, ... per table per gaming day (art. 70 register).")
    capo_partita = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    changeur = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    # RULES.md §6: shoes are numbered and assigned to tables at the start of each session.
    shoe_number = models.CharField(max_length=40)
    minimum = models.PositiveIntegerField(help_text="Current table minimum, cents.")
    maximum = models.PositiveIntegerField(null=True, blank=True, help_text="Optional maximum, cents.")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.OPEN)
    opened_at = models.DateTimeField()
    opened_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    closed_at = models.DateTimeField(null=True, blank=True)
    closed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["-opened_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["table", "gaming_day", "number"], name="floor_session_table_day_number_unique"
            ),
            # One session in play (open or interrupted) per table.
            models.UniqueConstraint(
                fields=["table"], condition=~Q(status="closed"), name="floor_session_one_live_per_table"
            ),
            models.CheckConstraint(condition=Q(minimum__gte=MIN_STAKE_CENTS), name="floor_session_minimum_1_euro"),
            models.CheckConstraint(
                condition=Q(maximum__isnull=True) | Q(maximum__gte=F("minimum")),
                name="floor_session_maximum_at_least_minimum",
            ),
        ]

    def __str__(self) -> str:
        return f"Table {self.table_id} session {self.number}"

    @property
    def is_open(self) -> bool:
        return self.status == self.Status.OPEN

    @property
    def is_closed(self) -> bool:
        return self.status == self.Status.CLOSED

    @property
    def audit_stream(self) -> str:
        return f"table_session:{self.pk}"


class SessionInterruption(models.Model):
    class Capacity(models.TextChoices):
        """In which capacity play was suspended (RULES.md §6): by the floor's supervisor, or by
        management, the Direzione Giochi, whose decision only the Direzione lifts. One who holds
        both roles acts as the Direzione (floor.services.table_session_interrupt)."""

        COMMISSARIO = "commissario", "Commissario di Gioco"
        DIREZIONE = "direzione", "Direzione Giochi"

    session = models.ForeignKey(TableSession, on_delete=models.PROTECT, related_name="interruptions")
    interrupted_at = models.DateTimeField()
    interrupted_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    interrupted_as = models.CharField(
        max_length=12,
        choices=Capacity.choices,
        help_text="The capacity the suspension was ordered in: a Direzione's is lifted by the Direzione only.",
    )
    reason = models.CharField(max_length=200)
    resumed_at = models.DateTimeField(null=True, blank=True)
    resumed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    resume_reason = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["interrupted_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["session"], condition=Q(resumed_at__isnull=True), name="floor_interruption_one_running"
            ),
            models.CheckConstraint(
                condition=Q(interrupted_as__in=["commissario", "direzione"]), name="floor_interruption_capacity"
            ),
        ]

    def __str__(self) -> str:
        return f"session {self.session_id} interrupted {self.interrupted_at:%H:%M}"


# A change of the table's limits (RULES.md §6): the minimum, and with it the house's optional maximum.
class MinimumChange(models.Model):
    session = models.ForeignKey(TableSession, on_delete=models.PROTECT, related_name="minimum_changes")
    by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    at = models.DateTimeField()
    old = models.PositiveIntegerField()
    new = models.PositiveIntegerField()
    # The maximum before and after (None: no maximum); the same when only the minimum changed.
    old_maximum = models.PositiveIntegerField(null=True, blank=True)
    new_maximum = models.PositiveIntegerField(null=True, blank=True)
    reason = models.CharField(max_length=200)

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"session {self.session_id}: {self.old} -> {self.new} (maximum {self.old_maximum} -> {self.new_maximum})"


class StaffChange(models.Model):
    """A session's Capo Partita or changeur replaced while it runs (the croupiers' relief):
    one croupier and one changeur per table at a time (RULES.md §6), every change on record."""

    session = models.ForeignKey(TableSession, on_delete=models.PROTECT, related_name="staff_changes")
    by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    at = models.DateTimeField()
    old_capo_partita = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    new_capo_partita = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    old_changeur = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    new_changeur = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    reason = models.CharField(max_length=200)

    class Meta:
        ordering = ["at", "id"]
        constraints = [
            models.CheckConstraint(
                condition=~Q(old_capo_partita=models.F("new_capo_partita"), old_changeur=models.F("new_changeur")),
                name="floor_staffchange_changes_someone",
            )
        ]

    def __str__(self) -> str:
        return f"session {self.session_id}: staff changed {self.at:%H:%M}"


class Patron(models.Model):
    class DocumentType(models.TextChoices):
        ID_CARD = "id_card", "identity card"
        PASSPORT = "passport", "passport"
        DRIVING_LICENCE = "driving_licence", "driving licence"
        RESIDENCE_PERMIT = "residence_permit", "residence permit"

    first_name = models.CharField(max_length=80)
    last_name = models.CharField(max_length=80)
    document_type = models.CharField(max_length=20, choices=DocumentType.choices)
    document_number = models.CharField(max_length=40)
    nationality = models.CharField(max_length=2, help_text="ISO 3166-1 alpha-2 country code.")
    birth_date = models.DateField(null=True, blank=True)
    created_at = models.DateTimeField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    notes = models.TextField(blank=True)

    class Meta:
        ordering = ["last_name", "first_name", "id"]
        constraints = [
            models.UniqueConstraint(fields=["document_type", "document_number"], name="floor_patron_document_unique")
        ]
        indexes = [models.Index(fields=["last_name", "first_name"], name="floor_patron_name_idx")]

    def __str__(self) -> str:
        return f"{self.first_name} {self.last_name}"

    @property
    def full_name(self) -> str:
        return f"{self.first_name} {self.last_name}"


class Seat(models.Model):
    """A patron's place at a session: a numbered seat, or standing (in piedi, seat_number NULL).

    left_at NULL means the place is held now."""

    session = models.ForeignKey(TableSession, on_delete=models.PROTECT, related_name="seats")
    patron = models.ForeignKey(Patron, on_delete=models.PROTECT, related_name="seats")
    seat_number = models.PositiveSmallIntegerField(null=True, blank=True)
    standing = models.BooleanField(default=False)
    taken_at = models.DateTimeField()
    taken_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    left_at = models.DateTimeField(null=True, blank=True)
    left_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["session_id", "standing", "seat_number", "taken_at", "id"]
        constraints = [
            # RULES.md §6: no one holds more than one seat at a table, nor seats at several
            # tables; a standing registration counts as the patron's place too.
            models.UniqueConstraint(
                fields=["patron"], condition=Q(left_at__isnull=True), name="floor_seat_one_active_per_patron"
            ),
            models.UniqueConstraint(
                fields=["session", "seat_number"],
                condition=Q(left_at__isnull=True, seat_number__isnull=False),
                name="floor_seat_one_patron_per_number",
            ),
            models.CheckConstraint(
                condition=Q(standing=True, seat_number__isnull=True)
                | Q(standing=False, seat_number__gte=1, seat_number__lte=9),
                name="floor_seat_numbered_or_standing",
            ),
        ]

    def __str__(self) -> str:
        where = "standing" if self.standing else f"seat {self.seat_number}"
        return f"{self.patron_id} {where} @ session {self.session_id}"

    @property
    def is_active(self) -> bool:
        return self.left_at is None


class IdempotencyKey(models.Model):
    """One row per (user, Idempotency-Key): the fingerprint of the first request and its answer.

    floor/idempotency.py inserts the row in the transaction of the service's writes and
    completes it there too, so a committed row is always completed; the unique index makes a
    concurrent request with the same key wait for that commit."""

    # No index of its own: the unique (user, key) index leads with it.
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", db_index=False)
    key = models.CharField(max_length=200)
    fingerprint = models.CharField(max_length=64, help_text="SHA-256 hex of method, path and canonical body.")
    method = models.CharField(max_length=10)
    path = models.TextField()
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    response_body = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    completed = models.BooleanField(default=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "key"], name="floor_idempotency_user_key_unique")]
        indexes = [models.Index(fields=["created_at"], name="floor_idempotency_created_idx")]

    def __str__(self) -> str:
        return f"{self.user_id}:{self.key}"


class ApiToken(models.Model):
    """An API token, stored as the SHA-256 digest of its key: the key itself is given once,
    in the login's answer, and is never stored, so a copy of the database (a backup, a
    replica, a support dump) holds no token anyone could use.

    One per login: each tablet has its own, a logout revokes that tablet's only, and a
    password or activation change revokes them all (floor.security). A token lasts
    settings.API_TOKEN_HOURS from `created`; expired ones are deleted at the user's next
    login."""

    digest = models.CharField(max_length=64, unique=True, help_text="SHA-256 hex of the key.")
    # No index of its own: the (user, created) index leads with it.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens", db_index=False
    )
    created = models.DateTimeField(default=timezone.now)
    # Issued at a login that checked a one-time code (floor/mfa.py): a token issued without one
    # stops working when its user comes to need one.
    mfa_verified = models.BooleanField(default=False)

    class Meta:
        indexes = [models.Index(fields=["user", "created"], name="floor_apitoken_user_created")]

    def __str__(self) -> str:
        return f"{self.user_id}:{self.digest[:8]}"
