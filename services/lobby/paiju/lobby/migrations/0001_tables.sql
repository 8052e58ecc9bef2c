-- The lobby's read model of tables: one row per table, rebuilt from the LOBBY stream.
CREATE TABLE lobby_tables (
    table_id   text PRIMARY KEY,
    game       text NOT NULL,
    status     text NOT NULL,
    bots       boolean NOT NULL,          -- a seat is played by a bot (a bot, or a covered player)
    opened_seq bigint NOT NULL,           -- stream sequence of the table's first event: newest first
    version    bigint NOT NULL,
    snapshot   bytea NOT NULL,            -- the API's Table message (paiju.v1.Table)
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX lobby_tables_listing ON lobby_tables (status, game, opened_seq DESC);

-- Where each projection of the lobby stands in the stream (updated in the same transaction as its rows).
CREATE TABLE lobby_checkpoints (
    projection text PRIMARY KEY,
    sequence   bigint NOT NULL
);
