"""Accounts (`paiju.lobby.accounts`): name and password checks, scrypt hashing, and the account key that folds
case and Unicode forms together. Pure: no store."""

from __future__ import annotations

import hashlib
import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paiju.lobby.accounts import (
    COMMON_PASSWORDS,
    MIN_PASSWORD,
    SCRYPT_N,
    SCRYPT_P,
    SCRYPT_R,
    Account,
    AccountRegistered,
    Register,
    account_key,
    check_name,
    check_password,
    decide_account,
    evolve_account,
    fold,
    guest_name,
    hash_password,
    new_player_id,
    password_matches,
)
from paiju.lobby.table import LobbyError

KEY = re.compile(r"account-[0-9a-f]{32}")
PASSWORD = "correct horse battery"


def invalid(reason: str) -> pytest.RaisesExc[LobbyError]:
    return pytest.raises(LobbyError, match=re.escape(reason))


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
    assert info.value.kind == "invalid"


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
    assert info.value.kind == "invalid"


@pytest.mark.parametrize(
    "name", ["guest-1", "Guest-Ann", "GUEST-x", "bot-1", "Bot-t1-0", "ＢＯＴ－7", "  guest-ann", "guest-"]
)
def test_check_name_refuses_the_lobbys_prefixes(name: str) -> None:
    with invalid("guest- or bot-") as info:
        check_name(name)
    assert info.value.kind == "invalid"


def test_guest_names_and_player_ids() -> None:
    name = guest_name()
    assert re.fullmatch(r"guest-[0-9a-f]{6}", name)
    with invalid("guest- or bot-"):
        check_name(name)  # nobody registers a guest's name
    assert re.fullmatch(r"p-[0-9a-f]{16}", new_player_id())
    assert len({new_player_id() for _ in range(50)}) == 50
    assert len({guest_name() for _ in range(20)}) > 1


# --- passwords ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "password", ["x7Gq2mZr9p", "correct horse battery", "abcdabcdab", "密码很长很长的一句话啊", "Q" * 9 + "abc"]
)
def test_check_password_accepts_a_strong_password(password: str) -> None:
    check_password("Ann", password)


def test_check_password_refuses_an_empty_one() -> None:
    with invalid("a password is required") as info:
        check_password("Ann", "")
    assert info.value.kind == "invalid"


@pytest.mark.parametrize("password", ["x", "x7Gq2mZr9", "密码很长很长的一句话"[:9]])
def test_check_password_refuses_a_short_one(password: str) -> None:
    assert len(password) < MIN_PASSWORD
    with invalid(f"at least {MIN_PASSWORD} characters") as info:
        check_password("Ann", password)
    assert info.value.kind == "invalid"


@pytest.mark.parametrize("password", [*sorted(COMMON_PASSWORDS), "QWERTYUIOP", "Password1", "Welcome123"])
def test_check_password_refuses_a_common_one(password: str) -> None:
    if len(password) < MIN_PASSWORD:
        with invalid("at least"):
            check_password("Ann", password)
        return
    with invalid("too easy to guess") as info:
        check_password("Ann", password)
    assert info.value.kind == "invalid"


@pytest.mark.parametrize(
    ("name", "password"),
    [
        ("Annabel", "Annabel-2024!"),
        ("Annabel", "my ANNABEL pw"),
        ("  Annabel ", "xxannabelxx"),
        ("Ｍａｘｉｍｕｓ", "maximus-9876"),  # the name folded (full-width to ASCII)
        ("Straße", "STRASSE-1234"),  # folded: ß is ss
    ],
)
def test_check_password_refuses_one_holding_the_name(name: str, password: str) -> None:
    with invalid("too easy to guess"):
        check_password(name, password)


@pytest.mark.parametrize("password", ["aaaaaaaaaaaa", "abababababab", "abcabcabcabc", "\u4e00\u4e8c" * 6])
def test_check_password_refuses_too_few_different_characters(password: str) -> None:
    with invalid("too easy to guess"):
        check_password("Ann", password)


def test_check_password_boundaries() -> None:
    check_password("Ann", "x7Gq2mZr9p")  # exactly MIN_PASSWORD
    check_password("Ann", "abcd" * 3)  # exactly four different characters
    with invalid("too easy"):
        check_password("Ann", "abc" * 4)


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
    """BUG (still): the parameters and salt are sound, so ``hashlib.scrypt`` succeeds; the digest holds
    non-ASCII characters, and ``hmac.compare_digest(found.hex(), digest)`` raises TypeError ("comparing
    strings with non-ASCII characters is not supported"). It runs after the ``try``, so catching TypeError
    there does not help: the login still fails with an internal error instead of "wrong password"."""
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


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8", categories=["L", "M", "N", "Zs", "P"]), max_size=20))
def test_fold_is_stable_and_normalised(name: str) -> None:
    folded = fold(name)
    assert fold(folded) == folded
    assert unicodedata.is_normalized("NFKC", folded)
    assert fold(name.casefold()) == folded
    assert fold(unicodedata.normalize("NFD", name)) == folded


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8", categories=["L", "N", "Zs", "P"]), max_size=40))
def test_account_key_ignores_padding_and_is_stable(name: str) -> None:
    key = account_key(name)
    assert KEY.fullmatch(key)
    assert account_key(name) == key
    assert account_key(f" {name}\u3000") == key
    assert account_key(unicodedata.normalize("NFD", name)) == key
    assert account_key(unicodedata.normalize("NFKC", name)) == key


@settings(max_examples=200, deadline=None)
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
    assert info.value.kind == "already_exists"
    assert "'ANN'" in info.value.reason
    assert "taken" in info.value.reason
