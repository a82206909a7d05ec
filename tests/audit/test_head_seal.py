"""Every stream head carries the seal of the application's key (audit/seals.py): a stream
re-chained, or a head moved, by someone who owns the tables but not the key is named by
chain_verify (head_seal_mismatch), on both of its paths; with the key, the seal says
nothing more than the chain (the report's seals are the check then)."""

from __future__ import annotations

import io
from types import SimpleNamespace

import pytest
from django.apps import apps
from django.core.management import CommandError, call_command
from django.db import connection, transaction

from audit import services
from audit.hashing import canonical_time, document_hash
from audit.models import GENESIS_HASH, AuditEvent, AuditStream
from audit.seals import head_seal, head_sealed
from audit.selectors import chain_verify

from .conftest import append, raw_sql, reseal, trigger_disabled

pytestmark = pytest.mark.django_db


def both_paths(**kwargs):
    fast, slow = chain_verify(fast=True, **kwargs), chain_verify(fast=False, **kwargs)
    assert (fast.ok, fast.first_broken) == (slow.ok, slow.first_broken)
    return fast


def sealed_where_it_is(name: str) -> bool:
    head = AuditStream.objects.get(name=name)
    return head_sealed(head.name, head.seq, head.head_hash, head.head_seal)


def rechain_last(name: str) -> AuditEvent:
    """The owner of the tables rewrites the stream's last event and mends its hash and the
    head: the chain verifies, the head's seal is the old one."""
    victim = AuditEvent.objects.select_related("stream").filter(stream__name=name).order_by("-seq").first()
    payload = victim.payload_json.replace("}", ',"x":1}', 1)
    forged = document_hash(name, victim.seq, canonical_time(victim.at), victim.actor_id, victim.actor_name,
                           victim.action, victim.subject_type, victim.subject_id, payload, victim.prev_hash)  # fmt: skip
    with trigger_disabled():
        raw_sql("UPDATE audit_auditevent SET payload_json = %s, hash = %s WHERE id = %s", (payload, forged, victim.pk))
        raw_sql("UPDATE audit_auditstream SET head_hash = %s WHERE name = %s", (forged, name))
    return victim


def test_every_head_the_services_write_is_sealed(db):
    append("table:1", 3)  # one event at a time (record)
    with transaction.atomic(), services.batch():  # a batch over two streams, one of them new
        services.record(stream="table:1", actor=None, action="x", data={})
        services.record(stream="table:2", actor=None, action="x", data={})
        services.record(stream="table:2", actor=None, action="x", data={})
    for name, seq in (("table:1", 4), ("table:2", 2)):
        assert AuditStream.objects.get(name=name).seq == seq and sealed_where_it_is(name)
    AuditStream.objects.create(name="empty")  # saved through the model: sealed too
    assert sealed_where_it_is("empty")
    assert both_paths().ok


def test_a_stream_rechained_without_the_key_is_named(db):
    append("table:1", 4)
    append("table:2", 2)
    rechain_last("table:2")
    broken = both_paths().first_broken
    assert (broken.stream, broken.seq, broken.reason) == ("table:2", 2, "head_seal_mismatch")
    out = io.StringIO()
    with pytest.raises(CommandError):
        call_command("audit_verify", stdout=out)
    assert "reason=head_seal_mismatch" in out.getvalue()
    # With the key, the same forgery passes the chains (the reports' seals are the check).
    reseal("table:2")
    assert both_paths().ok


def test_a_tail_cut_with_its_head_moved_back_without_the_key_is_named(db, tamper):
    events = append("table:1", 3)
    tamper("DELETE FROM audit_auditevent WHERE id = %s", (events[-1].pk,))
    tamper("UPDATE audit_auditstream SET seq = 2, head_hash = %s WHERE name = 'table:1'", (events[-1].prev_hash,))
    broken = both_paths().first_broken
    assert (broken.stream, broken.seq, broken.reason) == ("table:1", 2, "head_seal_mismatch")


