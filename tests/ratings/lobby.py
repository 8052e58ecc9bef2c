"""A LOBBY-like stream written by the test, event by event, as the lobby writes it (`LobbyEnvelope`s on a fresh real
JetStream stream), and a fresh TOURNAMENTS-like stream for the rating ledgers: what the rater reads and writes."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from paiju.platform.store import Position
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.v1 import lobby_events_pb2

RANKED = lobby_events_pb2.MATCH_MODE_RANKED
CASUAL = lobby_events_pb2.MATCH_MODE_CASUAL


async def fresh_store(nats_url: str, kind: str) -> JetStreamEventStore:
    stream = kind + uuid.uuid4().hex[:12].upper()
    return await JetStreamEventStore.connect(nats_url, stream=stream, prefix=f"{kind.lower()}.{stream.lower()}")


@dataclass
class Lobby:
    """Writes tables' events to a LOBBY-like store."""

    store: JetStreamEventStore
    positions: dict[str, Position] = field(default_factory=dict)
    matches: dict[str, int] = field(default_factory=dict)
    ms: int = 1_800_000_000_000

    async def _append(self, table: str, event: lobby_events_pb2.LobbyEvent) -> int:
        position = self.positions.get(table, Position())
        self.ms += 1000
        envelope = lobby_events_pb2.LobbyEnvelope(
            aggregate=table, version=position.version + 1, command_id=f"c{position.version + 1}", actor="lobby"
        )
        envelope.recorded_at.FromMilliseconds(self.ms)
        envelope.schema_version = 1
        envelope.event.CopyFrom(event)
        recorded = await self.store.append(table, position, envelope.command_id, [envelope.SerializeToString()])
        self.positions[table] = recorded[-1].position
        return recorded[-1].sequence

    async def open(self, table: str, game: str, mode: int | None) -> None:
        opened = lobby_events_pb2.LobbyTableOpened(table_id=table, name=table, game=game, owner="owner")
        if mode is not None:
            opened.mode = mode  # type: ignore[assignment]
        await self._append(table, lobby_events_pb2.LobbyEvent(table_opened=opened))

    async def seat_bot(self, table: str, seat: int, player_id: str, strength: str) -> None:
        """A bot seated at ``strength`` (empty: as tables seated bots before strengths were chosen)."""
        seated = lobby_events_pb2.LobbyBotSeated(seat=seat, player_id=player_id, strength=strength)
        await self._append(table, lobby_events_pb2.LobbyEvent(bot_seated=seated))

    async def start(self, table: str, game: str, players: Sequence[str], mode: int | None = None) -> str:
        match = self.matches.get(table, 0) + 1
        self.matches[table] = match
        game_id = f"{table}-m{match}"
        started = lobby_events_pb2.LobbyMatchStarted(game_id=game_id, match=match, players=list(players), game=game)
        if mode is not None:
            started.mode = mode  # type: ignore[assignment]
        await self._append(table, lobby_events_pb2.LobbyEvent(match_started=started))
        return game_id

    async def finish_zlj(self, table: str, team_points: tuple[int, int], individual: Sequence[int]) -> int:
        result = lobby_events_pb2.LobbyResult(team_points=list(team_points), individual_points=list(individual))
        finished = lobby_events_pb2.LobbyMatchFinished(game_id=f"{table}-m{self.matches[table]}", result=result)
        return await self._append(table, lobby_events_pb2.LobbyEvent(match_finished=finished))

    async def finish_tractor(self, table: str, levels: tuple[int, int]) -> int:
        result = lobby_events_pb2.LobbyResult(levels=list(levels))
        if levels[0] != levels[1]:
            result.winner_team = 0 if levels[0] > levels[1] else 1
        finished = lobby_events_pb2.LobbyMatchFinished(game_id=f"{table}-m{self.matches[table]}", result=result)
        return await self._append(table, lobby_events_pb2.LobbyEvent(match_finished=finished))

    async def play_zlj(
        self,
        table: str,
        players: Sequence[str],
        team_points: tuple[int, int],
        individual: Sequence[int],
        mode: int | None = None,
    ) -> int:
        await self.start(table, "zlj", players, mode)
        return await self.finish_zlj(table, team_points, individual)

    async def play_tractor(
        self, table: str, players: Sequence[str], levels: tuple[int, int], mode: int | None = None
    ) -> int:
        await self.start(table, "tractor", players, mode)
        return await self.finish_tractor(table, levels)
