"""The heads published outside the database: an anchor no one holding the tables (and the
application's key) can move.

The chain shows an event changed unless the hashes after it were recomputed; the head's seal
(seals.py) shows that unless the key was used too; a report's seal shows it only for the day
it sealed, once that day is closed. An anchor is a line that names, for each stream whose
head moved since the last anchor, its [name, seq, head_hash], written where the database's
owner cannot reach: the application's log (which a production floor ships to another
machine) and, if AUDIT_ANCHOR_FILE is set, that file (an append-only or write-once mount).
Celery beat publishes one every AUDIT_ANCHOR_SECONDS (tasks.heads_anchor); `manage.py
audit_anchor` does it by hand.

`manage.py audit_verify --anchors FILE` then reads the anchors back (from that file or a
log holding them, plain or JSON) and checks that each stream's event number seq still has
the hash the anchor gave: an event up to it rewritten and the chain rebuilt, or a stream cut
back with an older head, is named even when every chain and every head's seal verify.

Which heads moved is kept in AnchoredHead (bookkeeping, not a record of the floor: whoever
edits it only makes the next anchor name more heads, or fewer, which a missing line in the
shipped log shows as plainly as a stopped beat)."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import models, transaction
from django.utils import timezone

from .models import AnchoredHead, AuditEvent, AuditStream

# The first key of every anchor line: how a reader finds anchors among other log lines.
MARK = "chemin_audit_anchor"
VERSION = 1
LOGGER = "chemin.audit.anchor"
ANCHORED_EVENT_MISSING = "anchored_event_missing"
ANCHORED_EVENT_CHANGED = "anchored_event_changed"
_HEX = frozenset("0123456789abcdef")
_CHUNK = 1000
# The heads' bytes per published line: a line, even escaped inside a JSON log line, stays
# under 16 KB, which log shippers may split (Docker's json-file driver does).
LINE_BYTES = 12_000


@dataclass(frozen=True)
class Anchor:
    """One published line: when, and the heads it named."""

    at: str
    heads: list[tuple[str, int, str]]


@dataclass(frozen=True)
class AnchorProblem:
    stream: str
    seq: int
    event_id: int | None
    reason: str
    anchored: str
    now: str | None
    anchored_at: str

    @property
    def message(self) -> str:
        where = f"the anchor of {self.anchored_at} gave seq {self.seq} the hash {self.anchored[:12]}…"
        if self.now is None:
            return f"{where}; the stream no longer holds that event: it was cut back"
        return f"{where}; it is now {self.now[:12]}…: an event up to it was rewritten and the chain rebuilt"


def _moved_heads(everything: bool) -> models.QuerySet[AuditStream]:
    heads = AuditStream.objects.filter(seq__gt=0)
    if not everything:
        heads = heads.filter(
            models.Q(anchored__isnull=True)
            | ~models.Q(anchored__seq=models.F("seq"))
            | ~models.Q(anchored__head_hash=models.F("head_hash"))
        )
    return heads.order_by("name")


def anchor_line(at: str, heads: list[tuple[str, int, str]]) -> str:
    """The anchor as one line of JSON, MARK first."""
    return json.dumps(
        {MARK: VERSION, "at": at, "count": len(heads), "heads": [list(h) for h in heads]},
        separators=(",", ":"),
    )


class AnchorFileError(RuntimeError):
    """AUDIT_ANCHOR_FILE could not be appended to."""


def _append(path: str, line: str) -> None:
    # O_APPEND: every write lands at the end, whoever else appends; fsync before the heads
    # count as anchored.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o640)
    try:
        data = (line + "\n").encode()
        written = 0
        while written < len(data):
            written += os.write(fd, data[written:])
        os.fsync(fd)
    finally:
        os.close(fd)


def _parts(heads: list[tuple[str, int, str]]) -> Iterator[list[tuple[str, int, str]]]:
    part: list[tuple[str, int, str]] = []
    size = 0
    for head in heads:
        # A head's JSON: its name (json.dumps escapes it as the line will), seq and hash.
        length = len(json.dumps(head[0])) + len(str(head[1])) + 64 + 8
        if part and size + length > LINE_BYTES:
            yield part
            part, size = [], 0
        part.append(head)
        size += length
    if part:
        yield part


def heads_anchor(*, everything: bool = False) -> tuple[list[str], int]:
    """Publish the heads that moved since the last anchor (`everything`: every head), to
    the log and to AUDIT_ANCHOR_FILE, then mark them anchored. Returns (the lines, how many
    heads): at most LINE_BYTES of heads a line, so that no log pipeline cuts one; ([], 0) when
    no head moved. Published before marked: a failure in between publishes the same heads
    again next time, never none."""
    with transaction.atomic():
        rows = list(_moved_heads(everything).values_list("pk", "name", "seq", "head_hash"))
        if not rows:
            return [], 0
        now = timezone.now()
        heads = [(name, seq, head_hash) for _pk, name, seq, head_hash in rows]
        lines = [anchor_line(now.isoformat(), part) for part in _parts(heads)]
        # The log first: an anchor file that cannot be written (a mount missing, its
        # permissions) leaves the heads in the log all the same, instead of published nowhere.
        for line in lines:
            logging.getLogger(LOGGER).info("%s", line)
        path = getattr(settings, "AUDIT_ANCHOR_FILE", None)
        if path:
            try:
                _append(path, "\n".join(lines))
            except OSError as exc:
                # Not marked anchored (the transaction rolls back): published again, to the
                # log and the file, next time.
                raise AnchorFileError(
                    f"AUDIT_ANCHOR_FILE={path!r} cannot be appended to ({exc.strerror or exc}): "
                    "the heads went to the log only; they are published again at the next anchor"
                ) from exc
        AnchoredHead.objects.bulk_create(
            [AnchoredHead(stream_id=pk, seq=seq, head_hash=h, anchored_at=now) for pk, _n, seq, h in rows],
            update_conflicts=True,
            unique_fields=["stream"],
            update_fields=["seq", "head_hash", "anchored_at"],
            batch_size=_CHUNK,
        )
    return lines, len(heads)


# --------------------------------------------------------------------------- reading back


def _anchor(value: Any) -> Anchor | None:
    if not isinstance(value, dict) or value.get(MARK) != VERSION:
        return None
    at, heads = value.get("at"), value.get("heads")
    if not isinstance(at, str) or not isinstance(heads, list):
        return None
    out = []
    for head in heads:
        if not (isinstance(head, list) and len(head) == 3):
            return None
        name, seq, head_hash = head
        if not (
            isinstance(name, str)
            and type(seq) is int
            and seq > 0
            and isinstance(head_hash, str)
            and len(head_hash) == 64
            and set(head_hash) <= _HEX
        ):
            return None
        out.append((name, seq, head_hash))
    return Anchor(at, out)


def _in_line(line: str, depth: int = 0) -> Anchor | None:
    """The anchor a line holds: the line itself, a plain log line with it as its message, or
    a JSON log line with it (escaped) as one of its values."""
    start = line.find('{"' + MARK + '"')
    if start >= 0:
        try:
            value, _end = json.JSONDecoder().raw_decode(line, start)
        except ValueError:
            value = None
        found = _anchor(value)
        if found is not None:
            return found
    if depth or MARK not in line:
        return None
    try:
        outer = json.loads(line)
    except ValueError:
        return None
    if isinstance(outer, dict):
        for value in outer.values():
            if isinstance(value, str) and MARK in value:
                return _in_line(value, depth + 1)
    return None


def read_anchors(lines: Iterable[str]) -> tuple[list[Anchor], int]:
    """The anchors among `lines` and how many lines named an anchor but could not be read
    as one (cut short, edited): those are said, not skipped silently."""
    anchors: list[Anchor] = []
    unreadable = 0
    for line in lines:
        if MARK not in line:
            continue
        found = _in_line(line.strip())
        if found is None:
            unreadable += 1
        else:
            anchors.append(found)
    return anchors, unreadable


def _chunks(items: list[Any]) -> Iterator[list[Any]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


def anchors_check(
    anchors: Iterable[Anchor], *, streams: Iterable[str] | None = None
) -> tuple[int, list[AnchorProblem]]:
    """Each anchored [name, seq, hash] (of `streams` only, if given) against the event the
    trail holds at that seq now: (how many distinct heads were checked, the problems sorted
    by stream and seq). With chain_verify's verdict, a head that still matches says every
    event up to it is as it was when the anchor was published."""
    only = None if streams is None else set(streams)
    first_at: dict[tuple[str, int, str], str] = {}
    for anchor in anchors:
        for head in anchor.heads:
            if only is None or head[0] in only:
                first_at.setdefault(head, anchor.at)
    by_stream: dict[str, dict[int, set[str]]] = {}
    for name, seq, head_hash in first_at:
        by_stream.setdefault(name, {}).setdefault(seq, set()).add(head_hash)
    ids: dict[str, int] = {}
    for part in _chunks(sorted(by_stream)):
        ids.update(AuditStream.objects.filter(name__in=part).values_list("name", "pk"))
    problems: list[AnchorProblem] = []
    for name, seqs in sorted(by_stream.items()):
        stored: dict[int, tuple[int, str]] = {}
        if name in ids:
            for part in _chunks(sorted(seqs)):
                rows = AuditEvent.objects.filter(stream_id=ids[name], seq__in=part).values_list(
                    "seq", "pk", "hash"
                )
                stored.update((seq, (pk, h)) for seq, pk, h in rows)
        for seq in sorted(seqs):
            event_id, now = stored.get(seq, (None, None))
            for anchored in sorted(seqs[seq]):
                if anchored != now:
                    reason = ANCHORED_EVENT_MISSING if now is None else ANCHORED_EVENT_CHANGED
                    at = first_at[(name, seq, anchored)]
                    problems.append(AnchorProblem(name, seq, event_id, reason, anchored, now, at))
    return len(first_at), problems
