"""The append-only, hash-chained audit trail (ARCHITECTURE.md, "Audit design").

One chain per stream (a table session, the floor of a gaming day...), so tables never wait
on each other. AuditStream is the head of a chain: appends lock it (SELECT ... FOR UPDATE),
which serializes appends to one stream and leaves other streams free. AuditEvent rows are
append-only: in PostgreSQL a trigger refuses UPDATE and DELETE (migration 0002).

What is hashed is the text of the columns (audit/hashing.py), so every column of an event
is covered by its hash."""

import json
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import F, Sum, Value
from django.db.models.functions import Coalesce, Greatest, Least
from django.utils.translation import pgettext_lazy

GENESIS_HASH = "0" * 64

# A report's language in words, in the reader's language (the desk says in which language each
# version's files are written). settings.LANGUAGES names each language in its own tongue, for the
# language chooser; a reader of the Italian desk reads "Inglese", not "English".
REPORT_LANGUAGE_NAMES = {
    "en": pgettext_lazy("report language", "English"),
    "it": pgettext_lazy("report language", "Italian"),
}


class AuditStream(models.Model):
    name = models.CharField(max_length=200, unique=True)
    seq = models.PositiveBigIntegerField(default=0, help_text="Sequence number of the last event.")
    head_hash = models.CharField(max_length=64, default=GENESIS_HASH)
    # HMAC of (name, seq, head_hash) under the application's key (audit/seals.py): a head
    # re-chained or moved by someone without the key no longer matches it.
    head_seal = models.CharField(max_length=64, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} @{self.seq}"

    def save(self, *args, **kwargs):
        # A head saved through the model is sealed where it is (audit.services seals the
        # heads it moves itself, in its UPDATEs).
        from .seals import head_seal

        self.head_seal = head_seal(self.name, self.seq, self.head_hash)
        if kwargs.get("update_fields") is not None:
            kwargs["update_fields"] = {*kwargs["update_fields"], "head_seal"}
        super().save(*args, **kwargs)


# The largest seq a head can hold (PositiveBigIntegerField: PostgreSQL's bigint). A range's
# end beyond it is taken as it: no head reaches further, and the SQL stays in bigint.
SEQ_MAX = 2**63 - 1


class AuditEventQuerySet(models.QuerySet):
    # The heads whose seqs count this queryset's events: set on the one queryset that
    # counted_by_heads() returns, never carried to its clones (a queryset filtered, sliced or
    # otherwise derived from it counts its own rows).
    _counting_heads: models.QuerySet | None = None
    # The seq range counted in each of those streams (both inclusive; None: no end).
    _counting_range: tuple[int, int | None] = (1, None)

    def counted_by_heads(
        self, *, stream: str | None = None, seq_min: int | None = None, seq_max: int | None = None
    ) -> "AuditEventQuerySet":
        """This queryset, whose count() is read from the stream heads: the sum of every head's
        seq, or `stream`'s own seq (0 for a stream that does not exist); with `seq_min` or
        `seq_max`, the number of seqs of that range each head has reached. Exact, not an
        estimate: a head's seq is the number of its last event, moved in the transaction that
        appends it (audit.services), its events are numbered 1 to it without a gap, and events
        are never updated nor deleted (the triggers of migrations 0002 and 0007; verification
        reports a gap, `missing_event`). Only for a queryset of every event (of `stream`; of
        the seq range), and of nothing fewer: the caller knows (the events list, unfiltered or
        filtered by stream and seq only)."""
        clone = self._chain()
        clone._counting_heads = (
            AuditStream.objects.all() if stream is None else AuditStream.objects.filter(name=stream)
        )
        clone._counting_range = (min(max(seq_min or 1, 1), SEQ_MAX), None if seq_max is None else min(seq_max, SEQ_MAX))
        return clone

    @property
    def counts_by_heads(self) -> bool:
        """Whether count() is read from the stream heads (counted_by_heads())."""
        return self._counting_heads is not None

    def count(self) -> int:
        if self._counting_heads is None or self._result_cache is not None:
            return super().count()
        low, high = self._counting_range
        if (low, high) == (1, None):
            return self._counting_heads.aggregate(n=Coalesce(Sum("seq"), 0))["n"]
        # Per head: the seqs low..min(seq, high) it has reached, none when it is below low.
        big = models.BigIntegerField()
        last = F("seq") if high is None else Least(F("seq"), Value(high, output_field=big), output_field=big)
        reached = Greatest(last - Value(low - 1, output_field=big), Value(0, output_field=big), output_field=big)
        return self._counting_heads.aggregate(n=Coalesce(Sum(reached), 0))["n"]


