"""The architecture's boundaries hold (besides `make lint`'s import-linter contracts, in pyproject.toml): the rules
cores import only the standard library and themselves, and the import contracts are kept."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
RULES = ROOT / "services" / "rules" / "paiju" / "rules"


def foreign_imports(package: Path) -> list[str]:
    """Each import in ``package``'s modules of something that is neither the standard library nor ``paiju.rules``."""
    found = []
    for module in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(module.read_text(), str(module))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top == "__future__" or name.startswith("paiju.rules"):
                    continue
                found.append(f"{module.relative_to(package)}:{node.lineno}: {name}")
    return found


def test_the_rules_cores_import_only_the_standard_library(tmp_path: Path) -> None:
    assert RULES.is_dir()
    assert foreign_imports(RULES) == []
    # the check sees what it must refuse
    (tmp_path / "leaky.py").write_text("import grpc\nfrom paiju.engine import games\nimport json\n")
    assert [line.split(": ")[1] for line in foreign_imports(tmp_path)] == ["grpc", "paiju.engine"]


@pytest.mark.integration  # lint-imports, as a process of its own
def test_the_import_contracts_are_kept() -> None:
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert lint is not None, "import-linter is a pinned dev dependency"
    result = subprocess.run([lint, "--no-cache"], check=False, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:]
    assert "0 broken" in result.stdout
