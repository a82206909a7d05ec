"""config.prepared (querysets compiled once per connection, writes in one round trip) and
config.transactions (one savepoint per API write): the same rows as the ORM, fewer queries."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.models import Count
from django.test.utils import CaptureQueriesContext

from config import prepared
from config.prepared import Prepared
from config.transactions import service_atomic, shared_savepoint
from floor.models import Patron, Seat
from tests.factories import PatronFactory

pytestmark = pytest.mark.django_db

SEATS = Prepared(
    lambda session_id: (
        Seat.objects.filter(session_id=session_id, left_at__isnull=True)
        .select_related("patron")
        .order_by("seat_number")
    )
)
NAMES = Prepared(
    lambda last_name: Patron.objects.filter(last_name=last_name).values("first_name").order_by("first_name"),
    args=(str,),
)


def _seat(table_session, commissario, n: int) -> Seat:
    from floor import services

    patron = PatronFactory(created_by=commissario)
    return services.seat_assign(session=table_session, patron=patron, seat_number=n, by=commissario)


def test_model_rows_are_the_orms(table_session, commissario):
    for n in (3, 1, 2):
        _seat(table_session, commissario, n)
    orm = list(
        Seat.objects.filter(session=table_session, left_at__isnull=True)
        .select_related("patron")
        .order_by("seat_number")
    )
    for _ in range(2):  # compiled on the first run, reused on the second
        rows = SEATS.all(table_session.pk)
        assert [(s.pk, s.seat_number, s.taken_at) for s in rows] == [
            (s.pk, s.seat_number, s.taken_at) for s in orm
        ]
        assert [s.patron.full_name for s in rows] == [s.patron.full_name for s in orm]
        assert all(not s._state.adding and s._state.db == "default" for s in rows)
    with CaptureQueriesContext(connection) as ctx:
        rows = SEATS.all(table_session.pk)
        assert [s.patron.pk for s in rows] == [s.patron_id for s in orm]  # select_related: no query
    assert len(ctx.captured_queries) == 1
    assert SEATS.all(-1) == []
    assert SEATS.first(table_session.pk).seat_number == 1


def test_values_rows_and_string_arguments(commissario):
    PatronFactory(first_name="Bruno", last_name="Zeno", created_by=commissario)
    PatronFactory(first_name="Aldo", last_name="Zeno", created_by=commissario)
    PatronFactory(first_name="Carlo", last_name="Other", created_by=commissario)
    assert NAMES.all("Zeno") == [{"first_name": "Aldo"}, {"first_name": "Bruno"}]
    assert NAMES.all("Other") == [{"first_name": "Carlo"}]
    assert NAMES.all("nobody's name'; --") == []


def test_get_raises_as_the_orm(commissario):
    by_pk = Prepared(lambda pk: Patron.objects.filter(pk=pk))
    patron = PatronFactory(created_by=commissario)
    assert by_pk.get(patron.pk) == patron
    with pytest.raises(Patron.DoesNotExist):
        by_pk.get(-5)


@pytest.mark.parametrize("pk", [2**63, -(2**63) - 1, 10**25])
def test_an_id_beyond_bigint_matches_nothing_as_with_the_orm(pk, table_session, commissario):
    # PostgreSQL refused it ("bigint out of range"): GET /api/sessions/10**25/game/ was a 500.
    by_pk = Prepared(lambda pk: Patron.objects.filter(pk=pk))
    patron = PatronFactory(created_by=commissario)
    assert list(Patron.objects.filter(pk=pk)) == by_pk.all(pk) == []
    with pytest.raises(Patron.DoesNotExist):
        by_pk.get(pk)
    seats, beyond, found = prepared.read((SEATS, (table_session.pk,)), (SEATS, (pk,)), (by_pk, (patron.pk,)))
    assert (seats, beyond, found) == (SEATS.all(table_session.pk), [], [patron])
    assert by_pk.all(2**63 - 1) == []  # the edge itself is a bigint: asked, not skipped


def test_refuses_what_it_cannot_replay(commissario):
    PatronFactory(created_by=commissario)
    with pytest.raises(ValueError, match="prefetch_related"):
        Prepared(lambda pk: Seat.objects.filter(pk=pk).prefetch_related("patron")).all(1)
    with pytest.raises(ValueError, match="once"):  # the argument is used twice
        Prepared(lambda pk: Patron.objects.filter(pk=pk) | Patron.objects.filter(created_by_id=pk)).all(1)
    with pytest.raises(ValueError, match="once"):  # never reaches the parameters
        Prepared(lambda pk: Patron.objects.all()).all(1)
    with pytest.raises(ValueError, match="model instances or values"):
        Prepared(lambda pk: Patron.objects.filter(pk=pk).values_list("pk")).all(1)


def test_model_annotations_are_set_as_the_orm_sets_them(table_session, commissario):
    seated = _seat(table_session, commissario, 1)
    alone = PatronFactory(created_by=commissario)
    counted = Prepared(
        lambda session_id: (
            Seat.objects.filter(session_id=session_id)
            .select_related("patron")
            .annotate(places=Count("patron__seats"))
        )
    )
    (seat,) = counted.all(table_session.pk)
    (orm,) = (
        Seat.objects.filter(session_id=table_session.pk)
        .select_related("patron")
        .annotate(places=Count("patron__seats"))
    )
    assert (
        (seat.pk, seat.places, seat.patron.pk)
        == (orm.pk, orm.places, orm.patron.pk)
        == (seated.pk, 1, seated.patron_id)
    )
    per_patron = Prepared(lambda pk: Patron.objects.filter(pk=pk).annotate(n=Count("seats")))
    assert per_patron.get(alone.pk).n == 0
    assert per_patron.get(seated.patron_id).n == 1


def test_read_gives_each_querys_rows_in_one_round_trip(table_session, commissario):
    for n in (2, 1):
        _seat(table_session, commissario, n)
    PatronFactory(first_name="Bruno", last_name="Zeno", created_by=commissario)
    PatronFactory(first_name="Aldo", last_name="Zeno", created_by=commissario)
    by_pk = Prepared(lambda pk: Patron.objects.filter(pk=pk))
    with CaptureQueriesContext(connection) as ctx:
        seats, names, nobody, empty = prepared.read(
            (SEATS, (table_session.pk,)), (NAMES, ("Zeno",)), (by_pk, (-5,)), (SEATS, (-1,))
        )
    assert [s.seat_number for s in seats] == [1, 2]
    assert [s.patron.full_name for s in seats] == [s.patron.full_name for s in SEATS.all(table_session.pk)]
    assert names == NAMES.all("Zeno") == [{"first_name": "Aldo"}, {"first_name": "Bruno"}]
    assert nobody == [] and empty == []
    # one text on PostgreSQL with client-side binding; counted one by one otherwise
    assert len(ctx.captured_queries) == (1 if prepared._joined(connection) else 4)
    assert prepared.read((NAMES, ("Zeno",))) == [NAMES.all("Zeno")]
    assert prepared.read() == []


@pytest.mark.django_db(transaction=True)
def test_read_holds_the_lock_of_a_select_for_update(commissario):
    """A SELECT ... FOR UPDATE sent in a read locks its rows until the transaction ends, as
    when sent alone: another connection cannot take them meanwhile."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks: PostgreSQL")
    import psycopg

    locked = Prepared(lambda pk: Patron.objects.select_for_update().filter(pk=pk))
    patron = PatronFactory(first_name="Aldo", created_by=commissario)
    params = connection.get_connection_params()
    with psycopg.connect(**params, autocommit=True) as other:
        with transaction.atomic():
            (row,), names = prepared.read((locked, (patron.pk,)), (NAMES, (patron.last_name,)))
            assert row == patron and names == [{"first_name": "Aldo"}]
            with pytest.raises(psycopg.errors.LockNotAvailable):
                other.execute("SELECT 1 FROM floor_patron WHERE id = %s FOR UPDATE NOWAIT", [patron.pk])
        assert other.execute(
            "SELECT 1 FROM floor_patron WHERE id = %s FOR UPDATE NOWAIT", [patron.pk]
        ).fetchone()


