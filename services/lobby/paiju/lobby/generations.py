"""The matchmaking queue's history in generations (docs/operations.md, "The matchmaking queue's history"): what
keeps the lobby's memory and start-up from growing with every matchmaking command ever made.

The queue is one aggregate at a time (D-MM-4), but not the same one for ever. Its first generation is the
aggregate ``queue``; once a generation holds `GENERATION_EVENTS` events, the lobby that appended past that seals
it and the queue goes on in the next (``queue-1``, ``queue-2``...):

1. `QueueSealed` is appended to the full generation (command id ``queue:seal:<n>``). It is appended at the position
   it was decided from, so of lobbies racing to seal one wins; every later command there is refused (`qu.Sealed`)
   and decided again in the successor. A command that won its append before the seal is in the queue the
   successor carries over.
2. `QueueCarried` events begin the successor (`qu.CARRIED_ITEMS` items of each kind an event): the sealed queue's
   entries, offers and recent outcomes, and the ids and digests of its latest `RETRIES_KEPT` commands (with those
   it carried itself). They are the same events whichever lobby writes them (the same sealed queue, the same command
   id ``queue:carry:<n+1>``, appended at the successor's start): of lobbies racing, one appends them and the others
   are answered as its retries.
3. `QueueGenerationBegun` is appended to ``queue-generations``, the one small aggregate a starting lobby reads to
   find the current generation (one event per generation). A lobby that stopped between the steps leaves a sealed
   generation that the pointer still names: the next lobby to read it carries it over and moves the pointer.

A retried command (the same command id) is answered as the first time while its generation is the current one,
or it is among the `RETRIES_KEPT` latest commands carried over. An older retry is decided again on the queue as it
stands, and every queue command does nothing twice: an entry waiting or recently ended (`qu.OUTCOMES_KEPT`) is not
queued again, a withdrawal of an entry gone is refused (NOT_QUEUED), an offer already made is not made again and
one of entries gone or offered is refused, a confirmation of an offer gone is refused, a lapse or a seating of an
offer gone does nothing.
"""

from __future__ import annotations

import hashlib
from typing import Any

import structlog

from paiju.lobby import queue as qu
from paiju.lobby.contract import LOBBY_EVENTS
from paiju.platform.repository import Aggregates, CommandIdReused, Loaded, digest_of, legacy_digest_of
from paiju.platform.settings import Setting

log = structlog.get_logger("paiju.lobby.generations")

GENERATION_EVENTS = Setting(
    "PAIJU_QUEUE_GENERATION_EVENTS",
    10_000,
    "how many events one generation of the matchmaking queue's history holds before the queue goes on in the next "
    "(a starting lobby reads the current generation only); 0: never (for the first roll of an upgrade from a release "
    "without generations, whose lobbies cannot read a sealed queue, see *The matchmaking queue's history*)",
)
RETRIES_KEPT = Setting(
    "PAIJU_QUEUE_RETRIES_KEPT",
    1_000,
    "how many of the latest matchmaking commands a new generation of the queue carries over, so that their retries "
    "are answered as the first time",
)
ROLLOVER_COMMANDS = ("queue:seal:", "queue:carry:")
"""The command ids of the rollover's own steps, which a new generation does not carry over (they are not retried
through `Generations.act`)."""
MOVES = 8
"""How many generations one command follows before it gives up (each move is another lobby's rollover)."""


