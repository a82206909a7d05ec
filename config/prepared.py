"""Querysets compiled once per database connection, then run again with new arguments.

Compiling a queryset to SQL is most of what the Django ORM costs on a hot path (measured on
the one-shot coup: about half of the request's CPU). A `Prepared` query is written as an
ordinary queryset, built by a function of its arguments; the first run on a connection
compiles it with stand-in values, remembers the SQL and where each argument goes in its
parameters, and every later run only executes that SQL and builds the rows as the ORM
would (the same converters, `Model.from_db`, `select_related` objects), so callers get the
same model instances, dicts or values.

Limits, checked when it compiles: every argument must reach the parameters exactly once
(an argument the ORM folds into the SQL text, or uses twice, is refused), and
prefetch_related is not supported. Queries still go through `connection.cursor()`, so
query counting (assertNumQueries) and the debug cursor see them as before.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.db import DatabaseError, connections
from django.db import models as m
from django.db.models import QuerySet
from django.db.models.query import ModelIterable, ValuesIterable, get_related_populators

# Stand-ins for the arguments while compiling: values no query here ever uses.
_INT_BASE = -7_390_013_000_000
_STR_BASE = "\x1fprepared-arg-"
_SERIALS = itertools.count(1)
_MAX_PARAMS = 20_000  # below every backend's limit on the parameters of one statement


class _Compiled:
    __slots__ = (
        "annotations",
        "compiler",
        "converters",
        "end",
        "init_list",
        "kind",
        "model",
        "names",
        "populators",
        "server",
        "slots",
        "sql",
        "start",
    )


# The ids are bigint columns: an integer argument beyond 64 bits (an id in a URL or a body,
# 10**25) matches no row, as the ORM answers such a lookup. Sent to PostgreSQL, the query
# failed ("bigint out of range"): a 500 where the ORM's own lookup gives a 404.
_BIGINT_MIN, _BIGINT_MAX = -(2**63), 2**63 - 1


def _beyond_bigint(args: tuple[Any, ...]) -> bool:
    return any(type(arg) is int and not _BIGINT_MIN <= arg <= _BIGINT_MAX for arg in args)


class Prepared:
    """`Prepared(lambda session_id: Seat.objects.filter(...), args=(int,))`, then
    `.all(session_id)`, `.first(session_id)` or `.get(session_id)`. `args` gives each
    argument's type (int or str) for its stand-in value."""

    def __init__(self, build: Callable[..., QuerySet], args: tuple[type, ...] = (int,)):
        self.build, self.args = build, args
        # A serial, not id(self): the id of a Prepared that was garbage collected can be given
        # to a new one, which would then run the old one's SQL compiled on the connection.
        self._attr = f"_chemin_prepared_{next(_SERIALS)}"

    def _compile(self, using: str) -> _Compiled:
        stand_ins = [_INT_BASE - i if kind is int else f"{_STR_BASE}{i}" for i, kind in enumerate(self.args)]
        queryset = self.build(*stand_ins)
        if queryset._prefetch_related_lookups:
            raise ValueError("Prepared queries do not support prefetch_related")
        compiler = queryset.query.get_compiler(using=using)
        sql, params = compiler.as_sql()
        slots, seen = [], []
        for param in params:
            if param in stand_ins and type(param) is type(stand_ins[stand_ins.index(param)]):
                index = stand_ins.index(param)
                seen.append(index)
                slots.append((True, index))
            else:
                slots.append((False, param))
        if sorted(seen) != list(range(len(stand_ins))):
            raise ValueError("every argument of a Prepared query must appear once in its parameters")
        c = _Compiled()
        c.compiler, c.sql, c.slots, c.server = compiler, sql, slots, None
        if compiler.has_composite_fields([col for col, _, _ in compiler.select[: compiler.col_count]]):
            raise ValueError("Prepared queries do not support composite fields")
        # results_iter's converters, worked out once (they depend on the query only).
        c.converters = compiler.get_converters([col for col, _, _ in compiler.select[: compiler.col_count]])
        if queryset._iterable_class is ModelIterable:
            c.kind = "model"
            select, klass_info = compiler.select, compiler.klass_info
            c.model = klass_info["model"]
            fields = klass_info["select_fields"]
            c.start, c.end = fields[0], fields[-1] + 1
            c.init_list = [f[0].target.attname for f in select[c.start : c.end]]
            c.populators = get_related_populators(klass_info, select, using)
            # set on each instance as the ORM sets them
            c.annotations = tuple(compiler.annotation_col_map.items())
        elif queryset._iterable_class is ValuesIterable:
            c.kind = "values"
            query = queryset.query
            c.names = (
                list(query.selected)
                if query.selected
                else [*query.extra_select, *query.values_select, *query.annotation_select]
            )
        else:
            raise ValueError("Prepared queries yield model instances or values() dicts")
        return c

    def _compiled(self, connection, using: str) -> _Compiled:
        compiled = getattr(connection, self._attr, None)
        if compiled is None:
            compiled = self._compile(using)
            setattr(connection, self._attr, compiled)
        return compiled

    @staticmethod
    def _params(compiled: _Compiled, args: tuple[Any, ...]) -> list[Any]:
        return [args[value] if is_arg else value for is_arg, value in compiled.slots]

    @staticmethod
    def _objects(compiled: _Compiled, rows: list[tuple], using: str) -> list[Any]:
        """The rows as the ORM would give them: values() dicts or model instances."""
        if not rows:
            return []
        if compiled.converters:
            rows = compiled.compiler.apply_converters(rows, compiled.converters)
        if compiled.kind == "values":
            names = compiled.names
            return [dict(zip(names, row, strict=True)) for row in rows]
        out = []
        model, start, end, init_list, populators, annotations = (
            compiled.model, compiled.start, compiled.end, compiled.init_list, compiled.populators,
            compiled.annotations,
        )  # fmt: skip
        for row in rows:
            obj = model.from_db(using, init_list, row[start:end])
            for populator in populators:
                populator.populate(row, obj)
            for name, position in annotations:
                setattr(obj, name, row[position])
            out.append(obj)
        return out

    def all(self, *args: Any, using: str = "default") -> list[Any]:
        connection = connections[using]
        compiled = self._compiled(connection, using)
        if _beyond_bigint(args):
            return []
        with connection.cursor() as cursor:
            if _batching(connection) == "text" and _server_prepared():
                _execute_prepared(
                    cursor,
                    [compiled.sql],
                    [self._params(compiled, args)],
                    _compiled_forms(connection, [compiled]),
                )
            else:
                cursor.execute(compiled.sql, self._params(compiled, args))
            rows = cursor.fetchall()
        return self._objects(compiled, rows, using)

    def first(self, *args: Any, using: str = "default") -> Any | None:
        """The first row (the queryset says the order and, with [:1], the limit), or None."""
        rows = self.all(*args, using=using)
        return rows[0] if rows else None

    def get(self, *args: Any, using: str = "default") -> Any:
        """Exactly one row, else the model's DoesNotExist / MultipleObjectsReturned."""
        rows = self.all(*args, using=using)
        if len(rows) == 1:
            return rows[0]
        compiled = getattr(connections[using], self._attr)
        model = compiled.model
        if not rows:
            raise model.DoesNotExist(f"{model._meta.object_name} matching query does not exist.")
        raise model.MultipleObjectsReturned(f"get() returned more than one {model._meta.object_name}")


