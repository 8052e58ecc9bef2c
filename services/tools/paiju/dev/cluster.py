"""A NATS JetStream cluster on one machine: three `nats-server` processes clustered over loopback (for the
cluster rehearsal, `make cluster-test`). Each node has its own client, route and monitoring port and its own
JetStream folder; a node can be killed with SIGKILL and started again on the same folder and ports. Given the users of a
deployment (`paiju.platform.natsauth.server_users`), the nodes admit those users only, as production's do.
"""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import subprocess
import sysconfig
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paiju.platform.probe import listening_port

CLUSTER_NAME = "paiju"


@dataclass
class Node:
    name: str
    client: int
    route: int
    monitor: int
    data: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.client}"


@dataclass
class NatsCluster:
    """Three clustered JetStream servers under ``data`` (``n0``, ``n1``, ``n2``)."""

    data: Path
    size: int = 3
    nodes: list[Node] = field(default_factory=list)
    authorization: str = ""
    """The servers' users (NATS configuration; empty: anyone may connect)."""

    def __post_init__(self) -> None:
        for i in range(self.size):
            folder = self.data / f"n{i}"
            folder.mkdir(parents=True, exist_ok=True)
            # below the ephemeral range: the nodes connect to each other's routes as they start, and an outgoing
            # connection's source port once took a node's route port before the node listened on it
            self.nodes.append(Node(f"n{i}", listening_port(), listening_port(), listening_port(), folder))

    @property
    def url(self) -> str:
        """Every node's client URL, comma-separated (``NATS_URL``)."""
        return ",".join(node.url for node in self.nodes)

    def node(self, name: str) -> Node:
        return next(n for n in self.nodes if n.name == name)

    def start(self, name: str | None = None, timeout: float = 30.0) -> None:
        """Start every node (or one), and wait until each answers on its client and monitoring ports."""
        binary = Path(sysconfig.get_path("scripts")) / "nats-server"
        routes = ",".join(f"nats://127.0.0.1:{n.route}" for n in self.nodes)
        for node in self.nodes if name is None else [self.node(name)]:
            log = (node.data / "server.log").open("ab")
            configured: list[str] = []
            if self.authorization:
                config = node.data / "nats.conf"
                config.write_text(self.authorization)
                configured = ["-c", str(config)]
            node.process = subprocess.Popen(
                [
                    str(binary),
                    *configured,
                    "-js",
                    "-n",
                    node.name,
                    "-a",
                    "127.0.0.1",
                    "-p",
                    str(node.client),
                    "-m",
                    str(node.monitor),
                    "-sd",
                    str(node.data / "jetstream"),
                    "--cluster_name",
                    CLUSTER_NAME,
                    "--cluster",
                    f"nats://127.0.0.1:{node.route}",
                    "--routes",
                    routes,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        for node in self.nodes if name is None else [self.node(name)]:
            for port in (node.client, node.monitor):
                while True:
                    try:
                        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                            break
                    except OSError:
                        assert node.process is not None
                        if node.process.poll() is not None or time.monotonic() > deadline:
                            raise RuntimeError(f"nats-server {node.name} did not start") from None
                        time.sleep(0.05)

    def kill(self, name: str) -> None:
        """SIGKILL one node (a machine lost)."""
        node = self.node(name)
        if node.process is not None and node.process.poll() is None:
            node.process.send_signal(signal.SIGKILL)
            node.process.wait()

    def stop(self) -> None:
        for node in self.nodes:
            if node.process is not None and node.process.poll() is None:
                node.process.terminate()
        for node in self.nodes:
            if node.process is not None:
                try:
                    node.process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    node.process.kill()
                    node.process.wait()

    def running(self) -> list[Node]:
        return [n for n in self.nodes if n.process is not None and n.process.poll() is None]

    def jsz(self, name: str) -> dict[str, Any]:
        """The node's own view of its JetStream streams (monitoring ``/jsz``): per stream, the state of the
        replica this node stores."""
        node = self.node(name)
        url = f"http://127.0.0.1:{node.monitor}/jsz?accounts=true&streams=true&config=true"
        with urllib.request.urlopen(url, timeout=5) as answer:  # loopback monitoring port
            found: dict[str, Any] = json.load(answer)
        return found

    def stream_states(self, name: str) -> dict[str, dict[str, Any]]:
        """Stream name -> {messages, bytes, first_seq, last_seq, ...} as node ``name`` stores it."""
        states: dict[str, dict[str, Any]] = {}
        for account in self.jsz(name).get("account_details") or []:
            for stream in account.get("stream_detail") or []:
                states[stream["name"]] = stream["state"]
        return states


async def messages_on(url: str, node: str, stream: str, prefix: str) -> list[tuple[int, str, bytes]]:
    """Every event of ``stream`` as node ``node`` stores it: the stream's leadership is moved to that node (a
    leader step-down naming it as preferred), then the whole stream is read through a one-replica consumer, which
    the stream's leader serves from its own copy, and decoded by the store (`paiju.platform.store.messages`).
    (sequence of its message, aggregate, data) in stream order."""
    import asyncio

    from paiju.platform.store.jetstream import JetStreamEventStore

    store = await JetStreamEventStore.connect(url, stream=stream, prefix=prefix, replicas=3)
    try:
        js = store.client.jetstream(timeout=10)
        request = json.dumps({"placement": {"preferred": node}}).encode()
        for _ in range(60):
            info = await js.stream_info(stream)
            if info.cluster is not None and info.cluster.leader == node:
                break
            with contextlib.suppress(Exception):
                await store.client.request(f"$JS.API.STREAM.LEADER.STEPDOWN.{stream}", request, timeout=10)
            await asyncio.sleep(1.0)
        else:
            raise RuntimeError(f"{node} did not become the leader of {stream}")
        return [(r.sequence, r.aggregate, r.data) for r in await store.read_all()]
    finally:
        await store.close()
