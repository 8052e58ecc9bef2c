"""Bearer tokens: who a caller is, who vouches for it, and for how long.

A token is a JWT (RFC 7519) signed with Ed25519 (``alg: EdDSA``): anyone can check it with the issuer's public key,
only the issuer can make one. Its claims: ``sub`` (the player, bot seat or service), ``role``, ``game`` and ``seat``
(player and spectator tokens of one game), ``iss`` (the issuer), ``iat`` and ``exp`` (Unix seconds). The header's
``kid`` names the issuer's key: ``<issuer>.<version>`` (e.g. ``lobby.1``), so keys can be rotated.

Each issuer holds its own private key and may vouch for some roles only (`ROLES`):

- **lobby** — sessions (role player, no game), game tokens (a player at a seat, a spectator of one game) and its
  own service identity for the engine;
- **bots** — a bot runner's own identity (role bot_runner), to lease bot seats from the lobby; the seats' tokens
  come from the lobby;
- **web** — the web view's own identity (role web), which vouches to the lobby for the address of the browser a call
  is made for (`paiju.platform.edge`, "client addresses"), so that the lobby's per-address limits count browsers,
  not the web view; it grants nothing else;
- **admin** — operators, referees and analysts (``paiju token`` with the admin key, kept off the servers).

So a bot runner's key cannot make an admin token, and no service but the lobby can make a player's. Every
service trusts the public keys of a JWKS file (RFC 7517; `Trust`), and refuses a token whose ``kid`` it does not
know, whose signature or claims do not hold, whose role its issuer may not grant, or that has expired.

Each token names its audience (claim ``aud``, `Audience`): the services it is for — a session every service (the
engine takes it for the public replay of an ended game only), a game token the engine, a bot runner's the lobby —
and each service's verifier refuses a token meant for others only (a token without an audience, issued before tokens
named one, is accepted until it expires). Lifetimes are capped per role
(`MAX_SECONDS`: 15 minutes for sessions and game tokens, 5 for services' own — the web view's too —, 12 hours for
operators'): no issuer
mints a longer one and no verifier accepts one.

A client renews a session with ``LobbyService.RenewSession`` and a game token with ``JoinGame``; a session revoked by
the lobby cannot be renewed, and no call is accepted with a token past its lifetime. A game token carries the
generation of the session it was minted under (claim ``gen``), so a service that knows the account's revocations
(`Revocations`) refuses it with its session. A stream (Watch, WatchTable) is authorised when it opens and is not cut
when its token expires or its session is revoked later: a client reconnecting needs a valid token.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from google.protobuf.message import DecodeError
from jwt.algorithms import OKPAlgorithm

from paiju.platform.errors import Reason, Refused
from paiju.platform.settings import SIGNING_KEY, SIGNING_KEY_ID, TRUSTED_KEYS, Settings, SettingsError
from paiju.v1 import lobby_events_pb2

SESSION_SECONDS = 15 * 60
"""A lobby session's lifetime: renew it (RenewSession) before it ends."""
GAME_TOKEN_SECONDS = 15 * 60
"""A game token's lifetime: get a fresh one with JoinGame."""
SERVICE_TOKEN_SECONDS = 5 * 60
"""A service's own token (the lobby to the engine, a bot runner to the lobby), minted afresh before it ends."""
OPERATOR_TOKEN_SECONDS = 12 * 3600
"""An operator's token (admin, referee, analyst, from ``paiju token``): a working day at most."""
KEYS_VARIABLE = TRUSTED_KEYS.name
SIGNING_KEY_VARIABLE = SIGNING_KEY.name
SIGNING_KEY_ID_VARIABLE = SIGNING_KEY_ID.name
ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")
"""The grammar of the ids a token names (its subject, its game): the contract's `paiju.v1.id`."""
MAX_SEAT = 5
LEEWAY_SECONDS = 5
"""Clock skew tolerated between machines (a token issued a few seconds "in the future" is still valid)."""


