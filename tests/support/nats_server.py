"""A nats-server with JetStream of a test's own, on a fixed port and data folder, so that it can be stopped (or
killed) and started again: the session's server is every test's and stays up."""

from __future__ import annotations

import signal
import socket
import subprocess
import sysconfig
from pathlib import Path

from paiju.platform.probe import free_port

from .waiting import wait_until_blocking


class RestartableNats:
    """One nats-server process at a time on this object's port and data folder; a context manager that starts it and
    stops it at the end."""

    def __init__(self, data: Path) -> None:
        self.port = free_port()
        self.data = data
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self) -> None:
        binary = Path(sysconfig.get_path("scripts")) / "nats-server"
        self.process = subprocess.Popen(
            [str(binary), "-js", "-a", "127.0.0.1", "-p", str(self.port), "-sd", str(self.data)],
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
