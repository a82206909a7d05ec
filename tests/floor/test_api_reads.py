"""What the read endpoints return, their filters, and a constant number of queries per
list however many rows it has."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from floor import services
from floor.models import TableSession
from tests.factories import (
    CasinoFactory,
    PatronFactory,
    SeatFactory,
    SiteFactory,
    TableFactory,
    TableSessionFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


def test_session_detail_shows_seats_counts_and_interruptions(
    table_session, commissario, seat_patrons, api_client_for, auditor
):
    seat_patrons(table_session, 6)
    standing = services.seat_assign(session=table_session, patron=PatronFactory(), standing=True, by=commissario)
    services.table_minimum_change(session=table_session, by=commissario, minimum=150_00, reason="busy")
    body = api_client_for(auditor).get(f"/api/sessions/{table_session.pk}/").json()
    assert body["seated_count"] == 6 and body["min_seats_to_start"] == 6 and body["can_start"] is True
    assert body["minimum"] == 150_00 and body["status"] == "open" and body["number"] == 1
    assert len(body["seats"]) == 7
    assert body["seats"][-1]["id"] == standing.pk and body["seats"][-1]["standing"] is True
    assert body["capo_partita"]["username"] == "capo_partita"
    assert body["interruptions"] == []

    client = api_client_for(commissario)
    interrupted = client.post(f"/api/sessions/{table_session.pk}/interrupt/", {"reason": "dispute"}).json()
    assert interrupted["status"] == "interrupted" and interrupted["can_start"] is False
    assert interrupted["interruptions"][0]["reason"] == "dispute"
    assert interrupted["interruptions"][0]["resumed_at"] is None
    resumed = client.post(f"/api/sessions/{table_session.pk}/resume/", {}).json()
    assert resumed["status"] == "open" and resumed["interruptions"][0]["resumed_at"] is not None

    changes = client.get(f"/api/sessions/{table_session.pk}/minimum-changes/").json()
    assert changes["count"] == 1
    assert changes["results"][0] | {"at": None, "id": None} == {
        "id": None, "session": table_session.pk, "at": None, "by": changes["results"][0]["by"],
        "old": 100_00, "new": 150_00, "old_maximum": None, "new_maximum": None, "reason": "busy",
    }


def test_staff_change_through_the_api(table_session, commissario, capo_partita, changeur, api_client_for):
    relief = UserFactory(roles=["capo_partita"], first_name="Marco", last_name="Bon")
    client = api_client_for(commissario)
    answer = client.post(
        f"/api/sessions/{table_session.pk}/staff/", {"capo_partita": relief.pk, "reason": "break"}, format="json"
    )
    assert answer.status_code == 200, answer.json()
    assert answer.json()["capo_partita"] == {"id": relief.pk, "username": relief.username, "name": "Marco Bon"}
    assert answer.json()["changeur"]["id"] == changeur.pk
    changes = client.get(f"/api/sessions/{table_session.pk}/staff-changes/").json()
    assert changes["count"] == 1
    row = changes["results"][0]
    assert (row["old_capo_partita"]["id"], row["new_capo_partita"]["id"]) == (capo_partita.pk, relief.pk)
    assert (row["old_changeur"]["id"], row["new_changeur"]["id"]) == (changeur.pk, changeur.pk)
    assert (row["by"]["id"], row["reason"], row["session"]) == (commissario.pk, "break", table_session.pk)


def test_session_open_through_the_api(table, gaming_day, commissario, capo_partita, changeur, api_client_for):
    response = api_client_for(commissario).post(
        "/api/sessions/",
        {"table": table.pk, "capo_partita": capo_partita.pk, "changeur": changeur.pk, "shoe_number": "S-7",
         "minimum": 100, "maximum": 5000_00},
        format="json",
    )
    assert response.status_code == 201
    body = response.json()
    assert (body["table"], body["gaming_day"], body["shoe_number"], body["maximum"]) == (
        table.pk, gaming_day.pk, "S-7", 5000_00
    )
    assert body["seated_count"] == 0 and body["can_start"] is False and body["seats"] == []


def test_seat_list_and_release_through_the_api(table_session, commissario, patron, api_client_for):
    client = api_client_for(commissario)
    taken = client.post(f"/api/sessions/{table_session.pk}/seats/", {"patron": patron.pk, "seat_number": 4})
    assert taken.status_code == 201
    seat = taken.json()
    assert seat["patron"]["id"] == patron.pk and seat["seat_number"] == 4 and seat["active"] is True
    released = client.post(f"/api/seats/{seat['id']}/release/")
    assert released.status_code == 200 and released.json()["active"] is False
    listing = client.get(f"/api/sessions/{table_session.pk}/seats/?active=false").json()
    assert [s["id"] for s in listing["results"]] == [seat["id"]]
    assert client.get(f"/api/sessions/{table_session.pk}/seats/?active=true").json()["count"] == 0


def test_patron_search_by_name_and_document(commissario, api_client_for):
    PatronFactory(first_name="Giovanni", last_name="Vendramin", document_number="YA1234567")
    PatronFactory(first_name="Chiara", last_name="Dandolo", document_number="CA3456789")
    client = api_client_for(commissario)

    def names(query: str) -> list[str]:
        return [p["last_name"] for p in client.get(f"/api/patrons/?search={query}").json()["results"]]

    assert names("vendr") == ["Vendramin"]
    assert names("chiara dandolo") == ["Dandolo"]
    assert names("YA123") == ["Vendramin"]
    assert names("nobody") == []
    exact = client.get("/api/patrons/?document_number=ca3456789").json()
    assert [p["first_name"] for p in exact["results"]] == ["Chiara"]


def test_filters_of_sessions_and_days(table_session, commissario, api_client_for):
    client = api_client_for(commissario)
    other = TableSessionFactory()
    assert client.get(f"/api/sessions/?table={table_session.table_id}").json()["count"] == 1
    assert client.get("/api/sessions/?status=open").json()["count"] == 2
    assert client.get(f"/api/sessions/?casino={other.table.casino_id}").json()["count"] == 1
    assert client.get("/api/gaming-days/?is_open=true").json()["count"] == 2
    assert client.get(f"/api/gaming-days/?casino={table_session.gaming_day.casino_id}").json()["count"] == 1


def test_the_casino_filter_of_sessions_takes_whole_ids_only(table_session, commissario, api_client_for):
    client = api_client_for(commissario)
    casino = table_session.table.casino_id
    assert client.get(f"/api/sessions/?casino={casino}").json()["count"] == 1
    assert client.get(f"/api/sessions/?casino={10**30}").json()["count"] == 0
    # Django's IntegerField read "+1", " 1" and a fullwidth 1 as casino 1: refused as well.
    fullwidth = "".join(chr(ord(c) + 0xFEE0) for c in str(casino))
    for bad in (f"{casino}.5", "1e3", "x", f"%2B{casino}", f"%20{casino}", fullwidth, f"{casino}_0"):
        response = client.get(f"/api/sessions/?casino={bad}")
        assert response.status_code == 400, (bad, response.content)
        assert response.json()["error"]["code"] == "invalid_input"
    schema = client.get("/api/schema/?format=json").json()
    (param,) = [p for p in schema["paths"]["/api/sessions/"]["get"]["parameters"] if p["name"] == "casino"]
    assert param["schema"]["type"] == "integer"


def test_table_patch_through_the_api(table, direzione, api_client_for):
    response = api_client_for(direzione).patch(f"/api/tables/{table.pk}/", {"seats": 9, "min_seats_to_start": 7})
    assert response.status_code == 200
    assert (response.json()["seats"], response.json()["min_seats_to_start"]) == (9, 7)


def test_the_schema_documents_the_floor(api_client_for, auditor):
    schema = api_client_for(auditor).get("/api/schema/?format=json")
    assert schema.status_code == 200
    paths = schema.json()["paths"]
    assert "/api/sessions/{id}/minimum/" in paths
    assert "409" in paths["/api/sessions/{id}/seats/"]["post"]["responses"]


def test_the_sessions_list_counts_the_seats_of_the_sessions_it_shows(auditor, api_client_for):
    """Each session's seated count comes from its own seats: a list of sessions read every seat
    of every session, grouped, before it could take its first page (a join with GROUP BY,
    which grows with the years of play). The counts are unchanged: numbered seats still
    taken, not standing players, not seats left."""
    session, other = TableSessionFactory(), TableSessionFactory()
    for number in (1, 2, 3):
        SeatFactory(session=session, seat_number=number)
    SeatFactory(session=session, seat_number=None, standing=True)
    left = SeatFactory(session=session, seat_number=4)
    services.seat_release(seat=left, by=session.opened_by)
    SeatFactory(session=other, seat_number=1)
    client = api_client_for(auditor)
    with CaptureQueriesContext(connection) as captured:
        rows = client.get("/api/sessions/").json()["results"]
    assert {row["id"]: row["seated_count"] for row in rows} == {session.pk: 3, other.pk: 1}
    (listing,) = [q["sql"] for q in captured.captured_queries if 'FROM "floor_tablesession"' in q["sql"]
                  and "LIMIT" in q["sql"]]  # fmt: skip
    # the only grouping is the subquery's, over one session's seats
    assert listing.count("GROUP BY") == listing.count('GROUP BY U0."session_id"') == 1, listing
    assert 'U0."session_id" = ("floor_tablesession"."id")' in listing, listing


# --------------------------------------------------------------------------- query counts


def grow(n: int) -> dict[str, str]:
    """n rows of every listed kind; returns the list URLs."""
    casino = CasinoFactory()
    site = SiteFactory(casino=casino)
    SiteFactory.create_batch(2, casino=casino)
    CasinoFactory.create_batch(n - 1)
    tables = [TableFactory(casino=casino, site=site) for _ in range(n)]
    sessions = [TableSessionFactory(table=t) for t in tables]
    session = sessions[0]
    for i in range(min(n, 8)):
        SeatFactory(session=session, seat_number=i + 1)
    for _ in range(n - min(n, 8)):
        SeatFactory(session=session, seat_number=None, standing=True)
    for i in range(n):
        TableSession.objects.filter(pk=session.pk).update(minimum=100 + i)
        session.minimum_changes.create(by=session.opened_by, at=session.opened_at, old=100, new=101 + i, reason="r")
        session.staff_changes.create(
            by=session.opened_by, at=session.opened_at, old_capo_partita=UserFactory(), new_capo_partita=UserFactory(),
            old_changeur=UserFactory(), new_changeur=UserFactory(), reason="r",
        )  # fmt: skip
    return {
        "casinos": "/api/casinos/",
        "tables": "/api/tables/",
        "gaming-days": "/api/gaming-days/",
        "sessions": "/api/sessions/",
        "seats": f"/api/sessions/{session.pk}/seats/",
        "minimum-changes": f"/api/sessions/{session.pk}/minimum-changes/",
        "staff-changes": f"/api/sessions/{session.pk}/staff-changes/",
        "patrons": "/api/patrons/",
    }


@pytest.mark.parametrize(
    "endpoint",
    ["casinos", "tables", "gaming-days", "sessions", "seats", "minimum-changes", "staff-changes", "patrons"],
)
def test_list_queries_do_not_grow_with_rows(endpoint, auditor, api_client_for):
    client = api_client_for(auditor)
    client.get("/api/me/")  # the user's roles are looked up once, then cached on him

    def queries(n: int) -> tuple[int, int]:
        url = grow(n)[endpoint]
        with CaptureQueriesContext(connection) as captured:
            response = client.get(url)
        assert response.status_code == 200
        return len(captured), response.json()["count"]

    few, few_rows = queries(2)
    many, many_rows = queries(20)
    assert many_rows > few_rows
    assert many == few, f"{endpoint}: {few} queries for {few_rows} rows, {many} for {many_rows}"


@pytest.mark.parametrize(
    ("role", "identity"),
    [("commissario", True), ("direzione", True), ("auditor", True), ("capo_partita", False), ("changeur", False)],
)
def test_a_patron_s_identity_only_for_those_who_need_it(role, identity, request, api_client_for):
    """GDPR art. 5(1)(c): the table staff read a patron's name, not his document."""
    patron = PatronFactory(first_name="Sofía", last_name="Navarro", document_number="YA1234567", notes="VIP")
    client = api_client_for(request.getfixturevalue(role))
    detail = client.get(f"/api/patrons/{patron.pk}/").json()
    listed = client.get("/api/patrons/", {"search": "navarro"}).json()["results"]
    assert [p["id"] for p in listed] == [patron.pk]
    for body in (detail, listed[0]):
        assert (body["first_name"], body["last_name"]) == ("Sofía", "Navarro")
        shown = (body["document_type"], body["document_number"], body["birth_date"], body["notes"])
        if identity:
            assert shown == (patron.document_type, "YA1234567", patron.birth_date.isoformat(), "VIP")
        else:
            assert shown == (None, None, None, None)
    # No filter tells the table staff whose a document is.
    by_document = client.get("/api/patrons/", {"document_number": "ya1234567"}).json()["count"]
    by_search = client.get("/api/patrons/", {"search": "YA1234"}).json()["count"]
    by_type = client.get("/api/patrons/", {"document_type": patron.document_type}).json()["count"]
    assert (by_document, by_search, by_type) == ((1, 1, 1) if identity else (0, 0, 0))