class Role(StrEnum):
    PLAYER = "player"  # a person (or a bot seat) at one seat of one game; without a game: a lobby session
    SPECTATOR = "spectator"  # public information of one game
    ANALYST = "analyst"  # full replays of any game
    REFEREE = "referee"  # referee commands (tractor §11), tournaments
    SERVICE = "service"  # service to service: creates games, changes seats, system commands
    ADMIN = "admin"
    BOT_RUNNER = "bot_runner"  # leases bot seats from the lobby
    WEB = "web"  # the web view: vouches for the address of the browser a lobby call is made for, nothing else


class Issuer(StrEnum):
    LOBBY = "lobby"
    BOTS = "bots"
    ADMIN = "admin"
    WEB = "web"


ROLES: dict[Issuer, frozenset[Role]] = {
    Issuer.LOBBY: frozenset({Role.PLAYER, Role.SPECTATOR, Role.SERVICE}),
    Issuer.BOTS: frozenset({Role.BOT_RUNNER}),
    Issuer.ADMIN: frozenset({Role.ADMIN, Role.REFEREE, Role.ANALYST}),
    Issuer.WEB: frozenset({Role.WEB}),
}
"""The roles each issuer may vouch for."""
GAME_ROLES = frozenset({Role.PLAYER, Role.SPECTATOR})
"""The roles whose tokens may name a game (and a player's, a seat): the lobby's game tokens."""
MAX_SECONDS: dict[Role, int] = {
    Role.PLAYER: max(SESSION_SECONDS, GAME_TOKEN_SECONDS),
    Role.SPECTATOR: GAME_TOKEN_SECONDS,
    Role.SERVICE: SERVICE_TOKEN_SECONDS,
    Role.BOT_RUNNER: SERVICE_TOKEN_SECONDS,
    Role.WEB: SERVICE_TOKEN_SECONDS,
    Role.ADMIN: OPERATOR_TOKEN_SECONDS,
    Role.REFEREE: OPERATOR_TOKEN_SECONDS,
    Role.ANALYST: OPERATOR_TOKEN_SECONDS,
}
"""The longest a token of each role may live: sessions and game tokens 15 minutes, services', bot runners' and the web
view's own tokens 5 minutes, operators' 12 hours. No issuer mints a longer one, and every verifier refuses one that
was issued for longer or still has longer to live (whoever signed it)."""


class Audience(StrEnum):
    """The service a token is for (claim ``aud``): a verifier refuses a token that names other services only."""

    ENGINE = "engine"
    LOBBY = "lobby"
    SCORING = "scoring"


SESSION_AUDIENCE = (Audience.LOBBY, Audience.SCORING, Audience.ENGINE)
"""A lobby session is for the lobby, for scoring (a player registers a team, confirms a sheet) and for the engine,
which takes it only where any token will do (the replay of an ended game, whose record is public)."""
GAME_AUDIENCE = (Audience.ENGINE,)
"""A game token (a seat, a spectator's view) and the lobby's service token are for the engine."""
EVERY_SERVICE = tuple(Audience)
"""An operator's token, unless ``paiju token --audience`` narrows it."""


def default_audience(role: Role, game: str | None = None) -> tuple[Audience, ...]:
    """The services a token of ``role`` is for when nothing narrower is asked: an operator's every service, a session
    every service, a game token and a service's the engine, a bot runner's and the web view's the lobby."""
    if role in (Role.ADMIN, Role.REFEREE, Role.ANALYST):
        return EVERY_SERVICE
    if role in (Role.BOT_RUNNER, Role.WEB):
        return (Audience.LOBBY,)
    if role is Role.PLAYER and game is None:
        return SESSION_AUDIENCE
    return GAME_AUDIENCE


@dataclass(frozen=True, slots=True)
class Identity:
    subject: str
    role: Role
    game: str | None = None
    seat: int | None = None
    expires: int = 0
    issued: int = 0
    issuer: str = ""
    generation: int = 0
    """A lobby session's generation (claim ``gen``): the account's count of revocations when it was issued; a session
    of an earlier generation is revoked. A game token carries its session's, so it is revoked with it."""
    audience: tuple[str, ...] = ()
    """The services the token is for (claim ``aud``); empty only in tokens issued before tokens named their
    audience, accepted by every service until they expire."""


def issuer_of(key_id: str) -> Issuer:
    name = key_id.partition(".")[0]
    try:
        return Issuer(name)
    except ValueError:
        issuers = [i.value for i in Issuer]
        raise ValueError(f"a key id is <issuer>.<version> with an issuer of {issuers}: {key_id!r}") from None


