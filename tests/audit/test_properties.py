"""Properties of the chain: whatever appends happen over several streams, the trail
verifies; whatever single event is then altered, verification fails and names it."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from audit.hashing import canonical_time, document, document_sql
from audit.models import AuditEvent, AuditStream
from audit.selectors import chain_verify
from audit.services import record

from .conftest import raw_sql, trigger_disabled

pytestmark = pytest.mark.django_db

STREAMS = ["table:1", "table:2", "floor:day"]

# Payload values as the services write them: no floats (cents), no U+0000, no lone
# surrogates (not UTF-8). Other control characters, the separators U+001E/U+001F included,
# are welcome: JSON escapes them.
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
    ("payload_json", "payload_json || ' '"),
    ("payload_json", "'{\"tampered\":1}'"),
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
        assert_database_documents_are_the_written_ones()
        raise Rollback


def assert_database_documents_are_the_written_ones():
    """The fast path would still pass (falling back to the slow one) if PostgreSQL built a
    document differently from the writer: check the two renderings directly."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT e.id, {document_sql('s.name', 'e')} FROM audit_auditevent e "
            "JOIN audit_auditstream s ON s.id = e.stream_id"
        )
        built = dict(cursor.fetchall())
    for e in AuditEvent.objects.select_related("stream"):
        assert built[e.pk] == document(e.stream.name, e.seq, canonical_time(e.at), e.actor_id, e.actor_name,
                                       e.action, e.subject_type, e.subject_id, e.payload_json, e.prev_hash)  # fmt: skip


def verdict(result):
    return (result.ok, result.streams_checked, result.events_checked, result.first_broken)


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
        # The fast path (documents built by PostgreSQL, chunk by chunk) and the slow one
        # (event by event, as on SQLite) name the same break, wherever the chunks end.
        for chunk_size in (1, 3, 2000):
            assert verdict(chain_verify(fast=True, chunk_size=chunk_size)) == verdict(result)
            assert verdict(chain_verify(fast=False, chunk_size=chunk_size)) == verdict(result)
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
