"""The canonical document of an event and its hash: the one definition, shared by the
writer (services.record), the verifier (selectors.chain_verify) and the benchmark.

The document is the TEXT form of the event's columns, in this order, joined by the unit
separator U+001F:

    stream name, seq, time, actor id, actor name, action, subject type, subject id,
    payload JSON, prev_hash

- seq and actor id in decimal; a null actor id is the empty string (ids start at 1);
- time: seconds since the Unix epoch (UTC) with exactly six decimals, e.g.
  "1795984380.100000", or "-0.500000" before 1970 (sign, then magnitude): what
  PostgreSQL's `extract(epoch FROM at)::text` prints for a timestamptz (and `TIME_SQL`, its
  immutable form), for every value the column can hold (BC dates and infinity included), so
  it is one-to-one;
- payload JSON: the stored `payload_json` text (compact, sorted keys, UTF-8; see
  `canonical_json`);
- prev_hash: 64 lowercase hex digits, always the last 64 characters of the document.

No field can contain U+001F: the writer refuses control characters (U+0000..U+001F) in
the text columns, JSON text never contains a raw one (it escapes them), and numbers and
hex digits are digits. So the document is unambiguous: two different events never have the
same document.

Why plain text and not a JSON array: PostgreSQL can build this exact string from the
columns themselves (`document_sql`), so the verifier hashes bytes the database assembled
from what is stored, without decoding or re-encoding anything in Python. Because it is
built from the columns, altering any column of an event changes its document and breaks its
hash. A test pins `document_sql` and `document` equal on arbitrary events.

On PostgreSQL the document (without the stream name) is even stored: the generated column
`doc` (`DOC_SQL`), built by PostgreSQL at INSERT and rebuilt by any UPDATE of a column it
reads, never writable; the verifier reads it instead of building every document on each
run. Tests pin `doc` equal to `document` too."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from typing import Any

SEPARATOR = "\x1f"  # between the fields of one document
RECORD_SEPARATOR = "\x1e"  # between documents, in the verifier's per-chunk text blob
FIELDS = (
    "stream", "seq", "at", "actor_id", "actor_name", "action", "subject_type", "subject_id",
    "payload_json", "prev_hash",
)  # fmt: skip

# One encoder built once: `json.dumps` with non-default options builds a new encoder on
# every call. Same options, same text.
_encode_json = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode
_sha256 = hashlib.sha256
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def canonical_json(value: Any) -> str:
    """The stored and hashed text of a payload: compact, keys sorted, non-ASCII kept as
    is (the column is UTF-8 text). Control characters are escaped by JSON itself."""
    return _encode_json(value)


def canonical_time(at: datetime) -> str:
    """`at` as PostgreSQL prints `extract(epoch FROM at)::text`: seconds since the Unix
    epoch, UTC, exactly six decimals, sign-magnitude ("-0.500000")."""
    micros = (at - _EPOCH) // _MICROSECOND  # exact integer arithmetic, no float
    seconds, fraction = divmod(abs(micros), 1_000_000)
    return f"{'-' if micros < 0 else ''}{seconds}.{fraction:06d}"


def document(
    stream: str,
    seq: int,
    at_text: str,
    actor_id: int | None,
    actor_name: str,
    action: str,
    subject_type: str,
    subject_id: str,
    payload_json: str,
    prev_hash: str,
) -> str:
    """The canonical document from positional values, `at` already in canonical form."""
    return SEPARATOR.join((
        stream, str(seq), at_text, "" if actor_id is None else str(actor_id), actor_name, action,
        subject_type, subject_id, payload_json, prev_hash,
    ))  # fmt: skip


def document_bytes(*values: Any) -> bytes:
    """`document(*values)` encoded in UTF-8: the bytes that are hashed."""
    return document(*values).encode()


def document_hash(*values: Any) -> str:
    """SHA-256 (hex) of `document_bytes(*values)`."""
    return _sha256(document_bytes(*values)).hexdigest()


def event_hash(
    *,
    stream: str,
    seq: int,
    at: datetime,
    actor_id: int | None,
    actor_name: str,
    action: str,
    subject_type: str,
    subject_id: str,
    payload_json: str,
    prev_hash: str,
) -> str:
    """The hash of an event from its column values (`at` a datetime)."""
    return document_hash(
        stream, seq, canonical_time(at), actor_id, actor_name, action, subject_type, subject_id, payload_json,
        prev_hash,
    )  # fmt: skip


# --- The same document, built by PostgreSQL -------------------------------------------

#: SQL of the canonical time of a timestamptz expression (see `canonical_time`): the epoch
#: of the UTC wall-clock time, which is the epoch of the instant. Not `extract(epoch FROM
#: at)` directly: extract of a timestamptz is only STABLE (it may depend on the session's
#: time zone), which a generated column refuses; `AT TIME ZONE 'UTC'` and extract of a
#: timestamp are IMMUTABLE, and print the same text for every value (tests pin it, BC dates
#: and infinity included).
TIME_SQL = "extract(epoch FROM ({} AT TIME ZONE 'UTC'))::text"

#: The PostgreSQL table of the events and its generated column holding each event's
#: document without the stream name (migration 0004, PostgreSQL only): see `DOC_SQL`.
EVENT_TABLE = "audit_auditevent"
DOC_COLUMN = "doc"

_SQL_SEPARATOR = " || E'\\x1f' || "


def _parts(alias: str | None) -> dict[str, str]:
    """Each field's SQL over the event row `alias` (None: bare column names, as in a
    generated column's expression)."""
    col = (lambda name: name) if alias is None else (lambda name: f"{alias}.{name}")
    return {
        "seq": f"{col('seq')}::text",
        "at": TIME_SQL.format(col("at")),
        "actor_id": f"coalesce({col('actor_id')}::text, '')",
        "actor_name": col("actor_name"),
        "action": col("action"),
        "subject_type": col("subject_type"),
        "subject_id": col("subject_id"),
        "payload_json": col("payload_json"),
        "prev_hash": col("prev_hash"),
    }


