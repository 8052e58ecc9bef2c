-- Who opened each table (its owner's id), so that the lobby counts a player's open tables, and a listing order
-- that shows the tables in play first: "listed" is 2 for a table in play, 1 for one filling seats, 0 for the
-- others; pages follow (listed, opened_seq) downwards.
--
-- The rows are rebuilt: "tables" starts again from the stream's start (its checkpoint is removed), so every table
-- gets its owner; the listing is empty until the projection has caught up, which the lobby does before it serves.
ALTER TABLE lobby_tables ADD COLUMN owner text NOT NULL DEFAULT '';
ALTER TABLE lobby_tables ADD COLUMN listed smallint NOT NULL DEFAULT 0;
CREATE INDEX lobby_tables_pages ON lobby_tables (listed DESC, opened_seq DESC);
CREATE INDEX lobby_tables_owners ON lobby_tables (owner) WHERE status IN ('open', 'playing');
DELETE FROM lobby_tables;
DELETE FROM lobby_checkpoints WHERE projection = 'tables';