def read(*queries: tuple[Prepared, tuple[Any, ...]], using: str = "default") -> list[list[Any]]:
    """`[p.all(*args) for p, args in queries]`, in one round trip where the database allows
    it (PostgreSQL: with client-side binding the SELECTs go as one text, run in order, and
    each result set is read in turn; with server-side binding they go in one pipeline);
    one by one on SQLite. A SELECT ... FOR UPDATE among them takes its lock before the
    statements after it run (each statement has its own snapshot, as when sent alone)."""
    skipped = [_beyond_bigint(args) for _, args in queries]
    if any(skipped):  # those match nothing; the others run together as ever
        live = iter(read(*(q for q, skip in zip(queries, skipped, strict=True) if not skip), using=using))
        return [[] if skip else next(live) for skip in skipped]
    connection = connections[using]
    mode = _batching(connection) if len(queries) > 1 else None
    if mode is None:
        return [query.all(*args, using=using) for query, args in queries]
    compiled = [query._compiled(connection, using) for query, _ in queries]
    params = [Prepared._params(c, args) for c, (_, args) in zip(compiled, queries, strict=True)]
    if mode == "pipeline":
        results = [rows or [] for rows in _pipelined(connection, [c.sql for c in compiled], params)]
    else:
        results = []
        with connection.cursor() as cursor:
            if _server_prepared():
                _execute_prepared(
                    cursor, [c.sql for c in compiled], params, _compiled_forms(connection, compiled)
                )
            else:
                _execute_text(cursor, [c.sql for c in compiled], params)
            for i in range(len(compiled)):
                if i and not cursor.nextset():
                    raise DatabaseError("prepared.read: a statement returned no result set")
                results.append(cursor.fetchall())
    return [Prepared._objects(c, rows, using) for c, rows in zip(compiled, results, strict=True)]