class AuditEvent(models.Model):
    # No index of its own: the (stream, seq) unique constraint's index serves every lookup
    # by stream, and gives the verifier its events in seq order.
    stream = models.ForeignKey(AuditStream, on_delete=models.PROTECT, related_name="events", db_index=False)
    seq = models.PositiveBigIntegerField()
    at = models.DateTimeField()
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    # Kept beside the foreign key so the hashed content never depends on another table.
    actor_name = models.CharField(max_length=150, blank=True)
    action = models.CharField(max_length=80)
    subject_type = models.CharField(max_length=80, blank=True)
    subject_id = models.CharField(max_length=64, blank=True)
    # The payload as its canonical JSON text (hashing.canonical_json), exactly the bytes
    # that are hashed: verification needs no decoding. Read it parsed with `.payload`.
    payload_json = models.TextField(default="{}")
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64, unique=True)

    objects = AuditEventQuerySet.as_manager()

    class Meta:
        ordering = ["stream_id", "seq"]
        constraints = [models.UniqueConstraint(fields=["stream", "seq"], name="audit_event_stream_seq_unique")]
        indexes = [
            models.Index(fields=["subject_type", "subject_id"], name="audit_event_subject_idx"),
            models.Index(fields=["at"], name="audit_event_at_idx"),
            # The events list filtered by `action` (or `action_prefix`: a LIKE 'x%', which the
            # pattern operator class serves whatever the database's collation), newest first.
            # Without it a rare action (the minimum changes, the counts, the interruptions of a
            # season) read every event of the trail backwards, and counted them all again.
            models.Index(
                fields=["action", "id"], name="audit_event_action_idx", opclasses=["varchar_pattern_ops", "int8_ops"]
            ),
        ]

    def __str__(self) -> str:
        return f"{self.stream_id}#{self.seq} {self.action}"

    @property
    def payload(self) -> Any:
        """The payload, parsed (a new object on each access: the stored text is the truth)."""
        return json.loads(self.payload_json)


class AnchoredHead(models.Model):
    """The head each stream had when an anchor last published it (audit/anchors.py): the next
    anchor names only the heads that moved since. Bookkeeping of the publication, not a
    record of the floor."""

    stream = models.OneToOneField(AuditStream, on_delete=models.PROTECT, primary_key=True, related_name="anchored")
    seq = models.PositiveBigIntegerField()
    head_hash = models.CharField(max_length=64)
    anchored_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.stream_id} @{self.seq} anchored {self.anchored_at:%Y-%m-%d %H:%M}"


# --------------------------------------------------------------------------- end of day
# The records auditors expect at the end of a gaming day (RULES.md §8): the report built by
# Celery with its files, the cagnotte count per table (art. 70) and the control register
# with its two sign-offs (art. 72). None of these rows is ever edited once it is final: a
# correction is a new row that refers to the one it corrects.


