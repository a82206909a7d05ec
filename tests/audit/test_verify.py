"""chain_verify, audit_verify and day_seal: an intact trail verifies, any edit is named."""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from audit.hashing import TIME_SQL, canonical_time, document, document_hash, document_sql
from audit.models import AuditEvent, AuditStream
from audit.selectors import chain_verify, day_seal
from config.errors import ApplicationError

from .conftest import raw_sql, trigger_disabled

pytestmark = pytest.mark.django_db


def run_verify(*streams: str) -> tuple[int, str]:
    out = io.StringIO()
    args = [arg for name in streams for arg in ("--stream", name)]
    try:
        call_command("audit_verify", *args, stdout=out)
    except CommandError as exc:
        return exc.returncode, out.getvalue() + str(exc)
    return 0, out.getvalue()


def test_an_intact_trail_verifies(chain):
    chain("table:1", 7)
    chain("table:2", 4)
    AuditStream.objects.create(name="table:3")  # a head without events yet

    result = chain_verify()

    assert result.ok and result.first_broken is None
    assert (result.streams_checked, result.events_checked) == (3, 11)
    code, out = run_verify()
    assert code == 0
    assert "streams: 3  events: 11" in out and "OK" in out


def verdict(result):
    """A result without its timing: what the fast and the slow paths must agree on."""
    return (result.ok, result.streams_checked, result.events_checked, result.first_broken)


def both_paths(**kwargs):
    """chain_verify by the fast (PostgreSQL-built documents) and the slow (event by event)
    paths: they must give the same verdict. Returns the fast path's result."""
    fast = chain_verify(fast=True, **kwargs)
    assert verdict(fast) == verdict(chain_verify(fast=False, **kwargs))
    return fast


def test_small_chunks_give_the_same_answer(chain):
    # Events are read in chunks: chain and head boundaries must not depend on where a
    # chunk ends.
    for name in ("a", "b", "c"):
        chain(name, 5)
    for size in (1, 2, 3, 5, 7):
        assert both_paths(chunk_size=size).events_checked == 15


@pytest.mark.parametrize("size", [1, 2, 3, 4, 10])
@pytest.mark.parametrize("victim", [0, 2, 3, 5])
def test_a_break_is_named_the_same_wherever_the_chunks_end(chain, tamper, size, victim):
    chain("a", 2)
    events = chain("b", 6)
    chain("c", 2)
    tamper("UPDATE audit_auditevent SET action = 'x' WHERE id = %s", (events[victim].pk,))
    result = both_paths(chunk_size=size)
    assert (result.first_broken.seq, result.first_broken.reason) == (victim + 1, "hash_mismatch")
    assert (result.streams_checked, result.events_checked) == (2, 2 + victim)


def test_the_database_builds_the_document_the_writer_hashed(chain, auditor):
    # The fast path hashes documents PostgreSQL builds from the columns; the writer hashes
    # hashing.document. Same bytes, including non-ASCII, quotes, backslashes and escaped
    # control characters in the payload.
    chain("table:1", 2, actor=auditor, note='é "q" \\ \x1f\x1e\t 𝄞', pot=-5)
    chain("table:é", 1)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT e.id, {document_sql('s.name', 'e')} FROM audit_auditevent e "
            "JOIN audit_auditstream s ON s.id = e.stream_id ORDER BY e.id"
        )
        built = dict(cursor.fetchall())
    for e in AuditEvent.objects.select_related("stream"):
        written = document(e.stream.name, e.seq, canonical_time(e.at), e.actor_id, e.actor_name, e.action,
                           e.subject_type, e.subject_id, e.payload_json, e.prev_hash)  # fmt: skip
        assert built[e.pk] == written
        assert hashlib.sha256(written.encode()).hexdigest() == e.hash
    assert both_paths().events_checked == 3


