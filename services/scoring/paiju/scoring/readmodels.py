"""The read models of the GAMES stream in PostgreSQL: deals, matches, ledgers, levels, player statistics.

Each projection is a handler of the platform's stream consumer (`paiju.scoring.projector.Projector`), applied in
batches, each in the transaction that moves its checkpoint. Each game's `GameFold` is kept in ``scoring_games``,
written in the batch's transaction whenever the batch changed it, so any replica can apply the next batch. The
GAMES projection also keeps the folds it wrote in memory, for its next batch, but only while they are provably what
``scoring_games`` holds: see `GamesProjection`.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import astuple, fields
from importlib import resources
from typing import Any

import asyncpg

from paiju.platform.consumer import Tracked
from paiju.platform.postgres import load_migrations, migrate
from paiju.platform.store import Recorded
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.scoring import tournament as tm
from paiju.scoring.contract import TOURNAMENT_EVENTS
from paiju.scoring.fold import DealRow, GameFold, LedgerRow, MatchRow, Row, ShuffleRow, StatDelta
from paiju.scoring.games import GAMES
from paiju.scoring.rater import is_ledger
from paiju.v1 import engine_pb2, tournament_events_pb2

READ_MODEL_TABLES = (
    "scoring_games",
    "scoring_deals",
    "scoring_ledger",
    "scoring_matches",
    "scoring_player_stats",
    "scoring_shuffles",
)
CACHED_FOLDS = 4096
"""The most games' folds a GAMES projection keeps in memory between batches (the least recently touched go first;
a game's fold goes when its match ends): far more than the games a replica's shard plays at once."""
STAT_FIELDS = tuple(f.name for f in fields(StatDelta) if f.name not in ("player_id", "game", "place"))


async def migrate_scoring(pool: asyncpg.Pool[Any]) -> None:
    """Apply scoring's migrations (at start; safe with several replicas starting at once)."""
    await migrate(pool, "scoring", load_migrations(resources.files("paiju.scoring") / "migrations"))