class DayReport(models.Model):
    """One end-of-day report of a gaming day. Version 1 is built when the day closes;
    each fully signed control register asks for the next version, which includes it.

    (gaming_day, version) is unique, so building a version twice gives one report."""

    class Status(models.TextChoices):
        PENDING = "pending", "pending"
        DONE = "done", "done"
        FAILED = "failed", "failed"

    gaming_day = models.ForeignKey("floor.GamingDay", on_delete=models.PROTECT, related_name="reports")
    version = models.PositiveIntegerField(default=1)
    control_register = models.ForeignKey(
        "ControlRegister", on_delete=models.PROTECT, null=True, blank=True, related_name="reports",
        help_text="The signed control register this version includes (none for version 1).",
    )
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.PENDING)
    task_id = models.CharField(max_length=64, blank=True)
    requested_at = models.DateTimeField()
    built_at = models.DateTimeField(null=True, blank=True)
    seconds = models.FloatField(null=True, blank=True, help_text="Build time (display only).")
    # The day's seal (audit.selectors.day_seal) over exactly these streams, at build time.
    seal = models.CharField(max_length=64, blank=True)
    sealed_streams = models.JSONField(default=list)
    # [name, seq, head_hash] of each sealed stream at the build: verify recomputes the seal
    # from the events at those positions, so later events do not read as tampering.
    sealed_heads = models.JSONField(default=list)
    # Totals of the day (cents) and per-table figures, as in the files: what verify and the
    # auditor's page read without opening a file.
    summary = models.JSONField(default=dict)
    error = models.TextField(blank=True)
    # Build attempts begun since the last failure recorded with its error (the operator's
    # rebuild starts it again), each counted and committed before its work: what a build
    # whose process was killed (the OOM killer, a crash in a writer) leaves. At REPORT_BUILD_MAX_ATTEMPTS the
    # next attempt does not build: the report goes FAILED ("gave up"), and only the
    # operator's `manage.py report_build` tries it again (audit.reports.services.report_build).
    attempts = models.PositiveIntegerField(
        default=0, help_text="Build attempts begun since the last failure recorded with its error (a built report: the attempts it took)."
    )
    # A FAILED report the sweep enqueued again (audit.reports.services.report_requeue): its
    # status stays FAILED, the last build's outcome, with its error, until the new build ends;
    # this says it is queued again meanwhile (`retrying`). Emptied when a build ends.
    requeued_at = models.DateTimeField(
        null=True, blank=True,
        help_text="When the sweep enqueued this failed report again; empty once a build ends (built or failed).",
    )  # fmt: skip
    # The language of the report's words (settings.REPORT_LANGUAGE when it was requested):
    # kept, so that a rebuild of this version writes the same bytes whatever the setting says
    # now. Reports from before it were written in English.
    language = models.CharField(
        max_length=8, default="en",
        help_text="The language the report is written in (settings.REPORT_LANGUAGE when it was requested).",
    )

    class Meta:
        ordering = ["gaming_day_id", "version"]
        constraints = [
            models.UniqueConstraint(fields=["gaming_day", "version"], name="audit_report_day_version_unique"),
            models.UniqueConstraint(fields=["control_register"], name="audit_report_one_per_register"),
        ]

    def __str__(self) -> str:
        return f"report v{self.version} of day {self.gaming_day_id}"

    @property
    def retrying(self) -> bool:
        """FAILED, and enqueued again by the sweep: its new build is queued or running."""
        return self.status == self.Status.FAILED and self.requeued_at is not None

    # Superseded or current: read from the annotations of audit.reports.selectors.with_latest
    # (the latest built version of the day), never a query per report. Unannotated, these
    # raise AttributeError rather than guess.
    @property
    def superseded_by_id(self) -> int | None:
        """The latest built report of the day when it is a later version than this one."""
        if self.latest_id is None or self.latest_version <= self.version:
            return None
        return self.latest_id

    @property
    def superseded_by_version(self) -> int | None:
        return None if self.superseded_by_id is None else self.latest_version

    @property
    def is_current(self) -> bool:
        """The latest built version of its day: the one in force."""
        return self.latest_id == self.pk

    @property
    def language_name(self) -> str:
        """The language its files are written in, in words of the active language ("English",
        "Inglese"); a code without words (a language added since) as itself."""
        return str(REPORT_LANGUAGE_NAMES.get(self.language, self.language))


