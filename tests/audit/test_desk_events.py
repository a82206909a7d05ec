"""The desk's events page (/desk/events/): the audit trail browsed in a browser, as the API
lists it. The API's readers and no one else, the API's filters giving the API's events, its
pages keeping the filters, a bad filter said (400) and never a 500, any payload shown
escaped, the same queries however many events, in Italian too; nothing written."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from audit.models import AuditEvent
from audit.services import record

pytestmark = pytest.mark.django_db

PAGE, API = "/desk/events/", "/api/audit/events/"


@pytest.fixture
def browser_of():
    def make(user) -> Client:
        client = Client()
        client.force_login(user)
        return client

    return make


def listed(response) -> list[int]:
    """The events a page lists, in its order (each row carries its event's id)."""
    assert response.status_code == 200, response.content[:2000]
    return [int(pk) for pk in re.findall(r'<tr data-event="(\d+)">', response.content.decode())]


def api_ids(api_client, params: dict) -> list[int]:
    response = api_client.get(API, {**params, "page_size": 500})
    assert response.status_code == 200, response.content
    return [row["id"] for row in response.json()["results"]]


def _trail(auditor, commissario, chain) -> None:
    """Three streams, two actors, three actions: every filter selects some events, not all."""
    chain("table:1", 4, actor=commissario)
    chain("table:1", 2, actor=auditor, action="minimum.changed")
    chain("table:2", 3, actor=auditor)
    chain("floor:day", 1, action="role.granted")
    with transaction.atomic():
        record(stream="floor:day", actor=commissario, action="role.granted", subject=auditor, data={"role": "auditor"})


@pytest.mark.parametrize("role", ["auditor", "direzione", "commissario"])
def test_the_api_s_readers_browse_the_events(request, browser_of, chain, role):
    events = chain("table:1", 2)
    response = browser_of(request.getfixturevalue(role)).get(PAGE)
    assert listed(response) == [events[1].pk, events[0].pk]  # newest first
    assert "Audit trail: the events" in response.content.decode()


@pytest.mark.parametrize("role", ["capo_partita", "changeur", "outsider"])
def test_the_others_are_refused_as_by_the_api(request, browser_of, api, chain, role):
    chain("table:1", 2)
    user = request.getfixturevalue(role)
    response = browser_of(user).get(PAGE)
    assert response.status_code == 403
    assert 'data-event="' not in response.content.decode()
    assert api(user).get(API).status_code == 403  # the same rule


def test_a_superuser_without_an_audit_role_is_refused_and_anonymous_logs_in(browser_of, user_factory, chain):
    chain("table:1")
    admin = user_factory("root", is_superuser=True, is_staff=True)
    assert browser_of(admin).get(PAGE).status_code == 403
    anonymous = Client().get(PAGE)
    assert anonymous.status_code == 302 and "/login" in anonymous["Location"]


def test_the_page_writes_nothing_and_takes_no_post(browser_of, auditor, chain):
    chain("table:1", 2)
    before = AuditEvent.objects.count()
    client = browser_of(auditor)
    assert client.post(PAGE, {"stream": "table:1"}).status_code == 405
    assert client.get(PAGE, {"stream": "table:1"}).status_code == 200
    assert AuditEvent.objects.count() == before
    assert 'method="get"' in client.get(PAGE).content.decode()


def test_a_row_says_the_time_stream_seq_action_actor_subject_payload_and_hash(browser_of, auditor, commissario):
    with transaction.atomic():
        event = record(stream="gaming_day:7", actor=commissario, action="minimum.changed", subject=commissario,
                       data={"old": 100_00, "new": 200_00, "reason": "busy night"})  # fmt: skip
    html = browser_of(auditor).get(PAGE).content.decode()
    row = re.search(rf'<tr data-event="{event.pk}">(.*?)</tr>', html, re.S).group(1)
    local = timezone.localtime(event.at).strftime("%Y-%m-%d %H:%M:%S")
    assert local in row  # the casino's wall clock
    assert ">gaming_day:7</a>" in row and 'href="?stream=gaming_day%3A7"' in row
    assert '<td class="num" data-label="Seq">1</td>' in row and "minimum.changed" in row
    assert f"{commissario.get_full_name()} <small" in row and f"({commissario.username})" in row
    assert f">auth.user {commissario.pk}</a>" in row
    assert f'href="?subject_type=auth.user&amp;subject_id={commissario.pk}"' in row
    assert "{&quot;new&quot;:20000,&quot;old&quot;:10000,&quot;reason&quot;:&quot;busy night&quot;}" in row
    assert f'title="{event.hash}">{event.hash[:12]}…</code>' in row


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"stream": ""},  # empty: no filter
        {"stream": "table:1"},
        {"stream": "floor:day"},
        {"stream": "nope"},
        {"action": "minimum.changed"},
        {"action_prefix": "coup."},
        {"action_prefix": "minimum."},
        {"actor": "commissario"},
        {"actor_name": "auditor"},
        {"subject_type": "auth.user"},
        {"subject_id": "nope"},
        {"at_after": "2000-01-01T00:00:00Z"},
        {"at_before": "2000-01-01T00:00:00Z"},
        {"at_after": "past"},
        {"at_before": "future"},
        {"stream": "table:1", "action": "minimum.changed"},
        {"stream": "table:1", "actor_name": "auditor"},
        {"stream": "table:1", "action_prefix": "minimum."},
        {"stream": "table:2", "action_prefix": "minimum."},  # nothing
        {"stream": "table:1", "at_before": "2000-01-01T00:00:00Z"},
        {"action_prefix": "coup.", "actor": "auditor", "at_after": "past", "at_before": "future"},
        {"seq_min": "2"},
        {"seq_max": "1"},
        {"seq_min": "2", "seq_max": "3"},
        {"stream": "table:1", "seq_min": "3"},
        {"stream": "table:1", "seq_min": "2", "seq_max": "5", "order": "oldest"},
        {"stream": "table:1", "seq_min": "9"},  # nothing
        {"order": "oldest"},
        {"order": "newest"},
        {"action_prefix": "coup.", "seq_max": "3", "order": "oldest"},
    ],
    ids=lambda params: "&".join(f"{k}={v}" for k, v in params.items()) or "unfiltered",
)
def test_each_filter_and_their_combinations_list_the_api_s_events(
    browser_of, api, auditor, commissario, chain, params
):
    _trail(auditor, commissario, chain)
    users = {"commissario": commissario.pk, "auditor": auditor.pk}
    # the casino's wall clock as a page's reader types it: no offset
    moments = {"past": (timezone.localtime() - timedelta(hours=1)).strftime("%Y-%m-%d %H:%M"),
               "future": (timezone.localtime() + timedelta(hours=1)).strftime("%Y-%m-%d %H:%M")}  # fmt: skip
    params = {k: str(users[v]) if k == "actor" else moments.get(v, v) for k, v in params.items()}
    expected = api_ids(api(auditor), params)
    assert listed(browser_of(auditor).get(PAGE, {**params, "page_size": 500})) == expected
    if params.keys() & {"action", "action_prefix", "actor", "actor_name", "subject_type"} and params.get("stream") != "table:2":
        assert 0 < len(expected) < AuditEvent.objects.count()  # the filter was applied
    if params.keys() & {"seq_min", "seq_max"} and params.get("seq_min") != "9":
        assert 0 < len(expected) < AuditEvent.objects.count()  # the range was applied
    if params.get("order") == "oldest":
        assert expected == sorted(expected)
    # the form gives back what was asked
    html = browser_of(auditor).get(PAGE, params).content.decode()
    for key, value in params.items():
        if value and key != "order":
            assert f'name="{key}" value="{value}"' in html
    order = params.get("order") or "newest"
    assert f'<option value="{order}" selected>' in html and html.count(" selected>") == 1


