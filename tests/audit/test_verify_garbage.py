"""Whatever an attacker who owns the tables writes into an event's payload, the report's
verify answers with a verdict, never an error: one event of every action in the day's
sealed streams (and the report's build record) rewritten into text that is not JSON, into
JSON that is not an object, into an object of wrong shapes, and with each of its own keys
in turn given a value of another type."""

from __future__ import annotations

import json

import pytest
from django.db import transaction

from audit.hashing import canonical_time, document_hash
from audit.models import AuditEvent, AuditStream, DayReport
from audit.reports.services import report_verify
from audit.selectors import chain_verify
from audit.views import _explain

from .conftest import trigger_disabled
from .test_reports import close, media, world  # noqa: F401  (fixtures)

GARBAGE = ("not json", "[1, 2]", '{"coup": "x", "postings": 7, "bets": "y", "new": 3, "changes": [1], '
           '"offers": {"a": 1}, "position": "p", "bank": [], "settled": 5, "previous": 9, "cagnotte": "c"}')  # fmt: skip

pytestmark = pytest.mark.django_db


def rewrite(pk: int, payload: str) -> None:
    """The attacker who owns the tables: the event's payload rewritten and its stream's chain
    rebuilt from it on (each later hash and the head), so every chain verifies."""
    victim = AuditEvent.objects.get(pk=pk)
    AuditEvent.objects.filter(pk=pk).update(payload_json=payload)
    name = victim.stream.name
    prev = victim.prev_hash
    for e in AuditEvent.objects.filter(stream=victim.stream, seq__gte=victim.seq).order_by("seq"):
        digest = document_hash(name, e.seq, canonical_time(e.at), e.actor_id, e.actor_name, e.action,
                               e.subject_type, e.subject_id, e.payload_json, prev)  # fmt: skip
        AuditEvent.objects.filter(pk=e.pk).update(prev_hash=prev, hash=digest)
        prev = digest
    AuditStream.objects.filter(pk=victim.stream_id).update(head_hash=prev)


def test_every_action_rewritten_into_garbage_gets_a_verdict(world, media, django_capture_on_commit_callbacks):  # noqa: F811
    close(world, django_capture_on_commit_callbacks)
    report = DayReport.objects.get(gaming_day=world.day)
    streams = [name for name, _, _ in report.sealed_heads] + [f"reports:{world.day.pk}"]
    one_of_each = {}
    for pk, action in AuditEvent.objects.filter(stream__name__in=streams).order_by("seq").values_list("pk", "action"):
        one_of_each.setdefault(action, pk)
    assert len(one_of_each) > 25  # the day's coups, banks, registers, the build...
    for action, pk in one_of_each.items():
        original = AuditEvent.objects.get(pk=pk).payload_json
        keys = list(json.loads(original))
        # Each key given a list or an object in turn (both unhashable, neither what any key holds).
        wrong = [json.dumps({**json.loads(original), key: [1] if i % 2 else {"a": "b"}}) for i, key in enumerate(keys)]
        for garbage in (*GARBAGE, *wrong):
            with transaction.atomic():
                with trigger_disabled():
                    rewrite(pk, garbage)
                verdict = report_verify(report=DayReport.objects.get(pk=report.pk))
                # A sealed event's change shows in the seal at least; the build's record holds
                # fields no check reads (its version), whose garbage changes nothing it says.
                assert verdict["ok"] is False or action == "report.built", (action, garbage)
                assert verdict["chains"]["ok"] is True, (action, garbage)  # the chain rebuilt: deeper checks ran
                assert len(_explain(verdict)["lines"]) == len(verdict["reasons"]), (action, garbage)
                whole = chain_verify()  # a verdict too; and a sealed event's change shows in the seals
                assert whole.ok is False or action == "report.built", (action, garbage)
                with trigger_disabled():
                    rewrite(pk, original)
    assert report_verify(report=DayReport.objects.get(pk=report.pk))["ok"] is True
