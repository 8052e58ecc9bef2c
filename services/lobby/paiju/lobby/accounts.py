"""Accounts: names, passwords hashed with scrypt, guests — each account an aggregate of the LOBBY stream.

An account's subject is a key derived from its name folded to lower case (`account_key`), so registering a
name is an append at position 0 of that subject: of two players racing for one name exactly one wins.

Names that merely *look* alike (``Аlice`` with a Cyrillic А beside ``alice``, ``paypa1`` beside ``paypal``)
share a skeleton (Unicode UTS #39, `name_skeleton`). Registering a name first claims its skeleton — a tiny
aggregate of its own, `claim_key` (`ClaimName`, `NameClaimed`): an append at position 0 again, so of two
confusable names registered at once exactly one wins — and then registers the account. Names registered
before claims existed are found by the read model's accounts table (`paiju.lobby.readmodel`).

Passwords must be 10..128 characters and hard to guess: zxcvbn (a realistic strength estimator, with the name
and the site's own words as known inputs) must score them at least 3 of 4, and what is left of them without the
name too (`check_password`). They are hashed with scrypt
(Python's `hashlib.scrypt`, a slow memory-hard KDF) with a random salt per account. Logging in runs scrypt
exactly once whether or not the name exists (`login_matches`), so the answer's timing does not tell which
names are registered.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import secrets
import threading
import unicodedata
from dataclasses import dataclass

import icu  # PyICU ships no type information
from zxcvbn import zxcvbn

from paiju.lobby.table import LobbyError
from paiju.platform.errors import Reason
from paiju.platform.text import has_control

SCRYPT_N = 2**14
SCRYPT_R = 8
SCRYPT_P = 1
SCRYPT_MAXMEM = 64 * 1024**2
"""The most memory scrypt may use (the parameters above need 16 MiB; older or damaged hashes are bounded)."""

MIN_NAME = 2
MAX_NAME = 32
LOBBY_PREFIXES = ("guest-", "bot-", "cover-")
"""Names the lobby gives out itself (guests, bots, bots covering an absent player): nobody registers them."""

MIN_PASSWORD = 10
MAX_PASSWORD = 128
MIN_SCORE = 3
"""The lowest zxcvbn score (0..4) a password may have: 3 is "safely unguessable: moderate protection from an
offline slow-hash scenario" (about 10^8 guesses or more)."""
SCORED_CHARS = 32
"""How many of a password's first characters zxcvbn scores. Its l33t matcher tries every substitution of the
password's l33t characters (736 at most) against every substring, so its time grows with the square of the
length: a crafted 128-character password takes about 6 s, 32 characters under 0.6 s. A password is at least as
strong as its beginning, so one whose beginning scores well is strong; one whose strength only starts after its
first 32 characters is refused."""
SITE_WORDS = ("paiju", "zalioujia", "tractor", "拖拉机", "砸六家")
"""Words everyone associates with this site: zxcvbn counts them as easy to guess, like the player's name."""

_zxcvbn_lock = threading.Lock()
"""zxcvbn keeps the user inputs of the call in a module-level dictionary: two threads scoring at once would
score with each other's names."""
_spoof_checker = icu.SpoofChecker()


# --- events, commands, states ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AccountRegistered:
    """An account was registered (the password hash is empty for a guest)."""

    player_id: str
    name: str
    password_hash: str
    guest: bool


@dataclass(frozen=True, slots=True)
class SessionsRevoked:
    """Every session of the account issued so far was revoked (signed out everywhere, or closed by an operator): the
    account's sessions are of ``generation`` from now on, and those of earlier generations are refused at once and
    cannot be renewed."""

    player_id: str
    generation: int


@dataclass(frozen=True, slots=True)
class Account:
    """A registered account, as its events left it."""

    player_id: str
    name: str
    password_hash: str
    guest: bool
    generation: int = 0
    """The generation of the account's sessions: the number of times its sessions were revoked (a session carries
    the generation it was issued in; one of an earlier generation is revoked)."""


