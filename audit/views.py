"""The auditor's desk (issue 7): gaming days, their end-of-day reports with the Celery
build's progress, the files to download with their SHA-256, the verification of a report
(files, seal, chains) and of the whole audit trail.

Read: auditor, direzione, commissario (AUDIT_READERS). Write: the direzione only, on the day
page: the cagnotte count of each table (with a witness) and the control register (prepare,
sign by two different direzione users), through audit.reports.registers, each form with its
own idempotency key. Verifying writes nothing: it is a POST (expensive, never prefetched)
that runs in a read-only transaction and stores no idempotent answer.

Views stay thin: parse, authorize, one service or selector, render."""

from __future__ import annotations

import json
import math
import re
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from celery.result import AsyncResult
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.paginator import InvalidPage, Paginator
from django.db.models import Prefetch
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.formats import date_format
from django.utils.http import urlencode
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from rest_framework.throttling import ScopedRateThrottle

from config.api import Pagination
from config.errors import REDIS_UNAVAILABLE, ApplicationError
from config.htmx import current_page
from floor import selectors as floor_selectors
from floor.roles import Role, cache_roles, has_role
from tables import report_selectors
from tables.selectors import closed_sessions_with_drawer, final_counts_in_force, handovers_with_counts
from tables.templatetags.chemin_ui import euros_exact
from tables.views_common import (
    BadForm,
    Outcome,
    euros_to_cents,
    forbidden,
    form_post,
    int_field,
    is_htmx,
    post_only,
)
from tables.wording import version_text, violations_text

if TYPE_CHECKING:
    from floor.models import GamingDay, TableSession

from .api_reports import CONTENT_TYPES
from .apis import _LookaheadPaginator, events_filtered
from .filters import AuditEventFilter
from .models import CagnotteCount, ControlRegister, DayReport, ReportFile, UnclaimedDeposit
from .permissions import AUDIT_READERS, CanReadAudit
from .reports import registers, unclaimed
from .reports.records import MONEY, TIMES
from .reports.selectors import report_list
from .reports.services import report_verify
from .selectors import chain_verify, stream_events

POLL_SECONDS = 2
# Gaming days a page of the desk lists (about three months of a casino open every day).
DESK_DAYS = 100

