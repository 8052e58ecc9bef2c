"""The NATS users of the tests' servers: every server the suite starts admits only known users — the services' and
the analyst's NKey users (`paiju.platform.natsauth`, seeds made under the server's key folder, as `make run` makes
them under ``.data/keys/nats``) and the suite's own user, whose password is made per test process and given in the
URL the tests connect with (`NatsServer.url`), so a test's own client may do what the test sets up."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from paiju.platform import settings as s
from paiju.platform.natsauth import SEED_SUFFIX, USERS_FILE, make_keys

SUITE_USER = "suite"
SUITE_PASSWORD = secrets.token_urlsafe(18)


def authorization(keys: Path) -> str:
    """The server's users block: the NKey users (seeds made once in ``keys``) and the suite's own user."""
    make_keys(keys, extra=[{"user": SUITE_USER, "password": SUITE_PASSWORD}])
    return (keys / USERS_FILE).read_text()


def with_suite_user(url: str) -> str:
    """``url`` (one server or several, separated by commas) with the suite's user and password in each."""
    login = f"{SUITE_USER}:{quote(SUITE_PASSWORD, safe='')}@"
    return ",".join(part.replace("://", "://" + login, 1) for part in url.split(","))


@dataclass(frozen=True)
class NatsServer:
    """A running server of the tests: its URL without credentials, and where its users' seeds are."""

    plain_url: str
    keys: Path

    @property
    def url(self) -> str:
        """The URL the suite's own clients connect with (the suite's user)."""
        return with_suite_user(self.plain_url)

    def seed(self, role: str) -> Path:
        """The NKey seed file of ``role`` (engine, lobby, scoring, analyst, admin)."""
        return self.keys / f"{role}{SEED_SUFFIX}"

    def env(self, role: str) -> dict[str, str]:
        """The NATS settings of a process of ``role``: the URL without credentials and its seed's file."""
        return {s.NATS_URL.name: self.plain_url, s.NATS_SEED.variable: str(self.seed(role))}
