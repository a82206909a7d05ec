"""Report versions: a version that a later BUILT version of its gaming day replaces is
superseded by it (the API's `superseded_by`, `current`), whatever page of the list it is on,
in a constant number of queries however many versions there are. A version being built or
failed supersedes nothing. The superseded version's stored files are not touched."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from audit.models import DayReport
from audit.reports.selectors import report_list
from tests.factories import GamingDayFactory

pytestmark = pytest.mark.django_db

DONE, PENDING, FAILED = DayReport.Status.DONE, DayReport.Status.PENDING, DayReport.Status.FAILED


def version(day, number: int, status: str = DONE) -> DayReport:
    # Rows as a build leaves them (the figures do not matter here): building real versions
    # needs signed registers, which tests/pages/test_desk.py goes through once.
    return DayReport.objects.create(gaming_day=day, version=number, status=status, requested_at=timezone.now(),
                                    built_at=timezone.now() if status == DONE else None,
                                    summary={"rows": 1} if status == DONE else {})  # fmt: skip


def states(day) -> list[tuple[int, int | None, bool]]:
    return [(r.version, r.superseded_by_version, r.is_current)
            for r in report_list().filter(gaming_day=day).order_by("version")]  # fmt: skip


def test_the_latest_built_version_is_current_and_supersedes_the_earlier_ones():
    day = GamingDayFactory()
    v1 = version(day, 1)
    assert states(day) == [(1, None, True)]
    v2 = version(day, 2, PENDING)  # being built: version 1 stays in force until it is
    assert states(day) == [(1, None, True), (2, None, False)]
    v2.status = FAILED
    v2.save()
    assert states(day) == [(1, None, True), (2, None, False)]
    version(day, 3)
    assert states(day) == [(1, 3, False), (2, 3, False), (3, None, True)]
    # Another day's versions are its own.
    other = GamingDayFactory()
    version(other, 1)
    assert states(other) == [(1, None, True)]
    assert report_list().get(pk=v1.pk).superseded_by_id == DayReport.objects.get(gaming_day=day, version=3).pk


def test_the_api_says_which_version_is_superseded_and_by_which(api, auditor):
    day = GamingDayFactory()
    v1, v2 = version(day, 1), version(day, 2)
    client = api(auditor)
    listed = {r["id"]: r for r in client.get(f"/api/reports/?gaming_day={day.pk}").json()["results"]}
    assert (listed[v1.pk]["superseded_by"], listed[v1.pk]["current"]) == (v2.pk, False)
    assert (listed[v2.pk]["superseded_by"], listed[v2.pk]["current"]) == (None, True)
    assert client.get(f"/api/reports/{v1.pk}/").json()["superseded_by"] == v2.pk
    assert client.get(f"/api/gaming-days/{day.pk}/report/?version=1").json()["superseded_by"] == v2.pk
    latest = client.get(f"/api/gaming-days/{day.pk}/report/").json()
    assert (latest["id"], latest["superseded_by"], latest["current"]) == (v2.pk, None, True)


def test_a_page_of_the_list_knows_the_latest_version_on_another_page(api, auditor):
    day = GamingDayFactory()
    v1, v2 = version(day, 1), version(day, 2)
    page = api(auditor).get(f"/api/reports/?gaming_day={day.pk}&page_size=1").json()
    assert page["next"] and [r["id"] for r in page["results"]] == [v1.pk]  # version 2 is on the next page
    assert page["results"][0]["superseded_by"] == v2.pk


def test_the_schema_documents_the_fields(api, auditor):
    schema = api(auditor).get("/api/schema/?format=json").json()
    props = schema["components"]["schemas"]["ReportOutput"]["properties"]
    assert props["superseded_by"]["type"] == "integer" and props["superseded_by"]["nullable"] is True
    assert "latest built report" in props["superseded_by"]["description"]
    assert props["current"]["type"] == "boolean" and props["current"]["readOnly"] is True


@pytest.mark.parametrize("url", ["/api/reports/?gaming_day={day}", "/api/reports/{v1}/",
                                 "/api/gaming-days/{day}/report/", "/api/gaming-days/{day}/report/?version=1"])  # fmt: skip
def test_the_queries_do_not_grow_with_the_versions(api, auditor, url):
    client = api(auditor)
    client.get("/api/me/")  # the user's roles are looked up once, then cached on him

    def queries(versions: int) -> int:
        day = GamingDayFactory()
        reports = [version(day, n) for n in range(1, versions + 1)]
        with CaptureQueriesContext(connection) as captured:
            response = client.get(url.format(day=day.pk, v1=reports[0].pk))
        assert response.status_code == 200, response.content
        return len(captured)

    assert queries(1) == queries(4)