@dataclass(frozen=True, slots=True)
class RevokeSessions:
    """Revoke every session of the account issued so far."""


@dataclass(frozen=True, slots=True)
class Register:
    """Register an account (the name and password checked, the password hashed, by the caller)."""

    player_id: str
    name: str
    password_hash: str
    guest: bool


@dataclass(frozen=True, slots=True)
class ClaimName:
    """Claim a name's skeleton for an account before registering it.

    ``player_id`` is the claiming account's id; the lobby's is the account key of the name (`account_key`), so a
    registration retried after a failure between its claim and its account finds the claim its own.
    """

    skeleton: str
    player_id: str
    name: str


@dataclass(frozen=True, slots=True)
class NameClaimed:
    """A name's skeleton was claimed for an account: no other account may register a name that looks the same."""

    skeleton: str
    player_id: str
    name: str


@dataclass(frozen=True, slots=True)
class NameClaim:
    """Who holds a skeleton, and the name they claimed it with."""

    skeleton: str
    player_id: str
    name: str


# --- names ----------------------------------------------------------------------------------------------


def fold(name: str) -> str:
    """The form of a name two accounts may not share (Unicode-normalised, case-folded, trimmed)."""
    # normalise, fold, normalise again: folding can undo a normalisation (ß + accent -> ss + accent)
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold()).strip()


def account_key(name: str) -> str:
    """The account's aggregate id (a subject token: no dots or spaces, whatever the name's script)."""
    return "account-" + hashlib.sha256(fold(name).encode()).hexdigest()[:32]


def name_skeleton(name: str) -> str:
    """What the name looks like: the UTS #39 skeleton (ICU's) of the case-folded NFKC name. Two names with one
    skeleton are confusable: ``Аlice`` (Cyrillic А), ``ALICE`` and ``alice``; ``paypa1`` and ``paypal``.

    Some of the skeleton's prototypes are capitals (``0`` and the Cherokee ``Ꭺ`` look like ``O`` and ``A``), which
    the name's folding has already turned to small letters elsewhere (``BOB`` is ``bob``): so the skeleton is
    folded and taken again until it no longer changes (at most three rounds for any name), and ``B0B`` looks
    like ``BOB`` too.
    """
    folded = fold(name)
    skeleton = str(_spoof_checker.getSkeleton(0, folded))
    for _ in range(8):
        again = fold(skeleton)
        if again == folded:
            break
        folded = again
        skeleton = str(_spoof_checker.getSkeleton(0, folded))
    return skeleton


def claim_key(name: str) -> str:
    """The aggregate id of the claim on the name's skeleton (a subject token, like `account_key`)."""
    return "name-" + hashlib.sha256(name_skeleton(name).encode()).hexdigest()[:32]


_PREFIX_SKELETONS = tuple(name_skeleton(prefix) for prefix in LOBBY_PREFIXES)
"""What the lobby's prefixes look like: a name that only looks like one of them is the lobby's too."""


RESERVED_WORDS = (
    "bot",
    "bots",
    "admin",
    "administrator",
    "referee",
    "moderator",
    "mod",
    "staff",
    "operator",
    "system",
    "support",
    "official",
    "root",
    "house",
    "dealer",
)
"""Words a name may not read as: the lobby's bots and guests, the staff, the house. A name is reserved when, its
digits, spaces and punctuation aside, it reads as one of these (``Bot 3``, ``Bot０``, ``ADMIN``, ``m0derator``)."""
RESERVED_PREFIX = "paiju"
"""The house's name: no name reads as one starting with it (``paiju``, ``Paiju-Referee``, ``ρaiju_team``)."""
_LEET = str.maketrans("013457", "oleast")


def _letters(text: str) -> str:
    return "".join(c for c in text if c.isalpha())