# The verify service's reasons, said in the reader's language.
REASONS = {
    "file_missing": gettext_lazy("The stored %(format)s file is missing."),
    "checksum_mismatch": gettext_lazy("The %(format)s file's SHA-256 differs from the one recorded when it was built."),
    "no_files": gettext_lazy("The report has no files."),
    "stream_missing": gettext_lazy("A sealed audit stream is missing."),
    "seal_mismatch": gettext_lazy("The day's seal, recomputed now, differs from the seal in the report."),
    "chain_broken": gettext_lazy("An audit chain is broken."),
    "build_record_missing": gettext_lazy("The audit trail has no record of this report's build."),
    "summary_mismatch": gettext_lazy("The report's figures differ from those recorded when it was built."),
    "report_missing": gettext_lazy(
        "Report %(report)s of this day (version %(version)s) was built, the audit trail records, and it is gone "
        "or is no longer that report: its rows were deleted or rewritten."
    ),
    "sealed_heads_altered": gettext_lazy(
        "The report's sealed stream heads (%(stored)s) differ from the %(recorded)s recorded when it was built: "
        "the report's row was edited."
    ),
    "levies_mismatch": gettext_lazy(
        "Table %(table)s, %(figure)s: %(in_report)s in the report, %(in_trail)s by the coups the audit trail recorded."
    ),
    "postings_mismatch": gettext_lazy(
        "Table %(table)s, session %(session)s, coup %(coup)s: the postings in the books differ from those the "
        "audit trail recorded for the coup."
    ),
    "coup_mismatch": gettext_lazy(
        "Table %(table)s, session %(session)s, coup %(coup)s: the coup as the books hold it differs from the "
        "coup the audit trail recorded."
    ),
    "event_unreadable": gettext_lazy(
        "Table %(table)s, session %(session)s: the audit event %(seq)s of stream %(stream)s (%(action)s) does not "
        "hold what its action records; the rows it recorded are not checked against it."
    ),
    "bets_mismatch": gettext_lazy(
        "Table %(table)s, session %(session)s, coup %(coup)s: the bets in the books differ from those the "
        "audit trail recorded at rien ne va plus."
    ),
    "cards_mismatch": gettext_lazy(
        "Table %(table)s, session %(session)s, shoe %(shoe)s (%(shoe_number)s), card %(position)s out of the "
        "shoe: the card in the books differs from the one the audit trail recorded."
    ),
    "books_mismatch": gettext_lazy(
        "A cagnotte count, a control register or an unclaimed deposit differs from what the audit trail recorded "
        "for it."
    ),
    "unclaimed_mismatch": gettext_lazy(
        "Table %(table)s, unclaimed deposit %(deposit)s: the report lists it otherwise than the audit trail "
        "recorded it when the report was built."
    ),
    "cash_mismatch": gettext_lazy(
        "Table %(table)s, session %(session)s, cash exchange line %(line)s: the report lists it otherwise than the "
        "audit trail recorded it when the report was built."
    ),
    "count_mismatch": gettext_lazy(
        "Table %(table)s, cagnotte count %(count)s: the report lists it (its tips included) otherwise than the "
        "audit trail recorded it."
    ),
    "patron_mismatch": gettext_lazy(
        "Patron %(patron)s: the report names him otherwise than the audit trail registered him when the report "
        "was built (%(fields)s)."
    ),
    "patron_not_as_recorded": gettext_lazy(
        "Patron %(patron)s: his row is not the identity the audit trail registered (%(fields)s)."
    ),
    "drawer_mismatch": gettext_lazy(
        "Table %(table)s, session %(session)s, cash drawer count %(count)s: the report lists it otherwise than the "
        "audit trail recorded it when the report was built."
    ),
    "drawer_not_as_recorded": gettext_lazy(
        "Table %(table)s, session %(session)s, cash drawer count %(count)s: the count in the books differs from "
        "what the audit trail recorded for it."
    ),
}
# A patron's identity fields, in a patron_mismatch or patron_not_as_recorded said in words
# (the values are not said: the document number is not printed).
PATRON_FIELDS = {
    "first_name": gettext_lazy("first name"),
    "last_name": gettext_lazy("last name"),
    "document_type": gettext_lazy("document type"),
    "document_number": gettext_lazy("document number"),
}
BREAKS = {
    "missing_event": gettext_lazy("an event is missing"),
    "broken_link": gettext_lazy("the link to the previous event is broken"),
    "hash_mismatch": gettext_lazy("the event's content does not match its hash"),
    "head_mismatch": gettext_lazy("the stream's head does not match its last event"),
    "head_seal_mismatch": gettext_lazy(
        "the stream's head is not sealed by the application's key: the stream was re-chained, or its head moved, "
        "by someone without it"
    ),
    "stream_missing": gettext_lazy("a stream the floor's records or the trail's own events name is missing"),
    "session_missing": gettext_lazy(
        "the trail records a table session opened, and its row is gone: the session's rows were deleted"
    ),
    "sealed_event_missing": gettext_lazy(
        "a day's report sealed this event and it is gone: the stream's last events were deleted"
    ),
    "sealed_event_changed": gettext_lazy(
        "a day's report sealed this event with another hash: an event up to it was rewritten and the chain rebuilt"
    ),
    "report_seal_altered": gettext_lazy(
        "a day's report no longer holds the seal its build recorded: the report's row was edited"
    ),
    "sealed_heads_altered": gettext_lazy(
        "a day's report no longer holds the sealed heads its build recorded: the report's row was edited"
    ),
    "report_summary_altered": gettext_lazy(
        "a day's report no longer holds the summary its build recorded: the report's row was edited"
    ),
    "report_missing": gettext_lazy(
        "the trail records a day's report built, and its row is gone or is another report now: the report's rows "
        "were deleted or rewritten"
    ),
    "patron_not_as_recorded": gettext_lazy(
        "a patron's row is not the identity (name, document) his events in the patrons stream recorded: the row "
        "was edited behind the services"
    ),
}
# A books_mismatch's second sentence, by its problem (audit.reports.registers.books_verify):
# which count (and at which table) or which register.
BOOKS = {
    "count_not_as_recorded": gettext_lazy(
        "Table %(table)s, cagnotte count %(count)s: the count in the books is not the one the audit trail recorded."
    ),
    "register_not_as_recorded": gettext_lazy(
        "Control register %(register)s: the register in the books is not the one the audit trail recorded."
    ),
    "count_missing": gettext_lazy("Cagnotte count %(count)s, recorded by the audit trail, is gone from the books."),
    "register_missing": gettext_lazy(
        "Control register %(register)s, recorded by the audit trail, is gone from the books."
    ),
    "deposit_not_as_recorded": gettext_lazy(
        "Table %(table)s, unclaimed deposit %(deposit)s: the deposit in the books is not the one the audit trail "
        "recorded."
    ),
    "deposit_missing": gettext_lazy("Unclaimed deposit %(deposit)s, recorded by the audit trail, is gone from the books."),
}
# A record_mismatch's first sentence, by the kind of record (audit.reports.records).
RECORDS = {
    "day": gettext_lazy("The gaming day's row"),
    "session": gettext_lazy("Table %(table)s, session %(session)s: the session's row"),
    "seat": gettext_lazy("Table %(table)s, session %(session)s, the place taken at %(at)s"),
    "first_bank_pass": gettext_lazy("Table %(table)s, session %(session)s, the first bank declined at %(at)s"),
    "bank": gettext_lazy("Table %(table)s, session %(session)s, bank %(number)s"),
    "minimum_change": gettext_lazy("Table %(table)s, session %(session)s, the minimum change of %(at)s"),
    "staff_change": gettext_lazy("Table %(table)s, session %(session)s, the staff change of %(at)s"),
    "interruption": gettext_lazy("Table %(table)s, session %(session)s, the interruption of %(at)s"),
    "bar": gettext_lazy("Table %(table)s, session %(session)s, the faux-tirage bar of %(at)s"),
    "regola": gettext_lazy("Table %(table)s, session %(session)s, the Regola mark of %(at)s"),
    "annulled_coup": gettext_lazy("Table %(table)s, session %(session)s, annulled coup %(number)s"),
    "shoe": gettext_lazy("Table %(table)s, session %(session)s, shoe %(number)s"),
    "succession": gettext_lazy("Table %(table)s, session %(session)s, succession %(number)s"),
    "auction": gettext_lazy("Table %(table)s, session %(session)s, the asta of succession %(number)s"),
    "offer": gettext_lazy("Table %(table)s, session %(session)s, succession %(succession)s, offer %(number)s"),
    "bid": gettext_lazy("Table %(table)s, session %(session)s, succession %(succession)s, the bid of %(at)s"),
}
# A register's fields, in a record_mismatch said in words.
RECORD_FIELDS = {
    "capo_partita": gettext_lazy("Capo Partita"), "changeur": gettext_lazy("Changeur"),
    "shoe_number": gettext_lazy("Shoe at opening"), "minimum": gettext_lazy("Minimum"),
    "maximum": gettext_lazy("Maximum"), "status": gettext_lazy("Status"), "opened_by": gettext_lazy("Opened by"),
    "closed_at": gettext_lazy("Closed"), "closed_by": gettext_lazy("Closed by"), "number": gettext_lazy("Number"),
    "banker": gettext_lazy("Banker"), "seat_number": gettext_lazy("Seat"), "origin": gettext_lazy("Origin"),
    "turn_seat": gettext_lazy("Turn from seat"), "initial_amount": gettext_lazy("Initial bank"),
    "raised": gettext_lazy("Put up since"), "amount": gettext_lazy("Last bank"),
    "reserve_returned": gettext_lazy("Reserve returned"), "coups_completed": gettext_lazy("Coups"),
    "end_reason": gettext_lazy("End"), "ended_by": gettext_lazy("Ended by"),
    "old": gettext_lazy("Old minimum"), "new": gettext_lazy("New minimum"),
    "old_maximum": gettext_lazy("Old maximum"), "new_maximum": gettext_lazy("New maximum"),
    "reason": gettext_lazy("Reason"), "by": gettext_lazy("By"),
    "old_capo_partita": gettext_lazy("Croupier before"), "new_capo_partita": gettext_lazy("Croupier after"),
    "old_changeur": gettext_lazy("Changeur before"), "new_changeur": gettext_lazy("Changeur after"),
    "interrupted_at": gettext_lazy("Interrupted"), "interrupted_by": gettext_lazy("Interrupted by"),
    "interrupted_as": gettext_lazy("Interrupted as"),
    "resumed_at": gettext_lazy("Resumed"), "resumed_by": gettext_lazy("Resumed by"),
    "resume_reason": gettext_lazy("Reason for resuming"), "patron": gettext_lazy("Patron"),
    "coup": gettext_lazy("Coup"), "state": gettext_lazy("State"), "annul_reason": gettext_lazy("Reason"),
    "annulled_by": gettext_lazy("Annulled by"), "seq": gettext_lazy("Shoe"), "decks": gettext_lazy("Decks"),
    "loaded_by": gettext_lazy("Loaded by"), "finished": gettext_lazy("Finished"),
    "finished_by": gettext_lazy("Finished by"), "opened_at": gettext_lazy("Opened"), "date": gettext_lazy("Date"),
    "bank.opened_at": gettext_lazy("Bank opened"), "bank.ended_at": gettext_lazy("Bank ended"),
    "succession.ended_at": gettext_lazy("Succession ended"), "annulled_at": gettext_lazy("Annulled"),
    "loaded_at": gettext_lazy("Loaded"), "finished_at": gettext_lazy("Finished at"),
    "started_at": gettext_lazy("Started"), "answered_at": gettext_lazy("Answered at"), "at": gettext_lazy("Time"),
    "previous_bank": gettext_lazy("Bank that ended"), "outgoing_banker": gettext_lazy("Outgoing banker"),
    "kind": gettext_lazy("Offered as"), "floor": gettext_lazy("Continuation"),
    "lapse_reason": gettext_lazy("Lapsed because"), "new_bank": gettext_lazy("New bank"),
    "succession": gettext_lazy("Succession"), "bids_count": gettext_lazy("Bids"),
    "winning_bid": gettext_lazy("Winning bid"),
    # Where a field means another thing in another register:
    "succession.amount": gettext_lazy("Bank offered"), "succession.reason": gettext_lazy("Why"),
    "succession.ended_by": gettext_lazy("By"), "bid.seq": gettext_lazy("Order"), "bid.amount": gettext_lazy("Bid"),
    "bid.by": gettext_lazy("Entered by"), "auction.status": gettext_lazy("Status"),
    "order": gettext_lazy("Order"), "round": gettext_lazy("Round"), "amount_min": gettext_lazy("From"),
    "amount_max": gettext_lazy("Up to"),
    "answered_by": gettext_lazy("Entered by"), "offer.status": gettext_lazy("Answer"),
    "standing": gettext_lazy("Standing"), "taken_at": gettext_lazy("Taken"), "taken_by": gettext_lazy("Seated by"),
    "left_at": gettext_lazy("Left"), "left_by": gettext_lazy("Released by"), "seat": gettext_lazy("Place (row)"),
    "declared": gettext_lazy("Plays alla Regola"), "set_at": gettext_lazy("Marked at"),
    "set_by": gettext_lazy("Marked by"),
    "offer.reason": gettext_lazy("Skipped because"), "offer.amount": gettext_lazy("Amount"),
}  # fmt: skip
# The two figures a levies_mismatch compares.
LEVY_FIGURES = {
    "levies_recorded": gettext_lazy("levies recorded"),
    "expected_cagnotte": gettext_lazy("expected cagnotte (the house's postings)"),
}
# A coup's figures and winners, in a coup_mismatch said in words.
COUP_FIELDS = {
    "winner": gettext_lazy("Winner"),
    "bank_amount": gettext_lazy("Bank"),
    "covered": gettext_lazy("Covered"),
    "cagnotte": gettext_lazy("Levy"),
    "banker_net": gettext_lazy("Banker's net"),
    "bank": gettext_lazy("Bank number"),
    "punta": gettext_lazy("Punta"),
    "cards": gettext_lazy("Cards"),
    "punta_draws": gettext_lazy("Punta drew"),
    "banker_draws": gettext_lazy("Banker drew"),
    "regola_punta": gettext_lazy("Punta alla Regola"),
    "regola_banker": gettext_lazy("Banker alla Regola"),
    "banco_solo": gettext_lazy("Banco solo"),
    "conforming": gettext_lazy("Conforming"),
    "violations": gettext_lazy("Violations"),
    "as_played": gettext_lazy("As played"),
    "next_cards": gettext_lazy("Shoe cards drawn for the reconstruction"),
    "settled": gettext_lazy("Settled on"),
    "settled_at": gettext_lazy("Settled at"),
    "settled_by": gettext_lazy("Settled by"),
}
MONEY_FIELDS = {"bank_amount", "covered", "cagnotte", "banker_net"}
CARD_FIELDS = {"cards", "next_cards"}
WINNERS = {"banker": gettext_lazy("banker"), "punta": gettext_lazy("punta"), "tie": gettext_lazy("tie")}
# A posting's role, in a postings_mismatch said in words.
ROLES = {"bettor": gettext_lazy("bettor"), "banker": gettext_lazy("banker")}
# A bet's kind, in a bets_mismatch said in words.
KINDS = {
    "banco": gettext_lazy("banco solo"),
    "avec_la_table": gettext_lazy("banco avec la table"),
    "individual": gettext_lazy("individual"),
}
# The books' refusals (audit.reports.registers), by code.
BOOK_REFUSALS = {
    "witness_must_differ": gettext_lazy("The witness must be another person than the counter."),
    "witness_not_staff": gettext_lazy("The witness must be a member of staff."),
    "witness_not_management": gettext_lazy(
        "The witness must be a Commissario, a member of the Direzione or an auditor, not table staff."
    ),
    "table_not_played": gettext_lazy("The table had no session on this gaming day."),
    "already_counted": gettext_lazy("This table's cagnotte is counted already."),
    "invalid_tips": gettext_lazy("The tips counted are an amount of at least 0 euro."),
    "nothing_to_correct": gettext_lazy("Give the cagnotte counted again, the tips counted again, or both."),
    "day_not_closed": gettext_lazy("The gaming day is still open; close it first."),
    "cagnotte_not_counted": gettext_lazy("Count the cagnotte of every table first."),
    "register_signed": gettext_lazy("The control register is signed; it cannot be prepared again."),
    "already_signed": gettext_lazy("The control register has both signatures already."),
    "second_signer_must_differ": gettext_lazy("The second signature must be another person's."),
    "register_stale": gettext_lazy(
        "The counts or the unclaimed deposits changed since the register was written; prepare it again."
    ),
    "levies_changed_since_count": gettext_lazy(
        "The levies recorded at a table no longer add up to its count's expected cagnotte: verify the "
        "day's report, and correct the count."
    ),
    "count_not_as_recorded": gettext_lazy(
        "A cagnotte count of the day is not what the audit trail recorded for it (edited behind the services): "
        "verify the day's report; no register is written or signed over it."
    ),
    "register_not_as_recorded": gettext_lazy(
        "A control register of the day is not what the audit trail recorded for it (edited behind the services): "
        "verify the day's report; it is not signed, brought up to date or corrected over it."
    ),
    "register_not_signed": gettext_lazy("An unsigned register is brought up to date, not corrected."),
    "register_unchanged": gettext_lazy(
        "The signed register says what the counts in force say: correct a count first, then the register."
    ),
    "already_corrected": gettext_lazy("This has been corrected already: correct the correction."),
    "permission_denied": gettext_lazy("Only the Direzione Giochi may do this."),
    # The unclaimed deposits (audit.reports.unclaimed).
    "deposit_place_required": gettext_lazy("Say where it was deposited: the envelope or receipt number."),
    "session_not_of_day": gettext_lazy("Choose a table session of this gaming day."),
    "coup_not_of_session": gettext_lazy("That coup was not played at this table session."),
    "coup_in_play": gettext_lazy("That coup is still in play: its stakes are not unclaimed yet."),
    "books_signed": gettext_lazy("The day's control register is signed: its books are final."),
    "already_returned": gettext_lazy("This deposit was handed back already."),
    "claimant_required": gettext_lazy("Say to whom it is handed back: choose the patron or write a name."),
    "deposit_not_as_recorded": gettext_lazy(
        "An unclaimed deposit of the day is not what the audit trail recorded for it (edited behind the "
        "services): verify the day's report; no register is written or signed over it."
    ),
}


