"""The audit API: who may read it, its filters, its query count, and the read-only verify."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from audit.models import AuditEvent, AuditStream
from audit.selectors import stream_events

pytestmark = pytest.mark.django_db

EVENTS, STREAMS, VERIFY = "/api/audit/events/", "/api/audit/streams/", "/api/audit/verify/"


def assert_error(response, status: int, code: str) -> None:
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"error"}
    assert body["error"]["code"] == code
    assert set(body["error"]) == {"code", "message", "details"}


@pytest.mark.parametrize("role", ["auditor", "direzione", "commissario"])
def test_readers_may_list_and_verify(request, api, chain, role):
    chain("table:1", 2)
    client = api(request.getfixturevalue(role))

    events = client.get(EVENTS)
    streams = client.get(STREAMS)
    verify = client.post(VERIFY, {}, format="json")

    assert events.status_code == 200 and events.json()["count"] == 2
    assert streams.status_code == 200
    assert streams.json()["results"][0] == {
        "name": "table:1",
        "seq": 2,
        "head_hash": AuditStream.objects.get().head_hash,
    }
    assert verify.status_code == 200
    assert verify.json() | {"seconds": 0} == {
        "ok": True,
        "streams_checked": 1,
        "events_checked": 2,
        "seconds": 0,
        "first_broken": None,
    }


@pytest.mark.parametrize("role", ["capo_partita", "changeur", "outsider"])
@pytest.mark.parametrize(("method", "url"), [("get", EVENTS), ("get", STREAMS), ("post", VERIFY)])
def test_other_staff_are_refused_with_the_error_shape(request, api, role, method, url):
    response = getattr(api(request.getfixturevalue(role)), method)(url)
    assert_error(response, 403, "permission_denied")


def test_a_superuser_without_an_audit_role_is_refused(api, user_factory):
    admin = user_factory("root", is_superuser=True, is_staff=True)
    assert_error(api(admin).get(EVENTS), 403, "permission_denied")


@pytest.mark.parametrize(("method", "url"), [("get", EVENTS), ("get", STREAMS), ("post", VERIFY)])
def test_anonymous_is_refused_with_the_error_shape(api, method, url):
    response = getattr(api(), method)(url)
    assert response.status_code in (401, 403)
    assert_error(response, response.status_code, "not_authenticated")


@pytest.mark.parametrize(("method", "url"), [("put", EVENTS), ("delete", STREAMS), ("get", VERIFY), ("post", EVENTS)])
def test_nothing_else_is_offered(api, auditor, method, url):
    assert_error(getattr(api(auditor), method)(url), 405, "method_not_allowed")


def test_events_are_listed_newest_first_with_their_content(api, auditor, chain):
    first, second = chain("table:1", 2, actor=auditor, pot=1200)
    [row, _] = api(auditor).get(EVENTS).json()["results"]
    assert row == {
        "id": second.pk,
        "stream": "table:1",
        "seq": 2,
        "at": row["at"],
        "actor": auditor.pk,
        "actor_name": "auditor",
        "action": "coup.recorded",
        "subject_type": "",
        "subject_id": "",
        "payload": {"i": 1, "pot": 1200},
        "prev_hash": first.hash,
        "hash": second.hash,
    }


def ids(response) -> set[int]:
    assert response.status_code == 200, response.content
    return {row["id"] for row in response.json()["results"]}


def test_event_filters(api, auditor, commissario, chain):
    a = chain("table:1", 2, actor=commissario)
    b = chain("table:2", 1, action="minimum.changed")
    chain("floor:day", 1, action="role.granted")
    client = api(auditor)

    assert ids(client.get(EVENTS, {"stream": "table:1"})) == {e.pk for e in a}
    assert ids(client.get(EVENTS, {"action": "minimum.changed"})) == {b[0].pk}
    assert ids(client.get(EVENTS, {"action_prefix": "coup."})) == {e.pk for e in a}
    assert ids(client.get(EVENTS, {"actor": commissario.pk})) == {e.pk for e in a}
    assert ids(client.get(EVENTS, {"actor_name": "commissario"})) == {e.pk for e in a}
    assert ids(client.get(EVENTS, {"stream": "nope"})) == set()


def test_subject_filters(api, auditor, commissario, chain):
    from django.db import transaction

    from audit.services import record

    with transaction.atomic():
        about = record(stream="floor:day", actor=None, action="role.granted", subject=commissario)
    chain("floor:day", 2)
    client = api(auditor)
    assert ids(client.get(EVENTS, {"subject_type": "auth.user", "subject_id": str(commissario.pk)})) == {about.pk}
    assert ids(client.get(EVENTS, {"subject_type": "tables.coup"})) == set()


def test_time_filters(api, auditor, chain):
    chain("table:1", 3)
    now = timezone.now()
    client = api(auditor)
    everything = ids(client.get(EVENTS))
    assert ids(client.get(EVENTS, {"at_after": (now - timedelta(minutes=5)).isoformat()})) == everything
    assert ids(client.get(EVENTS, {"at_before": (now - timedelta(minutes=5)).isoformat()})) == set()
    assert ids(client.get(EVENTS, {"at_after": (now + timedelta(minutes=5)).isoformat()})) == set()


def test_time_filters_take_any_utc_offset_and_compare_instants(api, auditor, chain):
    # PostgreSQL refuses UTC offsets past ±15:59 that Python parses: compared in UTC (tests/fuzz).
    chain("table:1", 2)
    client = api(auditor)
    everything = ids(client.get(EVENTS))
    far_east = timezone.get_fixed_timezone(19 * 60 + 46)
    before = (timezone.now() - timedelta(minutes=5)).astimezone(far_east).isoformat()
    after = (timezone.now() + timedelta(minutes=5)).astimezone(far_east).isoformat()
    assert "+19:46" in before
    assert ids(client.get(EVENTS, {"at_after": before})) == everything
    assert ids(client.get(EVENTS, {"at_after": after})) == set()
    assert ids(client.get(EVENTS, {"at_before": after})) == everything


@pytest.mark.parametrize(
    "params",
    [
        {"at_after": "0001-01-01"},  # midnight in Rome: year 0 in UTC
        {"at_after": "0001-01-01T00:00:00+05:00"},
        {"at_before": "9999-12-31T23:00:00-05:00"},  # year 10000 in UTC
        {"at_after": "0001-01-01", "at_before": "9999-12-31T23:59:59"},
    ],
)
def test_the_calendar_edges_mean_from_the_beginning_or_to_the_end(api, auditor, chain, params):
    # Was a 400 naming a parameter `at` that does not exist: an auditor asking for everything
    # since 0001-01-01 gets everything.
    chain("table:1", 2)
    client = api(auditor)
    response = client.get(EVENTS, params)
    assert response.status_code == 200, response.json()
    assert ids(response) == ids(client.get(EVENTS)) != set()


def test_a_local_time_that_does_not_exist_is_a_400(api, auditor, chain):
    chain("table:1")
    assert_error(api(auditor).get(EVENTS, {"at_before": "2026-03-29T02:30:00"}), 400, "invalid_input")


def test_stream_filters(api, auditor, chain):
    chain("table:1")
    chain("table:2")
    chain("floor:day")
    client = api(auditor)
    names = {r["name"] for r in client.get(STREAMS, {"name_prefix": "table:"}).json()["results"]}
    assert names == {"table:1", "table:2"}
    assert client.get(STREAMS, {"name": "floor:day"}).json()["count"] == 1


def _seqs(response) -> list[tuple[str, int]]:
    assert response.status_code == 200, response.content
    return [(row["stream"], row["seq"]) for row in response.json()["results"]]


def test_the_seq_range_selects_the_events_by_their_number_in_their_stream(api, auditor, chain):
    chain("table:1", 5)
    chain("table:2", 3)
    client = api(auditor)
    # both ends inclusive, newest first as ever
    assert _seqs(client.get(EVENTS, {"stream": "table:1", "seq_min": 2, "seq_max": 4})) == [
        ("table:1", 4), ("table:1", 3), ("table:1", 2)
    ]  # fmt: skip
    assert _seqs(client.get(EVENTS, {"stream": "table:1", "seq_min": 5})) == [("table:1", 5)]
    assert _seqs(client.get(EVENTS, {"stream": "table:1", "seq_max": 1})) == [("table:1", 1)]
    # without a stream, in every stream
    assert _seqs(client.get(EVENTS, {"seq_min": 3})) == [("table:2", 3), ("table:1", 5), ("table:1", 4), ("table:1", 3)]
    assert _seqs(client.get(EVENTS, {"seq_max": 1})) == [("table:2", 1), ("table:1", 1)]
    assert _seqs(client.get(EVENTS, {"seq_min": 4, "seq_max": 3})) == []
    assert _seqs(client.get(EVENTS, {"stream": "table:2", "seq_min": 4})) == []
    # counted exactly, from the heads
    assert client.get(EVENTS, {"seq_min": 3}).json()["count"] == 4
    assert client.get(EVENTS, {"stream": "table:1", "seq_min": 2, "seq_max": 4}).json()["count"] == 3
    assert client.get(EVENTS, {"stream": "table:2", "seq_min": 2, "seq_max": 40}).json()["count"] == 2
    assert client.get(EVENTS, {"seq_min": 4, "seq_max": 3}).json()["count"] == 0


def test_the_order_oldest_lists_the_oldest_first_and_newest_is_the_default(api, auditor, chain):
    a = chain("table:1", 2)
    b = chain("table:2", 2)
    c = chain("table:1", 2)
    client = api(auditor)
    default = client.get(EVENTS).json()
    assert client.get(EVENTS, {"order": "newest"}).json() == default  # nothing else changed
    assert [row["id"] for row in default["results"]] == [e.pk for e in reversed(a + b + c)]
    oldest = client.get(EVENTS, {"order": "oldest"}).json()
    assert [row["id"] for row in oldest["results"]] == [e.pk for e in a + b + c] and oldest["count"] == 6
    # with a stream: seq ascending, the seq range and the count with it
    body = client.get(EVENTS, {"stream": "table:1", "seq_min": 2, "order": "oldest"}).json()
    assert [(row["stream"], row["seq"]) for row in body["results"]] == [("table:1", s) for s in (2, 3, 4)]
    assert body["count"] == 3
    # its pages walk every event once, in that order, and keep the filters
    walked, url, query = [], EVENTS, {"stream": "table:1", "seq_min": 2, "order": "oldest", "page_size": 2}
    while url:
        body = client.get(url, query).json()
        assert body["count"] == 3
        walked += [row["seq"] for row in body["results"]]
        url, query = body["next"], None
        assert url is None or ("seq_min=2" in url and "order=oldest" in url and "stream=table%3A1" in url)
    assert walked == [2, 3, 4]
    # beside another filter (not counted), oldest first too
    body = client.get(EVENTS, {"action_prefix": "coup.", "order": "oldest", "page_size": 4}).json()
    assert body["count"] is None and [row["id"] for row in body["results"]] == [e.pk for e in (a + b)]


@pytest.mark.parametrize(
    "params",
    [
        {"seq_min": "0"},
        {"seq_min": "-1"},
        {"seq_min": "1.5"},
        {"seq_min": "abc"},
        {"seq_min": "+1"},
        {"seq_min": " 1"},
        {"seq_min": "\uff11"},
        {"seq_max": "0"},
        {"seq_max": "2e3"},
        {"order": "sideways"},
        {"order": "OLDEST"},
        {"order": "-id"},
    ],
)
def test_a_bad_seq_or_order_is_a_400_naming_it(api, auditor, chain, params):
    chain("table:1", 2)
    client = api(auditor)
    response = client.get(EVENTS, {"stream": "table:1", **params})
    assert_error(response, 400, "invalid_input")
    [(key, said)] = response.json()["error"]["details"].items()
    assert key in params and "Not a filter of this list" not in str(said)  # a filter of it, its value refused
    good = {"seq_min": "1", "seq_max": "2", "order": "oldest"}[key]
    assert ids(client.get(EVENTS, {"stream": "table:1", key: good})) != set()


@pytest.mark.parametrize(
    "params",
    [
        {"actor": "abc"},
        {"actor": "1.5"},
        {"actor": "-1"},
        {"at_after": "yesterday"},
        {"at_before": "2026-13-45T99:00"},
        {"stream": "a\x00b"},
    ],
)
def test_bad_filters_are_a_400_not_a_500(api, auditor, chain, params):
    chain("table:1")
    assert_error(api(auditor).get(EVENTS, params), 400, "invalid_input")


def test_huge_numbers_and_odd_pages_never_give_a_500(api, auditor, chain):
    chain("table:1")
    client = api(auditor)
    assert ids(client.get(EVENTS, {"actor": str(10**30)})) == set()
    assert_error(client.get(EVENTS, {"page": "999"}), 404, "not_found")
    assert_error(client.get(EVENTS, {"page": "x"}), 404, "not_found")
    assert client.get(EVENTS, {"page_size": "100000"}).status_code == 200


def test_the_events_list_costs_the_same_queries_whatever_the_number_of_events(api, auditor, chain):
    client = api(auditor)
    client.get(EVENTS)  # warm up: the role lookup is cached per user object

    # The seq range and the order too, counted by the heads (with the stream or not) or not
    # counted (beside another filter).
    listings = [{}, {"seq_min": "2"}, {"stream": "table:1", "seq_min": "2", "seq_max": "9", "order": "oldest"},
                {"order": "oldest"}, {"seq_max": "5", "actor_name": "auditor", "order": "oldest"}]  # fmt: skip

    def queries_for_listing() -> list[int]:
        found = []
        for params in listings:
            with CaptureQueriesContext(connection) as captured:
                assert client.get(EVENTS, {"page_size": 500, **params}).status_code == 200
            found.append(len(captured))
        return found

    chain("table:1", 2, actor=auditor)
    few = queries_for_listing()
    for n in range(8):
        chain(f"table:{n}", 10, actor=auditor)
    many = queries_for_listing()

    assert AuditEvent.objects.count() == 82
    assert few == many and max(many) <= 4, (few, many)


@pytest.mark.parametrize("query", [{"action": "minimum.changed"}, {"action_prefix": "minimum."}])
def test_the_events_of_one_action_are_read_through_an_index(api, auditor, chain, query):
    """A season's trail holds hundreds of thousands of events, a few of them the action an
    auditor asks for (the minimum changes, the counts): the list and its count read those
    through the action's index, not every event of the trail (they did: a sequential scan to
    count them, and the whole trail read backwards when fewer than a page were found)."""
    chain("table:1", 300, actor=auditor)
    chain("table:2", 3, actor=auditor, action="minimum.changed")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE audit_auditevent")
    client = api(auditor)
    with CaptureQueriesContext(connection) as captured:
        response = client.get(EVENTS, query)
    assert response.status_code == 200 and len(response.json()["results"]) == 3
    assert response.json()["count"] is None  # filtered: not counted
    reads = [q["sql"] for q in captured if 'FROM "audit_auditevent"' in q["sql"]]
    assert len(reads) == 1, reads  # the page (and the row beyond it), no count
    with connection.cursor() as cursor:
        for sql in reads:
            cursor.execute("EXPLAIN " + sql)
            plan = "\n".join(row[0] for row in cursor.fetchall())
            assert "audit_event_action_idx" in plan and "Seq Scan on audit_auditevent" not in plan, plan


def _trail(auditor, commissario, chain) -> None:
    """Three streams, two actors, three actions: every filter selects some events, not all."""
    chain("table:1", 4, actor=commissario)
    chain("table:1", 2, actor=auditor, action="minimum.changed")
    chain("table:2", 3, actor=auditor)
    chain("floor:day", 1, action="role.granted")


def _event_counts(captured) -> list[str]:
    return [q["sql"] for q in captured if "COUNT(" in q["sql"].upper() and 'FROM "audit_auditevent"' in q["sql"]]


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"stream": ""},  # empty: no filter
        {"stream": "table:1"},
        {"stream": "floor:day"},
        {"stream": "nope"},  # no such stream
        {"action": "minimum.changed"},
        {"action_prefix": "coup."},
        {"actor": "commissario"},
        {"actor_name": "auditor"},
        {"subject_type": "auth.user"},
        {"at_after": "2000-01-01T00:00:00Z"},
        {"stream": "table:1", "action": "minimum.changed"},
        {"stream": "table:1", "actor_name": "auditor"},
        {"stream": "table:2", "action_prefix": "minimum."},
        {"stream": "table:1", "at_before": "2000-01-01T00:00:00Z"},
        # The seq range and the order: counted by the heads, alone or with the stream.
        {"seq_min": "2"},
        {"seq_max": "3"},
        {"seq_min": "2", "seq_max": "4"},
        {"seq_min": "5", "seq_max": "2"},  # nothing
        {"seq_min": "7"},  # beyond every head: nothing
        {"seq_max": str(10**30)},  # beyond what a head can reach: every event
        {"seq_min": str(10**30)},
        {"stream": "table:1", "seq_min": "3"},
        {"stream": "table:1", "seq_min": "2", "seq_max": "4"},
        {"stream": "table:1", "seq_max": "9"},
        {"stream": "nope", "seq_min": "1"},
        {"order": "oldest"},
        {"order": "newest"},
        {"stream": "table:1", "seq_min": "3", "order": "oldest"},
        {"seq_min": "2", "seq_max": "3", "order": "oldest"},
        # Beside another filter: not counted.
        {"seq_min": "2", "action": "minimum.changed"},
        {"stream": "table:1", "seq_min": "2", "actor_name": "auditor", "order": "oldest"},
    ],
    ids=lambda params: "&".join(f"{k}={v}" for k, v in params.items()) or "unfiltered",
)
def test_the_events_count_is_the_number_of_events_listed(api, auditor, commissario, chain, params):
    # Unfiltered or by stream only, the count is read from the stream heads (their seqs), not
    # counted over the trail: it is the same number, and the pages and their links with it.
    # With any other filter nothing is counted (`count` null): `next` walks the pages, each
    # event once, and says none after the last (a page reads one row beyond its end).
    _trail(auditor, commissario, chain)
    params = {k: str(commissario.pk) if k == "actor" else v for k, v in params.items()}
    counted = {k for k, v in params.items() if v} <= {"stream", "seq_min", "seq_max", "order"}
    client = api(auditor)
    real = AuditEvent.objects.filter(pk__in=stream_events(filters=params).values("pk")).count()
    everything = ids(client.get(EVENTS, {**params, "page_size": 500}))
    assert len(everything) == real
    pages, seen, url = 0, [], EVENTS
    query = {**params, "page_size": 3}
    while url:
        with CaptureQueriesContext(connection) as captured:
            body = client.get(url, query).json()
        assert body["count"] == (real if counted else None)
        assert _event_counts(captured) == []  # never counted over the events
        assert (body["previous"] is None) == (pages == 0)
        seen += [row["id"] for row in body["results"]]
        url, query, pages = body["next"], None, pages + 1
    assert len(seen) == len(set(seen)) and set(seen) == everything and pages == max(1, -(-real // 3))


def test_the_unfiltered_and_stream_lists_count_no_event(api, auditor, commissario, chain):
    _trail(auditor, commissario, chain)
    client = api(auditor)
    client.get(EVENTS)  # warm up: the role lookup is cached per user object
    for params, count in (({}, 10), ({"stream": "table:1"}, 6), ({"stream": "nope"}, 0)):
        with CaptureQueriesContext(connection) as captured:
            response = client.get(EVENTS, params)
        assert response.status_code == 200 and response.json()["count"] == count
        assert _event_counts(captured) == [], params
        reads = [q["sql"] for q in captured if '"audit_' in q["sql"]]
        assert len(reads) == (2 if count else 1), reads  # the heads' seqs, and the page if any
        assert 'FROM "audit_auditstream"' in reads[0] and "SUM(" in reads[0].upper()
    # Any other filter, alone or beside the stream: nothing is counted, `count` is null.
    for params in ({"stream": "table:1", "action": "minimum.changed"}, {"actor_name": "auditor"}):
        with CaptureQueriesContext(connection) as captured:
            response = client.get(EVENTS, params)
        assert response.status_code == 200 and response.json()["count"] is None
        assert _event_counts(captured) == [], params


@pytest.mark.parametrize("size", [1, 2, 5, 6, 7])
def test_a_filtered_list_counts_nothing_and_its_pages_walk_every_event_once(
    api, auditor, commissario, chain, size
):
    """QA: on a season's trail (600,000 events) the COUNT(*) of an `action_prefix` filter cost
    21 ms a page. Filtered otherwise than by the stream alone, no COUNT query runs: each page
    reads its rows and the one beyond, `next` leads to the following page while there is one,
    and the pages together give every matching event once, newest first."""
    chain("table:1", 4, actor=commissario, action="minimum.changed")
    chain("table:2", 3, actor=auditor)
    chain("table:2", 2, actor=auditor, action="minimum.changed")
    client = api(auditor)
    client.get(EVENTS)  # warm up: the role lookup is cached per user object
    matching = list(AuditEvent.objects.filter(action__startswith="minimum.").order_by("-id")
                    .values_list("pk", flat=True))  # fmt: skip
    assert len(matching) == 6
    walked, url, query, pages = [], EVENTS, {"action_prefix": "minimum.", "page_size": size}, 0
    while url:
        with CaptureQueriesContext(connection) as captured:
            response = client.get(url, query)
        assert response.status_code == 200
        body = response.json()
        assert body["count"] is None and _event_counts(captured) == []
        assert not any("COUNT(" in q["sql"].upper() for q in captured), [q["sql"] for q in captured]
        assert len(body["results"]) == (size if body["next"] else len(matching) - size * pages)
        walked += [row["id"] for row in body["results"]]
        url, query, pages = body["next"], None, pages + 1
    assert walked == matching and pages == -(-6 // size)
    # A page past the last one, and `last` (no count to find it by): an invalid page.
    assert_error(client.get(EVENTS, {"action_prefix": "minimum.", "page_size": size, "page": pages + 1}), 404,
                 "not_found")  # fmt: skip
    assert_error(client.get(EVENTS, {"action_prefix": "minimum.", "page": "last"}), 404, "not_found")
    # Nothing matching: one empty page, not counted.
    body = client.get(EVENTS, {"action_prefix": "nothing."}).json()
    assert (body["count"], body["next"], body["previous"], body["results"]) == (None, None, None, [])


def test_an_empty_trail_counts_nothing(api, auditor):
    client = api(auditor)
    for params in ({}, {"stream": "table:1"}):
        body = client.get(EVENTS, params).json()
        assert body == {"count": 0, "next": None, "previous": None, "results": []}
    assert_error(client.get(EVENTS, {"page": "2"}), 404, "not_found")


def test_a_queryset_derived_from_one_counted_by_heads_counts_its_own_rows(chain):
    chain("table:1", 3)
    chain("table:2", 2, action="minimum.changed")
    counted = AuditEvent.objects.counted_by_heads()
    assert counted.count() == 5
    assert counted.filter(action="minimum.changed").count() == 2
    assert counted[:1].count() == 1
    assert AuditEvent.objects.filter(stream__name="table:2").counted_by_heads(stream="table:2").count() == 2
    assert AuditEvent.objects.none().counted_by_heads(stream="table:3").count() == 0


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"streams": []}, "invalid_input"),
        ({"streams": "table:1"}, "invalid_input"),
        ({"streams": [1, {"a": 1}]}, "invalid_input"),
        ({"streams": ["x" * 201]}, "invalid_input"),
        (["table:1"], "invalid_input"),
        ({"streams": ["table:1", "ghost"]}, "unknown_stream"),
    ],
)
def test_verify_refuses_bad_bodies_with_a_400(api, auditor, chain, body, code):
    chain("table:1")
    assert_error(api(auditor).post(VERIFY, body, format="json"), 400, code)


def test_verify_malformed_json_is_a_400(api, auditor):
    response = api(auditor).post(VERIFY, "{not json", content_type="application/json")
    assert_error(response, 400, "malformed_request")


def test_verify_reports_the_first_broken_event(api, auditor, chain, tamper):
    chain("table:1", 2)
    victim = chain("table:2", 3)[1]
    tamper("UPDATE audit_auditevent SET payload_json = '{}' WHERE id = %s", (victim.pk,))
    client = api(auditor)

    body = client.post(VERIFY, {}, format="json").json()
    assert body["ok"] is False
    assert body["first_broken"] | {"message": ""} == {
        "stream": "table:2",
        "seq": 2,
        "event_id": victim.pk,
        "reason": "hash_mismatch",
        "message": "",
    }
    assert client.post(VERIFY, {"streams": ["table:1"]}, format="json").json()["ok"] is True


@pytest.mark.django_db(transaction=True)
def test_verify_writes_nothing_and_runs_read_only(api, chain):
    from .conftest import make_user

    auditor = make_user("auditor2", "auditor")
    chain("table:1", 3)
    client = api(auditor)
    before = list(AuditStream.objects.values_list("name", "seq", "head_hash"))

    with CaptureQueriesContext(connection) as captured:
        assert client.post(VERIFY, {}, format="json").json()["ok"] is True

    statements = [q["sql"].lstrip().split()[0].upper() for q in captured]
    assert not {"INSERT", "UPDATE", "DELETE"} & set(statements)
    assert any("READ ONLY" in q["sql"] for q in captured)
    assert list(AuditStream.objects.values_list("name", "seq", "head_hash")) == before


def test_the_schema_documents_the_endpoints_and_their_errors(api, auditor):
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    verify = schema["paths"]["/api/audit/verify/"]["post"]
    assert "writes nothing" in verify["description"]
    assert {"200", "400", "401", "403"} <= set(verify["responses"])
    listing = schema["paths"]["/api/audit/events/"]["get"]
    params = {p["name"] for p in listing["parameters"]}
    assert {"stream", "action", "subject_type", "subject_id", "actor", "at_after", "at_before", "page"} <= params
    assert {"seq_min", "seq_max", "order"} <= params
    [order] = [p for p in listing["parameters"] if p["name"] == "order"]
    assert order["schema"]["enum"] == ["newest", "oldest"]
    for name in ("`seq_min`", "`seq_max`", "`order`", "`oldest`"):
        assert name in listing["description"], name
    # `count` is null when a filter other than the stream is in use: nothing is counted then.
    page = listing["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    count = schema["components"]["schemas"][page]["properties"]["count"]
    assert count["nullable"] is True and "Null with any other filter" in count["description"]
    assert "nothing is counted" in listing["description"]
