"""Accounts (`paiju.lobby.accounts`): name and password checks (zxcvbn), scrypt hashing and logins that cost
the same whether or not the name exists, the account key that folds case and Unicode forms together, the
skeletons of confusable names and the name-claim aggregate. Pure but for one test of the claim through the
in-memory store."""

from __future__ import annotations

import asyncio
import hashlib
import re
import unicodedata
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paiju.lobby.accounts import (
    MAX_PASSWORD,
    MIN_PASSWORD,
    SCRYPT_N,
    SCRYPT_P,
    SCRYPT_R,
    Account,
    AccountRegistered,
    ClaimName,
    NameClaim,
    NameClaimed,
    Register,
    account_key,
    check_name,
    check_password,
    claim_key,
    decide_account,
    decide_claim,
    evolve_account,
    evolve_claim,
    fold,
    guest_name,
    hash_password,
    login_matches,
    name_skeleton,
    new_player_id,
    password_matches,
)
from paiju.lobby.contract import LOBBY_EVENTS
from paiju.lobby.table import LobbyError
from paiju.platform.errors import Reason
from paiju.platform.repository import Aggregates
from paiju.platform.store import MemoryEventStore

from ..support.profiles import examples

KEY = re.compile(r"account-[0-9a-f]{32}")
PASSWORD = "correct horse battery"


def invalid(message: str) -> pytest.RaisesExc[LobbyError]:
    return pytest.raises(LobbyError, match=re.escape(message))


# --- names ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("Ann", "Ann"),
        ("  Ann  ", "Ann"),
        ("\tAnn Lee\n", "Ann Lee"),
        ("Ｌｉ Ｌｅｉ", "Li Lei"),  # full-width letters: NFKC
        ("e\u0301mile", "émile"),  # decomposed: composed
        ("ﬀ", "ff"),  # one ligature, two letters
        ("张三", "张三"),
        ("ab", "ab"),
        ("x" * 32, "x" * 32),
        ("Guest", "Guest"),
        ("robot-7", "robot-7"),
        ("guest_1", "guest_1"),
        ("\u2028Ann\u2029", "Ann"),  # separators around the name are trimmed, not refused
        ("Ann\u3000Lee", "Ann Lee"),  # an ideographic space is a space (NFKC)
    ],
)
def test_check_name_gives_the_name_as_shown(name: str, shown: str) -> None:
    assert check_name(name) == shown


@pytest.mark.parametrize("name", ["", " ", "a", "  a  ", "x" * 33, "\u3000b\u3000", "ａ"])
def test_check_name_refuses_a_name_too_short_or_long(name: str) -> None:
    with invalid("2..32 characters") as info:
        check_name(name)
    assert info.value.reason is Reason.NAME_INVALID


def test_check_name_counts_characters_after_normalising() -> None:
    assert check_name(" " * 10 + "x" * 32 + " " * 10) == "x" * 32
    with invalid("2..32"):
        check_name("ﬀ" * 17)  # 17 characters typed, 34 after NFKC


@pytest.mark.parametrize(
    "name",
    [
        "Ann\nLee",
        "Ann\x00",
        "A\tB",
        "Ann\x7f",
        "An\u200bn",
        "An\u202en",
        "\ufeffAnn",
        "Ann\u00ad",
        "An\ue000",
        "Ann\u2028Lee",  # line separator (Zl)
        "Ann\u2029Lee",  # paragraph separator (Zp)
        "Ann\x85Lee",  # next line (Cc)
    ],
)
def test_check_name_refuses_control_and_format_characters(name: str) -> None:
    with invalid("no control characters") as info:
        check_name(name)
    assert info.value.reason is Reason.NAME_INVALID


@pytest.mark.parametrize(
    "name",
    [
        "guest-1",
        "Guest-Ann",
        "GUEST-x",
        "bot-1",
        "Bot-t1-0",
        "ＢＯＴ－7",
        "  guest-ann",
        "guest-",
        "cover-t1-4",
        "Cover-me",
        "gu\u212est-1",  # ℮ (estimated sign) looks like an e
        "b0t-1",  # a zero looks like an o
        "b\u03bft-1",  # Greek omicron
        "c\u043ever-2",  # Cyrillic о
    ],
)
def test_check_name_refuses_the_lobbys_prefixes(name: str) -> None:
    with invalid("guest-, bot- or cover-") as info:
        check_name(name)
    assert info.value.reason is Reason.NAME_INVALID


