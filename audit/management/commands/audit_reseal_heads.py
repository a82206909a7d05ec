"""`manage.py audit_reseal_heads --reason TEXT`: seal every stream head again with the key in
force (audit/seals.py), after the key that sealed them was lost (a SECRET_KEY replaced
without keeping the old one in DJANGO_SECRET_KEY_FALLBACKS, say): without it, audit_verify
names every head head_seal_mismatch from then on.

It seals nothing unless the whole trail verifies first in every other respect (the chains,
the heads, the streams the floor's rows name, the reports' seals): a head it seals again is
one the rest of the trail vouches for. The whole trail is verified first without a lock (the
floor goes on recording); then every head is locked (appends wait) and only the streams
whose head moved meanwhile are verified again, so what is verified is what is sealed while
appends wait only for the streams that moved. What it did is recorded in the `security`
stream, whose own head the record seals with the key in force.

Exit status: 0 when done (nothing to do included), 1 when the trail does not verify (the
first break is printed and nothing is sealed)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from audit.models import AuditStream
from audit.seals import head_seal, head_sealed
from audit.selectors import chain_verify
from audit.services import record
from floor.security import STREAM as SECURITY_STREAM


class Command(BaseCommand):
    help = "Seal every audit stream head again with the key in force, once the rest of the trail verifies."

    def add_arguments(self, parser):
        parser.add_argument("--reason", required=True, help="Why the heads are sealed again (recorded).")

    def handle(self, *args, reason: str, **options):
        reason = reason.strip()
        if not reason:
            raise CommandError("Say why the heads are sealed again (--reason).", returncode=2)
        resealed: list[str] = []
        # The whole trail, without a lock: the heads as they were before it started, then
        # every chain (a head that moved meanwhile is verified again below).
        before = {name: (seq, head_hash) for name, seq, head_hash in
                  AuditStream.objects.values_list("name", "seq", "head_hash").iterator()}  # fmt: skip
        result = chain_verify(seals=False)
        _refuse_unless_ok(result)
        with transaction.atomic():
            # Every head locked: appends wait, and what is verified is what is sealed.
            heads = list(AuditStream.objects.select_for_update().order_by("id").only("id", "name", "seq", "head_hash",
                                                                                      "head_seal"))  # fmt: skip
            moved = [head.name for head in heads if before.get(head.name) != (head.seq, head.head_hash)]
            if moved:
                _refuse_unless_ok(chain_verify(streams=moved, seals=False))
            for head in heads:
                if not head_sealed(head.name, head.seq, head.head_hash, head.head_seal):
                    AuditStream.objects.filter(pk=head.pk).update(
                        head_seal=head_seal(head.name, head.seq, head.head_hash)
                    )
                    resealed.append(head.name)
            if resealed:
                record(stream=SECURITY_STREAM, actor=None, action="audit.heads_resealed",
                       data={"reason": reason, "count": len(resealed), "streams": resealed[:100],
                             "verified_events": result.events_checked, "verified_again": len(moved)})  # fmt: skip
        self.stdout.write(
            self.style.SUCCESS(
                f"sealed again: {len(resealed)} of the trail's heads (the others were sealed already)."
            )
        )


def _refuse_unless_ok(result) -> None:
    if not result.ok:
        broken = result.first_broken
        raise CommandError(
            f"the audit trail does not verify, nothing sealed: stream={broken.stream} seq={broken.seq} "
            f"reason={broken.reason}: {broken.message}",
            returncode=1,
        )