class Signer:
    """Mints the tokens of one issuer with its private key."""

    def __init__(self, key: Ed25519PrivateKey, key_id: str) -> None:
        self.key_id = key_id
        self.issuer = issuer_of(key_id)
        self._key = key

    def mint(self, identity: Identity) -> str:
        """A signed token for ``identity`` (its ``expires`` and ``issued`` as given)."""
        if identity.role not in ROLES[self.issuer]:
            raise ValueError(f"the {self.issuer.value} key does not vouch for role {identity.role.value}")
        problem = _odd_claims(identity) or _too_long(identity)
        if problem:
            raise ValueError(problem)
        claims: dict[str, Any] = {
            "sub": identity.subject,
            "role": identity.role.value,
            "iss": self.issuer.value,
            "iat": identity.issued,
            "exp": identity.expires,
        }
        if identity.game is not None:
            claims["game"] = identity.game
        if identity.seat is not None:
            claims["seat"] = identity.seat
        if identity.generation:
            claims["gen"] = identity.generation
        if identity.audience:
            claims["aud"] = list(identity.audience)
        return jwt.encode(claims, self._key, algorithm="EdDSA", headers={"kid": self.key_id})

    def public_key(self) -> Ed25519PublicKey:
        return self._key.public_key()

    def private_pem(self) -> bytes:
        """The private key as PEM (PKCS #8), to store it where its process reads it."""
        return self._key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )


def mint(identity: Identity, signer: Signer) -> str:
    """``signer.mint(identity)``."""
    return signer.mint(identity)


def public_jwk(key: Ed25519PublicKey, key_id: str) -> dict[str, Any]:
    jwk: dict[str, Any] = json.loads(OKPAlgorithm.to_jwk(key))
    jwk.update(kid=key_id, use="sig", alg="EdDSA")
    return jwk


@dataclass(frozen=True)
class Trust:
    """The public keys a service trusts, by key id."""

    keys: Mapping[str, Ed25519PublicKey]

    @classmethod
    def from_jwks(cls, text: str) -> Trust:
        document = json.loads(text)
        keys: dict[str, Ed25519PublicKey] = {}
        for jwk in document.get("keys", []):
            key = OKPAlgorithm.from_jwk(jwk)
            if not isinstance(key, Ed25519PublicKey):
                raise ValueError(f"key {jwk.get('kid')!r} is not an Ed25519 public key")
            issuer_of(str(jwk["kid"]))
            keys[str(jwk["kid"])] = key
        if not keys:
            raise ValueError("the JWKS holds no key")
        return cls(keys)

    @classmethod
    def of(cls, signers: Iterable[Signer]) -> Trust:
        """The trust of these signers' public keys."""
        return cls({s.key_id: s.public_key() for s in signers})

    def jwks(self) -> str:
        return json.dumps({"keys": [public_jwk(key, kid) for kid, key in sorted(self.keys.items())]}, indent=2)


VERIFIED_TOKENS = 10_000
"""Tokens whose signature and claims a verifier remembers having checked (a client sends the same token with every
call: its signature is checked once, not at every call)."""
SWEEP_SECONDS = 60
"""How often a verifier forgets the tokens it remembers that have expired (`Verifier`)."""


