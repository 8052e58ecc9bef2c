"""When the engine must act on a game by itself: the deadline index of the turn timers.

A game's deadline is the earliest of: its running turn's end (the last event's recorded time plus the game's turn
seconds, while a seat's turn runs), at once when the game waits for the engine to deal again (a void first 拖拉机
deal, D-TR-6.6), when a timed round must be told the time (D-TR-9), and when a fair deal's contribution window
closes (`paiju.rules.fair`). It depends only on the game's log, so it changes only when the game does: the engine
sets it each time a game it follows moves (`Games`), and a scan of the timers takes the games whose deadline has
passed from a heap — a scan costs O(expired games), not O(games).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

from paiju.platform.repository import seconds_of


def due_of(game: Any, window: float = 0.0) -> float | None:
    """The engine time (seconds since the epoch) at which ``game`` next needs the engine; ``None``: never, unless
    someone acts on it first (an untimed game between moves, an ended game). ``window``: how long a fair deal waits
    for the seats' contributions (`paiju.rules.fair`)."""
    state = game.state
    recorded = game.last_recorded
    if state.phase.value == "ended" or recorded is None:
        return None
    rules = game.rules.game
    last = seconds_of(recorded)
    dues: list[float] = []
    if rules.deal_again(state, 0) is not None:
        dues.append(last)
    step = rules.fair_step(state)
    if step is not None:
        dues.append(last + window if step.waits else last)
    seconds = state.options.turn_seconds
    if seconds > 0 and rules.waiting(state):
        dues.append(last + seconds)
    told = rules.time_due(state)
    if told is not None:
        dues.append(float(told))
    return min(dues) if dues else None


class Deadlines:
    """Each game's deadline, and a heap of them (an entry whose game has moved on since is skipped when popped)."""

    def __init__(self) -> None:
        self._due: dict[str, float] = {}
        self._heap: list[tuple[float, str]] = []

    def __len__(self) -> int:
        return len(self._due)

    def set(self, game_id: str, due: float | None) -> None:
        """The game's deadline is now ``due`` (``None``: it has none)."""
        if due is None:
            self._due.pop(game_id, None)
            return
        if self._due.get(game_id) == due:
            return
        self._due[game_id] = due
        heapq.heappush(self._heap, (due, game_id))
        if len(self._heap) > 2 * len(self._due) + 64:  # mostly stale entries: rebuild from the current deadlines
            self._heap = [(d, g) for g, d in self._due.items()]
            heapq.heapify(self._heap)

    def keep(self, wanted: Callable[[str], bool]) -> None:
        """Forget the deadlines of the games ``wanted`` says no to (a partition this replica no longer owns)."""
        self._due = {g: d for g, d in self._due.items() if wanted(g)}
        self._heap = [(d, g) for g, d in self._due.items()]
        heapq.heapify(self._heap)

    def expired(self, now: float) -> list[str]:
        """The games whose deadline is at or before ``now``, earliest first, taken out of the index (the timers set
        each one again from the game as they leave it)."""
        games = []
        while self._heap and self._heap[0][0] <= now:
            due, game_id = heapq.heappop(self._heap)
            if self._due.get(game_id) == due:
                del self._due[game_id]
                games.append(game_id)
        return games
