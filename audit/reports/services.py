"""Building, storing and verifying the end-of-day report (RULES.md §8).

report_build is what the Celery task calls; it is safe to run twice: (gaming day, version)
is unique, and the build runs in ONE transaction with the report row locked, so a second
run waits for the first and then finds it done. The transaction is REPEATABLE READ: every
figure and the day's seal come from one snapshot of the database. Files are written under
MEDIA_ROOT/REPORTS_DIR at a path fixed by the report, through a temporary file
(`<name>.<pid>.part`) and an atomic rename, both fsynced before the commit; a rolled-back
build leaves at most a file the retry overwrites, and the partial files of a build killed
mid-way are removed by the next build of that report, under its lock, before it writes."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import os
import re
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from audit.models import AuditEvent, AuditStream, DayReport, ReportFile, UnclaimedDeposit
from audit.selectors import (
    built_reports_missing,
    chain_verify,
    heads_altered,
    heads_digest,
    heads_then,
    seal_of,
    sealed_head_changes,
    stream_heads,
    summary_digest,
)
from audit.services import record
from config.errors import ApplicationError, Conflict
from floor import selectors as floor_selectors
from tables import report_selectors as rs
from tables.models import CashExchange

from . import cash, patrons, unclaimed
from .builder import build_document
from .ledger import books_as_played
from .registers import books_stream, books_verify, day_counts

if TYPE_CHECKING:
    from floor.models import GamingDay

logger = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
FORMATS = ("csv", "xlsx", "pdf")
_HASH_CHUNK = 1 << 20


def writers() -> dict[str, Callable]:
    """The exports' writers, format -> write(doc, fp)."""
    from audit.exports import WRITERS

    return {fmt: WRITERS[fmt] for fmt in FORMATS}


def reports_stream(gaming_day_id: int) -> str:
    # Report builds are recorded apart from the streams they seal (sealing one's own
    # record would change the seal it records).
    return f"reports:{gaming_day_id}"


def sealed_streams(*, gaming_day_id: int, version: int) -> list[str]:
    """The streams a report seals: the day's floor stream, each session's stream, and from
    version 2 on (which includes the signed control register) the day's books; version 1
    too when the day has unclaimed deposits, which it lists: they are recorded in the books
    stream, whose head the report's deposit rows are then held to (`unclaimed_mismatch`);
    and when a drawer was counted late (after the close, before this build: it lists the
    count, whose event is in the books stream, held to its head, `drawer_mismatch`)."""
    names = [f"gaming_day:{gaming_day_id}"]
    names += [f"table_session:{pk}" for pk in floor_selectors.day_session_ids(gaming_day_id=gaming_day_id)]
    books = books_stream(gaming_day_id)
    if (
        version > 1
        or UnclaimedDeposit.objects.filter(gaming_day_id=gaming_day_id).exists()
        or AuditEvent.objects.filter(stream__name=books, action__in=cash.DRAWER_ACTIONS).exists()
    ):
        names.append(books)
    # A session with no event of its own has no stream: nothing of it to seal.
    existing = set(AuditStream.objects.filter(name__in=names).values_list("name", flat=True))
    return sorted(name for name in names if name in existing)


