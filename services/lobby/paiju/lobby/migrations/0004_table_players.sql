-- The people seated at each table (not its bots), so that the matchmaking queue refuses a player who sits in a
-- running match (docs/rules/matchmaking.md, D-MM-1) with one indexed query.
--
-- The rows are rebuilt: "tables" starts again from the stream's start (its checkpoint is removed), so every table
-- gets its players; the lobby catches the projection up before it serves.
ALTER TABLE lobby_tables ADD COLUMN players text[] NOT NULL DEFAULT '{}';
CREATE INDEX lobby_tables_players ON lobby_tables USING gin (players) WHERE status = 'playing';
DELETE FROM lobby_tables;
DELETE FROM lobby_checkpoints WHERE projection = 'tables';