def _readable(request: HttpRequest) -> bool:
    return has_role(request.user, *AUDIT_READERS)


def _refused(request: HttpRequest) -> HttpResponse:
    return forbidden(request, _("The auditor's desk is for the auditors, the Direzione and the Commissario."))


class _VerifyScope:
    throttle_scope = "audit_verify"


def _verify_throttled(request: HttpRequest) -> HttpResponse | None:
    """A verification recomputes chains and hashes: the desk's buttons count against the
    same per-user budget as the verify API (`THROTTLE_AUDIT_VERIFY`, DRF's scoped throttle,
    one bucket whatever the channel). Over it: 429 with Retry-After, nothing computed."""
    throttle = ScopedRateThrottle()
    try:
        if throttle.allow_request(request, _VerifyScope()):
            return None
    except REDIS_UNAVAILABLE:
        # The counts live in the cache (Redis): out of reach, no verification runs uncounted,
        # as the verify API answers (503, Retry-After).
        # (an htmx post's 503 is not swapped in: chemin.js shows its "not answering" banner)
        response = render(request, "503.html", {"retry_url": current_page(request)}, status=503)
        response["Retry-After"] = "5"
        return response
    wait = math.ceil(throttle.wait() or 1)
    message = _("Too many verifications: try again in %(minutes)s min.") % {"minutes": math.ceil(wait / 60)}
    template = "_429.html" if is_htmx(request) else "429.html"
    response = render(request, template, {"message": message}, status=429)
    response["Retry-After"] = str(wait)
    return response


# --------------------------------------------------------------------------- reads