def test_an_altered_payload_is_named_by_stream_seq_and_id(chain, tamper):
    chain("table:1", 3)
    victim = chain("table:2", 5)[2]
    chain("table:3", 3)

    tamper("UPDATE audit_auditevent SET payload_json = '{\"i\":2,\"pot\":1}' WHERE id = %s", (victim.pk,))

    broken = chain_verify().first_broken
    assert (broken.stream, broken.seq, broken.event_id, broken.reason) == ("table:2", 3, victim.pk, "hash_mismatch")
    code, out = run_verify()
    assert code == 1
    assert f"stream=table:2 seq=3 id={victim.pk} reason=hash_mismatch" in out


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("action", "'coup.voided'"),
        ("actor_name", "'someone'"),
        ("subject_id", "'42'"),
        ("subject_type", "'tables.coup'"),
        ("actor_id", "NULL"),
        ("payload_json", "payload_json || ' '"),  # even whitespace: the text is what is hashed
        ("payload_json", "replace(payload_json, ':', ': ')"),
        ("at", "at + interval '1 microsecond'"),
        # The same date and time, BC: to_char's 'YYYY' would print it as AD; the epoch cannot.
        ("at", "at - make_interval(years => 2 * extract(year FROM at)::int - 1)"),
        ("at", "'infinity'"),
        ("hash", "repeat('f', 64)"),
        ("hash", "upper(hash)"),
    ],
)
def test_any_altered_column_is_detected_at_that_event(chain, tamper, auditor, column, value):
    victim = chain("table:1", 4, actor=auditor)[1]
    tamper(f"UPDATE audit_auditevent SET {column} = {value} WHERE id = %s", (victim.pk,))
    broken = both_paths().first_broken
    assert (broken.stream, broken.seq, broken.event_id, broken.reason) == ("table:1", 2, victim.pk, "hash_mismatch")


@pytest.mark.parametrize("column", ["action", "payload_json", "prev_hash", "hash", "at"])
def test_a_null_column_is_detected_at_that_event(chain, tamper, column):
    # Only possible once the NOT NULL constraint is dropped; a NULL document must never
    # silently drop out of a chunk.
    events = chain("table:1", 3)
    with trigger_disabled():
        raw_sql(f"ALTER TABLE audit_auditevent ALTER COLUMN {column} DROP NOT NULL")
        raw_sql(f"UPDATE audit_auditevent SET {column} = NULL WHERE id = %s", (events[1].pk,))
    broken = both_paths().first_broken
    reason = "broken_link" if column == "prev_hash" else "hash_mismatch"
    assert (broken.seq, broken.event_id, broken.reason) == (2, events[1].pk, reason)


@pytest.mark.parametrize("chunk_size", [2, 3, 1000])
def test_a_null_document_cannot_be_made_up_for_by_a_separator_in_another(chain, tamper, chunk_size):
    # The fast path splits a chunk's blob of documents on U+001E. The attacker nulls a
    # column of event 3 (so its document is NULL, which string_agg would skip) and hides the
    # whole original document of event 3 behind a U+001E inside event 2's payload: the blob
    # would still split into three parts, each hashing to its stored hash. Every row must
    # give exactly one part, NULL or not: the break is named at event 2.
    events = chain("table:1", 4)
    two, three = (AuditEvent.objects.get(pk=e.pk) for e in events[1:3])
    with connection.cursor() as cursor:
        cursor.execute("SELECT doc FROM audit_auditevent WHERE id = %s", (three.pk,))
        doc3 = cursor.fetchone()[0]
    stuffed = f"{two.payload_json}\x1f{two.prev_hash}\x1etable:1\x1f{doc3[:-65]}"
    with trigger_disabled():
        raw_sql("ALTER TABLE audit_auditevent ALTER COLUMN action DROP NOT NULL")
        raw_sql("UPDATE audit_auditevent SET action = NULL WHERE id = %s", (three.pk,))
        raw_sql(
            "UPDATE audit_auditevent SET payload_json = %s, prev_hash = %s WHERE id = %s",
            (stuffed, three.prev_hash, two.pk),
        )
    broken = both_paths(chunk_size=chunk_size).first_broken
    assert (broken.seq, broken.event_id, broken.reason) == (2, two.pk, "broken_link")


@pytest.mark.parametrize("chunk_size", [2, 3, 1000])
def test_a_null_hash_cannot_be_made_up_for_by_a_longer_one(chain, tamper, chunk_size):
    # The same trick on the stored hashes, concatenated per chunk by the fast path: with the
    # column widened, event 2 holds both its hash and event 3's, and event 3 none. The hash
    # columns are altered though the documents are not: named at event 2.
    events = chain("table:1", 4)
    with trigger_disabled():
        raw_sql("ALTER TABLE audit_auditevent ALTER COLUMN hash TYPE varchar(128), ALTER COLUMN hash DROP NOT NULL")
        raw_sql("UPDATE audit_auditevent SET hash = hash || %s WHERE id = %s", (events[2].hash, events[1].pk))
        raw_sql("UPDATE audit_auditevent SET hash = NULL WHERE id = %s", (events[2].pk,))
    broken = both_paths(chunk_size=chunk_size).first_broken
    assert (broken.seq, broken.event_id, broken.reason) == (2, events[1].pk, "hash_mismatch")


