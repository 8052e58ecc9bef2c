"""The benchmarks of `make bench` keep running: each is run here as a process in its smallest form (the arguments
that make it a few seconds' work; its defaults stay the full measurement) and must exit 0 and print its result lines,
the JSON lines it reports its figures in. The figures themselves are not judged: a run this small measures nothing;
what is checked is that the benchmark still works against today's services, settings and tokens.

Every ``$(BIN)/python bench/X.py`` line of the Makefile's ``bench`` target is either run here (`BENCHES`) or listed
with the reason it is not (`NOT_RUN`), so a benchmark added to `make bench` cannot be left out.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration  # each benchmark runs as a process; many start nats-server, engines, a stack

REPOSITORY = Path(__file__).resolve().parents[2]
MAKEFILE = REPOSITORY / "Makefile"


@dataclass(frozen=True)
class Bench:
    """A benchmark's smallest run: its arguments, and what its result lines hold: at least ``lines`` JSON lines
    that have every key of ``keys`` (and, for each key of ``values``, that value)."""

    args: tuple[str, ...]
    keys: tuple[str, ...]
    lines: int = 1
    values: tuple[tuple[str, Any], ...] = ()
    at_least: tuple[tuple[str, float], ...] = ()
    """Figures a result line must reach even in this small run (a part of the benchmark that stopped working)."""


BENCHES: dict[str, Bench] = {
    # RLCard's side needs the benchmark environment (`make bench` builds .venv-bench): left out here
    "run.py": Bench(
        ("--runs", "1", "--matches", "1", "--positions", "10", "--tractor-deals", "1"),
        ("zlj_deals_per_second_median", "zlj_legal_actions_median_us", "tractor_deals_per_second"),
    ),
    "codec.py": Bench(
        ("--games", "1", "--every", "50", "--repeat", "1", "--reference-repeat", "1"),
        ("game", "view_encode_us", "view_encode_ratio"),
        lines=2,
    ),
    "engine.py": Bench(("2",), ("load", "paced", "replay"), values=(("bench", "engine"),)),
    "scoring.py": Bench(
        ("10", "--rounds", "1"),
        ("events_per_second", "rebuild_2_over_1", "export_2_over_1"),
        values=(("bench", "scoring"),),
    ),
    "lobby_follow.py": Bench(
        ("--events", "60", "--rounds", "1"),
        ("us_per_event_median", "replay_us_per_event"),
        values=(("bench", "lobby_follow"),),
    ),
    "swiss.py": Bench(("--repeat", "1"), ("teams", "round_median_ms"), lines=2, values=(("bench", "swiss"),)),
    "fair_dealing.py": Bench(("--rounds", "1"), ("protocol", "deal_ms"), lines=2, values=(("bench", "fair_dealing"),)),
    "ratings.py": Bench(("--repeat", "1"), ("game", "mu_settled_median"), lines=2, values=(("bench", "ratings"),)),
    "bots.py": Bench(("--deals", "2"), ("game", "mean_score_per_deal", "ci95"), lines=2),
    "durability.py": Bench(
        ("--writers", "2", "--appends", "5", "--rounds", "1"), ("sync_interval", "appends_per_s"), lines=3
    ),
    "startup.py": Bench(("20",), ("stored_games", "first_act_seconds"), lines=2),
    "queue_history.py": Bench(
        ("--commands", "600", "--generation", "200", "--repeat", "1"),
        ("form", "load_ms_median", "events_read", "memory_bytes"),
        lines=2,
        values=(("bench", "queue_history"),),
    ),
    # the commands' --help once each, then paiju watch of make run's stack as soon as it is up
    "commands.py": Bench(("--rounds", "1", "--history", "0"), ("command", "cpu_s", "shown_cpu_s"), lines=2),
    "scale.py": Bench(
        ("--tables", "2", "--acts", "4", "--rounds", "1", "--replicas", "2"),
        ("replicas", "cpu_s_per_act", "cpu_s_per_act_calls_to_owner"),
    ),
    "edge.py": Bench(
        ("--calls", "20", "--rounds", "1"), ("method", "bare_us", "edge_us"), lines=4, values=(("rounds", 1),)
    ),
    "cold.py": Bench(
        ("--samples", "5", "--pauses", "0.001"),
        ("part", "warm_us", "after_pause_us", "ratio"),
        lines=5,
        values=(("bench", "cold"),),
    ),
    "tracing.py": Bench(
        ("2", "--rounds", "1", "--quick"),
        ("off_us_per_act", "on_us_per_act", "off_hooks_share_of_act"),
        values=(("benchmark", "tracing"),),
    ),
    "fuzz.py": Bench(("--requests", "50"), ("requests", "by_status")),
    "web.py": Bench(("--pages", "1", "--window", "1", "--warmup", "0.5"), ("pages", "boards_per_page_per_s")),
    "envs.py": Bench(("--runs", "1", "--steps", "10"), ("environment", "steps_per_second_median"), lines=3),
    # one bot table and the probe's table at a fast pace: the probe plays deal after deal (a probe that stopped at
    # its first deal, waiting on a fair-dealing step it never took, made about 40 moves here, now about 850)
    "load.py": Bench(
        (
            *("--tables", "1", "--spectators", "0", "--idle-watchers", "0"),
            *("--window", "20", "--warmup", "5", "--think", "0.02", "--floor-rounds", "1"),
        ),
        ("config", "probe_acts", "cpu_per_act_ms", "stack_ms_per_act"),
        values=(("tables", 1),),
        at_least=(("probe_acts", 300),),
    ),
}

NOT_RUN: dict[str, str] = {
    "floor.py": "the floor of a move, measured within load.py's run beside its load",
    "append.py": "a command's appends by stored form: not yet given its smallest run here (--commands, --rounds)",
}
"""The benchmarks of `make bench` not run here, each with its reason."""


def _makefile_benches() -> list[str]:
    """The scripts the Makefile's ``bench`` target runs, one per ``$(BIN)/python bench/X.py`` line, in order."""
    text = MAKEFILE.read_text()
    recipe = re.search(r"^bench:.*\n((?:\t.*\n)+)", text, re.MULTILINE)
    assert recipe is not None, "the Makefile has a bench target"
    return re.findall(r"^\t\$\(BIN\)/python bench/(\S+\.py)", recipe.group(1), re.MULTILINE)


