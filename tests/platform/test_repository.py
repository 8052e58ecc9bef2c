"""What every repository shares (`paiju.platform.repository`): the bounded cache and the command digest."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

import pytest

from paiju.platform.repository import Recent, digest_of, legacy_digest_of


def test_recent_keeps_the_most_recently_stored_entries_only() -> None:
    recent: Recent[str, int] = Recent(2)
    recent["a"] = 1
    recent["b"] = 2
    recent["a"] = 3  # stored again: now the most recent
    recent["c"] = 4
    assert sorted(recent) == ["a", "c"] and recent.get("a") == 3 and recent.get("b") is None
    del recent["a"]
    assert len(recent) == 1 and "c" in recent
    recent.clear()
    assert len(recent) == 0


class Colour(Enum):
    RED = "red"
    BLUE = "blue"


@dataclass(frozen=True)
class Before:
    seat: int
    colour: Colour
    cards: tuple[int, ...] = ()


def test_a_digest_does_not_change_when_a_field_with_a_default_is_added() -> None:
    @dataclass(frozen=True)
    class Before:  # the same command, a release later, with a new optional field
        seat: int
        colour: Colour
        cards: tuple[int, ...] = ()
        note: str = ""
        extra: tuple[int, ...] = field(default_factory=tuple)

    old = globals()["Before"](3, Colour.RED, (1, 2))
    assert digest_of(Before(3, Colour.RED, (1, 2))) == digest_of(old)
    assert legacy_digest_of(Before(3, Colour.RED, (1, 2))) != legacy_digest_of(old)  # what repr did
    assert digest_of(Before(3, Colour.RED, (1, 2), note="x")) != digest_of(old)


def test_a_digest_tells_commands_apart() -> None:
    base = digest_of(Before(3, Colour.RED, (1, 2)))
    assert len({base, digest_of(Before(4, Colour.RED, (1, 2))), digest_of(Before(3, Colour.BLUE, (1, 2)))}) == 3
    assert digest_of(Before(3, Colour.RED, (2, 1))) != base
    with pytest.raises(TypeError):
        digest_of(Before(3, Colour.RED, (object(),)))  # type: ignore[arg-type]