class Verifier:
    """Who a call's ``authorization: Bearer <token>`` metadata says the caller is (the edge's authenticator).
    Expiry is checked against the injected clock on every call; a token's signature and claims once, while it stays
    among the last `VERIFIED_TOKENS` verified (remembered by the header as sent, so a call that sends a token seen
    before costs one lookup; the oldest is forgotten first). A token that has expired is forgotten within
    `SWEEP_SECONDS`: what a verifier holds is the tokens alive now, not the last ten thousand (a bot seat's token
    lives about a minute, so a busy engine would otherwise fill the whole bound, slowly, over hours)."""

    def __init__(self, trust: Trust, now: Callable[[], int], audience: str | None = None) -> None:
        self._trust = trust
        self._now = now
        self._audience = audience
        """The service this verifier checks tokens for: a token naming other services only is refused."""
        self._verified: dict[str, Identity] = {}
        self._sweep_at = 0

    def identify(self, metadata: Iterable[tuple[str, Any]] | None) -> Identity:
        header: Any = ""
        for key, value in metadata or ():
            if key == "authorization":
                header = value  # the last one, if sent twice
        identity = self._verified.get(header) if isinstance(header, str) else None
        if identity is None:
            header = str(header)
            if not header.startswith("Bearer "):
                raise Refused(Reason.TOKEN_MISSING, "send 'authorization: Bearer <token>'")
            identity = self._remember(header, self._signed(header.removeprefix("Bearer ").strip()))
        return self._timely(identity)

    def verify(self, token: str) -> Identity:
        """The identity a token carries, or `Refused` (TOKEN_INVALID, TOKEN_EXPIRED)."""
        identity = self._verified.get(token)
        if identity is None:
            identity = self._remember(token, self._signed(token))
        return self._timely(identity)

    def _remember(self, key: str, identity: Identity) -> Identity:
        now = self._now()
        if now >= self._sweep_at:  # forget the tokens that expired (refused at their next call anyway)
            self._verified = {k: i for k, i in self._verified.items() if i.expires > now}
            self._sweep_at = now + SWEEP_SECONDS
        verified = self._verified
        verified[key] = identity
        if len(verified) > VERIFIED_TOKENS:
            del verified[next(iter(verified))]
        return identity

    def __len__(self) -> int:
        """How many verified tokens are remembered."""
        return len(self._verified)

    def _timely(self, identity: Identity) -> Identity:
        """``identity``, unless its token has expired or is from the future."""
        now = self._now()
        if identity.expires <= now:
            raise Refused(Reason.TOKEN_EXPIRED, "the token has expired: renew it (RenewSession, or JoinGame again)")
        if identity.issued > now + LEEWAY_SECONDS:
            raise _invalid("the token was issued in the future")
        longest = MAX_SECONDS[identity.role]
        if identity.expires - now > longest + LEEWAY_SECONDS:
            raise Refused(
                Reason.TOKEN_INVALID,
                f"a {identity.role.value} token lives {longest} s at most: this one has longer to live",
                {"max_seconds": longest},
            )
        return identity

    def _signed(self, token: str) -> Identity:
        """The identity of a token whose signature, issuer and claims hold (its times are checked by the caller)."""
        try:
            key_id = str(jwt.get_unverified_header(token).get("kid", ""))
        except jwt.PyJWTError:
            raise _invalid("the token is not a JWT") from None
        key = self._trust.keys.get(key_id)
        if key is None:
            raise _invalid("the token is signed with a key this deployment does not trust")
        try:
            claims = jwt.decode(
                token,
                key,
                algorithms=["EdDSA"],
                options={
                    "verify_exp": False,
                    "verify_iat": False,
                    "verify_aud": False,
                    "require": ["sub", "role", "iss", "exp", "iat"],
                },
            )
            identity = Identity(
                subject=str(claims["sub"]),
                role=Role(claims["role"]),
                game=_optional_str(claims.get("game")),
                seat=_optional_int(claims.get("seat")),
                expires=int(claims["exp"]),
                issued=int(claims["iat"]),
                issuer=str(claims["iss"]),
                generation=_optional_int(claims.get("gen")) or 0,
                audience=_audience(claims.get("aud")),
            )
        except (jwt.PyJWTError, ValueError, KeyError, TypeError):
            raise _invalid("the token's signature or claims do not hold") from None
        if self._audience is not None and identity.audience and self._audience not in identity.audience:
            raise Refused(
                Reason.TOKEN_INVALID,
                f"this token is for {', '.join(identity.audience)}, not for the {self._audience}",
                {"audience": ",".join(identity.audience), "service": self._audience},
            )
        too_long = _too_long(identity)
        if too_long:
            raise Refused(Reason.TOKEN_INVALID, too_long, {"max_seconds": MAX_SECONDS[identity.role]})
        issuer = issuer_of(key_id)
        if identity.issuer != issuer.value or identity.role not in ROLES[issuer]:
            raise _invalid(f"the {issuer.value} key does not vouch for a {identity.role.value} token")
        if _odd_claims(identity):
            raise _invalid("the token's claims are not the claims of a Paiju token")
        return identity


