"""Bearer tokens: Ed25519-signed JWTs; each issuer vouches for its own roles only; forged, tampered, foreign,
expired and premature tokens refused with the contract's reasons; keys on disk for processes and ``paiju token``."""

from __future__ import annotations

import base64
import json
import stat
import time
from pathlib import Path
from typing import Any, cast

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from paiju.cli import main
from paiju.platform.errors import Reason, Refused
from paiju.platform.tokens import (
    GAME_AUDIENCE,
    MAX_SECONDS,
    SESSION_AUDIENCE,
    SWEEP_SECONDS,
    Audience,
    Identity,
    Issuer,
    Role,
    Signer,
    Trust,
    Verifier,
    default_audience,
    generate_keys,
    load_trust,
)

from ..support.credentials import ADMIN, BOTS, LOBBY, TRUST, forged_claims

NOW = 1_800_000_000


def verifier(now: int = NOW) -> Verifier:
    return Verifier(TRUST, lambda: now)


def refused(token: str, now: int = NOW) -> Reason:
    with pytest.raises(Refused) as info:
        verifier(now).verify(token)
    return info.value.reason


def test_a_token_carries_its_identity_and_its_issuer() -> None:
    player = Identity("alice", Role.PLAYER, game="g1", seat=3, expires=NOW + 60, issued=NOW)
    assert verifier().verify(LOBBY.mint(player)) == Identity(
        "alice", Role.PLAYER, "g1", 3, NOW + 60, NOW, issuer="lobby"
    )
    session = Identity("bob", Role.PLAYER, expires=NOW + 60, issued=NOW)
    assert verifier().verify(LOBBY.mint(session)).game is None
    header = jwt.get_unverified_header(LOBBY.mint(session))
    assert (header["alg"], header["kid"]) == ("EdDSA", "lobby.1")


def test_each_issuer_vouches_for_its_own_roles_only() -> None:
    admin = Identity("mallory", Role.ADMIN, expires=NOW + 60, issued=NOW)
    with pytest.raises(ValueError, match="does not vouch"):
        BOTS.mint(admin)
    with pytest.raises(ValueError, match="does not vouch"):
        LOBBY.mint(admin)
    assert verifier().verify(ADMIN.mint(admin)).role is Role.ADMIN
    # a token made by hand with the bot runner's key that claims to be an admin's is refused
    forged = jwt.encode(
        {"sub": "mallory", "role": "admin", "iss": "bots", "iat": NOW, "exp": NOW + 60},
        BOTS._key,  # the bot runner's own key
        algorithm="EdDSA",
        headers={"kid": BOTS.key_id},
    )
    assert refused(forged) is Reason.TOKEN_INVALID
    # ... and so is one that names the admin issuer but is signed by the bot runner's key
    lying = jwt.encode(
        {"sub": "mallory", "role": "admin", "iss": "admin", "iat": NOW, "exp": NOW + 60},
        BOTS._key,
        algorithm="EdDSA",
        headers={"kid": ADMIN.key_id},
    )
    assert refused(lying) is Reason.TOKEN_INVALID


def test_forged_tampered_foreign_and_malformed_tokens_are_refused() -> None:
    good = LOBBY.mint(Identity("a", Role.PLAYER, game="g", seat=1, expires=NOW + 60, issued=NOW))
    header, payload, signature = good.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=="))
    claims["seat"] = 2
    tampered = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    assert refused(f"{header}.{tampered}.{signature}") is Reason.TOKEN_INVALID
    stranger = Signer(Ed25519PrivateKey.generate(), "lobby.1")  # another deployment's lobby
    assert refused(stranger.mint(Identity("a", Role.PLAYER, expires=NOW + 60, issued=NOW))) is Reason.TOKEN_INVALID
    unknown = Signer(Ed25519PrivateKey.generate(), "lobby.9")
    assert refused(unknown.mint(Identity("a", Role.PLAYER, expires=NOW + 60, issued=NOW))) is Reason.TOKEN_INVALID
    claims_of_an_admin = {"sub": "a", "role": "admin", "iss": "admin", "iat": NOW, "exp": NOW + 60}
    unsigned = jwt.encode(claims_of_an_admin, cast(Any, None), "none")
    assert refused(unsigned) is Reason.TOKEN_INVALID
    for garbage in ("", "x", "a.b.c", "eyJhbGciOiJIUzI1NiJ9.e30.x", "\x00" * 10, "é" * 50):
        assert refused(garbage) is Reason.TOKEN_INVALID