class ReportFile(models.Model):
    """One exported file of a report, under MEDIA_ROOT, with its SHA-256."""

    class Format(models.TextChoices):
        CSV = "csv", "CSV"
        XLSX = "xlsx", "XLSX"
        PDF = "pdf", "PDF"

    report = models.ForeignKey(DayReport, on_delete=models.PROTECT, related_name="files")
    format = models.CharField(max_length=4, choices=Format.choices)
    path = models.CharField(max_length=300, help_text="Relative to MEDIA_ROOT.")
    size = models.PositiveBigIntegerField()
    sha256 = models.CharField(max_length=64)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["report_id", "format"]
        constraints = [models.UniqueConstraint(fields=["report", "format"], name="audit_reportfile_one_per_format")]

    def __str__(self) -> str:
        return self.path


class CagnotteCount(models.Model):
    """The counted cagnotte of one table for a closed gaming day (art. 70), entered by a
    direzione user in the presence of a witness. `expected` is the sum of the recorded levies
    (the house postings), computed when the count is entered. A surplus is an extra levy, a
    shortfall is borne by the casino, and `carried` (the higher figure) goes to the control
    register. A correction is a new row with `corrects` set; the corrected row stays.

    `tips`: the table's tips box (the mance, RULES.md §6), opened and counted with the cagnotte
    box before the same people. The tips belong to the staff (the tronc), not the house: they
    never enter expected, counted or carried. NULL: not counted with this count (a count
    entered before the tips were recorded, or through the API without them)."""

    gaming_day = models.ForeignKey("floor.GamingDay", on_delete=models.PROTECT, related_name="cagnotte_counts")
    table = models.ForeignKey("floor.Table", on_delete=models.PROTECT, related_name="cagnotte_counts")
    expected = models.BigIntegerField(help_text="Sum of the recorded levies, cents.")
    counted = models.BigIntegerField(help_text="Counted in the box, cents.")
    tips = models.BigIntegerField(
        null=True, blank=True, help_text="Tips (mance) counted in the table's tips box, cents; NULL: not counted."
    )
    counted_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    witness = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    counted_at = models.DateTimeField()
    note = models.CharField(max_length=300, blank=True)
    corrects = models.OneToOneField(
        "self", on_delete=models.PROTECT, null=True, blank=True, related_name="corrected_by"
    )

    class Meta:
        ordering = ["gaming_day_id", "table_id", "counted_at", "id"]
        constraints = [
            # One original count per table and day; corrections chain from it, one each.
            models.UniqueConstraint(
                fields=["gaming_day", "table"], condition=models.Q(corrects__isnull=True),
                name="audit_cagnotte_count_one_per_table_day",
            ),
            models.CheckConstraint(condition=models.Q(counted__gte=0), name="audit_cagnotte_count_not_negative"),
            models.CheckConstraint(
                condition=models.Q(tips__isnull=True) | models.Q(tips__gte=0), name="audit_cagnotte_count_tips_not_negative"
            ),
            models.CheckConstraint(
                condition=~models.Q(counted_by=models.F("witness")), name="audit_cagnotte_count_witness_differs"
            ),
        ]

    def __str__(self) -> str:
        return f"count of table {self.table_id} day {self.gaming_day_id}: {self.counted}"

    @property
    def difference(self) -> int:
        return self.counted - self.expected

    @property
    def surplus(self) -> int:
        return max(0, self.counted - self.expected)

    @property
    def shortfall(self) -> int:
        return max(0, self.expected - self.counted)

    @property
    def carried(self) -> int:
        return max(self.expected, self.counted)


