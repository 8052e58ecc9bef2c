"""`Revocations` before and after it follows the lobby's stream: an engine starts before the lobby makes its stream
and follows it once it is there, so until then each token's account is read from the stream and nothing is kept (a
revocation recorded before the feed began is never missed); once following, the feed keeps each account current."""

from __future__ import annotations

import asyncio

from paiju.platform.store import Position
from paiju.platform.store.memory import MemoryEventStore
from paiju.platform.tokens import Revocations
from paiju.v1 import lobby_events_pb2

ACCOUNT = "account-ann"


async def revoke(store: MemoryEventStore, position: Position, generation: int) -> Position:
    event = lobby_events_pb2.LobbyEvent(
        sessions_revoked=lobby_events_pb2.LobbySessionsRevoked(player_id=ACCOUNT, generation=generation)
    )
    envelope = lobby_events_pb2.LobbyEnvelope(aggregate=ACCOUNT, version=position.version + 1, event=event)
    recorded = await store.append(ACCOUNT, position, f"revoke-{generation}", [envelope.SerializeToString()])
    return recorded[-1].position


def test_before_following_nothing_is_kept_and_after_it_the_feed_keeps_each_account_current() -> None:
    async def body() -> None:
        store = MemoryEventStore()
        revocations = Revocations(store)
        assert await revocations.generation(ACCOUNT) == 0
        position = await revoke(store, Position(), 1)  # not heard: nothing follows yet
        assert await revocations.generation(ACCOUNT) == 1  # read again, not the 0 read before
        await revocations.follow()
        assert await revocations.generation(ACCOUNT) == 1
        await revoke(store, position, 2)  # heard through the feed (delivered as the loop turns)
        await asyncio.sleep(0)
        assert await revocations.generation(ACCOUNT) == 2

    asyncio.run(body())
