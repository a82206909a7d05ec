"""Reading the end-of-day reports: each version with the latest built version of its day.

A gaming day's report is produced again when its control register is signed (version 2),
and again for each signed correction (3, 4, ...). The latest BUILT version is the one in
force; every earlier version is superseded by it. A version still being built, or whose
build failed, supersedes nothing: until it is built the version before it stays current.
Reports have no kind besides their version (version 1 at the close, then one per signed
register), so "latest" is per gaming day.

The latest version is two correlated subqueries in the same SELECT (index
audit_report_day_version_unique), so a list costs one query however many versions a day
has, and a page of the API's list knows the latest version even when it is on another page."""

from __future__ import annotations

from django.db.models import OuterRef, QuerySet, Subquery

from audit.models import DayReport


def _latest_built() -> QuerySet[DayReport]:
    return DayReport.objects.filter(gaming_day_id=OuterRef("gaming_day_id"), status=DayReport.Status.DONE).order_by(
        "-version"
    )


def with_latest(qs: QuerySet[DayReport]) -> QuerySet[DayReport]:
    """`qs` annotated with `latest_id` and `latest_version`: the latest built report of each
    report's gaming day (None when none is built). Read them through DayReport.superseded_by_id,
    .superseded_by_version and .is_current."""
    latest = _latest_built()
    return qs.annotate(
        latest_id=Subquery(latest.values("pk")[:1]),
        latest_version=Subquery(latest.values("version")[:1]),
    )


def report_list() -> QuerySet[DayReport]:
    """Every report, each knowing the latest built version of its day."""
    return with_latest(DayReport.objects.all())