@pytest.mark.parametrize("name", ["Guest", "robot-7", "guest_1", "covers", "discover-x"])
def test_check_name_accepts_names_that_only_begin_like_the_lobbys(name: str) -> None:
    assert check_name(name) == name


@pytest.mark.parametrize("name", ["bot", "b0t1", "Bot 3", "admin"])
def test_check_name_refuses_names_that_read_as_the_lobbys_bots_or_staff(name: str) -> None:
    with pytest.raises(LobbyError) as info:
        check_name(name)
    assert info.value.reason is Reason.NAME_RESERVED


def test_guest_names_and_player_ids() -> None:
    name = guest_name()
    assert re.fullmatch(r"guest-[0-9a-f]{8}", name)
    with invalid("guest-, bot- or cover-"):
        check_name(name)  # nobody registers a guest's name
    assert re.fullmatch(r"p-[0-9a-f]{16}", new_player_id())
    assert len({new_player_id() for _ in range(50)}) == 50
    assert len({guest_name() for _ in range(20)}) > 1


# --- passwords ------------------------------------------------------------------------------------------


def weak(name: str, password: str) -> LobbyError:
    """The refusal of ``password`` (asserting it is refused as weak)."""
    with pytest.raises(LobbyError) as info:
        check_password(name, password)
    assert info.value.reason is Reason.PASSWORD_WEAK
    return info.value


@pytest.mark.parametrize(
    "password",
    [
        "correct horse battery staple",
        "Zx9!vQ2#mLp7",
        "x7Gq2mZr9p",  # exactly MIN_PASSWORD, random
        "correct horse battery",
        "密码很长很长的一句话啊",
        "Ann went to the lighthouse at dawn",
        "Zx9!vQ2#mLp7" * 10,  # long: its beginning is scored
    ],
)
def test_check_password_accepts_a_strong_password(password: str) -> None:
    check_password("Ann", password)


@pytest.mark.parametrize(
    "password",
    [
        "password123",
        "P@ssw0rd123",
        "admin123456",
        "Welcome123",
        "qwertyuiop",
        "QWERTYUIOP",
        "aaaaaaaaaaaa",
        "abababababab",
        "abcabcabcabc",
        "abcdabcdab",
        "\u4e00\u4e8c" * 6,
        "1234567890",
        "iloveyou12",
        "letmein123",
        "1q2w3e4r5t",
        "Password1!",
        "19901231abc",
    ],
)
def test_check_password_refuses_an_easy_one(password: str) -> None:
    refusal = weak("Ann", password)
    assert "too easy to guess" in refusal.message
    assert refusal.metadata["suggestion"]  # zxcvbn says what would help
    assert int(refusal.metadata["score"]) < 3


@pytest.mark.parametrize(
    ("name", "password"),
    [
        ("alice", "alice12345678"),
        ("alice", "Alice2024"),
        ("alice", "alice2024!"),
        ("Maximilian", "maximilian2024"),
        ("Annabel", "annabel1234"),
        ("  Annabel ", "annabel2024"),
        ("Ｍａｘｉｍｕｓ", "maximus-9876"),  # the name folded (full-width to ASCII)
        ("Straße", "STRASSE-1234"),  # folded: ß is ss
        ("Ann Lee", "annlee12345"),  # the name without its space
        ("Ann Lee", "lee1234567890"),  # one word of it
    ],
)
def test_check_password_refuses_the_name_with_digits(name: str, password: str) -> None:
    weak(name, password)


@pytest.mark.parametrize(
    "password", ["paiju123456", "zalioujia123", "tractor2024!", "拖拉机拖拉机拖拉机1", "砸六家砸六家砸六家12"]
)
def test_check_password_refuses_the_sites_own_words(password: str) -> None:
    weak("Ann", password)


