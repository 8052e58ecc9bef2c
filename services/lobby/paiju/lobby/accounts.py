"""Accounts: names, passwords hashed with scrypt, guests — each account an aggregate of the LOBBY stream.

An account's subject is a key derived from its name folded to lower case, so registering a name is an
append at position 0 of that subject: of two players racing for one name exactly one wins. Passwords are
hashed with scrypt (Python's `hashlib.scrypt`, a slow memory-hard KDF) with a random salt per account.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import unicodedata
from dataclasses import dataclass

from paiju.lobby.table import LobbyError
from paiju.text import has_control

SCRYPT_N = 2**14
SCRYPT_R = 8
SCRYPT_P = 1
MIN_PASSWORD = 10
COMMON_PASSWORDS = frozenset(
    {
        "password",
        "password1",
        "passw0rd",
        "1234567890",
        "0123456789",
        "12345678910",
        "qwertyuiop",
        "iloveyou12",
        "letmein123",
        "1q2w3e4r5t",
        "abcdefghij",
        "football12",
        "baseball12",
        "welcome123",
        "admin12345",
        "zalioujia1",
        "tractor123",
    }
)


@dataclass(frozen=True, slots=True)
class AccountRegistered:
    player_id: str
    name: str
    password_hash: str
    guest: bool


@dataclass(frozen=True, slots=True)
class Account:
    player_id: str
    name: str
    password_hash: str
    guest: bool


def fold(name: str) -> str:
    """The form of a name two accounts may not share (Unicode-normalised, case-folded, trimmed)."""
    # normalise, fold, normalise again: folding can undo a normalisation (ß + accent -> ss + accent)
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold()).strip()


def account_key(name: str) -> str:
    """The account's aggregate id (a subject token: no dots or spaces, whatever the name's script)."""
    return "account-" + hashlib.sha256(fold(name).encode()).hexdigest()[:32]


def check_name(name: str) -> str:
    """The name as it will be shown, or `LobbyError` saying what is wrong with it."""
    shown = unicodedata.normalize("NFKC", name).strip()
    if not 2 <= len(shown) <= 32:
        raise LobbyError("invalid", "a name has 2..32 characters")
    if has_control(shown):
        raise LobbyError("invalid", "a name has no control characters")
    if fold(shown).startswith(("guest-", "bot-")):
        raise LobbyError("invalid", "names starting with guest- or bot- are the lobby's")
    return shown


def check_password(name: str, password: str) -> None:
    """`LobbyError` when the password is empty or weak: short, common, the name, one repeated character."""
    if not password:
        raise LobbyError("invalid", "a password is required")
    if len(password) < MIN_PASSWORD:
        raise LobbyError("invalid", f"a password has at least {MIN_PASSWORD} characters")
    lowered = password.casefold()
    if lowered in COMMON_PASSWORDS or fold(name) in lowered or len(set(password)) < 4:
        raise LobbyError("invalid", "this password is too easy to guess: choose a less common one")


def hash_password(password: str) -> str:
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P, maxmem=64 * 1024**2)
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${salt.hex()}${digest.hex()}"


def password_matches(password: str, stored: str) -> bool:
    try:
        kind, n, r, p, salt, digest = stored.split("$")
        if kind != "scrypt":
            return False
        found = hashlib.scrypt(
            password.encode(), salt=bytes.fromhex(salt), n=int(n), r=int(r), p=int(p), maxmem=64 * 1024**2
        )
        return hmac.compare_digest(found.hex(), digest)
    except (ValueError, TypeError, OverflowError):  # a damaged stored hash (or a guest's empty one) matches nothing
        return False


def new_player_id() -> str:
    return "p-" + secrets.token_hex(8)


def guest_name() -> str:
    return "guest-" + secrets.token_hex(3)


@dataclass(frozen=True, slots=True)
class Register:
    """Register an account (the name and password checked, the password hashed, by the caller)."""

    player_id: str
    name: str
    password_hash: str
    guest: bool


def decide_account(account: Account | None, command: Register) -> list[AccountRegistered]:
    if account is not None:
        raise LobbyError("already_exists", f"the name {command.name!r} is taken")
    return [AccountRegistered(command.player_id, command.name, command.password_hash, command.guest)]


def evolve_account(account: Account | None, event: AccountRegistered) -> Account:
    return Account(event.player_id, event.name, event.password_hash, event.guest)
