"""``paiju keys``: an operator's token keys — a new private key for an issuer, and the JWKS every service trusts —
and the NATS users (``paiju keys nats``: one NKey seed per service and for the analyst tools, and the server's block of
those users with their permissions; `paiju.platform.natsauth`).

A deployment has one key per issuer (the lobby, the bot runners, the operators), each named by a key id
``<issuer>.<version>`` (``lobby.1``). Rotating a key is: a new key (``lobby.2``); a JWKS with both public keys, rolled
out to every service; the issuer switched to the new key; after the old key's tokens have expired (15 minutes for
sessions and game tokens, the ``--ttl`` of operators' tokens), a JWKS without it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from paiju.platform.tokens import Trust, issuer_of, load_public_key, new_key


def _new(args: argparse.Namespace) -> int:
    try:
        new_key(args.file)
    except OSError as e:
        print(f"paiju keys new: {args.file}: {e.strerror or e}", file=sys.stderr)
        return 2
    return 0


def _jwks(args: argparse.Namespace) -> int:
    keys = {}
    for pair in args.keys:
        key_id, _, path = pair.partition("=")
        try:
            if not path:
                raise ValueError(f"{pair!r} is not KEY_ID=FILE")
            issuer_of(key_id)
            if key_id in keys:
                raise ValueError(f"key id {key_id} given twice")
            keys[key_id] = load_public_key(path)
        except OSError as e:
            print(f"paiju keys jwks: {path}: {e.strerror or e}", file=sys.stderr)
            return 2
        except (ValueError, TypeError) as e:
            print(f"paiju keys jwks: {e}", file=sys.stderr)
            return 2
    print(Trust(keys).jwks())
    return 0


def _nats(args: argparse.Namespace) -> int:
    from paiju.platform.natsauth import USERS_FILE, Streams, make_keys

    streams = Streams(
        args.games, args.games_prefix, args.lobby, args.lobby_prefix, args.tournaments, args.tournaments_prefix
    )
    try:
        files = make_keys(Path(args.folder), streams)
    except OSError as e:
        print(f"paiju keys nats: {args.folder}: {e.strerror or e}", file=sys.stderr)
        return 2
    for role, path in files.items():
        print(f"{role}: {path}")
    print(f"the server's users (include it in nats.conf): {Path(args.folder) / USERS_FILE}")
    return 0


def add_parser(sub: Any) -> None:
    parser = sub.add_parser("keys", help="token keys: a new private key, the JWKS of public keys services trust")
    keys = parser.add_subparsers(dest="keys_command", required=True)
    p = keys.add_parser("new", help="write a new Ed25519 private key (PEM, readable by its owner only)")
    p.add_argument("file", help="where to write it (never replaced)")
    p.set_defaults(func=_new)
    p = keys.add_parser("jwks", help="print the JWKS of the public halves of these keys (private or public PEM files)")
    p.add_argument("keys", nargs="+", metavar="KEY_ID=FILE", help="e.g. lobby.1=lobby.pem (key id: <issuer>.<version>)")
    p.set_defaults(func=_jwks)
    p = keys.add_parser(
        "nats",
        help="the NATS users: an NKey seed per service and for the analyst tools (made once, readable by their owner "
        "only) and the server's authorization block for them, users.conf (written again from the seeds)",
    )
    p.add_argument("folder", help="where the seeds are (e.g. .data/keys/nats)")
    p.add_argument("--games", default="GAMES", help="the games' stream (PAIJU_GAMES_STREAM)")
    p.add_argument("--games-prefix", default="paiju.game", help="its subject prefix")
    p.add_argument("--lobby", default="LOBBY", help="the lobby's stream (PAIJU_LOBBY_STREAM)")
    p.add_argument("--lobby-prefix", default="paiju.lobby", help="its subject prefix")
    p.add_argument("--tournaments", default="TOURNAMENTS", help="scoring's stream (PAIJU_TOURNAMENTS_STREAM)")
    p.add_argument("--tournaments-prefix", default="paiju.tournament", help="its subject prefix")
    p.set_defaults(func=_nats)