def _odd_claims(identity: Identity) -> str:
    """What is wrong with an identity's claims (``""``: nothing): a subject or game that is not an id, a seat out
    of every game's range."""
    if not ID.fullmatch(identity.subject):
        return f"a token's subject is an id, not {identity.subject[:40]!r}"
    if identity.game is not None and not ID.fullmatch(identity.game):
        return f"a token's game is an id, not {identity.game[:40]!r}"
    if identity.seat is not None and not 0 <= identity.seat <= MAX_SEAT:
        return f"a token's seat is 0..{MAX_SEAT}, not {identity.seat}"
    if identity.role not in GAME_ROLES and (identity.game is not None or identity.seat is not None):
        return f"a {identity.role.value} token names no game and no seat"
    if identity.role is Role.SPECTATOR and (identity.game is None or identity.seat is not None):
        return "a spectator token names its game and no seat"
    if identity.seat is not None and identity.game is None:
        return "a token with a seat names its game"
    return ""


REMEMBERED_ACCOUNTS = 100_000
"""Accounts whose session generation a `Revocations` keeps in memory (one more is read from the stream once)."""


class Revocations:
    """Which lobby sessions are revoked, for a service other than the lobby (the engine, scoring): per account the
    generation of its sessions, as the lobby's stream records it (``LobbySessionsRevoked``).

    An account's generation is read from its subject of the LOBBY stream the first time one of its tokens is seen,
    and kept current by the store's feed (each revocation reaches every service as it is recorded: nothing is asked
    in a loop). A session carries the generation it was issued in, and a game token the generation of the session
    it was minted under (claim ``gen``): a token of an earlier generation than the account's was issued before the
    account's sessions were revoked, and is refused (TOKEN_REVOKED) — so after Logout neither the session nor the
    game tokens minted under it are accepted anywhere."""

    def __init__(self, store: Any, remembered: int = REMEMBERED_ACCOUNTS) -> None:
        self._store = store
        self._remembered = remembered
        self._generations: dict[str, int] = {}
        self._following = False

    @property
    def following(self) -> bool:
        """Whether the revocations are heard (`follow` returned)."""
        return self._following

    async def follow(self) -> None:
        """Start hearing the stream's revocations (once the stream exists: the lobby makes it). Until then each
        token's account is read from the stream (none revoked while there is no stream) and nothing is kept, so no
        revocation recorded before the feed begins is missed."""
        await self._store.follow(self._heard)
        self._following = True

    def _heard(self, recorded: Any) -> None:
        if not recorded.aggregate.startswith(ACCOUNT_PREFIX):
            return
        generation = _revoked_generation(recorded.data)
        if generation is not None:
            self._keep(recorded.aggregate, max(generation, self._generations.get(recorded.aggregate, 0)))

    def _keep(self, account: str, generation: int) -> None:
        generations = self._generations
        generations.pop(account, None)
        generations[account] = generation
        if len(generations) > self._remembered:
            del generations[next(iter(generations))]

    async def generation(self, account: str) -> int:
        """The generation of ``account``'s sessions now (0: never revoked)."""
        known = self._generations.get(account)
        if known is not None:
            return known
        found = 0
        for recorded in await self._store.load(account):
            found = max(found, _revoked_generation(recorded.data) or 0)
        found = max(found, self._generations.get(account, 0))  # a revocation the feed brought meanwhile
        if self._following:
            self._keep(account, found)
        return found

    async def check(self, identity: Identity) -> Identity:
        """``identity``, unless it is a lobby token (a session, a seat, a spectator's view) of an account whose
        sessions were revoked after it was issued: `Refused` (TOKEN_REVOKED)."""
        if identity.issuer != Issuer.LOBBY.value or identity.role not in GAME_ROLES:
            return identity
        if not identity.subject.startswith(ACCOUNT_PREFIX):
            return identity  # a bot's seat
        if identity.generation < await self.generation(identity.subject):
            raise Refused(Reason.TOKEN_REVOKED, "this token's session was revoked (signed out): sign in again (Login)")
        return identity


ACCOUNT_PREFIX = "account-"
"""The subjects of the lobby's accounts on its stream (and the player ids of accounts)."""