def report_progress(report: DayReport) -> dict:
    """The build's progress as the Celery task reports it (state PROGRESS, {done, total});
    like the API's `progress` (audit/api_reports.py). An unreachable backend is UNKNOWN."""
    if report.status == DayReport.Status.DONE:
        total = report.summary.get("rows")
        return {"state": "SUCCESS", "done": total, "total": total, "percent": 100}
    # A failed report the sweep enqueued again (retrying): its new build's progress.
    if (report.status == DayReport.Status.FAILED and not report.retrying) or not report.task_id:
        return {"state": "FAILURE" if report.status == DayReport.Status.FAILED and not report.retrying
                else "PENDING", "done": None, "total": None, "percent": None}  # fmt: skip
    try:
        result = AsyncResult(report.task_id)
        state, info = result.state, result.info
    except Exception:  # the result backend is unreachable: say so, never a 500
        return {"state": "UNKNOWN", "done": None, "total": None, "percent": None}
    if isinstance(info, dict) and info.get("total"):
        done, total = int(info.get("done") or 0), int(info["total"])
        return {"state": state, "done": done, "total": total, "percent": min(100, 100 * done // max(total, 1))}
    return {"state": state, "done": None, "total": None, "percent": None}


def _reports():
    # Each report knows the latest built version of its day (superseded or current) from
    # the same query: the page's queries do not grow with the versions.
    return report_list().prefetch_related("files").select_related(
        "control_register__first_signer", "control_register__second_signer"
    ).order_by("version")


def _report_card(report: DayReport) -> dict:
    return {"report": report, "files": sorted(report.files.all(), key=lambda f: ["csv", "xlsx", "pdf"].index(f.format)
                                              if f.format in ("csv", "xlsx", "pdf") else 9),
            "progress": report_progress(report), "poll": POLL_SECONDS}  # fmt: skip


@never_cache
@login_required
@require_GET
def desk(request: HttpRequest) -> HttpResponse:
    """The gaming days, newest first: open or closed, each report version with its status,
    DESK_DAYS a page (`?page=`), so that every day of a casino's years stays within reach in
    the same few queries (the page's days and their reports)."""
    if not _readable(request):
        return _refused(request)
    raw = request.GET.get("page", "1")
    # A page is ASCII digits, as the API's (config.api.Pagination): anything else, or a page
    # past the last, is no page (404), never another page shown as if it had been asked for.
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 6):
        raise Http404
    days = floor_selectors.gaming_day_list().prefetch_related(
        Prefetch("reports", queryset=report_list().order_by("version"))
    )
    try:
        page = Paginator(days, DESK_DAYS).page(int(raw))
    except InvalidPage:
        raise Http404 from None
    return render(request, "desk/desk.html", {"days": page.object_list, "page": page})


# --------------------------------------------------------------------------- the events


# The events page's filters: the API's (AuditEventFilter), each with its label and hint; the
# time range's two ends are its `at` filter's keys.
EVENT_FILTERS = (
    ("stream", gettext_lazy("Stream"), gettext_lazy("exact name, e.g. day_books:12")),
    ("seq_min", gettext_lazy("From seq"), gettext_lazy("an event's number in its stream, from 1")),
    ("seq_max", gettext_lazy("Up to seq"), gettext_lazy("an event's number in its stream, from 1")),
    ("action", gettext_lazy("Action"), gettext_lazy("exact, e.g. minimum.changed")),
    ("action_prefix", gettext_lazy("Action starts with"), gettext_lazy("e.g. coup.")),
    ("subject_type", gettext_lazy("Subject type"), gettext_lazy("e.g. tables.coup")),
    ("subject_id", gettext_lazy("Subject id"), ""),
    ("actor", gettext_lazy("Actor (user id)"), ""),
    ("actor_name", gettext_lazy("Actor (username)"), ""),
    ("at_after", gettext_lazy("From"), gettext_lazy("e.g. 2026-05-01 22:00 (the casino's time), or ISO 8601")),
    ("at_before", gettext_lazy("Up to"), gettext_lazy("e.g. 2026-05-01 22:00 (the casino's time), or ISO 8601")),
)
EVENT_FILTER_LABELS = {name: label for name, label, _hint in EVENT_FILTERS}
EVENT_FILTER_LABELS["at"] = gettext_lazy("Time range")
EVENT_FILTER_LABELS["page_size"] = gettext_lazy("Events a page")
EVENT_FILTER_LABELS["order"] = gettext_lazy("Order")
# The page's orders (AuditEventFilter's `order`), the default first.
EVENT_ORDER_LABELS = {"newest": gettext_lazy("Newest first"), "oldest": gettext_lazy("Oldest first")}
# Filters a whole number is typed in (a phone's digits keyboard).
_NUMERIC_FILTERS = frozenset({"seq_min", "seq_max"})
# A payload's first characters, in the row (the whole of it under them, opened).
PAYLOAD_GLANCE = 80
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _printable(text: str) -> str:
    # A payload rewritten behind the services may hold a lone surrogate ("\ud800" in its
    # JSON): decoded, it could not be written out in UTF-8 (a 500). Said as JSON writes it.
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _payload_shown(text: str) -> dict:
    """An event's payload as the page shows it: its first characters (compact JSON) and the
    whole of it indented. Text that is no JSON (a row rewritten behind the services) is
    shown as it is stored, never a 500."""
    try:
        value = json.loads(text)
        compact = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        pretty = json.dumps(value, ensure_ascii=False, indent=2)
    except (ValueError, RecursionError):
        compact = pretty = text
    compact = _printable(compact)
    glance = compact if len(compact) <= PAYLOAD_GLANCE else compact[: PAYLOAD_GLANCE - 1] + "…"
    return {"glance": glance, "full": _printable(pretty), "long": glance != compact or "\n" in pretty}


def _events_query(params: QueryDict, **changed) -> str:
    """The page's query string, its filters kept (empty ones left out), `changed` applied."""
    query = QueryDict(mutable=True)
    for key, values in params.lists():
        kept = [v for v in values if v != ""]
        if kept and key not in changed:
            query.setlist(key, kept)
    for key, value in changed.items():
        if value is not None:
            query[key] = str(value)
    return query.urlencode()


def _events_problems(filterset: AuditEventFilter) -> list[str]:
    problems = []
    for name, messages in filterset.errors.items():
        if name not in filterset.form.fields:
            problems.append(_("“%(key)s” is not a filter of this page.") % {"key": name[:80]})
            continue
        for message in messages:
            problems.append(_("%(field)s: %(problem)s") % {"field": EVENT_FILTER_LABELS.get(name, name),
                                                          "problem": message})  # fmt: skip
    return problems


@never_cache
@login_required
@require_GET
def events(request: HttpRequest) -> HttpResponse:
    """The audit trail's events, as GET /api/audit/events/ lists them: the same readers
    (CanReadAudit), the same filters (AuditEventFilter: the same query string selects the
    same events), the same order (newest first, by id: within a stream that is by seq, an
    append taking the stream's head lock; or oldest first, `order=oldest`), the same pages
    (`page`, `page_size`; a page counted by the stream heads unfiltered or by stream and seq
    range alone, else read one row beyond its end). A few queries however many events and
    whatever the filters. Reads only."""
    if not CanReadAudit().has_permission(request, None):
        return _refused(request)
    params = request.GET
    raw_page = params.get("page") or "1"
    # A page is ASCII digits, as the API's (config.api.Pagination) and the desk's days.
    if not (raw_page.isascii() and raw_page.isdigit() and len(raw_page) <= 6):
        raise Http404
    filterset = AuditEventFilter(data=params, queryset=stream_events().select_related("actor"))
    problems = [] if filterset.is_valid() else _events_problems(filterset)
    size = settings.REST_FRAMEWORK["PAGE_SIZE"]
    raw_size = params.get("page_size") or ""
    if raw_size:
        # As the API's: a whole number of at least 1, more than its largest page taken as it.
        if raw_size.isascii() and raw_size.isdigit() and int(raw_size) >= 1:
            size = min(int(raw_size), Pagination.max_page_size)
        else:
            problems.append(_("%(field)s: a whole number from 1 to %(most)s.") % {
                "field": EVENT_FILTER_LABELS["page_size"], "most": Pagination.max_page_size})  # fmt: skip
    # The order as asked: a bad one is said (AuditEventFilter refuses it), the default shown.
    order = params.get("order") or "newest"
    context = {
        "filters": [{"name": name, "label": label, "hint": hint, "value": params.get(name, ""),
                     "numeric": name in _NUMERIC_FILTERS}
                    for name, label, hint in EVENT_FILTERS],
        "orders": [{"value": value, "label": label, "selected": value == order}
                   for value, label in EVENT_ORDER_LABELS.items()],
        "oldest_first": order == "oldest",
        "page_size": raw_size,
        "problems": problems,
        "filtered": any(params.get(name) for name, _label, _hint in EVENT_FILTERS),
    }  # fmt: skip
    if problems:
        # Said, with the form as typed; no event listed as if the filter had been applied.
        return render(request, "desk/events.html", context, status=400)
    selected = events_filtered(filterset)
    counted = getattr(selected, "counts_by_heads", False)
    paginator = (Paginator if counted else _LookaheadPaginator)(selected, size)
    try:
        page = paginator.page(int(raw_page))
    except InvalidPage:
        raise Http404 from None
    rows = [{"event": e, "payload": _payload_shown(e.payload_json)} for e in page.object_list]
    context.update({
        "rows": rows, "page": page, "counted": counted,
        "previous_query": _events_query(params, page=page.previous_page_number()) if page.has_previous() else None,
        "next_query": _events_query(params, page=page.next_page_number()) if page.has_next() else None,
    })  # fmt: skip
    return render(request, "desk/events.html", context)


def _staff(exclude) -> list:
    # Those who may witness a count (registers.WITNESS_ROLES), but the counter. Not a user who
    # holds roles that may not go together (an auditor also made Capo Partita): he acts with
    # none of them (floor.roles), so the count would refuse him (witness_not_staff).
    users = list(
        get_user_model().objects.filter(groups__name__in=registers.WITNESS_ROLES, is_active=True)
        .exclude(pk=exclude.pk).distinct().order_by("username").prefetch_related("groups")
    )  # fmt: skip
    for user in users:
        cache_roles(user, [group.name for group in user.groups.all()])
    return [user for user in users if has_role(user, *registers.WITNESS_ROLES)]


def _books(day: GamingDay, user) -> dict:
    """The Direzione's books of a closed day: per table the expected cagnotte and the count
    in force, the staff who may witness (for the Direzione's forms), the control register in
    force."""
    figures = report_selectors.table_figures(gaming_day_id=day.pk)
    counts = {c.table_id: c for c in registers.current_counts(gaming_day_id=day.pk)}
    tables = [
        {"table": t, "expected": figures.get(t.pk, {}).get("expected_cagnotte", 0), "count": counts.get(t.pk)}
        for t in floor_selectors.day_tables(gaming_day_id=day.pk)
    ]
    register = registers.current_register(gaming_day_id=day.pk)
    # A count corrected since the register was written: it must be brought up to date
    # (unsigned) or corrected (signed), and signed again.
    behind = register is not None and not registers.register_agrees(register)
    signed_first = register is not None and register.first_signer_id == user.pk
    return {
        "tables": tables,
        "witnesses": _staff(user) if has_role(user, Role.DIREZIONE) else [],  # for the forms
        "register": register,
        "all_counted": all(t["count"] for t in tables),  # a day with no play has nothing to count
        # Not over figures no longer in force: the signature would be refused (register_stale).
        "can_sign": register is not None and not register.signed and not signed_first and not behind,
        "signed_first": signed_first,
        "register_behind": behind,
        # The unclaimed stakes and winnings the register carries (its lines, as signed).
        "register_unclaimed": sum(
            (line.get("unclaimed") or {}).get("total", 0) for line in (register.lines if register else [])
            if isinstance(line, dict)
        ),
        # The day's tips (mance), the staff's: the counts in force that recorded them, and the
        # figure the register carries apart from its total (None: no count said any).
        "tips": registers.register_tips([{"tips": t["count"].tips} for t in tables if t["count"] is not None]),
        "tips_unsaid": [t["table"].number for t in tables if t["count"] is not None and t["count"].tips is None],
    }


def _unclaimed(day: GamingDay, user, sessions: list) -> dict:
    """The day's unclaimed deposits with their totals (RULES.md §6), and what the reader may
    do: the Commissario records one (until the register is signed), the Commissario or the
    Direzione hands one back. A few queries however many deposits the day has."""
    can_deposit = has_role(user, *unclaimed.DEPOSIT_ROLES)
    register = registers.current_register(gaming_day_id=day.pk) if can_deposit else None
    can_deposit = can_deposit and not (register is not None and register.signed)
    return {
        "deposits": list(unclaimed.day_deposits(gaming_day_id=day.pk)),
        "totals": unclaimed.day_totals(gaming_day_id=day.pk),
        "can_deposit": can_deposit,
        "can_return": has_role(user, *unclaimed.RETURN_ROLES),
        "sessions": sessions if can_deposit else [],
        "patrons": list(floor_selectors.day_patrons(gaming_day_id=day.pk)) if can_deposit else [],
        "kinds": UnclaimedDeposit.Kind,
    }


def _day_page(request: HttpRequest, day: GamingDay, *, outcome: Outcome | None = None,
              verified: dict | None = None, typed: dict | None = None) -> HttpResponse:  # fmt: skip
    can_write = has_role(request.user, Role.DIREZIONE)
    sessions = list(floor_selectors.day_sessions(gaming_day_id=day.pk))
    limits = floor_selectors.day_session_limits(gaming_day_id=day.pk, sessions=sessions)
    # Each closed session's drawer, counted or not, linked to the session's page where the
    # Commissario or the Direzione counts it: after the close too, until the control register
    # is signed by both (tables.services.cash_count). One query however many sessions.
    drawers = {s.pk: s.drawer_counted for s in closed_sessions_with_drawer([day.pk]).get(day.pk, [])}
    # And each changeur's handover, the session running or closed: counted (its difference, the
    # chips' too when counted) or not, linked to its count or its count's form on the session's
    # page, so that every drawer relieved that day is seen. Two queries however many.
    # The final count in force of each drawer counted, its difference said beside its
    # handovers' (and whether it is a correction): one query however many.
    finals = final_counts_in_force([day.pk])
    handovers: dict[int, list] = {}
    for change in handovers_with_counts([day.pk]).get(day.pk, []):
        handovers.setdefault(change.session_id, []).append(change)
    context = {
        "day": day,
        "cards": [_report_card(r) for r in _reports().filter(gaming_day=day)],
        # Every minimum and maximum each session had, as the report's session lines give them.
        "sessions": [
            {"session": s, "limits": limits[s.pk], "drawer_counted": drawers.get(s.pk), "final": finals.get(s.pk),
             "handovers": handovers.get(s.pk, [])}
            for s in sessions
        ],
        # The tables whose drawer is not counted, named beside the register's signature: the
        # second one ends the late count (books_signed), and nothing said so where it is given.
        "uncounted_drawers": sorted({s.table.number for s in sessions if drawers.get(s.pk) is False}),
        # And the handovers not counted, each named (the changeur relieved, the table, the time).
        "uncounted_handovers": [change for s in sessions for change in handovers.get(s.pk, []) if change.count is None],
        "outcome": outcome,
        # A refused form's posted values, shown again in it (chemin_ui's typed tag).
        "typed": typed if outcome is not None and not outcome.ok else None,
        "verified": verified,
        "can_write": can_write,
        # The books: the Direzione keeps them here; the other readers (the auditors) see them
        # as they stand, without the forms.
        "books": _books(day, request.user) if not day.is_open else None,
        # The unclaimed stakes and winnings, open day or closed: the Commissario records them.
        "unclaimed": _unclaimed(day, request.user, sessions),
    }
    return render(request, "desk/day.html", context, status=outcome.status if outcome else 200)


@never_cache
@login_required
@require_GET
def day(request: HttpRequest, pk: int) -> HttpResponse:
    if not _readable(request):
        return _refused(request)
    return _day_page(request, get_object_or_404(floor_selectors.gaming_day_list(), pk=pk))


@never_cache
@login_required
@require_GET
def report_fragment(request: HttpRequest, pk: int) -> HttpResponse:
    """The report's card: what the page polls every 2 s while Celery builds the report
    (the answer for a built report carries no polling, so the polling stops)."""
    if not _readable(request):
        return _refused(request)
    report = get_object_or_404(_reports(), pk=pk)
    context = {"c": _report_card(report), "day": report.gaming_day, "earlier": []}
    if is_htmx(request) and report.is_current:
        # The poll that finds this version built: the earlier versions the page shows are now
        # superseded by it, so their cards come along, swapped in place (out of band).
        context["earlier"] = [_report_card(r) for r in _reports().filter(gaming_day_id=report.gaming_day_id,
                                                                           version__lt=report.version)]  # fmt: skip
    return render(request, "desk/_report_polled.html", context)


@login_required
@require_GET
def report_file(request: HttpRequest, pk: int, fmt: str) -> HttpResponse:
    """The stored file, streamed, with its recorded SHA-256 in X-Checksum-SHA256."""
    if not _readable(request):
        return _refused(request)
    f = get_object_or_404(ReportFile.objects.select_related("report"), report_id=pk, format=fmt)
    path = Path(settings.MEDIA_ROOT) / f.path
    if not path.is_file():
        return render(request, "404.html", {"message": _("The stored file is missing; verify the report.")},
                      status=404)  # fmt: skip
    response = FileResponse(open(path, "rb"), as_attachment=True, filename=path.name,  # noqa: SIM115
                            content_type=CONTENT_TYPES.get(fmt, "application/octet-stream"))  # fmt: skip
    response["X-Checksum-SHA256"] = f.sha256
    return response


def _explain(result: dict, report: DayReport | None = None) -> dict:
    """The verify service's answer with each reason in words; a stream it names is said in
    words too where `report` tells whose ("the day's books (stream day_books:3)")."""
    named = [r["first_broken"].get("stream") for r in result["reasons"] if isinstance(r.get("first_broken"), dict)]
    named += [h.get("stream") for r in result["reasons"] for h in (r.get("streams") or []) if isinstance(h, dict)]
    in_words = _streams_said(named, report)
    lines = []
    for reason in result["reasons"]:
        code = reason.get("code", "")
        text = str(REASONS.get(code, code)) % {
            "format": (reason.get("format") or "").upper(),
            **{key: reason.get(key, "") for key in ("table", "session", "coup", "stored", "recorded", "shoe",
                                                     "shoe_number", "position", "seq", "stream", "action",
                                                     "report", "version", "deposit", "exchange", "line",
                                                     "count")},
            "figure": LEVY_FIGURES.get(reason.get("figure"), reason.get("figure", "")),
            "patron": reason.get("patron", ""),
            "fields": _patron_fields(reason.get("fields")) if code.startswith("patron_") else "",
            **{key: _euros(reason.get(key)) for key in ("in_report", "in_trail")},
        }
        details = {"record_mismatch": _record_words, "postings_mismatch": _postings_words,
                   "bets_mismatch": _bets_words, "cards_mismatch": _cards_words, "coup_mismatch": _coup_words,
                   "books_mismatch": _books_words}  # fmt: skip
        if code in details:
            try:
                said = details[code](reason)
            except (TypeError, ValueError, KeyError, AttributeError):
                # Values a rewritten event put there that no row holds (a list for a card):
                # the first sentence stands, the details are in the API's answer.
                said = _("Its details are not all values the books hold; the API's answer lists them.")
            text = said if code == "record_mismatch" and reason.get("record") in RECORDS else f"{text} {said}".rstrip()
        broken = reason.get("first_broken")
        if broken:
            text += " " + _broken_words(broken, in_words)
        for head in reason.get("streams") or []:  # a seal_mismatch: the sealed heads no longer there
            words = (_("Event %(seq)s of %(stream)s: the sealed event is gone.") if head.get("now") is None
                     else _("Event %(seq)s of %(stream)s: the sealed event has another hash now."))  # fmt: skip
            text += " " + words % {"stream": _said(in_words, head.get("stream")), "seq": head.get("seq")}
        lines.append(text)
    return {**result, "lines": lines}


def _patron_fields(fields) -> str:
    """A patron's fields that differ, in words: "first name, last name"."""
    if not isinstance(fields, list):
        return ""
    return ", ".join(str(PATRON_FIELDS.get(f, f)) if isinstance(f, str) else str(f) for f in fields)


def _books_words(reason: dict) -> str:
    """Which count, at which table (by its number), or which register: the API's details."""
    words = BOOKS.get(reason.get("problem"))
    if words is None:
        return ""
    table = reason.get("table_number", reason.get("table", ""))
    return str(words % {"table": table, "count": reason.get("count", ""), "register": reason.get("register", ""),
                        "deposit": reason.get("deposit", "")})  # fmt: skip


def _euros(cents) -> str:
    return euros_exact(cents) if isinstance(cents, int) else ""


def _coup_words(reason: dict) -> str:
    """"Levy: 0.00 in the books, 26.20 in the audit trail." per field that differs, or that the
    coup is settled on one side only."""
    if not reason.get("settled_in_books"):
        return str(_("The books do not hold it as settled."))
    if not reason.get("settled_in_trail"):
        return str(_("The audit trail has no settlement of it."))

    def shown(field: str, value, sides: dict) -> str:
        if field == "winner":
            return str(WINNERS.get(value, value)) if value else "—"
        if field in MONEY_FIELDS:
            return euros_exact(value) if isinstance(value, int) else "—"
        if field == "punta":
            return _("patron %(patron)s") % {"patron": value} if value is not None else "—"
        if field == "settled_by":
            return _("user %(user)s") % {"user": value} if value is not None else "—"
        if field == "bank":
            return str(value) if value is not None else "—"
        if field in CARD_FIELDS:
            return " ".join(str(c) for c in value) if value else str(_("none"))
        if field == "violations":
            try:
                return violations_text(value) or str(_("none"))
            except (KeyError, TypeError, AttributeError):  # edited into a shape no violation has
                return str(value)
        if field in ("as_played", "settled"):
            try:
                return version_text(value) or "—"
            except (KeyError, TypeError, AttributeError):
                return str(value)
        if field == "settled_at":
            return _moment(value, sides)
        if isinstance(value, bool):
            return str(_("yes") if value else _("no"))
        return "—" if value is None else str(value)

    def named(field: str, values: dict, side: str) -> str:
        name = (values.get("names") or {}).get(side)  # the punta's, as the trail registered him
        if name and field == "settled_by":  # a member of staff, by his username
            return str(name)
        if name:
            return _("%(name)s (patron %(patron)s)") % {"name": _patron_name(name, values, side),
                                                        "patron": values.get(side)}  # fmt: skip
        return shown(field, values.get(side), values)

    return " ".join(
        _("%(field)s: %(books)s in the books, %(trail)s in the audit trail.")
        % {
            "field": COUP_FIELDS.get(field, field),
            "books": named(field, values, "in_books"),
            "trail": named(field, values, "in_trail"),
        }
        for field, values in (reason.get("fields") or {}).items()
    )


def _postings_words(reason: dict) -> str:
    """The entries that differ, each side: "In the books: Anna Rossi (patron 12, bettor)
    +60.00. In the audit trail: Anna Rossi (patron 12, bettor) +40.00." (the entries both
    sides share are left out)."""
    def stakes_of(side: str) -> list[str]:
        return sorted(repr((e.get("patron"), e.get("role"), e.get("amount"))) for e in reason.get(side) or [])

    entries = stakes_of("in_books") != stakes_of("in_trail")
    words = [_entries_words(reason, "role", ROLES, signed=True)] if entries or not reason.get("fields") else []
    for entry in reason.get("fields") or []:  # a posting's bet or time (audit.reports.ledger.POSTING_FIELDS)
        if entry.get("patron") is None:
            who = _("the house (cagnotte)")
        else:
            who = (_("%(name)s (patron %(patron)s, %(role)s)") if entry.get("name") else
                   _("patron %(patron)s (%(role)s)")) % {"name": _entry_name(entry), "patron": entry.get("patron"),
                                                        "role": ROLES.get(entry.get("role"), entry.get("role"))}  # fmt: skip
        field = entry.get("field")
        values = {"who": who, "field": POSTING_FIELD_NAMES.get(field, field),
                  "books": "—" if entry.get("in_books") is None else _bet_value(field, entry.get("in_books"), entry),
                  "trail": "—" if entry.get("in_trail") is None else _bet_value(field, entry.get("in_trail"), entry)}  # fmt: skip
        words.append(_("%(who)s, %(field)s: %(books)s in the books, %(trail)s in the audit trail.") % values)
    return " ".join(str(w) for w in words)


# A posting's field, in a postings_mismatch said in words (audit.reports.ledger.POSTING_FIELDS).
POSTING_FIELD_NAMES = {
    "bet": gettext_lazy("bet (its place in the betting order)"),
    "at": gettext_lazy("time"),
}


# A bet's field, in a bets_mismatch said in words (audit.reports.ledger.BET_FIELDS).
BET_FIELD_NAMES = {
    "seat": gettext_lazy("seat"),
    "order": gettext_lazy("place in the betting order"),
    "standing": gettext_lazy("standing"),
    "by": gettext_lazy("recorded by (user)"),
    "at": gettext_lazy("time"),
}


def _bets_words(reason: dict) -> str:
    """The bets that differ, each side: "In the books: Anna Rossi (patron 12, individual)
    80.00. In the audit trail: Anna Rossi (patron 12, individual) 50.00.", then each field
    of a bet that differs: "Anna Rossi (patron 12), seat: 3 in the books, 2 in the audit
    trail." (the stakes' sentence only when they differ)."""
    def stakes_of(side: str) -> list[str]:
        return sorted(repr((e.get("patron"), e.get("kind"), e.get("amount"))) for e in reason.get(side) or [])

    stakes = stakes_of("in_books") != stakes_of("in_trail")
    words = [_entries_words(reason, "kind", KINDS, signed=False)] if stakes or not reason.get("fields") else []
    for entry in reason.get("fields") or []:
        values = {"who": (_("%(name)s (patron %(patron)s)") if entry.get("name") else _("patron %(patron)s")) % {
                      "name": _entry_name(entry), "patron": entry.get("patron")},
                  "field": BET_FIELD_NAMES.get(entry.get("field"), entry.get("field")),
                  "books": _bet_value(entry.get("field"), entry.get("in_books"), entry),
                  "trail": _bet_value(entry.get("field"), entry.get("in_trail"), entry)}  # fmt: skip
        words.append(_("%(who)s, %(field)s: %(books)s in the books, %(trail)s in the audit trail.") % values)
    return " ".join(str(w) for w in words)


def _patron_name(name: str, sides: dict, side: str) -> str:
    """A patron's name as a reason gives it (`names`), said with "no registration on record"
    where `names_of_record` says it is his row's, the trail having registered no name of his
    (audit.reports.patrons.names_of_record); a staff member's username as it is."""
    return _name_said(name, (sides.get("names_of_record") or {}).get(side))


def _entry_name(entry: dict) -> str | None:
    """A posting's or bet's patron by his name (`name`, `name_of_record`), None without one."""
    name = entry.get("name")
    return _name_said(name, entry.get("name_of_record")) if name else None


def _name_said(name: str, of_record) -> str:
    if of_record is False:
        return _("%(name)s [no registration on record]") % {"name": name}
    return str(name)


def _bet_value(field: str | None, value, sides: dict | None = None) -> str:
    if field == "standing" and isinstance(value, bool):
        return str(_("yes") if value else _("no"))
    if field == "at":
        return _moment(value, sides or {})
    return str(value)


def _entries_words(reason: dict, label: str, labels: dict, *, signed: bool) -> str:
    def entries(side: str) -> list[tuple]:
        return [(p.get("patron"), p.get(label), p.get("amount"), _entry_name(p)) for p in reason.get(side) or []]

    books, trail = entries("in_books"), entries("in_trail")
    only_books, only_trail = list(books), list(trail)
    for entry in books:
        if entry in only_trail:
            only_trail.remove(entry)
            only_books.remove(entry)

    def said(side: list[tuple]) -> str:
        if not side:
            return str(_("nothing"))
        parts = []
        for patron, role, amount, name in side:
            if patron is None:
                template = _("the house (cagnotte) %(amount)s")
            elif name:
                template = _("%(name)s (patron %(patron)s, %(role)s) %(amount)s")
            else:
                template = _("patron %(patron)s (%(role)s) %(amount)s")
            parts.append(template % {"name": name, "patron": patron, "role": labels.get(role, role),
                                     "amount": ("+" if signed and amount > 0 else "") + euros_exact(amount)})  # fmt: skip
        return "; ".join(parts)

    return _("In the books: %(books)s. In the audit trail: %(trail)s.") % {
        "books": said(only_books), "trail": said(only_trail)}  # fmt: skip


def _aware(value) -> datetime | None:
    """An ISO time with its offset, in the casino's zone (a rewritten event's may be anything,
    a date that does not exist, one the zone's offset takes past year 9999: then None)."""
    try:
        when = parse_datetime(value) if isinstance(value, str) else value
        if not isinstance(when, datetime) or when.utcoffset() is None:
            return None
        return timezone.localtime(when)
    except (ValueError, OverflowError):
        return None


def _local_time(value) -> str:
    """An ISO time as the desk shows times: the casino's, to the second."""
    when = _aware(value)
    return when.strftime("%H:%M:%S") if when is not None else "—"


def _moment(value, sides: dict) -> str:
    """A time a mismatch names, in the casino's zone: its date and time to the second; to the
    microsecond when both sides say the same second; with its UTC offset when both sides
    say the same clock time an hour apart (the hour the October change repeats: 02:30 CEST
    and 02:30 CET; Python compares two times of one zone by their clocks, so equal)."""
    when = _aware(value)
    if when is None:
        return "—" if value is None else str(value)
    books, trail = _aware(sides.get("in_books")), _aware(sides.get("in_trail"))
    clock = "%Y-%m-%d %H:%M:%S"
    if books is None or trail is None or books.strftime(clock) != trail.strftime(clock):
        return when.strftime(clock)
    if books.utcoffset() != trail.utcoffset():
        return when.isoformat(sep=" ", timespec="seconds")
    return when.strftime(clock + ".%f")


def _record_words(reason: dict) -> str:
    """"Table 1, session 1, bank 2: Last bank: 1.00 in the books, 1,950.00 in the audit trail."
    per field that differs, or that the row is on one side only."""
    kind = reason.get("record")
    head = str(RECORDS.get(kind, kind)) % {
        "table": reason.get("table", ""), "session": reason.get("session", ""),
        "number": reason.get("number") if reason.get("number") is not None else "—",
        "succession": reason.get("succession") if reason.get("succession") is not None else "—",
        "at": _local_time(reason.get("at"))}  # fmt: skip
    if not reason.get("in_books"):
        return head + ": " + str(_("the books have no such row; the audit trail recorded it."))
    if not reason.get("in_trail"):
        return head + ": " + str(_("the audit trail has no record of this row in the books."))

    def shown(field: str, side: str, sides: dict) -> str:
        value = sides.get(side)
        name = (sides.get("names") or {}).get(side)
        if value is None or value == "":
            return "—"
        if name:
            return _patron_name(name, sides, side)
        if field in MONEY and isinstance(value, int):
            return euros_exact(value)
        if field in TIMES:
            return _moment(value, sides)
        if isinstance(value, bool):
            return str(_("yes") if value else _("no"))
        return str(value)

    said = _("%(field)s: %(books)s in the books, %(trail)s in the audit trail.")
    return head + ": " + " ".join(
        said % {"field": RECORD_FIELDS.get(f"{kind}.{field}") or RECORD_FIELDS.get(field, field),
                "books": shown(field, "in_books", sides),
                "trail": shown(field, "in_trail", sides)}
        for field, sides in (reason.get("fields") or {}).items()
    )  # fmt: skip


def _card_words(card: dict | None) -> str:
    """A shoe card as a cards_mismatch gives it: "2S, dealt to the punta in coup 3", "QS,
    voided (seen face up in the sabot)", or "no card"."""
    if not card:
        return str(_("no card"))
    values = {"card": card.get("card"), "coup": card.get("coup") or "—", "reason": card.get("reason") or "—",
              "side": WINNERS.get(card.get("side"), card.get("side") or "—")}  # fmt: skip
    use = card.get("use")
    if use == "dealt":
        text = _("%(card)s, dealt to the %(side)s in coup %(coup)s") % values
    elif use == "reconstruction":
        text = _("%(card)s, drawn for the reconstruction of coup %(coup)s") % values
    else:
        return _("%(card)s, voided (%(reason)s)") % values
    if card.get("voided"):
        text += _(", then voided (%(reason)s)") % values
    return text


def _cards_words(reason: dict) -> str:
    return _("In the books: %(books)s. In the audit trail: %(trail)s.") % {
        "books": _card_words(reason.get("in_books")), "trail": _card_words(reason.get("in_trail"))}  # fmt: skip


def _broken_words(broken: dict, said: dict[str, str]) -> str:
    """The first broken event: its seq in its stream, the stream in words (`said`, from
    `_streams_said`), its id and why."""
    return _("First broken event: event %(seq)s of %(stream)s, id %(event)s: %(why)s.") % {
        "stream": _said(said, broken.get("stream")),
        "seq": broken.get("seq"),
        "event": broken.get("event_id") or "—",
        "why": BREAKS.get(broken.get("reason"), broken.get("reason")),
    }


def _said(said: dict[str, str], name) -> str:
    """`name` in words where `said` has it; anything else (a value no stream name is) as itself."""
    return said.get(name, name) if isinstance(name, str) else name


def _streams_said(names, report: DayReport | None) -> dict[str, str]:
    """Each stream name said in words followed by its name, "table 2 session 1 (stream
    table_session:14)", the name alone where it has no words (`_stream_words`). The sessions
    named are read at once, and without a report the gaming days named too: two queries at
    most, whatever the names."""
    names = [n for n in dict.fromkeys(names) if isinstance(n, str)]
    keys = [(kind, int(key)) for kind, _sep, key in (n.partition(":") for n in names) if key.isascii() and key.isdigit()]
    pks = [pk for kind, pk in keys if kind == "table_session"]
    sessions = {s.pk: s for s in floor_selectors.table_session_list().filter(pk__in=pks)} if pks else {}
    days: dict[int, GamingDay] = {}
    if report is None and (day_pks := [pk for kind, pk in keys if kind in DAY_STREAMS]):
        days = {d.pk: d for d in floor_selectors.gaming_day_list().filter(pk__in=day_pks)}
    said = {}
    for name in names:
        words = _stream_words(name, report, sessions, days)
        said[name] = name if words == name else _("%(words)s (stream %(name)s)") % {"words": words, "name": name}
    return said


# The streams of a gaming day, by the prefix of their names, said for a day named by its date.
DAY_STREAMS = {
    "gaming_day": gettext_lazy("the floor of the gaming day of %(date)s"),
    "day_books": gettext_lazy("the books of the gaming day of %(date)s"),
    "reports": gettext_lazy("the report builds of the gaming day of %(date)s"),
}


def _stream_words(name: str, report: DayReport | None, sessions: dict[int, TableSession],
                  days: dict[int, GamingDay] | None = None) -> str:  # fmt: skip
    """An audit stream said in words ("the day's books", "table 2 session 1"), by the patterns
    the services name them with (floor.models' `audit_stream`, audit.services.books_stream,
    audit.reports.services.reports_stream); a name of another pattern, or of another day (or
    casino) than the report's, as itself. Without a report, a day's stream is named by its
    day's date where `days` holds it."""
    kind, _sep, key = name.partition(":")
    if name == "patrons":
        return _("the patrons' register")
    if not key.isascii() or not key.isdigit():
        return name
    pk = int(key)
    if kind == "table_session" and pk in sessions:
        return _("table %(table)s session %(session)s") % {"table": sessions[pk].table.number,
                                                           "session": sessions[pk].number}  # fmt: skip
    if kind == "table_session":  # (its row gone: the stream still says which)
        return _("table session %(id)s") % {"id": pk}
    if report is None:
        day = (days or {}).get(pk)
        if kind not in DAY_STREAMS or day is None:
            return name
        return DAY_STREAMS[kind] % {"date": date_format(day.date, "DATE_FORMAT")}
    if kind == "casino":  # (never sealed by a report so far: its casino read only then)
        return _("the casino") if pk == report.gaming_day.casino_id else name
    if pk != report.gaming_day_id:
        return name
    return {"gaming_day": _("the gaming day's floor"), "day_books": _("the day's books"),
            "reports": _("the day's report builds")}.get(kind, name)  # fmt: skip


def _later_events_words(later: dict[str, int], report: DayReport) -> list[tuple[str, str]]:
    """The events recorded after a report in the streams it seals, per stream: the address of
    those events on the desk's events page (its stream from the seq the report sealed it at
    plus one, oldest first: exactly the later events, not the whole stream) and it in words,
    "the day's books: 4 events" (the verify API's `later_events` keeps the streams' names).
    The sessions named are read at once: one query, or none."""
    pks = [int(key) for kind, _sep, key in (n.partition(":") for n in later)
           if kind == "table_session" and key.isascii() and key.isdigit()]  # fmt: skip
    sessions = {s.pk: s for s in floor_selectors.table_session_list().filter(pk__in=pks)} if pks else {}
    sealed = {head[0]: head[1] for head in report.sealed_heads or []}
    return [
        (_later_events_url(name, sealed.get(name)),
         ngettext("%(stream)s: %(n)s event", "%(stream)s: %(n)s events", n)
         % {"stream": _stream_words(name, report, sessions), "n": n})
        for name, n in later.items()
    ]  # fmt: skip


def _later_events_url(stream: str, sealed_seq: int | None) -> str:
    """The desk's events page of `stream` after its event `sealed_seq`, oldest first (the
    whole stream, oldest first, where no seq was sealed)."""
    query = {"stream": stream}
    if isinstance(sealed_seq, int) and not isinstance(sealed_seq, bool):
        query["seq_min"] = str(sealed_seq + 1)
    query["order"] = "oldest"
    return f"{reverse('desk-events')}?{urlencode(query)}"


def _day_page_url(pk: int) -> str:
    return reverse("desk-day", args=[pk])


def _day_of(model):
    """The address of the day page that shows the `model` row `pk` (its form's page), or the
    desk's when there is no such row: a GET on its form's action goes there (post_only)."""

    def page(pk: int) -> str:
        day = model.objects.filter(pk=pk).values_list("gaming_day_id", flat=True).first()
        return reverse("desk") if day is None else _day_page_url(day)

    return page


@login_required
@post_only(_day_of(DayReport))
def report_verify_view(request: HttpRequest, pk: int) -> HttpResponse:
    """Recompute the files' SHA-256, the day's seal and its chains. Writes nothing."""
    if not _readable(request):
        return _refused(request)
    report = get_object_or_404(_reports(), pk=pk)
    if (throttled := _verify_throttled(request)) is not None:
        return throttled
    try:
        verified = _explain(report_verify(report=report), report)
        verified["later_said"] = _later_events_words(verified.get("later_events") or {}, report)
    except ApplicationError as exc:
        verified = {"ok": False, "report": report.pk, "files": [], "chains": None, "seal": None,
                    "lines": [_("The report is not built yet.") if exc.code == "report_not_built" else str(exc.message)]}  # fmt: skip
    if is_htmx(request):
        return render(request, "desk/_verified.html", {"v": verified, "report": report})
    return _day_page(request, report.gaming_day, verified=verified)


@login_required
def trail_verify(request: HttpRequest) -> HttpResponse:
    """GET: the page with its button; POST: chain_verify over every stream (read-only)."""
    if not _readable(request):
        return _refused(request)
    if request.method not in ("GET", "POST"):
        return HttpResponse(status=405, headers={"Allow": "GET, POST"})
    result = None
    if request.method == "POST":
        if (throttled := _verify_throttled(request)) is not None:
            return throttled
        r = chain_verify()
        broken = r.as_dict()["first_broken"] if r.first_broken else None
        result = {"ok": r.ok, "streams": r.streams_checked, "events": r.events_checked, "seconds": r.seconds,
                  "broken": _broken_words(broken, _streams_said([broken.get("stream")], None)) if broken else ""}  # fmt: skip
    template = "desk/_trail.html" if is_htmx(request) and result else "desk/trail.html"
    return render(request, template, {"result": result})


# --------------------------------------------------------------------------- the direzione's books


def _user_field(request: HttpRequest, field: str):
    pk = int_field(request.POST.get(field), field=field, empty=_("Choose a member of staff."))
    user = get_user_model().objects.filter(pk=pk, is_active=True).first()
    if user is None:
        raise BadForm("unknown_user", _("Choose a member of staff."), details={field: pk})
    return user


# A deposit's own words for a code the counts also use (audit.reports.unclaimed).
DEPOSIT_REFUSALS = {
    "invalid_amount": gettext_lazy("Enter an amount above zero and within ten million euro."),
}


def _books_post(request: HttpRequest, day: GamingDay, run, refusals: dict | None = None, *,
                form: str = "", row="") -> HttpResponse:  # fmt: skip
    def guarded() -> str:
        try:
            return run()
        except ApplicationError as exc:
            if refusals and exc.code in refusals:
                # Said as this form says it, not as the floor's common words for the code do.
                raise BadForm(exc.code, str(refusals[exc.code]), details=exc.details,
                              status_code=exc.status_code) from None  # fmt: skip
            if exc.code in BOOK_REFUSALS:
                exc.message = _book_refusal(exc.code, exc.details or {})
            raise

    outcome = form_post(request, guarded)
    day = floor_selectors.gaming_day_get(pk=day.pk)
    # `form` names the form (and `row` its row) whose typing a refusal gives back to it.
    typed = {"form": form, "pk": str(row), "values": request.POST} if form else None
    return _day_page(request, day, outcome=outcome, typed=typed)


def _book_refusal(code: str, details: dict) -> str:
    """A refusal of the books in the page's language, naming what its details name: the
    tables whose cagnotte is not counted (audit.reports.registers, `tables`: their numbers),
    which the register's form otherwise left the Direzione to look for."""
    tables = details.get("tables")
    if code == "cagnotte_not_counted" and isinstance(tables, list) and tables and all(type(n) is int for n in tables):
        return ngettext(
            "Count the cagnotte of table %(tables)s first.", "Count the cagnotte of tables %(tables)s first.",
            len(tables),
        ) % {"tables": ", ".join(str(n) for n in tables)}  # fmt: skip
    return str(BOOK_REFUSALS[code])


# The count's two amounts, as a refused figure names its field (euros_to_cents' label): the
# cagnotte's and the tips' were both answered "Enter an amount in euros".
COUNT_FIELDS = {"counted": gettext_lazy("Counted"), "tips": gettext_lazy("Tips (staff's)")}


def _count_euros(raw: str | None, field: str) -> int:
    return euros_to_cents(raw, field=field, label=str(COUNT_FIELDS[field]))


def _optional_euros(request: HttpRequest, field: str) -> int | None:
    raw = request.POST.get(field)
    return None if raw is None or not raw.strip() else _count_euros(raw, field)


def _writer(request: HttpRequest) -> HttpResponse | None:
    if not has_role(request.user, Role.DIREZIONE):
        return forbidden(request, _("Only the Direzione Giochi may do this."))
    return None


@login_required
@post_only(_day_page_url)
def cagnotte_count(request: HttpRequest, pk: int) -> HttpResponse:
    if (refusal := _writer(request)) is not None:
        return refusal
    day = floor_selectors.gaming_day_or_404(pk=pk)

    def run() -> str:
        table_pk = int_field(request.POST.get("table"), field="table", empty=_("Choose a table."))
        table = floor_selectors.table_get(pk=table_pk)
        if table is None:
            raise BadForm("unknown_table", _("Choose a table."), details={"table": table_pk})
        # The tips box is opened and counted with the cagnotte's (RULES.md §6): the desk asks
        # for both (0 when the box is empty), so no count it enters leaves the tips unsaid.
        count = registers.cagnotte_count_record(
            gaming_day=day, table=table, by=request.user, witness=_user_field(request, "witness"),
            counted=_count_euros(request.POST.get("counted"), "counted"), note=request.POST.get("note", ""),
            tips=_count_euros(request.POST.get("tips"), "tips"),
        )  # fmt: skip
        return _("Cagnotte of table %(number)s counted: € %(amount)s; tips € %(tips)s.") % {
            "number": table.number, "amount": euros_exact(count.counted), "tips": euros_exact(count.tips)}  # fmt: skip

    return _books_post(request, day, run, form="count", row=request.POST.get("table", ""))


@login_required
@post_only(_day_of(CagnotteCount))
def cagnotte_count_correct(request: HttpRequest, pk: int) -> HttpResponse:
    """A miscount corrected: a new count, with a witness and the reason, that refers to the
    one in force (the first is kept, as the API does)."""
    if (refusal := _writer(request)) is not None:
        return refusal
    count = get_object_or_404(CagnotteCount.objects.select_related("table"), pk=pk)
    day = count.gaming_day

    def run() -> str:
        # A figure left blank is the corrected count's (the tips alone may be corrected).
        new = registers.cagnotte_count_correct(
            count=count, by=request.user, witness=_user_field(request, "witness"),
            counted=_optional_euros(request, "counted"), tips=_optional_euros(request, "tips"),
            note=request.POST.get("note", ""),
        )  # fmt: skip
        if new.tips is None:
            return _("Count of table %(number)s corrected: € %(amount)s.") % {
                "number": count.table.number, "amount": euros_exact(new.counted)}  # fmt: skip
        return _("Count of table %(number)s corrected: € %(amount)s; tips € %(tips)s.") % {
            "number": count.table.number, "amount": euros_exact(new.counted), "tips": euros_exact(new.tips)}  # fmt: skip

    return _books_post(request, day, run, form="recount", row=count.pk)


@login_required
@post_only(_day_page_url)
def register_prepare(request: HttpRequest, pk: int) -> HttpResponse:
    if (refusal := _writer(request)) is not None:
        return refusal
    day = floor_selectors.gaming_day_or_404(pk=pk)

    def run() -> str:
        reg = registers.control_register_prepare(gaming_day=day, by=request.user)
        return _("Control register written: total € %(amount)s.") % {"amount": euros_exact(reg.total)}

    return _books_post(request, day, run)


@login_required
@post_only(_day_of(ControlRegister))
def register_correct(request: HttpRequest, pk: int) -> HttpResponse:
    if (refusal := _writer(request)) is not None:
        return refusal
    reg = get_object_or_404(ControlRegister, pk=pk)

    def run() -> str:
        new = registers.control_register_correct(register=reg, by=request.user, reason=request.POST.get("reason", ""))
        return _("Correction written: total € %(amount)s; it needs its two signatures.") % {
            "amount": euros_exact(new.total)}  # fmt: skip

    # refused, the reason typed is given back to its form (it came back empty)
    return _books_post(request, reg.gaming_day, run, form="register-correct", row=reg.pk)


@login_required
@post_only(_day_of(ControlRegister))
def register_sign(request: HttpRequest, pk: int) -> HttpResponse:
    if (refusal := _writer(request)) is not None:
        return refusal
    reg = get_object_or_404(ControlRegister, pk=pk)

    def run() -> str:
        signed = registers.control_register_sign(register=reg, by=request.user)
        if signed.signed:
            return _("Second signature entered: the register is final; the next report version is being built.")
        return _("First signature entered: another member of the Direzione signs second.")

    return _books_post(request, reg.gaming_day, run)


# --------------------------------------------------------------------------- unclaimed deposits


def _optional_int(request: HttpRequest, field: str) -> int | None:
    raw = (request.POST.get(field) or "").strip()
    return None if not raw else int_field(raw, field=field)


@login_required
@post_only(_day_page_url)
def unclaimed_deposit(request: HttpRequest, pk: int) -> HttpResponse:
    """The Commissario records a stake or winnings left unclaimed and deposited (RULES.md §6)."""
    if not has_role(request.user, *unclaimed.DEPOSIT_ROLES):
        return forbidden(request, _("Only the Commissario di Gioco records an unclaimed deposit."))
    day = floor_selectors.gaming_day_or_404(pk=pk)

    def run() -> str:
        session_pk = int_field(request.POST.get("session"), field="session", empty=_("Choose a table session."))
        session = floor_selectors.table_session_get(pk=session_pk)
        if session is None:
            raise BadForm("unknown_session", _("Choose a table session."), details={"session": session_pk})
        coup = None
        number = _optional_int(request, "coup")
        if number is not None:
            coup = report_selectors.coup_by_number(session_id=session.pk, number=number)
            if coup is None:
                raise BadForm("unknown_coup", _("That session has no coup of this number."), details={"coup": number})
        patron = None
        patron_pk = _optional_int(request, "patron")
        if patron_pk is not None:
            patron = floor_selectors.patron_get(pk=patron_pk)
            if patron is None:
                raise BadForm("unknown_patron", _("Choose a patron."), details={"patron": patron_pk})
        kind = request.POST.get("kind", "")
        if kind not in UnclaimedDeposit.Kind.values:
            raise BadForm("unknown_kind", _("Choose a stake or winnings."), details={"kind": kind[:40]})
        deposit = unclaimed.unclaimed_deposit_record(
            gaming_day=day, session=session, by=request.user, kind=kind,
            amount=euros_to_cents(request.POST.get("amount"), field="amount"),
            deposited_in=request.POST.get("deposited_in", ""), note=request.POST.get("note", ""),
            coup=coup, patron=patron,
        )  # fmt: skip
        return _("Deposit recorded: € %(amount)s, table %(number)s.") % {
            "amount": euros_exact(deposit.amount), "number": session.table.number}  # fmt: skip

    return _books_post(request, day, run, DEPOSIT_REFUSALS, form="deposit")


@login_required
@post_only(_day_of(UnclaimedDeposit))
def unclaimed_return(request: HttpRequest, pk: int) -> HttpResponse:
    """A patron comes back for what he left: the Commissario or the Direzione hands it back."""
    if not has_role(request.user, *unclaimed.RETURN_ROLES):
        return forbidden(request, _("Only the Commissario or the Direzione hands back a deposit."))
    deposit = get_object_or_404(UnclaimedDeposit, pk=pk)

    def run() -> str:
        patron = None
        patron_pk = _optional_int(request, "patron")
        if patron_pk is not None:
            patron = floor_selectors.patron_get(pk=patron_pk)
            if patron is None:
                raise BadForm("unknown_patron", _("Choose a patron."), details={"patron": patron_pk})
        returned = unclaimed.unclaimed_deposit_return(
            deposit=deposit, by=request.user, returned_to=request.POST.get("returned_to", ""), patron=patron,
            note=request.POST.get("note", ""),
        )  # fmt: skip
        return _("Handed back to %(whom)s: € %(amount)s.") % {
            "whom": returned.returned_to, "amount": euros_exact(returned.amount)}  # fmt: skip

    return _books_post(request, deposit.gaming_day, run)
