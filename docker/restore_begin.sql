-- `make restore` runs this before the dump's SQL (pg_restore --file=-), in the same psql
-- session and transaction; the Makefile sends COMMIT only once pg_restore has written the
-- whole dump, so a failure anywhere (here, in the dump's SQL, an unreadable or truncated
-- dump) leaves the database as it was.
--
-- It empties the database so that the restore gives exactly what was dumped: every schema
-- but PostgreSQL's own is dropped, with everything in it (tables, functions, triggers,
-- sequences, types, the extensions installed there, django_migrations), whether the dump
-- holds it or not (pg_restore --clean drops only what the dump holds: a table, function or
-- trigger created after the dump would survive it). `public` is created again with the
-- owner, privileges and comment it had (PostgreSQL 15: pg_database_owner, USAGE for
-- everyone); --no-owner/--no-acl restores leave those to the database, so the dump does not
-- carry them.
--
-- It refuses while other sessions are connected to the database (the web, the worker, beat,
-- a psql left open): what they wrote after the dump would be lost, what they hold in memory
-- would not match. psql -v ignore_sessions=1 (make restore IGNORE_SESSIONS=yes) goes on.

\set ON_ERROR_STOP 1
BEGIN;
-- DROP SCHEMA ... CASCADE names every object it drops, one NOTICE each.
SET LOCAL client_min_messages = warning;
-- Wait at most this long for another session's locks, rather than hang behind it.
SET LOCAL lock_timeout = '30s';

\if :{?ignore_sessions}
SET LOCAL chemin.restore_ignore_sessions = 'yes';
\endif

DO $restore$
DECLARE
    was record;
    s record;
    g record;
    others text;
BEGIN
    SELECT string_agg(DISTINCT coalesce(nullif(a.application_name, ''), a.usename::text, '?'), ', ')
      INTO others FROM pg_stat_activity a
     WHERE a.datname = current_database() AND a.pid <> pg_backend_pid()
       -- Not autovacuum (no user). backend_type is hidden from a role without
       -- pg_read_all_stats for another role's sessions, hence the NULL.
       AND a.usesysid IS NOT NULL AND coalesce(a.backend_type, 'client backend') = 'client backend';
    IF others IS NOT NULL AND current_setting('chemin.restore_ignore_sessions', true) IS DISTINCT FROM 'yes' THEN
        RAISE EXCEPTION 'restore refused: other sessions are connected to this database (%)', others
            USING HINT = 'Stop web, worker and beat first (IGNORE_SESSIONS=yes restores anyway).';
    END IF;
    SELECT n.nspowner, n.nspacl, obj_description(n.oid, 'pg_namespace') AS note
      INTO was FROM pg_namespace n WHERE n.nspname = 'public';
    FOR s IN SELECT nspname FROM pg_namespace
              WHERE nspname NOT LIKE 'pg\_%' AND nspname <> 'information_schema' LOOP
        EXECUTE format('DROP SCHEMA %I CASCADE', s.nspname);
    END LOOP;
    IF was.nspowner IS NULL THEN
        CREATE SCHEMA public;
        RETURN;
    END IF;
    EXECUTE format('CREATE SCHEMA public AUTHORIZATION %s', was.nspowner::regrole);
    IF was.note IS NOT NULL THEN
        EXECUTE format('COMMENT ON SCHEMA public IS %L', was.note);
    END IF;
    FOR g IN SELECT a.grantee, a.privilege_type, a.is_grantable FROM aclexplode(was.nspacl) a
              WHERE a.grantee <> was.nspowner LOOP
        EXECUTE format('GRANT %s ON SCHEMA public TO %s%s', g.privilege_type,
                       CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE g.grantee::regrole::text END,
                       CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
    END LOOP;
END
$restore$;