class GamesProjection:
    """Every game event into the scoring tables — or, as one of several shards (``partitions``: the partitions of the
    games it applies, ``name``: its checkpoint's), the events of its share of the games. A game's events are all in
    one partition, its fold in its own row, and the players' statistics are sums added in one order, so shards apply
    their batches side by side on any replicas and end with the same tables as one projection.

    The folds this projection wrote are kept in memory between its batches, and used only while they are provably
    current: a fold is a function of the stream's events up to a checkpoint, so the folds kept after the batch this
    process last committed (`committed`, heard from `paiju.scoring.projector.CommitTracking`) are the rows of
    ``scoring_games`` exactly when the checkpoint row the next batch locks still names that batch's end. Anything
    else (another replica or shard hand-over moved it, a rebuild set it back, the last batch's transaction failed or
    its outcome went unheard) drops them all, and the folds are read from ``scoring_games`` as a replica without any
    would. A batch applies its events to the kept folds in place; a batch whose transaction does not commit leaves
    them unusable (`forget`, or no `committed` after it)."""

    def __init__(
        self,
        stream: str = "GAMES",
        prefix: str = "paiju.game",
        *,
        name: str = "games",
        partitions: frozenset[int] | None = None,
    ) -> None:
        self.stream = stream
        self.prefix = prefix
        self.name = name
        self.partitions = partitions
        self._folds: dict[str, GameFold] = {}
        """Folds kept, by game, least recently touched first."""
        self._written: dict[str, str] = {}
        """The JSON of each kept fold as ``scoring_games`` holds it (what this projection wrote or read)."""
        self._current: int | None = None
        """The checkpoint the kept folds are current at (``None``: not known to be current anywhere)."""
        self._applied: int | None = None
        """The end of the batch applied last, until its commit is heard."""

    @staticmethod
    def wakes(recorded: Recorded) -> bool:
        """Whether a running projection applies ``recorded`` soon (`paiju.platform.consumer.Consumer` ``wake``): an
        event that adds rows or starts a game's row (`paiju.scoring.games.ScoringGame.results`, the seats'
        players). The play between them adds none: it waits in the stream until one of them comes, the batch is
        full or a few seconds have passed (`paiju.platform.consumer.LAZY_SECONDS`), so a busy stream costs a
        transaction per result, not one per quarter of a second and shard."""
        envelope = engine_pb2.Envelope.FromString(recorded.data)
        which = envelope.WhichOneof("payload")
        if which == "seats_assigned":
            return True
        game = GAMES.get(which or "")
        return game is not None and getattr(envelope, game.name).WhichOneof("event") in game.results

    def forget(self) -> None:
        """Drop every fold kept (a batch's transaction failed, a rebuild): the next batch reads them again."""
        self._folds.clear()
        self._written.clear()
        self._current = self._applied = None

    def committed(self, sequence: int) -> None:
        """The batch applied last committed, its checkpoint now ``sequence``: the folds kept are current there."""
        if self._applied is None or self._applied != sequence:  # not the batch the folds followed
            self.forget()
            return
        self._current, self._applied = sequence, None

    async def clear(self, tracked: Tracked) -> None:
        self.forget()
        await tracked.connection.execute(f"TRUNCATE {', '.join(READ_MODEL_TABLES)}")

    async def apply(self, tracked: Tracked, batch: Sequence[Recorded]) -> None:
        current, self._current, self._applied = self._current, None, None
        if current is None or current != tracked.sequence:
            self.forget()
        connection = tracked.connection
        envelopes = [(d.aggregate, engine_pb2.Envelope.FromString(d.data)) for d in batch]
        game_ids = sorted({game_id for game_id, _ in envelopes})
        folds, written = self._folds, self._written
        missing = [g for g in game_ids if g not in folds]
        if missing:
            for row in await connection.fetch(
                "SELECT game_id, fold FROM scoring_games WHERE game_id = ANY($1::text[])", missing
            ):
                fold = folds[row["game_id"]] = GameFold.from_json(json.loads(row["fold"]))
                written[row["game_id"]] = json.dumps(fold.to_json())
        rows: list[Row] = []
        for game_id, envelope in envelopes:
            found = folds.get(game_id)
            if found is None:
                found = folds[game_id] = GameFold(game_id)
            rows += found.apply(envelope)
        changed: list[tuple[GameFold, str]] = []
        for game_id in game_ids:
            fold = folds.pop(game_id)
            text = json.dumps(fold.to_json())
            if written.get(game_id) != text:  # a new game, or one the batch moved: unchanged rows are not rewritten
                changed.append((fold, text))
                written[game_id] = text
            if fold.ended:
                del written[game_id]
            else:
                folds[game_id] = fold  # the most recently touched last
        await _write_folds(connection, changed)
        await _write_rows(connection, rows)
        if len(folds) > CACHED_FOLDS:
            for game_id in list(folds)[: len(folds) - CACHED_FOLDS]:  # the least recently touched
                del folds[game_id], written[game_id]
        self._applied = batch[-1].sequence


async def _write_folds(connection: Any, folds: list[tuple[GameFold, str]]) -> None:
    if not folds:
        return
    await connection.executemany(
        """
        INSERT INTO scoring_games (game_id, game, ended, fold) VALUES ($1, $2, $3, $4::jsonb)
        ON CONFLICT (game_id) DO UPDATE SET game = EXCLUDED.game, ended = EXCLUDED.ended, fold = EXCLUDED.fold
        """,
        [(f.game_id, f.game, f.ended, text) for f, text in folds],
    )