class Generations:
    """The queue as its current generation: loading it, acting on it, waiting for it to change, and rolling it over
    into the next generation when it is full (the module's steps)."""

    def __init__(
        self,
        queue: Aggregates[qu.Queue],
        *,
        events: int = GENERATION_EVENTS.default,
        retries_kept: int = RETRIES_KEPT.default,
    ) -> None:
        self.queue = queue
        """The queue's aggregates, every generation's."""
        self.pointer: Aggregates[int] = Aggregates(
            queue.store, LOBBY_EVENTS, int, qu.decide_generation, qu.evolve_generation
        )
        """``queue-generations``: which generation is the current one (read, not followed: it moves rarely)."""
        self._events = max(2, events) if events > 0 else 1 << 62
        self._kept = max(0, retries_kept)
        self._current = 0
        self._located = False
        self.rollovers = 0
        """How many generations this lobby sealed."""

    @property
    def current(self) -> str:
        """The aggregate of the current generation, as this lobby knows it."""
        return qu.aggregate_of(self._current)

    async def load(self) -> Loaded[qu.Queue]:
        """The queue: its current generation (following the generations sealed since this lobby last looked)."""
        if not self._located:
            self._current = max(self._current, (await self.pointer.load(qu.GENERATIONS)).state)
            self._located = True
        loaded = await self.queue.load(self.current)
        for _ in range(MOVES):
            if not loaded.state.successor:
                return loaded
            loaded = await self._successor(loaded)
        raise qu.Sealed(loaded.aggregate)

    async def next_change(self, loaded: Loaded[qu.Queue]) -> Loaded[qu.Queue]:
        """The queue once it differs from ``loaded``: a later version of its generation, or the next generation."""
        if loaded.state.successor or loaded.aggregate != self.current:
            return await self.load()
        moved = await self.queue.next_change(loaded.aggregate, loaded.version)
        return await self.load() if moved.state.successor else moved

    async def act(self, command: Any, command_id: str, actor: str) -> Loaded[qu.Queue]:
        """Decide ``command`` on the current generation and append its events; a retried command id is answered
        with the queue and no events (also one carried over from an earlier generation). Rolls the generation over
        when it is full. Raises what `qu.decide` raises, and `CommandIdReused`."""
        for _ in range(MOVES):
            loaded = await self.load()
            known = loaded.state.recent.get(command_id)
            if known is not None:
                if known not in (digest_of(command), legacy_digest_of(command)):
                    raise CommandIdReused(f"command id {command_id!r} was already used for another command")
                return loaded
            try:
                after, _ = await self.queue.act(loaded.aggregate, command, command_id, actor)
            except qu.Sealed:
                continue  # another lobby rolled it over meanwhile: decided again in the successor
            if after.version < self._events or after.state.successor:
                return after
            try:
                return await self.roll_over(after)
            except Exception as e:  # the command is stored; the next command rolls over
                log.warning("the queue could not be rolled over yet", aggregate=after.aggregate, error=str(e))
                return after
        raise qu.Sealed(self.current)

    async def roll_over(self, loaded: Loaded[qu.Queue]) -> Loaded[qu.Queue]:
        """Seal ``loaded``'s generation (unless another lobby did) and go on in the next: the next generation."""
        generation = loaded.state.generation
        sealed, _ = await self.queue.act(loaded.aggregate, qu.Seal(generation), f"queue:seal:{generation}", "lobby")
        if not sealed.state.successor:  # answered as a retry from a snapshot before the seal
            sealed = await self.queue.refresh(loaded.aggregate)
        self.rollovers += 1
        log.info("the queue goes on in a new generation", sealed=loaded.aggregate, events=sealed.version)
        return await self.load() if self.current != loaded.aggregate else await self._successor(sealed)

    async def _successor(self, sealed: Loaded[qu.Queue]) -> Loaded[qu.Queue]:
        """The generation after ``sealed``: carried over here if no lobby did yet, and named by the pointer; it is
        the current one from now on, and the sealed one is forgotten."""
        successor = sealed.state.successor
        generation = sealed.state.generation + 1
        after = await self.queue.load(successor)
        if not after.state.begun:
            carry = qu.Carry(qu.carried(sealed.state, sealed.aggregate, self._retained(sealed)))
            after, _ = await self.queue.act(
                successor,
                carry,
                f"queue:carry:{generation}",
                "lobby",
                digest=hashlib.sha256(f"queue:carry:{successor}".encode()).digest(),
            )
        await self.pointer.act(
            qu.GENERATIONS, qu.BeginGeneration(generation), f"queue:generation:{generation}", "lobby"
        )
        if self._current < generation:
            self._current = generation
            self.queue.forget(sealed.aggregate)
        return after

    def _retained(self, sealed: Loaded[qu.Queue]) -> list[tuple[str, bytes]]:
        """The latest `RETRIES_KEPT` commands of ``sealed`` and of those it carried over, the oldest first."""
        if not self._kept:
            return []
        latest = dict(sealed.state.recent)
        applied = sorted((at, command_id, digest) for command_id, (at, digest) in sealed.commands.items())
        for at, command_id, digest in applied:
            if at < sealed.version and not command_id.startswith(ROLLOVER_COMMANDS):
                latest.pop(command_id, None)
                latest[command_id] = digest
        return list(latest.items())[-self._kept :]