def test_insert_sets_keys_like_bulk_create(commissario):
    many = [PatronFactory.build(created_by=commissario) for _ in range(3)]
    one = [PatronFactory.build(created_by=commissario)]
    with CaptureQueriesContext(connection) as ctx:
        prepared.insert(many)
        prepared.insert(one)
    assert len(ctx.captured_queries) == 2
    for patron in [*many, *one]:
        assert patron.pk is not None and not patron._state.adding
        assert Patron.objects.get(pk=patron.pk).document_number == patron.document_number
    assert prepared.insert([]) == []


def test_insert_too_big_for_one_statement_uses_the_orms_batches(commissario, monkeypatch):
    monkeypatch.setattr(prepared, "_MAX_PARAMS", 2)
    rows = [PatronFactory.build(created_by=commissario) for _ in range(5)]
    assert not prepared.fits(rows)
    prepared.insert(rows)
    assert Patron.objects.filter(pk__in=[p.pk for p in rows]).count() == 5


def test_update_writes_the_named_fields_only(commissario):
    patron = PatronFactory(first_name="Aldo", notes="kept", created_by=commissario)
    patron.first_name, patron.notes = "Ugo", "not written"
    prepared.update(patron, ["first_name"])
    patron.refresh_from_db()
    assert (patron.first_name, patron.notes) == ("Ugo", "kept")
    ghost = Patron(pk=-1, first_name="x")
    with pytest.raises(DatabaseError):
        prepared.update(ghost, ["first_name"])


