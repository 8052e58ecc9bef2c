"""The games that may still need the engine: created, and not seen ended.

An engine that starts reads these games, never the whole history: a game that ended long ago costs nothing at
start, so start-up takes the same time with 100,000 ended games in the stream as with none. A game is added before
its first event is stored (a game whose creation then fails is found ended or missing at the next start and
dropped), and removed when an engine sees it end. `LiveGames` is where the set is kept (`KeyValueLiveGames` in
production, `MemoryLiveGames` in tests); `LiveSet` is how `Games` uses it.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Protocol

import structlog

from paiju.platform.nats import key_value, once_led
from paiju.platform.repository import CACHED_AGGREGATES, Recent
from paiju.platform.retry import report
from paiju.platform.store import EventStore

if TYPE_CHECKING:
    from paiju.engine.games import Game

log = structlog.get_logger("paiju.engine.live")

COMPLETE = "_complete"
"""The key written once the bucket holds every game of the stream (a game id never starts with ``_``)."""
MARKER_SECONDS = 60.0
"""How long the key-value bucket keeps the marker of a removed game (then nothing is left of it)."""


class LiveGames(Protocol):
    async def add(self, game_id: str) -> None: ...

    async def discard(self, game_id: str) -> None: ...

    async def members(self) -> list[str]: ...


class MemoryLiveGames:
    """The live games in this process's memory (tests: share one among the engines over one store)."""

    def __init__(self) -> None:
        self._games: set[str] = set()

    async def add(self, game_id: str) -> None:
        self._games.add(game_id)

    async def discard(self, game_id: str) -> None:
        self._games.discard(game_id)

    async def members(self) -> list[str]:
        return sorted(self._games)


class KeyValueLiveGames:
    """The live games as the keys of a NATS key-value bucket, one per GAMES stream (``paiju-live-<stream>``). A
    removed game is purged with a marker that expires after `MARKER_SECONDS`, so the bucket holds the live games
    only, however many games ended."""

    def __init__(self, kv: Any) -> None:
        self._kv = kv

    @classmethod
    async def open(cls, client: Any, store: EventStore, stream: str, *, replicas: int = 1) -> KeyValueLiveGames:
        """The stream's bucket, created when missing. Until it is marked complete (`COMPLETE`), every game the
        stream holds is added to it first — the one time an engine reads the whole history, the first start of an
        engine that keeps this bucket; an engine that dies while filling it, or another starting meanwhile, fills
        it again (adding a game twice is adding it once)."""
        from nats.js.api import KeyValueConfig
        from nats.js.errors import KeyNotFoundError

        config = KeyValueConfig(
            bucket=f"paiju-live-{stream}", history=1, replicas=replicas, limit_marker_ttl=MARKER_SECONDS
        )
        live = cls(await once_led(lambda: key_value(client, config)))

        async def fill() -> None:
            try:
                await live._kv.get(COMPLETE)
            except KeyNotFoundError:
                for game_id in await store.aggregates():
                    await live.add(game_id)
                await live._kv.put(COMPLETE, b"")

        await once_led(fill)
        return live

    async def add(self, game_id: str) -> None:
        await self._kv.put(game_id, b"")

    async def discard(self, game_id: str) -> None:
        await self._kv.purge(game_id, msg_ttl=MARKER_SECONDS)

    async def members(self) -> list[str]:
        from nats.js.errors import NoKeysError

        try:
            return sorted(key for key in await self._kv.keys() if key != COMPLETE)
        except NoKeysError:
            return []


class LiveSet:
    """The live games as the engine uses them (``live``; ``None``: no set is kept, and every game of ``store`` is
    taken as live): a game is added before its first event is stored (`add`), taken off in the background the first
    time this process holds it ended (`moved`), and the set is read at start and when a partition is gained
    (`members`)."""

    def __init__(self, live: LiveGames | None, store: EventStore) -> None:
        self._live = live
        self._store = store
        self._gone: Recent[str, bool] = Recent(CACHED_AGGREGATES)  # ended games this process took off the set
        self._ending: set[asyncio.Task[None]] = set()

    async def add(self, game_id: str) -> None:
        """``game_id`` is about to be created: listed before its first event, so a live game is never missing."""
        if self._live is not None:
            await self._live.add(game_id)

    def moved(self, game: Game) -> None:
        """This process now holds ``game`` as it stands: an ended game is taken off the set, once, in the background
        (a failure leaves it listed: the next start reads it once, sees it ended, drops it)."""
        if game.state.phase.value != "ended" or game.game_id in self._gone:
            return
        self._gone[game.game_id] = True
        if self._live is not None:
            ending = asyncio.get_running_loop().create_task(self._discard(self._live, game.game_id))
            self._ending.add(ending)
            ending.add_done_callback(self._ending.discard)

    async def members(self) -> list[str]:
        """The games that may still need the engine (the set; without one, every game of the store)."""
        return await self._live.members() if self._live is not None else await self._store.aggregates()

    async def _discard(self, live: LiveGames, game_id: str) -> None:
        try:
            await live.discard(game_id)
        except Exception as e:  # the game stays listed: the next start reads it once, sees it ended, drops it
            report(log, "an ended game could not be taken off the live games", e, game=game_id)