def test_a_renumbered_event_is_detected(chain, tamper):
    events = chain("table:1", 4)
    tamper("UPDATE audit_auditevent SET seq = 1000 WHERE id = %s", (events[1].pk,))
    broken = both_paths().first_broken
    assert (broken.seq, broken.event_id, broken.reason) == (3, events[2].pk, "missing_event")
    tamper("UPDATE audit_auditevent SET seq = 2 WHERE id = %s", (events[1].pk,))
    tamper("UPDATE audit_auditevent SET seq = 5 WHERE id = %s", (events[3].pk,))  # past the head
    broken = both_paths().first_broken
    assert (broken.seq, broken.event_id, broken.reason) == (5, events[3].pk, "missing_event")


def test_an_inserted_event_is_detected_even_without_the_unique_constraint(chain, tamper):
    events = chain("table:1", 3)
    with trigger_disabled():  # (for its SET CONSTRAINTS ALL IMMEDIATE: ALTER needs no queued checks)
        raw_sql("ALTER TABLE audit_auditevent DROP CONSTRAINT audit_event_stream_seq_unique")
    copy = ("stream_id, seq, at, actor_id, actor_name, action, subject_type, subject_id, payload_json, "
            "prev_hash")  # fmt: skip
    # A duplicate of event 2 (another hash), and an event numbered 0 before the first.
    raw_sql(f"INSERT INTO audit_auditevent ({copy}, hash) SELECT {copy}, md5(hash) || md5(hash) "
            "FROM audit_auditevent WHERE id = %s", (events[1].pk,))  # fmt: skip
    broken = both_paths(chunk_size=2).first_broken
    assert (broken.seq, broken.reason) == (2, "missing_event")
    assert broken.event_id not in {e.pk for e in events} and "again" in broken.message
    raw_sql(f"INSERT INTO audit_auditevent ({copy}, hash) SELECT stream_id, 0, at, actor_id, actor_name, action, "
            "subject_type, subject_id, payload_json, prev_hash, repeat('c', 64) FROM audit_auditevent "
            "WHERE id = %s", (events[0].pk,))  # fmt: skip
    broken = both_paths(chunk_size=2).first_broken
    assert (broken.stream, broken.seq, broken.reason) == ("table:1", 0, "missing_event")


def test_a_rewritten_event_with_a_recomputed_hash_breaks_the_next_link(chain, tamper):
    # The attacker edits an event and recomputes its hash: the event now verifies on its
    # own, but the next event still points at the old hash.
    events = chain("table:1", 4)
    victim = AuditEvent.objects.select_related("stream").get(pk=events[1].pk)
    forged = document_hash(
        "table:1", 2, canonical_time(victim.at), None, "", victim.action, "", "", '{"i":1,"pot":0}', victim.prev_hash
    )
    tamper(
        "UPDATE audit_auditevent SET payload_json = %s, hash = %s WHERE id = %s",
        ('{"i":1,"pot":0}', forged, victim.pk),
    )
    broken = both_paths().first_broken
    assert (broken.seq, broken.event_id, broken.reason) == (3, events[2].pk, "broken_link")


def test_a_deleted_event_is_named_as_missing(chain, tamper):
    events = chain("table:1", 5)
    tamper("DELETE FROM audit_auditevent WHERE id = %s", (events[2].pk,))

    broken = chain_verify().first_broken

    # Found at the first event after the gap.
    assert (broken.stream, broken.seq, broken.event_id, broken.reason) == ("table:1", 4, events[3].pk, "missing_event")
    assert "events 3..3 are missing" in broken.message
    code, out = run_verify("table:1")
    assert code == 1 and "reason=missing_event" in out


def test_a_deleted_last_event_is_named_as_missing(chain, tamper):
    events = chain("table:1", 3)
    tamper("DELETE FROM audit_auditevent WHERE id = %s", (events[-1].pk,))
    broken = chain_verify().first_broken
    assert (broken.stream, broken.seq, broken.event_id, broken.reason) == ("table:1", 3, None, "missing_event")


def test_a_deleted_first_event_is_named_as_missing(chain, tamper):
    events = chain("table:1", 3)
    tamper("DELETE FROM audit_auditevent WHERE id = %s", (events[0].pk,))
    broken = chain_verify().first_broken
    assert (broken.seq, broken.event_id, broken.reason) == (2, events[1].pk, "missing_event")