def test_an_empty_head_without_its_seal_is_named(db):
    raw_sql("INSERT INTO audit_auditstream (name, seq, head_hash, head_seal, created_at) VALUES (%s, 0, %s, '', now())",
            ("bare", GENESIS_HASH))  # fmt: skip
    broken = both_paths().first_broken
    assert (broken.stream, broken.seq, broken.reason) == ("bare", 0, "head_seal_mismatch")


def test_a_rotated_key_still_verifies_the_heads_it_sealed(db, settings):
    settings.AUDIT_HEAD_KEYS = ["old-key"]
    append("table:1", 2)
    append("table:2", 1)
    settings.AUDIT_HEAD_KEYS = ["new-key", "old-key"]  # the new key seals, both verify
    assert both_paths().ok
    append("table:2", 1)
    head = AuditStream.objects.get(name="table:2")
    assert head.head_seal == head_seal("table:2", head.seq, head.head_hash)
    settings.AUDIT_HEAD_KEYS = ["new-key"]  # the old key dropped: a head it sealed is named
    broken = both_paths().first_broken
    assert (broken.stream, broken.reason) == ("table:1", "head_seal_mismatch")


def test_without_audit_head_keys_the_secret_key_and_its_fallbacks_seal(db, settings):
    settings.AUDIT_HEAD_KEYS = []
    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = "first-secret", []
    append("table:1", 1)
    settings.SECRET_KEY, settings.SECRET_KEY_FALLBACKS = "second-secret", ["first-secret"]
    assert both_paths().ok
    settings.SECRET_KEY_FALLBACKS = []
    assert both_paths().first_broken.reason == "head_seal_mismatch"


def test_the_migration_seals_the_heads_it_finds(db):
    """Migration 0008 seals every existing head with the key in force."""
    import importlib

    append("table:1", 2)
    AuditStream.objects.create(name="empty")
    raw_sql("UPDATE audit_auditstream SET head_seal = ''")
    assert both_paths().first_broken.reason == "head_seal_mismatch"
    migration = importlib.import_module("audit.migrations.0008_stream_head_seal")
    migration.seal_heads(apps, SimpleNamespace(connection=connection))
    assert both_paths().ok


def test_the_desk_says_it_in_words(db):
    from django.utils import translation

    from audit.views import _broken_words, _streams_said

    append("table:1", 2)
    rechain_last("table:1")
    broken = chain_verify().as_dict()["first_broken"]
    said = _streams_said([broken["stream"]], None)
    assert _broken_words(broken, said).startswith("First broken event: event 2 of table:1, id ")
    assert _broken_words(broken, said).endswith(
        "the stream's head is not sealed by the application's key: the stream was re-chained, or its head moved, "
        "by someone without it.")  # fmt: skip
    with translation.override("it"):
        assert "non è sigillata con la chiave dell'applicazione" in _broken_words(broken, said)


def test_after_a_lost_key_the_heads_are_sealed_again_once_the_trail_verifies(db, settings):
    settings.AUDIT_HEAD_KEYS = ["lost-key"]
    append("table:1", 3)
    append("table:2", 1)
    settings.AUDIT_HEAD_KEYS = ["new-key"]  # the old key is gone: every head is named
    assert both_paths().first_broken.reason == "head_seal_mismatch"
    out = io.StringIO()
    call_command("audit_reseal_heads", "--reason", "SECRET_KEY replaced, old key lost", stdout=out)
    assert "sealed again: 2 of the trail's heads" in out.getvalue()
    assert both_paths().ok
    event = AuditEvent.objects.get(stream__name="security", action="audit.heads_resealed")
    assert (event.payload["count"], event.payload["streams"], event.payload["reason"]) == (
        2, ["table:1", "table:2"], "SECRET_KEY replaced, old key lost")  # fmt: skip
    out = io.StringIO()
    call_command("audit_reseal_heads", "--reason", "again", stdout=out)  # nothing left to do
    assert "sealed again: 0 of the trail's heads" in out.getvalue()
    assert AuditEvent.objects.filter(action="audit.heads_resealed").count() == 1


