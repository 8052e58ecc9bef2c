"""Spectators by the table's policy (docs/rules/spectators.md, D-SPEC-1..): who may watch a game as a spectator, and
the game as a delayed spectator sees it.

A game's policy comes with its creation (`CreateGameRequest.spectators`, from the lobby's `MatchStarted`) and is
stored on its first event (`Envelope.spectators`); a game created before policies existed has none there and is
public, live. It binds spectator tokens only (`Role.SPECTATOR`): a seat's player, referees, the services, analysts
and admins see the game as ever, and once the game has ended its whole record is public (Replay, docs/api.md).

- A closed table's running game refuses a spectator's Watch, GetView, GetLegalActions and Replay
  (SPECTATORS_NOT_ALLOWED, D-SPEC-1).
- A delay of ``n`` moves (D-SPEC-2) shows a spectator the game at version ``v − n`` while it is at ``v``: the events up
  to there, and the turn and view of that version. It is driven by the game's own events, like every watch: when event
  ``v`` is recorded, the delayed watchers wake and are sent event ``v − n``. No timer runs, per watcher or per game,
  and an idle delayed watcher costs what an idle live one does (a waiter on the game's next change).
- The game as the delayed spectators see it (`Spectating.seen`) is one per game, shared by all of them: its state is
  evolved from the game's latest events in memory (a delay is at most 16 moves, and the engine keeps the latest 24),
  and read once from the log when it is not there. Its events and turns are encoded once per version for all the
  delayed watchers of the game (an `Encodings` of their own, whose kept versions follow the delayed game). A delayed
  watch that asked for one message per change (`WatchRequest.batched`) gets the events it is shown at once together.
- The events a delayed watch sends start no earlier than those of the game's creation (`Policy.opening`): a delayed
  spectator sees the table set up at once, then follows ``n`` moves behind.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, NamedTuple

from paiju.engine.dealing import FairDealing
from paiju.engine.games import RECENT, Game, Games, assigned, seat_count
from paiju.engine.watching import SPECTATORS, Change, Encodings, event_bytes
from paiju.platform.errors import Reason, Refused
from paiju.platform.repository import Recent
from paiju.platform.store import Position
from paiju.platform.tokens import Identity, Role
from paiju.v1 import engine_pb2

MOST_DELAYED_MOVES = 16
"""The longest delay, in moves (the contract's bound of `SpectatorPolicy.delay_moves`): within the events a game keeps
in memory (`paiju.engine.games.RECENT`), so a delayed game moves on from memory."""
GAMES_KEPT = 4096
"""The games whose policy, and whose delayed picture, a replica keeps (the least recently asked for are read again)."""


class Policy(NamedTuple):
    """A game's spectator policy as the engine applies it: ``closed`` (no spectators), the delay in moves, and the
    version of the last event of the game's creation (where a delayed watch may start)."""

    closed: bool
    delay: int
    opening: int


PUBLIC = Policy(closed=False, delay=0, opening=0)


def _ended(game: Game) -> bool:
    return bool(game.state.phase.value == "ended")


def policy_of(first: engine_pb2.Envelope, creation: Sequence[engine_pb2.Envelope]) -> Policy:
    """The policy stored on a game's first event; ``creation``: the game's first events (those stored with it among
    them)."""
    if not first.HasField("spectators"):
        return PUBLIC
    stored = first.spectators
    delay = min(max(stored.delay_moves, 0), MOST_DELAYED_MOVES)
    opening = sum(1 for e in creation if e.command_id == first.command_id)
    return Policy(closed=stored.closed, delay=delay, opening=max(opening, 1))


def seen_version(version: int, ended: bool, policy: Policy) -> int:
    """The version a spectator sees of a game at ``version``: ``policy.delay`` moves behind, never before the game's
    creation; all of it once the game has ended."""
    if ended or not policy.delay:
        return version
    return min(version, max(policy.opening, version - policy.delay))


class Spectating:
    """The spectator policies of the games this replica serves and the games as their delayed spectators see them."""

    def __init__(self, games: Games, contribution_seconds: Callable[[], float | FairDealing] = lambda: 0.0) -> None:
        self._games = games
        self._policies: Recent[str, Policy] = Recent(GAMES_KEPT)
        self._seen: Recent[str, Game] = Recent(GAMES_KEPT)
        self.encodings = Encodings(contribution_seconds)
        """The delayed watchers' encodings: each delayed event and turn made once per game for all of them."""
        self.folded = 0
        """Delayed pictures built from the log (not from memory): for tests and benchmarks."""

    # -- the policy -----------------------------------------------------------------------------------------------

    async def policy(self, game: Game) -> Policy:
        """``game``'s policy: from its first event (in memory while the game is short, else read from its log once)."""
        known = self._policies.get(game.game_id)
        if known is not None:
            return known
        if game.first_recent == 1 and game.recent:
            found = policy_of(game.recent[0], game.recent)
        else:
            history = await self._games.history(game.game_id)
            found = policy_of(history.envelopes[0], history.envelopes[:RECENT])
        self._policies[game.game_id] = found
        return found

    async def of(self, who: Identity, game: Game) -> Policy:
        """The policy that binds ``who`` in ``game``: `PUBLIC` for everyone but a spectator, and for everyone once the
        game has ended; `Refused` (SPECTATORS_NOT_ALLOWED) for a spectator of a closed table's running game."""
        if who.role is not Role.SPECTATOR or _ended(game):
            return PUBLIC
        policy = await self.policy(game)
        if policy.closed:
            raise Refused(
                Reason.SPECTATORS_NOT_ALLOWED,
                f"game {game.game_id}'s table admits no spectators: only its players watch it while it runs",
                {"game": game.game_id},
            )
        return policy

    async def seen_by(self, who: Identity, game: Game) -> Game:
        """``game`` as ``who`` may see it now: the delayed picture for a delayed spectator, else the game itself
        (`Refused` for a spectator of a closed table's running game)."""
        policy = await self.of(who, game)
        return game if not policy.delay else await self.seen(game, policy)

    # -- the delayed picture -----------------------------------------------------------------------------------

    @staticmethod
    def target(game: Game, policy: Policy) -> int:
        """The version a delayed spectator sees of ``game`` (`seen_version`)."""
        return seen_version(game.version, _ended(game), policy)

    async def seen(self, game: Game, policy: Policy) -> Game:
        """``game`` as its delayed spectators see it (at `target`): one picture per game shared by all of them, moved on
        from the game's events in memory, or folded from its log when they are not there."""
        target = self.target(game, policy)
        if target == game.version:
            return game
        kept = self._seen.get(game.game_id)
        if kept is not None and kept.version == target:
            return kept  # the picture the game's other delayed watchers woke to
        if kept is not None and game.first_recent <= kept.version + 1 and kept.version <= target:
            picture = self._moved(game, kept, target)
        else:
            picture = await self._folded(game, target)
        self._seen[game.game_id] = picture
        return picture

    @staticmethod
    def _moved(game: Game, kept: Game, target: int) -> Game:
        """The delayed picture at ``target``, from ``kept`` and the game's events in memory."""
        state, seats = kept.state, kept.seats
        for version in range(kept.version + 1, target + 1):
            event = game.event(version)
            if event is None:
                envelope = game.envelope(version)
                assert envelope is not None
                seats = assigned(seats, envelope.seats_assigned, seat_count(game.rules))
            else:
                state = game.rules.evolve(state, event)
        return _picture(game, state, seats, target, envelopes=game.recent, events=game.recent_events)

    async def _folded(self, game: Game, target: int) -> Game:
        """The delayed picture at ``target``, folded from the game's log (a game not watched while it moved on)."""
        self.folded += 1
        history = await self._games.history(game.game_id)
        rules = game.rules
        state, seats = rules.new_state(), tuple[str, ...]()
        for envelope, event in zip(history.envelopes[:target], history.events[:target], strict=True):
            if event is None:
                seats = assigned(seats, envelope.seats_assigned, seat_count(rules))
            else:
                state = rules.evolve(state, event)
        start = max(0, target - RECENT)
        return _picture(
            history.game,
            state,
            seats,
            target,
            envelopes=history.envelopes[start:target],
            events=history.events[start:target],
            first=start + 1,
        )

    # -- the delayed watch ------------------------------------------------------------------------------------------

    async def watch(
        self, game: Game, policy: Policy, request: engine_pb2.WatchRequest, draining: Any
    ) -> AsyncIterator[bytes]:
        """A delayed spectator's Watch stream: every event after ``request.from_version`` up to the delayed version,
        each new one when the game has moved ``policy.delay`` moves past it, the turn of the delayed version with the
        newest event sent (or alone when the watch opens there); the rest at once when the game ends, then why the
        stream ends. Waits, like every watch, for the game's next change: nothing polls."""
        sent = request.from_version
        turned = -1
        encodings = self.encodings
        games = self._games
        # one message per change (WatchRequest.batched; until_turn implies it, and holds nothing back from a spectator)
        change = Change() if request.batched or request.until_turn else None
        while True:
            picture = await self.seen(game, policy)
            newest = picture.version
            if sent + 1 < picture.first_recent and sent < newest:
                history = await games.history(game.game_id, sent)
                for envelope, event in zip(history.envelopes, history.events, strict=True):
                    if sent < envelope.version < picture.first_recent:
                        data = event_bytes(history.game, envelope, event, SPECTATORS)
                        sent = envelope.version
                        if change is None:
                            yield data
                            continue
                        full = change.add(data)
                        if full is not None:
                            yield full
            for version in range(sent + 1, newest + 1):
                data = encodings.event(picture, version, SPECTATORS)
                if change is not None:
                    full = change.add(data)
                    if full is not None:
                        yield full
                    continue
                if version == newest:
                    data += encodings.turn(picture, None, views=request.views)
                    turned = newest
                yield data
            if change is not None and change.count:
                yield change.message(encodings.turn(picture, None, views=request.views))
                turned = newest
            if sent == newest and turned != newest:
                yield encodings.turn(picture, None, views=request.views)
                turned = newest
            sent = max(sent, newest)
            if _ended(game) and newest == game.version:
                yield _end(engine_pb2.WATCH_END_REASON_GAME_ENDED, sent)
                return
            moved = await games.next_change_unless(game.game_id, game.version, draining)
            if moved is None:
                yield _end(engine_pb2.WATCH_END_REASON_DRAINING, sent)
                return
            game = moved


def _end(reason: Any, version: int) -> bytes:
    return engine_pb2.WatchResponse(end=engine_pb2.WatchEnd(reason=reason, version=version)).SerializeToString()


def _picture(
    game: Game,
    state: Any,
    seats: tuple[str, ...],
    target: int,
    *,
    envelopes: Any,
    events: Any,
    first: int | None = None,
) -> Game:
    """A `Game` at ``target``: ``state`` and ``seats`` there, its envelopes up to ``target`` (``envelopes``/``events``
    start at version ``first``, by default the game's oldest in memory), the seat holders up to then."""
    start = game.first_recent if first is None else first
    keep = max(0, target - start + 1)
    recent = tuple(envelopes[:keep])
    return dataclasses.replace(
        game,
        state=state,
        position=Position(version=target),
        recent=recent,
        recent_events=tuple(events[:keep]),
        seats=seats,
        holders=tuple(h for h in game.holders if h[0] <= target),
        recent_bytes=sum(e.ByteSize() for e in recent),
    )


__all__ = ["MOST_DELAYED_MOVES", "PUBLIC", "Policy", "Spectating", "policy_of", "seen_version"]