def test_write_runs_statements_in_one_round_trip_on_postgresql(commissario):
    a, b = PatronFactory(created_by=commissario), PatronFactory(created_by=commissario)
    new = [PatronFactory.build(created_by=commissario) for _ in range(2)]
    a.notes, b.notes = "first", "second"
    with CaptureQueriesContext(connection) as ctx:
        rows = prepared.write(
            [prepared.insert_sql(new), prepared.update_sql(a, ["notes"]), prepared.update_sql(b, ["notes"])]
        )
    prepared.saved(new, [row[0] for row in rows])
    # one text on PostgreSQL with client-side binding; counted one by one otherwise
    assert len(ctx.captured_queries) == (1 if prepared._joined(connection) else 3)
    assert [Patron.objects.get(pk=p.pk).document_number for p in new] == [p.document_number for p in new]
    assert set(Patron.objects.filter(pk__in=[a.pk, b.pk]).values_list("notes", flat=True)) == {
        "first",
        "second",
    }


def test_a_failing_statement_in_a_write_writes_nothing(commissario):
    a = PatronFactory(notes="before", created_by=commissario)
    a.notes = "after"
    clash = PatronFactory.build(created_by=commissario, document_number=a.document_number,
                                document_type=a.document_type, nationality=a.nationality)  # fmt: skip
    with pytest.raises(IntegrityError), transaction.atomic():
        prepared.write(
            [
                prepared.update_sql(a, ["notes"]),
                prepared.insert_sql([clash, PatronFactory.build(created_by=commissario)]),
            ]
        )
    a.refresh_from_db()
    assert a.notes == "before"


# --------------------------------------------------------------------------- one savepoint per API write


@service_atomic
def _service(patron: Patron, notes: str, fail: bool = False) -> None:
    patron.notes = notes
    patron.save(update_fields=["notes"])
    if fail:
        raise RuntimeError("refused")


def _savepoints(ctx) -> int:
    return sum(q["sql"].startswith("SAVEPOINT") for q in ctx.captured_queries)


def test_the_first_service_shares_the_request_savepoint(commissario):
    patron = PatronFactory(notes="", created_by=commissario)
    with CaptureQueriesContext(connection) as ctx, shared_savepoint():
        _service(patron, "one")
        _service(patron, "two")  # a second call nests as usual
    assert _savepoints(ctx) == 2  # the request's and the second service's
    patron.refresh_from_db()
    assert patron.notes == "two"


def test_a_service_that_shared_the_savepoint_and_failed_leaves_nothing(commissario):
    patron = PatronFactory(notes="before", created_by=commissario)
    with pytest.raises(RuntimeError), shared_savepoint():
        _service(patron, "after", fail=True)
    patron.refresh_from_db()
    assert patron.notes == "before"
    _service(patron, "usable")  # the transaction goes on: nothing was left marked for rollback
    patron.refresh_from_db()
    assert patron.notes == "usable"


