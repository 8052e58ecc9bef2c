"""What the gRPC edge costs the server: its CPU per call behind Paiju's edge against a bare grpc.aio server.

The calls a bot or a player makes most — ``GetView``, ``GetLegalActions``, ``Watch`` (one stream: its setup, one
message, its end) and ``Act`` — with requests and answers of real sizes, taken from a 拖拉机 game played a while on
an in-process engine (a hand in the play phase; the ``Act`` is the largest move it offered). Each server runs in a
process of its own with a servicer that answers the taken responses at once; this process is the client, and sends
the requests as the seats of `GAMES` games would: at each version of a game its `SEATS` seats read alike (the same
request bytes `SEATS` times in a row), and every Act has a command id of its own.

- ``bare``: ``grpc.aio.server`` with the same options, no interceptor, no validation, no token check;
- ``edge``: ``build_server(policy)`` as the engine builds it: call metrics, decoding, protovalidate, a real Ed25519
  token of the lobby's (verified once, then remembered, as in production), the engine's roles and its own rate
  limits (every call within them: the calls are spread over `ACCOUNTS` seats' tokens);
- ``edge_unvalidated``: the same edge without the validation step (what validation costs: mostly the Act's, whose
  request is new each time, while a read's bytes are validated once per version).

The figure is the server process's CPU (user and system, every thread: ``time.process_time``) over a method's calls,
`CONCURRENCY` in flight over `CHANNELS` channels, divided by the calls; the servers take turns block by block within
each round, and the medians of ``ROUNDS`` rounds are printed, with the edge's extra CPU per call as a share of the bare
server's (the median of the rounds' shares; target: at most 15 % for GetView, GetLegalActions and Watch). One JSON
line per method and a Markdown table.

    python bench/edge.py [--calls N] [--rounds N] [--concurrency N] [--channels N]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from paiju.engine.watching import register
from paiju.platform.observability import configure_logging
from paiju.v1 import engine_pb2, engine_pb2_grpc

METHODS = ("GetView", "GetLegalActions", "Watch", "Act")
MODES = ("bare", "edge", "edge_unvalidated")
CALLS = 2000
"""Calls of one method in one round, per server."""
ROUNDS = 7
CONCURRENCY = 8
"""Calls in flight at once (a server with several clients, not one waiting for each answer)."""
CHANNELS = 4
BLOCKS = 10
"""Blocks of one method's calls in a round, the servers taking turns block by block."""
ACCOUNTS = 256
"""Seat tokens the calls are spread over (the engine's limits are per account: 60 GetView a second...)."""
GAME_ID = "bench-edge"
SEATS = 4
"""The seats of a 拖拉机 game, each asking for the view (the legal actions...) at each version alike."""
GAMES = 64
REQUESTS = 4096
"""Requests of each method, sent in turn."""
KEY_ID = "lobby.1"


# --- the payloads: taken from a real game ----------------------------------------------------------------------


