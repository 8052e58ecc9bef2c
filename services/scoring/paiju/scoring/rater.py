"""The rater: rates every rated match in the order of the match results on the LOBBY stream, appends a
`RatingUpdated` to the match's rating ledger on the TOURNAMENTS stream, and keeps the ratings' read models
(docs/rules/ratings.md).

A handler of the platform's stream consumer (`paiju.platform.consumer`) over the LOBBY stream, its checkpoint in
``scoring_checkpoints`` (``ratings-v<model>``). Within each batch's transaction it keeps what it needs of the
tables — a table's mode when it was opened, a match's players and mode when it started (``scoring_rating_tables``)
—, and for each `LobbyMatchFinished` of a rated match (D-RATE-7, D-RATE-9):

1. reads its players' ratings from ``scoring_ratings`` (a bot: its strength's fixed rating, D-RATE-8, the strength
   its table seated it at, `LobbyBotSeated`, kept in ``scoring_rating_tables.bots``);
2. rates the match (`paiju.scoring.rating`) and builds the `RatingUpdated`;
3. appends it to the ledger ``ratings-v<model>-<game>-<mode>`` at the position ``scoring_rating_ledgers`` holds,
   with the command id ``rate-<table>-<lobby version>`` and every field — the envelope's time too, the lobby's time
   of the result — following from the LOBBY stream, so the event's bytes are the same however often it is made;
4. writes the read models from the event.

Exactly once. The append and the transaction are not one step: a crash after the append and before the commit
leaves the ledger one event ahead of ``scoring_rating_ledgers``, and the batch is handled again. The ledger is the
truth: an append that finds the ledger past the position expected reads the events beyond it, and the next one must
be this match's (its command id) — it is adopted instead of appended, after checking that the model made the same
bytes (`LedgerMismatch` otherwise: the batch fails and is logged, nothing is written over). A rebuild
(`Rater.clear`, then the LOBBY stream again) adopts every stored event the same way, so it reproduces the read
models bit for bit and proves that the model, run again, gives the stored numbers.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import structlog
from google.protobuf.timestamp_pb2 import Timestamp

from paiju.platform.consumer import Consumer, PostgresTracking, Tracked
from paiju.platform.store import ConcurrencyConflict, EventStore, Position, Recorded
from paiju.scoring import rating as rt
from paiju.scoring.games import GAMES
from paiju.v1 import lobby_events_pb2, tournament_events_pb2

CHECKPOINTS = "scoring_checkpoints"
LEDGER_PREFIX = "ratings-v"
SCHEMA_VERSION = 1
ACTOR = "scoring"
log = structlog.get_logger("paiju.scoring.rater")


class LedgerMismatch(Exception):
    """A rating ledger holds, for a match, an event other than the one the model makes now: the same model version
    gave other numbers (or the ledger was written by something else). Nothing is written; the batch is retried."""


def ledger_id(game: str, mode: rt.Mode, model: int = rt.MODEL_VERSION) -> str:
    """The aggregate of a rating ledger on the TOURNAMENTS stream (D-RATE-10): ``ratings-v1-zlj-casual``."""
    return f"{LEDGER_PREFIX}{model}-{game}-{mode.name.lower()}"


def is_ledger(aggregate: str) -> bool:
    """Whether an aggregate of the TOURNAMENTS stream is a rating ledger (tournament ids start ``tour``)."""
    return aggregate.startswith(LEDGER_PREFIX)


def consumer_name(model: int = rt.MODEL_VERSION) -> str:
    return f"ratings-v{model}"


def finishes_or_opens(recorded: Recorded) -> bool:
    """The LOBBY events the rater reads (the others only move its checkpoint, in batches)."""
    which = lobby_events_pb2.LobbyEnvelope.FromString(recorded.data).event.WhichOneof("event")
    return which in ("table_opened", "bot_seated", "match_started", "match_finished")


def _mode(value: int) -> rt.Mode | None:
    return next((m for m in rt.Mode if m.value == value), None)


@dataclass(frozen=True, slots=True)
class Started:
    """What the rater keeps of a table: its game and mode, and its current match's game, mode and players."""

    game: str
    mode: int
    game_id: str
    match_mode: int
    players: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Match:
    """A finished match to rate, as the LOBBY stream tells it."""

    game: str
    mode: rt.Mode
    table_id: str
    game_id: str
    lobby_sequence: int
    at_ms: int
    players: tuple[str, ...]
    result: rt.Result
    strengths: tuple[str, ...] = ()
    """Per seat, the strength a bot is rated at (`rating.bot_strength`); empty for a person (or all empty)."""


