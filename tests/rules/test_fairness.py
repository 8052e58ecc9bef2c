"""The verifiable shuffle (paiju.rules.fairness): the test vector of docs/fairness.md, recomputed here by an
independent reading of the algorithm as the document states it; and its properties: a permutation of the decks, the
same for the same inputs, another for any changed byte of the seed or of a contribution."""

from __future__ import annotations

import hashlib
import hmac
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paiju.rules.cards import format_card, full_decks
from paiju.rules.fairness import commitment, fairly_shuffled, shuffle_key

SEED = bytes(range(32))
CONTRIBUTIONS = [bytes.fromhex("0a0b0c0d"), b"seat-3 cuts 42"]
COMMITMENT = "5844d6fdf0023135954a6eda9ab024a87611fef793bac1733b00e19448eefaaa"
KEY = "1dcc7634f1c70e17d982a88a4f53d2f589cdb6adadc703ae9cfc637a0723f9ac"
VECTOR = {  # decks: (SHA-256 of the order in notation, space-separated; its first twelve cards)
    2: (
        "feaecabda3bdb4a1dd61b39e4e88cbd185cefdbf9b382302493fab34d88990b3",
        "TC 7D 2C 5C 5D QC QC 7S 9H 5H 8D 2D",
    ),
    6: (
        "ff58dfa57f897ad99dd0141bbe0b52dad20f1d983828395f29813b765b665be0",
        "AH 4C 4D AD 7S 7H 7S 5C 6H 2C 7H 8S",
    ),
}
ONE_DECK = (
    "2S 2H 2C 2D 3S 3H 3C 3D 4S 4H 4C 4D 5S 5H 5C 5D 6S 6H 6C 6D 7S 7H 7C 7D 8S 8H 8C 8D 9S 9H 9C 9D "
    "TS TH TC TD JS JH JC JD QS QH QC QD KS KH KC KD AS AH AC AD SJ BJ"
)


def reference(decks: int, seed: bytes, contributions: list[bytes]) -> list[str]:
    """The algorithm as docs/fairness.md states it, written again without the module."""
    deck = [card for card in ONE_DECK.split() for _ in range(decks)]  # each card's copies together, in code order
    key = hmac.new(seed, b"paiju-fair-shuffle-v1" + b"".join(len(c).to_bytes(4, "big") + c for c in contributions),
                   hashlib.sha256).digest()  # fmt: skip
    words: list[int] = []
    block = 0

    def draw(n: int) -> int:
        nonlocal block
        while True:
            if not words:
                digest = hmac.new(key, block.to_bytes(8, "big"), hashlib.sha256).digest()
                words.extend(int.from_bytes(digest[i : i + 4], "big") for i in range(0, 32, 4))
                block += 1
            x = words.pop(0)
            if x < 2**32 - 2**32 % n:
                return x % n

    for i in range(len(deck) - 1, 0, -1):
        j = draw(i + 1)
        deck[i], deck[j] = deck[j], deck[i]
    return deck


def test_the_test_vector_of_the_document() -> None:
    assert commitment(SEED).hex() == COMMITMENT
    assert shuffle_key(SEED, CONTRIBUTIONS).hex() == KEY
    assert " ".join(format_card(c) for c in full_decks(1)) == ONE_DECK, "the canonical order the document lists"
    for decks, (digest, first) in VECTOR.items():
        order = [format_card(c) for c in fairly_shuffled(decks, SEED, CONTRIBUTIONS)]
        assert len(order) == 54 * decks
        assert hashlib.sha256(" ".join(order).encode()).hexdigest() == digest
        assert " ".join(order[:12]) == first
        assert order == reference(decks, SEED, CONTRIBUTIONS), "an independent reading of the algorithm agrees"


seeds = st.binary(min_size=32, max_size=32)
contributions = st.lists(st.binary(min_size=1, max_size=64), max_size=6)


@settings(max_examples=40, deadline=None)
@given(seed=seeds, given=contributions, decks=st.sampled_from([2, 6]))
def test_a_shuffle_is_a_permutation_of_the_decks_and_the_same_for_the_same_inputs(
    seed: bytes, given: list[bytes], decks: int
) -> None:
    order = fairly_shuffled(decks, seed, given)
    assert Counter(order) == Counter(full_decks(decks))
    assert order == fairly_shuffled(decks, seed, list(given))


@settings(max_examples=40, deadline=None)
@given(seed=seeds, given=contributions.filter(bool), data=st.data())
def test_any_changed_byte_of_the_seed_or_a_contribution_gives_another_deck(
    seed: bytes, given: list[bytes], data: st.DataObject
) -> None:
    order = fairly_shuffled(2, seed, given)
    where = data.draw(st.integers(0, len(seed) - 1))
    flip = data.draw(st.integers(1, 255))
    changed_seed = bytes(b ^ flip if i == where else b for i, b in enumerate(seed))
    assert fairly_shuffled(2, changed_seed, given) != order
    which = data.draw(st.integers(0, len(given) - 1))
    at = data.draw(st.integers(0, len(given[which]) - 1))
    changed = [bytes(b ^ flip if i == at else b for i, b in enumerate(c)) if k == which else c
               for k, c in enumerate(given)]  # fmt: skip
    assert fairly_shuffled(2, seed, changed) != order
    assert commitment(changed_seed) != commitment(seed)


