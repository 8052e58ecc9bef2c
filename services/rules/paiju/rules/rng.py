"""A small seeded random source with a fixed algorithm (SplitMix64).

The rules core never reads an unseeded random source: seeds arrive in commands and are recorded in
events. This generator is specified here rather than borrowed from `random`, so that a seed gives
the same shuffle on every Python version and machine: a deal seed is a reproducible fact.
"""

from __future__ import annotations

from collections.abc import MutableSequence
from typing import TypeVar

T = TypeVar("T")

_MASK = (1 << 64) - 1


class SeededRandom:
    """SplitMix64 (Steele, Lea, Flood 2014) with unbiased bounded draws."""

    __slots__ = ("_state",)

    def __init__(self, seed: int) -> None:
        self._state = seed & _MASK

    def next64(self) -> int:
        self._state = (self._state + 0x9E3779B97F4A7C15) & _MASK
        z = self._state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        """A uniform integer in ``0..n-1`` (rejection sampling, no modulo bias)."""
        if n <= 0:
            raise ValueError("below() needs a positive bound")
        limit = (1 << 64) - ((1 << 64) % n)
        while True:
            x = self.next64()
            if x < limit:
                return x % n

    def choice(self, seq: tuple[T, ...] | list[T]) -> T:
        return seq[self.below(len(seq))]

    def shuffle(self, items: MutableSequence[T]) -> None:
        """Fisher-Yates, in place."""
        for i in range(len(items) - 1, 0, -1):
            j = self.below(i + 1)
            items[i], items[j] = items[j], items[i]

    def fork(self, label: int) -> SeededRandom:
        """An independent stream derived from this one and a label (for a sub-decision)."""
        return SeededRandom(self.next64() ^ ((label * 0xD1B54A32D192ED03) & _MASK))