def test_every_benchmark_of_make_bench_is_run_here_or_excused() -> None:
    listed = _makefile_benches()
    assert "engine.py" in listed and "load.py" in listed, listed  # the target read as it is written
    left_out = [script for script in listed if script not in BENCHES and script not in NOT_RUN]
    assert not left_out, f"add these benchmarks of make bench to BENCHES (their smallest run) or NOT_RUN: {left_out}"
    assert set(BENCHES) <= set(listed), f"run here but not by make bench: {set(BENCHES) - set(listed)}"


def _json_lines(output: str) -> list[dict[str, Any]]:
    found = []
    for line in output.splitlines():
        if line.startswith("{"):
            value = json.loads(line)
            if isinstance(value, dict):
                found.append(value)
    return found


@pytest.mark.parametrize("script", list(BENCHES))
def test_the_benchmark_runs_in_its_smallest_form(script: str) -> None:
    bench = BENCHES[script]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PAIJU_", "NATS_", "DATABASE_URL", "OTEL_"))}
    done = subprocess.run(
        [sys.executable, str(REPOSITORY / "bench" / script), *bench.args],
        cwd=REPOSITORY,
        env=env,
        capture_output=True,
        text=True,
        timeout=420,
        check=False,
    )
    told = f"bench/{script} {' '.join(bench.args)}\nstdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"
    assert done.returncode == 0, told
    results = [
        line
        for line in _json_lines(done.stdout)
        if all(key in line for key in bench.keys) and all(line.get(k) == v for k, v in bench.values)
    ]
    assert len(results) >= bench.lines, f"expected {bench.lines} result lines with {bench.keys}: {told}"
    for key, least in bench.at_least:
        assert all(line[key] >= least for line in results), f"{key} below {least}: {told}"
