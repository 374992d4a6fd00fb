-- oio built-in scenario: hot-rows.
--
-- Every session reads and updates one of 10 rows in one transaction: sessions queue on the
-- same few row locks (PostgreSQL's lock manager and tuple locks, InnoDB's record locks,
-- SQLite's one writer).

\setup
DROP TABLE IF EXISTS oio_sql_hot;
CREATE TABLE oio_sql_hot (
    id INTEGER NOT NULL PRIMARY KEY,
    counter BIGINT NOT NULL,
    updated_by INTEGER NOT NULL
);
INSERT INTO oio_sql_hot (id, counter, updated_by)
VALUES (1, 0, 0), (2, 0, 0), (3, 0, 0), (4, 0, 0), (5, 0, 0),
       (6, 0, 0), (7, 0, 0), (8, 0, 0), (9, 0, 0), (10, 0, 0);

\transaction hot-row
\set id random(1, 10)
-- SQLite: take the write lock first (a read-then-write transaction would deadlock).
\only sqlite
BEGIN IMMEDIATE;
\only postgres,mysql
BEGIN;
\only postgres,mysql
SELECT counter FROM oio_sql_hot WHERE id = :id FOR UPDATE;
\only sqlite
SELECT counter FROM oio_sql_hot WHERE id = :id;
UPDATE oio_sql_hot SET counter = counter + 1, updated_by = :client_id WHERE id = :id;
COMMIT;

\teardown
DROP TABLE IF EXISTS oio_sql_hot;
