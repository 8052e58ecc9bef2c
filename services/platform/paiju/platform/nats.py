"""Connections to NATS that survive outages of any length.

nats-py gives up reconnecting after 60 attempts (about two minutes) by default and closes the connection for
good; every later call then fails with "connection closed" until the process is restarted. A Paiju connection
instead:

- reconnects for ever, every `RECONNECT_SECONDS` (with nats-py's jitter), to any server of the cluster;
- buffers nothing while disconnected (``pending_size=0``): a publish during an outage fails at once instead of
  being sent minutes later, after its caller was told the call failed; a request then fails at once too, keeping
  nothing of itself (`Connection`), and a loop that retries one waits (`paiju.platform.retry.Backoff`);
- is made with retries when NATS is not there yet at start, until it is (or ``stop`` is set);
- logs an outage in a few lines, however long it lasts (`OutageLog`): its start and first error, a line a minute
  while it lasts, and the reconnection with how long it took — not two lines per reconnection attempt;
- authenticates with its service's NKey (`Access`: the seed read from a file, ``NATS_NKEY_SEED_FILE``), receives on
  its service's own inbox (`paiju.platform.natsauth`), and speaks TLS to a server whose certificate the CA of
  ``NATS_TLS_CA`` signed, when these are set.

Ordered consumers (the feeds that keep caches current) find their way back by themselves: their idle heartbeat
stops, and nats-py recreates them from the last sequence delivered (see `paiju.platform.store.jetstream`).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import nats
import nats.errors
import nats.js.errors
import structlog
from nats.aio.client import Client
from nats.aio.msg import Msg

log = structlog.get_logger("paiju.nats")

LEADERLESS: tuple[type[Exception], ...] = (
    nats.errors.TimeoutError,
    nats.errors.NoRespondersError,
    nats.js.errors.NoStreamResponseError,
    nats.js.errors.ServiceUnavailableError,
)
"""What a JetStream stream or key-value bucket just created on a cluster answers until its replicas have elected a
leader (then it answers): a caller that makes one at start tries again for a while (`once_led`)."""
DISCONNECTED: tuple[type[Exception], ...] = (
    nats.errors.OutboundBufferLimitError,
    nats.errors.ConnectionClosedError,
    nats.errors.ConnectionReconnectingError,
    nats.errors.NoServersError,
)
"""What a call raises at once while the connection to NATS is down (nothing is buffered, see `Connection`): unlike a
timeout, which may be one slow answer, it holds for every call until the connection is back, so a loop over many
calls stops at the first and waits."""
LED_ATTEMPTS = 60
LED_RETRY_SECONDS = 0.5
T = TypeVar("T")


async def once_led(attempt: Callable[[], Awaitable[T]]) -> T:
    """``attempt()``, tried again while the stream or bucket it touches has no leader yet (`LEADERLESS`), for up
    to `LED_ATTEMPTS` × `LED_RETRY_SECONDS` (30 s)."""
    for n in range(LED_ATTEMPTS):
        try:
            return await attempt()
        except LEADERLESS:
            if n == LED_ATTEMPTS - 1:
                raise
            await asyncio.sleep(LED_RETRY_SECONDS)
    raise AssertionError("unreachable")


async def key_value(client: Client, config: Any) -> Any:
    """The key-value bucket ``config.bucket``, created with ``config`` (a `KeyValueConfig`) when missing; an existing
    bucket is used as it is. Wrap it in `once_led` at start: a bucket just created on a cluster has no leader yet."""
    from nats.js.errors import BucketNotFoundError

    js = client.jetstream()
    try:
        return await js.key_value(config.bucket)
    except BucketNotFoundError:
        return await js.create_key_value(config)


RECONNECT_SECONDS = 1.0
"""The wait between two reconnection attempts (nats-py adds up to 100 ms of jitter)."""
FIRST_CONNECT_MOST_SECONDS = 5.0
"""The longest wait between two attempts to make the first connection."""
DRAIN_SECONDS = 5
"""Closing a connection drains its subscriptions for at most this long (nats-py waits 30 s by default)."""


def servers(url: str) -> list[str]:
    """``NATS_URL`` as a list of servers: one URL, or several separated by commas (a cluster's nodes; the client
    also learns the others from the server it reaches)."""
    return [part.strip() for part in url.split(",") if part.strip()]


@dataclass(frozen=True)
class Access:
    """How a process proves who it is to NATS: its role (`paiju.platform.natsauth.ROLES`, which names its inbox),
    its NKey seed (the text of its seed file; empty: none, as against a server without authentication), and the CA
    file its servers' TLS certificates are checked against (empty: no TLS unless the URL says ``tls://``)."""

    role: str = ""
    seed: str = ""
    ca: str = ""

    def options(self) -> dict[str, Any]:
        """nats-py's connection options for this access."""
        from paiju.platform.natsauth import inbox_prefix

        found: dict[str, Any] = {}
        if self.role:
            found["inbox_prefix"] = inbox_prefix(self.role)
        if self.seed:
            found["nkeys_seed_str"] = self.seed
        if self.ca:
            found["tls"] = tls_context(self.ca)
        return found


