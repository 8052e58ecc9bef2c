"""The benchmarks' scripts as modules, for the tests that read their parts (the benchmarks are scripts under
``bench/``, not a package the tests import)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "bench"


def bench_module(script: str, name: str) -> ModuleType:
    """``bench/<script>`` loaded as the module ``name`` (registered in `sys.modules`: its dataclasses look their module
    up). A script that imports its neighbours (`bench/load.py` imports ``floor``) needs ``bench/`` on the path, as
    ``python bench/load.py`` has it."""
    spec = importlib.util.spec_from_file_location(name, BENCH / script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
