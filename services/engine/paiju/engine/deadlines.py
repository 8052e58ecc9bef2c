"""When the engine must act on a game by itself: the deadline index of the turn timers.

A game's deadline is the earliest of: its running turn's end (the last event's recorded time plus the game's turn
seconds, while a seat's turn runs), at once when the game waits for the engine to deal again (a void first 拖拉机
deal, D-TR-6.6), when a timed round must be told the time (D-TR-9), and when a fair deal's window closes
(`paiju.rules.fair`: a version-1 deal's contributions; a version-2 shuffle's commitments, its reveals, the cutter's
turn to commit, or its first shuffle's time to wait for a watcher). It depends only on the game's log, so it changes
only when the game does: the engine sets it each time its memory of a game it owns moves (`Schedule`, which `Games`
tells), and a scan of the timers takes the games whose deadline has passed from a heap (`Deadlines`) — a scan costs
O(expired games), not O(games).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from paiju.engine.dealing import FairDealing
from paiju.platform.repository import seconds_of

if TYPE_CHECKING:
    from paiju.engine.games import Game


def due_of(game: Any, window: float | FairDealing = 0.0) -> float | None:
    """The engine time (seconds since the epoch) at which ``game`` next needs the engine; ``None``: never, unless
    someone acts on it first (an untimed game between moves, an ended game). ``window``: how long a fair deal's
    window waits (`paiju.rules.fair`): the engine's `FairDealing` (each window its own time: the seats' commitments
    and reveals, a cutter's turn, a first shuffle waiting for a watcher), or one time for every window."""
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
        wait = (window.wait(state, step) if isinstance(window, FairDealing) else window) if step.waits else 0.0
        if wait is not None:
            dues.append(last + wait)
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


class Schedule:
    """The deadlines of the games this replica owns (``owns``), as its turn timers read them: each game's deadline in
    the index (`Deadlines`), set from the game each time this replica's memory of it moves, and the games whose
    deadline is not known yet — live when the replica started or gained their partition, moved while not in its
    memory, or caught between two events of one command — which the next scan reads once (a new owner rebuilds the
    index from the log). ``dealing``: how long a fair deal waits for contributions (a deadline of its own)."""

    def __init__(self, owns: Callable[[str], bool], dealing: FairDealing) -> None:
        self._owns = owns
        self._dealing = dealing
        self.index = Deadlines()
        self._unknown: set[str] = set()

    def __len__(self) -> int:
        """How many games have a known deadline."""
        return len(self.index)

    def expired(self, now: float) -> list[str]:
        """The games whose known deadline is at or before ``now``, taken out of the index (`Deadlines.expired`)."""
        return self.index.expired(now)

    def moved(self, game: Game) -> None:
        """This replica now holds ``game`` as it stands: its deadline is set from it (a game it owns)."""
        if not self._owns(game.game_id):
            return
        try:
            due = due_of(game, self._dealing)
        except Exception:
            # the feed delivers a command's events one by one, and a rules core need not tell who is waiting in a
            # state between two events of one command: the next scan reads the game as stored, whole commands only
            self.index.set(game.game_id, None)
            self._unknown.add(game.game_id)
            return
        self.index.set(game.game_id, due)
        self._unknown.discard(game.game_id)

    def lost(self, game_id: str) -> None:
        """``game_id`` moved while this replica does not hold it as it stands: its deadline is unknown (a game it
        owns) until the next scan reads it."""
        if self._owns(game_id):
            self._unknown.add(game_id)

    def unread(self, game_ids: Iterable[str]) -> None:
        """Games whose deadline nobody here has read yet (the live games, at start or of a partition gained)."""
        self._unknown.update(game_ids)

    def due(self, now: float) -> list[str]:
        """The games whose deadline has passed at ``now`` (seconds), taken out of the index, then those whose deadline
        is not known (that this replica owns), each once: what a scan of the turn timers reads."""
        unknown, self._unknown = self._unknown, set()
        return [*self.index.expired(now), *sorted(g for g in unknown if self._owns(g))]

    def reschedule(self, game_id: str, game: Game | None) -> None:
        """Set a game's deadline again after a scan took it out: from ``game``, as this replica holds it, or unknown
        when it holds none (a game it owns)."""
        if not self._owns(game_id):
            return
        if game is None:
            self._unknown.add(game_id)
        else:
            self.moved(game)  # a deadline the rules cannot tell yet (inside a command) is read at the next scan

    def keep(self) -> None:
        """Forget what concerns the games this replica no longer owns (its share changed)."""
        self._unknown = {g for g in self._unknown if self._owns(g)}
        self.index.keep(self._owns)
