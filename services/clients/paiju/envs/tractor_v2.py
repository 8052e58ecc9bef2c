"""`tractor_v2`: the 拖拉机 PettingZoo AEC environment whose actions express every legal play, follows included.

One episode is one deal (the first of a game, bidding included; a void deal is dealt again), as in ``tractor_env``
(`paiju.envs.aec`, ``paiju_tractor_v0``, deprecated: it offers one representative follow, so most follows of a
strategy cannot be expressed there). Here a play is composed a card at a time (`paiju.envs.compose`):

- **Actions** ``Discrete(ACTIONS)``, every index with one fixed meaning:
  ``0 … 53`` add one copy of that card kind (`paiju.rules.cards`: ``rank * 4 + suit``, 52 SJ, 53 BJ) to the play
  being composed; ``END`` (54) play the composed cards as a lead; ``PASS`` (55) pass in bidding or countering;
  ``BID + 6 * suit + (c - 1)`` (56 … 79) bid, or counter, in ``suit`` (S H C D) showing ``c`` of its level cards
  (and, in a first deal, the flipped card, D-TR-6.1).
  Cards come in ascending id, so each legal play has exactly one sequence of steps. The mask
  (``observation["action_mask"]``) holds exactly the cards after which a legal play is still reachable; a follow
  is played once it has the lead's count, a lead on ``END`` or as soon as no card can extend it. The same seat
  acts until its play is made.
- **Observations** from the seat's own view (`GameRules.view`): ``observation`` — the hand, the cards on the table,
  the cards of the deal's finished tricks, the cards composed so far, which card kinds are trumps this deal (54 each),
  the seat, the seat to act, the phase (one-hot), every hand's size and the cards still to compose (a follow);
  ``action_mask``.
- **Rewards** as ``tractor_env``'s: at the deal's end, 1 + the levels the deal is worth for the winning side's seats,
  minus that for the others.

`expressed` turns a rules-core command (a bot's bid or play) into the indices that express it, so any strategy
that returns commands plays here (examples/evaluate_agents.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces

from paiju.envs.aec import CardGameEnv, _phases
from paiju.envs.compose import Composer
from paiju.rules.cards import CARD_KINDS, Card
from paiju.rules.registry import TRACTOR
from paiju.rules.tractor.game import level_rank, trumps
from paiju.rules.tractor.model import SEATS, Counter, MakeBid, Pass, Phase, Play, Trick
from paiju.rules.tractor.order import TRUMP, Trumps

END = CARD_KINDS
"""Play the composed cards as a lead."""
PASS = END + 1
"""Pass in bidding or countering."""
BID = PASS + 1
"""The first bid index: ``BID + 6 * suit + (level cards shown - 1)``."""
ACTIONS = BID + 4 * 6
"""The size of the action space (80)."""

_PHASES: list[Any] = _phases(TRACTOR)
OBSERVATION_SIZE = 5 * CARD_KINDS + 2 * SEATS + len(_PHASES) + SEATS + 1


def bid_index(action: MakeBid | Counter, level_card: int) -> int:
    """The index of a bid or counter: its suit and how many level cards of it it shows."""
    shown = sum(1 for c in action.cards if c == level_card)
    return BID + 6 * int(action.suit) + shown - 1


class TractorV2Env(CardGameEnv):
    """One 拖拉机 deal per episode, every legal play expressible a card at a time (see the module)."""

    metadata: ClassVar[dict[str, Any]] = {**CardGameEnv.metadata, "name": "paiju_tractor_v2"}

    def __init__(self, options: Any = None, render_mode: str | None = None) -> None:
        super().__init__(TRACTOR, options, render_mode)
        self._observation_space = spaces.Dict(
            {
                "observation": spaces.Box(0, 255, (OBSERVATION_SIZE,), dtype=np.int16),
                "action_mask": spaces.Box(0, 1, (ACTIONS,), dtype=np.int8),
            }
        )
        self._action_space = spaces.Discrete(ACTIONS)
        self._composer: Composer | None = None
        self._listed: dict[int, Any] = {}
        self._mask = np.zeros(ACTIONS, dtype=np.int8)
        self._seat = 0
        self._trumps: Trumps | None = None
        """The deal's trumps, once declared."""
        self._played: tuple[int, np.ndarray] = (0, np.zeros(CARD_KINDS, dtype=np.int16))
        """The counts of the cards of the deal's finished tricks: (tricks counted, counts)."""

    # -- PettingZoo's interface -----------------------------------------------------------------------------------

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        self._played = (0, np.zeros(CARD_KINDS, dtype=np.int16))
        self._trumps = None
        super().reset(seed, options)

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        seat = int(agent.removeprefix("seat_"))
        acting = agent == self.agent_selection and not self.terminations.get(agent, False)
        mask = self._mask.copy() if acting else np.zeros(ACTIONS, dtype=np.int8)
        composer = self._composer if acting else None
        return {"observation": self._vector(seat, composer), "action_mask": mask}

    def step(self, action: int | None) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        if action is None or not 0 <= int(action) < ACTIONS or not self._mask[int(action)]:
            raise ValueError(f"{agent}: action {action} is not legal now (see the mask)")
        index = int(action)
        self._cumulative_rewards[agent] = 0.0
        self._clear_rewards()
        command = self._command(index)
        if command is None:  # a card added to a play still being composed
            self._mask_composer()
            self._accumulate_rewards()
            return
        self._apply(self.rules.decide(self.state, command))
        if self.state.phase is Phase.FLIP:  # a void first deal, dealt again by the engine (D-TR-6.6)
            self._settle_engine_steps()
        if self._deal_over():
            self._score()
            for a in self.agents:
                self.terminations[a] = True
        else:
            self._select()
        self._accumulate_rewards()

    # -- actions ------------------------------------------------------------------------------------------------

    def _command(self, index: int) -> Any:
        """The rules-core command the action completes, or ``None`` while a play is being composed."""
        composer = self._composer
        if composer is None:
            return self._listed[index]
        if index == END:
            return Play(self._seat, tuple(composer.cards))
        composer.add(Card(index))
        if composer.complete():
            return Play(self._seat, tuple(composer.cards))
        if composer.lead is None:
            nexts, ends = composer.options()
            if not nexts and ends:  # nothing can extend the lead: it is played
                return Play(self._seat, tuple(composer.cards))
        return None

    def expressed(self, command: Any) -> list[int]:
        """The action indices that express ``command`` (a bid, a pass or a play of the acting seat) from here."""
        if isinstance(command, Play):
            indexes = [int(c) for c in sorted(command.cards)]
            if self.state.trick is not None:
                return indexes
            lead = Composer(self.state.hands[command.seat], None, trumps(self.state))
            for card in sorted(command.cards):
                lead.add(card)
            nexts, _ = lead.options()
            return [*indexes, END] if nexts else indexes  # a lead nothing can extend is played without END
        for index, listed in self._listed.items():
            if listed == command:
                return [index]
        raise ValueError(f"{command!r} is not among the acting seat's actions")

    def _select(self) -> None:
        waiting = sorted(self.rules.waiting(self.state))
        state = self.state
        for seat in waiting:
            if state.phase is Phase.PLAY:
                self._seat = seat
                if self._trumps is None:
                    self._trumps = trumps(state)  # declared once a deal (D-TR-6)
                lead = state.trick.lead if state.trick else None
                self._composer = Composer(state.hands[seat], lead, self._trumps)
                self._listed = {}
                self._mask_composer()
                break
            legal = self.rules.legal_actions(state, seat)
            if legal:
                self._seat = seat
                self._composer = None
                self._listed = self._list(legal)
                self._mask = np.zeros(ACTIONS, dtype=np.int8)
                self._mask[list(self._listed)] = 1
                break
        else:
            raise RuntimeError(f"no seat can act in the {state.phase.value} phase")
        self.agent_selection = f"seat_{self._seat}"
        for agent in self.agents:
            self.infos[agent] = {}

    def _list(self, legal: Sequence[Any]) -> dict[int, Any]:
        level_card = int(level_rank(self.state)) * 4
        listed: dict[int, Any] = {}
        for action in legal:
            if isinstance(action, Pass):
                index = PASS
            elif isinstance(action, MakeBid | Counter):
                index = bid_index(action, level_card + int(action.suit))
            else:
                raise RuntimeError(f"{action!r}: the {self.state.phase.value} phase is outside one deal's episode")
            if index in listed:
                raise RuntimeError(f"two actions at index {index}: {listed[index]!r}, {action!r}")
            listed[index] = action
        return listed

    def _mask_composer(self) -> None:
        composer = self._composer
        assert composer is not None
        nexts, ends = composer.options()
        mask = np.zeros(ACTIONS, dtype=np.int8)
        mask[nexts] = 1
        if ends:
            mask[END] = 1
        self._mask = mask

    # -- observations -------------------------------------------------------------------------------------------

    def _vector(self, seat: int, composer: Composer | None) -> np.ndarray:
        state = self.state
        tricks = state.tricks
        done, counts = self._played
        if done > len(tricks):  # a void deal dealt again
            done, counts = 0, np.zeros(CARD_KINDS, dtype=np.int16)
        for trick in tricks[done:]:
            for play in trick.plays:
                np.add.at(counts, np.asarray(play, dtype=np.intp), 1)
        self._played = (len(tricks), counts)
        return encode(
            seat,
            phase=state.phase,
            turn=state.turn,
            hand=state.hands[seat],
            hand_sizes=[len(h) for h in state.hands],
            trick=state.trick,
            played=counts,
            deal_trumps=(self._trumps or trumps(state)) if state.trump is not None else None,
            composer=composer,
        )


