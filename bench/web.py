"""`make bench`, web view part: a crowd of spectators' pages on the web view, as `make run` starts it.

`paiju stack` (every service on a free port, the bots thinking 0.3 s, the web view's per-address limits raised:
every page here comes from this machine), then 1, 100 and 500 pages (`--pages`) following the two bot tables live
over server-sent events, as a browser's EventSource does, spread evenly over the tables. After a warm-up, during a
window (`--window`, 20 s), for each crowd:

- the boards each page received per second (median over the pages), and how many pages received none;
- the web view's CPU (% of one core) and resident memory, the engine's CPU, and this process's (the pages');
- the calls the web view made to the services per second, by method (``/healthz``): a crowd must not multiply them
  (one `Watch` per table, whatever the number of pages), and following a game asks for nothing per move (the boards
  are drawn from the public view each turn of the watch carries: `GetView` only when a game starts being followed);
- the boards the web view drew per second (each fanned out to every page of its table) and its `GetView` calls per
  board drawn (~0).

One JSON line per crowd, then a Markdown table for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import aiohttp

TICKS = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def start_stack(folder: Path) -> tuple[subprocess.Popen[bytes], dict[str, Any]]:
    env = {k: v for k, v in os.environ.items() if k not in ("NATS_URL", "DATABASE_URL")}
    env.update(
        PAIJU_STACK_PORTS="free",
        PAIJU_BOT_THINK_SECONDS="0.3",
        PAIJU_WEB_RATE_LIMITS="live:address=100000/open; api:address=100000/second",
    )
    out = folder / "stack.out"
    process = subprocess.Popen(
        [sys.executable, "-m", "paiju.cli", "stack"],
        cwd=folder,
        env=env,
        stdout=out.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 300
    text = ""
    while "Ctrl-C stops everything." not in text:
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("paiju stack did not start:\n" + out.read_text()[-3000:])
        time.sleep(0.5)
        text = out.read_text()
    web = re.search(r"web view\s+(http://\S+)", text)
    assert web is not None
    return process, {"web": web.group(1), "tables": re.findall(r"table at (table-[0-9a-f]+)", text)}


def process_of(command: str, stack: int) -> int:
    """The pid of the ``paiju <command>`` process that the ``paiju stack`` process ``stack`` started (the newest):
    never another stack's, such as that of a test running beside this benchmark."""
    parents: dict[int, int] = {}
    commands: dict[int, list[bytes]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                commands[int(entry.name)] = (entry / "cmdline").read_bytes().split(b"\0")
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue

    def started_by_stack(pid: int) -> bool:
        while pid > 1:
            pid = parents.get(pid, 0)
            if pid == stack:
                return True
        return False

    found = [
        pid
        for pid, argv in commands.items()
        if b"paiju.cli" in argv and command.encode() in argv and started_by_stack(pid)
    ]
    if not found:
        raise RuntimeError(f"no paiju {command} process started by the stack {stack}")
    return max(found)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def rss_mb(pid: int) -> float:
    return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE / 2**20


def health(web: str) -> dict[str, Any]:
    with urllib.request.urlopen(web + "healthz", timeout=10) as answer:
        found: dict[str, Any] = json.loads(answer.read())
        return found


async def follow(
    session: aiohttp.ClientSession, url: str, boards: list[float], refused: list[int], stop: asyncio.Event
) -> None:
    """One page: an EventSource on a table, noting when each board arrives."""
    while not stop.is_set():
        try:
            async with session.get(url) as answer:
                if answer.status != 200:  # as EventSource does, try again a moment later
                    refused.append(answer.status)
                    await asyncio.sleep(1)
                    continue
                async for line in answer.content:
                    if line.startswith(b"event: board"):
                        boards.append(time.monotonic())
                    if stop.is_set():
                        return
        except (TimeoutError, aiohttp.ClientError):
            await asyncio.sleep(1)


async def crowd(web: str, tables: list[str], pages: int, warmup: float, window: float, *, stack: int) -> dict[str, Any]:
    stop = asyncio.Event()
    boards: list[list[float]] = [[] for _ in range(pages)]
    refused: list[int] = []
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None)) as session:
        tasks = [
            asyncio.create_task(
                follow(session, f"{web}api/tables/{tables[n % len(tables)]}/live", boards[n], refused, stop)
            )
            for n in range(pages)
        ]
        await asyncio.sleep(warmup)
        web_pid, engine_pid = process_of("web", stack), process_of("engine", stack)
        before = (cpu_seconds(web_pid), cpu_seconds(engine_pid), time.process_time(), health(web))
        started = time.monotonic()
        await asyncio.sleep(window)
        ended = time.monotonic()
        after = (cpu_seconds(web_pid), cpu_seconds(engine_pid), time.process_time(), health(web))
        stop.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    elapsed = ended - started
    received = [sum(started <= t < ended for t in page) / elapsed for page in boards]
    made = before[3]["upstream_calls"]
    calls = {
        method: round((count - made.get(method, 0)) / elapsed, 2)
        for method, count in sorted(after[3]["upstream_calls"].items())
        if count - made.get(method, 0)
    }
    drawn = after[3].get("boards_drawn", 0) - before[3].get("boards_drawn", 0)
    views = after[3]["upstream_calls"].get("GetView", 0) - made.get("GetView", 0)
    return {
        "pages": pages,
        "tables": len(tables),
        "boards_per_page_per_s": round(statistics.median(received), 2),
        "pages_without_boards": sum(r == 0 for r in received),
        "refused_connections": len(refused),
        "web_cpu_percent": round(100 * (after[0] - before[0]) / elapsed, 1),
        "web_rss_mb": round(rss_mb(web_pid), 1),
        "engine_cpu_percent": round(100 * (after[1] - before[1]) / elapsed, 1),
        "pages_process_cpu_percent": round(100 * (after[2] - before[2]) / elapsed, 1),
        "upstream_calls_per_s": calls,
        "boards_drawn_per_s": round(drawn / elapsed, 2),
        "get_view_per_board": round(views / drawn, 4) if drawn else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, nargs="+", default=[1, 100, 500])
    parser.add_argument("--window", type=float, default=20.0)
    parser.add_argument("--warmup", type=float, default=5.0)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="paiju-bench-web-"))
    folder.chmod(0o755)  # PostgreSQL runs as its own user when root starts it
    process, found = start_stack(folder)
    rows = []
    try:
        for pages in args.pages:
            row = asyncio.run(crowd(found["web"], found["tables"], pages, args.warmup, args.window, stack=process.pid))
            print(json.dumps(row), flush=True)
            rows.append(row)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
        shutil.rmtree(folder, ignore_errors=True)
    print(
        "\n| pages | boards/page/s | web CPU % | web RSS MB | engine CPU % | web view's calls/s to the services "
        "| GetView per board |"
    )
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        calls = ", ".join(f"{m} {n}" for m, n in row["upstream_calls_per_s"].items())
        print(
            f"| {row['pages']} | {row['boards_per_page_per_s']} | {row['web_cpu_percent']} | {row['web_rss_mb']} "
            f"| {row['engine_cpu_percent']} | {calls} | {row['get_view_per_board']} |"
        )


if __name__ == "__main__":
    main()