# --------------------------------------------------------------------------- writes


def _cached_sql(connection, key: tuple, make: Callable[[], str]) -> str:
    cache = connection.__dict__.setdefault("_chemin_prepared_sql", {})
    sql = cache.get(key)
    if sql is None:
        sql = cache[key] = make()
        _preparable(connection, sql)
    return sql


# Field classes whose get_db_prep_save, on PostgreSQL, gives a value of these exact types (and
# None) back as it is, or an int wrapped in psycopg's Int2/Int4/Int8, which the text that
# _quoter writes cannot tell from the int itself; with pre_save reading the attribute. Their
# subclasses are not trusted (they may convert), nor is an auto_now DateTimeField (pre_save
# sets the time), nor a naive datetime (get_prep_value makes it aware, with a warning).
_PLAIN_TYPES = {
    **dict.fromkeys(
        (m.IntegerField, m.BigIntegerField, m.SmallIntegerField, m.PositiveIntegerField,
         m.PositiveBigIntegerField, m.PositiveSmallIntegerField, m.AutoField, m.BigAutoField,
         m.SmallAutoField),
        (int,),
    ),
    m.CharField: (str,), m.TextField: (str,), m.BooleanField: (bool,), m.DateTimeField: (datetime,),
}  # fmt: skip


def _plain_types(field: Any) -> tuple[type, ...]:
    """The types of value `field` writes as they are (_PLAIN_TYPES), () for none."""
    if type(field) is m.ForeignKey:
        return _plain_types(field.target_field) if type(field.target_field) is not m.ForeignKey else ()
    if type(field) is m.DateTimeField and (field.auto_now or field.auto_now_add):
        return ()
    types = _PLAIN_TYPES.get(type(field), ())
    return (*types, type(None)) if types else ()


def _db_values(connection, objs: list[Any], fields: list[Any], add: bool) -> list[list[Any]]:
    """`[[f.get_db_prep_save(f.pre_save(obj, add), connection) for f in fields] for obj in
    objs]`, as values written into the text by _quoter: the same literals. Where statements go
    as text (_batching "text"), a value that its field writes as it is (_plain_types) is taken
    without the ORM's chain of conversions that would give it back (measured: most of the
    cost of a batched INSERT's rows); elsewhere (a pipeline binds typed parameters; SQLite
    converts) and for every other value, the ORM's own conversion."""
    if _batching(connection) != "text":
        return [[f.get_db_prep_save(f.pre_save(obj, add), connection=connection) for f in fields] for obj in objs]
    plan = []
    for f in fields:
        plain = f.__dict__.get("_chemin_plain_types")  # the field's, worked out once
        if plain is None:
            plain = f._chemin_plain_types = _plain_types(f)
        plan.append((f, f.attname, plain))
    rows = []
    for obj in objs:
        values = []
        for f, attname, plain in plan:
            if plain:
                value = getattr(obj, attname)
                kind = type(value)
                if kind in plain and (kind is not datetime or value.tzinfo is not None):
                    values.append(value)
                    continue
            values.append(f.get_db_prep_save(f.pre_save(obj, add), connection=connection))
        rows.append(values)
    return rows


