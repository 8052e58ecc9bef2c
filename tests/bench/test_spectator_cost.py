"""How `bench/load.py` reads what spectators cost the engine: their window's engine CPU beyond what the same moves
cost in the windows before and after theirs, without them (`measure_again`). Read against the window before alone, a
machine that slowed by a fifth between the two windows put 0.3 ms a move on the spectators: 134 µs a spectator message
in one run, 28 µs in another of the same code."""

from __future__ import annotations

from typing import Any

import pytest

from ..support.bench import BENCH, bench_module

pytestmark = pytest.mark.unit


def _load(monkeypatch: pytest.MonkeyPatch) -> Any:
    """`bench/load.py` as a module (it imports its neighbour `bench/floor.py` from its folder on the path)."""
    monkeypatch.syspath_prepend(str(BENCH))
    return bench_module("load.py", "paiju_bench_load_spectators")


def row(tables: int, engine_ms: float, *, spectators: int = 0, again: bool = False, **more: Any) -> dict[str, Any]:
    found = {
        "config": f"{tables} tables",
        "tables": tables,
        "spectators": spectators,
        "acts": 1000,
        "acts_per_s": 100.0,
        "cpu_per_act_ms": {"engine": engine_ms},
        "stack_ms_per_act": 3.0,
        "server_ms_per_act": 2.0,
        "unary_calls_per_act": 0.001,
        **more,
    }
    if again:
        found["again"] = True
    return found


def test_the_spectators_cost_what_their_window_spent_beyond_the_mean_of_the_windows_around_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    load = _load(monkeypatch)
    rows = [
        row(30, 1.0),
        row(100, 1.0),  # the machine drifts: the same moves cost 1.0, then 1.4 ms
        row(100, 2.2, spectators=500, engine_cpu_pct=22.0, spectator_messages_per_s=1000.0),
        row(100, 1.4, again=True),
    ]
    summary = load.assess(rows, None, 30)
    assert summary["engine_ms_per_act_without_spectators"] == [1.0, 1.4]
    # 0.22 s a second in the spectators' window, 0.12 of it the moves (1.2 ms × 100): 0.10 s for 1,000 messages
    assert summary["engine_us_per_spectator_message"] == pytest.approx(100.0)
    assert summary["reference"] == "30 tables", "the reference is a first window, not the one measured again"
    assert summary["probe_act_ms"]["config"] == "100 tables"


def test_a_run_without_the_window_after_reads_the_window_before(monkeypatch: pytest.MonkeyPatch) -> None:
    load = _load(monkeypatch)
    rows = [
        row(100, 1.0),
        row(100, 2.2, spectators=500, engine_cpu_pct=22.0, spectator_messages_per_s=1000.0),
    ]
    summary = load.assess(rows, None, 100)
    assert summary["engine_us_per_spectator_message"] == pytest.approx(120.0)
    assert load.is_base_of(rows[0], rows[1]) and not load.is_base_of(rows[1], rows[1])


def test_a_window_the_host_or_other_programs_disturbed_is_named_untrusted(monkeypatch: pytest.MonkeyPatch) -> None:
    load = _load(monkeypatch)
    rows = [
        row(30, 2.57, machine_steal_pct=15.6, others_cpu_pct=-1.5),
        row(100, 1.7, machine_steal_pct=1.0, others_cpu_pct=12.0),
        row(100, 1.7, machine_steal_pct=0.4, others_cpu_pct=-2.6),
        {"config": "idle game, 0 watchers", "machine_steal_pct": 30.0},  # not loaded: no gate reads it
    ]
    assert load.disturbed(rows) == [
        "30 tables: the hypervisor took 15.6 % of a core (steal): measure again",
        "100 tables: other programs used 12 % of a core: measure again",
    ]
    assert load.disturbed(rows[2:3], profiled=True) == [
        "py-spy recorded this run: a profile, not a measurement of the gates"
    ]
