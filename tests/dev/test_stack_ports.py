"""`make run`'s ports (`paiju.dev.stack.stack_ports`): a restarted stack comes back at the addresses it had, so a
client still trying the address an earlier banner printed finds it again; a port taken meanwhile is given up for
another, and two services never share one."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from paiju.dev.stack import ENGINE_PORT, stack_ports


def test_a_restarted_stack_takes_the_ports_it_had(tmp_path: Path) -> None:
    first = stack_ports(tmp_path, "free")
    assert len(set(first.values())) == 4
    assert json.loads((tmp_path / "ports.json").read_text()) == first
    assert stack_ports(tmp_path, "free") == first
    assert stack_ports(tmp_path) == first, "remembered ports come before the clients' defaults"


def test_a_port_taken_meanwhile_is_given_up(tmp_path: Path) -> None:
    first = stack_ports(tmp_path, "free")
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", first["lobby"]))
        again = stack_ports(tmp_path, "free")
    assert again["lobby"] != first["lobby"]
    assert {k: v for k, v in again.items() if k != "lobby"} == {k: v for k, v in first.items() if k != "lobby"}
    assert len(set(again.values())) == 4


def test_an_unreadable_or_foreign_file_is_ignored(tmp_path: Path) -> None:
    (tmp_path / "ports.json").write_text('{"engine": "x", "lobby": 70000, "scoring": -1, "web": [1]}')
    chosen = stack_ports(tmp_path, "free")
    assert all(0 < port < 65536 for port in chosen.values()) and len(set(chosen.values())) == 4
    (tmp_path / "ports.json").write_text("not json")
    assert len(set(stack_ports(tmp_path, "free").values())) == 4


def test_the_clients_defaults_when_nothing_is_remembered(tmp_path: Path) -> None:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", ENGINE_PORT))
            taken = False
        except OSError:
            taken = True  # another stack has it: the stack takes another free port
    chosen = stack_ports(tmp_path)
    assert (chosen["engine"] == ENGINE_PORT) is not taken