@pytest.mark.parametrize(
    "change",
    [
        "seq = seq - 1",
        "head_hash = repeat('0', 64)",
        "seq = seq - 1, head_hash = (SELECT prev_hash FROM audit_auditevent e WHERE e.stream_id = audit_auditstream.id AND e.seq = audit_auditstream.seq)",
    ],
)
def test_a_changed_head_is_a_head_mismatch(chain, tamper, change):
    events = chain("table:1", 3)
    tamper(f"UPDATE audit_auditstream SET {change} WHERE name = 'table:1'")
    broken = chain_verify().first_broken
    assert (broken.stream, broken.event_id, broken.reason) == ("table:1", events[-1].pk, "head_mismatch")
    code, out = run_verify()
    assert code == 1 and "reason=head_mismatch" in out


def test_a_broken_link_is_named(chain, tamper):
    events = chain("table:1", 3)
    tamper("UPDATE audit_auditevent SET prev_hash = repeat('a', 64) WHERE id = %s", (events[1].pk,))
    broken = chain_verify().first_broken
    assert (broken.seq, broken.event_id, broken.reason) == (2, events[1].pk, "broken_link")


def test_only_the_named_streams_are_verified(chain, tamper):
    chain("table:1", 3)
    victim = chain("table:2", 3)[0]
    tamper("UPDATE audit_auditevent SET action = 'x' WHERE id = %s", (victim.pk,))

    assert chain_verify(streams=["table:1"]).ok
    assert run_verify("table:1")[0] == 0
    assert chain_verify(streams=["table:1", "table:2"]).first_broken.event_id == victim.pk


def test_an_unknown_stream_is_refused(chain):
    chain("table:1")
    with pytest.raises(ApplicationError) as caught:
        chain_verify(streams=["table:1", "nope"])
    assert caught.value.code == "unknown_stream"
    assert caught.value.details == {"streams": ["nope"]}
    code, out = run_verify("nope")
    assert code == 2 and "nope" in out


@pytest.mark.parametrize(
    "at",
    [
        datetime(2026, 3, 29, 0, 59, 59, 999999, tzinfo=UTC),  # the night Rome changes to summer time
        datetime(2026, 10, 25, 1, 0, 0, 0, tzinfo=UTC),  # microsecond 0 keeps its six digits
        datetime(1999, 12, 31, 23, 59, 59, 1, tzinfo=UTC),
        datetime(1969, 12, 31, 23, 59, 59, 500000, tzinfo=UTC),  # before the epoch: "-0.500000"
        datetime(1, 1, 1, tzinfo=UTC),
        datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    ],
)
def test_postgresql_renders_the_time_exactly_as_the_hash_does(at):
    # The verifier has PostgreSQL render `at`; the writer uses canonical_time.
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {TIME_SQL.format('%s::timestamptz')}", (at,))
        assert cursor.fetchone()[0] == canonical_time(at)


def test_the_time_rendering_is_one_to_one_where_to_char_is_not():
    # 2026 BC and 2026 AD print the same with to_char's YYYY; infinity prints NULL.
    values = ["2026-11-29 20:33:00+00", "2026-11-29 20:33:00+00 BC", "infinity", "-infinity"]
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {TIME_SQL.format('t')} FROM unnest(%s::timestamptz[]) t", (values,)
        )
        rendered = [text for (text,) in cursor.fetchall()]
    assert None not in rendered and len(set(rendered)) == len(values)


def test_day_seal_is_the_hash_of_the_sorted_heads(chain):
    chain("table:2", 2)
    chain("table:1", 3)
    heads = {s.name: s for s in AuditStream.objects.all()}
    expected = hashlib.sha256(
        f"table:1:3:{heads['table:1'].head_hash}\ntable:2:2:{heads['table:2'].head_hash}".encode()
    ).hexdigest()

    assert day_seal(streams=["table:2", "table:1"]) == expected
    assert day_seal(streams=["table:1", "table:2", "table:1"]) == expected  # order and repeats do not matter


def test_day_seal_changes_when_any_head_changes(chain, tamper):
    chain("table:1", 2)
    chain("table:2", 2)
    chain("other", 1)
    day = ["table:1", "table:2"]
    before = day_seal(streams=day)

    chain("other", 1)  # a stream outside the day does not change its seal
    assert day_seal(streams=day) == before
    chain("table:2", 1)
    after_append = day_seal(streams=day)
    assert after_append != before
    tamper("UPDATE audit_auditstream SET head_hash = repeat('e', 64) WHERE name = 'table:1'")
    assert day_seal(streams=day) not in {before, after_append}