def test_contributions_are_length_prefixed_and_inputs_are_checked() -> None:
    assert shuffle_key(SEED, [b"ab", b"c"]) != shuffle_key(SEED, [b"a", b"bc"])
    assert shuffle_key(SEED, [b"a"]) != shuffle_key(SEED, [b"a", b"a"])
    with pytest.raises(ValueError, match="32 bytes"):
        fairly_shuffled(2, b"short", [])
    with pytest.raises(ValueError, match="contribution"):
        fairly_shuffled(2, SEED, [b""])
    with pytest.raises(ValueError, match="contribution"):
        fairly_shuffled(2, SEED, [b"x" * 65])


# --- version 2 (docs/fairness.md, "Test vector (version 2)") -------------------------------------------------------

V2_SEED = bytes(range(0x20, 0x40))
V2_COMMITMENTS = {
    0: "4c23fd6ac9bd8b9e83b74d48cd852fe51b41f45ebe63d36e8d56013baae93e18",
    1: "1e4a0e36f5d2a7cc9ffaaa1cce6d56d192fc75ae835a7950c60c79ae3aded7f4",
    2: "cbaeac8b8bba2a92a60cdb09794293359e2d63a05ada155bdd70d572e6586d80",
    3: "342db296c1e5c47bc0884824e1727895ed28b4644bac8d2dabea12dcf1c265f5",
    4: "77e2ac5120e1d915fe7b558dfee698ddfcaf2f1dd60958b940014b6809f313a2",
    5: "34236bac29f6e1cb03b68aa73fe4f69ffd7b37f0afda9382bf3418370f9c7eed",
}


def v2_salt(seat: int) -> bytes:
    return hashlib.sha256(b"salt %d" % seat).digest()


def test_the_version_2_test_vector_of_the_document() -> None:
    """Commitments, a withheld and a mismatching reveal, the shuffle key in seat order, the deck, the cut and the
    first cards drawn, the draws seed and a tribute tie thrown in play order from the previous 大贡 — each recomputed
    by an independent reading of the document, then by the rules cores."""
    from paiju.rules.fair import Shuffle as FairShuffle
    from paiju.rules.fair import default_cut, draws_seed_of_key
    from paiju.rules.fairness import contribution_commitment, shuffle_key_v2, shuffled_by_key
    from paiju.rules.zlj.dealing import TRIBUTE_STREAM, rock_paper_scissors, stream

    assert commitment(V2_SEED).hex() == "af9955c0b6a8d0b56e73aafb49b53cbaaa0670c5ef86114e526847995b44fe3e"
    for seat, expected in V2_COMMITMENTS.items():
        cut = 50 if seat == 4 else 0
        message = (b"paiju-contribution-commitment-v2" + (2).to_bytes(4, "big") + bytes([seat]) + v2_salt(seat)
                   + cut.to_bytes(4, "big") + b"seat %d" % seat)  # fmt: skip
        assert hashlib.sha256(message).hexdigest() == expected
        assert contribution_commitment(2, seat, v2_salt(seat), cut, b"seat %d" % seat).hex() == expected
    assert contribution_commitment(2, 1, v2_salt(1), 0, b"seat 1!").hex() != V2_COMMITMENTS[1], "seat 1 mismatches"
    counted = [(s, b"seat %d" % s) for s in (0, 2, 4, 5)]
    message = b"paiju-fair-shuffle-v2" + b"".join(bytes([s]) + len(c).to_bytes(4, "big") + c for s, c in counted)
    key = hmac.new(V2_SEED, message, hashlib.sha256).digest()
    assert key.hex() == "78167aed563c12924113e33391d327f6bb6703bc4f8b7a17f4222d0d2ca1e427"
    assert shuffle_key_v2(V2_SEED, list(reversed(counted))) == key, "the seats' order, not the order given"
    order = [format_card(c) for c in shuffled_by_key(2, key)]
    assert " ".join(order[:12]) == "2S AD 7S 5D KH KC 2C 7C 2S 4C TD QH"
    assert hashlib.sha256(" ".join(order).encode()).hexdigest() == (
        "f1ae97479195f2c9d8cda358858de5a766bddbf2fdf96442beeb3dc179a904f9"
    )
    six = " ".join(format_card(c) for c in shuffled_by_key(6, key)[:12])
    assert six == "QH KS 8H 7H AS QC TS AH 8C 6C QD 5D"
    dealt = order[50:] + order[:50]
    assert [dealt[i] for i in range(6)] == ["9C", "JD", "9H", "TS", "9D", "5C"], "seats 3, 4, 5, 0, 1, 2"

    class Committed:
        shuffle = FairShuffle(2, 2, commitment(V2_SEED))

    assert default_cut(Committed, 108) == 52
    draws = hmac.new(key, b"paiju-deal-draws-v1", hashlib.sha256).digest()
    assert draws.hex() == "654846add8ac37de312b0670e4e2ba53368736f63cd26a0807428ba51780d8a3"
    seed = int.from_bytes(draws[:8], "big") >> 1
    assert seed == draws_seed_of_key(key) == 3649080454316170223
    rounds, ranked = rock_paper_scissors((3, 5, 1), stream(seed, TRIBUTE_STREAM))
    assert rounds == (((3, 1), (5, 0), (1, 1)), ((3, 1), (1, 2))) and ranked == (1, 3, 5)
    assert rock_paper_scissors((1, 3, 5), stream(seed, TRIBUTE_STREAM))[1] == (5, 1, 3), "seat order differs"