def test_outside_a_shared_savepoint_a_service_has_its_own(commissario):
    patron = PatronFactory(notes="before", created_by=commissario)
    with CaptureQueriesContext(connection) as ctx:
        _service(patron, "x")
    assert _savepoints(ctx) == 1
    with pytest.raises(RuntimeError):
        _service(patron, "after", fail=True)
    patron.refresh_from_db()
    assert patron.notes == "x"
    with transaction.atomic(), shared_savepoint(), transaction.atomic():
        with CaptureQueriesContext(connection) as ctx:
            _service(patron, "nested")  # not directly inside the shared savepoint
        assert _savepoints(ctx) == 1


def test_insert_and_write_sets_keys_and_runs_the_rest(commissario, monkeypatch):
    a = PatronFactory(notes="", created_by=commissario)
    a.notes = "written"
    for limit in (prepared._MAX_PARAMS, 2):  # in one statement, then too many for one
        monkeypatch.setattr(prepared, "_MAX_PARAMS", limit)
        rows = [PatronFactory.build(created_by=commissario) for _ in range(3)]
        prepared.insert_and_write(rows, [prepared.update_sql(a, ["notes"])])
        assert all(p.pk is not None and not p._state.adding for p in rows)
        assert Patron.objects.filter(pk__in=[p.pk for p in rows]).count() == 3
    a.refresh_from_db()
    assert a.notes == "written"
    prepared.insert_and_write([], [])  # nothing to do


def test_write_rows_inserts_into_several_tables_in_order_in_one_round_trip(table_session, commissario, monkeypatch):
    a = PatronFactory(notes="", created_by=commissario)
    for limit in (prepared._MAX_PARAMS, 2):  # in one statement each, then too many for one
        monkeypatch.setattr(prepared, "_MAX_PARAMS", limit)
        a.notes = f"written {limit}"
        patrons = [PatronFactory.build(created_by=commissario) for _ in range(4)]
        prepared.insert(patrons[:2])  # the seats' patrons, saved first
        seats = [
            Seat(session=table_session, patron=p, seat_number=n, taken_by=commissario, taken_at=a.created_at)
            for p, n in zip(patrons[:2], (4, 5), strict=True)
        ]
        with CaptureQueriesContext(connection) as ctx:
            prepared.write_rows([patrons[2:], prepared.update_sql(a, ["notes"]), [], seats])
        if limit > 2 and prepared._joined(connection):
            assert len(ctx.captured_queries) == 1
        assert all(row.pk is not None and not row._state.adding for row in [*patrons, *seats])
        assert Patron.objects.filter(pk__in=[p.pk for p in patrons]).count() == 4
        assert sorted(Seat.objects.filter(pk__in=[s.pk for s in seats]).values_list("seat_number", flat=True)) == [4, 5]
        a.refresh_from_db()
        assert a.notes == f"written {limit}"
        Seat.objects.filter(pk__in=[s.pk for s in seats]).delete()
    prepared.write_rows([])  # nothing to do


