"""`paiju.tools.settingsdoc`: the operations guide's settings tables are what the processes' declarations and the
manifests make now, so a changed setting without `make docs` fails the suite; the manifests give each process only
settings it declares, under their current names, and every setting it requires; `--check` says when to run
`make docs`."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from paiju.platform.settings import Setting, Settings
from paiju.tools import settingsdoc
from paiju.tools.settingsdoc import OVERLAYS, PROCESSES, Manifests

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "operations.md"
K8S = ROOT / "deploy" / "k8s"


@pytest.fixture(scope="module")
def manifests() -> Manifests:
    return Manifests.render(K8S)


def test_the_committed_tables_are_up_to_date(manifests: Manifests) -> None:
    current = GUIDE.read_text(encoding="utf-8")
    assert settingsdoc.update(current, settingsdoc.render_tables(manifests)) == current, (
        "docs/operations.md's settings tables are not what the declarations and manifests make: run `make docs` "
        "and commit docs/operations.md"
    )


def test_every_declared_setting_has_its_row(manifests: Manifests) -> None:
    page = GUIDE.read_text(encoding="utf-8")
    for process, (_, settings) in PROCESSES.items():
        section = page[page.index(settingsdoc.begin_marker(process)) : page.index(settingsdoc.end_marker(process))]
        for _, setting in settings.declarations():
            assert f"| `{setting.variable}`" in section, f"{process}: {setting.variable}"
    renamed = page[page.index(settingsdoc.begin_marker("renamed")) : page.index(settingsdoc.end_marker("renamed"))]
    for old, new in (
        ("PAIJU_METRICS_PORT", "PAIJU_ENGINE_METRICS_PORT"),
        ("PAIJU_SEED_SECRET", "PAIJU_SEED_SECRET_FILE"),
        ("DATABASE_URL", "DATABASE_URL_FILE"),
    ):
        assert f"| `{old}` | `{new}` |" in renamed


def test_the_manifests_give_each_process_only_its_settings_by_their_current_names(manifests: Manifests) -> None:
    """What a container gets from its own ``env`` is a setting its process declares, by its current name; the
    shared ConfigMap holds settings some process declares; no deprecated name is left in the manifests."""
    declared = {
        process: {s.variable for _, s in settings.declarations()} for process, (_, settings) in PROCESSES.items()
    }
    everything = set().union(*declared.values())
    old = {name for _, settings in PROCESSES.values() for _, s in settings.declarations() for name in s.deprecated}
    old |= {s.name for _, settings in PROCESSES.values() for _, s in settings.declarations() if s.secret}
    for overlay in OVERLAYS:
        for process in PROCESSES:
            found = manifests.container(overlay, process)
            assert found is not None, f"{overlay}: no container {process}"
            _, container = found
            own = {variable["name"] for variable in container.get("env", [])}
            assert own <= declared[process], f"{overlay} {process}: {sorted(own - declared[process])} not declared"
            shared = {key for config in manifests.config_maps(overlay, container) for key in config.get("data", {})}
            assert shared <= everything, f"{overlay} paiju-config: {sorted(shared - everything)} declared by none"
            assert not (own | shared) & old, f"{overlay} {process}: deprecated {sorted((own | shared) & old)}"


def test_the_manifests_give_each_process_every_setting_it_requires(manifests: Manifests) -> None:
    for overlay in OVERLAYS:
        for process, (_, settings) in PROCESSES.items():
            given = manifests.environment(overlay, process)
            for _, setting in settings.declarations():
                if setting.required:
                    assert setting.variable in given, f"{overlay} {process} lacks {setting.variable}"


def test_a_table_is_what_the_declarations_and_the_manifests_say(manifests: Manifests) -> None:
    engine = settingsdoc.table("engine", manifests).splitlines()
    assert engine[0] == "| variable | default | manifests | what |"
    assert "| `PAIJU_STREAM_REPLICAS` | `1` | prod `3`, dev `1` | replicas of a stream the engine creates |" in engine
    (port,) = [row for row in engine if row.startswith("| `PAIJU_ENGINE_METRICS_PORT` |")]
    assert "| `9464` | `9464` |" in port and "formerly `PAIJU_METRICS_PORT`" in port
    (seed,) = [row for row in engine if row.startswith("| `PAIJU_SEED_SECRET_FILE` |")]
    assert "| — (required) | `/etc/paiju/seed/secret` (Secret `paiju-seed`, key `secret`) |" in seed
    bots = settingsdoc.table("bots", manifests)
    assert "| `PAIJU_BOT_RUNNER_ID` / `--runner-id` | `bots-<host>-<pid>` | the pod's name (downward API) |" in bots
    web = settingsdoc.table("web", manifests)
    assert "| `PAIJU_WEB_HOST` / `--host` | `127.0.0.1` | `0.0.0.0` |" in web  # from the container's arguments


def test_a_changed_declaration_changes_its_row(manifests: Manifests, monkeypatch: pytest.MonkeyPatch) -> None:
    @dataclass(frozen=True)
    class Changed(Settings):
        timer: float = Setting("PAIJU_TIMER_SECONDS", 5.0, "how often, now", deprecated=("PAIJU_TIMER",)).field()
        pipes: str = Setting("PAIJU_A|B", "x|y", "a cell with a bar").field()

    monkeypatch.setitem(PROCESSES, "engine", ("paiju engine", Changed))
    rows = settingsdoc.table("engine", manifests).splitlines()[2:]
    assert rows == [
        "| `PAIJU_TIMER_SECONDS` | `5` | `1` | how often, now (formerly `PAIJU_TIMER`, still read until the next "
        "release) |",
        "| `PAIJU_A\\|B` | `x\\|y` | (default) | a cell with a bar |",
    ]


def test_update_replaces_only_between_the_markers() -> None:
    begin, end = settingsdoc.begin_marker("engine"), settingsdoc.end_marker("engine")
    page = f"# Guide\n\nprose\n{begin}\n| old |\n{end}\n\nmore prose\n"
    assert (
        settingsdoc.update(page, {"engine": "| new |"}) == f"# Guide\n\nprose\n{begin}\n| new |\n{end}\n\nmore prose\n"
    )
    with pytest.raises(ValueError, match="no lines"):
        settingsdoc.update("# Guide without markers\n", {"engine": "| new |"})


def test_check_says_when_to_run_make_docs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    guide = tmp_path / "operations.md"
    shutil.copy(GUIDE, guide)
    assert settingsdoc.main(["--check", "--manifests", str(K8S), str(guide)]) == 0
    stale = guide.read_text(encoding="utf-8").replace("| `PAIJU_ENGINE_METRICS_PORT` |", "| `PAIJU_METRICS_PORT` |")
    guide.write_text(stale, encoding="utf-8")
    assert settingsdoc.main(["--check", "--manifests", str(K8S), str(guide)]) == 1
    assert "run `make docs`" in capsys.readouterr().err
    assert settingsdoc.main(["--manifests", str(K8S), str(guide)]) == 0  # rewritten
    assert guide.read_text(encoding="utf-8") == GUIDE.read_text(encoding="utf-8")
