-- the committed shuffles of fair games (paiju.rules.fair): each deal's commitment, and its server seed once
-- revealed, so that a tournament's result sheet can carry them (docs/fairness.md)
CREATE TABLE scoring_shuffles (
    game_id     text    NOT NULL,
    number      integer NOT NULL CHECK (number >= 1),
    deal        integer NOT NULL,
    commitment  bytea,
    server_seed bytea,
    PRIMARY KEY (game_id, number)
);
