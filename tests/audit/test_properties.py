"""Properties of the chain: whatever appends happen over several streams, the trail
verifies; whatever single event is then altered, verification fails and names it."""

from __future__ import annotations

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from audit.models import AuditEvent, AuditStream
from audit.selectors import chain_verify
from audit.services import record

from .conftest import raw_sql, trigger_disabled

pytestmark = pytest.mark.django_db

STREAMS = ["table:1", "table:2", "floor:day"]

# Payload values as the services write them: no floats (cents), no U+0000 (jsonb).
text = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=12)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(10**15), max_value=10**15) | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)
appends = st.lists(
    st.tuples(st.sampled_from(STREAMS), st.sampled_from(["coup.recorded", "minimum.changed"]),
              st.dictionaries(text, json_values, max_size=4)),
    min_size=1,
    max_size=25,
)  # fmt: skip

# (column, SQL expression): each alteration changes the stored row for any content.
ALTERATIONS = [
    ("payload", "payload || '{\"tampered\": 1}'::jsonb"),
    ("action", "action || 'x'"),
    ("actor_name", "actor_name || 'x'"),
    ("subject_id", "subject_id || '1'"),
    ("at", "at + interval '1 second'"),
    ("prev_hash", "md5(prev_hash) || md5(prev_hash)"),
    ("hash", "md5(hash) || md5(hash)"),
    ("seq", "seq + 1000"),
    # Moved to an empty stream, so (stream, seq) stays unique.
    ("stream_id", "(SELECT id FROM audit_auditstream WHERE name = 'elsewhere')"),
]


class Rollback(Exception):
    """Ends an example: every example starts from an empty trail."""


SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@SETTINGS
@given(appends=appends)
def test_any_sequence_of_appends_verifies(appends):
    with pytest.raises(Rollback), transaction.atomic():
        for stream, action, data in appends:
            with transaction.atomic():
                record(stream=stream, actor=None, action=action, data=data)
        result = chain_verify()
        assert result.ok, result.first_broken
        assert result.events_checked == len(appends)
        assert result.streams_checked == len({stream for stream, _, _ in appends})
        raise Rollback


@SETTINGS
@given(appends=appends, pick=st.integers(min_value=0), alteration=st.sampled_from(ALTERATIONS))
def test_altering_any_one_event_is_detected(appends, pick, alteration):
    column, expression = alteration
    with pytest.raises(Rollback), transaction.atomic():
        events = []
        for stream, action, data in appends:
            with transaction.atomic():
                events.append(record(stream=stream, actor=None, action=action, data=data))
        if column == "stream_id":
            AuditStream.objects.create(name="elsewhere")
        victim = events[pick % len(events)]

        with trigger_disabled():
            changed = raw_sql(f"UPDATE audit_auditevent SET {column} = {expression} WHERE id = %s", (victim.pk,))
        assert changed == 1

        result = chain_verify()
        assert not result.ok
        broken = result.first_broken
        if column in {"seq", "stream_id"}:
            # A renumbered or moved event leaves a gap or a bad head where it was, or
            # breaks the chain it lands in: the break is in one of the two streams.
            landed_in = AuditEvent.objects.get(pk=victim.pk).stream.name
            assert broken.stream in {victim.stream.name, landed_in}
        else:
            assert (broken.stream, broken.seq, broken.event_id) == (victim.stream.name, victim.seq, victim.pk)
            assert broken.reason == ("broken_link" if column == "prev_hash" else "hash_mismatch")
        raise Rollback
