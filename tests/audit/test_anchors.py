"""The heads published outside the database (audit/anchors.py): each anchor names the heads
that moved since the last one, goes to the log and to AUDIT_ANCHOR_FILE, and `audit_verify
--anchors` holds the trail to it: a rewrite or a cut made by whoever holds both the tables and
the application's key, which every chain and every head's seal pass, is named."""

from __future__ import annotations

import io
import json
import logging

import pytest
from django.core.management import CommandError, call_command
from django.db import transaction

from audit.anchors import (
    ANCHORED_EVENT_CHANGED,
    ANCHORED_EVENT_MISSING,
    LOGGER,
    MARK,
    anchors_check,
    heads_anchor,
    read_anchors,
)
from audit.models import AnchoredHead, AuditEvent, AuditStream
from audit.selectors import chain_verify
from audit.tasks import heads_anchor as heads_anchor_task
from config.observability import PLAIN_FORMAT, JsonFormatter, logging_config

from .conftest import append, reseal
from .test_head_seal import rechain_last

pytestmark = pytest.mark.django_db


def heads_of(lines: list[str] | str) -> dict[str, tuple[int, str]]:
    anchors, unreadable = read_anchors([lines] if isinstance(lines, str) else lines)
    assert unreadable == 0 and anchors
    return {name: (seq, head_hash) for anchor in anchors for name, seq, head_hash in anchor.heads}


def head(name: str) -> tuple[int, str]:
    return AuditStream.objects.filter(name=name).values_list("seq", "head_hash").get()


@pytest.fixture
def anchor_file(settings, tmp_path):
    path = tmp_path / "anchors.jsonl"
    settings.AUDIT_ANCHOR_FILE = str(path)
    return path


def test_an_anchor_names_the_heads_that_moved_since_the_last(anchor_file):
    append("table:1", 3)
    append("table:2", 1)
    lines, count = heads_anchor()
    assert count == 2
    assert heads_of(lines) == {"table:1": head("table:1"), "table:2": head("table:2")}
    assert AnchoredHead.objects.get(stream__name="table:1").seq == 3

    assert heads_anchor() == ([], 0)  # nothing moved: nothing published
    append("table:2", 2)
    lines, count = heads_anchor()
    assert count == 1 and heads_of(lines) == {"table:2": (3, head("table:2")[1])}

    lines, count = heads_anchor(everything=True)  # a first anchor for a new file: every head
    assert count == 2 and set(heads_of(lines)) == {"table:1", "table:2"}

    kept = anchor_file.read_text().splitlines()  # each published line was appended, in order
    assert len(kept) == 3 and [len(heads_of(k)) for k in kept] == [2, 1, 2]
    assert all(json.loads(k)[MARK] == 1 for k in kept)


def test_a_head_rechained_in_place_is_published_again(anchor_file):
    """The bookkeeping compares the hash too: a head moved to another hash at the same seq
    (a forgery between two anchors) is in the next anchor, which then disagrees with the last."""
    append("table:1", 2)
    heads_anchor()
    rechain_last("table:1")
    reseal("table:1")
    lines, count = heads_anchor()
    assert count == 1 and heads_of(lines)["table:1"] == head("table:1")
    anchors, _ = read_anchors(anchor_file.read_text().splitlines())
    checked, problems = anchors_check(anchors)
    assert checked == 2
    assert [(p.stream, p.seq, p.reason) for p in problems] == [("table:1", 2, ANCHORED_EVENT_CHANGED)]


def test_the_anchor_is_logged_at_info_whatever_the_log_level(anchor_file, caplog):
    config = logging_config("plain", "WARNING")
    assert config["loggers"][LOGGER]["level"] == "INFO"
    append("table:1", 1)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        lines, _ = heads_anchor()
    assert [r.getMessage() for r in caplog.records if r.name == LOGGER] == lines


def test_anchors_are_read_back_from_a_plain_or_a_json_log(anchor_file):
    append("table:1", 2)
    (line,), _ = heads_anchor()
    record = logging.LogRecord(LOGGER, logging.INFO, __file__, 1, "%s", (line,), None)
    record.request_id = "-"
    plain = logging.Formatter(PLAIN_FORMAT).format(record)
    as_json = JsonFormatter().format(record)
    assert line not in as_json  # escaped inside the JSON log's message
    other = '{"time": "x", "level": "INFO", "logger": "django", "message": "GET /api/me/ 200"}'
    anchors, unreadable = read_anchors([other, plain, "\n", as_json, "random text"])
    assert unreadable == 0
    assert [a.heads for a in anchors] == [[("table:1", *head("table:1"))]] * 2