def test_expired_and_premature_tokens_are_refused() -> None:
    token = LOBBY.mint(Identity("a", Role.PLAYER, expires=NOW + 60, issued=NOW))
    assert verifier(NOW + 59).verify(token).subject == "a"
    assert refused(token, NOW + 60) is Reason.TOKEN_EXPIRED
    assert refused(token, NOW - 60) is Reason.TOKEN_INVALID, "issued in the future (beyond the clock skew allowed)"


def test_the_edge_reads_the_bearer_header() -> None:
    with pytest.raises(Refused) as info:
        verifier().identify([])
    assert info.value.reason is Reason.TOKEN_MISSING
    with pytest.raises(Refused) as info:
        verifier().identify([("authorization", "Basic abc")])
    assert info.value.reason is Reason.TOKEN_MISSING
    token = LOBBY.mint(Identity("a", Role.SPECTATOR, game="g", expires=NOW + 60, issued=NOW))
    assert verifier().identify([("authorization", f"Bearer {token}")]).game == "g"


def test_keys_on_disk_and_paiju_token(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = generate_keys(tmp_path)
    assert set(files) == set(Issuer)
    assert all(stat.S_IMODE(path.stat().st_mode) == 0o600 for path in files.values()), "private keys: owner only"
    trust = load_trust(tmp_path / "keys.json")
    assert set(trust.keys) == {"lobby.1", "bots.1", "admin.1", "web.1"}
    again = generate_keys(tmp_path)
    assert load_trust(tmp_path / "keys.json").keys.keys() == trust.keys.keys() and again == files, "keys are kept"
    args = ["token", "ops", "--role", "analyst", "--key", str(files[Issuer.ADMIN]), "--key-id", "admin.1"]
    assert main(args) == 0
    token = capsys.readouterr().out.strip()
    identity = Verifier(trust, lambda: int(time.time())).verify(token)
    assert (identity.subject, identity.role, identity.issuer) == ("ops", Role.ANALYST, "admin")
    # the bot runner's key cannot make an operator's token
    assert main(["token", "ops", "--role", "admin", "--key", str(files[Issuer.BOTS]), "--key-id", "bots.1"]) == 2
    assert "does not vouch" in capsys.readouterr().err
    assert main(["token", "ops"]) == 2  # no key given
    assert Trust.from_jwks(trust.jwks()).keys.keys() == trust.keys.keys()


def test_a_remembered_token_is_checked_for_time_at_every_call_and_a_refused_one_is_not_remembered() -> None:
    """A token's signature is checked once (a client sends the same token with every call), its expiry every time."""
    clock = [NOW]
    checker = Verifier(TRUST, lambda: clock[0])
    token = LOBBY.mint(Identity("a", Role.PLAYER, expires=NOW + 60, issued=NOW))
    assert checker.verify(token).subject == "a"
    assert checker.verify(token).subject == "a"
    clock[0] = NOW + 60
    with pytest.raises(Refused) as info:
        checker.verify(token)
    assert info.value.reason is Reason.TOKEN_EXPIRED, "remembered, and still expired on time"
    header, payload, signature = token.split(".")
    forged = f"{header}.{payload}.{signature[:-4]}AAAA"
    for _ in range(2):
        with pytest.raises(Refused):
            checker.verify(forged)
    assert forged not in checker._verified


def test_a_header_sent_before_is_not_verified_again_but_its_time_is(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [NOW]
    checker = Verifier(TRUST, lambda: clock[0])
    token = LOBBY.mint(Identity("a", Role.PLAYER, expires=NOW + 60, issued=NOW))
    other = LOBBY.mint(Identity("b", Role.PLAYER, expires=NOW + 60, issued=NOW))
    signed: list[str] = []
    check = checker._signed

    def counted(sent: str) -> Identity:
        signed.append(sent)
        return check(sent)

    monkeypatch.setattr(checker, "_signed", counted)
    for _ in range(3):
        assert checker.identify([("user-agent", "grpc"), ("authorization", f"Bearer {token}")]).subject == "a"
    assert signed == [token], "its signature checked once"
    sent_twice = [("authorization", f"Bearer {token}"), ("authorization", f"Bearer {other}")]
    assert checker.identify(sent_twice).subject == "b", "the last header sent counts"
    clock[0] = NOW + 60
    with pytest.raises(Refused) as info:
        checker.identify([("authorization", f"Bearer {token}")])
    assert info.value.reason is Reason.TOKEN_EXPIRED


def test_a_verifier_holds_the_tokens_alive_not_every_token_it_ever_checked() -> None:
    """Bot seats' tokens live about a minute and come new all the time: the expired ones are forgotten within
    `SWEEP_SECONDS` (a minute), so a long-running engine's memory of tokens stays the size of the tokens in use."""
    assert SWEEP_SECONDS <= 60
    clock = [NOW]
    checker = Verifier(TRUST, lambda: clock[0])
    lasting = LOBBY.mint(Identity("kept", Role.PLAYER, expires=NOW + 15 * 60, issued=NOW))
    checker.verify(lasting)
    for minute in range(14):
        clock[0] = NOW + 60 * minute
        for seat in range(50):
            token = LOBBY.mint(Identity(f"bot{seat}", Role.PLAYER, expires=clock[0] + 60, issued=clock[0]))
            checker.verify(token)
        # the tokens alive (this minute's and the last's) and those expired since the last sweep, at most
        assert len(checker) <= 1 + 50 * 3, "the tokens in use, not every one seen"
    assert lasting in checker._verified, "a token still alive is not swept"


def test_lifetimes_are_capped_per_role_whoever_signs() -> None:
    # no issuer mints a token that lives longer than its role's tokens may
    for signer, role, longest in (
        (LOBBY, Role.PLAYER, 15 * 60),
        (LOBBY, Role.SPECTATOR, 15 * 60),
        (LOBBY, Role.SERVICE, 5 * 60),
        (BOTS, Role.BOT_RUNNER, 5 * 60),
        (ADMIN, Role.ADMIN, 12 * 3600),
    ):
        game = "g" if role is Role.SPECTATOR else None
        assert MAX_SECONDS[role] == longest
        signer.mint(Identity("a", role, game, expires=NOW + longest, issued=NOW))
        with pytest.raises(ValueError, match="lives"):
            signer.mint(Identity("a", role, game, expires=NOW + longest + 1, issued=NOW))
    # a token signed by hand for thirty years (a stolen key, an old issuer) is refused by every verifier
    thirty_years = {"sub": "ops", "role": "admin", "iss": "admin", "iat": NOW, "exp": NOW + 30 * 365 * 86400}
    assert refused(forged_claims(thirty_years, Issuer.ADMIN)) is Reason.TOKEN_INVALID
    # also one that claims no issue time worth the name: what it has left to live is judged
    no_issue = {"sub": "a", "role": "player", "iss": "lobby", "iat": 0, "exp": NOW + 3600}
    assert refused(forged_claims(no_issue)) is Reason.TOKEN_INVALID
    within = {"sub": "a", "role": "player", "iss": "lobby", "iat": 0, "exp": NOW + 900}
    assert verifier().verify(forged_claims(within)).subject == "a"


def test_each_token_names_its_audience_and_verifiers_check_it() -> None:
    engine, lobby = Verifier(TRUST, lambda: NOW, Audience.ENGINE), Verifier(TRUST, lambda: NOW, Audience.LOBBY)
    game = LOBBY.mint(Identity("a", Role.PLAYER, "g", 1, NOW + 60, NOW, audience=GAME_AUDIENCE))
    assert engine.verify(game).audience == ("engine",)
    with pytest.raises(Refused) as info:
        lobby.verify(game)
    assert info.value.reason is Reason.TOKEN_INVALID and info.value.metadata["service"] == "lobby"
    session = LOBBY.mint(Identity("a", Role.PLAYER, expires=NOW + 60, issued=NOW, audience=SESSION_AUDIENCE))
    assert lobby.verify(session).audience == ("lobby", "scoring", "engine") == engine.verify(session).audience
    runner = BOTS.mint(Identity("r", Role.BOT_RUNNER, expires=NOW + 60, issued=NOW, audience=(Audience.LOBBY,)))
    assert lobby.verify(runner).role is Role.BOT_RUNNER
    with pytest.raises(Refused):
        engine.verify(runner)
    # one audience as a plain string reads too (RFC 7519)
    single = forged_claims({"sub": "a", "role": "player", "iss": "lobby", "iat": NOW, "exp": NOW + 60, "aud": "lobby"})
    assert lobby.verify(single).audience == ("lobby",)
    for odd in ([], [""], 7, [3]):
        claims = {"sub": "a", "role": "player", "iss": "lobby", "iat": NOW, "exp": NOW + 60, "aud": odd}
        with pytest.raises(Refused):
            lobby.verify(forged_claims(claims))
    # a token issued before tokens named their audience is accepted until it expires
    old = LOBBY.mint(Identity("a", Role.PLAYER, "g", 1, NOW + 60, NOW))
    assert engine.verify(old).audience == () and lobby.verify(old).audience == ()
    with pytest.raises(Refused) as info:
        Verifier(TRUST, lambda: NOW + 61, Audience.ENGINE).verify(old)
    assert info.value.reason is Reason.TOKEN_EXPIRED
    assert default_audience(Role.ADMIN) == tuple(Audience)
    assert default_audience(Role.PLAYER) == SESSION_AUDIENCE and default_audience(Role.PLAYER, "g") == GAME_AUDIENCE
    assert default_audience(Role.BOT_RUNNER) == (Audience.LOBBY,)


def test_paiju_token_refuses_a_longer_lifetime_and_names_its_audience(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = generate_keys(tmp_path)
    trust = load_trust(tmp_path / "keys.json")
    admin = ["--key", str(files[Issuer.ADMIN]), "--key-id", "admin.1"]
    assert main(["token", "ops", "--ttl", str(12 * 3600), *admin]) == 0
    token = capsys.readouterr().out.strip()
    identity = Verifier(trust, lambda: int(time.time()), Audience.SCORING).verify(token)
    assert identity.audience == ("engine", "lobby", "scoring")
    assert identity.expires - identity.issued == 12 * 3600
    assert main(["token", "ops", "--ttl", str(12 * 3600 + 1), *admin]) == 2
    assert "--ttl" in capsys.readouterr().err
    assert main(["token", "ops", "--ttl", str(30 * 365 * 86400), *admin]) == 2
    lobby = ["--key", str(files[Issuer.LOBBY]), "--key-id", "lobby.1"]
    assert main(["token", "p", "--role", "player", "--ttl", "901", *lobby]) == 2
    capsys.readouterr()
    assert main(["token", "p", "--role", "player", "--audience", "engine", "--game", "g", "--seat", "1", *lobby]) == 0
    token = capsys.readouterr().out.strip()
    identity = Verifier(trust, lambda: int(time.time()), Audience.ENGINE).verify(token)
    assert identity.audience == ("engine",) and identity.expires - identity.issued == 900
