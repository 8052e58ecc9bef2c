"""The spectator policy's pure parts (docs/rules/spectators.md): the lobby's defaults and bounds (D-SPEC-3, D-SPEC-2),
the policy through the lobby's events and the engine's CreateGame request, old events without it read as public,
and the version a delayed spectator sees (D-SPEC-2: moves behind, never before the game's creation, everything once
the game has ended)."""

from __future__ import annotations

import pytest

from paiju.contract.matches import create_request
from paiju.engine.spectating import MOST_DELAYED_MOVES, PUBLIC, Policy, policy_of, seen_version
from paiju.lobby.contract import LOBBY_EVENTS
from paiju.lobby.table import (
    DELAYED_MOVES,
    LobbyError,
    MatchStarted,
    Mode,
    OpenTable,
    Spectators,
    Table,
    TableOpened,
    decide,
    spectators_of,
)
from paiju.v1 import engine_pb2, lobby_events_pb2

pytestmark = pytest.mark.unit


def test_ranked_and_tournament_tables_are_delayed_by_default_and_a_choice_is_kept() -> None:
    delayed = Spectators(delay_moves=DELAYED_MOVES)
    assert spectators_of(False, Mode.RANKED, None) == delayed
    assert spectators_of(True, None, None) == delayed
    assert spectators_of(False, Mode.CASUAL, None) is None
    assert spectators_of(False, None, None) is None
    assert spectators_of(True, None, Spectators()) == Spectators(), "a tournament table may choose to be live"
    assert spectators_of(False, Mode.CASUAL, Spectators(closed=True)) == Spectators(closed=True)


@pytest.mark.parametrize("delay", [-1, 17, 10**9])
def test_a_delay_out_of_bounds_is_refused(delay: int) -> None:
    with pytest.raises(LobbyError) as refused:
        decide(Table(), OpenTable("t1", "T", "zlj", "o", spectators=Spectators(delay_moves=delay)))
    assert refused.value.reason.value == "INVALID_REQUEST"


def test_the_policy_travels_in_the_lobbys_events_and_old_events_read_as_public() -> None:
    opened = decide(Table(), OpenTable("t1", "T", "zlj", "o", mode=Mode.RANKED))[0]
    assert opened.spectators == Spectators(delay_moves=DELAYED_MOVES)
    encoded = LOBBY_EVENTS.encode(opened)
    assert LOBBY_EVENTS.decode(encoded) == opened
    old = lobby_events_pb2.LobbyEvent()
    old.table_opened.CopyFrom(lobby_events_pb2.LobbyTableOpened(table_id="t0", name="Old", game="zlj", owner="o"))
    before: TableOpened = LOBBY_EVENTS.decode(old)
    assert before.spectators is None
    started = MatchStarted("t1-m1", 1, ("a",) * 6, "zlj", None, None, spectators=Spectators(closed=True))
    message = LOBBY_EVENTS.encode(started)
    request = create_request(message.match_started)  # type: ignore[attr-defined]
    assert request.spectators.closed
    plain = create_request(lobby_events_pb2.LobbyMatchStarted(game_id="g", game="zlj", players=["a"] * 6))
    assert not plain.HasField("spectators"), "a start from before policies asks for the game it always did"


def _envelopes(count: int, created: int, delay: int | None, closed: bool = False) -> list[engine_pb2.Envelope]:
    out = []
    for version in range(1, count + 1):
        envelope = engine_pb2.Envelope(version=version, command_id="create:g" if version <= created else f"c{version}")
        out.append(envelope)
    if delay is not None:
        out[0].spectators.delay_moves = delay
        out[0].spectators.closed = closed
    return out


def test_the_policy_is_read_from_the_games_first_event() -> None:
    assert policy_of(_envelopes(5, 3, None)[0], _envelopes(5, 3, None)) == PUBLIC
    stored = _envelopes(9, 3, 4)
    assert policy_of(stored[0], stored) == Policy(closed=False, delay=4, opening=3)
    closed = _envelopes(2, 2, 0, closed=True)
    assert policy_of(closed[0], closed).closed
    huge = _envelopes(2, 1, 1000)
    assert policy_of(huge[0], huge).delay == MOST_DELAYED_MOVES, "a stored delay is held to the contract's bound"


def test_a_delayed_spectator_sees_the_game_moves_behind_from_its_creation_on() -> None:
    policy = Policy(closed=False, delay=4, opening=3)
    assert [seen_version(v, False, policy) for v in range(3, 10)] == [3, 3, 3, 3, 3, 4, 5]
    assert seen_version(40, True, policy) == 40, "everything once the game has ended"
    assert seen_version(40, False, PUBLIC) == 40
