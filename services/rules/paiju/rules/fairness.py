"""The verifiable shuffle: a deck's order as a function of a server seed and the players' contributions, written so
that anyone can recompute it from the algorithm alone (docs/fairness.md has it in words, with a test vector).

1. The **commitment** to a server seed is ``SHA-256("paiju-seed-commitment-v1" || seed)``.
2. The **shuffle key** is ``HMAC-SHA256(key = seed, message = "paiju-fair-shuffle-v1" || c₁ || c₂ || …)`` where
   each contribution cᵢ is written as its length in 4 bytes (big-endian) followed by its bytes, in the order the
   contributions were recorded.
3. The **stream**: block k (k = 0, 1, 2, …) is ``HMAC-SHA256(key = shuffle key, message = k as 8 bytes big-endian)``;
   the blocks are concatenated and read as 32-bit big-endian unsigned words.
4. A **draw below n** takes the next word x, rejects it while ``x ≥ 2³² − (2³² mod n)``, and answers ``x mod n``.
5. The **shuffle** starts from the decks in their canonical order (`paiju.rules.cards.full_decks`: the card codes
   sorted) and runs Fisher–Yates from the last position down: for i = n−1 … 1, j = draw below i+1, swap i and j.
   The first card of the result is the top of the deck.

Pure: no clock, no I/O, no unseeded randomness (the standard library's HMAC and SHA-256 only).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence

from paiju.rules.cards import Card, full_decks

COMMIT_DOMAIN = b"paiju-seed-commitment-v1"
SHUFFLE_DOMAIN = b"paiju-fair-shuffle-v1"
SEED_BYTES = 32
"""A server seed's length."""
MAX_CONTRIBUTION_BYTES = 64
"""The longest contribution a player may make."""


def commitment(server_seed: bytes) -> bytes:
    """The commitment to ``server_seed`` (published before the deal; the seed itself after it)."""
    return hashlib.sha256(COMMIT_DOMAIN + server_seed).digest()


def shuffle_key(server_seed: bytes, contributions: Sequence[bytes]) -> bytes:
    """The key of the shuffle's stream: the server seed and every contribution, each length-prefixed (so that no two
    lists of contributions give the same message)."""
    message = SHUFFLE_DOMAIN + b"".join(len(c).to_bytes(4, "big") + c for c in contributions)
    return hmac.new(server_seed, message, hashlib.sha256).digest()


class Stream:
    """HMAC-SHA256 in counter mode, read as 32-bit big-endian words, with unbiased bounded draws."""

    __slots__ = ("_block", "_buffer", "_key")

    def __init__(self, key: bytes) -> None:
        self._key = key
        self._block = 0
        self._buffer = b""

    def word(self) -> int:
        """The next 32-bit word of the stream."""
        if len(self._buffer) < 4:
            self._buffer += hmac.new(self._key, self._block.to_bytes(8, "big"), hashlib.sha256).digest()
            self._block += 1
        word, self._buffer = self._buffer[:4], self._buffer[4:]
        return int.from_bytes(word, "big")

    def below(self, n: int) -> int:
        """A uniform integer in ``0..n-1`` (rejection sampling: no modulo bias)."""
        if not 0 < n <= 1 << 32:
            raise ValueError(f"a draw needs a bound in 1..2**32, not {n}")
        limit = (1 << 32) - ((1 << 32) % n)
        while True:
            x = self.word()
            if x < limit:
                return x % n


def fairly_shuffled(decks: int, server_seed: bytes, contributions: Sequence[bytes]) -> list[Card]:
    """``decks`` full decks with jokers in the order the server seed and the contributions make (top = index 0)."""
    if len(server_seed) != SEED_BYTES:
        raise ValueError(f"a server seed has {SEED_BYTES} bytes, not {len(server_seed)}")
    for contribution in contributions:
        if not 0 < len(contribution) <= MAX_CONTRIBUTION_BYTES:
            raise ValueError(f"a contribution has 1..{MAX_CONTRIBUTION_BYTES} bytes, not {len(contribution)}")
    deck = list(full_decks(decks))
    stream = Stream(shuffle_key(server_seed, contributions))
    for i in range(len(deck) - 1, 0, -1):
        j = stream.below(i + 1)
        deck[i], deck[j] = deck[j], deck[i]
    return deck