def tls_context(ca: str) -> ssl.SSLContext:
    """A client's TLS context that trusts the certificates ``ca`` (a PEM file) signed, and checks the host name."""
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=ca)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


class Connection(Client):
    """nats-py's client, but a request made while disconnected fails before anything of it is kept. nats-py keeps a
    request's reply future from before its publish, and the publish fails at once while disconnected (nothing is
    buffered): each such request left its future behind for good, so a process that kept trying through an outage of
    hours grew for as long as it lasted. The error is the one that publish raises."""

    async def request(
        self,
        subject: str,
        payload: bytes = b"",
        timeout: float = 0.5,
        old_style: bool = False,
        headers: dict[str, Any] | None = None,
    ) -> Msg:
        if self.is_closed:
            raise nats.errors.ConnectionClosedError
        if not self.is_connected:
            raise nats.errors.OutboundBufferLimitError
        return await super().request(subject, payload, timeout=timeout, old_style=old_style, headers=headers)


STILL_AWAY_SECONDS = 60.0
"""How often a connection that stays down says so again (`OutageLog`)."""


class OutageLog:
    """What one connection tells its log of its outages. nats-py reports a disconnection and an error at every
    reconnection attempt (every `RECONNECT_SECONDS`): logged as they come, a NATS away for an hour filled each
    process's log with thousands of lines per connection. So: the disconnection and the first error of an outage,
    then a line every `STILL_AWAY_SECONDS` while it lasts (the attempts made, the last error), and the reconnection
    with the outage's length and attempts. An error while connected (a permission refused, a slow consumer) is
    always logged."""

    def __init__(
        self, bound: Any, *, every: float = STILL_AWAY_SECONDS, now: Callable[[], float] = time.monotonic
    ) -> None:
        self._log = bound
        self._every = every
        self._now = now
        self._down_since: float | None = None
        self._said_at = 0.0
        self._attempts = 0
        self._last_error = ""

    def disconnected(self) -> None:
        if self._down_since is None:
            self._down_since = self._said_at = self._now()
            self._attempts = 0
            self._log.warning("nats disconnected; reconnecting")
        else:
            self._still()

    def error(self, e: Exception) -> None:
        if self._down_since is None:
            self._log.info("nats error", error=repr(e))
            return
        self._attempts += 1
        self._last_error = repr(e)
        if self._attempts == 1:
            self._log.info("nats error", error=self._last_error)
        else:
            self._still()

    def closed(self) -> None:
        """The connection was closed on purpose (the process stopping): nats-py calls it a disconnection too."""
        self._down_since = None
        self._log.info("nats connection closed")

    def reconnected(self) -> None:
        if self._down_since is None:
            self._log.info("nats reconnected")
            return
        away = self._now() - self._down_since
        self._log.info("nats reconnected", away_seconds=round(away, 1), attempts=self._attempts)
        self._down_since = None

    def _still(self) -> None:
        now = self._now()
        if self._down_since is None or now - self._said_at < self._every:
            return
        self._said_at = now
        self._log.warning(
            "nats still away; reconnecting",
            away_seconds=round(now - self._down_since),
            attempts=self._attempts,
            error=self._last_error,
        )


async def connect(url: str, name: str, stop: asyncio.Event | None = None, *, access: Access | None = None) -> Client:
    """A connection to the NATS server(s) of ``url`` that reconnects for ever; retried until it is made. ``access``:
    its credentials and TLS (none by default). A refused authentication is retried too (the server's users may be
    being rolled out), and logged."""
    bound = log.bind(connection=name)
    options = (access or Access()).options()
    outage = OutageLog(bound)
    made: list[Client] = []

    async def disconnected() -> None:
        if made and made[0].is_closed:  # closed on purpose (nats-py sets the state before it calls back)
            outage.closed()
        else:
            outage.disconnected()

    async def reconnected() -> None:
        outage.reconnected()

    async def error(e: Exception) -> None:
        outage.error(e)

    wait = 0.2
    while True:
        try:
            client = Connection()
            await client.connect(
                servers=servers(url),
                name=name,
                max_reconnect_attempts=-1,
                reconnect_time_wait=RECONNECT_SECONDS,  # type: ignore[arg-type]  # seconds; nats-py sleeps a float
                pending_size=0,
                drain_timeout=DRAIN_SECONDS,
                disconnected_cb=disconnected,
                reconnected_cb=reconnected,
                error_cb=error,
                **options,
            )
            made.append(client)
            return client
        except (OSError, TimeoutError, nats.errors.Error) as e:
            if stop is not None and stop.is_set():
                raise
            bound.warning("nats not reachable yet; retrying", error=repr(e), seconds=wait)
            if stop is None:
                await asyncio.sleep(wait)
            else:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), wait)
            wait = min(FIRST_CONNECT_MOST_SECONDS, wait * 2)


async def close(client: Client) -> None:
    """Drain and close ``client``; a connection that is down (an outage) is closed without draining."""
    if client.is_closed:
        return
    if client.is_connected:
        try:
            await client.drain()
            return
        except Exception as e:
            log.info("nats drain failed; closing", error=repr(e))
    await client.close()