def _readings(name: str) -> set[str]:
    """What a name reads as, its letters only: its skeleton's letters, its skeleton without its digits, and its
    skeleton with digits read as the letters they stand for (``0`` o, ``1`` l, ``3`` e, ``4`` a, ``5`` s, ``7`` t),
    its trailing number aside (``b0t1`` reads as ``bot``)."""
    folded = fold(name)
    plain = "".join(c for c in folded if not unicodedata.category(c).startswith("N"))
    ascii_digits = "".join(str(unicodedata.digit(c, "")) if unicodedata.category(c) == "Nd" else c for c in folded)
    leet = ascii_digits.translate(_LEET)
    untrailed = ascii_digits.rstrip("0123456789 -_.").translate(_LEET)
    return {_letters(name_skeleton(form)) for form in (folded, plain, leet, untrailed)} - {""}


_RESERVED = {_letters(name_skeleton(word)): word for word in RESERVED_WORDS}
_RESERVED_PREFIX = _letters(name_skeleton(RESERVED_PREFIX))


def reserved_reading(name: str) -> str | None:
    """The reserved word ``name`` reads as (`RESERVED_WORDS`, or ``paiju`` for a name starting with it), or
    ``None``: what registration refuses (``NAME_RESERVED``) and what operators list among existing accounts."""
    for reading in sorted(_readings(name)):
        if reading in _RESERVED:
            return _RESERVED[reading]
        if reading.startswith(_RESERVED_PREFIX):
            return RESERVED_PREFIX
    return None


def check_name(name: str) -> str:
    """The name as it will be shown (NFKC, trimmed), or `LobbyError` (``NAME_INVALID``) saying what is wrong:
    not 2..32 characters, a control or format character, or a name of the lobby's (``guest-``, ``bot-``,
    ``cover-``, also when it only looks like one: ``gu℮st-1``); ``NAME_RESERVED`` when it reads as a bot's, the
    staff's or the house's (`reserved_reading`)."""
    shown = unicodedata.normalize("NFKC", name).strip()
    if not MIN_NAME <= len(shown) <= MAX_NAME:
        raise LobbyError(
            Reason.NAME_INVALID,
            f"a name has {MIN_NAME}..{MAX_NAME} characters",
            {"length": len(shown), "min_length": MIN_NAME, "max_length": MAX_NAME},
        )
    if has_control(shown):
        raise LobbyError(Reason.NAME_INVALID, "a name has no control characters")
    if fold(shown).startswith(LOBBY_PREFIXES) or name_skeleton(shown).startswith(_PREFIX_SKELETONS):
        raise LobbyError(Reason.NAME_INVALID, "names starting with guest-, bot- or cover- are the lobby's")
    word = reserved_reading(shown)
    if word is not None:
        raise LobbyError(
            Reason.NAME_RESERVED,
            f"the name {shown!r} reads as {word!r}: names of bots, of the staff and of the house are reserved, "
            "choose another",
            {"name": shown, "reads_as": word},
        )
    return shown


def name_confusable(name: str, existing: str) -> LobbyError:
    """The refusal of ``name`` because it looks like the ``existing`` name of another account."""
    return LobbyError(
        Reason.NAME_CONFUSABLE,
        f"the name {name!r} looks like an existing one ({existing!r}): choose another",
        {"name": name, "existing": existing},
    )


def guest_name() -> str:
    """A fresh guest's name (``guest-`` and eight hex digits)."""
    return "guest-" + secrets.token_hex(4)


def new_player_id() -> str:
    """A random player id (``p-`` and 16 hex digits)."""
    return "p-" + secrets.token_hex(8)


# --- passwords ------------------------------------------------------------------------------------------


