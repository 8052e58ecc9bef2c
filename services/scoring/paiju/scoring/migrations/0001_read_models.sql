-- Scoring's read models, projected from the GAMES and TOURNAMENTS streams; `paiju scoring rebuild` empties
-- them and replays the streams. Every table is derived: the event log is the source of truth.

CREATE TABLE scoring_checkpoints (
    projection text   PRIMARY KEY,
    sequence   bigint NOT NULL CHECK (sequence >= 0)
);

-- one row per game seen: its running fold (paiju.scoring.fold.GameFold)
CREATE TABLE scoring_games (
    game_id text  PRIMARY KEY,
    game    text  NOT NULL,
    ended   boolean NOT NULL DEFAULT false,
    fold    jsonb NOT NULL
);

CREATE TABLE scoring_deals (
    game_id           text        NOT NULL,
    deal              integer     NOT NULL,
    game              text        NOT NULL,
    players           text[]      NOT NULL,
    started_at        timestamptz,
    ended_at          timestamptz NOT NULL,
    finishing_order   integer[]   NOT NULL,
    caught            integer[]   NOT NULL,
    outcome           text        NOT NULL,
    team_points       integer[]   NOT NULL,
    individual_points integer[]   NOT NULL,
    dealer            integer,
    trump             text        NOT NULL,
    level_rank        text        NOT NULL,
    attackers_points  integer,
    winner            text        NOT NULL,
    levels_up         integer,
    levels            integer[]   NOT NULL,
    PRIMARY KEY (game_id, deal)
);
CREATE INDEX scoring_deals_ended_at ON scoring_deals (ended_at);

-- the 砸六家 team ledger (kind team), individual ledger (kind individual) and 拖拉机 levels over time (kind levels)
CREATE TABLE scoring_ledger (
    game_id text    NOT NULL,
    deal    integer NOT NULL,
    kind    text    NOT NULL CHECK (kind IN ('team', 'individual', 'levels')),
    who     integer NOT NULL,
    player  text    NOT NULL,
    points  integer NOT NULL,
    total   integer NOT NULL,
    PRIMARY KEY (game_id, kind, deal, who)
);

CREATE TABLE scoring_matches (
    game_id           text        PRIMARY KEY,
    game              text        NOT NULL,
    players           text[]      NOT NULL,
    ended_at          timestamptz NOT NULL,
    deals             integer     NOT NULL,
    team_points       integer[]   NOT NULL,
    individual_points integer[]   NOT NULL,
    levels            integer[]   NOT NULL,
    difference        integer     NOT NULL,
    vp_a              numeric     NOT NULL,
    vp_b              numeric     NOT NULL,
    winner_team       integer
);

CREATE TABLE scoring_player_stats (
    player_id           text    NOT NULL,
    game                text    NOT NULL,
    deals               integer NOT NULL DEFAULT 0,
    matches             integer NOT NULL DEFAULT 0,
    matches_won         integer NOT NULL DEFAULT 0,
    places              integer[] NOT NULL DEFAULT '{0,0,0,0,0,0}',
    caught              integer NOT NULL DEFAULT 0,
    individual_points   integer NOT NULL DEFAULT 0,
    team_points         integer NOT NULL DEFAULT 0,
    attacking_deals     integer NOT NULL DEFAULT 0,
    attacking_deals_won integer NOT NULL DEFAULT 0,
    defending_deals     integer NOT NULL DEFAULT 0,
    defending_deals_won integer NOT NULL DEFAULT 0,
    levels_gained       integer NOT NULL DEFAULT 0,
    score               integer NOT NULL DEFAULT 0,
    PRIMARY KEY (player_id, game)
);
CREATE INDEX scoring_player_stats_board ON scoring_player_stats (game, score DESC, matches_won DESC, player_id);

-- every team's result in every round of every tournament (from the TOURNAMENTS stream)
CREATE TABLE scoring_tournament_results (
    tournament_id text    NOT NULL,
    round         integer NOT NULL,
    team_id       text    NOT NULL,
    opponent_id   text,
    kind          text    NOT NULL,
    vp            numeric NOT NULL,
    PRIMARY KEY (tournament_id, round, team_id)
);
