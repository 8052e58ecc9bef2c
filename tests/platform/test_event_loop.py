"""The event loop Paiju's processes run on (`paiju.platform.event_loop`): uvloop's by default, asyncio's when the
operator says so, any other choice refused; every serving ``paiju`` command, and the suite itself, on the chosen one.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest
import tests.conftest
import uvloop

from paiju.botrunner.cli import Settings as BotSettings
from paiju.engine.config import Settings as EngineSettings
from paiju.lobby.config import Settings as LobbySettings
from paiju.platform import event_loop
from paiju.platform import settings as s
from paiju.platform.settings import SettingsError
from paiju.scoring.config import ReadModels as ScoringReadModels
from paiju.scoring.config import Settings as ScoringSettings
from paiju.tools.web.config import Settings as WebSettings

SERVING = (EngineSettings, LobbySettings, ScoringSettings, ScoringReadModels, BotSettings, WebSettings)
"""The settings of every serving command: ``engine``, ``lobby``, ``scoring`` (and ``scoring rebuild``), ``bots``,
``web``."""


async def _loop_kind() -> type[asyncio.AbstractEventLoop]:
    return type(asyncio.get_running_loop())


def test_run_makes_uvloops_loop_by_default() -> None:
    assert event_loop.run(_loop_kind()) is uvloop.Loop
    assert event_loop.run(_loop_kind(), "uvloop") is uvloop.Loop


def test_run_makes_asyncios_loop_when_chosen() -> None:
    """asyncio's own loop, whatever policy the process has set (the suite's makes uvloops)."""
    kind = event_loop.run(_loop_kind(), "asyncio")
    assert kind is asyncio.SelectorEventLoop
    assert not issubclass(kind, uvloop.Loop)


def test_run_refuses_an_unknown_loop_before_running_anything() -> None:
    started = []

    async def main() -> None:
        started.append(True)

    with pytest.raises(ValueError, match="PAIJU_EVENT_LOOP: no event loop 'tokio': must be one of uvloop, asyncio"):
        event_loop.run(main(), "tokio")
    assert started == []


def test_the_setting_chooses_uvloop_unless_told_asyncio() -> None:
    assert event_loop.chosen({}) == "uvloop"
    assert event_loop.chosen({"PAIJU_EVENT_LOOP": ""}) == "uvloop"  # empty: unset, as every setting
    assert event_loop.chosen({"PAIJU_EVENT_LOOP": "asyncio"}) == "asyncio"
    assert event_loop.chosen({"PAIJU_EVENT_LOOP": " UVLOOP "}) == "uvloop"


@pytest.mark.parametrize("value", ["tokio", "uv", "asyncio.SelectorEventLoop", "\x00"])
def test_the_setting_refuses_anything_else_naming_the_variable(value: str) -> None:
    with pytest.raises(SettingsError) as refused:
        event_loop.chosen({"PAIJU_EVENT_LOOP": value})
    assert str(refused.value) == f"PAIJU_EVENT_LOOP={value!r}: must be one of uvloop, asyncio"


@pytest.mark.parametrize("settings", SERVING, ids=lambda c: f"{c.__module__}.{c.__name__}")
def test_every_serving_process_reads_the_setting(settings: Any) -> None:
    assert ("event_loop", s.EVENT_LOOP) in settings.declarations()


def test_policy_makes_the_chosen_loops() -> None:
    """What the suite sets for its own ``asyncio.run`` calls: asyncio's policy, making the chosen loop."""
    for name, kind in (("uvloop", uvloop.Loop), ("asyncio", asyncio.SelectorEventLoop)):
        loop = event_loop.policy(name).new_event_loop()
        try:
            assert type(loop) is kind
        finally:
            loop.close()


def test_the_suite_runs_the_loop_the_services_run() -> None:
    """The suite's ``asyncio.run`` (its in-process services) runs on the loop `paiju`'s services run on."""
    assert event_loop.chosen() == tests.conftest.EVENT_LOOP
    expected = uvloop.Loop if tests.conftest.EVENT_LOOP == "uvloop" else asyncio.SelectorEventLoop
    assert asyncio.run(_loop_kind()) is expected


# A `paiju` command run as a process of its own, down to the coroutine it serves with: each serving function is
# replaced by one that prints the kind of the loop it runs on, so the command's own entry (its settings read, its
# loop made) is what is tested, without NATS or PostgreSQL.
COMMAND = textwrap.dedent(
    """
    import asyncio
    import sys

    import paiju.botrunner.service
    import paiju.engine.bootstrap
    import paiju.lobby.bootstrap
    import paiju.platform.tokens
    import paiju.scoring.bootstrap
    import paiju.tools.web.gateway
    from paiju import cli

    def serving(*args, **options):
        async def tell():
            kind = type(asyncio.get_running_loop())
            print(f"{kind.__module__}.{kind.__qualname__}", flush=True)
            return {}

        return tell()

    for module in (paiju.engine.bootstrap, paiju.lobby.bootstrap, paiju.scoring.bootstrap, paiju.botrunner.service,
                   paiju.tools.web.gateway):
        module.serve = serving
    paiju.scoring.bootstrap.rebuild = serving
    paiju.platform.tokens.signer_of = lambda key, key_id: None
    sys.exit(cli.main(sys.argv[1:]))
    """
)
COMMANDS = (["engine"], ["lobby"], ["scoring"], ["scoring", "rebuild"], ["bots"], ["web"])
SEED = {"PAIJU_SEED_SECRET": "s" * 48, "PAIJU_TRUSTED_KEYS": "keys.json"}
DATABASE = {"DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none", "PAIJU_TRUSTED_KEYS": "keys.json"}
KEY = {"PAIJU_SIGNING_KEY_FILE": "key.pem", "PAIJU_SIGNING_KEY_ID": "bots.1"}
REQUIRED = {"engine": SEED, "lobby": DATABASE | KEY, "scoring": DATABASE, "bots": KEY, "web": {}}
"""The settings each command refuses to start without (read, never used: nothing serves)."""


def _command(arguments: list[str], loop: str | None) -> subprocess.CompletedProcess[str]:
    unset = {event_loop.VARIABLE, *SEED, *DATABASE, *KEY}
    env = {k: v for k, v in os.environ.items() if k not in unset} | REQUIRED[arguments[0]]
    if loop is not None:
        env[event_loop.VARIABLE] = loop
    return subprocess.run(
        [sys.executable, "-c", COMMAND, *arguments], env=env, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.integration
@pytest.mark.parametrize("arguments", COMMANDS, ids=" ".join)
def test_each_serving_command_runs_on_uvloop(arguments: list[str]) -> None:
    done = _command(arguments, None)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "uvloop.Loop"


@pytest.mark.integration
@pytest.mark.parametrize("arguments", [["engine"], ["bots"]], ids=" ".join)
def test_the_operator_may_run_a_command_on_asyncios_loop(arguments: list[str]) -> None:
    done = _command(arguments, "asyncio")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "asyncio.unix_events._UnixSelectorEventLoop"


@pytest.mark.integration
def test_a_command_refuses_an_unknown_loop_with_the_variable_named() -> None:
    done = _command(["engine"], "tokio")
    assert done.returncode == 1
    assert done.stdout == ""  # nothing served
    assert done.stderr.strip() == "PAIJU_EVENT_LOOP='tokio': must be one of uvloop, asyncio"