def _revoked_generation(data: bytes) -> int | None:
    """The generation a LOBBY event sets, when it is a revocation of sessions."""
    try:
        envelope = lobby_events_pb2.LobbyEnvelope.FromString(data)
    except DecodeError:
        return None
    if envelope.event.WhichOneof("event") != "sessions_revoked":
        return None
    return int(envelope.event.sessions_revoked.generation)


def _too_long(identity: Identity) -> str:
    """What is wrong with an identity's lifetime (``""``: nothing): issued for longer than its role's `MAX_SECONDS`
    (a token with no issue time is judged by the time it has left, when it is verified)."""
    longest = MAX_SECONDS[identity.role]
    if identity.issued and identity.expires - identity.issued > longest:
        return f"a {identity.role.value} token lives {longest} s at most, not {identity.expires - identity.issued} s"
    return ""


def _audience(value: Any) -> tuple[str, ...]:
    """The ``aud`` claim as a tuple of service names (RFC 7519: one string, or a list of strings)."""
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise TypeError("not an audience")
    return tuple(value)


def _invalid(message: str) -> Refused:
    return Refused(Reason.TOKEN_INVALID, message)


def _optional_str(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError("not a string")
    return value


def _optional_int(value: Any) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError("not an integer")
    return value


# --- keys on disk ---------------------------------------------------------------------------------------------


def load_signer(path: str | Path, key_id: str) -> Signer:
    """The signer of a PEM private key file."""
    key = serialization.load_pem_private_key(Path(path).read_bytes(), password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise ValueError(f"{path} is not an Ed25519 private key")
    return Signer(key, key_id)


def new_key(path: str | Path) -> None:
    """Write a new Ed25519 private key to ``path`` (PEM, PKCS #8, readable by its owner only); refuses to replace
    an existing file (`FileExistsError`)."""
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(pem)


def load_public_key(path: str | Path) -> Ed25519PublicKey:
    """The public key of a PEM file holding an Ed25519 private key or its public key."""
    data = Path(path).read_bytes()
    key: Any
    if b"PRIVATE KEY" in data:
        key = serialization.load_pem_private_key(data, password=None).public_key()
    else:
        key = serialization.load_pem_public_key(data)
    if not isinstance(key, Ed25519PublicKey):
        raise ValueError(f"{path} is not an Ed25519 key")
    return key


def load_trust(path: str | Path) -> Trust:
    return Trust.from_jwks(Path(path).read_text())


def signer_of(path: str, key_id: str) -> Signer:
    """The signer of the key file ``path`` (a process's `SIGNING_KEY`) with the id ``key_id``; `SettingsError`
    naming the variable when the file is not an Ed25519 key one can read."""
    try:
        return load_signer(path, key_id)
    except (OSError, ValueError) as e:
        raise SettingsError(f"{SIGNING_KEY_VARIABLE}: {e}") from None


def trust_of(path: str) -> Trust:
    """The trust of the JWKS file ``path`` (a service's `TRUSTED_KEYS`); `SettingsError` naming the variable when
    it cannot be read."""
    try:
        return load_trust(path)
    except (OSError, ValueError, KeyError) as e:
        raise SettingsError(f"{KEYS_VARIABLE}: {e}") from None


@dataclass(frozen=True)
class Signing(Settings):
    """The settings of a process that only signs (``paiju token``, with ``--key`` and ``--key-id``)."""

    key: str = SIGNING_KEY.but(option="--key").field()
    key_id: str = SIGNING_KEY_ID.but(option="--key-id").field()

    def signer(self) -> Signer:
        return signer_of(self.key, self.key_id)


def generate_keys(folder: Path, version: str = "1") -> dict[Issuer, Path]:
    """For development: a private key per issuer (``<issuer>.pem``, readable by its owner only) and ``keys.json``,
    the JWKS of their public keys; keys already there are kept. Returns each issuer's key file."""
    folder.mkdir(parents=True, exist_ok=True)
    files: dict[Issuer, Path] = {}
    signers = []
    for issuer in Issuer:
        path = folder / f"{issuer.value}.pem"
        if not path.exists():
            new_key(path)
        files[issuer] = path
        signers.append(load_signer(path, f"{issuer.value}.{version}"))
    (folder / "keys.json").write_text(Trust.of(signers).jwks() + "\n")
    return files