class ControlRegister(models.Model):
    """The control register of a gaming day (art. 72): the accounts per table and per
    session, the day's total in figures and in words (Italian and English), signed by two
    different direzione users. `lines` is the snapshot the signers saw; once the second
    signature is on it nothing changes, and a correction is a new register with `corrects`."""

    gaming_day = models.ForeignKey("floor.GamingDay", on_delete=models.PROTECT, related_name="control_registers")
    corrects = models.OneToOneField(
        "self", on_delete=models.PROTECT, null=True, blank=True, related_name="corrected_by"
    )
    reason = models.CharField(max_length=300, blank=True, help_text="Why a correction was made.")
    lines = models.JSONField(default=list, help_text="Per table: sessions, expected, counted, carried (cents).")
    total = models.BigIntegerField(help_text="The day's carried cagnotte, cents.")
    tips_total = models.BigIntegerField(
        null=True, blank=True,
        help_text="The day's tips (mance) counted, cents: the staff's, apart from the cagnotte `total`. NULL: no "
        "count in force recorded tips (a register written before they were recorded).",
    )  # fmt: skip
    total_words_it = models.TextField()
    total_words_en = models.TextField()
    prepared_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    prepared_at = models.DateTimeField()
    first_signer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    first_signed_at = models.DateTimeField(null=True, blank=True)
    second_signer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    second_signed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["gaming_day_id", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["gaming_day"], condition=models.Q(corrects__isnull=True),
                name="audit_control_register_one_per_day",
            ),
            models.CheckConstraint(
                condition=models.Q(second_signer__isnull=True) | ~models.Q(second_signer=models.F("first_signer")),
                name="audit_control_register_two_signers",
            ),
            models.CheckConstraint(
                condition=models.Q(second_signer__isnull=True) | models.Q(first_signer__isnull=False),
                name="audit_control_register_signed_in_order",
            ),
            models.CheckConstraint(
                condition=models.Q(tips_total__isnull=True) | models.Q(tips_total__gte=0),
                name="audit_control_register_tips_not_negative",
            ),
        ]

    def __str__(self) -> str:
        return f"control register {self.pk} of day {self.gaming_day_id}"

    @property
    def signed(self) -> bool:
        return self.second_signer_id is not None

    @property
    def status(self) -> str:
        if self.second_signer_id is not None:
            return "signed"
        return "first_signed" if self.first_signer_id is not None else "draft"


class UnclaimedDeposit(models.Model):
    """A stake ("puntata") or winnings ("vincita") left unclaimed at a table, collected by the
    Commissario and deposited (RULES.md §6; seed 001: "ritirate dal Commissario e depositate
    conformemente alle disposizioni della Direzione Giochi"). It belongs to the gaming day and
    the table session it was collected at, and, when known, to the coup and the patron.
    `deposited_in` says where it went (an envelope or cash-desk receipt number). A patron who
    comes back is handed it: the return fields are filled once, never changed again."""

    class Kind(models.TextChoices):
        STAKE = "stake", "puntata"
        WINNINGS = "winnings", "vincita"

    # Indexed with its time (Meta.indexes): the desk lists a day's deposits in that order.
    gaming_day = models.ForeignKey(
        "floor.GamingDay", on_delete=models.PROTECT, related_name="unclaimed_deposits", db_index=False
    )
    session = models.ForeignKey("floor.TableSession", on_delete=models.PROTECT, related_name="+")
    coup = models.ForeignKey("tables.Coup", on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    patron = models.ForeignKey("floor.Patron", on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    amount = models.BigIntegerField(help_text="Cents, > 0.")
    deposited_in = models.CharField(max_length=120, help_text="Where it was deposited: envelope or receipt number.")
    note = models.CharField(max_length=300, blank=True)
    recorded_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    recorded_at = models.DateTimeField()
    returned_to = models.CharField(max_length=200, blank=True, help_text="Who was handed it back.")
    returned_patron = models.ForeignKey(
        "floor.Patron", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    returned_note = models.CharField(max_length=300, blank=True)
    returned_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    returned_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["gaming_day_id", "recorded_at", "id"]
        indexes = [models.Index(fields=["gaming_day", "recorded_at"], name="audit_unclaimed_day_idx")]
        constraints = [
            models.CheckConstraint(condition=models.Q(amount__gt=0), name="audit_unclaimed_amount_positive"),
            models.CheckConstraint(
                condition=models.Q(kind__in=["stake", "winnings"]), name="audit_unclaimed_kind_known"
            ),
            # Returned: by whom and when, together, or neither.
            models.CheckConstraint(
                condition=models.Q(returned_by__isnull=True, returned_at__isnull=True)
                | models.Q(returned_by__isnull=False, returned_at__isnull=False),
                name="audit_unclaimed_returned_whole",
            ),
        ]

    def __str__(self) -> str:
        return f"unclaimed {self.kind} {self.amount} of day {self.gaming_day_id}"

    @property
    def returned(self) -> bool:
        return self.returned_at is not None
