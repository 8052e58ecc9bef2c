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

Protocol version 2 (`paiju.rules.fair`) keys the same stream differently: ``HMAC-SHA256(key = seed, message =
"paiju-fair-shuffle-v2" || s₁ || len₁ || c₁ || …)`` over the contributions revealed and matching their commitments,
in seat order (`shuffle_key_v2`); each seat's contribution is first committed to (`contribution_commitment`).

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
    return shuffled_by_key(decks, shuffle_key(server_seed, contributions))


# --- protocol version 2: every contribution committed before any is revealed -----------------------------------

CONTRIBUTION_DOMAIN = b"paiju-contribution-commitment-v2"
SHUFFLE_DOMAIN_V2 = b"paiju-fair-shuffle-v2"
SALT_BYTES = 32
"""A contribution commitment's salt (protocol version 2)."""


def contribution_commitment(number: int, seat: int, salt: bytes, cut: int, contribution: bytes) -> bytes:
    """A seat's commitment to its contribution to shuffle ``number`` (protocol version 2): SHA-256 of the domain,
    the shuffle number (4 bytes), the seat (1 byte), the salt (32 bytes), the cut (4 bytes: the cutter's count, 0 for
    every other seat) and the contribution's bytes. The salt keeps a short contribution from being guessed from its
    commitment; the number and seat keep a commitment from being copied to another shuffle or seat."""
    if len(salt) != SALT_BYTES:
        raise ValueError(f"a salt has {SALT_BYTES} bytes, not {len(salt)}")
    if not 0 < len(contribution) <= MAX_CONTRIBUTION_BYTES:
        raise ValueError(f"a contribution has 1..{MAX_CONTRIBUTION_BYTES} bytes, not {len(contribution)}")
    message = (
        CONTRIBUTION_DOMAIN
        + number.to_bytes(4, "big")
        + seat.to_bytes(1, "big")
        + salt
        + cut.to_bytes(4, "big")
        + contribution
    )
    return hashlib.sha256(message).digest()


def shuffle_key_v2(server_seed: bytes, contributions: Sequence[tuple[int, bytes]]) -> bytes:
    """The key of a version-2 shuffle's stream: ``HMAC-SHA256(key = seed, message = "paiju-fair-shuffle-v2" || …)``
    where each counted contribution, in seat order, is its seat (1 byte), its length (4 bytes) and its bytes. The
    order is the seats', not the log's: the engine chooses nothing about it."""
    parts = [
        seat.to_bytes(1, "big") + len(c).to_bytes(4, "big") + c for seat, c in sorted(contributions, key=lambda x: x[0])
    ]
    return hmac.new(server_seed, SHUFFLE_DOMAIN_V2 + b"".join(parts), hashlib.sha256).digest()


def shuffled_by_key(decks: int, key: bytes) -> list[Card]:
    """``decks`` full decks shuffled by the stream of ``key`` (Fisher–Yates from the last position down)."""
    deck = list(full_decks(decks))
    stream = Stream(key)
    for i in range(len(deck) - 1, 0, -1):
        j = stream.below(i + 1)
        deck[i], deck[j] = deck[j], deck[i]
    return deck
