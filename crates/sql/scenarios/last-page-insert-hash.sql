-- oio built-in scenario: last-page-insert-hash (the ATM ledger, hash-partitioned).
--
-- The last-page-insert ledger split into 16 hash partitions on its key: the ever-increasing
-- key now spreads over 16 last pages instead of one (the field reports' fix for last-page
-- contention). PostgreSQL: declarative PARTITION BY HASH (a partitioned table's primary key
-- must include the partition key: it is the key itself). MariaDB/MySQL: PARTITION BY HASH.
-- SQLite has no partitions: this scenario refuses it.

\setup
DROP TABLE IF EXISTS oio_sql_ledger_hash;
\only postgres
CREATE TABLE oio_sql_ledger_hash (
    id bigserial NOT NULL,
    account bigint NOT NULL,
    amount bigint NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (id)
) PARTITION BY HASH (id);
\only postgres
DO $$
BEGIN
    FOR i IN 0..15 LOOP
        EXECUTE format(
            'CREATE TABLE oio_sql_ledger_hash_%s PARTITION OF oio_sql_ledger_hash '
            'FOR VALUES WITH (MODULUS 16, REMAINDER %s)', i, i);
    END LOOP;
END
$$;
\only mysql
CREATE TABLE oio_sql_ledger_hash (
    id BIGINT NOT NULL AUTO_INCREMENT,
    account BIGINT NOT NULL,
    amount BIGINT NOT NULL,
    created_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (id)
) ENGINE = InnoDB PARTITION BY HASH (id) PARTITIONS 16;
CREATE INDEX oio_sql_ledger_hash_account ON oio_sql_ledger_hash (account);

\transaction transfer
\set debit random(1, 100000 * :scale)
\set credit random(1, 100000 * :scale)
\set amount random(1, 1000)
-- One round trip per transfer (\; joins the statements), so the driver is not what
-- the sessions wait on and their contention is the server's.
BEGIN \;
INSERT INTO oio_sql_ledger_hash (account, amount) VALUES (:debit, 0 - :amount) \;
INSERT INTO oio_sql_ledger_hash (account, amount) VALUES (:credit, :amount) \;
COMMIT;

\teardown
DROP TABLE IF EXISTS oio_sql_ledger_hash;