def insert_sql(objs: list[Any], using: str = "default", *, returning: bool = True) -> tuple[str, list[Any]]:
    """The INSERT of `Model.objects.bulk_create(objs)` for plain rows, its SQL built once per
    connection and row count: every concrete column but the auto primary key (pre_save
    applied, so auto_now fields are set), RETURNING the new primary keys if `returning`.
    ("", []) for no rows."""
    if not objs:
        return "", []
    opts = type(objs[0])._meta
    connection = connections[using]
    fields = [f for f in opts.concrete_fields if f is not opts.auto_field]

    # Under server-side binding: the rows as one array per column (UNNEST, as Django's
    # bulk_create does), so that the statement's text is the same whatever the number of rows
    # and PostgreSQL prepares it once. With client-side binding the values are quoted into the
    # text anyway: multi-row VALUES, whose scalars psycopg quotes in C, where each array would
    # be built and escaped element by element in Python (measured: ~1 ms of CPU per coup).
    unnest = _batching(connection) == "pipeline" and len(objs) > 1

    def make() -> str:
        quote = connection.ops.quote_name
        # Only the model's own table, column names and types are interpolated; values are parameters.
        columns = ", ".join(quote(f.column) for f in fields)
        if unnest:
            arrays = ", ".join(f"(%s)::{f.db_type(connection).split('(')[0]}[]" for f in fields)
            values = f"SELECT * FROM UNNEST({arrays})"  # noqa: S608
        else:
            row = "(" + ", ".join(["%s"] * len(fields)) + ")"
            values = "VALUES " + ", ".join([row] * len(objs))
        sql = f"INSERT INTO {quote(opts.db_table)} ({columns}) {values}"
        return f"{sql} RETURNING {quote(opts.pk.column)}" if returning else sql

    key = ("insert", opts.label, "unnest" if unnest else len(objs), returning)
    sql = _cached_sql(connection, key, make)
    rows = _db_values(connection, objs, fields, True)
    if unnest:
        return sql, [list(column) for column in zip(*rows, strict=True)]
    return sql, [value for row in rows for value in row]


def fits(objs: list[Any], using: str = "default") -> bool:
    """Whether these rows go in one INSERT (else insert() leaves them to bulk_create)."""
    if not objs:
        return True
    opts = type(objs[0])._meta
    if connections[using].vendor == "postgresql":
        # one array parameter per column (server-side binding); no limit on the values
        # quoted into the text (client-side): rows per statement kept within _MAX_PARAMS
        return len(objs) <= _MAX_PARAMS
    limit = min(_MAX_PARAMS, connections[using].features.max_query_params or _MAX_PARAMS)
    return len(objs) * len(opts.concrete_fields) <= limit


def saved(objs: list[Any], pks: list[Any] | None, using: str = "default") -> list[Any]:
    """Mark rows written by insert_sql as saved, with their new primary keys when returned.
    PostgreSQL and SQLite return the rows of a multi-row VALUES insert in order."""
    if pks is not None:
        for obj, pk in zip(objs, pks, strict=True):
            obj.pk = pk
    for obj in objs:
        obj._state.adding, obj._state.db = False, using
    return objs


def insert(objs: list[Any], using: str = "default") -> list[Any]:
    """`Model.objects.bulk_create(objs)` for plain rows (insert_sql), the new primary keys set
    on the objects. No signals are sent (bulk_create sends none either). A batch too big for
    one statement goes through the ORM's own batching."""
    if not objs:
        return objs
    if not fits(objs, using):
        return type(objs[0])._base_manager.using(using).bulk_create(objs)
    rows = write([insert_sql(objs, using)], using)
    return saved(objs, [row[0] for row in rows or ()], using)


def insert_and_write(
    objs: list[Any], statements: list[tuple[str, list[Any]]], using: str = "default"
) -> None:
    """Insert `objs` (their ids set, as insert() does), then run `statements` (update_sql and
    the like), all in one round trip where the database allows it (write)."""
    if objs and not fits(objs, using):  # more rows than one statement takes: on their own
        insert(objs, using)
        objs = []
    rows = write(([insert_sql(objs, using)] if objs else []) + list(statements), using)
    if objs:
        saved(objs, [row[0] for row in rows or ()], using)


def write_rows(items: list[list[Any] | tuple[str, list[Any]]], using: str = "default") -> None:
    """Run these writes in order, in one round trip where the database allows it: each item
    a list of new rows to insert (their ids set, as insert() does) or a statement (update_sql
    and the like). insert_and_write for writes that insert into several tables."""
    statements, groups = [], []
    for item in items:
        if isinstance(item, tuple):
            statements.append(item)
        elif item and not fits(item, using):  # more rows than one statement takes: on their own
            insert(item, using)
        elif item:
            groups.append((len(statements), item))
            statements.append(insert_sql(item, using))
    results = write(statements, using, every=True)
    for index, objs in groups:
        saved(objs, [row[0] for row in results[index] or ()], using)


