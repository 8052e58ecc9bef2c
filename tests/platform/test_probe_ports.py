"""Ports for servers started after their port is chosen (`paiju.platform.probe.listening_port`): below the kernel's
ephemeral range, so that no outgoing connection takes one as its source port first — the cluster rehearsal once
failed when a NATS node's route port, drawn by `free_port`, was taken by another node's connection before the node
listened on it."""

from __future__ import annotations

import contextlib
import random
import socket
from pathlib import Path

import pytest

from paiju.platform import probe

pytestmark = pytest.mark.unit


def test_listening_ports_are_below_the_ephemeral_range_free_and_never_handed_twice() -> None:
    low = int(probe.EPHEMERAL_PORTS.read_text().split()[0])
    ports = [probe.listening_port() for _ in range(50)]
    assert len(set(ports)) == 50
    assert all(10_000 <= port < low for port in ports), ports
    for port in ports[:5]:
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))  # free: a server may listen on it


def test_a_port_in_use_is_passed_over(monkeypatch: pytest.MonkeyPatch) -> None:
    first = random.Random(7).randrange(10_000, 32_768)
    with socket.socket() as taken:
        with contextlib.suppress(OSError):  # in use already: passed over all the same
            taken.bind(("127.0.0.1", first))
            taken.listen()
        monkeypatch.setattr(probe, "EPHEMERAL_PORTS", Path("/nonexistent"))  # the usual range, 32768 and up
        port = probe.listening_port(random.Random(7))
    assert port != first and 10_000 <= port < 32_768


def test_with_no_room_below_the_ephemeral_range_it_is_a_free_port(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    narrow = tmp_path / "ip_local_port_range"
    narrow.write_text("1024\t65535\n")
    monkeypatch.setattr(probe, "EPHEMERAL_PORTS", narrow)
    port = probe.listening_port()
    assert port >= 1024
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