def file_sha256(path: Path) -> tuple[str, int]:
    digest, size = hashlib.sha256(), 0
    with open(path, "rb") as fp:
        while chunk := fp.read(_HASH_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def report_dir(report: DayReport, day: GamingDay) -> str:
    return f"{settings.REPORTS_DIR}/{day.date.isoformat()}-day{day.pk}/v{report.version}"


def report_file_stem(report: DayReport, day: GamingDay) -> str:
    """The name of the report's files, without the format's extension."""
    return f"chemin-{day.date.isoformat()}-v{report.version}"


def _remove_stale_partials(directory: Path, name: str) -> None:
    """Remove the partial files (`<name>.<fmt>.<pid>.part`) a killed build of this report
    left. Called under the report's row lock: no other build of it is writing now, so every
    such file is stale. Only this report's own names: nothing else in the directory."""
    pattern = re.compile(rf"{re.escape(name)}\.(?:{'|'.join(FORMATS)})\.\d+\.part")
    for path in directory.iterdir():
        if pattern.fullmatch(path.name) and path.is_file():
            path.unlink(missing_ok=True)
            logger.info("report build: removed the stale partial file %s", path)


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def report_request(*, gaming_day_id: int, version: int = 1) -> DayReport:
    """The report row of (day, version), created if absent (ON CONFLICT DO NOTHING)."""
    if version != 1 and not DayReport.objects.filter(gaming_day_id=gaming_day_id, version=version).exists():
        raise ApplicationError("unknown_report_version", "Versions after 1 come from a signed control register.",
                               details={"version": version}, status_code=404)  # fmt: skip
    DayReport.objects.bulk_create(
        [DayReport(gaming_day_id=gaming_day_id, version=version, requested_at=timezone.now(),
                   language=settings.REPORT_LANGUAGE)],
        ignore_conflicts=True,  # a report requested before keeps its language
    )
    return DayReport.objects.get(gaming_day_id=gaming_day_id, version=version)


@contextmanager
def _snapshot(*, read_only: bool = False) -> Iterator[None]:
    """One transaction; REPEATABLE READ when it is the outermost (one snapshot for every
    figure and the seal), READ ONLY when asked (the database guarantees verify writes
    nothing). Inside a caller's transaction (tests) its view is used."""
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                mode = ", READ ONLY" if read_only else ""
                cursor.execute(f"SET TRANSACTION ISOLATION LEVEL REPEATABLE READ{mode}")
        yield


class _Progress:
    """Counts rows as the writers pull them; reports at most every `every` seconds."""

    def __init__(self, total: int, report: Progress | None, every: float = 0.5):
        self.done, self.total, self.report, self.every = 0, max(total, 1), report, every
        self.last = 0.0

    def tick(self) -> None:
        self.done += 1
        if self.report is not None and self.done & 255 == 0:
            now = time.monotonic()
            if now - self.last >= self.every:
                self.last = now
                self.report(min(self.done, self.total), self.total)

    def finish(self) -> None:
        if self.report is not None:
            self.report(self.total, self.total)


class BuildGaveUp(Exception):
    """A build not attempted: REPORT_BUILD_MAX_ATTEMPTS attempts before it were interrupted
    (their process killed). The report is FAILED with its `report.failed` event; the task
    ends (acknowledged: not redelivered) and the sweep leaves it for the operator."""


def gave_up_error(attempts: int) -> str:
    return f"gave up after {attempts} attempts: the build was interrupted each time (worker killed?)"


def report_build(
    *, gaming_day_id: int, version: int = 1, task_id: str = "", progress: Progress | None = None,
    retry: bool = False,
) -> DayReport:
    """Build the report of a closed day (version 1: at the close; >= 2: with a signed
    control register), write CSV, XLSX and PDF with their SHA-256, record it. Returns the
    report, built now or before.

    Each attempt is counted (`attempts`) and committed before its work, so an attempt whose
    process is killed (the OOM killer, a crash in a PDF library) leaves its count: with
    acks_late and reject-on-worker-lost the broker redelivers it at once, and a build that
    kills its process every time would loop forever with the report "being built". An
    attempt that finds REPORT_BUILD_MAX_ATTEMPTS already counted does not build: the report
    goes FAILED, "gave up ...", with its event, and BuildGaveUp is raised. A failure recorded
    with its error starts the count again (the sweep retries it as before). `retry` (the
    operator's `manage.py report_build`) starts the count again with this attempt."""
    started = time.perf_counter()
    day = floor_selectors.gaming_day_get(pk=gaming_day_id)
    if day.is_open:
        raise Conflict("day_not_closed", "The gaming day is still open.", details={"gaming_day": day.pk})
    report = report_request(gaming_day_id=day.pk, version=version)
    if report.status == DayReport.Status.DONE:
        return report
    # Committed at once (autocommit), before the work; the task id too, so the API can follow
    # the task's progress. (It waits for a build of this report running now: its row lock.)
    changes: dict[str, Any] = {"attempts": 1 if retry else F("attempts") + 1}
    if task_id:
        changes["task_id"] = task_id
    counted = DayReport.objects.filter(pk=report.pk).exclude(status=DayReport.Status.DONE)
    if not retry:
        counted = counted.filter(attempts__lt=settings.REPORT_BUILD_MAX_ATTEMPTS)
    if not counted.update(**changes):
        built = DayReport.objects.filter(pk=report.pk, status=DayReport.Status.DONE).first()
        if built is not None:
            return built  # by a concurrent run, whose lock the count waited for
        attempts = _report_gave_up(report=report)
        if attempts is None:  # the operator's build started meanwhile, and failed or was built
            return report_build(gaming_day_id=gaming_day_id, version=version, task_id=task_id, progress=progress)
        raise BuildGaveUp(
            f"report version {version} of gaming day {day.pk}: {gave_up_error(attempts)}; "
            f"build it with `manage.py report_build {day.pk} {version}`"
        )
    try:
        with _snapshot():
            report = DayReport.objects.select_for_update(of=("self",)).select_related(
                "control_register__first_signer", "control_register__second_signer"
            ).get(pk=report.pk)
            if report.status == DayReport.Status.DONE:
                return report  # built by a concurrent run while we waited for its lock
            _build(report, day, progress, started)
    except Exception as exc:
        # Two runs at once (the message delivered twice, the sweep's and the close's, two
        # workers): the second waits for the first's row lock, and when the first commits,
        # REPEATABLE READ refuses the second its lock ("could not serialize access due to
        # concurrent update"): the report is built, by the other run.
        built = DayReport.objects.filter(pk=report.pk, status=DayReport.Status.DONE).first()
        if built is not None:
            return built
        _report_failed(report=report, error=f"{type(exc).__name__}: {exc}"[:2000])
        raise
    return report


@transaction.atomic
def _report_failed(*, report: DayReport, error: str) -> None:
    """The report FAILED, with its reason, and its `report.failed` event, in one transaction
    (as `report.built` goes with DONE): the trail says each build that failed and why, not
    only the one that succeeded. Never over a report built meanwhile (a concurrent run), and
    no second event for the same failure repeated (the sweep retries every 15 minutes). The
    attempt ended, with its error: the count of interrupted attempts starts again."""
    row = DayReport.objects.select_for_update().filter(pk=report.pk).first()
    if row is None or row.status == DayReport.Status.DONE:
        return
    row.attempts = 0
    _failed(row, error, fields=["attempts"])


@transaction.atomic
def _report_gave_up(*, report: DayReport) -> int | None:
    """REPORT_BUILD_MAX_ATTEMPTS attempts interrupted: the report FAILED, saying so, and its
    `report.failed` event (not twice), in one transaction; its count is kept (reports_missing
    enqueues no FAILED report at the cap). Returns the attempts counted; None if the report
    was built, or its count started again (the operator's build), meanwhile."""
    row = DayReport.objects.select_for_update().get(pk=report.pk)
    if row.status == DayReport.Status.DONE or row.attempts < settings.REPORT_BUILD_MAX_ATTEMPTS:
        return None
    error = gave_up_error(row.attempts)
    logger.error("report version %s of gaming day %s %s; not built again but by `manage.py report_build %s %s`",
                 row.version, row.gaming_day_id, error, row.gaming_day_id, row.version)  # fmt: skip
    _failed(row, error)
    return row.attempts


def _failed(row: DayReport, error: str, fields: tuple[str, ...] | list[str] = ()) -> None:
    # The build the sweep enqueued again (report_requeue) has ended: no longer retrying.
    row.requeued_at = None
    fields = [*fields, "requeued_at"]
    if row.status == DayReport.Status.FAILED and row.error == error:
        row.save(update_fields=fields)
        return
    old = {"status": row.status, "error": row.error}
    row.status, row.error = DayReport.Status.FAILED, error
    row.save(update_fields=["status", "error", *fields])
    record(stream=reports_stream(row.gaming_day_id), actor=None, action="report.failed", subject=row,
           data={"version": row.version, "old": old, "new": {"status": row.status, "error": error}})  # fmt: skip


@transaction.atomic
def report_requeue(*, gaming_day_id: int, version: int) -> str | None:
    """The sweep enqueues a FAILED report again: marked `requeued_at` (now), with the id of
    the task about to be sent as its `task_id`, before the message is sent, so that the desk
    and the API say it is being built again (`retrying`, and the new task's progress) rather
    than only "failed" while it waits for, and goes through, its new build. Its status stays
    FAILED, with its error: the outcome of its last build, which the trail recorded
    (`report.failed`); the new build's outcome replaces it (DONE with `report.built`, or
    FAILED again), and ends the retry (requeued_at emptied). No event: like `attempts` and
    `task_id`, the queue's bookkeeping, not a change of the report's status.

    Not a report that gave up (REPORT_BUILD_MAX_ATTEMPTS attempts interrupted: the sweep
    never enqueues it, it stays FAILED for the operator's `manage.py report_build`), nor one
    built, pending, or being built (its row locked) meanwhile. Returns the task id to send
    the build with, or None (send it with a task id of its own)."""
    row = (
        DayReport.objects.select_for_update(skip_locked=True)
        .filter(gaming_day_id=gaming_day_id, version=version, status=DayReport.Status.FAILED,
                attempts__lt=settings.REPORT_BUILD_MAX_ATTEMPTS)
        .first()
    )  # fmt: skip
    if row is None:
        return None
    row.requeued_at, row.task_id = timezone.now(), str(uuid.uuid4())
    row.save(update_fields=["requeued_at", "task_id"])
    return row.task_id


def report_requeue_lost(*, gaming_day_id: int, version: int, task_id: str) -> None:
    """The message report_requeue marked a report for could not be sent (the broker out of
    reach): not retrying after all, until the next sweep. (Only if the row is still that
    retry's: a build that started or ended since says so itself.)"""
    DayReport.objects.filter(
        gaming_day_id=gaming_day_id, version=version, status=DayReport.Status.FAILED, task_id=task_id
    ).update(requeued_at=None)


def _build(report: DayReport, day: GamingDay, progress: Progress | None, started: float) -> None:
    streams = sealed_streams(gaming_day_id=day.pk, version=report.version)
    heads = stream_heads(streams=streams)
    seal = seal_of(heads)
    ticker = _Progress(0, progress)
    built = build_document(
        day=day, version=report.version, seal=seal, streams=streams, register=report.control_register,
        count_history=list(day_counts(gaming_day_id=day.pk)), tick=ticker.tick, language=report.language,
    )  # fmt: skip
    fmts = writers()
    ticker.total = max(built.rows * len(fmts), 1)
    built.summary["rows"] = ticker.total  # rows written over the formats: the progress total
    directory = Path(settings.MEDIA_ROOT) / report_dir(report, day)
    directory.mkdir(parents=True, exist_ok=True)
    name = report_file_stem(report, day)
    _remove_stale_partials(directory, name)
    files = []
    for fmt, write in fmts.items():
        relative = f"{report_dir(report, day)}/{name}.{fmt}"
        final = Path(settings.MEDIA_ROOT) / relative
        partial = final.with_name(final.name + f".{os.getpid()}.part")
        try:
            with open(partial, "wb") as fp:
                write(built.document, fp)
                # On disk before the rename, and the rename before the commit (below): a power
                # cut after the commit never leaves a DONE report with a short or empty file.
                fp.flush()
                os.fsync(fp.fileno())
            os.replace(partial, final)
        except BaseException:
            partial.unlink(missing_ok=True)  # a writer that raised leaves no partial behind
            raise
        sha, size = file_sha256(final)
        files.append(ReportFile(report=report, format=fmt, path=relative, size=size, sha256=sha,
                                created_at=timezone.now()))  # fmt: skip
    _fsync_directory(directory)  # the renames themselves
    ticker.finish()
    ReportFile.objects.filter(report=report).delete()  # none, unless a build was cut off mid-commit
    ReportFile.objects.bulk_create(files)
    report.status, report.error, report.requeued_at = DayReport.Status.DONE, "", None
    report.seal, report.sealed_streams, report.sealed_heads = seal, streams, heads
    report.summary = built.summary
    report.built_at, report.seconds = timezone.now(), time.perf_counter() - started
    report.save()
    record(
        stream=reports_stream(day.pk),
        actor=None,
        action="report.built",
        subject=report,
        data={
            "version": report.version,
            "seal": seal,
            "streams": len(streams),
            "files": {f.format: f.sha256 for f in files},
            "expected_cagnotte": built.summary["expected_cagnotte"],
            # The heads the seal is over, as a count and a digest: the report's row keeps them
            # unchained, and emptied there they made it look like a report from before them.
            "sealed_heads": heads_digest(heads),
            # The streams sealed, by name: the trail then says they must exist, even once
            # the report's row is gone (audit.selectors._trail_streams).
            "sealed_streams": streams,
            # The whole summary, as a digest of what the row now holds (read back: the
            # database's JSON is what verify reads), not only the expected cagnotte.
            "summary_sha256": summary_digest(
                DayReport.objects.filter(pk=report.pk).values_list("summary", flat=True).get()
            ),
        },
    )


def reports_missing(*, now: dt.datetime | None = None) -> list[tuple[int, int]]:
    """The reports the sweep (audit.tasks.reports_sweep) must enqueue, once more or for the
    first time, as (gaming day, version), in that order:

    - a closed day with no version-1 row: the close could not reach the broker;
    - a report of any version FAILED: the build raised (its error is kept on the row until a
      build succeeds); the sweep marks it retrying as it enqueues it (report_requeue);
    - a report of any version PENDING for longer than the broker's visibility timeout: its
      message was lost. Version 1's row is created by its build (requested_at, the build's
      first start): a worker killed mid-build whose message did not survive (Redis restarted
      without persistence). A later version's row is created with the second signature of
      its control register, whose enqueue may have failed (Redis down then): nothing else
      would ever build it. Within the timeout the broker itself redelivers a killed
      worker's message (acks_late), and a message still queued is not yet late.

    Not a report whose last REPORT_BUILD_MAX_ATTEMPTS attempts were interrupted (their process
    killed): enqueued, it would kill a worker's process again every 15 minutes. It is marked
    FAILED, "gave up ...", here if its last build did not (a worker killed whole, its message
    lost), and logged (ERROR) at each sweep, for the operator's `manage.py report_build`.

    A report being built right now is never listed: the build holds the report's row lock
    for its whole transaction, and this query skips locked rows. The status has no
    "running" of its own; the lock is the sign of life. Listing a report whose message is
    still queued is harmless: the build is idempotent (the second run finds it done)."""
    have = DayReport.objects.filter(version=1).values_list("gaming_day_id", flat=True)
    wanted = {
        (day_id, 1)
        for day_id in floor_selectors.gaming_days_closed_without(exclude_ids=have).values_list("pk", flat=True)
    }
    timeout = settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("visibility_timeout", 3600)
    stuck_before = (now or timezone.now()) - dt.timedelta(seconds=timeout)
    cap = settings.REPORT_BUILD_MAX_ATTEMPTS
    with transaction.atomic():
        retry = list(
            DayReport.objects.select_for_update(skip_locked=True)
            .filter(Q(status=DayReport.Status.FAILED) | Q(status=DayReport.Status.PENDING, requested_at__lt=stuck_before))
            .order_by("gaming_day_id", "version")
            .values_list("pk", "gaming_day_id", "version", "status", "requested_at", "error", "attempts")
        )
    for pk, day_id, version, status, requested_at, error, attempts in retry:
        if attempts >= cap and _report_gave_up(report=DayReport(pk=pk)) is not None:
            continue  # logged (ERROR) by _report_gave_up
        logger.warning(
            "reports_sweep: report version %s of gaming day %s is %s (requested %s)%s; enqueuing it again",
            version, day_id, status, requested_at.isoformat(), f": {error[:200]}" if error else "",
        )  # fmt: skip
        wanted.add((day_id, version))
    return sorted(wanted)


def _as_built(report: DayReport, files: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The report as its build recorded it in the hash-chained `report.built` event: the
    seal, its sealed heads (count and digest; not in older events), each file's SHA-256 and
    the summary (its digest, `summary_sha256`: any figure; older events recorded only the
    expected cagnotte, which is then all that is held). The report's rows are not chained:
    a file replaced together with its stored checksum, a seal or a summary rewritten, shows
    here (`summary_mismatch`, `recorded`: which record it fails). And every other report of
    the day the trail says was built must still be there (`report_missing`): a later version
    deleted left this one served as current."""
    event = (
        AuditEvent.objects.filter(
            stream__name=reports_stream(report.gaming_day_id),
            action="report.built",
            subject_type=DayReport._meta.label_lower,
            subject_id=str(report.pk),
        )
        .order_by("-seq")
        .first()
    )
    reasons: list[dict[str, Any]] = [
        {"code": "report_missing", "report": gone["report"], "version": gone["version"], "event": gone["event_id"]}
        for gone in built_reports_missing(stream=reports_stream(report.gaming_day_id))
    ]  # fmt: skip
    if event is None:
        return [*reasons, {"code": "build_record_missing"}]
    try:
        built = event.payload
    except ValueError:
        built = None
    if not isinstance(built, dict):  # rewritten into something no build writes
        return [*reasons, {"code": "build_record_unreadable", "event": event.pk}]
    files_recorded = built.get("files")
    recorded = dict(files_recorded) if isinstance(files_recorded, dict) else {}
    for entry in files:
        sha = recorded.pop(entry["format"], None)
        if entry["ok"] and sha != entry["sha256"]:  # (a file that fails against its row is a reason already)
            entry["ok"] = False
            reasons.append({"code": "checksum_mismatch", "format": entry["format"], "recorded_sha256": sha,
                            "event": event.pk})  # fmt: skip
    reasons += [{"code": "file_missing", "format": fmt, "event": event.pk} for fmt in sorted(recorded)]
    if built.get("seal") != report.seal:
        reasons.append({"code": "seal_mismatch", "stored": report.seal, "recorded": built.get("seal"),
                        "event": event.pk})  # fmt: skip
    recorded_heads = built.get("sealed_heads")  # absent from the events of builds before it was kept
    if heads_altered(report.sealed_heads, recorded_heads):
        reasons.append({"code": "sealed_heads_altered", "stored": len(report.sealed_heads or []),
                        "recorded": recorded_heads.get("count") if isinstance(recorded_heads, dict) else None,
                        "event": event.pk})  # fmt: skip
    recorded_summary = built.get("summary_sha256")  # absent from the events of builds before it was kept
    if recorded_summary is not None and recorded_summary != summary_digest(report.summary):
        reasons.append({"code": "summary_mismatch", "recorded": "summary_sha256", "event": event.pk})
    elif built.get("expected_cagnotte") != (report.summary or {}).get("expected_cagnotte"):
        reasons.append({"code": "summary_mismatch", "recorded": "expected_cagnotte", "event": event.pk})
    return reasons


def _whole(value: Any) -> int:
    """A figure of a stored document or payload as an integer; 0 when it holds none."""
    try:
        return int(value or 0)
    except (ValueError, TypeError):
        return 0


def _levy(doc: str) -> int:
    """A coup.settled event's levy; 0 when its payload cannot say it (rewritten: the ledger
    names the event, event_unreadable)."""
    try:
        payload = json.loads(doc)
    except ValueError:
        return 0
    return _whole(payload.get("cagnotte")) if isinstance(payload, dict) else 0


def _levies_as_played(report: DayReport) -> list[dict[str, Any]]:
    """Each table's levies in the report against the levies of the `coup.settled` events in
    its sessions' sealed chains (as of the build). The report's figures come from the coup
    and posting rows, which no trigger or chain protects: a levy edited there in SQL went
    into the next version of the report, and every other check passed."""
    heads = {name: seq for name, seq, _ in (report.sealed_heads or [])}
    tables = (report.summary or {}).get("tables")
    if not heads or not isinstance(tables, dict):
        return []  # a report built before its heads were kept, or with no per-table figures
    in_trail: dict[int, int] = {}
    for session in floor_selectors.day_sessions(gaming_day_id=report.gaming_day_id):
        stream = session.audit_stream
        if stream not in heads:
            continue
        payloads = AuditEvent.objects.filter(
            stream__name=stream, action="coup.settled", seq__lte=heads[stream]
        ).values_list("payload_json", flat=True)
        # Streamed in chunks: a day of a million coups is read once, never held whole.
        levies = sum(_levy(doc) for doc in payloads.iterator(chunk_size=2000))
        in_trail[session.table.number] = in_trail.get(session.table.number, 0) + levies
    reasons = []
    # The levies of the coups and the expected cagnotte (the house postings): one figure when
    # nothing was edited, both recorded by each coup's settlement.
    for figure in ("levies_recorded", "expected_cagnotte"):
        in_report = {
            _whole(number): _whole((figures or {}).get(figure) if isinstance(figures, dict) else None)
            for number, figures in tables.items()
        }  # (a summary edited into other shapes is summary_mismatch's to name: no error here)
        reasons += [
            {"code": "levies_mismatch", "table": number, "figure": figure, "in_report": in_report.get(number, 0),
             "in_trail": in_trail.get(number, 0)}
            for number in sorted(set(in_trail) | set(in_report))
            if in_report.get(number, 0) != in_trail.get(number, 0)
        ]  # fmt: skip
    return reasons


def _listed_as_recorded(report: DayReport, key: str) -> dict[str, str] | None:
    """The rows a report listed under `summary[key]["as_recorded"]` (id -> its payload's
    digest); None for a report built before it listed them (or reshaped: summary_mismatch
    says it)."""
    held = (report.summary or {}).get(key)
    listed = held.get("as_recorded") if isinstance(held, dict) else None
    return listed if isinstance(listed, dict) else None


def _differing(listed: dict[str, str], trail: dict[str, Any]) -> tuple[dict[str, str], list[str]]:
    """The trail's payloads as digests, and the ids listed otherwise than the trail said, or
    on one side only, in id order."""
    recorded = {pk: unclaimed.payload_digest(payload) for pk, payload in trail.items()}
    differ = sorted((pk for pk in set(listed) | set(recorded) if listed.get(pk) != recorded.get(pk)),
                    key=lambda pk: (len(pk), pk))  # fmt: skip
    return recorded, differ


def _session_heads(report: DayReport) -> dict[str, int]:
    """The heads the report sealed of the day's session streams."""
    return {name: seq for name, seq, _ in report.sealed_heads or [] if name.startswith("table_session:")}


def _unclaimed_as_built(report: DayReport) -> list[dict[str, Any]]:
    """The unclaimed deposits the report lists against the `unclaimed.deposited` and
    `unclaimed.returned` events of the day's books stream as of the build (its sealed head;
    a report that sealed no books stream listed none, and the trail then holds none as
    sealed). The summary keeps each listed deposit as its payload's digest (its totals come
    from the same rows); the rows have no chain: a deposit edited in SQL before the build
    went into the report, and, put back since, passes the books' own check. Each deposit
    listed otherwise than the trail then said, or on one side only: `unclaimed_mismatch`
    (`deposit`, `table`, `listed_in_report`, `recorded_in_trail`). A return recorded
    after the build is a later event, not a difference."""
    listed = _listed_as_recorded(report, "unclaimed")
    if listed is None:
        return []
    stream = books_stream(report.gaming_day_id)
    head = next((seq for name, seq, _ in report.sealed_heads or [] if name == stream), None)
    trail: dict[str, Any] = {}
    if head is not None:
        events = AuditEvent.objects.filter(
            stream__name=stream, action__in=("unclaimed.deposited", "unclaimed.returned"), seq__lte=head
        ).order_by("seq").values_list("subject_id", "payload_json")
        for subject, doc in events.iterator(chunk_size=2000):
            try:
                trail[subject] = json.loads(doc)["new"]
            except (ValueError, KeyError, TypeError):
                continue  # rewritten: the chain check names the event; its deposit differs here
    recorded, differ = _differing(listed, trail)
    if not differ:
        return []
    sessions = {s.pk: s.table.number for s in floor_selectors.day_sessions(gaming_day_id=report.gaming_day_id)}
    now = dict(UnclaimedDeposit.objects.filter(gaming_day_id=report.gaming_day_id).values_list("pk", "session_id"))
    reasons = []
    for pk in differ:
        said = trail.get(pk)
        session = said.get("session") if isinstance(said, dict) else None
        deposit = _whole(pk)
        reasons.append({"code": "unclaimed_mismatch", "deposit": deposit,
                        "table": sessions.get(session if isinstance(session, int) else now.get(deposit)),
                        "listed_in_report": pk in listed, "recorded_in_trail": pk in recorded})  # fmt: skip
    return reasons


def _counts_as_built(report: DayReport) -> list[dict[str, Any]]:
    """The cagnotte counts the report lists (their figures, tips included, as the summary
    keeps them) against the event that recorded each in the day's books stream. A count is
    recorded once, by the event that wrote it (a correction is a new count): a count edited in
    SQL before the build went into the report and, put back since, passes the books' own
    check; here it is named (`count_mismatch`: `count`, `table`, `recorded_in_trail`). What
    an older event did not say (a count's time, tips not counted) is not held to anything."""
    listed = (report.summary or {}).get("counts_as_listed")
    if not isinstance(listed, dict) or not listed:
        return []  # built before the report kept them (or reshaped: summary_mismatch says it)
    events = AuditEvent.objects.filter(
        stream__name=books_stream(report.gaming_day_id),
        action__in=("cagnotte.counted", "cagnotte.count_corrected"), subject_id__in=[str(pk) for pk in listed],
    ).order_by("seq").values_list("subject_id", "payload_json")  # fmt: skip
    trail: dict[str, Any] = {}
    for subject, doc in events.iterator():
        try:
            trail[subject] = json.loads(doc)["new"]
        except (ValueError, KeyError, TypeError):
            continue  # rewritten: the chain check names the event; its count differs here
    numbers = {t.pk: t.number for t in floor_selectors.day_tables(gaming_day_id=report.gaming_day_id)}
    reasons = []
    for pk, said in sorted(listed.items(), key=lambda item: (len(item[0]), item[0])):
        recorded = trail.get(pk)
        if isinstance(said, dict) and isinstance(recorded, dict):
            said = {k: v for k, v in said.items()
                    if k in recorded or not (k == "counted_at" or (k == "tips" and v is None))}  # fmt: skip
        if said != recorded:
            table = said.get("table") if isinstance(said, dict) else None
            reasons.append({"code": "count_mismatch", "count": _whole(pk), "table": numbers.get(table),
                            "recorded_in_trail": pk in trail})  # fmt: skip
    return reasons


def _cash_as_built(report: DayReport) -> list[dict[str, Any]]:
    """The changeur's lines the report lists against the `cash.exchanged` and
    `cash.exchange_voided` events of the day's session streams as of the build (their sealed
    heads; the report seals every session stream of the day). The summary keeps each listed
    line as its payload's digest (audit/reports/cash.py; the totals and the AML patrons come
    from the same rows); the rows have no chain: a line edited in SQL before the build went
    into the report and, put back since, leaves nothing else to say so. Each line listed
    otherwise than the trail then said, or on one side only: `cash_mismatch` (`exchange`,
    `table`, `session`, `line`, `listed_in_report`, `recorded_in_trail`). A void after the
    build cannot be (a closed session takes none); it would be a later event, not a
    difference."""
    listed = _listed_as_recorded(report, "cash")
    if listed is None:
        return []
    trail = cash.trail_payloads(_session_heads(report))
    recorded, differ = _differing(listed, trail)
    if not differ:
        return []
    sessions = {s.pk: s for s in floor_selectors.day_sessions(gaming_day_id=report.gaming_day_id)}
    now = {
        str(pk): (session, number)
        for pk, session, number in CashExchange.objects.filter(
            session__gaming_day_id=report.gaming_day_id
        ).values_list("pk", "session_id", "number")
    }
    reasons = []
    for pk in differ:
        said = trail.get(pk) or {}
        session_id, number = now.get(pk, (None, None))
        if isinstance(said.get("session"), int):
            session_id = said["session"]
        if isinstance(said.get("number"), int):
            number = said["number"]
        session = sessions.get(session_id)
        reasons.append({"code": "cash_mismatch", "exchange": _whole(pk),
                        "table": None if session is None else session.table.number,
                        "session": None if session is None else session.number, "line": number,
                        "listed_in_report": pk in listed, "recorded_in_trail": pk in recorded})  # fmt: skip
    return reasons


def _drawers_as_built(report: DayReport) -> list[dict[str, Any]]:
    """The drawers' counts the report lists against the `cash.drawer_counted` and
    `cash.drawer_count_corrected` events of the day's session streams, and of its books stream
    (a count made after the close), as of the build (their sealed heads; a report that sealed
    no books stream was built before any late count). The summary keeps each listed count as its payload's digest; the rows have
    no chain: a count edited in SQL before the build went into the report and, put back since,
    leaves nothing else to say so. Each count listed otherwise than the trail then said, or on
    one side only: `drawer_mismatch` (`count`, `table`, `session`, `listed_in_report`,
    `recorded_in_trail`). And each count as it stands now against the last event about it
    (`drawer_not_as_recorded`: a row edited, written or deleted in SQL after the build)."""
    listed = _listed_as_recorded(report, "drawers")
    if listed is None:
        return []
    books = books_stream(report.gaming_day_id)
    then = cash.drawer_trail(
        {**_session_heads(report), **{name: seq for name, seq, _ in report.sealed_heads or [] if name == books}}
    )
    recorded, differ = _differing(listed, then)
    sessions = {s.pk: s for s in floor_selectors.day_sessions(gaming_day_id=report.gaming_day_id)}
    rows = {str(c.pk): c for c in cash.day_cash_counts(gaming_day_id=report.gaming_day_id)}

    def where(pk: str, said: Any) -> dict[str, Any]:
        session_id = said.get("session") if isinstance(said, dict) else None
        if not isinstance(session_id, int) and pk in rows:
            session_id = rows[pk].session_id
        session = sessions.get(session_id)
        return {"count": _whole(pk), "table": None if session is None else session.table.number,
                "session": None if session is None else session.number}  # fmt: skip

    reasons = [
        {"code": "drawer_mismatch", **where(pk, then.get(pk)), "listed_in_report": pk in listed,
         "recorded_in_trail": pk in recorded}
        for pk in differ
    ]  # fmt: skip
    now = cash.drawer_trail(dict.fromkeys([*(s.audit_stream for s in sessions.values()), books], None))
    for pk in sorted(set(rows) | set(now), key=lambda pk: (len(pk), pk)):
        row = rows.get(pk)
        if (None if row is None else json.loads(json.dumps(rs.cash_count_payload(row)))) != now.get(pk):
            reasons.append({"code": "drawer_not_as_recorded", **where(pk, now.get(pk)), "in_books": row is not None,
                            "recorded_in_trail": pk in now})  # fmt: skip
    return reasons


def report_verify(*, report: DayReport) -> dict[str, Any]:
    """Recompute each stored file's SHA-256 and the day's seal over the sealed streams, and
    verify those chains. Writes nothing (a read-only transaction)."""
    reasons: list[dict[str, Any]] = []
    files: list[dict[str, Any]] = []
    if report.status != DayReport.Status.DONE:
        raise Conflict("report_not_built", "The report is not built yet.", details={"status": report.status})
    with _snapshot(read_only=True):
        for f in report.files.order_by("format"):
            path = Path(settings.MEDIA_ROOT) / f.path
            entry = {"format": f.format, "stored_sha256": f.sha256, "sha256": None, "ok": False}
            if not path.is_file():
                reasons.append({"code": "file_missing", "format": f.format})
            else:
                entry["sha256"], size = file_sha256(path)
                entry["ok"] = entry["sha256"] == f.sha256 and size == f.size
                if not entry["ok"]:
                    reasons.append({"code": "checksum_mismatch", "format": f.format})
            files.append(entry)
        if not files:
            reasons.append({"code": "no_files"})
        later: dict[str, int] = {}
        try:
            now = {name: seq for name, seq, _ in stream_heads(streams=report.sealed_streams)}
        except ApplicationError as exc:
            seal = None
            reasons.append({"code": "stream_missing", "details": exc.details})
        else:
            if report.sealed_heads:
                # The streams as they were at the build: events appended since (a count
                # corrected, a register corrected and signed) are later records, not changes.
                seal = seal_of(heads_then(report.sealed_heads))
                later = {name: now[name] - seq for name, seq, _ in report.sealed_heads if now[name] > seq}
            else:  # a report built before its heads were kept: sealed over the heads now
                seal = seal_of(stream_heads(streams=report.sealed_streams))
        if seal is not None and seal != report.seal:
            # Where: each sealed head whose event is now gone or another (empty when the seal
            # or the sealed heads themselves were rewritten in the report's row).
            changed = sealed_head_changes(report.sealed_heads) if report.sealed_heads else []
            reasons.append({"code": "seal_mismatch", "stored": report.seal, "recomputed": seal, "streams": changed})
        reasons += _as_built(report, files)
        if not any(reason["code"] == "sealed_heads_altered" for reason in reasons):
            # Both read the trail as of the sealed heads: heads that are not the build's own
            # would hold the books to another trail (a stream dropped from them reads as a
            # table with no levies), so they are not run on such heads.
            reasons += _levies_as_played(report)
            reasons += books_as_played(report)
            reasons += _unclaimed_as_built(report)
            reasons += _counts_as_built(report)
            reasons += _cash_as_built(report)
            reasons += _drawers_as_built(report)
        # The patrons it names, to the identity the trail registered (as of the build), and
        # their rows as they stand to it (a rename since: the row, not the report).
        reasons += patrons.as_named(report.summary)
        reasons += [
            {"code": "books_mismatch", "problem": problem.pop("code"), **problem}
            for problem in books_verify(gaming_day_id=report.gaming_day_id)
        ]
        # The chains of the sealed streams that exist (a missing one is a reason above), and
        # of the stream that records the builds.
        names = [*report.sealed_streams, reports_stream(report.gaming_day_id)]
        names = sorted(AuditStream.objects.filter(name__in=names).values_list("name", flat=True))
    chains = chain_verify(streams=names) if names else None
    if chains is not None and not chains.ok:
        reasons.append({"code": "chain_broken", "first_broken": chains.as_dict()["first_broken"]})
    return {
        "ok": not reasons,
        "report": report.pk,
        "files": files,
        "seal": {"stored": report.seal, "recomputed": seal, "ok": seal == report.seal},
        # Events recorded after the build in the streams it seals, per stream (not a fault:
        # a later version of the report, if any, includes them).
        "later_events": later,
        "chains": None if chains is None else {"ok": chains.ok, "streams": chains.streams_checked,
                                               "events": chains.events_checked},
        "reasons": reasons,
    }

