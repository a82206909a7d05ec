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

GENESIS_HASH = "0" * 64


class AuditStream(models.Model):
    name = models.CharField(max_length=200, unique=True)
    seq = models.PositiveBigIntegerField(default=0, help_text="Sequence number of the last event.")
    head_hash = models.CharField(max_length=64, default=GENESIS_HASH)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} @{self.seq}"


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

    class Meta:
        ordering = ["stream_id", "seq"]
        constraints = [models.UniqueConstraint(fields=["stream", "seq"], name="audit_event_stream_seq_unique")]
        indexes = [
            models.Index(fields=["subject_type", "subject_id"], name="audit_event_subject_idx"),
            models.Index(fields=["at"], name="audit_event_at_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.stream_id}#{self.seq} {self.action}"

    @property
    def payload(self) -> Any:
        """The payload, parsed (a new object on each access: the stored text is the truth)."""
        return json.loads(self.payload_json)