@pytest.mark.parametrize(
    "bad",
    [
        '{"chemin_audit_anchor":1,"at":"2026-12-01T00:00:00+00:00","count":1,"heads":[["t",1,"ab',  # cut short
        '{"chemin_audit_anchor":1,"at":"x","heads":[["t",0,"' + "a" * 64 + '"]]}',  # seq 0
        '{"chemin_audit_anchor":1,"at":"x","heads":[["t",true,"' + "a" * 64 + '"]]}',  # a bool for seq
        '{"chemin_audit_anchor":1,"at":"x","heads":[["t",1,"' + "g" * 64 + '"]]}',  # not a hash
        '{"chemin_audit_anchor":1,"at":"x","heads":[["t",1]]}',  # no hash
        '{"chemin_audit_anchor":2,"at":"x","heads":[]}',  # a version this code does not know
        '{"chemin_audit_anchor":1,"at":5,"heads":[]}',
        '{"level":"INFO","message":"{\\"chemin_audit_anchor\\":1,\\"at\\":\\"x\\"}"}',  # no heads
    ],
)
def test_a_line_that_names_an_anchor_but_is_not_one_is_counted(bad):
    assert read_anchors([bad]) == ([], 1)


def test_a_rewrite_by_the_key_holder_passes_the_chains_not_the_anchors(anchor_file):
    append("table:1", 3)
    append("table:2", 2)
    heads_anchor()
    append("table:1", 1)  # later events leave the anchor holding
    victim = rechain_last("table:2")
    reseal("table:2")  # he holds the key: the head's seal is right
    assert chain_verify().ok

    anchors, _ = read_anchors(anchor_file.read_text().splitlines())
    checked, problems = anchors_check(anchors)
    assert checked == 2
    (problem,) = problems
    assert (problem.stream, problem.seq, problem.event_id, problem.reason) == (
        "table:2", 2, victim.pk, ANCHORED_EVENT_CHANGED,
    )  # fmt: skip
    assert problem.now == head("table:2")[1] and problem.anchored != problem.now
    assert "rewritten" in problem.message

    out = io.StringIO()
    with pytest.raises(CommandError) as raised:
        call_command("audit_verify", "--anchors", str(anchor_file), stdout=out)
    assert raised.value.returncode == 1
    text = out.getvalue()
    assert "OK: every chain verifies." in text
    assert f"BROKEN: stream=table:2 seq=2 id={victim.pk} reason=anchored_event_changed" in text
    # Checking only the other stream: its anchor holds.
    out = io.StringIO()
    call_command("audit_verify", "--stream", "table:1", "--anchors", str(anchor_file), stdout=out)
    assert "heads anchored: 1" in out.getvalue() and "OK: every anchored head" in out.getvalue()


def test_a_stream_cut_back_with_an_older_head_is_named(anchor_file, tamper):
    events = append("table:1", 3)
    heads_anchor()
    tamper("DELETE FROM audit_auditevent WHERE id = %s", (events[-1].pk,))
    tamper("UPDATE audit_auditstream SET seq = 2, head_hash = %s WHERE name = 'table:1'", (events[-1].prev_hash,))
    reseal("table:1")
    assert chain_verify().ok
    anchors, _ = read_anchors(anchor_file.read_text().splitlines())
    _checked, (problem,) = anchors_check(anchors)
    assert (problem.stream, problem.seq, problem.event_id, problem.now, problem.reason) == (
        "table:1", 3, None, None, ANCHORED_EVENT_MISSING,
    )  # fmt: skip
    assert "cut back" in problem.message
    # A stream gone as a whole (its head and events deleted) is named the same way.
    tamper("DELETE FROM audit_auditevent WHERE stream_id = (SELECT id FROM audit_auditstream WHERE name = 'table:1')")
    tamper("DELETE FROM audit_anchoredhead")
    tamper("ALTER TABLE audit_auditstream DISABLE TRIGGER audit_stream_no_delete")
    tamper("DELETE FROM audit_auditstream WHERE name = 'table:1'")
    tamper("ALTER TABLE audit_auditstream ENABLE TRIGGER audit_stream_no_delete")
    _checked, problems = anchors_check(anchors)
    assert [(p.stream, p.seq, p.reason) for p in problems] == [("table:1", 3, ANCHORED_EVENT_MISSING)]


