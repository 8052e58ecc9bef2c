-- the strength of each bot seated at a table (LobbyBotSeated.strength), kept by the rater so that a casual match
-- rates its bots at their strength's fixed rating (docs/rules/ratings.md, D-RATE-8): bot player id -> strength
ALTER TABLE scoring_rating_tables ADD COLUMN bots jsonb NOT NULL DEFAULT '{}'::jsonb;
