"""Where a server's metrics listen: where its gRPC listens, unless configured otherwise."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from paiju.platform import serving
from paiju.platform.serving import host_of, serve_grpc


def test_the_host_of_a_listening_address() -> None:
    assert host_of("127.0.0.1:50051") == "127.0.0.1"
    assert host_of("0.0.0.0:50051") == "0.0.0.0"
    assert host_of("[::]:50051") == "::"
    assert host_of("[::1]:50051") == "::1"
    assert host_of(":50051") == "0.0.0.0"


def test_metrics_listen_where_grpc_listens(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[tuple[int, str]] = []

    def fake(port: int, addr: str = "0.0.0.0", **_: Any) -> None:
        started.append((port, addr))

    monkeypatch.setattr(serving, "start_http_server", fake)

    async def body() -> None:
        first = await serve_grpc("127.0.0.1:0", "paiju.v1.Test", lambda server: None, metrics_port=9999)
        second = await serve_grpc(
            "127.0.0.1:0", "paiju.v1.Test", lambda server: None, metrics_port=9998, metrics_host="0.0.0.0"
        )
        await first.drain(0)
        await second.drain(0)

    asyncio.run(body())
    assert started == [(9999, "127.0.0.1"), (9998, "0.0.0.0")]