def test_a_trail_that_does_not_verify_is_not_sealed_again(db, settings):
    settings.AUDIT_HEAD_KEYS = ["lost-key"]
    append("table:1", 3)
    append("table:2", 2)
    rechain_last("table:2")  # re-chained by the owner of the tables: the chain verifies...
    with trigger_disabled():  # ... and an event of the other stream altered: that one does not
        raw_sql("UPDATE audit_auditevent SET payload_json = '{\"i\":9}' WHERE id = %s",
                (AuditEvent.objects.get(stream__name="table:1", seq=2).pk,))  # fmt: skip
    settings.AUDIT_HEAD_KEYS = ["new-key"]
    seals = dict(AuditStream.objects.values_list("name", "head_seal"))
    with pytest.raises(CommandError) as refused:
        call_command("audit_reseal_heads", "--reason", "key lost", stdout=io.StringIO())
    assert refused.value.returncode == 1 and "hash_mismatch" in str(refused.value)
    assert dict(AuditStream.objects.values_list("name", "head_seal")) == seals
    assert not AuditEvent.objects.filter(action="audit.heads_resealed").exists()


def test_resealing_needs_a_reason(db):
    with pytest.raises(CommandError) as refused:
        call_command("audit_reseal_heads", "--reason", "  ", stdout=io.StringIO())
    assert refused.value.returncode == 2


def test_resealing_verifies_again_only_the_streams_that_moved_while_it_verified(db, settings, monkeypatch):
    """The whole trail is verified without a lock; a stream appended to meanwhile is verified
    again under the locks, and an event forged meanwhile stops the sealing."""
    from audit.management.commands import audit_reseal_heads as command

    settings.AUDIT_HEAD_KEYS = ["lost-key"]
    append("table:1", 2)
    append("table:2", 2)
    settings.AUDIT_HEAD_KEYS = ["new-key"]
    calls: list = []

    def verify_then_the_floor_goes_on(**kwargs):
        result = chain_verify(**kwargs)
        calls.append(kwargs.get("streams"))
        if len(calls) == 1:  # while the first pass ran, table:2 recorded a coup
            append("table:2", 1)
        return result

    monkeypatch.setattr(command, "chain_verify", verify_then_the_floor_goes_on)
    out = io.StringIO()
    call_command("audit_reseal_heads", "--reason", "key lost", stdout=out)
    assert calls == [None, ["table:2"]]  # table:2's append sealed its head with the key in force
    assert "sealed again: 1 of the trail's heads" in out.getvalue() and both_paths().ok
    assert AuditEvent.objects.get(action="audit.heads_resealed").payload["verified_again"] == 1

    settings.AUDIT_HEAD_KEYS = ["another-new-key"]
    calls.clear()

    def verify_then_someone_forges(**kwargs):
        result = chain_verify(**kwargs)
        calls.append(kwargs.get("streams"))
        if len(calls) == 1:  # an event appended and altered after the first pass
            append("table:1", 1)
            with trigger_disabled():
                raw_sql("UPDATE audit_auditevent SET payload_json = '{\"i\":9}' WHERE id = %s",
                        (AuditEvent.objects.get(stream__name="table:1", seq=3).pk,))  # fmt: skip
        return result

    monkeypatch.setattr(command, "chain_verify", verify_then_someone_forges)
    seals = dict(AuditStream.objects.exclude(name="table:1").values_list("name", "head_seal"))
    with pytest.raises(CommandError) as refused:
        call_command("audit_reseal_heads", "--reason", "key lost again", stdout=io.StringIO())
    assert refused.value.returncode == 1 and "stream=table:1 seq=3" in str(refused.value)
    assert calls == [None, ["table:1"]]
    assert dict(AuditStream.objects.exclude(name="table:1").values_list("name", "head_seal")) == seals
    assert AuditEvent.objects.filter(action="audit.heads_resealed").count() == 1
