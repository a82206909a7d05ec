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

from .conftest import reseal, trigger_disabled
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
    reseal(name)  # the attacker holds the application's key too: the deeper checks run


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


def test_the_books_stream_rewritten_into_garbage_gets_a_verdict(world, media, django_capture_on_commit_callbacks,  # noqa: F811
                                                              direzione, user_factory):
    """The day's books (cagnotte counts, the control register, its signatures, updates and
    corrections) are read by the books check whether or not a report sealed them: each of
    their actions rewritten into garbage, the chain rebuilt, gives a verdict that names it."""
    from audit.reports import registers
    from floor.roles import Role

    witness = user_factory("witness2", Role.DIREZIONE)
    close(world, django_capture_on_commit_callbacks)
    report = DayReport.objects.get(gaming_day=world.day)
    day = world.day
    first = registers.cagnotte_count_record(gaming_day=day, table=world.tables[0], by=direzione, witness=witness,
                                            counted=41_20)  # fmt: skip
    registers.cagnotte_count_record(gaming_day=day, table=world.tables[1], by=direzione, witness=witness,
                                    counted=10_00)  # fmt: skip
    reg = registers.control_register_prepare(gaming_day=day, by=direzione)
    registers.control_register_sign(register=reg, by=direzione)
    first = registers.cagnotte_count_correct(count=first, by=direzione, witness=witness, counted=40_00,
                                             note="recounted")  # fmt: skip
    reg = registers.control_register_prepare(gaming_day=day, by=direzione)  # updated: the signature withdrawn
    registers.control_register_sign(register=reg, by=direzione)
    registers.control_register_sign(register=reg, by=witness)
    registers.cagnotte_count_correct(count=first, by=direzione, witness=witness, counted=39_00, note="again")
    registers.control_register_correct(register=reg, by=direzione, reason="the box recounted")
    assert report_verify(report=DayReport.objects.get(pk=report.pk))["ok"] is True
    one_of_each = {}
    for pk, action in AuditEvent.objects.filter(stream__name=registers.books_stream(day.pk)).order_by(
        "seq"
    ).values_list("pk", "action"):
        one_of_each.setdefault(action, pk)
    assert set(one_of_each) == {"cagnotte.counted", "cagnotte.count_corrected", "control_register.prepared",
                                "control_register.updated", "control_register.signed",
                                "control_register.corrected"}  # fmt: skip
    books = AuditEvent.objects.filter(stream__name=registers.books_stream(day.pk))
    last = {pk: not books.filter(subject_id=subject, seq__gt=seq).exclude(action="control_register.signed").exists()
            for pk, subject, seq in books.values_list("pk", "subject_id", "seq")}  # fmt: skip
    assert sum(last[pk] for pk in one_of_each.values()) >= 3
    for action, pk in one_of_each.items():
        original = AuditEvent.objects.get(pk=pk).payload_json
        keys = list(json.loads(original))
        # The record's own keys (what the row holds) and the whole payload: the row is named.
        # The others ("old", a correction's reason) are the trail's alone: a verdict is enough.
        named = [json.dumps({**json.loads(original), "new": [1] if i % 2 else {"a": "b"}}) for i in range(2)]
        named += [json.dumps({**json.loads(original), "new": {**json.loads(original)["new"], key: [1]}})
                  for key in json.loads(original)["new"] or ()]  # fmt: skip
        others = [json.dumps({**json.loads(original), key: [1] if i % 2 else {"a": "b"}})
                  for i, key in enumerate(keys) if key != "new"]  # fmt: skip
        for garbage in (*GARBAGE, *named, *others):
            with transaction.atomic():
                with trigger_disabled():
                    rewrite(pk, garbage)
                verdict = report_verify(report=DayReport.objects.get(pk=report.pk))
                # Named where the event is the last word on its row (an earlier one, superseded by
                # a later event of the unsealed stream, leaves the row as recorded: the verdict is ok).
                assert verdict["ok"] is False or garbage in others or not last[pk], (action, garbage)
                assert all(r["code"] == "books_mismatch" for r in verdict["reasons"]), (action, garbage, verdict)
                assert len(_explain(verdict)["lines"]) == len(verdict["reasons"]), (action, garbage)
                with trigger_disabled():
                    rewrite(pk, original)
    assert report_verify(report=DayReport.objects.get(pk=report.pk))["ok"] is True
