"""Client channels between Paiju's services: one target, any number of replicas behind it.

A target is any gRPC name: ``host:port``; ``dns:///engine:50051`` (every address a DNS name resolves to, e.g. a
Kubernetes headless Service); or ``ipv4:127.0.0.1:50061,127.0.0.1:50062`` (a fixed list). Calls are spread
round-robin over the addresses that answer, so when a replica dies the calls go to the others; a broken
connection is retried within about two seconds (gRPC's default backoff grows to two minutes).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import grpc

from paiju.platform import tracing

ROUND_ROBIN = json.dumps({"loadBalancingConfig": [{"round_robin": {}}]})
OPTIONS: tuple[tuple[str, Any], ...] = (
    ("grpc.service_config", ROUND_ROBIN),
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.min_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", 2000),
)


def channel(target: str, options: Sequence[tuple[str, Any]] = ()) -> grpc.aio.Channel:
    """An insecure channel to ``target`` (inside the deployment's network) with the options above; its calls are
    traced when the process traces (`paiju.platform.tracing`: a client span each, the trace context sent along)."""
    return grpc.aio.insecure_channel(target, options=[*OPTIONS, *options], interceptors=tracing.client_interceptors())
