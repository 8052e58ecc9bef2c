"""A table's spectator policy at the lobby's edge (docs/rules/spectators.md): the policy a `CreateTable` request
chooses, the policy in the API's picture of a table, and the spectator tokens `JoinGame` gives or refuses.

The policy itself — and the default of ranked and tournament tables (D-SPEC-3) — is the table's
(`paiju.lobby.table.Spectators`, `paiju.lobby.table.spectators_of`); it travels with every `MatchStarted` to the
engine, which holds each game's spectators to it.
"""

from __future__ import annotations

from paiju.lobby import table as tb
from paiju.platform.errors import Reason, Refused
from paiju.v1 import lobby_pb2


def chosen_spectators(request: lobby_pb2.CreateTableRequest) -> tb.Spectators | None:
    """The policy a `CreateTable` request chose (``None``: the table's default, `paiju.lobby.table.spectators_of`).
    The delay's bounds are the table's to check (`paiju.lobby.table.decide`)."""
    if not request.HasField("spectators"):
        return None
    return tb.Spectators(closed=request.spectators.closed, delay_moves=request.spectators.delay_moves)


def show_spectators(table: tb.Table, message: lobby_pb2.Table) -> None:
    """Put ``table``'s policy in its API picture (left unset for a table opened before policies: public)."""
    if table.spectators is not None:
        message.spectators.closed = table.spectators.closed
        message.spectators.delay_moves = table.spectators.delay_moves


def admit_spectator(table: tb.Table) -> None:
    """Refuse a spectator token for a table that admits no spectators (SPECTATORS_NOT_ALLOWED, D-SPEC-1)."""
    if table.spectators is not None and table.spectators.closed:
        raise Refused(
            Reason.SPECTATORS_NOT_ALLOWED,
            "this table admits no spectators: only its players watch its games",
            {"table": table.table_id},
        )


__all__ = ["admit_spectator", "chosen_spectators", "show_spectators"]