def test_day_seal_refuses_unknown_streams(chain):
    chain("table:1")
    with pytest.raises(ApplicationError, match="No audit stream"):
        day_seal(streams=["table:1", "table:9"])


@pytest.mark.django_db(transaction=True)
def test_the_command_exit_status_is_1_on_a_broken_chain(chain, tamper):
    # The real process, as cron and monitoring see it.
    events = chain("table:1", 3)
    env = {**os.environ, "DATABASE_URL": _database_url()}
    manage = str(Path(__file__).resolve().parents[2] / "manage.py")

    ok = subprocess.run([sys.executable, manage, "audit_verify"], env=env, capture_output=True, text=True, check=False)
    assert ok.returncode == 0, ok.stderr
    tamper("UPDATE audit_auditevent SET action = 'x' WHERE id = %s", (events[1].pk,))
    bad = subprocess.run([sys.executable, manage, "audit_verify"], env=env, capture_output=True, text=True, check=False)

    assert bad.returncode == 1
    assert f"stream=table:1 seq=2 id={events[1].pk} reason=hash_mismatch" in bad.stdout


def _database_url() -> str:
    s = connection.settings_dict
    auth = s["USER"] + (f":{s['PASSWORD']}" if s["PASSWORD"] else "")
    return f"postgres://{auth}@{s['HOST'] or 'localhost'}:{s['PORT'] or 5432}/{s['NAME']}"


def test_an_emptied_trail_does_not_verify(commissario):
    """TRUNCATE of both audit tables leaves chains that all verify (there are none): the
    floor's rows say which streams must exist, and the whole-trail check names the first."""
    from floor import services as floor_services

    casino = floor_services.casino_create(name="Casinò di Venezia", code="venezia", by=commissario)
    day = floor_services.gaming_day_open(casino=casino, by=commissario)
    assert chain_verify().ok
    raw_sql("SET CONSTRAINTS ALL IMMEDIATE")
    raw_sql("TRUNCATE audit_auditevent, audit_auditstream, audit_anchoredhead")  # the test settings allow it; the owner could
    result = chain_verify()
    assert not result.ok and result.streams_checked == 0
    assert (result.first_broken.reason, result.first_broken.stream) == ("stream_missing", f"casino:{casino.pk}")
    assert "2 missing in all" in result.first_broken.message
    assert chain_verify(streams=[]).ok  # a check of named streams is about those alone
    assert day.audit_stream == f"gaming_day:{day.pk}"
    code, out = run_verify()
    assert code == 1 and "stream_missing" in out


def test_an_open_session_deleted_with_its_stream_is_named(table_session, patron, commissario):
    """A session still open, its seats and its own stream deleted in SQL before any close or
    report: every remaining chain verifies and no row names the stream, but the day's stream
    still says the session was opened (`session_missing`)."""
    from floor import services as floor_services

    floor_services.seat_assign(session=table_session, by=commissario, patron=patron, seat_number=1)
    assert chain_verify().ok
    stream = f"table_session:{table_session.pk}"
    with trigger_disabled():
        raw_sql("DELETE FROM audit_auditevent WHERE stream_id = (SELECT id FROM audit_auditstream WHERE name = %s)",
                (stream,))  # fmt: skip
        raw_sql("ALTER TABLE audit_auditstream DISABLE TRIGGER audit_stream_no_delete")
        raw_sql("DELETE FROM audit_auditstream WHERE name = %s", (stream,))
        raw_sql("ALTER TABLE audit_auditstream ENABLE TRIGGER audit_stream_no_delete")
        raw_sql("DELETE FROM floor_seat WHERE session_id = %s", (table_session.pk,))
        raw_sql("DELETE FROM floor_tablesession WHERE id = %s", (table_session.pk,))
    result = chain_verify()
    assert not result.ok
    opened = AuditEvent.objects.get(action="table_session.opened", subject_id=str(table_session.pk))
    broken = result.first_broken
    assert (broken.reason, broken.stream, broken.seq, broken.event_id) == (
        "session_missing", opened.stream.name, opened.seq, opened.pk)  # fmt: skip
    assert f"table session {table_session.pk} was opened" in broken.message
    code, out = run_verify()
    assert code == 1 and "session_missing" in out
