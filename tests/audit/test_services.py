"""audit.services.record: the chain it writes, and the input it refuses."""

from __future__ import annotations

import itertools
import math

import pytest
from django.db import transaction

from audit.hashing import event_hash
from audit.models import GENESIS_HASH, AuditEvent, AuditStream
from audit.services import record

pytestmark = pytest.mark.django_db


def test_record_appends_contiguous_seq_with_correct_links(chain, auditor):
    events = chain("table:1", 5, actor=auditor, pot=12300)

    assert [e.seq for e in events] == [1, 2, 3, 4, 5]
    assert events[0].prev_hash == GENESIS_HASH
    for previous, event in itertools.pairwise(events):
        assert event.prev_hash == previous.hash
    head = AuditStream.objects.get(name="table:1")
    assert (head.seq, head.head_hash) == (5, events[-1].hash)


def test_the_stored_hash_is_the_hash_of_the_stored_content(chain, auditor):
    [event] = chain("table:1", actor=auditor, cards=("AS", "KD"))
    stored = AuditEvent.objects.select_related("stream").get(pk=event.pk)

    # What comes back from the database (tuple -> list, timestamptz) hashes to the stored hash.
    assert stored.payload == {"i": 0, "cards": ["AS", "KD"]}
    assert stored.payload_json == '{"cards":["AS","KD"],"i":0}'  # canonical: compact, sorted keys
    assert stored.actor_name == "auditor"
    assert stored.hash == event_hash(
        stream=stored.stream.name,
        seq=stored.seq,
        at=stored.at,
        actor_id=stored.actor_id,
        actor_name=stored.actor_name,
        action=stored.action,
        subject_type=stored.subject_type,
        subject_id=stored.subject_id,
        payload_json=stored.payload_json,
        prev_hash=stored.prev_hash,
    )


def test_record_names_its_subject(auditor):
    with transaction.atomic():
        event = record(stream="floor:2026-11-29", actor=auditor, action="role.granted", subject=auditor)
    assert (event.subject_type, event.subject_id) == ("auth.user", str(auditor.pk))


def test_streams_have_independent_chains(chain):
    chain("table:1", 3)
    [first_of_b] = chain("table:2", 1)
    assert (first_of_b.seq, first_of_b.prev_hash) == (1, GENESIS_HASH)
    assert dict(AuditStream.objects.values_list("name", "seq")) == {"table:1": 3, "table:2": 1}


@pytest.mark.django_db(transaction=True)
def test_record_outside_a_transaction_raises_and_writes_nothing():
    with pytest.raises(RuntimeError, match="inside the transaction"):
        record(stream="table:1", actor=None, action="coup.recorded")
    assert not AuditEvent.objects.exists()
    assert not AuditStream.objects.exists()


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"data": {"pot": 1.5}}, TypeError, "no floats"),
        ({"data": {"pot": math.nan}}, TypeError, "no floats"),
        ({"data": {"pot": math.inf}}, TypeError, "no floats"),
        ({"data": {"note": "a\x00b"}}, ValueError, "NUL"),
        ({"data": {"a\x00": 1}}, ValueError, "NUL"),
        ({"data": {"deep": [{"x": ["ok", "a\x00"]}]}}, ValueError, "NUL"),
        ({"stream": ""}, ValueError, "stream name"),
        ({"stream": "x" * 201}, ValueError, "stream name"),
        ({"action": ""}, ValueError, "action code"),
        ({"action": "a" * 81}, ValueError, "action code"),
        # U+001F separates the fields of the hashed document: no text column may hold a
        # control character (JSON payloads escape theirs, so they may).
        ({"stream": "table:\x1f1"}, ValueError, "stream name cannot contain control"),
        ({"action": "coup\x1e"}, ValueError, "action code cannot contain control"),
        ({"action": "coup\nvoided"}, ValueError, "action code cannot contain control"),
        ({"data": {"note": "a\ud800b"}}, UnicodeEncodeError, "surrogate"),
    ],
)
def test_record_refuses_bad_input_before_writing_anything(kwargs, error, match):
    arguments = {"stream": "table:1", "actor": None, "action": "coup.recorded", **kwargs}
    with pytest.raises(error, match=match), transaction.atomic():
        record(**arguments)
    assert not AuditEvent.objects.exists()
    assert not AuditStream.objects.exists()


def test_the_text_of_an_escaped_nul_is_no_nul():
    """A payload may say "\\u0000" in words (a backslash, then u0000): only a real NUL is refused."""
    with transaction.atomic():
        event = record(stream="table:1", actor=None, action="coup.recorded", data={"note": "\\u0000 typed"})
    assert AuditEvent.objects.get(pk=event.pk).payload == {"note": "\\u0000 typed"}


def test_a_rolled_back_change_leaves_no_event_and_the_head_unmoved(chain):
    chain("table:1", 2)
    with pytest.raises(ZeroDivisionError), transaction.atomic():
        record(stream="table:1", actor=None, action="coup.recorded")
        raise ZeroDivisionError  # the change being recorded fails after its event was appended
    assert AuditStream.objects.get(name="table:1").seq == 2
    assert AuditEvent.objects.count() == 2
