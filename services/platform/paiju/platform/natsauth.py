"""Who may do what on NATS: one NKey user per service, each allowed its own subjects only (docs/operations.md,
"Security").

Every user is in the server's one account (the global account, where the streams of a deployment that ran
without authentication already are: they keep working), with permissions made from the streams' names and subject
prefixes (`Streams`):

- **the engine** publishes ``paiju.game.>`` (the GAMES stream) and reads the lobby's stream (the matches it starts);
- **the lobby** publishes ``paiju.lobby.>`` (LOBBY) and reads GAMES (match results) and TOURNAMENTS (paired rounds);
- **scoring** publishes ``paiju.tournament.>`` (TOURNAMENTS) and reads GAMES and LOBBY;
- **the analyst tools** (``paiju replay``, ``export``, ``verify``) read the three streams and write nothing;
- **admin** may do anything: an operator's maintenance, never a service's.

Through the JetStream API (``$JS.API.>``) a service creates and updates only the streams it writes and its own
key-value buckets (a bucket is the stream ``KV_<bucket>``), and makes, reads and deletes consumers only on the
streams it reads or writes; nobody deletes or purges a stream or one of its messages (the streams also deny both
themselves). The web view and the bot runner have no NATS credentials at all: they talk to the services over gRPC.
A process receives replies and deliveries on an inbox of its own (``_INBOX_<role>.…``, `inbox_prefix`), so one
service cannot listen to what the server sends another.

`server_users` is the server's ``authorization`` block for these users; `make_keys` writes one NKey seed per user
(``<role>.nk``, readable by its owner only) and that block (``users.conf``), once: ``paiju keys nats`` for a
deployment, `make run` and the test stacks under ``.data/keys/nats``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROLES = ("engine", "lobby", "scoring", "analyst", "admin")
"""The NATS users of a deployment."""
SEED_SUFFIX = ".nk"
USERS_FILE = "users.conf"
"""The server's ``authorization`` block, included by the server's configuration."""


@dataclass(frozen=True)
class Streams:
    """The streams of a deployment and their subject prefixes (the services' settings ``PAIJU_GAMES_STREAM``…)."""

    games: str = "GAMES"
    games_prefix: str = "paiju.game"
    lobby: str = "LOBBY"
    lobby_prefix: str = "paiju.lobby"
    tournaments: str = "TOURNAMENTS"
    tournaments_prefix: str = "paiju.tournament"


def buckets(role: str, streams: Streams = Streams()) -> list[str]:
    """The key-value buckets ``role`` keeps (the engine's: its consumers' checkpoints, the leases on the games'
    partitions, the live games; the lobby's: who watches which table)."""
    if role == "engine":
        return ["paiju-engine-checkpoints", f"paiju-owners-{streams.games}", f"paiju-live-{streams.games}"]
    if role == "lobby":
        return [f"paiju-presence-{streams.lobby}", f"paiju-matchmaking-{streams.lobby}"]
    return []


def inbox_prefix(role: str) -> str:
    """The inbox a process of ``role`` receives replies and deliveries on."""
    return f"_INBOX_{role}"


def _owned(role: str, streams: Streams) -> list[tuple[str, str]]:
    """(stream, subject prefix) of the streams ``role`` writes."""
    return {
        "engine": [(streams.games, streams.games_prefix)],
        "lobby": [(streams.lobby, streams.lobby_prefix)],
        "scoring": [(streams.tournaments, streams.tournaments_prefix)],
    }.get(role, [])


def _read(role: str, streams: Streams) -> list[str]:
    """The streams ``role`` reads and does not write."""
    return {
        "engine": [streams.lobby],
        "lobby": [streams.games, streams.tournaments],
        "scoring": [streams.games, streams.lobby],
        "analyst": [streams.games, streams.lobby, streams.tournaments],
    }.get(role, [])


def _reading(stream: str) -> list[str]:
    """The JetStream API subjects of reading ``stream``: its info, its messages by sequence or subject (direct gets
    too), and consumers of it (made, looked at, pulled from, deleted); the acknowledgements and flow control answers
    of those consumers."""
    api = "$JS.API"
    return [
        f"{api}.STREAM.INFO.{stream}",
        f"{api}.STREAM.MSG.GET.{stream}",
        f"{api}.DIRECT.GET.{stream}",
        f"{api}.DIRECT.GET.{stream}.>",
        f"{api}.CONSUMER.CREATE.{stream}",
        f"{api}.CONSUMER.CREATE.{stream}.>",
        f"{api}.CONSUMER.DURABLE.CREATE.{stream}.>",
        f"{api}.CONSUMER.INFO.{stream}.>",
        f"{api}.CONSUMER.DELETE.{stream}.>",
        f"{api}.CONSUMER.MSG.NEXT.{stream}.>",
        f"{api}.CONSUMER.NAMES.{stream}",
        f"{api}.CONSUMER.LIST.{stream}",
        f"$JS.ACK.{stream}.>",
        f"$JS.FC.{stream}.>",
    ]


def _writing(stream: str) -> list[str]:
    """What only a stream's owner may ask of the JetStream API: to create it and to change its configuration."""
    return [f"$JS.API.STREAM.CREATE.{stream}", f"$JS.API.STREAM.UPDATE.{stream}"]


NOBODY = ["$JS.API.STREAM.DELETE.>", "$JS.API.STREAM.PURGE.>", "$JS.API.STREAM.MSG.DELETE.>"]
"""What no user may ask, whatever it may otherwise (admin included: a stream is deleted by a server's operator
with the server's own tools, never by a Paiju credential)."""


def permissions(role: str, streams: Streams = Streams()) -> dict[str, Any]:
    """The publish and subscribe permissions of ``role`` (NATS's ``permissions`` of a user)."""
    if role not in ROLES:
        raise ValueError(f"{role!r} is not one of {', '.join(ROLES)}")
    if role == "admin":
        return {"publish": {"allow": [">"], "deny": NOBODY}, "subscribe": {"allow": [">"]}}
    publish = ["$JS.API.INFO"]
    subscribe = [f"{inbox_prefix(role)}.>"]
    for stream, prefix in _owned(role, streams):
        publish += [f"{prefix}.>", *_writing(stream), *_reading(stream)]
        subscribe.append(f"{prefix}.>")  # its own appends as they happen (a game's watchers hear the next event)
    for bucket in buckets(role, streams):
        publish += [f"$KV.{bucket}.>", *_writing(f"KV_{bucket}"), *_reading(f"KV_{bucket}")]
    for stream in _read(role, streams):
        publish += _reading(stream)
    return {"publish": {"allow": publish, "deny": NOBODY}, "subscribe": {"allow": subscribe}}


def server_users(
    public_keys: dict[str, str], streams: Streams = Streams(), *, extra: list[dict[str, Any]] | None = None
) -> str:
    """The server's ``authorization`` block (NATS configuration, which reads JSON) for the users of ``public_keys``
    (role -> NKey public key), and ``extra`` users as given."""
    users: list[dict[str, Any]] = [
        {"nkey": key, "permissions": permissions(role, streams)} for role, key in sorted(public_keys.items())
    ]
    users += extra or []
    return "authorization {\n  users = " + json.dumps(users, indent=2).replace("\n", "\n  ") + "\n}\n"


def new_seed() -> bytes:
    """A new user NKey seed (``SU…``)."""
    import nkeys  # type: ignore[import-untyped]  # nats-py's own NKeys library (nats-py[nkeys])

    return bytes(nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER))


def public_key(seed: bytes) -> str:
    """The public key (``U…``) of a user NKey seed."""
    import nkeys

    return str(nkeys.from_seed(bytearray(seed.strip())).public_key.decode())


def make_keys(
    folder: Path, streams: Streams = Streams(), *, extra: list[dict[str, Any]] | None = None
) -> dict[str, Path]:
    """One NKey seed file per role in ``folder`` (made once, readable by its owner only; an existing one is kept),
    and the server's `USERS_FILE` for them (written again each time, from the seeds and ``streams``). Role -> seed
    file."""
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    files = {}
    for role in ROLES:
        path = folder / f"{role}{SEED_SUFFIX}"
        if not path.exists():
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "wb") as out:
                out.write(new_seed() + b"\n")
        files[role] = path
    keys = {role: public_key(path.read_bytes()) for role, path in files.items()}
    (folder / USERS_FILE).write_text(server_users(keys, streams, extra=extra))
    return files
