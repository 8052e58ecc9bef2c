"""Parties: players who queue together and sit as partners (docs/rules/matchmaking.md, D-MM-1 and D-MM-2).

Two pure aggregates of the LOBBY stream, like the tables (`decide` refuses with a `LobbyError`, `evolve` trusts):

- a **party** (``party-<id>``): its game, its leader, its members and the players invited. Members and open
  invites together are at most the game's team size (3 for 砸六家, 2 for 拖拉机: `paiju.rules.registry`'s
  ``team_size``), so a party always fits one team of a table;
- a player's **membership** (``member-<player id>``): the party the player belongs to and the invites they have
  not answered, at most `INVITES_PER_PLAYER` of them.

A change that concerns both (an invite, a join, a leave) is decided on both first and then appended to both, the
membership first: of two parties a player accepts at once on two replicas, the membership's append lets one in.
The party is the truth of who its members are: a membership that names a party which does not list the player
(a step that never reached the party) counts as no party (`belongs`).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, replace
from typing import Any

from paiju.lobby.table import LobbyError
from paiju.platform.errors import Reason
from paiju.rules.registry import GAMES

INVITES_PER_PLAYER = 5
"""How many invites a player may hold unanswered (D-MM-2): more are refused (INVITE_LIMIT), so nobody can be
flooded with invites."""


def team_size(game: str) -> int:
    """The largest party of ``game``: one team (砸六家 3, 拖拉机 2)."""
    return GAMES[game].team_size


PARTY_PREFIX = "party-"
"""How every party's id starts (what tells a party's aggregate from a table's or an account's)."""


def new_party_id() -> str:
    """A random party id (``party-`` and 16 hex digits)."""
    return PARTY_PREFIX + secrets.token_hex(8)


def membership_id(player_id: str) -> str:
    """The aggregate of a player's membership."""
    return "member-" + player_id


# --- events ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PartyFormed:
    party_id: str
    game: str
    leader: str
    leader_name: str


@dataclass(frozen=True, slots=True)
class PartyInvited:
    player_id: str
    name: str


@dataclass(frozen=True, slots=True)
class PartyJoined:
    player_id: str
    name: str


@dataclass(frozen=True, slots=True)
class PartyLeft:
    """A member left (the leader: the party is ``disbanded``), or an invite closed unanswered (``invite_only``)."""

    player_id: str
    invite_only: bool = False
    disbanded: bool = False


@dataclass(frozen=True, slots=True)
class MembershipChanged:
    """A player's party (empty: none) and unanswered invites, as they are after the change."""

    party_id: str
    invites: tuple[str, ...]


Event = PartyFormed | PartyInvited | PartyJoined | PartyLeft | MembershipChanged

# --- states ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Member:
    player_id: str
    name: str


@dataclass(frozen=True, slots=True)
class Party:
    """A party as its events left it (``party_id`` empty: none)."""

    party_id: str = ""
    game: str = ""
    leader: str = ""
    members: tuple[Member, ...] = ()
    invited: tuple[Member, ...] = ()
    disbanded: bool = False

    @property
    def exists(self) -> bool:
        return bool(self.party_id) and not self.disbanded

    def member(self, player_id: str) -> bool:
        return any(m.player_id == player_id for m in self.members)

    def invites(self, player_id: str) -> bool:
        return any(m.player_id == player_id for m in self.invited)


@dataclass(frozen=True, slots=True)
class Membership:
    """A player's party (empty: none) and the parties whose invites they hold."""

    party_id: str = ""
    invites: tuple[str, ...] = ()


def belongs(membership: Membership, party: Party, player_id: str) -> bool:
    """Whether the player belongs to the party the membership names (its party lists them)."""
    return (
        bool(membership.party_id) and party.exists and party.party_id == membership.party_id and party.member(player_id)
    )


# --- commands -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Form:
    party_id: str
    game: str
    leader: str
    leader_name: str


@dataclass(frozen=True, slots=True)
class Invite:
    by: str
    player_id: str
    name: str


@dataclass(frozen=True, slots=True)
class Join:
    player_id: str
    name: str


@dataclass(frozen=True, slots=True)
class Leave:
    """A member leaves; or an invite is closed (``invite_only``: declined by the player, withdrawn by the leader)."""

    player_id: str
    invite_only: bool = False


@dataclass(frozen=True, slots=True)
class Enter:
    """The player enters ``party_id`` (forming or joining it). ``current_valid``: whether the party the membership
    names lists the player (the service looks; a stale membership is overwritten)."""

    party_id: str
    current_valid: bool


@dataclass(frozen=True, slots=True)
class Exit:
    party_id: str


@dataclass(frozen=True, slots=True)
class ReceiveInvite:
    party_id: str


@dataclass(frozen=True, slots=True)
class CloseInvite:
    party_id: str