async def _write_rows(connection: Any, rows: list[Row]) -> None:
    shuffles = [r for r in rows if isinstance(r, ShuffleRow)]
    if shuffles:  # in log order: a commitment, then its reveal
        await connection.executemany(
            """
            INSERT INTO scoring_shuffles (game_id, number, deal, commitment, server_seed) VALUES ($1, $2, $3, $4, $5)
            ON CONFLICT (game_id, number) DO UPDATE
            SET commitment = COALESCE(EXCLUDED.commitment, scoring_shuffles.commitment),
                server_seed = COALESCE(EXCLUDED.server_seed, scoring_shuffles.server_seed)
            """,
            [astuple(r) for r in shuffles],
        )
    deals = [r for r in rows if isinstance(r, DealRow)]
    if deals:
        await connection.executemany(
            """
            INSERT INTO scoring_deals (game_id, deal, game, players, started_at, ended_at, finishing_order, caught,
                outcome, team_points, individual_points, dealer, trump, level_rank, attackers_points, winner,
                levels_up, levels)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
            """,
            [astuple(d) for d in deals],
        )
    ledger = [r for r in rows if isinstance(r, LedgerRow)]
    if ledger:
        await connection.executemany(
            "INSERT INTO scoring_ledger (game_id, deal, kind, who, player, points, total) "
            "VALUES ($1, $2, $3, $4, $5, $6, $7)",
            [astuple(r) for r in ledger],
        )
    matches = [r for r in rows if isinstance(r, MatchRow)]
    if matches:
        await connection.executemany(
            """
            INSERT INTO scoring_matches (game_id, game, players, ended_at, deals, team_points, individual_points,
                levels, difference, vp_a, vp_b, winner_team)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
            """,
            [
                (
                    m.game_id,
                    m.game,
                    list(m.players),
                    m.ended_at,
                    m.deals,
                    list(m.team_points),
                    list(m.individual_points),
                    list(m.levels),
                    m.difference,
                    m.vp[0],
                    m.vp[1],
                    m.winner_team,
                )
                for m in matches
            ],
        )
    await _add_stats(connection, [r for r in rows if isinstance(r, StatDelta)])


async def _add_stats(connection: Any, deltas: list[StatDelta]) -> None:
    """Add the batch's statistics, summed per player and game first (one upsert each)."""
    totals: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0] * len(STAT_FIELDS))
    places: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0] * 6)
    for delta in deltas:
        key = (delta.player_id, delta.game)
        total = totals[key]
        for i, name in enumerate(STAT_FIELDS):
            total[i] += getattr(delta, name)
        if delta.place:
            places[key][delta.place - 1] += 1
    if not totals:
        return
    columns = ", ".join(STAT_FIELDS)
    values = ", ".join(f"${i}" for i in range(4, 4 + len(STAT_FIELDS)))
    updates = ", ".join(f"{name} = s.{name} + EXCLUDED.{name}" for name in STAT_FIELDS)
    await connection.executemany(
        f"""
        INSERT INTO scoring_player_stats AS s (player_id, game, places, {columns}) VALUES ($1, $2, $3, {values})
        ON CONFLICT (player_id, game) DO UPDATE SET {updates},
            places = ARRAY(SELECT a + b FROM unnest(s.places, EXCLUDED.places) AS t(a, b))
        """,
        [(player, game, places[(player, game)], *total) for (player, game), total in sorted(totals.items())],
    )


class TournamentsProjection:
    """Every team's result in every round (`scoring_tournament_results`), from the TOURNAMENTS stream: a batch
    rewrites the rows of each tournament it touches from the tournament's state after the batch."""

    name = "tournaments"

    def __init__(self, store: JetStreamEventStore) -> None:
        self._store = store
        self.stream = store.stream
        self.prefix = store.prefix

    async def clear(self, tracked: Tracked) -> None:
        await tracked.connection.execute("TRUNCATE scoring_tournament_results")

    async def apply(self, tracked: Tracked, batch: Sequence[Recorded]) -> None:
        connection = tracked.connection
        last: dict[str, int] = {}
        for delivered in batch:
            last[delivered.aggregate] = delivered.sequence
        for tournament_id, sequence in sorted(last.items()):
            if is_ledger(tournament_id):  # a rating ledger beside the tournaments (paiju.scoring.rater)
                continue
            state = tm.Tournament()
            for recorded in await self._store.load(tournament_id):
                if recorded.sequence > sequence:
                    break
                envelope = tournament_events_pb2.TournamentEnvelope.FromString(recorded.data)
                state = tm.evolve(state, TOURNAMENT_EVENTS.decode(envelope.event))
            await connection.execute("DELETE FROM scoring_tournament_results WHERE tournament_id = $1", tournament_id)
            await connection.executemany(
                "INSERT INTO scoring_tournament_results (tournament_id, round, team_id, opponent_id, kind, vp) "
                "VALUES ($1, $2, $3, $4, $5, $6)",
                [
                    (tournament_id, r.round, r.team_id, r.opponent_id, r.kind.value, r.vp)
                    for r in tm.round_results(state)
                ],
            )
