-- ratings (docs/rules/ratings.md), written by the rater (paiju.scoring.rater) in the transaction that moves its
-- checkpoint: what it keeps of the LOBBY stream's tables, where each rating ledger stands, and the read models of
-- the ratings (current ratings; each player's rated matches, for histories and head-to-heads)
CREATE TABLE scoring_rating_tables (
    model      integer  NOT NULL,
    table_id   text     NOT NULL,
    game       text     NOT NULL,
    mode       smallint NOT NULL DEFAULT 0,
    game_id    text     NOT NULL DEFAULT '',
    match_mode smallint NOT NULL DEFAULT 0,
    players    text[]   NOT NULL DEFAULT '{}',
    PRIMARY KEY (model, table_id)
);

CREATE TABLE scoring_rating_ledgers (
    ledger   text    PRIMARY KEY,
    version  bigint  NOT NULL,
    sequence bigint  NOT NULL
);

CREATE TABLE scoring_ratings (
    model      integer          NOT NULL,
    game       text             NOT NULL,
    mode       smallint         NOT NULL,
    player_id  text             NOT NULL,
    mu         double precision NOT NULL,
    sigma      double precision NOT NULL,
    matches    integer          NOT NULL,
    wins       integer          NOT NULL,
    draws      integer          NOT NULL,
    updated_at timestamptz      NOT NULL,
    PRIMARY KEY (model, game, mode, player_id)
);
CREATE INDEX scoring_ratings_board ON scoring_ratings (model, game, mode, (mu - 3 * sigma) DESC, mu DESC, player_id);

CREATE TABLE scoring_rating_matches (
    model        integer          NOT NULL,
    game         text             NOT NULL,
    mode         smallint         NOT NULL,
    player_id    text             NOT NULL,
    number       bigint           NOT NULL,
    game_id      text             NOT NULL,
    table_id     text             NOT NULL,
    at           timestamptz      NOT NULL,
    seat         integer          NOT NULL,
    team         integer          NOT NULL,
    result       text             NOT NULL,
    team_scores  integer[]        NOT NULL,
    players      text[]           NOT NULL,
    before_mu    double precision NOT NULL,
    before_sigma double precision NOT NULL,
    after_mu     double precision NOT NULL,
    after_sigma  double precision NOT NULL,
    PRIMARY KEY (model, game, mode, player_id, number)
);
CREATE INDEX scoring_rating_matches_games ON scoring_rating_matches (model, game, mode, game_id);