# --- decide / evolve: parties ---------------------------------------------------------------------------


def decide_party(party: Party, command: Any) -> list[Any]:
    """The events of ``command`` at ``party``, or `LobbyError` saying why not."""
    if isinstance(command, Form):
        if party.party_id:
            raise LobbyError(Reason.INVALID_REQUEST, "this party exists already")
        if command.game not in GAMES:
            raise LobbyError(Reason.INVALID_REQUEST, f"a party plays {' or '.join(GAMES)}")
        return [PartyFormed(command.party_id, command.game, command.leader, command.leader_name)]
    if not party.exists:
        raise LobbyError(Reason.PARTY_NOT_FOUND, "there is no such party")
    if isinstance(command, Invite):
        if command.by != party.leader:
            raise LobbyError(Reason.NOT_PARTY_LEADER, "only the party's leader invites")
        if party.member(command.player_id):
            raise LobbyError(Reason.ALREADY_IN_PARTY, f"{command.name} is in this party already")
        if party.invites(command.player_id):
            return []
        size = team_size(party.game)
        if len(party.members) + len(party.invited) >= size:
            raise LobbyError(
                Reason.PARTY_FULL,
                f"a {party.game} party has at most {size} players, invites included",
                {"size": size},
            )
        return [PartyInvited(command.player_id, command.name)]
    if isinstance(command, Join):
        if party.member(command.player_id):
            return []
        if not party.invites(command.player_id):
            raise LobbyError(Reason.NOT_INVITED, "you have no open invite to this party")
        return [PartyJoined(command.player_id, command.name)]
    if isinstance(command, Leave):
        if command.invite_only:
            if not party.invites(command.player_id):
                raise LobbyError(Reason.NOT_INVITED, "there is no open invite of that player to this party")
            return [PartyLeft(command.player_id, invite_only=True)]
        if not party.member(command.player_id):
            raise LobbyError(Reason.PARTY_NOT_FOUND, "you are not in this party")
        return [PartyLeft(command.player_id, disbanded=command.player_id == party.leader)]
    raise LobbyError(Reason.INVALID_REQUEST, f"not a party command: {type(command).__name__}")


def evolve_party(party: Party, event: Any) -> Party:
    if isinstance(event, PartyFormed):
        return Party(event.party_id, event.game, event.leader, (Member(event.leader, event.leader_name),))
    if isinstance(event, PartyInvited):
        return replace(party, invited=(*party.invited, Member(event.player_id, event.name)))
    if isinstance(event, PartyJoined):
        invited = tuple(m for m in party.invited if m.player_id != event.player_id)
        return replace(party, members=(*party.members, Member(event.player_id, event.name)), invited=invited)
    if isinstance(event, PartyLeft):
        if event.disbanded:
            return replace(party, disbanded=True, members=(), invited=())
        return replace(
            party,
            members=tuple(m for m in party.members if m.player_id != event.player_id),
            invited=tuple(m for m in party.invited if m.player_id != event.player_id),
        )
    raise TypeError(f"not a party event: {type(event).__name__}")


# --- decide / evolve: memberships -----------------------------------------------------------------------


def decide_membership(membership: Membership, command: Any) -> list[MembershipChanged]:
    """The membership's change, or `LobbyError`: entering a party while in another, more than
    `INVITES_PER_PLAYER` open invites."""
    if isinstance(command, Enter):
        if membership.party_id == command.party_id:
            return []
        if membership.party_id and command.current_valid:
            raise LobbyError(Reason.ALREADY_IN_PARTY, "you are in a party already: leave it first")
        invites = tuple(p for p in membership.invites if p != command.party_id)
        return [MembershipChanged(command.party_id, invites)]
    if isinstance(command, Exit):
        if membership.party_id != command.party_id:
            return []
        return [MembershipChanged("", membership.invites)]
    if isinstance(command, ReceiveInvite):
        if command.party_id in membership.invites:
            return []
        if len(membership.invites) >= INVITES_PER_PLAYER:
            raise LobbyError(
                Reason.INVITE_LIMIT,
                f"that player holds {INVITES_PER_PLAYER} open invites already: they answer some first",
                {"limit": INVITES_PER_PLAYER},
            )
        return [MembershipChanged(membership.party_id, (*membership.invites, command.party_id))]
    if isinstance(command, CloseInvite):
        if command.party_id not in membership.invites:
            return []
        return [MembershipChanged(membership.party_id, tuple(p for p in membership.invites if p != command.party_id))]
    raise LobbyError(Reason.INVALID_REQUEST, f"not a membership command: {type(command).__name__}")


def evolve_membership(membership: Membership, event: Any) -> Membership:
    if isinstance(event, MembershipChanged):
        return Membership(event.party_id, event.invites)
    raise TypeError(f"not a membership event: {type(event).__name__}")
