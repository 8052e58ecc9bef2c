"""The floor's parts at a load run's shapes (`bench/floor.py`), run for real, small:

- bare streams at the shape of the run's spectators (`crowd_rounds`): a bare server streaming to a crowd of watchers,
  each on a connection of its own, a table's watchers each message at once, every table at its own pace. Its rounds
  count the messages that flowed while they were measured, and stopping the crowd ends its streams;
- the round trips and the publishes at the run's pace: the client's paced calls all reach the server, the paced
  publishes are all stored, and the floor with them at that pace replaces exactly those parts of its sum."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import Any

import nats
import pytest

from paiju.dev.stack import embedded_nats

from ..support.bench import BENCH, bench_module
from ..support.waiting import wait_until_blocking

pytestmark = pytest.mark.integration  # each test runs the floor's rules part as a process and starts nats-server

FLOOR = BENCH / "floor.py"


def _floor() -> Any:
    """`bench/floor.py` as a module."""
    return bench_module("floor.py", "paiju_bench_floor_crowd")


def test_the_crowd_part_counts_the_messages_that_flow_and_stopping_it_ends_its_streams(tmp_path: Path) -> None:
    floor = _floor()
    payloads = tmp_path / "payloads.json"
    subprocess.run([sys.executable, str(FLOOR), "--role", "rules", "7", "1", str(payloads)], check=True, timeout=120)
    crowd = floor.Crowd(spectators=6, tables=3, pace=0.05)
    assert crowd.per_table == 2
    assert crowd.describe() == "6 streams each on its own connection, 2 a table, a message every 0.05 s each"
    with contextlib.ExitStack() as running:
        (server,) = running.enter_context(floor.workers(("stream-server", str(payloads), "zlj=0.5,tractor=0.5")))
        (client,) = running.enter_context(floor.workers(("stream-client", f"127.0.0.1:{server.first['port']}")))
        measured = floor.crowd_rounds(client, server, crowd, 2, seconds=0.5)
        # about 6 streams x 0.5 s / 0.05 s = 60 messages a round; every table sends from a moment of its own
        assert 10 <= measured.count <= 200, measured
        assert measured.server_us > 0 and measured.client_us > 0, measured
        # stopping the crowd ends its streams at the server too (each table stops when its streams are gone)
        wait_until_blocking(lambda: server.ask("cpu")["streams"] == 0, "the crowd's streams to end at the server")
        stopped = client.ask("crowd-count")["messages"]
        again = floor.crowd_rounds(client, server, crowd, 1, seconds=0.3)  # a second crowd opens anew
        assert again.count > 0
        assert client.ask("crowd-count")["messages"] > stopped


def test_the_paced_round_trips_are_all_made(tmp_path: Path) -> None:
    floor = _floor()
    payloads = tmp_path / "payloads.json"
    subprocess.run([sys.executable, str(FLOOR), "--role", "rules", "7", "1", str(payloads)], check=True, timeout=120)
    with contextlib.ExitStack() as running:
        (server,) = running.enter_context(floor.workers(("unary-server", str(payloads), "zlj=0.5,tractor=0.5")))
        address = f"127.0.0.1:{server.first['port']}"
        (client,) = running.enter_context(floor.workers(("unary-client", address, str(payloads), "zlj=0.5")))
        before = server.ask("cpu")["calls"]
        assert client.ask("act", 30, 300)["cpu_s"] > 0  # 30 calls at 300 a second, gaps at random
        assert server.ask("cpu")["calls"] - before == 30
        measured = floor.rounds_of(
            lambda n: client.ask("act", n, 300)["cpu_s"], lambda: server.ask("cpu")["cpu_s"], 1, 10, seconds=0.2
        )
        assert measured.count >= 10 and measured.client_us > 0 and measured.server_us > 0, measured


def test_the_paced_publishes_are_all_stored(tmp_path: Path) -> None:
    floor = _floor()
    payloads = tmp_path / "payloads.json"
    subprocess.run([sys.executable, str(FLOOR), "--role", "rules", "7", "1", str(payloads)], check=True, timeout=120)
    data = tmp_path / "nats"
    with embedded_nats(data) as url:
        with floor.workers(("publish-client", url, str(payloads), "zlj=0.5,tractor=0.5")) as (client,):
            assert client.ask("publish", 20, 400)["cpu_s"] > 0  # 20 publishes at 400 a second, each ack awaited
            assert client.ask("publish", 5)["cpu_s"] > 0
        assert asyncio.run(_stored(url)) == 25


async def _stored(url: str) -> int:
    client = await nats.connect(url)
    try:
        info = await client.jetstream().stream_info("FLOOR")
        return int(info.state.messages)
    finally:
        await client.close()


def test_the_floor_at_the_runs_pace_replaces_its_round_trips_and_publishes() -> None:
    floor = _floor()
    half = floor.Half
    measured = floor.Floor(
        publishes=2.0,
        messages=3.0,
        mix={"zlj": 1.0},
        unary_act=half(100.0, 200.0),
        unary_legal=half(100.0, 200.0),
        publish=half(50.0, 50.0),
        stream_one=half(1.0, 1.0),
        stream_table=half(10.0, 20.0),
        stream_apart=half(10.0, 20.0),
        rules={"zlj": {"mean_us": 40.0, "median_us": 30.0}},
        sizes={},
    )
    assert measured.total_us == 300 + 300 + 2 * 100 + 3 * 30 + 40
    assert measured.paced_total_us is None, "no pace given: no floor at the run's pace"
    paced = dataclasses.replace(
        measured,
        pace=100.0,
        unary_act_paced=half(400.0, 500.0),
        unary_legal_paced=half(300.0, 400.0),
        publish_paced=half(200.0, 100.0),
    )
    assert paced.paced_total_us == 900 + 700 + 2 * 300 + 3 * 30 + 40
    assert paced.paced_server_us == 500 + 400 + 2 * 100 + 3 * 20 + 40
    assert paced.total_us == measured.total_us, "the floor's own sum is unchanged"
    assert paced.row()["floor_at_pace_us"] == paced.paced_total_us