def check_password(name: str, password: str) -> None:
    """`LobbyError` (``PASSWORD_WEAK``) when the password is not 10..128 characters, or is easy to guess: zxcvbn,
    knowing the name and the site's words, scores it below 3 (common passwords and their variants, keyboard
    rows, repeats, dates, the name with digits…), or scores what is left of it below 3 once the name is taken
    out (``Annabelle-is-me``: the name adds nothing an attacker does not know). The refusal's metadata carry
    zxcvbn's first ``suggestion``.

    The length is checked first, and only the first `SCORED_CHARS` characters are scored: zxcvbn is slow on
    long inputs. Takes up to a few hundred milliseconds of CPU for a crafted password: call it off the event
    loop (``asyncio.to_thread``) where that matters.
    """
    if not password:
        raise LobbyError(Reason.PASSWORD_WEAK, "a password is required", {"min_length": MIN_PASSWORD})
    if len(password) < MIN_PASSWORD:
        raise LobbyError(
            Reason.PASSWORD_WEAK,
            f"a password has at least {MIN_PASSWORD} characters",
            {"length": len(password), "min_length": MIN_PASSWORD},
        )
    if len(password) > MAX_PASSWORD:
        raise LobbyError(
            Reason.PASSWORD_WEAK,
            f"a password has at most {MAX_PASSWORD} characters",
            {"length": len(password), "max_length": MAX_PASSWORD},
        )
    score, warning, suggestions = _strength(name, password)
    if score >= MIN_SCORE:
        rest = _without_name(name, password)
        if rest is None:
            return
        score, _, suggestions = _strength(name, rest) if rest else (0, "", [])
        if score >= MIN_SCORE:
            return
        warning = "Passwords built on the name are easy to guess."
    metadata: dict[str, object] = {"score": score, "min_score": MIN_SCORE}
    if suggestions:
        metadata["suggestion"] = suggestions[0]
    if warning:
        metadata["warning"] = warning
    because = f" ({warning.rstrip('.')})" if warning else ""
    raise LobbyError(
        Reason.PASSWORD_WEAK,
        f"this password is too easy to guess{because}: choose a longer, less common one — a few unrelated words",
        metadata,
    )


def _strength(name: str, password: str) -> tuple[int, str, list[str]]:
    """zxcvbn's score (0..4), warning and suggestions for the first `SCORED_CHARS` characters of ``password``
    (not empty), with the name (as typed, folded, without its spaces and word by word) and the site's words as
    inputs an attacker knows."""
    folded = fold(name)
    words = folded.split()
    inputs = [name, folded, "".join(words), *words, *SITE_WORDS]
    with _zxcvbn_lock:
        result = zxcvbn(password[:SCORED_CHARS], user_inputs=inputs, max_length=SCORED_CHARS)
    feedback = result.get("feedback") or {}
    warning = str(feedback.get("warning") or "").strip()
    return int(result["score"]), warning, [str(s) for s in feedback.get("suggestions") or () if s]


def _without_name(name: str, password: str) -> str | None:
    """The password, normalised and case-folded, with every occurrence of the folded name (also without its
    spaces) taken out; ``None`` when the name is not in it."""
    folded = fold(name)
    forms = sorted({folded, "".join(folded.split())} - {""}, key=len, reverse=True)
    rest = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", password).casefold())
    if not any(form in rest for form in forms):
        return None
    for form in forms:
        rest = rest.replace(form, "")
    return rest


def hash_password(password: str) -> str:
    """The password's scrypt hash with a fresh random salt: ``scrypt$n$r$p$salt$digest`` (hex)."""
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P, maxmem=SCRYPT_MAXMEM)
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${salt.hex()}${digest.hex()}"


@dataclass(frozen=True, slots=True)
class _Hash:
    """A stored scrypt hash taken apart."""

    n: int
    r: int
    p: int
    salt: bytes
    digest: str


def _parsed(stored: str) -> _Hash | None:
    """The parts of a stored hash, or ``None`` when it is not one (a guest's empty hash, a damaged record)."""
    try:
        kind, n, r, p, salt, digest = stored.split("$")
        if kind != "scrypt" or not digest.isascii():
            return None
        return _Hash(int(n), int(r), int(p), bytes.fromhex(salt), digest)
    except ValueError:
        return None