def test_pipeline_mode_gives_the_same_rows_and_errors(table_session, commissario, monkeypatch):
    """Under server-side binding the batched reads and writes go in one psycopg pipeline
    (prepared._batching "pipeline"): the same rows, each statement counted, a failing
    statement raising as it would alone."""
    if connection.vendor != "postgresql":
        pytest.skip("pipeline mode: PostgreSQL")
    monkeypatch.setattr(prepared, "_batching", lambda connection: "pipeline")
    for n in (2, 1):
        _seat(table_session, commissario, n)
    PatronFactory(first_name="Aldo", last_name="Zeno", created_by=commissario)
    with CaptureQueriesContext(connection) as ctx:
        seats, names, empty = prepared.read((SEATS, (table_session.pk,)), (NAMES, ("Zeno",)), (SEATS, (-1,)))
    assert [s.seat_number for s in seats] == [1, 2] and seats[0].patron.full_name
    assert names == [{"first_name": "Aldo"}] and empty == []
    assert len(ctx.captured_queries) == 3
    a = PatronFactory(created_by=commissario)
    new = [PatronFactory.build(created_by=commissario) for _ in range(2)]
    a.notes = "piped"
    rows = prepared.write([prepared.insert_sql(new), prepared.update_sql(a, ["notes"])])
    prepared.saved(new, [row[0] for row in rows])
    assert [Patron.objects.get(pk=p.pk).document_number for p in new] == [p.document_number for p in new]
    assert Patron.objects.get(pk=a.pk).notes == "piped"
    b = PatronFactory(notes="kept", created_by=commissario)
    b.notes = "never"
    with pytest.raises(DatabaseError), transaction.atomic():
        prepared.write([("SELECT 1 / 0", []), prepared.update_sql(b, ["notes"])])
    assert Patron.objects.get(pk=b.pk).notes == "kept"
    clash = PatronFactory.build(created_by=commissario, document_number=b.document_number,
                                document_type=b.document_type, nationality=b.nationality)  # fmt: skip
    with pytest.raises(IntegrityError), transaction.atomic():  # Django's, as from a cursor
        prepared.write([prepared.update_sql(b, ["notes"]), prepared.insert_sql([clash, new[0]])])
    assert Patron.objects.get(pk=b.pk).notes == "kept"


def test_values_quoted_into_the_text_as_psycopg_quotes_them():
    """The batched statements' values are quoted in by prepared itself (its split of each
    text kept per connection): the same rows as psycopg's own client-side binding, "%%" a
    percent sign, a statement long enough that psycopg would not keep its split."""
    if not prepared._joined(connection):
        pytest.skip("client-side binding on PostgreSQL")
    import datetime as dt
    from decimal import Decimal

    from psycopg.types.json import Jsonb

    values = [
        7, -2**40, "it's", "back\\slash %s %% \u00e8\u20ac", "", None, True, Decimal("12.50"),
        dt.date(2026, 11, 30), dt.datetime(2026, 11, 30, 21, 5, 7, 123456, tzinfo=dt.UTC),
        Jsonb({"a": [1, "x'y"], "b": None}), [1, 2, 3], ["a", "b'c", None], b"\x00\xffbytes",
    ]  # fmt: skip
    sql = "SELECT " + ", ".join(["%s"] * len(values)) + ", '100%%' AS pct, '" + "x" * 5000 + "' AS long"
    with connection.cursor() as cursor:
        cursor.execute(sql, values)
        expected = cursor.fetchall()
        prepared._execute_text(cursor, [sql, "SELECT %s"], [values, ["second"]])
        first = cursor.fetchall()
        assert cursor.nextset() and cursor.fetchall() == [("second",)]
    assert first == expected
    assert first[0][len(values)] == "100%"
    with connection.cursor() as cursor, pytest.raises(DatabaseError, match="placeholders"):
        prepared._execute_text(cursor, ["SELECT %s, %s"], [[1]])


def test_the_quoter_writes_psycopgs_own_literals_and_is_kept_per_connection():
    """prepared writes ints, bools and None itself (without a call into psycopg): the very
    text psycopg's as_literal writes, at every size and sign; other values go to psycopg.
    One quoter per database connection, not one per statement."""
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL")
    import datetime as dt

    from psycopg.adapt import Transformer

    values = [0, 1, -1, 9, -9, 10, -10, 2**15, -(2**15) - 1, 2**31, -(2**31) - 1, 2**63 - 1, -(2**63),
              2**63, -(2**63) - 1, 10**30, -(10**30), True, False, None, "it's", "a\\b", "",
              dt.datetime(2026, 12, 2, 6, 15, 54, 204368, tzinfo=dt.UTC)]  # fmt: skip
    with connection.cursor() as cursor:
        quote = prepared._quoter(cursor)
        raw = cursor.cursor
        theirs = Transformer(raw)
        for value in values:
            expected = "NULL" if value is None else theirs.as_literal(value).decode(raw.connection.info.encoding)
            assert quote(value) == expected, value
    with connection.cursor() as cursor:
        assert prepared._quoter(cursor) is quote