@pytest.mark.parametrize(
    ("name", "password"),
    [
        ("Annabelle", "annabelle-is-me"),
        ("Annabel", "Annabel-2024!"),
        ("Annabel", "my ANNABEL pw"),
        ("alice", "ALICE-2024!"),
        ("Ann Lee", "xx-ann lee-xx"),
        ("Ｍａｘｉｍｕｓ", "MAXIMUS rocks!"),
    ],
)
def test_check_password_refuses_one_built_on_the_name(name: str, password: str) -> None:
    """zxcvbn alone scores these 3 (the name is one cheap guess, the rest 10^6); what is left without the name
    is easy to guess."""
    refusal = weak(name, password)
    assert refusal.metadata["warning"] == "Passwords built on the name are easy to guess."
    assert refusal.metadata["suggestion"]


@pytest.mark.parametrize(
    ("name", "password"), [("alice", "alice correct horse battery staple"), ("an", "banana split forever after")]
)
def test_check_password_accepts_a_strong_one_holding_the_name(name: str, password: str) -> None:
    check_password(name, password)


def test_the_name_makes_a_password_weak_that_is_strong_for_another() -> None:
    check_password("Ann", "zhangweiqiang88")
    weak("zhangweiqiang", "zhangweiqiang88")


def test_check_password_refuses_an_empty_one() -> None:
    refusal = weak("Ann", "")
    assert refusal.message == "a password is required"


@pytest.mark.parametrize("password", ["x", "x7Gq2mZr9", "密码很长很长的一句话"[:9]])
def test_check_password_refuses_a_short_one(password: str) -> None:
    assert len(password) < MIN_PASSWORD
    refusal = weak("Ann", password)
    assert refusal.message == f"a password has at least {MIN_PASSWORD} characters"
    assert refusal.metadata == {"length": str(len(password)), "min_length": str(MIN_PASSWORD)}


