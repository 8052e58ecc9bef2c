"""`make bench`, engine start-up: does an engine start as fast over a long history as over none?

An engine starts by reading the games that may still need it (the live set, `paiju.engine.live`), not every game
ever stored. Over one embedded nats-server: a GAMES stream with no game, then one holding ``STORED`` games that
no longer need the engine (one stored event each, none of them live, as after they ended), and the time from
connecting to the first act answered — the store connected, the live set opened, the games following the feed,
its share of the partitions taken, the first turn-timer scan, a new game created and its first move acted. Also
how long listing every game of the stream takes, and one start that reads every game as engines did before the
live set. One JSON line per case; medians of ``ROUNDS`` starts.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import nats
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from paiju.dev.stack import embedded_nats
from paiju.engine.bootstrap import build, own_partitions
from paiju.engine.live import KeyValueLiveGames
from paiju.engine.timers import expire_turns
from paiju.platform.partitions import PARTITIONS, partition_of
from paiju.platform.store import MemoryEventStore
from paiju.platform.store.jetstream import JetStreamEventStore
from paiju.platform.store.messages import COMMAND, VERSION
from paiju.platform.tokens import Issuer, Signer, Trust
from paiju.rules import registry
from paiju.rules.zlj import Options, StartMatch

STORED = 100_000
ROUNDS = 3
TRUST = Trust({f"{Issuer.LOBBY.value}.1": Ed25519PrivateKey.generate().public_key()})
SIGNER = Signer(Ed25519PrivateKey.generate(), f"{Issuer.LOBBY.value}.1")


async def _one_event() -> bytes:
    """The first stored event of a 砸六家 game (its start), as the engine writes it."""
    from paiju.engine.games import Games

    games = Games(MemoryEventStore())
    await games.create("g", registry.ZLJ.name, StartMatch(1, Options(deals=1)), "start", "lobby")
    return (await games.store.load("g"))[0].data


async def _fill(url: str, stream: str, count: int) -> None:
    store = await JetStreamEventStore.connect(url, stream=stream, prefix=f"s.{stream.lower()}", partitions=PARTITIONS)
    await KeyValueLiveGames.open(store.client, store, stream)  # the bucket of a running deployment: games not live
    await store.close()
    data = await _one_event()
    client = await nats.connect(url)
    js = client.jetstream()
    for n in range(count):
        headers = {"Nats-Msg-Id": f"old{n}:start:1", VERSION: "1", COMMAND: "start"}
        subject = f"s.{stream.lower()}.{partition_of(f'old{n}', PARTITIONS)}.old{n}"
        await js.publish_async(subject, data, headers=headers)
    await js.publish_async_completed()
    await client.close()


async def _start(url: str, stream: str, *, with_live_set: bool = True) -> float:
    """Seconds from connecting to the first act answered (``with_live_set=False``: as an engine started before the
    live set, reading every game of the stream)."""
    started = time.perf_counter()
    store = await JetStreamEventStore.connect(url, stream=stream, prefix=f"s.{stream.lower()}", partitions=PARTITIONS)
    try:
        live = await KeyValueLiveGames.open(store.client, store, stream) if with_live_set else None
        games, _ = await build(store, TRUST, live=live, owned=frozenset(), seed_secret=b"startup-bench-seeds" * 2)
        stopping = asyncio.Event()
        _, owning = await own_partitions(games, store.client, stream, stopping)  # its share of the games
        await expire_turns(games, datetime.now(UTC))
        game_id = f"new{uuid.uuid4().hex[:8]}"
        game = await games.create(game_id, registry.ZLJ.name, StartMatch(7, Options(deals=1)), "start", "lobby")
        action = registry.ZLJ.legal_actions(game.state, game.state.turn)[0]
        await games.act(game_id, action, "first", "p")
        took = time.perf_counter() - started
        stopping.set()
        if owning is not None:
            await owning
        return took
    finally:
        await store.close()


async def _listing(url: str, stream: str) -> tuple[float, int]:
    store = await JetStreamEventStore.connect(url, stream=stream, prefix=f"s.{stream.lower()}", partitions=PARTITIONS)
    try:
        started = time.perf_counter()
        listed = await store.aggregates()
        return time.perf_counter() - started, len(listed)
    finally:
        await store.close()


def main() -> None:
    stored = int(sys.argv[1]) if len(sys.argv) > 1 else STORED
    print(f"Engine start-up: connecting to the first act answered, medians of {ROUNDS} starts")
    with tempfile.TemporaryDirectory() as folder, embedded_nats(Path(folder) / "nats") as url:
        figures = {}
        for count in (0, stored):
            stream = f"START{count}"
            asyncio.run(_fill(url, stream, count))
            seconds = statistics.median(asyncio.run(_start(url, stream)) for _ in range(ROUNDS))
            listing, listed = asyncio.run(_listing(url, stream))
            figures[count] = seconds
            line = {
                "stored_games": count,
                "first_act_seconds": round(seconds, 3),
                "listing_every_game_seconds": round(listing, 3),
                "listed": listed,
            }
            print(json.dumps(line))
        every = asyncio.run(_start(url, f"START{stored}", with_live_set=False))  # one start: it is long
        print(json.dumps({"stored_games": stored, "reading_every_game": True, "first_act_seconds": round(every, 3)}))
        print(json.dumps({"start_with_history_over_without": round(figures[stored] / figures[0], 2)}))


if __name__ == "__main__":
    main()
