"""`legacy_digest_of`: a command stored with the digest of its ``repr`` (before `digest_of`) is still recognised
after a field is added to its class, as long as the field is marked `AFTER_LEGACY_DIGEST` and left at its default."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from enum import Enum

from paiju.platform.repository import AFTER_LEGACY_DIGEST, legacy_digest_of, legacy_repr


class Colour(Enum):
    RED = "red"


@dataclass(frozen=True, slots=True)
class Inner:
    n: int
    colour: Colour = Colour.RED


@dataclass(frozen=True, slots=True)
class Before:
    by: str
    seat: int | None = None
    inner: Inner | None = None
    seats: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class After:
    by: str
    seat: int | None = None
    inner: Inner | None = None
    seats: tuple[int, ...] = ()
    strength: str = field(default="", metadata=AFTER_LEGACY_DIGEST)


def test_without_marked_fields_it_is_the_repr() -> None:
    for value in (Before("a"), Before("a", 3, Inner(2), (1, 2)), Inner(5), "text", 7, None, (Inner(1),)):
        assert legacy_repr(value) == repr(value)


def test_a_field_added_since_is_left_out_at_its_default() -> None:
    stored_repr = repr(Before("a", 3, Inner(2), (1,))).replace("Before(", "After(", 1)  # as stored, before the field
    after = After("a", 3, Inner(2), (1,))
    assert legacy_repr(after) == stored_repr
    assert legacy_digest_of(after) == hashlib.sha256(stored_repr.encode()).digest()
    chosen = After("a", strength="basic")
    assert legacy_repr(chosen) == repr(chosen)  # a value of its own: shown, as any repr would
