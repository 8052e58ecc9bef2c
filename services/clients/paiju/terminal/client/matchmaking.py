"""Parties and the matchmaking queue in the terminal (docs/rules/matchmaking.md): form a party and invite friends
(``--party --invite NAME``), accept an invite (``--accept``), and queue for a match (``--queue``) — a party's
leader for the whole party, its members following the party's entry — confirming the match when it is offered.
What comes back is the table the lobby seated the player at, its match started.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import grpc

from paiju.contract.matches import GAMES
from paiju.terminal.client.console import Console
from paiju.terminal.client.games import PRESENTATIONS
from paiju.terminal.client.lobby import LobbyClient, LobbyFailed, lobby_error
from paiju.v1 import lobby_events_pb2, lobby_pb2

MODES = {"casual": lobby_events_pb2.MATCH_MODE_CASUAL, "ranked": lobby_events_pb2.MATCH_MODE_RANKED}
QUIT = ("q", "quit", "exit")
REOPEN_SECONDS = 0.5
"""The pause before following the queue again after a lobby ended the stream (it is shutting down): a lobby that
still answers while it drains ends each new stream at once, which must not be a loop of calls."""


async def _call(lobby: LobbyClient, what: str, request: Any) -> Any:
    try:
        return await getattr(lobby.stub, what)(request, metadata=lobby.metadata, timeout=10.0)
    except grpc.aio.AioRpcError as e:
        raise lobby_error(what, e) from None


def describe_party(party: lobby_pb2.Party) -> str:
    members = ", ".join(m.name for m in party.members)
    invited = ", ".join(m.name for m in party.invited)
    return f"Party {party.party_id}: {members}" + (f" (invited: {invited})" if invited else "")


async def form_party(lobby: LobbyClient, args: argparse.Namespace, console: Console) -> bool:
    """Form the party and invite ``--invite``; then wait for the player to say the party is complete. ``False``:
    the player quit."""
    game = GAMES[args.kind]
    party = (await _call(lobby, "CreateParty", lobby_pb2.CreatePartyRequest(game=game))).party
    console.line(f"You lead party {party.party_id}.")
    for name in args.invite:
        party = (await _call(lobby, "InviteToParty", lobby_pb2.InviteToPartyRequest(player_name=name))).party
        console.line(f"Invited {name}.")
    console.line("Press Enter to queue once your friends have joined (q to leave).")
    line = await console.read()
    if line is None or line.strip().lower() in QUIT:
        await _call(lobby, "LeaveParty", lobby_pb2.LeavePartyRequest())
        return False
    party = (await _call(lobby, "GetParty", lobby_pb2.GetPartyRequest())).party
    console.line(describe_party(party))
    return True


async def accept_invite(lobby: LobbyClient, party_id: str, console: Console) -> None:
    """Accept the invite to ``party_id`` (empty: the first open one)."""
    if not party_id:
        invites = (await _call(lobby, "GetParty", lobby_pb2.GetPartyRequest())).invites
        if not invites:
            raise LobbyFailed("You have no open invite: ask the party's leader to invite you first.")
        party_id = invites[0].party_id
    party = (await _call(lobby, "AcceptPartyInvite", lobby_pb2.AcceptPartyInviteRequest(party_id=party_id))).party
    console.line(f"You joined {describe_party(party)}.")


async def find_match(lobby: LobbyClient, args: argparse.Namespace, console: Console) -> lobby_pb2.MatchFound | None:
    """Queue (or follow the party's entry) until seated: the table and seat; ``None`` when the entry ended (the
    player quit, did not confirm, or left)."""
    mode = "ranked" if args.ranked else "casual"
    request = lobby_pb2.FindMatchRequest(
        game=GAMES[args.kind], mode=MODES[mode], bot_wait_seconds=0 if args.ranked else max(0, args.bot_wait)
    )
    stream = lobby.stub.FindMatch(request, metadata=lobby.metadata)
    console.line(f"Looking for a {mode} {PRESENTATIONS[args.kind].title} match (q to leave the queue)...")
    offered: set[str] = set()
    confirmed: set[str] = set()
    try:
        while True:
            update = await _next(stream, console)
            if update is None:  # q: out of the queue now, not when the grace after the stream is over
                await _leave_queue(lobby, console)
                return None
            kind = update.WhichOneof("update")
            if kind == "waiting" and update.waiting.players:
                names = ", ".join(p.name for p in update.waiting.players)
                console.line(f"In the queue: {names}.")
            elif kind == "offer":
                offer = update.offer
                humans = sum(1 for seat in offer.seats if seat.player_id)
                if offer.offer_id not in offered:
                    offered.add(offer.offer_id)
                    seats = ", ".join(f"{i}: {s.name}" for i, s in enumerate(offer.seats))
                    console.line(f"Match found — seats {seats}; you sit in seat {offer.seat}.")
                else:
                    console.line(f"{len(offer.confirmed)} of {humans} players confirmed.")
                if offer.offer_id not in confirmed:
                    confirmed.add(offer.offer_id)
                    await _call(lobby, "ConfirmMatch", lobby_pb2.ConfirmMatchRequest(offer_id=offer.offer_id))
                    console.line("Confirmed; waiting for the others...")
            elif kind == "found":
                found: lobby_pb2.MatchFound = update.found
                return found
            elif kind == "ended":
                reason = lobby_events_pb2.QueueLeaveReason.Name(update.ended.reason)
                console.line(f"You left the queue ({reason.removeprefix('QUEUE_LEAVE_REASON_').lower()}).")
                return None
            elif kind == "end":
                console.line("The lobby is restarting: queueing again...")
                stream.cancel()
                await asyncio.sleep(REOPEN_SECONDS)
                stream = lobby.stub.FindMatch(request, metadata=lobby.metadata)
    except grpc.aio.AioRpcError as e:
        raise lobby_error("FindMatch", e) from None
    finally:
        stream.cancel()


async def _leave_queue(lobby: LobbyClient, console: Console) -> None:
    try:
        await _call(lobby, "LeaveQueue", lobby_pb2.LeaveQueueRequest())
        console.line("You left the queue.")
    except LobbyFailed as e:  # a party's member: the leader takes the party out; or out already
        console.line(e.message)


async def _next(stream: Any, console: Console) -> Any:
    """The stream's next update, or ``None`` when the player typed q (they leave the queue)."""
    while True:
        update = asyncio.ensure_future(stream.read())
        line = console.next_line()
        await asyncio.wait({update, line}, return_when=asyncio.FIRST_COMPLETED)
        if update.done():  # the typed line's task stays pending for the next read (no line is lost)
            answer = update.result()
            return None if answer is grpc.aio.EOF else answer
        update.cancel()
        text = console.take()
        if text is None or text.strip().lower() in QUIT:
            return None


async def matchmade(lobby: LobbyClient, args: argparse.Namespace, console: Console) -> lobby_pb2.Table | None:
    """``paiju play --party/--accept/--queue``: the table the queue seated the player at (``None``: they quit)."""
    if args.party and not await form_party(lobby, args, console):
        return None
    if args.accept is not None:
        await accept_invite(lobby, args.accept, console)
    found = await find_match(lobby, args, console)
    if found is None:
        return None
    console.line(f"Seated at table {found.table_id}, seat {found.seat}.")
    return await lobby.get_table(found.table_id)