def test_row_values_are_the_orms_literals():
    """insert_sql and update_sql take a value its field writes as it is without the ORM's
    conversions (prepared._db_values): for every field of the project's models and values of
    every kind they meet (ints of any size and sign, bools, None, text, enum members, aware
    and naive times, a list), the literal written is the ORM's, or the ORM's error is raised."""
    if not prepared._joined(connection):
        pytest.skip("client-side binding on PostgreSQL")
    import datetime as dt
    import warnings

    from django.apps import apps

    from tables.models import Coup

    values = [0, 7, -7, 2**40, -(2**63), True, False, None, "it's", "", "12", Coup.State.SETTLED,
              dt.datetime(2026, 12, 2, 6, 15, 54, 204368, tzinfo=dt.UTC), dt.datetime(2026, 12, 2, 6, 15),
              dt.date(2026, 12, 2), [1, "a"]]  # fmt: skip

    def outcome(convert):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # a naive time: the ORM's warning, either way
                return quote(convert())
        except Exception as exc:  # the ORM's refusal (int("it's")), the same either way
            return type(exc)

    checked = 0
    with connection.cursor() as cursor:
        quote = prepared._quoter(cursor)
        for model in apps.get_models():
            if model._meta.app_label not in ("floor", "tables", "audit"):
                continue
            for field in model._meta.concrete_fields:
                if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
                    continue  # pre_save reads the clock: the ORM's path either way
                for value in values:
                    obj = model()
                    setattr(obj, field.attname, value)
                    for add in (True, False):
                        ours = outcome(lambda: prepared._db_values(connection, [obj], [field], add)[0][0])  # noqa: B023
                        orm = outcome(lambda: field.get_db_prep_save(field.pre_save(obj, add), connection))  # noqa: B023
                        assert ours == orm, (model, field.name, value)
                        checked += 1
    assert checked > 1000


def _server_prepared_text(connection) -> bool:
    return prepared._joined(connection) and prepared._server_prepared()


def test_reads_run_as_prepared_statements_once_prepared(table_session, commissario, settings):
    """With client-side binding the compiled reads are PREPAREd once per database session,
    in the same round trip as their first EXECUTE, and give the rows the plain SQL gives."""
    if not _server_prepared_text(connection):
        pytest.skip("client-side binding on PostgreSQL, prepared statements on")
    for n in (2, 1):
        _seat(table_session, commissario, n)
    PatronFactory(first_name="Aldo", last_name="Zeno", created_by=commissario)
    fresh = Prepared(lambda session_id: Seat.objects.filter(session_id=session_id).order_by("-seat_number"))
    with CaptureQueriesContext(connection) as ctx:
        first = prepared.read((fresh, (table_session.pk,)), (NAMES, ("Zeno",)))
        again = prepared.read((fresh, (table_session.pk,)), (NAMES, ("Zeno",)))
        single = fresh.all(table_session.pk)
    sent = [q["sql"] for q in ctx.captured_queries]
    assert len(sent) == 3 and "PREPARE" in sent[0] and "EXECUTE" in sent[0]
    assert (
        "PREPARE" not in sent[1] and "PREPARE" not in sent[2] and 'FROM "floor_seat"' in sent[1]
    )  # the comment
    settings.DATABASE_PREPARED_STATEMENTS = False
    plain = prepared.read((fresh, (table_session.pk,)), (NAMES, ("Zeno",)))
    assert [s.seat_number for s in first[0]] == [s.seat_number for s in again[0]] == [2, 1]
    assert [s.pk for s in single] == [s.pk for s in plain[0]] == [s.pk for s in first[0]]
    assert first[1] == again[1] == plain[1] == [{"first_name": "Aldo"}]


def test_a_failed_text_prepares_afresh(commissario):
    """PREPARE outlives a rolled-back transaction: after a text fails, the statements are
    prepared again under new names (a new database session starts with none: the names are
    kept on psycopg's connection object)."""
    if not _server_prepared_text(connection):
        pytest.skip("client-side binding on PostgreSQL, prepared statements on")
    patron = PatronFactory(first_name="Aldo", last_name="Zeno", created_by=commissario)
    failing = Prepared(lambda pk: Patron.objects.filter(pk=pk).extra(where=["1 / (id - id) = 1"]))
    fresh = Prepared(lambda last_name: Patron.objects.filter(last_name=last_name).values("pk"), args=(str,))
    raw = connection.connection
    with pytest.raises(DatabaseError), transaction.atomic():
        prepared.read((fresh, ("Zeno",)), (failing, (patron.pk,)))
    generation = raw._chemin_generation
    assert generation >= 1 and not raw._chemin_prepared
    assert prepared.read((fresh, ("Zeno",)), (NAMES, ("Zeno",))) == [
        [{"pk": patron.pk}],
        [{"first_name": "Aldo"}],
    ]
    assert raw._chemin_prepared and all(n.startswith(f"chemin_{generation}_") for n in raw._chemin_prepared)