def rating_event(
    match: Match, before: Sequence[rt.Belief], matches: Sequence[int]
) -> tournament_events_pb2.TournamentRatingUpdated:
    """The `RatingUpdated` of one rated match (pure): ``before`` and ``matches`` (rated matches so far) per seat."""
    strengths = match.strengths or ("",) * len(match.players)
    game, mode, players, result = match.game, match.mode, match.players, match.result
    style = GAMES[game].rating
    fixed = [rt.is_bot(p) for p in players]
    after = rt.rate(style, before, result, fixed)
    shares = rt.weights(style, result, len(players))
    event = tournament_events_pb2.TournamentRatingUpdated(
        model=rt.MODEL_VERSION,
        game=game,
        mode=mode.value,  # type: ignore[arg-type]
        table_id=match.table_id,
        game_id=match.game_id,
        lobby_sequence=match.lobby_sequence,
        team_scores=list(result.team_scores),
        at=match.at_ms,
    )
    if result.winner is not None:
        event.winner_team = result.winner
    for seat, player in enumerate(players):
        row = event.seats.add(
            seat=seat,
            player_id=player,
            bot=fixed[seat],
            strategy=rt.bot_strength(strengths[seat]) if fixed[seat] else "",
            matches=0 if fixed[seat] else matches[seat] + 1,
            weight=shares[seat],
        )
        row.before.mu, row.before.sigma = before[seat].mu, before[seat].sigma
        row.after.mu, row.after.sigma = after[seat].mu, after[seat].sigma
    return event


def result_of(style: rt.Style, finished: lobby_events_pb2.LobbyMatchFinished, seats: int) -> rt.Result | None:
    """The result rated (D-RATE-2): 砸六家 team points and individual points, 拖拉机 final levels; ``None`` when the
    lobby's result does not have them."""
    result = finished.result
    if style.levels:
        if len(result.levels) != 2:
            return None
        return rt.Result((int(result.levels[0]), int(result.levels[1])))
    if len(result.team_points) != 2:
        return None
    individual = tuple(int(p) for p in result.individual_points)
    return rt.Result(
        (int(result.team_points[0]), int(result.team_points[1])), individual if len(individual) == seats else ()
    )