def update_sql(
    obj: Any,
    fields: list[str] | tuple[str, ...],
    using: str = "default",
    *,
    returning: bool = False,
    adapted: dict[str, Any] | None = None,
) -> tuple[str, list[Any]]:
    """The UPDATE of `obj.save(update_fields=fields)` (pre_save applied), its SQL built once
    per connection and field list. `returning`: RETURNING the primary key, so that a caller
    that runs it with other writes (write(..., every=True)) can check that it changed its row
    (updated_one), as update() does. `adapted`: for some of the fields, the value as the
    field's get_db_prep_save gives it, which the caller has already (taken as it is)."""
    opts = type(obj)._meta
    connection = connections[using]
    names = tuple(sorted(fields))
    targets = [opts.get_field(name) for name in names]

    def make() -> str:
        quote = connection.ops.quote_name
        sets = ", ".join(f"{quote(f.column)} = %s" for f in targets)
        # Only the model's own table and column names are interpolated; values are parameters.
        sql = f"UPDATE {quote(opts.db_table)} SET {sets} WHERE {quote(opts.pk.column)} = %s"  # noqa: S608
        return f"{sql} RETURNING {quote(opts.pk.column)}" if returning else sql

    sql = _cached_sql(connection, ("update", opts.label, names, returning), make)
    adapted = adapted or {}
    (values,) = _db_values(connection, [obj], [f for f in targets if f.name not in adapted], False)
    values = iter(values)
    params = [adapted[f.name] if f.name in adapted else next(values) for f in targets]
    params.append(opts.pk.get_db_prep_value(obj.pk, connection))
    return sql, params


def update(
    obj: Any, fields: list[str] | tuple[str, ...], using: str = "default", *, adapted: dict[str, Any] | None = None
) -> None:
    """`obj.save(update_fields=fields)` for a row known to exist (update_sql; no signals)."""
    sql, params = update_sql(obj, fields, using, adapted=adapted)
    connection = connections[using]
    with connection.cursor() as cursor:
        if _batching(connection) == "text" and _server_prepared():
            _execute_prepared(cursor, [sql], [params], _write_forms(connection, [sql]))
        else:
            cursor.execute(sql, params)
        if cursor.rowcount != 1:
            raise DatabaseError(f"{type(obj)._meta.object_name} {obj.pk}: the update changed no row")


def updated_one(obj: Any, rows: list[tuple] | None) -> None:
    """The rows an update_sql(obj, ..., returning=True) returned: exactly its own, else the
    error update() raises."""
    if not rows or len(rows) != 1:
        raise DatabaseError(f"{type(obj)._meta.object_name} {obj.pk}: the update changed no row")


# --------------------------------------------------------------------------- several writes, one round trip


def _batching(connection) -> str | None:
    """How several statements go in one round trip: "text" (PostgreSQL with client-side
    binding: psycopg then uses the simple query protocol, which runs a list of statements
    sent as one text), "pipeline" (PostgreSQL with server-side binding: psycopg's pipeline
    mode sends them one after the other without waiting, each still a prepared statement
    once used often enough), or None (SQLite: one by one)."""
    if connection.vendor != "postgresql":
        return None
    if connection.settings_dict.get("OPTIONS", {}).get("server_side_binding"):
        return "pipeline"
    return "text"


def _joined(connection) -> bool:
    """Whether several statements go as one text (_batching "text"): one query for Django's
    query counting, where a pipeline counts each statement."""
    return _batching(connection) == "text"


def _pipelined(connection, sqls: list[str], params: list[list[Any]]) -> list[list[tuple] | None]:
    """Run the statements in one psycopg pipeline, each on its own cursor (through Django's
    cursor wrapper, so that query counting sees each); the rows each returns (None for a
    statement that returns none). A failing statement raises as it would alone; the ones
    after it do not run."""
    connection.ensure_connection()
    cursors = [connection.cursor() for _ in sqls]
    try:
        # The pipeline raises when it syncs, outside Django's cursor: wrap its errors as the
        # cursor would (psycopg's UniqueViolation -> django.db.IntegrityError, ...).
        with connection.wrap_database_errors, connection.connection.pipeline():
            for cursor, sql, ps in zip(cursors, sqls, params, strict=True):
                cursor.execute(sql, ps)
        with connection.wrap_database_errors:
            return [cursor.fetchall() if cursor.description is not None else None for cursor in cursors]
    finally:
        for cursor in cursors:
            cursor.close()


