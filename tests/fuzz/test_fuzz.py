"""A fuzz of every method of every service, against the whole stack running as production runs it (processes, NATS,
PostgreSQL, bots playing): 10,000 seeded requests — hostile fields, valid-looking ones that run deep, raw bytes that
do not decode, a 1 MB request, every kind of token — 16 at a time. Every answer keeps to the error model
(errors.proto), no refused call changes a stream, and afterwards every process is alive and SERVING and a new table
of bots plays. ``bench/fuzz.py`` runs the full fuzz (100,000 requests, any seed)."""

from __future__ import annotations

import os

import pytest

from .run import fuzz

pytestmark = pytest.mark.e2e  # the whole stack as processes

SEED = int(os.environ.get("PAIJU_FUZZ_SEED", "20251201"))
REQUESTS = int(os.environ.get("PAIJU_FUZZ_REQUESTS", "10000"))


def test_every_method_answers_within_the_error_model_and_the_stack_survives() -> None:
    outcome = fuzz(SEED, REQUESTS)
    print(outcome.line())
    for method, counts in sorted(outcome.report.by_method.items()):
        print(f"  {method:36} {dict(counts.most_common())}")
    failures = outcome.failures()
    assert not failures, f"{len(failures)} failures (seed {SEED}), by kind:\n{outcome.grouped()}"