@pytest.mark.parametrize("length", [MAX_PASSWORD + 1, 1000, 4_000_000])
def test_check_password_refuses_a_long_one_without_scoring_it(length: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression: a 3.9 MB password was accepted. zxcvbn is not even asked (it is slow on long inputs)."""
    from paiju.lobby import accounts

    def no_scoring(*args: object, **kwargs: object) -> None:
        raise AssertionError("zxcvbn ran on a password too long to accept")

    monkeypatch.setattr(accounts, "zxcvbn", no_scoring)
    refusal = weak("Ann", "Zx9!vQ2#mLp7" * (length // 12 + 1))
    assert refusal.message == f"a password has at most {MAX_PASSWORD} characters"


def test_check_password_length_boundaries() -> None:
    check_password("Ann", "x7Gq2mZr9p")  # exactly MIN_PASSWORD
    check_password("Ann", ("Zx9!vQ2#mLp7" * 11)[:MAX_PASSWORD])  # exactly MAX_PASSWORD
    weak("Ann", ("Zx9!vQ2#mLp7" * 11)[: MAX_PASSWORD + 1])


def test_zxcvbn_scores_only_the_beginning(monkeypatch: pytest.MonkeyPatch) -> None:
    """zxcvbn's time grows with the square of the length (a crafted 128 characters took seconds): it scores the
    first `SCORED_CHARS` characters; a password is at least as strong as its beginning."""
    from paiju.lobby import accounts

    seen: list[str] = []
    real = vars(accounts)["zxcvbn"]

    def spy(password: str, **kwargs: object) -> object:
        seen.append(password)
        return real(password, **kwargs)

    monkeypatch.setattr(accounts, "zxcvbn", spy)
    password = "4@8({[<369!|170$5+%2" * 6
    check_password("Ann", password)
    assert seen == [password[: accounts.SCORED_CHARS]]
    weak("Ann", "a" * accounts.SCORED_CHARS + "Zx9!vQ2#mLp7")  # a weak beginning is weak


def test_the_refusal_explains() -> None:
    refusal = weak("Ann", "password123")
    assert refusal.message.startswith("this password is too easy to guess (This is a very common password)")
    assert refusal.metadata["suggestion"] == "Add another word or two. Uncommon words are better."
    assert refusal.metadata["warning"] == "This is a very common password."


# --- hashing --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def stored() -> str:
    return hash_password(PASSWORD)


def test_hash_format(stored: str) -> None:
    kind, n, r, p, salt, digest = stored.split("$")
    assert (kind, int(n), int(r), int(p)) == ("scrypt", SCRYPT_N, SCRYPT_R, SCRYPT_P)
    assert (SCRYPT_N, SCRYPT_R, SCRYPT_P) == (2**14, 8, 1)
    assert re.fullmatch(r"[0-9a-f]{32}", salt)  # 16 random bytes
    assert re.fullmatch(r"[0-9a-f]{128}", digest)  # scrypt's 64 bytes
    assert PASSWORD not in stored
    expected = hashlib.scrypt(
        PASSWORD.encode(), salt=bytes.fromhex(salt), n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P, maxmem=64 * 1024**2
    )
    assert digest == expected.hex()


def test_the_right_password_matches(stored: str) -> None:
    assert password_matches(PASSWORD, stored)


@pytest.mark.parametrize("attempt", ["", "correct horse batter", "Correct horse battery", PASSWORD + " "])
def test_a_wrong_password_does_not_match(stored: str, attempt: str) -> None:
    assert not password_matches(attempt, stored)


def test_each_hash_has_its_own_salt(stored: str) -> None:
    again = hash_password(PASSWORD)
    assert again != stored
    assert again.split("$")[4] != stored.split("$")[4]
    assert password_matches(PASSWORD, again)


def test_a_hash_of_other_parameters_still_verifies() -> None:
    """The parameters are read from the stored hash: raising the cost later keeps old hashes usable."""
    salt = bytes(range(16))
    digest = hashlib.scrypt(b"old password 1", salt=salt, n=2**10, r=4, p=1, maxmem=64 * 1024**2)
    stored = f"scrypt${2**10}$4$1${salt.hex()}${digest.hex()}"
    assert password_matches("old password 1", stored)
    assert not password_matches("old password 2", stored)


def test_unicode_passwords() -> None:
    salt = bytes(16)
    password = "口令：砸六家拖拉机"
    digest = hashlib.scrypt(password.encode(), salt=salt, n=2**10, r=8, p=1, maxmem=64 * 1024**2)
    stored = f"scrypt${2**10}$8$1${salt.hex()}${digest.hex()}"
    assert password_matches(password, stored)
    assert not password_matches("口令:砸六家拖拉机", stored)


@pytest.mark.parametrize(
    "stored",
    [
        "",  # a guest: no password
        "scrypt",
        "scrypt$16384$8$1$00",
        "scrypt$16384$8$1$00$00$00",
        "bcrypt$16384$8$1$00$00",
        "plain$correct horse battery",
    ],
)
def test_no_password_matches_a_hash_of_another_shape(stored: str) -> None:
    assert not password_matches(PASSWORD, stored)
    assert not password_matches("", stored)


@pytest.mark.parametrize(
    "stored",
    [
        "scrypt$16384$8$1$not-hex$00",
        "scrypt$16384$8$1$0$00",  # odd number of hex digits
        "scrypt$lots$8$1$00$00",
        "scrypt$16384$8.0$1$00$00",
        "scrypt$$$$$",
        "scrypt$1000$8$1$00$00",  # n not a power of 2
        "scrypt$1$8$1$00$00",  # n too small
        "scrypt$1024$0$1$00$00",  # r = 0
        "scrypt$1024$8$0$00$00",  # p = 0
        f"scrypt$1024${2**40}$1$00$00",  # more memory than allowed
    ],
)
def test_no_password_matches_a_damaged_hash(stored: str) -> None:
    """Regression: `password_matches` answered False for a stored hash of the wrong shape, but raised
    ValueError (from ``bytes.fromhex``, ``int`` or ``hashlib.scrypt``) for a damaged one of the right shape:
    a corrupt account record made a login attempt fail with an internal error instead of "wrong password"."""
    assert password_matches(PASSWORD, stored) is False
    assert password_matches("", stored) is False


def test_a_damaged_digest_matches_nothing() -> None:
    """A hash whose parameters and salt are sound but whose digest is cut short or altered."""
    salt = bytes(16)
    digest = hashlib.scrypt(PASSWORD.encode(), salt=salt, n=2**10, r=8, p=1, maxmem=64 * 1024**2).hex()
    sound = f"scrypt${2**10}$8$1${salt.hex()}${digest}"
    assert password_matches(PASSWORD, sound)
    for damaged in (sound[:-2], sound + "00", sound[:-1] + ("0" if sound[-1] != "0" else "1"), sound.upper()):
        assert password_matches(PASSWORD, damaged) is False, damaged


@pytest.mark.parametrize(
    "stored",
    [
        "scrypt$-1$8$1$00$00",  # a negative n: hashlib.scrypt raises TypeError
        f"scrypt${2**64}$8$1$00$00",  # an n too large for C: TypeError
        f"scrypt${-(2**64)}$8$1$00$00",
        "scrypt$1024$-8$1$00$00",  # a negative r
        "scrypt$1024$8$-1$00$00",  # a negative p
        f"scrypt$1024${2**64}$1$00$00",  # an r too large for C
        f"scrypt$1024$8${2**64}$00$00",  # a p too large for C
        "scrypt$1024$8$1$\u00e9\u00e9$00",  # a non-ASCII salt
    ],
)
def test_no_password_matches_a_hash_damaged_into_a_type_error(stored: str) -> None:
    """Regression: `password_matches` caught only ValueError; ``hashlib.scrypt`` raises TypeError (or
    OverflowError) for parameters out of the unsigned range, so these damaged records made a login fail
    with an internal error instead of "wrong password"."""
    assert password_matches(PASSWORD, stored) is False
    assert password_matches("", stored) is False


@pytest.mark.parametrize(
    "stored",
    [
        "scrypt$1024$8$1$00$\u00e9\u00e9",  # a non-ASCII digest
        "scrypt$1024$8$1$00$\uff10\uff10",  # full-width digits
    ],
)
def test_no_password_matches_a_hash_with_a_non_ascii_digest(stored: str) -> None:
    """Regression: the parameters and salt are sound, so ``hashlib.scrypt`` succeeds; the digest held
    non-ASCII characters, and ``hmac.compare_digest(found.hex(), digest)`` raised TypeError ("comparing
    strings with non-ASCII characters is not supported"): the login failed with an internal error instead of
    "wrong password". A digest that is not ASCII is now a damaged hash."""
    assert password_matches(PASSWORD, stored) is False


# --- account keys ---------------------------------------------------------------------------------------


def test_account_key_format() -> None:
    for name in ["Ann", "张三", "a.b c", "Ünïcødé ☃", "x" * 32, "  "]:
        key = account_key(name)
        assert KEY.fullmatch(key), key  # a subject token: no dots, spaces or other script
    assert account_key("Ann") == "account-" + hashlib.sha256(b"ann").hexdigest()[:32]


@pytest.mark.parametrize(
    "names",
    [
        ("Ann", "ANN", "ann", "aNn", "  Ann\t", "Ａｎｎ"),
        ("Straße", "STRASSE", "strasse", "Strasse"),
        ("Émile", "émile", "E\u0301mile", "e\u0301MILE", "ÉMILE"),
        ("ΟΔΟΣ", "οδος", "οδοσ", "Οδος"),  # final sigma folds to sigma
        ("Ǆemal", "ǅemal", "ǆemal", "DŽemal"),  # the digraph DŽ in its three cases, and spelt out
        ("ﬁsh", "fish", "FISH"),
        ("Ⅻ Club", "XII club"),  # the Roman numeral (compatibility) is its letters
    ],
)
def test_account_key_folds_case_and_unicode_forms(names: tuple[str, ...]) -> None:
    assert len({account_key(name) for name in names}) == 1, {name: fold(name) for name in names}


@pytest.mark.parametrize(
    ("one", "other"),
    [("Ann", "Anne"), ("Ann", "An n"), ("张三", "张四"), ("Émile", "Emile"), ("ann", "аnn")],  # Cyrillic а
)
def test_account_key_tells_different_names_apart(one: str, other: str) -> None:
    assert account_key(one) != account_key(other)


def test_fold() -> None:
    assert fold("  Ａｎｎ Lee ") == "ann lee"
    assert fold("Straße") == "strasse"
    assert fold("E\u0301") == "é"
    # NFKC(casefold(NFKC(name))), trimmed: what case-folding decomposes is composed again
    assert fold("ß\u0301") == fold("SŚ") == fold("sś") == "s\u015b"
    assert fold("\u0130\u0316") == "i\u0316\u0307"  # İ: i + dot above, put after the mark below
    assert fold("\u01f0") == fold("J\u030c") == "\u01f0"  # ǰ has no capital: folded, it is composed again
    assert fold("\u0390") == "\u0390"  # ΐ: casefold spells it out, NFKC composes it
    assert fold("\u3000Ａｎｎ\u2028") == "ann"
    assert fold("ﬃ") == "ffi"


@settings(max_examples=examples(300), deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8", categories=["L", "M", "N", "Zs", "P"]), max_size=20))
def test_fold_is_stable_and_normalised(name: str) -> None:
    folded = fold(name)
    assert fold(folded) == folded
    assert unicodedata.is_normalized("NFKC", folded)
    assert fold(name.casefold()) == folded
    assert fold(unicodedata.normalize("NFD", name)) == folded


@settings(max_examples=examples(200), deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8", categories=["L", "N", "Zs", "P"]), max_size=40))
def test_account_key_ignores_padding_and_is_stable(name: str) -> None:
    key = account_key(name)
    assert KEY.fullmatch(key)
    assert account_key(name) == key
    assert account_key(f" {name}\u3000") == key
    assert account_key(unicodedata.normalize("NFD", name)) == key
    assert account_key(unicodedata.normalize("NFKC", name)) == key


@settings(max_examples=examples(200), deadline=None)
@given(st.text(alphabet=st.characters(codec="ascii", categories=["L", "N", "P"]), min_size=1, max_size=40))
def test_account_key_of_ascii_names_ignores_case(name: str) -> None:
    assert account_key(name.upper()) == account_key(name.lower()) == account_key(name)


@pytest.mark.parametrize(
    ("name", "variant"),
    [
        ("ß\u0301", "ß\u0301".upper()),  # its capitals are "SS\u0301", i.e. "SŚ"
        ("ß\u0301", "sś"),
        ("\u0130\u0316", "i\u0316\u0307"),  # İ with a grave below, against the same folded and normalised
    ],
)
def test_account_key_of_a_name_and_its_case_variant(name: str, variant: str) -> None:
    """Regression: `fold` normalised only *before* case-folding, and case-folding can undo the normal form
    (ß → ss, İ → i + combining dot, which can then compose with, or reorder against, a following combining
    mark). So a name and its capitals got two account keys: "ß\u0301" folded to "ss\u0301" but "SŚ" to
    "sś". Both names pass `check_name`. Now fold is NFKC(casefold(NFKC(name)))."""
    check_name(name)
    check_name(variant)
    assert account_key(name) == account_key(variant), (ascii(fold(name)), ascii(fold(variant)))


# --- logins -------------------------------------------------------------------------------------------


@pytest.fixture
def kdf_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The ``n`` of every `hashlib.scrypt` run from now on (the real KDF still runs)."""
    runs: list[int] = []
    real = hashlib.scrypt

    def spy(password: bytes, *, salt: bytes, n: int, r: int, p: int, maxmem: int = 0, dklen: int = 64) -> bytes:
        runs.append(n)
        return real(password, salt=salt, n=n, r=r, p=p, maxmem=maxmem, dklen=dklen)

    monkeypatch.setattr(hashlib, "scrypt", spy)
    return runs


@pytest.fixture(scope="module")
def ann() -> Account:
    return Account(account_key("Ann"), "Ann", hash_password(PASSWORD), guest=False)


def test_login_with_the_right_password(ann: Account, kdf_runs: list[int]) -> None:
    assert login_matches(ann, PASSWORD) is True
    assert kdf_runs == [SCRYPT_N]


@pytest.mark.parametrize("attempt", ["", "correct horse batter", PASSWORD.upper(), "x" * MAX_PASSWORD])
def test_login_with_a_wrong_password(ann: Account, attempt: str, kdf_runs: list[int]) -> None:
    assert login_matches(ann, attempt) is False
    assert kdf_runs == [SCRYPT_N]


@pytest.mark.parametrize("attempt", [PASSWORD, "", "x" * MAX_PASSWORD])
def test_login_to_a_name_that_does_not_exist_runs_the_kdf_once(attempt: str, kdf_runs: list[int]) -> None:
    """Regression: an unknown name was answered without scrypt (1 ms against 64 ms): names could be listed."""
    assert login_matches(None, attempt) is False
    assert kdf_runs == [SCRYPT_N]  # against the dummy hash, with the parameters of a real one


@pytest.mark.parametrize("attempt", ["", PASSWORD])
def test_login_to_a_guest_runs_the_kdf_once(attempt: str, kdf_runs: list[int]) -> None:
    guest = Account(account_key("guest-a1b2c3"), "guest-a1b2c3", "", guest=True)
    assert login_matches(guest, attempt) is False
    assert kdf_runs == [SCRYPT_N]


def test_a_guest_never_logs_in_even_with_a_hash(kdf_runs: list[int]) -> None:
    odd = Account("p-g", "guest-a1b2c3", hash_password(PASSWORD), guest=True)
    kdf_runs.clear()
    assert login_matches(odd, PASSWORD) is False
    assert kdf_runs == [SCRYPT_N]


@pytest.mark.parametrize(
    "stored",
    [
        "plain$correct horse battery",
        "scrypt$lots$8$1$00$00",
        "scrypt$1024$8$1$00$\u00e9",  # a digest that is not ASCII
        "scrypt$1000$8$1$00$00",  # n not a power of 2: scrypt refuses it
    ],
)
def test_login_to_a_damaged_account_runs_the_kdf_once(stored: str, kdf_runs: list[int]) -> None:
    """A record that is not a hash is checked against the dummy; one whose parameters scrypt refuses, with them."""
    assert login_matches(Account("p-d", "Dee", stored, guest=False), PASSWORD) is False
    assert len(kdf_runs) == 1


def test_login_with_a_password_too_long_to_register(ann: Account, kdf_runs: list[int]) -> None:
    """The contract bounds a login's password to 128 characters; called from elsewhere, a longer one is not
    hashed whole (the dummy costs as much) and is refused."""
    assert login_matches(ann, PASSWORD + "x" * 4_000_000) is False
    assert kdf_runs == [SCRYPT_N]


def test_a_hash_of_older_parameters_still_logs_in(kdf_runs: list[int]) -> None:
    salt = bytes(range(16))
    digest = hashlib.scrypt(b"old password 1", salt=salt, n=2**10, r=4, p=1, maxmem=64 * 1024**2)
    old = Account("p-o", "Old", f"scrypt${2**10}$4$1${salt.hex()}${digest.hex()}", guest=False)
    kdf_runs.clear()
    assert login_matches(old, "old password 1") is True
    assert kdf_runs == [2**10]


# --- confusable names -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "names",
    [
        ("alice", "\u0410lice", "ALICE", "Alice", "\u0430lice", "  alice "),  # Cyrillic А and а
        ("paypal", "paypa1", "PAYPAL", "p\u0430yp\u0430l"),
        ("bob", "BOB", "B0B", "b0b"),  # a zero looks like an O, which folds to o
        ("modern", "rnodern"),  # rn looks like m
        ("Ann", "\u0391nn", "\u13aann"),  # Greek Alpha, Cherokee Ꭺ
        ("Li Lei", "Ｌｉ Ｌｅｉ", "Li\u3000Lei"),
        ("émile", "E\u0301mile", "ÉMILE"),
    ],
)
def test_confusable_names_share_a_skeleton(names: tuple[str, ...]) -> None:
    assert len({name_skeleton(name) for name in names}) == 1, {name: name_skeleton(name) for name in names}
    assert len({claim_key(name) for name in names}) == 1


@pytest.mark.parametrize(
    ("one", "other"),
    [("alice", "alicia"), ("张三", "李四"), ("Ann", "Anne"), ("bob", "rob"), ("Émile", "Emile"), ("ab", "a b")],
)
def test_different_names_have_different_skeletons(one: str, other: str) -> None:
    assert name_skeleton(one) != name_skeleton(other)
    assert claim_key(one) != claim_key(other)


def test_claim_key_format() -> None:
    for name in ["alice", "张三", "a.b c", "Ünïcødé ☃", "x" * 32]:
        key = claim_key(name)
        assert re.fullmatch(r"name-[0-9a-f]{32}", key), key
    assert claim_key("alice") == "name-" + hashlib.sha256(b"alice").hexdigest()[:32]


@settings(max_examples=examples(200), deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8", categories=["L", "M", "N", "Zs", "P"]), max_size=20))
def test_skeletons_ignore_case_and_unicode_forms(name: str) -> None:
    skeleton = name_skeleton(name)
    assert name_skeleton(name.casefold()) == skeleton
    assert name_skeleton(unicodedata.normalize("NFD", name)) == skeleton
    assert name_skeleton(fold(name)) == skeleton
    assert name_skeleton(f" {name} ") == skeleton


# --- the name claim -------------------------------------------------------------------------------------


def test_claim_a_free_name() -> None:
    command = ClaimName(name_skeleton("Alice"), account_key("Alice"), "Alice")
    events = decide_claim(None, command)
    assert events == [NameClaimed("alice", account_key("Alice"), "Alice")]
    assert evolve_claim(None, events[0]) == NameClaim("alice", account_key("Alice"), "Alice")


def test_claiming_again_for_the_same_account_changes_nothing() -> None:
    claim = NameClaim("alice", account_key("alice"), "alice")
    assert decide_claim(claim, ClaimName("alice", account_key("ALICE"), "ALICE")) == []


def test_a_confusable_name_is_refused() -> None:
    claim = NameClaim("alice", account_key("alice"), "alice")
    with pytest.raises(LobbyError) as info:
        decide_claim(claim, ClaimName(name_skeleton("\u0410lice"), account_key("\u0410lice"), "\u0410lice"))
    assert info.value.reason is Reason.NAME_CONFUSABLE
    assert "looks like an existing one" in info.value.message
    assert info.value.metadata == {"name": "\u0410lice", "existing": "alice"}


def test_of_two_confusable_names_claimed_at_once_exactly_one_wins() -> None:
    """The claim is an append at position 0 of the skeleton's subject: the second claim reads the first."""

    async def body() -> None:
        claims = Aggregates(MemoryEventStore(), LOBBY_EVENTS, lambda: None, decide_claim, evolve_claim)

        async def claim(name: str) -> str:
            command = ClaimName(name_skeleton(name), account_key(name), name)
            try:
                await claims.act(claim_key(name), command, uuid.uuid4().hex, account_key(name))
            except LobbyError as e:
                assert e.reason is Reason.NAME_CONFUSABLE
                return "refused"
            return "claimed"

        outcomes = await asyncio.gather(claim("alice"), claim("\u0410lice"), claim("paypal"), claim("paypa1"))
        assert sorted(outcomes) == ["claimed", "claimed", "refused", "refused"]
        assert await claim("ALICE") == ("claimed" if outcomes[0] == "claimed" else "refused")  # alice's own
        held = (await claims.load(claim_key("alice"))).state
        assert held is not None and held.skeleton == "alice"

    asyncio.run(body())


# --- the account aggregate ------------------------------------------------------------------------------


def test_register_a_new_account() -> None:
    events = decide_account(None, Register("p-1", "Ann", "scrypt$h", guest=False))
    assert events == [AccountRegistered("p-1", "Ann", "scrypt$h", guest=False)]
    assert evolve_account(None, events[0]) == Account("p-1", "Ann", "scrypt$h", guest=False)


def test_register_a_guest() -> None:
    (event,) = decide_account(None, Register("p-2", "guest-a1b2c3", "", guest=True))
    assert evolve_account(None, event) == Account("p-2", "guest-a1b2c3", "", guest=True)


def test_a_taken_name_is_refused() -> None:
    ann = Account("p-1", "Ann", "scrypt$h", guest=False)
    with pytest.raises(LobbyError) as info:
        decide_account(ann, Register("p-9", "ANN", "scrypt$other", guest=False))
    assert info.value.reason is Reason.NAME_TAKEN
    assert "'ANN'" in info.value.message
    assert "taken" in info.value.message
