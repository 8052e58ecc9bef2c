"""The serving engine's garbage collector (`paiju.engine.bootstrap.settle_collector`): what start-up made is left out
of later collections, and the young generation is looked at less often. Checked in a process of its own: the
collector's settings are the process's."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from paiju.engine.bootstrap import YOUNG_COLLECTION

CHECK = """
import gc, json
from paiju.engine.bootstrap import settle_collector
before = gc.get_threshold()
kept = [[] for _ in range(1000)]  # made at start-up, alive for good
settle_collector()
print(json.dumps({"before": before, "after": gc.get_threshold(), "frozen": gc.get_freeze_count()}))
"""


@pytest.mark.integration  # runs a Python process
def test_a_serving_engine_freezes_what_it_started_with_and_collects_its_young_generation_less_often() -> None:
    out = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=60, check=True)
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["before"][0] < YOUNG_COLLECTION, "Python's default looks at the young generation more often"
    assert seen["after"] == [YOUNG_COLLECTION, *seen["before"][1:]], "only the young generation's threshold moves"
    assert seen["frozen"] > 1000, "start-up's objects (the lists made before) are out of every later collection"
