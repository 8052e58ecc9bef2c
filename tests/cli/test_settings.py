"""Each process's settings as its command reads them (`paiju.platform.settings`): every ``paiju <process> --help``
lists them, the services keep the defaults they always had, the renamed settings still work under their old names
with a warning, and ``paiju scoring rebuild`` needs no more than it did."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from paiju.botrunner.cli import Settings as BotSettings
from paiju.engine.config import Settings as EngineSettings
from paiju.lobby.config import Settings as LobbySettings
from paiju.platform import settings as s
from paiju.platform.settings import SettingsError
from paiju.scoring.config import ReadModels
from paiju.scoring.config import Settings as ScoringSettings
from paiju.tools.web.config import Settings as WebSettings

SECRET = "a-secret-of-more-than-thirty-two-bytes!"


def written(tmp_path: Path, name: str, content: str) -> str:
    path = tmp_path / name
    path.write_text(content)
    return str(path)


@pytest.mark.parametrize(
    ("command", "variables"),
    [
        ("engine", ["PAIJU_ENGINE_METRICS_PORT (default 9464; formerly PAIJU_METRICS_PORT)", "PAIJU_SEED_SECRET_FILE"]),
        ("lobby", ["PAIJU_LOBBY_METRICS_PORT (default 9465)", "DATABASE_URL_FILE (required", "PAIJU_SIGNING_KEY_FILE"]),
        ("scoring", ["PAIJU_SCORING_SHARDS (default 4)", "DATABASE_URL_FILE (required", "PAIJU_TRUSTED_KEYS"]),
        ("bots", ["PAIJU_BOT_RUNNER_ID / --runner-id (default bots-<host>-<pid>; formerly PAIJU_RUNNER_ID)"]),
        ("web", ["PAIJU_WEB_PORT / --port (default 8080)", "PAIJU_WEB_HOST / --host (default 127.0.0.1)"]),
    ],
)
def test_every_paiju_command_lists_its_settings_in_its_help(
    command: str, variables: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    from paiju.cli import main

    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert s.HELP_HEADING in out
    for variable in variables:
        assert f"  {variable}" in out, variable


def engine_env(tmp_path: Path) -> dict[str, str]:
    return {"PAIJU_SEED_SECRET_FILE": written(tmp_path, "seed", SECRET), "PAIJU_TRUSTED_KEYS": "/keys.json"}


def test_the_services_keep_the_defaults_they_had(tmp_path: Path) -> None:
    engine = EngineSettings.from_env(engine_env(tmp_path))
    assert (engine.address, engine.nats_url, engine.stream, engine.prefix, engine.lobby_stream) == (
        "127.0.0.1:50051",
        "nats://127.0.0.1:4222",
        "GAMES",
        "paiju.game",
        "LOBBY",
    )
    assert (engine.replicas, engine.metrics_port, engine.timer_seconds, engine.partitions, engine.cache_mib) == (
        1,
        9464,
        1.0,
        16,
        128,
    )
    assert (engine.fair_dealing, engine.contribution_seconds, engine.log_level) == (True, 2.0, "info")
    assert (engine.fair_protocol, engine.first_deal_seconds) == (2, 30.0), "new games commit, then reveal"
    assert (engine.seed_secret, engine.previous_seed_secret, engine.trusted_keys) == (
        SECRET.encode(),
        None,
        "/keys.json",
    )
    database = written(tmp_path, "database", "postgresql://paiju:pw@db/paiju")
    needs = {"DATABASE_URL_FILE": database, "PAIJU_TRUSTED_KEYS": "/k", "PAIJU_SIGNING_KEY_FILE": "/s"}
    lobby = LobbySettings.from_env({**needs, "PAIJU_SIGNING_KEY_ID": "lobby.1"})
    assert (lobby.address, lobby.engine_address, lobby.database_url, lobby.grace_seconds, lobby.metrics_port) == (
        "127.0.0.1:50052",
        "127.0.0.1:50051",
        "postgresql://paiju:pw@db/paiju",
        30.0,
        9465,
    )
    assert (lobby.tournaments_stream, lobby.tournaments_prefix, lobby.games_stream) == (
        "TOURNAMENTS",
        "paiju.tournament",
        "GAMES",
    )
    scoring = ScoringSettings.from_env(needs)
    assert (scoring.address, scoring.stream, scoring.batch, scoring.linger_ms, scoring.shards) == (
        "127.0.0.1:50053",
        "TOURNAMENTS",
        500,
        250,
        4,
    )
    assert scoring.metrics_port == 9466
    bots = BotSettings.from_env({"PAIJU_SIGNING_KEY_FILE": "/s", "PAIJU_SIGNING_KEY_ID": "bots.1"})
    assert (bots.lobby, bots.engine, bots.think, bots.max_seats, bots.renew) == (
        "127.0.0.1:50052",
        "127.0.0.1:50051",
        0.3,
        0,
        10.0,
    )
    assert bots.runner_id == f"bots-{bots.runner_id.split('-', 1)[1]}" and bots.runner_id.endswith(f"-{os.getpid()}")
    web = WebSettings.from_env({})
    assert (web.lobby, web.engine, web.scoring, web.host, web.port, web.rate_limits) == (
        "127.0.0.1:50052",
        "127.0.0.1:50051",
        "127.0.0.1:50053",
        "127.0.0.1",
        8080,
        "",
    )


def test_the_engine_metrics_port_has_the_service_name_and_the_old_one_still_works(tmp_path: Path) -> None:
    engine = EngineSettings.from_env({**engine_env(tmp_path), "PAIJU_METRICS_PORT": "9999"})
    assert engine.metrics_port == 9999
    assert [(d.variable, d.instead) for d in engine.deprecations] == [
        ("PAIJU_METRICS_PORT", "PAIJU_ENGINE_METRICS_PORT")
    ]


def test_the_old_signing_key_variable_still_names_the_key_file() -> None:
    env = {"PAIJU_SIGNING_KEY": "/keys/bots.pem", "PAIJU_SIGNING_KEY_ID": "bots.1"}
    bots = BotSettings.from_env(env)
    assert bots.signing_key == "/keys/bots.pem"
    assert [(d.variable, d.instead) for d in bots.deprecations] == [("PAIJU_SIGNING_KEY", "PAIJU_SIGNING_KEY_FILE")]


def test_a_rebuild_needs_no_token_keys(tmp_path: Path) -> None:
    """``paiju scoring rebuild`` reads the read models' settings only: no trusted keys, as before."""
    database = written(tmp_path, "database", "postgresql://paiju@db/paiju")
    assert ReadModels.from_env({"DATABASE_URL_FILE": database}).database_url == "postgresql://paiju@db/paiju"
    with pytest.raises(SettingsError, match=r"^PAIJU_TRUSTED_KEYS must be set"):
        ScoringSettings.from_env({"DATABASE_URL_FILE": database})


def test_a_short_seed_secret_is_refused_without_showing_it(tmp_path: Path) -> None:
    path = written(tmp_path, "short-seed", "short")
    with pytest.raises(SettingsError) as refused:
        EngineSettings.from_env({**engine_env(tmp_path), "PAIJU_SEED_SECRET_FILE": path})
    assert str(refused.value) == "PAIJU_SEED_SECRET_FILE: must hold a secret of at least 32 bytes"