def test_writes_run_as_prepared_statements_once_prepared(commissario, settings):
    """The INSERTs and UPDATEs built here (insert_sql, update_sql) are PREPAREd once per
    database session too; other SQL in the same write goes as text. Same rows, same keys,
    same refusal of an update that changes nothing."""
    if not _server_prepared_text(connection):
        pytest.skip("client-side binding on PostgreSQL, prepared statements on")
    a = PatronFactory(notes="before", created_by=commissario)
    connection.ensure_connection()
    raw = connection.connection  # as after a failed text: names start afresh, none prepared yet
    raw._chemin_prepared, raw._chemin_generation = set(), getattr(raw, "_chemin_generation", 0) + 1
    rounds = []
    for n in range(2):
        new = [PatronFactory.build(created_by=commissario, notes=f"it's {n}") for _ in range(3)]
        a.notes = f"round {n}"
        with CaptureQueriesContext(connection) as ctx:
            rows = prepared.write(
                [
                    prepared.insert_sql(new),
                    prepared.update_sql(a, ["notes"]),
                    ("UPDATE floor_patron SET last_name = %s WHERE id = %s", ["Zeno", a.pk]),
                ]
            )
        prepared.saved(new, [row[0] for row in rows])
        rounds.append(ctx.captured_queries[0]["sql"])
        assert len(ctx.captured_queries) == 1
        assert [Patron.objects.get(pk=p.pk).notes for p in new] == [f"it's {n}"] * 3
    assert rounds[0].count("PREPARE") == 2 and "PREPARE" not in rounds[1]
    assert rounds[1].count("EXECUTE") == 2 and "UPDATE floor_patron SET last_name = 'Zeno'" in rounds[1]
    a.refresh_from_db()
    assert (a.notes, a.last_name) == ("round 1", "Zeno")
    a.notes = "alone"
    with CaptureQueriesContext(connection) as ctx:
        prepared.update(a, ["notes"])
    assert "EXECUTE" in ctx.captured_queries[0]["sql"] and "PREPARE" not in ctx.captured_queries[0]["sql"]
    a.refresh_from_db()
    assert a.notes == "alone"
    with pytest.raises(DatabaseError, match="changed no row"):
        prepared.update(Patron(pk=-1, notes="x"), ["notes"])
    settings.DATABASE_PREPARED_STATEMENTS = False
    plain = [PatronFactory.build(created_by=commissario)]
    with CaptureQueriesContext(connection) as ctx:
        prepared.insert(plain)
    assert "EXECUTE" not in ctx.captured_queries[0]["sql"]
    assert Patron.objects.get(pk=plain[0].pk).document_number == plain[0].document_number


def test_a_new_prepared_query_never_runs_a_collected_ones_sql(commissario):
    """The SQL compiled on a connection is kept under a serial per Prepared, never reused: a
    new Prepared given a collected one's id() would otherwise run that one's SQL."""
    import gc

    patron = PatronFactory(first_name="Aldo", last_name="Zeno", created_by=commissario)
    attrs = set()
    for _ in range(50):
        by_name = Prepared(lambda last_name: Patron.objects.filter(last_name=last_name).values("pk"), args=(str,))
        assert by_name.all("Zeno") == [{"pk": patron.pk}]
        attrs.add(by_name._attr)
        del by_name
        gc.collect()
        by_pk = Prepared(lambda pk: Patron.objects.filter(pk=pk).values("first_name"))
        assert by_pk.all(patron.pk) == [{"first_name": "Aldo"}]
        attrs.add(by_pk._attr)
        del by_pk
        gc.collect()
    assert len(attrs) == 100