def test_audit_verify_with_anchors_that_hold(anchor_file):
    append("table:1", 2)
    heads_anchor()
    append("table:1", 1)
    heads_anchor()
    with open(anchor_file, "a") as f:
        f.write('{"chemin_audit_anchor":1,"at":"cut')  # a line cut short is said, the rest checked
    out = io.StringIO()
    call_command("audit_verify", "--anchors", str(anchor_file), stdout=out)
    text = out.getvalue()
    assert "1 lines name an anchor but are not one" in text
    assert "anchors: 2  heads anchored: 2" in text and "OK: every anchored head is still in its chain." in text


def test_audit_verify_refuses_an_anchor_file_it_cannot_use(tmp_path):
    append("table:1", 1)
    missing = tmp_path / "none.jsonl"
    with pytest.raises(CommandError) as raised:
        call_command("audit_verify", "--anchors", str(missing), stdout=io.StringIO())
    assert raised.value.returncode == 2 and "none.jsonl" in str(raised.value)
    empty = tmp_path / "empty.log"
    empty.write_text("INFO nothing here\n")
    with pytest.raises(CommandError) as raised:
        call_command("audit_verify", "--anchors", str(empty), stdout=io.StringIO())
    assert raised.value.returncode == 2 and "no anchor in it" in str(raised.value)


def test_audit_anchor_command_prints_the_line(anchor_file):
    append("table:1", 1)
    out, err = io.StringIO(), io.StringIO()
    call_command("audit_anchor", stdout=out, stderr=err)
    assert heads_of(out.getvalue().strip()) == {"table:1": head("table:1")}
    assert "1 heads published" in err.getvalue()
    out, err = io.StringIO(), io.StringIO()
    call_command("audit_anchor", stdout=out, stderr=err)
    assert out.getvalue() == "" and "nothing published" in err.getvalue()
    call_command("audit_anchor", "--all", stdout=out, stderr=err)
    assert len(anchor_file.read_text().splitlines()) == 2


def test_the_beat_task_publishes_and_is_scheduled(anchor_file, settings):
    assert settings.CELERY_BEAT_SCHEDULE["audit-heads-anchor"]["task"] == "audit.tasks.heads_anchor"
    append("table:1", 1)
    append("table:2", 1)
    assert heads_anchor_task.apply().get() == 2
    assert heads_anchor_task.apply().get() == 0
    assert AuditEvent.objects.count() == 2  # publishing writes no event (no head moves)


def test_without_an_anchor_file_the_log_is_the_copy(settings, caplog):
    settings.AUDIT_ANCHOR_FILE = None
    append("table:1", 1)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        (line,), count = heads_anchor()
    assert count == 1 and line in caplog.text


def test_an_anchor_file_that_cannot_be_written_leaves_the_heads_in_the_log(settings, tmp_path, caplog):
    """AUDIT_ANCHOR_FILE on a mount that is not there (docker/env.example's /mnt/anchors with
    no volume): the heads still go to the log, the command says which variable is wrong rather
    than a traceback, and nothing is marked anchored, so the next anchor publishes them again."""
    settings.AUDIT_ANCHOR_FILE = str(tmp_path / "no-such-mount" / "anchors.jsonl")
    append("table:1", 1)
    with caplog.at_level(logging.INFO, logger=LOGGER), pytest.raises(CommandError) as raised:
        call_command("audit_anchor", stdout=io.StringIO(), stderr=io.StringIO())
    assert "AUDIT_ANCHOR_FILE=" in str(raised.value) and "no-such-mount" in str(raised.value)
    assert heads_of([r.getMessage() for r in caplog.records if r.name == LOGGER]) == {"table:1": head("table:1")}
    assert not AnchoredHead.objects.exists()
    with pytest.raises(Exception, match="AUDIT_ANCHOR_FILE"):
        heads_anchor_task.apply().get()
    settings.AUDIT_ANCHOR_FILE = str(tmp_path / "anchors.jsonl")
    (line,), count = heads_anchor()
    assert count == 1 and heads_of(line) == {"table:1": head("table:1")}


def test_many_heads_are_published_in_lines_no_log_pipeline_cuts(anchor_file):
    from audit import services

    with transaction.atomic(), services.batch():
        for n in range(400):
            services.record(stream=f"table_session:{n}-" + "\u00e8" * 60, actor=None, action="x", data={})
    lines, count = heads_anchor()
    assert count == 400 and len(lines) > 1
    formatted = [JsonFormatter().format(_record(line)) for line in lines]
    assert all(len(text.encode()) < 16_384 for text in formatted)
    assert len(heads_of(formatted)) == 400
    assert anchor_file.read_text().splitlines() == lines


def _record(line: str) -> logging.LogRecord:
    record = logging.LogRecord(LOGGER, logging.INFO, __file__, 1, "%s", (line,), None)
    record.request_id = "-"
    return record