def document_sql(stream_sql: str | None, alias: str) -> str:
    """A PostgreSQL expression of the document of the event row `alias` (a row of
    audit_auditevent), whose stream name is the text expression `stream_sql`. Field for
    field the same as `document`; if a column is NULL (only possible if someone dropped
    a NOT NULL constraint) the whole document is NULL, which the verifier counts as a
    break, never as a pass.

    With `stream_sql` None, the document without its first field and that field's
    separator (it starts at the seq): what the `doc` column stores (`DOC_SQL`)."""
    parts = {"stream": stream_sql, **_parts(alias)}
    fields = FIELDS if stream_sql is not None else FIELDS[1:]
    return _SQL_SEPARATOR.join(parts[field] for field in fields)


#: The expression of the generated column `doc` (GENERATED ALWAYS AS (...) STORED, migration
#: 0004): the document without "<stream name>\x1f", from the row's own columns, computed by
#: PostgreSQL at INSERT and again at any UPDATE of a column it reads. Every function in it is
#: IMMUTABLE, as a generated column requires. The stream name is left out because it is not
#: a column of the event (the verifier prepends it, from the stream it planned).
DOC_SQL = _SQL_SEPARATOR.join(_parts(None)[field] for field in FIELDS[1:])


def doc_sql_deparsed() -> str:
    """`DOC_SQL` as PostgreSQL prints it back (`pg_get_expr` of the column's generation
    expression; checked on PostgreSQL 15): what the verifier compares the catalog against, so
    that a `doc` whose expression was dropped or replaced is refused. Built from the same
    fields; a test pins it to what the server really prints."""

    def column(name: str) -> str:  # varchar columns are cast to text, payload_json is text
        return name if name == "payload_json" else f"({name})::text"

    terms = {
        "seq": "(seq)::text",
        "at": "(EXTRACT(epoch FROM (at AT TIME ZONE 'UTC'::text)))::text",
        "actor_id": "COALESCE((actor_id)::text, ''::text)",
        **{
            name: column(name)
            for name in ("actor_name", "action", "subject_type", "subject_id", "payload_json", "prev_hash")
        },
    }
    expression = ""
    for field in FIELDS[1:]:
        # a || b || c is ((a || b) || c): each concatenation in its own parentheses
        expression = (
            terms[field] if not expression else f"(({expression} || '{SEPARATOR}'::text) || {terms[field]})"
        )
    return expression