def encode(
    seat: int,
    *,
    phase: Phase,
    turn: int | None,
    hand: Sequence[int],
    hand_sizes: Sequence[int],
    trick: Trick | None,
    played: np.ndarray,
    deal_trumps: Trumps | None,
    composer: Composer | None,
) -> np.ndarray:
    """The observation vector of a seat (see the module) from what its view holds: its hand, every hand's size, the
    trick on the table, the counts of the cards of the deal's finished tricks (``played``), the trumps once declared,
    and the play it is composing."""
    vector = np.zeros(OBSERVATION_SIZE, dtype=np.int16)
    if hand:
        vector[:CARD_KINDS] = _bincount(hand)
    if trick is not None:
        vector[CARD_KINDS : 2 * CARD_KINDS] = _bincount([c for play in trick.plays for c in play])
    vector[2 * CARD_KINDS : 3 * CARD_KINDS] = played
    if composer is not None and composer.cards:
        vector[3 * CARD_KINDS : 4 * CARD_KINDS] = _bincount(composer.cards)
    if deal_trumps is not None:
        vector[4 * CARD_KINDS : 5 * CARD_KINDS] = _trump_kinds(deal_trumps)
    small = 5 * CARD_KINDS
    vector[small + seat] = 1
    if turn is not None:
        vector[small + SEATS + turn] = 1
    vector[small + 2 * SEATS + _PHASES.index(phase)] = 1
    sizes = small + 2 * SEATS + len(_PHASES)
    vector[sizes : sizes + SEATS] = hand_sizes
    if composer is not None and composer.size is not None:
        vector[-1] = composer.size - len(composer.cards)
    return vector


def _bincount(cards: Sequence[int]) -> np.ndarray:
    """The 54 card-kind counts of ``cards`` (`np.fromiter`: cheaper than converting a tuple)."""
    return np.bincount(np.fromiter(cards, dtype=np.intp, count=len(cards)), minlength=CARD_KINDS)


@lru_cache(maxsize=64)
def _trump_kinds(deal_trumps: Trumps) -> np.ndarray:
    """1 for each card kind that is trump this deal."""
    kinds: np.ndarray = (np.asarray(deal_trumps.suit_class, dtype=np.int16) == TRUMP).astype(np.int16)
    return kinds


def tractor_v2(options: Any = None, render_mode: str | None = None) -> TractorV2Env:
    """One 拖拉机 deal per episode, every legal play expressible a card at a time (`paiju.envs.tractor_v2`)."""
    return TractorV2Env(options, render_mode)
