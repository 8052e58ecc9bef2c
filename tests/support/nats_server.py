"""A nats-server with JetStream of a test's own, on a fixed port and data folder, so that it can be stopped (or
killed) and started again: the session's server is every test's and stays up. Its users are the suite's
(`tests.support.natsusers`): `url` is the suite's own, `plain_url` and `env` a service's."""

from __future__ import annotations

import signal
import socket
import subprocess
import sysconfig
from pathlib import Path

from paiju.platform.probe import free_port

from .natsusers import NatsServer, authorization
from .waiting import wait_until_blocking


class RestartableNats:
    """One nats-server process at a time on this object's port and data folder; a context manager that starts it and
    stops it at the end."""

    def __init__(self, data: Path, jetstream: str = "") -> None:
        self.port = free_port()
        self.data = data
        self.jetstream = jetstream
        """Settings of the server's ``jetstream`` block (``max_file_store: 256KB``)."""
        self.server = NatsServer(f"nats://127.0.0.1:{self.port}", Path(f"{data}-keys"))
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The URL of the suite's own clients."""
        return self.server.url

    @property
    def plain_url(self) -> str:
        """The URL without credentials (a service's, with its seed: `env`)."""
        return self.server.plain_url

    def env(self, role: str) -> dict[str, str]:
        """The NATS settings of a process of ``role``."""
        return self.server.env(role)

    def start(self) -> None:
        binary = Path(sysconfig.get_path("scripts")) / "nats-server"
        self.data.mkdir(parents=True, exist_ok=True)
        config = Path(f"{self.data}.conf")
        jetstream = f"jetstream {{\n  {self.jetstream}\n}}\n" if self.jetstream else ""
        config.write_text(jetstream + authorization(self.server.keys))
        self.process = subprocess.Popen(
            [str(binary), "-c", str(config), "-js", "-a", "127.0.0.1", "-p", str(self.port), "-sd", str(self.data)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        wait_until_blocking(self._listening, "nats-server to listen on its port", ignoring=(OSError,))

    def _listening(self) -> bool:
        assert self.process is not None and self.process.poll() is None, "nats-server exited"
        with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
            return True

    def stop(self) -> None:
        """Stop it as an operator does (SIGTERM), if it runs."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=15)

    def kill(self) -> None:
        """Kill it outright (SIGKILL), as a crashed node."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def __enter__(self) -> RestartableNats:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()