def _follow(client, query: dict) -> tuple[list[int], list[str]]:
    """Every page from the first, by its "Older events" link: the ids and the links followed."""
    seen, links, response = [], [], client.get(PAGE, query)
    while True:
        seen += listed(response)
        found = re.search(r'<a class="button-link" href="\?([^"]*)" rel="next">', response.content.decode())
        if not found:
            return seen, links
        link = found.group(1).replace("&amp;", "&")
        links.append(link)
        response = client.get(f"{PAGE}?{link}")


@pytest.mark.parametrize(
    "params",
    [{}, {"stream": "table:1"}, {"action_prefix": "coup."}, {"stream": "table:1", "actor_name": "auditor"},
     {"stream": "table:1", "seq_min": "2", "order": "oldest"}, {"seq_max": "4", "order": "oldest"},
     {"seq_min": "2", "seq_max": "6"}, {"action_prefix": "coup.", "seq_min": "2", "order": "oldest"}],
    ids=["unfiltered (counted)", "stream (counted)", "action_prefix (not counted)", "stream+actor_name",
         "stream+seq_min+oldest (counted)", "seq_max+oldest (counted)", "seq range (counted)",
         "action_prefix+seq_min+oldest (not counted)"],
)  # fmt: skip
def test_the_pages_keep_the_filters_and_walk_every_event_once(browser_of, api, auditor, commissario, chain, params):
    _trail(auditor, commissario, chain)
    chain("table:1", 5, actor=auditor)
    client = browser_of(auditor)
    seen, links = _follow(client, {**params, "page_size": 2})
    expected = api_ids(api(auditor), params)
    assert seen == expected and len(seen) == len(set(seen)) > 2
    assert len(links) == -(-len(expected) // 2) - 1
    for link in links:
        for key, value in params.items():
            assert f"{key}={value.replace(':', '%3A')}" in link, link
        assert "page_size=2" in link
    # a page past the last is no page, as in the API
    assert client.get(PAGE, {**params, "page_size": 2, "page": len(links) + 2}).status_code == 404
    # the way back keeps them too
    last = client.get(f"{PAGE}?{links[-1]}").content.decode()
    back = re.search(r'href="\?([^"]*)" rel="prev"', last).group(1).replace("&amp;", "&")
    assert all(f"{k}={v.replace(':', '%3A')}" in back for k, v in params.items())


def test_a_counted_list_says_how_many_and_of_how_many_pages(browser_of, auditor, commissario, chain):
    _trail(auditor, commissario, chain)
    client = browser_of(auditor)
    html = client.get(PAGE, {"stream": "table:1", "page_size": 4}).content.decode()
    assert "6 events" in html and "11 events" in client.get(PAGE).content.decode() and "Page 1 of 2" in html
    html = client.get(PAGE, {"action_prefix": "coup.", "page_size": 4}).content.decode()
    assert "not counted" in html and "Page 1</span>" in html
    assert "No event matches these filters." in client.get(PAGE, {"stream": "nope"}).content.decode()
    # the stream and a seq range are counted too, exactly (seqs 2 to 5 of table:1's 6)
    html = client.get(PAGE, {"stream": "table:1", "seq_min": "2", "seq_max": "5", "page_size": 3}).content.decode()
    assert "4 events" in html and "Page 1 of 2" in html
    assert "8 events" in client.get(PAGE, {"seq_min": "2", "order": "oldest"}).content.decode()
    html = client.get(PAGE, {"stream": "table:1", "seq_min": "7"}).content.decode()
    assert "No event matches these filters." in html


def test_oldest_first_is_said_and_its_pages_lead_to_the_newer_events(browser_of, auditor, commissario, chain):
    _trail(auditor, commissario, chain)
    client = browser_of(auditor)
    html = client.get(PAGE, {"stream": "table:1", "seq_min": "2", "order": "oldest", "page_size": 2}).content.decode()
    assert "oldest first; reading only" in html and "Events, oldest first: page 1 of 3" in html
    assert re.search(r'rel="next">Newer events →</a>', html) and "Older events" not in html
    seqs = [int(n) for n in re.findall(r'<td class="num" data-label="Seq">(\d+)</td>', html)]
    assert seqs == [2, 3]
    html = client.get(PAGE, {"stream": "table:1", "seq_min": "2", "order": "oldest", "page_size": 2,
                             "page": "2"}).content.decode()  # fmt: skip
    assert re.search(r'rel="prev">← Older events</a>', html) and re.search(r'rel="next">Newer events →</a>', html)
    # newest first, as before: said so
    html = client.get(PAGE, {"stream": "table:1", "page_size": 2, "page": "2"}).content.decode()
    assert "newest first; reading only" in html and "Events, newest first: page 2 of 3" in html
    assert re.search(r'rel="prev">← Newer events</a>', html) and re.search(r'rel="next">Older events →</a>', html)
    # the form offers both orders and the seq range, typed in digits
    assert '<select id="filter-order" name="order"><option value="newest" selected>Newest first</option>' in html
    assert '<option value="oldest">Oldest first</option>' in html
    for name in ("seq_min", "seq_max"):
        assert re.search(rf'<input type="text" id="filter-{name}" name="{name}" value=""[^>]* inputmode="numeric"', html)


@pytest.mark.parametrize(
    ("params", "said"),
    [
        ({"actor": "abc"}, "Actor (user id): Enter a whole number."),
        ({"actor": "1.5"}, "Actor (user id): Enter a whole number."),
        ({"actor": "0"}, "Actor (user id): Ensure this value is greater than or equal to 1."),
        ({"at_after": "yesterday"}, "Time range: Enter a valid date/time."),
        ({"at_before": "2026-13-45T99:00"}, "Time range: Enter a valid date/time."),
        ({"page_size": "0"}, "Events a page: a whole number from 1 to 500."),
        ({"page_size": "x"}, "Events a page: a whole number from 1 to 500."),
        ({"strem": "table:1"}, "“strem” is not a filter of this page."),
        ({"stream": "bad\x00name"}, "Stream: Null characters are not allowed."),
        ({"seq_min": "0"}, "From seq: Ensure this value is greater than or equal to 1."),
        ({"seq_min": "two"}, "From seq: Enter a whole number."),
        ({"seq_max": "1.5"}, "Up to seq: Enter a whole number."),
        ({"seq_max": "-3"}, "Up to seq: Enter a whole number."),
        ({"order": "sideways"}, "Order: Select a valid choice. sideways is not one of the available choices."),
    ],
)
def test_a_bad_filter_is_said_and_lists_nothing(browser_of, api, auditor, chain, params, said):
    chain("table:1", 2)
    response = browser_of(auditor).get(PAGE, params)
    html = response.content.decode()
    assert response.status_code == 400
    assert said.replace("“", "&ldquo;") in html or said in html, html[-3000:]
    assert 'data-event="' not in html and 'role="alert"' in html
    assert api(auditor).get(API, params).status_code == 400  # the API refuses it too


def test_odd_page_numbers_are_no_page(browser_of, auditor, chain):
    chain("table:1", 2)
    client = browser_of(auditor)
    for page in ("x", "-1", "0", "1.0", "\uff11", "99", "9" * 7):
        assert client.get(PAGE, {"page": page}).status_code == 404, page
    assert listed(client.get(PAGE, {"page": ""}))  # empty: the first page


def test_a_huge_page_size_is_the_api_s_largest(browser_of, api, auditor, chain):
    chain("table:1", 3)
    assert listed(browser_of(auditor).get(PAGE, {"page_size": "100000"})) == api_ids(api(auditor), {})


def test_any_payload_is_shown_escaped_and_whole(browser_of, auditor, chain, tamper):
    long_text = "ü" * 300
    with transaction.atomic():
        odd = record(stream="table:1", actor=None, action="odd.payload", data={
            "html": "<script>alert('x')</script> & \"quoted\"",
            "nested": {"deep": [1, {"deeper": [None, True, 25, "€ 1 500,00"]}]},
            "long": long_text, "unicode": "Caffè ☕ 𝄞 日本",
        })  # fmt: skip
    [broken] = chain("table:2")
    [surrogate] = chain("table:3")
    [deep] = chain("table:4")
    tamper("UPDATE audit_auditevent SET payload_json = %s WHERE id = %s", ("not json <b>at all</b>", broken.pk))
    tamper("UPDATE audit_auditevent SET payload_json = %s WHERE id = %s", ('{"a":"\\ud800"}', surrogate.pk))
    tamper("UPDATE audit_auditevent SET payload_json = %s WHERE id = %s", ("[" * 100_000 + "]" * 100_000, deep.pk))
    response = browser_of(auditor).get(PAGE)
    html = response.content.decode()
    assert set(listed(response)) == {odd.pk, broken.pk, surrogate.pk, deep.pk}
    row = re.search(rf'<tr data-event="{odd.pk}">(.*?)</tr>', html, re.S).group(1)
    assert "<script>" not in html.split("<main", 1)[1] and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in row
    assert "&amp; \\&quot;quoted\\&quot;" in row
    assert "<details><summary>" in row and long_text in row  # the whole of it, under its first characters
    assert "Caffè ☕ 𝄞 日本" in row and "€ 1 500,00" in row
    assert '"deeper": [\n' in row.replace("&quot;", '"')  # indented
    bad = re.search(rf'<tr data-event="{broken.pk}">(.*?)</tr>', html, re.S).group(1)
    assert "not json &lt;b&gt;at all&lt;/b&gt;" in bad
    assert "\\ud800" in re.search(rf'<tr data-event="{surrogate.pk}">(.*?)</tr>', html, re.S).group(1)


def test_the_queries_do_not_grow_with_the_events(browser_of, auditor, commissario, chain):
    client = browser_of(auditor)
    client.get(PAGE)  # warm: the session and the user's roles
    queries = [{}, {"stream": "table:0"}, {"action": "coup.recorded"}, {"action_prefix": "coup.", "actor_name": "auditor"},
               {"page": "2", "page_size": "1"}, {"seq_min": "2", "order": "oldest"},
               {"stream": "table:0", "seq_min": "2", "seq_max": "11", "order": "oldest"},
               {"seq_max": "3", "actor_name": "auditor"}]  # fmt: skip

    def counts() -> list[int]:
        found = []
        for params in queries:
            with CaptureQueriesContext(connection) as captured:
                assert client.get(PAGE, {"page_size": "200", **params}).status_code == 200
            found.append(len(captured))
        return found

    chain("table:0", 2, actor=auditor)
    few = counts()
    for n in range(6):
        chain(f"table:{n}", 12, actor=commissario if n % 2 else auditor, nested={"n": n})
    many = counts()
    assert AuditEvent.objects.count() == 74
    assert few == many and max(many) <= 6, (few, many)


def test_the_page_in_italian(browser_of, auditor, chain):
    chain("table:1", 2)
    client = browser_of(auditor)
    html = client.get(PAGE, HTTP_ACCEPT_LANGUAGE="it").content.decode()
    assert '<html lang="it">' in html
    assert "Traccia di audit: gli eventi" in html and "Mostra questi eventi" in html
    assert "Flusso" in html and "Azione" in html and "2 eventi" in html
    assert "Dai più recenti</option>" in html and "Dai meno recenti</option>" in html
    assert "Da seq</label>" in html and "Fino a seq</label>" in html
    oldest = client.get(PAGE, {"order": "oldest"}, HTTP_ACCEPT_LANGUAGE="it").content.decode()
    assert "dai meno recenti; sola lettura" in oldest and "Eventi, dai meno recenti: pagina 1 di 1" in oldest
    refused = client.get(PAGE, {"actor": "x"}, HTTP_ACCEPT_LANGUAGE="it")
    assert refused.status_code == 400
    assert "Attore (id utente): Inserisci un numero intero." in refused.content.decode()
    assert "Questi filtri non si possono applicare" in refused.content.decode()


def test_the_desk_and_the_verify_page_lead_to_the_events(browser_of, auditor, gaming_day):
    client = browser_of(auditor)
    for url in ("/desk/", "/desk/verify/"):
        assert '<a class="button-link" href="/desk/events/">Browse the audit trail</a>' in client.get(url).content.decode()
    html = client.get(f"/desk/days/{gaming_day.pk}/").content.decode()
    assert f'href="/desk/events/?stream=day_books%3A{gaming_day.pk}"' in html
    assert f'href="/desk/events/?stream=gaming_day%3A{gaming_day.pk}"' in html
    listed_day = client.get(PAGE, {"stream": f"gaming_day:{gaming_day.pk}"})
    assert listed(listed_day) == list(
        AuditEvent.objects.filter(stream__name=f"gaming_day:{gaming_day.pk}").order_by("-id").values_list("pk", flat=True)
    ) != []
