"""Where a server's metrics listen: where its gRPC listens, unless configured otherwise."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from paiju.platform import serving
from paiju.platform.callmetrics import CallMetrics
from paiju.platform.edge import Edge, Policy, caller, shared_validator
from paiju.platform.serving import build_server, host_of, serve_grpc
from paiju.platform.tokens import Identity, Role, Verifier
from paiju.v1 import cards_pb2, engine_pb2, engine_pb2_grpc, lobby_pb2, tractor_pb2

from ..engine.harness import refusal_of
from ..support.credentials import TRUST
from ..support.tokens import token_metadata

TRACTOR_PLAY = tractor_pb2.TractorCommand(
    play=tractor_pb2.TractorPlay(seat=2, cards=[cards_pb2.CARD_2S, cards_pb2.CARD_2H])
)


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


# --- the edge, wrapped at registration ------------------------------------------------------------------------

SERVICE = "paiju.v1.EngineService"
ENDED = engine_pb2.WatchResponse(end=engine_pb2.WatchEnd(version=7)).SerializeToString()
"""A Watch answer encoded beforehand (what the engine's own Watch serializer passes through)."""


class Counting:
    """The edge's validator, counting the messages it validates."""

    def __init__(self) -> None:
        self.validated: list[str] = []

    def collect_violations(self, message: Any) -> Any:
        self.validated.append(type(message).__name__)
        return shared_validator().collect_violations(message)


def handlers() -> dict[str, grpc.RpcMethodHandler[Any, Any]]:
    async def view(request: Any, context: Any) -> engine_pb2.GetViewResponse:
        who: Identity = caller()
        return engine_pb2.GetViewResponse(version=request.min_version + (who.seat or 0))

    async def act(request: Any, context: Any) -> engine_pb2.ActResponse:
        return engine_pb2.ActResponse(version=request.expected_version)

    async def watch(request: Any, context: Any) -> AsyncIterator[bytes]:
        caller()
        yield ENDED

    return {
        "GetView": grpc.unary_unary_rpc_method_handler(
            view, engine_pb2.GetViewRequest.FromString, engine_pb2.GetViewResponse.SerializeToString
        ),
        "Act": grpc.unary_unary_rpc_method_handler(
            act, engine_pb2.ActRequest.FromString, engine_pb2.ActResponse.SerializeToString
        ),
        "Watch": grpc.unary_stream_rpc_method_handler(watch, engine_pb2.WatchRequest.FromString, lambda sent: sent),
    }


@pytest.mark.parametrize("how", ["registered", "generic", "interceptors"])
def test_the_edge_wraps_each_method_once_and_answers_as_it_did(monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """Behind `build_server` each method's handler is wrapped once (when registered, or at its first call through
    a generic handler; installed as interceptors, at its first call), never per call; the wrapped handler keeps the
    method's own response serializer (pre-encoded bytes pass through), the caller's identity reaches the handler,
    and refusals are what they were: undecodable bytes, a field against the contract's rules, no token. Valid
    request bytes are validated once; a command's request (its own command id) each time."""
    wrapped: list[str] = []
    wrap = Edge.wrap

    def counted(self: Edge, full: str, handler: Any, record: Any = None) -> Any:
        wrapped.append(full.rpartition("/")[2])
        return wrap(self, full, handler, record)

    monkeypatch.setattr(Edge, "wrap", counted)
    validator = Counting()

    async def body() -> None:
        policy = Policy(authenticator=Verifier(TRUST, lambda: int(time.time())))
        if how == "interceptors":
            server = grpc.aio.server(interceptors=[CallMetrics(), Edge(policy, validator)])
        else:
            server = build_server(policy, validator=validator)
        if how != "generic":
            server.add_registered_method_handlers(SERVICE, handlers())
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers()),))
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        seat = token_metadata(role=Role.PLAYER, subject="p2", game="g1", seat=2)
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                engine: Any = engine_pb2_grpc.EngineServiceStub(channel)
                for _ in range(3):
                    view = await engine.GetView(engine_pb2.GetViewRequest(game_id="g1", min_version=5), metadata=seat)
                    assert view.version == 7
                    acted = await engine.Act(
                        engine_pb2.ActRequest(
                            game_id="g1", command_id=uuid.uuid4().hex, expected_version=4, tractor=TRACTOR_PLAY
                        ),
                        metadata=seat,
                    )
                    assert acted.version == 4
                    assert [a async for a in engine.Watch(engine_pb2.WatchRequest(game_id="g1"), metadata=seat)] == [
                        engine_pb2.WatchResponse.FromString(ENDED)
                    ]
                bad = engine_pb2.GetViewRequest(game_id="not an id!")
                assert await refusal_of(engine.GetView(bad, metadata=seat)) == (
                    grpc.StatusCode.INVALID_ARGUMENT,
                    "INVALID_REQUEST",
                )
                assert await refusal_of(engine.GetView(engine_pb2.GetViewRequest(game_id="g1"))) == (
                    grpc.StatusCode.UNAUTHENTICATED,
                    "TOKEN_MISSING",
                )
                raw: Any = channel.unary_unary(f"/{SERVICE}/GetView")
                assert await refusal_of(raw(b"\xff\xff\xff", metadata=seat)) == (
                    grpc.StatusCode.INVALID_ARGUMENT,
                    "MALFORMED_MESSAGE",
                )
                assert (
                    await engine.GetView(engine_pb2.GetViewRequest(game_id="g1", min_version=5), metadata=seat)
                ).version == 7
        finally:
            await server.stop(None)

    asyncio.run(body())
    assert sorted(wrapped) == ["Act", "GetView", "Watch"], "each method wrapped once, not at each call"
    # at registration each request type once (its rules compiled), then: the same GetView bytes once (four times
    # sent), the invalid ones, the ones sent without a token; each Act (three command ids); the Watch bytes once
    assert Counter(validator.validated) == {"GetViewRequest": 4, "ActRequest": 4, "WatchRequest": 2}


def test_the_requests_of_a_sign_in_or_holding_a_password_are_not_remembered_valid() -> None:
    """Valid bytes are remembered only for methods that need a token and whose requests hold no password: a
    Login (public, a password) is validated at every call, whatever the policy says of it."""
    validator = Counting()
    sent = {
        "Login": lobby_pb2.LoginRequest(name="ann", password="correct horse battery"),
        "Register": lobby_pb2.RegisterRequest(name="ann", password="correct horse battery"),
        "GetTable": lobby_pb2.GetTableRequest(table_id="t1"),
    }

    class Context:
        def code(self) -> None:
            return None

    async def answer(request: Any, context: Any) -> bytes:
        return b""

    async def body() -> None:
        edge = Edge(Policy(public=("Login",)), validator)  # Register not public here: its password is enough
        for method, request in sent.items():
            handler = grpc.unary_unary_rpc_method_handler(answer, type(request).FromString, lambda b: b)
            wrapped = edge.wrap(f"/paiju.v1.LobbyService/{method}", handler)
            assert wrapped is not None
            call: Any = wrapped.unary_unary
            for _ in range(3):
                await call(request.SerializeToString(), Context())

    asyncio.run(body())
    # one at registration, then every call but the remembered table's
    assert Counter(validator.validated) == {"LoginRequest": 4, "RegisterRequest": 4, "GetTableRequest": 2}
