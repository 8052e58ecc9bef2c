"""The tests' tokens: one helper for a token of any role, minted as production mints it (the issuer that vouches
for the role signs it, `tests.support.credentials`), and its ``authorization`` metadata for a call.

One clock: a token expires ``lifetime`` seconds after ``now``, the time of the service that checks it: the real clock
(the default) unless the service under test runs on a fixed one (then pass that time, e.g. the bot runner tests'
engine at ``NOW``). Its issue time is the epoch, so that every service under test accepts it until it expires,
whatever its clock: the tests run services on the real clock, on a fixed one and on one the test moves (scoring's),
sometimes several checking the same test's tokens.
"""

from __future__ import annotations

import time

from paiju.platform.tokens import MAX_SECONDS, Identity, Role

from .credentials import bearer, mint_token

LIFETIME = 3600
"""A test token's lifetime in seconds, checked against the service's clock: longer than any test, or as long as its
role's tokens may live (`paiju.platform.tokens.MAX_SECONDS`: 15 minutes for players, 5 for services)."""


def token(
    *,
    role: Role,
    subject: str,
    game: str | None = None,
    seat: int | None = None,
    now: int | None = None,
    lifetime: int = LIFETIME,
) -> str:
    """A token for ``subject`` in ``role`` (a player's and a spectator's name their ``game``, a player's its
    ``seat``), expiring ``lifetime`` seconds after ``now`` (default: the real clock)."""
    start = int(time.time()) if now is None else now
    lifetime = min(lifetime, MAX_SECONDS[role])  # no service accepts a token with longer to live
    return mint_token(Identity(subject, role, game, seat, expires=start + lifetime))


def token_metadata(
    *,
    role: Role,
    subject: str,
    game: str | None = None,
    seat: int | None = None,
    now: int | None = None,
    lifetime: int = LIFETIME,
) -> tuple[tuple[str, str], ...]:
    """The call metadata (``authorization: Bearer …``) of `token` with these arguments."""
    return bearer(token(role=role, subject=subject, game=game, seat=seat, now=now, lifetime=lifetime))