async def _take_payloads() -> dict[str, bytes]:
    """Requests and answers of real sizes: a 拖拉机 game on an in-process engine (memory store), played with random
    legal moves into its play phase; the view, the legal actions and a watched event of the seat to move then, and
    the largest Act the game saw with its answer."""
    from paiju.engine.bootstrap import build
    from paiju.platform.serving import build_server
    from paiju.platform.store import MemoryEventStore
    from paiju.platform.tokens import MAX_SECONDS, Identity, Role, Signer, Trust
    from paiju.rules.rng import SeededRandom

    signer = Signer(Ed25519PrivateKey.generate(), KEY_ID)
    now = int(time.time())
    rng = SeededRandom(7)
    store = MemoryEventStore()
    _, service = await build(store, Trust.of([signer]), now=lambda: now, seeds=lambda g, v: rng.next64())
    server = build_server(service.policy)
    register(service, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()

    def md(identity: Identity) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {signer.mint(identity)}"),)

    seats = [md(Identity(f"p{s}", Role.PLAYER, GAME_ID, s, now + MAX_SECONDS[Role.PLAYER], now)) for s in range(4)]
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub: Any = engine_pb2_grpc.EngineServiceStub(channel)
            create = engine_pb2.CreateGameRequest(game_id=GAME_ID, game=engine_pb2.GAME_TRACTOR)
            for s in range(4):
                create.seats.add(seat=s, player_id=f"p{s}")
            lobby = Identity("lobby", Role.SERVICE, expires=now + MAX_SECONDS[Role.SERVICE], issued=now)
            await stub.CreateGame(create, metadata=md(lobby))
            act_request, act_response = b"", b""
            plays = 0
            while plays < 12:  # a few tricks into the play phase
                moved = False
                for seat in range(4):
                    legal = await stub.GetLegalActions(
                        engine_pb2.GetLegalActionsRequest(game_id=GAME_ID), metadata=seats[seat]
                    )
                    if not legal.actions:
                        continue
                    action = legal.actions[rng.below(len(legal.actions))]
                    largest = _act(max(legal.actions, key=lambda a: a.ByteSize()), legal.version).SerializeToString()
                    act_request = max(act_request, largest, key=len)  # the largest move offered: several cards
                    answer = await stub.Act(_act(action, legal.version), metadata=seats[seat])
                    act_response = max(act_response, answer.SerializeToString(), key=len)
                    plays += action.tractor.WhichOneof("command") == "play"
                    moved = True
                    break
                if not moved:
                    raise RuntimeError("the benchmark's game stopped with no seat to move")
            for seat in range(4):
                legal = await stub.GetLegalActions(
                    engine_pb2.GetLegalActionsRequest(game_id=GAME_ID), metadata=seats[seat]
                )
                if legal.actions:
                    break
            view = await stub.GetView(engine_pb2.GetViewRequest(game_id=GAME_ID), metadata=seats[seat])
            watch = engine_pb2.WatchRequest(game_id=GAME_ID, from_version=view.version - 1)
            watching = stub.Watch(watch, metadata=seats[seat])
            watched = await watching.read()
            watching.cancel()
    finally:
        await server.stop(None)
        await store.close()
    return {
        "GetView.request": engine_pb2.GetViewRequest(game_id=GAME_ID, min_version=view.version).SerializeToString(),
        "GetView.response": view.SerializeToString(),
        "GetLegalActions.request": engine_pb2.GetLegalActionsRequest(
            game_id=GAME_ID, min_version=legal.version
        ).SerializeToString(),
        "GetLegalActions.response": legal.SerializeToString(),
        "Watch.request": watch.SerializeToString(),
        "Watch.response": watched.SerializeToString(),
        "Act.request": act_request,
        "Act.response": act_response,
    }


def _act(action: Any, version: int) -> engine_pb2.ActRequest:
    request = engine_pb2.ActRequest(game_id=GAME_ID, command_id=uuid.uuid4().hex, expected_version=version)
    request.tractor.CopyFrom(action.tractor)
    return request


# --- the server process ----------------------------------------------------------------------------------------


class Canned(engine_pb2_grpc.EngineServiceServicer):
    """Answers each method with its taken response (Watch: one message, then the stream ends), registered as the
    engine registers itself (`paiju.engine.watching.register`)."""

    def __init__(self, payloads: dict[str, bytes]) -> None:
        self.view = engine_pb2.GetViewResponse.FromString(payloads["GetView.response"])
        self.legal = engine_pb2.GetLegalActionsResponse.FromString(payloads["GetLegalActions.response"])
        self.watched = payloads["Watch.response"]
        """Sent as it is: the engine encodes an event once for every watcher of it (its Watch serializer passes
        bytes through)."""
        self.acted = engine_pb2.ActResponse.FromString(payloads["Act.response"])

    async def GetView(self, request: Any, context: Any) -> Any:
        return self.view

    async def GetLegalActions(self, request: Any, context: Any) -> Any:
        return self.legal

    async def Act(self, request: Any, context: Any) -> Any:
        return self.acted

    async def Watch(self, request: Any, context: Any) -> AsyncIterator[Any]:
        yield self.watched


class NoValidation:
    """A validator that finds nothing (the edge without its validation step)."""

    def collect_violations(self, message: Any) -> list[Any]:
        return []


def _server(mode: str, folder: Path) -> grpc.aio.Server:
    from paiju.engine.service import RATE_LIMITS, ROLES
    from paiju.platform.edge import Policy
    from paiju.platform.limits import RateLimits
    from paiju.platform.serving import SERVER_OPTIONS, build_server
    from paiju.platform.tokens import Trust, Verifier

    if mode == "bare":
        return grpc.aio.server(options=SERVER_OPTIONS)
    trust = Trust.from_jwks((folder / "keys.json").read_text())
    policy = Policy(
        authenticator=Verifier(trust, lambda: int(time.time())), limits=RateLimits(RATE_LIMITS), roles=ROLES
    )
    return build_server(policy, validator=NoValidation() if mode == "edge_unvalidated" else None)


async def _serve(mode: str, folder: Path) -> None:
    """Serve until stdin closes; each line ``cpu`` on stdin is answered with this process's CPU time (ns)."""
    payloads = {k: base64.b64decode(v) for k, v in json.loads((folder / "payloads.json").read_text()).items()}
    server = _server(mode, folder)
    register(Canned(payloads), server)  # type: ignore[abstract]  # as the engine registers: Watch passes bytes
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    print(port, flush=True)
    while line := await reader.readline():
        if line.strip() == b"cpu":
            print(time.process_time_ns(), flush=True)
    await server.stop(None)


# --- the client ------------------------------------------------------------------------------------------------


class Server:
    """A server process of one mode and the client's channels to it."""

    def __init__(self, mode: str, folder: Path, channels: int = CHANNELS) -> None:
        self.mode = mode
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve", mode, str(folder)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None and self.process.stdin is not None
        port = int(self.process.stdout.readline())
        self.channels = [
            grpc.aio.insecure_channel(f"127.0.0.1:{port}", options=[("grpc.use_local_subchannel_pool", 1)])
            for _ in range(channels)
        ]
        self.stubs: list[Any] = [engine_pb2_grpc.EngineServiceStub(c) for c in self.channels]
        self.sent = 0
        """Calls sent to this server (the next request is the one after)."""

    def cpu(self) -> int:
        assert self.process.stdout is not None and self.process.stdin is not None
        self.process.stdin.write("cpu\n")
        self.process.stdin.flush()
        return int(self.process.stdout.readline())

    async def close(self) -> None:
        for channel in self.channels:
            await channel.close()
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(10)


def _requests(payloads: dict[str, bytes]) -> dict[str, list[Any]]:
    """Each method's requests in the order they are sent (then again from the first): as the seats of `GAMES` games
    make them — at each version of a game its `SEATS` seats ask alike, so a read's bytes come `SEATS` times in a row
    — and every Act with a command id of its own."""
    taken: dict[str, Any] = {
        "GetView": engine_pb2.GetViewRequest.FromString(payloads["GetView.request"]),
        "GetLegalActions": engine_pb2.GetLegalActionsRequest.FromString(payloads["GetLegalActions.request"]),
        "Watch": engine_pb2.WatchRequest.FromString(payloads["Watch.request"]),
        "Act": engine_pb2.ActRequest.FromString(payloads["Act.request"]),
    }
    requests: dict[str, list[Any]] = {method: [] for method in METHODS}
    for k in range(REQUESTS):
        game, later = f"{GAME_ID}-{(k // SEATS) % GAMES}", k // (SEATS * GAMES)
        for method, request in taken.items():
            made = type(request)()
            made.CopyFrom(request)
            made.game_id = game
            if method == "Watch":
                made.from_version += later
            elif method == "Act":
                made.command_id = uuid.uuid4().hex
                made.expected_version += later
            else:
                made.min_version += later
            requests[method].append(made)
    return requests


async def _calls(
    server: Server, method: str, requests: list[Any], tokens: list[Any], calls: int, *, concurrency: int = CONCURRENCY
) -> None:
    """``calls`` calls of ``method`` (the next of ``requests`` each), ``concurrency`` at a time; every one must
    succeed."""
    done = 0

    async def worker(n: int) -> None:
        nonlocal done
        stub = server.stubs[n % len(server.stubs)]
        call = getattr(stub, method)
        while done < calls:
            request = requests[server.sent % len(requests)]
            metadata = tokens[server.sent % len(tokens)]
            server.sent += 1
            done += 1
            if method == "Watch":
                answers = [a async for a in call(request, metadata=metadata)]
                if len(answers) != 1:
                    raise RuntimeError(f"a Watch answered {len(answers)} messages")
            else:
                await call(request, metadata=metadata)

    await asyncio.gather(*(worker(n) for n in range(concurrency)))


async def _measure(
    folder: Path, payloads: dict[str, bytes], calls: int, rounds: int, *, concurrency: int, channels: int
) -> dict[str, dict[str, list[float]]]:
    """Per mode and method, the server's CPU per call (µs) in each round. Within a round each method's calls go to
    the servers in `BLOCKS` blocks, the servers taking turns block by block (the order reversed every other block),
    so that a change in the machine's load falls on every server alike."""
    from paiju.platform.tokens import MAX_SECONDS, Identity, Role, Signer, Trust

    signer = Signer(Ed25519PrivateKey.generate(), KEY_ID)
    (folder / "keys.json").write_text(Trust.of([signer]).jwks())

    def minted() -> list[tuple[tuple[str, str], ...]]:
        """The accounts' tokens, fresh: a player's lives 15 minutes at most (`MAX_SECONDS`), less than a whole run."""
        now = int(time.time())
        lifetime = MAX_SECONDS[Role.PLAYER]
        identities = [Identity(f"p{a}", Role.PLAYER, GAME_ID, a % 4, now + lifetime, now) for a in range(ACCOUNTS)]
        return [(("authorization", f"Bearer {signer.mint(identity)}"),) for identity in identities]

    tokens = minted()
    requests = _requests(payloads)
    servers = [Server(mode, folder, min(channels, concurrency)) for mode in MODES]
    cpu: dict[str, dict[str, list[float]]] = {mode: {m: [] for m in METHODS} for mode in MODES}
    block = max(1, calls // BLOCKS)
    try:
        for server in servers:  # warm up: connections, the verifier's cache of the tokens, the validator's rules
            for method in METHODS:
                await _calls(server, method, requests[method], tokens, max(ACCOUNTS, block), concurrency=concurrency)
        for _ in range(rounds):
            # fresh tokens each round (a run may outlast a token), learnt by every server's verifier before the round
            # is timed: verified once and remembered for the token's life, as in production, they are not the cost of
            # a call (timed, the 256 verifications fell on the round's first method: about 10 points of its share)
            tokens = minted()
            for server in servers:
                await _calls(server, "GetLegalActions", requests["GetLegalActions"], tokens, ACCOUNTS)
            for method in METHODS:
                spent = dict.fromkeys(MODES, 0)
                for b in range(BLOCKS):
                    for server in servers if b % 2 == 0 else reversed(servers):
                        before = server.cpu()
                        await _calls(server, method, requests[method], tokens, block, concurrency=concurrency)
                        spent[server.mode] += server.cpu() - before
                for mode in MODES:
                    cpu[mode][method].append(spent[mode] / (block * BLOCKS) / 1000)
    finally:
        for server in servers:
            await server.close()
    return cpu


def _extra(edge: list[float], bare: list[float]) -> float:
    """The median over the rounds of ``edge``'s extra CPU as a percentage of ``bare``'s in the same round."""
    return round(statistics.median(100 * (e - b) / b for e, b in zip(edge, bare, strict=True)), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--serve", nargs=2, metavar=("MODE", "FOLDER"), help=argparse.SUPPRESS)
    parser.add_argument("--calls", type=int, default=CALLS)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--concurrency", type=int, default=CONCURRENCY, help="calls in flight at once")
    parser.add_argument("--channels", type=int, default=CHANNELS)
    args = parser.parse_args()
    if args.serve:
        configure_logging("warning")
        asyncio.run(_serve(args.serve[0], Path(args.serve[1])))
        return
    configure_logging("warning")
    payloads = asyncio.run(_take_payloads())
    with tempfile.TemporaryDirectory() as data:
        folder = Path(data)
        (folder / "payloads.json").write_text(
            json.dumps({k: base64.b64encode(v).decode() for k, v in payloads.items()})
        )
        cpu = asyncio.run(
            _measure(folder, payloads, args.calls, args.rounds, concurrency=args.concurrency, channels=args.channels)
        )
    print(
        f"gRPC edge: server CPU per call, medians of {args.rounds} rounds of {args.calls} calls per method and server "
        f"({args.concurrency} in flight over {min(args.channels, args.concurrency)} channels); extra: the median over "
        "the rounds of the edge's extra CPU as a share of the bare server's in the same round"
    )
    rows = []
    sizes = _requests(payloads)
    for method in METHODS:
        bare, edge, unvalidated = (cpu[mode][method] for mode in MODES)
        row = {
            "method": method,
            "request_bytes": len(sizes[method][0].SerializeToString()),
            "response_bytes": len(payloads[f"{method}.response"]),
            "bare_us": round(statistics.median(bare), 1),
            "edge_us": round(statistics.median(edge), 1),
            "edge_unvalidated_us": round(statistics.median(unvalidated), 1),
            "edge_extra_pct": _extra(edge, bare),
            "edge_unvalidated_extra_pct": _extra(unvalidated, bare),
            "validation_us": round(statistics.median(e - u for e, u in zip(edge, unvalidated, strict=True)), 1),
            "rounds": len(bare),
        }
        rows.append(row)
        print(json.dumps(row))
    print()
    print("| method | request B | response B | bare µs | edge µs | extra | edge w/o validation µs | extra |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        print(
            f"| {row['method']} | {row['request_bytes']} | {row['response_bytes']} | {row['bare_us']}"
            f" | {row['edge_us']} | {row['edge_extra_pct']} % | {row['edge_unvalidated_us']}"
            f" | {row['edge_unvalidated_extra_pct']} % |"
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
