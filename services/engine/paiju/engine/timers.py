"""Turn timers: an expired turn is played by the engine's default action, recorded as a timeout event.
The same scan deals a void first 拖拉机 deal again (D-TR-6.6), which waits for no seat, and tells timed
拖拉机 rounds the time (D-TR-9).

A turn starts when the game's last event was recorded, so any engine replica can tell from the log alone
which turns have expired — also when the process that served the last action has died. The timeout of a
turn has a command id made of the game, its version and the seat, so replicas that expire the same turn
at once store it once: the first append wins, the others find the command id used.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import structlog

from paiju.engine.games import CommandIdReused, Game, GameNotFound, Games, StaleVersion
from paiju.platform.nats import DISCONNECTED
from paiju.platform.retry import report
from paiju.platform.store import ConcurrencyConflict
from paiju.rules.errors import RuleError

log = structlog.get_logger("paiju.engine.timers")


def waiting_seats(game: Game) -> tuple[int, ...]:
    """The seats whose turn is running (several while 拖拉机 bids are concealed)."""
    return game.rules.game.waiting(game.state)


def expired(game: Game, now: datetime) -> bool:
    seconds: int = game.state.options.turn_seconds
    recorded = game.last_recorded
    if seconds <= 0 or recorded is None:
        return False
    started = recorded.ToDatetime(tzinfo=UTC)
    return bool((now - started).total_seconds() >= seconds)


async def _deal_again(games: Games, game: Game, command: Any) -> None:
    """A state that waits for nobody's choice but for a new deal (a void first 拖拉机 deal, D-TR-6.6): the engine
    deals again at once."""
    try:
        await games.act(
            game.game_id, command, f"redeal:{game.game_id}:{game.version}", "engine", expected_version=game.version
        )
    except (CommandIdReused, ConcurrencyConflict, RuleError, StaleVersion):
        return  # another replica dealt again first
    log.info("void first deal dealt again", game=game.game_id, version=game.version)


async def _deal_fairly(games: Games, game: Game, now: datetime) -> bool:
    """A fair game whose next step is the engine's (`paiju.rules.fair`): a deal whose contribution window has
    closed is dealt (with whatever contributions came); a step due at once (a game stored by an engine that does not
    deal fairly, or a replica that went away between two appends) is taken; so are a version-2 shuffle's closes of
    its commitments and reveals, and its first commitment when no seat's client watched in time. Whether the game had
    such a step."""
    step = game.rules.game.fair_step(game.state) if games.dealing.takes_steps else None
    if step is None:
        return False
    recorded = game.last_recorded
    if step.waits and recorded is not None:
        wait = games.dealing.wait(game.state, step)
        last = recorded.ToDatetime(tzinfo=UTC)
        if wait is None or (now - last).total_seconds() < wait:
            return True
    try:
        await games.act(
            game.game_id,
            games.dealing.command(game.game_id, game.state, step),
            f"fair:{game.game_id}:{game.version}",
            "engine",
            expected_version=game.version,
        )
    except RuleError as e:
        log.error(
            "a fair deal step was refused: its seed does not match the commitment; did the seed secret change? "
            "(PAIJU_PREVIOUS_SEED_SECRET_FILE gives the engine the old one)",
            game=game.game_id,
            step=step.kind,
            shuffle=step.number,
            reason=e.reason,
        )
        return True
    except (CommandIdReused, ConcurrencyConflict, StaleVersion):
        return True  # another replica took the step first, or a seat acted meanwhile
    log.info("fair deal step taken", game=game.game_id, step=step.kind, shuffle=step.number, version=game.version)
    return True


async def _tick(games: Games, game: Game, command: Any) -> Game:
    """A game that keeps time (a timed 拖拉机 round, D-TR-9): tell it the engine's time, so it announces the two last
    deals when 25 minutes are left (the rules decide; nothing is stored before then)."""
    try:
        after, stored = await games.act(
            game.game_id, command, f"clock:{game.game_id}:{game.version}", "engine", expected_version=game.version
        )
    except (CommandIdReused, ConcurrencyConflict, RuleError, StaleVersion):
        return game
    if stored:
        log.info("two more deals announced", game=game.game_id, version=after.version)
    return after


async def expire_turns(
    games: Games, now: datetime, seeds: Callable[[str, int], int] = lambda game_id, version: 0
) -> list[tuple[str, int]]:
    """Play the default action of every expired turn of every game; returns the (game, seat) timed out. Only the
    games whose deadline has passed are read (`Games.due`). A game that fails is reported and looked at again at
    the next scan, while the others go on; but NATS away (`paiju.platform.nats.DISCONNECTED`) fails every game at
    once, so the scan stops at the first, keeps the deadlines of all that were due, and raises (`run_timers` waits
    before the next): not a warning per game and per second for the whole outage."""
    done: list[tuple[str, int]] = []
    due = await games.due(now.timestamp())
    for at, game_id in enumerate(due):
        try:
            game = await games.load(game_id)
            done += await _expire(games, game, now, seeds)
        except GameNotFound:
            continue
        except DISCONNECTED:
            for kept in due[at:]:
                games.reschedule(kept)
            raise
        except Exception as e:  # this game only: the others of the scan go on, and it is looked at again
            report(log, "a turn timer failed; the game is looked at again at the next scan", e, game=game_id)
        games.reschedule(game_id)  # its next deadline, from where it is now
    return done


async def _expire(games: Games, game: Game, now: datetime, seeds: Callable[[str, int], int]) -> list[tuple[str, int]]:
    game_id = game.game_id
    done: list[tuple[str, int]] = []
    rules = game.rules.game
    if await _deal_fairly(games, game, now):
        return done
    again = rules.deal_again(game.state, seeds(game_id, game.version))
    if again is not None:
        await _deal_again(games, game, again)
        return done
    tick = rules.tell_time(game.state, int(now.timestamp()))
    if tick is not None:
        game = await _tick(games, game, tick)
    if not expired(game, now):
        return done
    version = game.version
    for seat in waiting_seats(game):
        timeout = game.rules.game.timeout(seat, seeds(game_id, version))
        command_id = f"timeout:{game_id}:{version}:{seat}"
        try:
            # only at the version whose turn expired (or right after the timeouts of this scan): a game that
            # moved on otherwise has a new turn and a new timer
            after, _ = await games.act(game_id, timeout, command_id, "engine", expected_version=version)
        except (CommandIdReused, ConcurrencyConflict, RuleError, StaleVersion):
            continue  # another replica expired it first, or the seat acted meanwhile
        version = after.version
        log.info("turn timed out", game=game_id, seat=seat, version=version)
        done.append((game_id, seat))
    return done