_PLACEHOLDER = re.compile("%[s%]")
_TEMPLATES_MAX = 512  # statement texts kept per connection (the hot paths use a few dozen)


def _template(connection, sql: str) -> list[str]:
    """`sql` cut at its %s placeholders, "%%" turned into "%": the pieces the values go
    between, worked out once per connection and text."""
    cache = connection.__dict__.setdefault("_chemin_prepared_templates", {})
    pieces = cache.get(sql)
    if pieces is None:
        pieces, text, start = [], [], 0
        for match in _PLACEHOLDER.finditer(sql):
            text.append(sql[start : match.start()])
            if match.group() == "%%":
                text.append("%")
            else:
                pieces.append("".join(text))
                text = []
            start = match.end()
        text.append(sql[start:])
        pieces.append("".join(text))
        if len(cache) >= _TEMPLATES_MAX:
            cache.clear()
        cache[sql] = pieces
    return pieces


def _quoter(cursor) -> Callable[[Any], str]:
    """A value as the SQL literal psycopg's client-side binding writes for it (its own
    quoting, in C), for the connection's adapters and encoding.

    Made once per database connection, not per statement: a Transformer finds each type's
    dumper once and keeps it, and the dumpers (which quote) are the connection's (Django
    registers only loaders on a cursor). An int, a bool and None are written here as psycopg
    writes them (a negative int after a space, so that "-" never follows another "-"; the
    same text at any size: tests/config/test_prepared.py), without a call into it."""
    raw = cursor.cursor.connection
    quote = getattr(raw, "_chemin_quote", None)
    if quote is None:
        from psycopg.adapt import Transformer

        as_literal, encoding = Transformer(raw).as_literal, raw.info.encoding

        def quote(value: Any) -> str:
            kind = type(value)
            if kind is int:
                return str(value) if value >= 0 else f" {value}"
            if value is None:
                return "NULL"
            if kind is bool:
                return "true" if value else "false"
            return as_literal(value).decode(encoding)

        raw._chemin_quote = quote
    return quote


def _quoted(connection, quote: Callable[[Any], str], sql: str, values: list[Any]) -> str:
    """The statement with its values quoted in at its placeholders (split once: _template)."""
    pieces = _template(connection, sql)
    if len(pieces) != len(values) + 1:
        raise DatabaseError(f"prepared: {len(values)} values for {len(pieces) - 1} placeholders")
    out = [pieces[0]]
    for value, piece in zip(values, pieces[1:], strict=True):
        out.append(quote(value))
        out.append(piece)
    return "".join(out)


def _execute_text(cursor, sqls: list[str], params: list[list[Any]]) -> None:
    """Execute these statements as one text with their values quoted in, as psycopg's
    client-side binding does (the same literals: its own quoting, in C), but with each
    statement's split at its placeholders kept per connection: psycopg keeps it only for
    statements under 4 KB and 50 values, and the batched ones are longer."""
    connection, quote = cursor.db, _quoter(cursor)
    cursor.execute(
        "; ".join(_quoted(connection, quote, sql, values) for sql, values in zip(sqls, params, strict=True))
    )


def _server_prepared() -> bool:
    """settings.DATABASE_PREPARED_STATEMENTS (on unless DATABASE_PREPARED_STATEMENTS=0): the
    compiled reads, and the writes built by insert_sql and update_sql, run as PostgreSQL
    prepared statements (_execute_prepared)."""
    from django.conf import settings

    return getattr(settings, "DATABASE_PREPARED_STATEMENTS", True)


def _server_form(connection, sql: str) -> tuple[str, str, int]:
    """A statement's prepared form: its name's digest, its text with $1..$n for %s, and its
    count of values."""
    import hashlib

    pieces = _template(connection, sql)
    numbered = [pieces[0]]
    for i, piece in enumerate(pieces[1:], 1):
        numbered += [f"${i}", piece]
    text = "".join(numbered)
    return hashlib.sha256(text.encode()).hexdigest()[:20], text, len(pieces) - 1


def _preparable(connection, sql: str) -> None:
    """Mark a write's SQL, built once per connection (insert_sql, update_sql), as one to run
    as a prepared statement (_execute_prepared)."""
    connection.__dict__.setdefault("_chemin_preparable", {})[sql] = None