class Rater:
    """The rater's handler (see the module): ``tournaments`` is the TOURNAMENTS stream's store, where the ledgers
    are."""

    def __init__(self, tournaments: EventStore, model: int = rt.MODEL_VERSION) -> None:
        if model != rt.MODEL_VERSION:
            raise ValueError(f"this scoring rates with model version {rt.MODEL_VERSION}, not {model}")
        self.name = consumer_name(model)
        self.model = model
        self._store = tournaments
        self._tails: dict[str, deque[Recorded]] = {}
        """Per ledger, stored events beyond the position the database holds (read once on a rebuild or a retry)."""

    async def clear(self, tracked: Tracked) -> None:
        """Empty the rater's tables (a rebuild: the LOBBY stream is rated again, adopting the stored events)."""
        c = tracked.connection
        await c.execute("DELETE FROM scoring_rating_tables WHERE model = $1", self.model)
        await c.execute("DELETE FROM scoring_ratings WHERE model = $1", self.model)
        await c.execute("DELETE FROM scoring_rating_matches WHERE model = $1", self.model)
        await c.execute("DELETE FROM scoring_rating_ledgers WHERE ledger LIKE $1", f"{LEDGER_PREFIX}{self.model}-%")
        self._tails.clear()

    async def apply(self, tracked: Tracked, batch: Sequence[Recorded]) -> None:
        c = tracked.connection
        for recorded in batch:
            envelope = lobby_events_pb2.LobbyEnvelope.FromString(recorded.data)
            which = envelope.event.WhichOneof("event")
            if which == "table_opened":
                opened = envelope.event.table_opened
                await c.execute(
                    "INSERT INTO scoring_rating_tables (model, table_id, game, mode) VALUES ($1, $2, $3, $4) "
                    "ON CONFLICT (model, table_id) DO UPDATE SET game = $3, mode = $4",
                    self.model,
                    envelope.aggregate,
                    opened.game,
                    int(opened.mode),
                )
            elif which == "bot_seated":
                seated = envelope.event.bot_seated
                await c.execute(
                    "UPDATE scoring_rating_tables SET bots = bots || jsonb_build_object($3::text, $4::text) "
                    "WHERE model = $1 AND table_id = $2",
                    self.model,
                    envelope.aggregate,
                    seated.player_id,
                    seated.strength,
                )
            elif which == "match_started":
                started = envelope.event.match_started
                await c.execute(
                    "UPDATE scoring_rating_tables SET game_id = $3, match_mode = $4, players = $5 "
                    "WHERE model = $1 AND table_id = $2",
                    self.model,
                    envelope.aggregate,
                    started.game_id,
                    int(started.mode) if started.HasField("mode") else 0,
                    list(started.players),
                )
            elif which == "match_finished":
                await self._finished(c, envelope, recorded.sequence)

    async def _finished(self, c: Any, envelope: lobby_events_pb2.LobbyEnvelope, sequence: int) -> None:
        finished = envelope.event.match_finished
        row = await c.fetchrow(
            "SELECT game, mode, game_id, match_mode, players, bots FROM scoring_rating_tables "
            "WHERE model = $1 AND table_id = $2",
            self.model,
            envelope.aggregate,
        )
        if row is None or row["game_id"] != finished.game_id:
            return  # a table opened before the rater's first event, or a result of another match: not rated
        mode = _mode(row["match_mode"] or row["mode"])
        if mode is None:
            return  # D-RATE-9: formed as neither ranked nor casual
        game: str = row["game"]
        players = tuple(row["players"])
        scored = GAMES.get(game)
        if scored is None or len(players) != scored.rules.seats or any(not p for p in players):
            return
        humans = [p for p in players if not rt.is_bot(p)]
        if mode is rt.Mode.RANKED and len(humans) != len(players):
            log.info("a ranked match with a bot is not rated", table=envelope.aggregate, game_id=finished.game_id)
            return  # D-RATE-7: ranked matches are humans only
        if not humans or len(set(humans)) != len(humans):
            return
        result = result_of(scored.rating, finished, len(players))
        if result is None:
            log.error("a rated match finished without a result", table=envelope.aggregate, game_id=finished.game_id)
            return
        known = {
            r["player_id"]: r
            for r in await c.fetch(
                "SELECT player_id, mu, sigma, matches FROM scoring_ratings "
                "WHERE model = $1 AND game = $2 AND mode = $3 AND player_id = ANY($4::text[])",
                self.model,
                game,
                mode.value,
                humans,
            )
        }
        seated = json.loads(row["bots"]) if isinstance(row["bots"], str) else dict(row["bots"] or {})
        strengths = tuple(rt.bot_strength(str(seated.get(p, ""))) if rt.is_bot(p) else "" for p in players)
        before: list[rt.Belief] = []
        matches: list[int] = []
        for p, strength in zip(players, strengths, strict=True):
            if rt.is_bot(p):
                before.append(rt.bot_rating(strength))
                matches.append(0)
            elif p in known:
                before.append(rt.Belief(known[p]["mu"], known[p]["sigma"]))
                matches.append(known[p]["matches"])
            else:
                before.append(rt.DEFAULT)
                matches.append(0)
        at = envelope.recorded_at
        at_ms = at.seconds * 1000 + at.nanos // 1_000_000
        match = Match(game, mode, envelope.aggregate, finished.game_id, sequence, at_ms, players, result, strengths)
        event = rating_event(match, before, matches)
        ledger = ledger_id(game, mode, self.model)
        stored = await self._record(c, ledger, f"rate-{envelope.aggregate}-{envelope.version}", event, at)
        await self._project(c, stored, event)

    async def _record(
        self, c: Any, ledger: str, command_id: str, event: tournament_events_pb2.TournamentRatingUpdated, at: Timestamp
    ) -> int:
        """Append ``event`` to ``ledger`` (or adopt the same event stored already); its version in the ledger."""
        found = await c.fetchrow("SELECT version, sequence FROM scoring_rating_ledgers WHERE ledger = $1", ledger)
        position = Position(found["version"], found["sequence"]) if found is not None else Position()
        envelope = tournament_events_pb2.TournamentEnvelope(
            aggregate=ledger,
            version=position.version + 1,
            command_id=command_id,
            actor=ACTOR,
            schema_version=SCHEMA_VERSION,
        )
        envelope.recorded_at.CopyFrom(at)
        envelope.event.rating_updated.CopyFrom(event)
        data = envelope.SerializeToString(deterministic=True)
        recorded = self._adopted(ledger, position, command_id, data)
        if recorded is None:
            try:
                recorded = (await self._store.append(ledger, position, command_id, [data]))[0]
            except ConcurrencyConflict:
                tail = deque(await self._store.load(ledger, position))
                self._tails[ledger] = tail
                recorded = self._adopted(ledger, position, command_id, data)
                if recorded is None:
                    raise LedgerMismatch(
                        f"{ledger} holds an event after version {position.version} that is not {command_id}"
                    ) from None
            if recorded.data != data:  # the store answered a retried append with what it had stored
                raise LedgerMismatch(f"{ledger} version {recorded.version} ({command_id}) differs from the model's")
        await c.execute(
            "INSERT INTO scoring_rating_ledgers (ledger, version, sequence) VALUES ($1, $2, $3) "
            "ON CONFLICT (ledger) DO UPDATE SET version = $2, sequence = $3",
            ledger,
            recorded.version,
            recorded.sequence,
        )
        return recorded.version

    def _adopted(self, ledger: str, position: Position, command_id: str, data: bytes) -> Recorded | None:
        """The stored event of ``command_id`` right after ``position``, from the tail read before (``None``: none
        known: append). `LedgerMismatch` when it is there with other bytes or another command's event is."""
        tail = self._tails.get(ledger)
        while tail and tail[0].version <= position.version:
            tail.popleft()  # adopted by a batch that committed
        if not tail:
            self._tails.pop(ledger, None)
            return None
        first = tail[0]
        if first.version != position.version + 1:  # a batch rolled back after taking from the tail: read again
            self._tails.pop(ledger, None)
            return None
        if first.command_id != command_id:
            raise LedgerMismatch(f"{ledger} version {first.version} is {first.command_id}, not {command_id}")
        if first.data != data:
            raise LedgerMismatch(f"{ledger} version {first.version} ({command_id}) differs from the model's")
        return first

    async def _project(self, c: Any, number: int, event: tournament_events_pb2.TournamentRatingUpdated) -> None:
        """The read models of one rated match: each human's rating and their row of the match."""
        at = datetime.fromtimestamp(event.at / 1000, UTC)
        players = [s.player_id for s in event.seats]
        winner = event.winner_team if event.HasField("winner_team") else None
        for seat in event.seats:
            if seat.bot:
                continue
            team = rt.team_of(seat.seat)
            won = winner is not None and winner == team
            outcome = "drawn" if winner is None else ("won" if won else "lost")
            await c.execute(
                "INSERT INTO scoring_ratings "
                "(model, game, mode, player_id, mu, sigma, matches, wins, draws, updated_at) "
                "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) "
                "ON CONFLICT (model, game, mode, player_id) DO UPDATE SET mu = $5, sigma = $6, matches = $7, "
                "wins = scoring_ratings.wins + $8, draws = scoring_ratings.draws + $9, updated_at = $10",
                event.model,
                event.game,
                int(event.mode),
                seat.player_id,
                seat.after.mu,
                seat.after.sigma,
                seat.matches,
                int(won),
                int(winner is None),
                at,
            )
            await c.execute(
                "INSERT INTO scoring_rating_matches (model, game, mode, player_id, number, game_id, table_id, at, "
                "seat, team, result, team_scores, players, before_mu, before_sigma, after_mu, after_sigma) "
                "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)",
                event.model,
                event.game,
                int(event.mode),
                seat.player_id,
                number,
                event.game_id,
                event.table_id,
                at,
                seat.seat,
                team,
                outcome,
                list(event.team_scores),
                players,
                seat.before.mu,
                seat.before.sigma,
                seat.after.mu,
                seat.after.sigma,
            )


def rater(lobby: EventStore, pool: Any, tournaments: EventStore) -> Consumer:
    """The consumer of the LOBBY stream that rates every rated match (checkpoint in ``scoring_checkpoints``)."""
    return Consumer(lobby, PostgresTracking(pool, CHECKPOINTS), Rater(tournaments), wake=finishes_or_opens)