def _verify(password: str, stored: _Hash) -> bool:
    """Whether scrypt of ``password`` gives the stored digest (one scrypt run; a damaged hash matches nothing)."""
    try:
        found = hashlib.scrypt(
            password.encode(), salt=stored.salt, n=stored.n, r=stored.r, p=stored.p, maxmem=SCRYPT_MAXMEM
        )
    except (ValueError, TypeError, OverflowError):  # parameters scrypt refuses (a damaged hash)
        return False
    return hmac.compare_digest(found.hex(), stored.digest)


def password_matches(password: str, stored: str) -> bool:
    """Whether ``password`` is the one ``stored`` was made from (a hash of another shape, a guest's empty one
    or a damaged one matches nothing). Reads the parameters from the hash, so raising the cost later keeps old
    hashes usable."""
    parsed = _parsed(stored)
    return parsed is not None and _verify(password, parsed)


def _dummy_hash() -> _Hash:
    """A hash of a random password with the current parameters."""
    parsed = _parsed(hash_password(secrets.token_urlsafe(24)))
    if parsed is None:
        raise RuntimeError("hash_password made a hash _parsed cannot read")
    return parsed


_DUMMY = _dummy_hash()
"""Made once at import: what a login for a name without a password is checked against, so that it costs one
scrypt run like any other."""


def login_matches(account: Account | None, password: str) -> bool:
    """Whether ``password`` signs in to ``account``: runs scrypt exactly once in every case, so that the time
    taken does not tell whether the name exists. With no account, a guest's, a damaged hash or a password
    longer than `MAX_PASSWORD`, scrypt runs against a fixed dummy hash and the answer is False."""
    stored = _parsed(account.password_hash) if account is not None and not account.guest else None
    if stored is None or len(password) > MAX_PASSWORD:
        _verify(password[:MAX_PASSWORD], _DUMMY)
        return False
    return _verify(password, stored)


# --- the aggregates -------------------------------------------------------------------------------------


def decide_account(
    account: Account | None, command: Register | RevokeSessions
) -> list[AccountRegistered | SessionsRevoked]:
    """Register the account, or `LobbyError` (``NAME_TAKEN``) when its name (folded) is already registered; revoke
    its sessions (nothing new when they were revoked at that time or later already)."""
    if isinstance(command, RevokeSessions):
        if account is None:
            raise LobbyError(Reason.PLAYER_NOT_FOUND, "there is no such account")
        return [SessionsRevoked(account.player_id, account.generation + 1)]
    if account is not None:
        raise LobbyError(Reason.NAME_TAKEN, f"the name {command.name!r} is taken", {"name": command.name})
    return [AccountRegistered(command.player_id, command.name, command.password_hash, command.guest)]


def evolve_account(account: Account | None, event: AccountRegistered | SessionsRevoked) -> Account:
    """The account its registration made, or with its sessions revoked."""
    if isinstance(event, SessionsRevoked):
        assert account is not None
        return dataclasses.replace(account, generation=event.generation)
    return Account(event.player_id, event.name, event.password_hash, event.guest)


def decide_claim(claim: NameClaim | None, command: ClaimName) -> list[NameClaimed]:
    """Claim the skeleton; nothing new when the same account claims it again (a retried registration);
    `LobbyError` (``NAME_CONFUSABLE``) when another account holds it."""
    if claim is None:
        return [NameClaimed(command.skeleton, command.player_id, command.name)]
    if claim.player_id == command.player_id:
        return []
    raise name_confusable(command.name, claim.name)


def evolve_claim(claim: NameClaim | None, event: NameClaimed) -> NameClaim:
    """The claim its event made."""
    return NameClaim(event.skeleton, event.player_id, event.name)