def _write_forms(connection, sqls: list[str]) -> list[tuple[str, str, int] | None]:
    """The prepared form of each of these writes, None for one not built here (run as text)."""
    forms = connection.__dict__.get("_chemin_preparable", {})
    out = []
    for sql in sqls:
        if sql not in forms:
            out.append(None)
            continue
        form = forms[sql]
        if form is None:
            form = forms[sql] = _server_form(connection, sql)
        out.append(form)
    return out


def _execute_prepared(
    cursor, sqls: list[str], params: list[list[Any]], forms: list[tuple[str, str, int] | None]
) -> None:
    """Run statements as PostgreSQL prepared statements, in one round trip: PostgreSQL
    parses and plans each once per database session instead of on every run (measured:
    about 40% of its CPU on the coup path went to parsing and planning). `forms` gives each
    statement's prepared form (_server_form); one with None goes as text (_execute_text).

    Each is PREPAREd the first time this database session runs it, at the head of the same
    text (so the count of queries does not change), then run with EXECUTE name(values),
    the values quoted as _execute_text quotes them; a comment after each EXECUTE carries the
    statement's SQL for the logs. The cursor is left on the first statement's result.

    PREPARE outlives the transaction it runs in (PostgreSQL does not roll it back): a text
    that fails may or may not have prepared its statements, so the session's names then
    start afresh (a new generation) and are prepared again. Not behind a pooler that hands
    one database session to several clients in turn (set DATABASE_PREPARED_STATEMENTS=0)."""
    connection = cursor.db
    raw = connection.connection
    known = getattr(raw, "_chemin_prepared", None)
    if known is None:
        known = raw._chemin_prepared = set()
        raw._chemin_generation = 0
    generation = raw._chemin_generation
    quote = _quoter(cursor)
    head, body, new = [], [], set()
    for sql, values, form in zip(sqls, params, forms, strict=True):
        if form is None:
            body.append(_quoted(connection, quote, sql, values))
            continue
        digest, numbered, count = form
        if count != len(values):
            raise DatabaseError(f"prepared: {len(values)} values for {count} placeholders")
        name = f"chemin_{generation}_{digest}"
        if name not in known and name not in new:
            head.append(f"PREPARE {name} AS {numbered}")
            new.add(name)
        literals = ", ".join(quote(v) for v in values)
        comment = "" if "*/" in sql or "/*" in sql else f" /* {sql} */"
        body.append(f"EXECUTE {name}({literals}){comment}" if values else f"EXECUTE {name}{comment}")
    try:
        cursor.execute("; ".join(head + body))
    except BaseException:
        known.clear()
        raw._chemin_generation = generation + 1
        raise
    known.update(new)
    for _ in head:  # past the PREPAREs' results, to the first statement's
        cursor.nextset()


def _compiled_forms(connection, compiled: list[_Compiled]) -> list[tuple[str, str, int]]:
    for c in compiled:
        if c.server is None:
            c.server = _server_form(connection, c.sql)
    return [c.server for c in compiled]


def write(statements: list[tuple[str, list[Any]]], using: str = "default", *, every: bool = False) -> Any:
    """Run these writes in order, in one round trip where the database allows it (else one
    by one); return the rows the first statement returns (RETURNING), if it returns any
    (`every`: a list of each statement's rows, None for one that returns none).
    A failing statement raises as it would alone, and the caller's transaction rolls back."""
    connection = connections[using]
    statements = [(sql, params) for sql, params in statements if sql]
    if not statements:
        return [] if every else None
    mode = _batching(connection)
    if mode == "pipeline" and len(statements) > 1:
        results = _pipelined(connection, [sql for sql, _ in statements], [ps for _, ps in statements])
        return results if every else results[0]
    with connection.cursor() as cursor:
        if mode == "text":
            sqls, params = [sql for sql, _ in statements], [ps for _, ps in statements]
            if _server_prepared():
                _execute_prepared(cursor, sqls, params, _write_forms(connection, sqls))
            else:
                _execute_text(cursor, sqls, params)
            if not every:
                return cursor.fetchall() if cursor.description is not None else None
            results = []
            for i in range(len(statements)):
                if i and not cursor.nextset():
                    raise DatabaseError("prepared.write: a statement returned no result")
                results.append(cursor.fetchall() if cursor.description is not None else None)
            return results
        results = []
        for i, (sql, params) in enumerate(statements):
            cursor.execute(sql, params)
            if (every or i == 0) and cursor.description is not None:
                results.append(cursor.fetchall())
            else:
                results.append(None)
        return results if every else results[0]
