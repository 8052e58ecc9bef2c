"""Parties and the matchmaking queue as the lobby's use cases (docs/rules/matchmaking.md).

- `Parties`: create, invite, accept, decline, leave — on the party and membership aggregates (`paiju.lobby.parties`).
- `Ratings`: the players' ratings, followed from scoring's rating ledgers on the TOURNAMENTS stream (a long-lived
  subscription from the stream's start, kept in memory: one number per rated player, game and mode, and each
  table's latest rated match, whose arrival wakes the table's `WatchTable` streams).
- `Matchmaker`: queueing (`enqueue`, `withdraw`, `confirm`), the updates a player's `FindMatch` stream shows
  (`updates`), and the forming of matches (`run`) for the games this replica holds the lease of
  (`paiju.platform.ownership`, one partition per game: one replica forms a game's matches at a time).

An entry lives while a `FindMatch` stream of its player (a party: any member's) is open through some replica, and
`GRACE_SECONDS` after (D-MM-5): each stream marks the player present in the lobby's attendance bucket under the
table name `QUEUE_ATTENDANCE`; when a player's last stream ends here, or their replica dies, the entry is dropped
(GONE) unless a stream of theirs is open again when the grace is over. A lobby that starts (or takes a game's lease)
gives every entry of the game that grace to be followed again, so the queue survives a restart of every lobby.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from typing import Any

import structlog

from paiju.lobby import parties as pt
from paiju.lobby import queue as qu
from paiju.lobby import table as tb
from paiju.lobby.attendance import Attendance, LocalAttendance
from paiju.lobby.generations import GENERATION_EVENTS, RETRIES_KEPT, Generations
from paiju.platform import repeats
from paiju.platform.aio import unless
from paiju.platform.consumer import Consumer, MemoryTracking, Tracked
from paiju.platform.errors import Reason, Refused
from paiju.platform.repository import Aggregates, Loaded
from paiju.platform.retry import Backoff, report, until_done
from paiju.platform.store import EventStore, Recorded
from paiju.rules.registry import GAMES
from paiju.v1 import tournament_events_pb2

log = structlog.get_logger("paiju.lobby.matchmaking")
GONE_RETRY_SECONDS = 5.0
"""How long the withdrawal of a gone player's entry waits before trying again (NATS away, or an unforeseen
failure)."""

GRACE_SECONDS = 15.0
"""D-MM-5: how long an entry outlives the last stream of its player."""
QUEUE_ATTENDANCE = "queue"
"""The 'table' under which a `FindMatch` stream marks its player present in the attendance bucket."""
OWNER = tb.QUEUE_OWNER
"""The owner of the tables the queue opens (not a player's: never counted; expired once their match has ended)."""
GAME_ORDER = tuple(sorted(GAMES))
"""The lease partitions: partition i forms the matches of ``GAME_ORDER[i]``."""
DEFAULT_MU = 25.0
"""D-MM-3: the rating of a player with none yet (the model's default mean, D-RATE-1)."""


# --- parties --------------------------------------------------------------------------------------------


class Parties:
    """The party calls (D-MM-1, D-MM-2). Each changes a party and memberships: decided on all first, so a refusal
    changes nothing; then appended, the memberships first (see `paiju.lobby.parties`)."""

    def __init__(self, parties: Aggregates[pt.Party], memberships: Aggregates[pt.Membership]) -> None:
        self.parties = parties
        self.memberships = memberships

    async def party_of(self, player_id: str) -> pt.Party | None:
        """The party the player belongs to (its party lists them), or ``None``."""
        membership = (await self.memberships.load(pt.membership_id(player_id))).state
        if not membership.party_id:
            return None
        party = (await self.parties.load(membership.party_id)).state
        return party if pt.belongs(membership, party, player_id) else None

    async def _party(self, party_id: str) -> Loaded[pt.Party]:
        if not party_id.startswith(pt.PARTY_PREFIX):  # another kind's aggregate (a table, an account) is no party
            raise Refused(Reason.PARTY_NOT_FOUND, f"there is no party {party_id!r}", {"party": party_id})
        loaded = await self.parties.load(party_id)
        if not loaded.state.exists:
            raise Refused(Reason.PARTY_NOT_FOUND, f"there is no party {party_id!r}", {"party": party_id})
        return loaded

    async def _membership(self, player_id: str, command: Any) -> None:
        await self.memberships.act(pt.membership_id(player_id), command, uuid.uuid4().hex, player_id)

    async def create(self, player_id: str, name: str, game: str) -> pt.Party:
        current = await self.party_of(player_id)
        if current is not None:
            raise Refused(Reason.ALREADY_IN_PARTY, "you are in a party already: leave it first")
        party_id = pt.new_party_id()
        membership = (await self.memberships.load(pt.membership_id(player_id))).state
        pt.decide_membership(membership, pt.Enter(party_id, current_valid=False))
        await self._membership(player_id, pt.Enter(party_id, current_valid=False))
        loaded, _ = await self.parties.act(
            party_id, pt.Form(party_id, game, player_id, name), f"form:{party_id}", player_id
        )
        return loaded.state

    async def invite(self, player_id: str, invitee: str, invitee_name: str) -> pt.Party:
        party = await self.party_of(player_id)
        if party is None:
            raise Refused(Reason.PARTY_NOT_FOUND, "you are in no party: create one first")
        command = pt.Invite(player_id, invitee, invitee_name)
        if not pt.decide_party(party, command):
            return party  # invited already
        membership = (await self.memberships.load(pt.membership_id(invitee))).state
        stale = await self._stale_invites(invitee, membership)
        # decided on the invites that still count first: a refused invite changes nothing
        counting = dataclasses.replace(membership, invites=tuple(p for p in membership.invites if p not in stale))
        pt.decide_membership(counting, pt.ReceiveInvite(party.party_id))
        for party_id in stale:  # they no longer count against the player's limit
            await self._membership(invitee, pt.CloseInvite(party_id))
        await self._membership(invitee, pt.ReceiveInvite(party.party_id))
        loaded, _ = await self.parties.act(party.party_id, command, uuid.uuid4().hex, player_id)
        return loaded.state

    async def _stale_invites(self, player_id: str, membership: pt.Membership) -> list[str]:
        """The player's invites whose party no longer invites them (disbanded, or declined)."""
        stale = []
        for party_id in membership.invites:
            party = (await self.parties.load(party_id)).state
            if not (party.exists and party.invites(player_id)):
                stale.append(party_id)
        return stale

    async def accept(self, player_id: str, name: str, party_id: str) -> pt.Party:
        loaded = await self._party(party_id)
        command = pt.Join(player_id, name)
        if not pt.decide_party(loaded.state, command):
            return loaded.state  # a member already
        current = await self.party_of(player_id)
        membership = (await self.memberships.load(pt.membership_id(player_id))).state
        pt.decide_membership(membership, pt.Enter(party_id, current_valid=current is not None))
        await self._membership(player_id, pt.Enter(party_id, current_valid=current is not None))
        try:
            after, _ = await self.parties.act(party_id, command, uuid.uuid4().hex, player_id)
        except Refused:  # the invite closed meanwhile: the membership goes back to none
            await self._membership(player_id, pt.Exit(party_id))
            raise
        return after.state

    async def decline(self, player_id: str, party_id: str) -> None:
        loaded = await self._party(party_id)
        pt.decide_party(loaded.state, pt.Leave(player_id, invite_only=True))
        await self.parties.act(party_id, pt.Leave(player_id, invite_only=True), uuid.uuid4().hex, player_id)
        await self._membership(player_id, pt.CloseInvite(party_id))

    async def leave(self, player_id: str) -> pt.Party:
        """The caller leaves their party (the leader: disbands it; every member's and invitee's membership is
        closed)."""
        party = await self.party_of(player_id)
        if party is None:
            raise Refused(Reason.PARTY_NOT_FOUND, "you are in no party")
        after, _ = await self.parties.act(party.party_id, pt.Leave(player_id), uuid.uuid4().hex, player_id)
        gone = party.members if after.state.disbanded else (pt.Member(player_id, ""),)
        for member in gone:
            await self._membership(member.player_id, pt.Exit(party.party_id))
        if after.state.disbanded:
            for invited in party.invited:
                await self._membership(invited.player_id, pt.CloseInvite(party.party_id))
        return party

    async def invites(self, player_id: str) -> list[pt.Party]:
        """The parties whose invites the player holds, open still."""
        membership = (await self.memberships.load(pt.membership_id(player_id))).state
        found = []
        for party_id in membership.invites:
            party = (await self.parties.load(party_id)).state
            if party.exists and party.invites(player_id):
                found.append(party)
        return found


# --- ratings --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class RatedMatch:
    """A table's rated match as its ledger holds it: the `RatingUpdated` event and its number in the ledger (its
    version there, as scoring's `RatedMatch.number`)."""

    number: int
    updated: tournament_events_pb2.TournamentRatingUpdated


class Ratings:
    """Every rated player's mean (μ) per game and mode, from scoring's `RatingUpdated` events (D-MM-3): the
    latest event of a player wins. A handler of the platform's stream consumer over the TOURNAMENTS stream, from its
    start at every boot (checkpoint in memory); the other events of the stream only move the checkpoint.

    It keeps each table's latest rated match too (`of_match`: the rating changes a table's last result shows), and
    wakes the table's watchers (`watching`) when one arrives: a `WatchTable` stream sends the table again then,
    told by the event, never asking. The latest is the one of the latest result (its LOBBY sequence); of one result
    rated by two model versions (D-RATE-10), the newer version's."""

    name = "lobby-ratings"

    def __init__(self) -> None:
        self._mu: dict[tuple[str, int, str], float] = {}
        self._tables: dict[str, RatedMatch] = {}
        self._watchers: dict[str, set[asyncio.Event]] = {}
        self.changed = asyncio.Event()

    def of(self, game: str, mode: tb.Mode, player_id: str) -> float:
        return self._mu.get((game, _MODE_NUMBERS[mode], player_id), DEFAULT_MU)

    def of_match(self, table_id: str, game_id: str) -> RatedMatch | None:
        """How the match ``game_id`` of ``table_id`` was rated, if it was and is the table's latest rated match."""
        rated = self._tables.get(table_id)
        return rated if rated is not None and game_id and rated.updated.game_id == game_id else None

    @contextlib.contextmanager
    def watching(self, table_id: str) -> Iterator[asyncio.Event]:
        """An event set each time a rated match of ``table_id`` arrives, while the block runs (a watch's)."""
        arrived = asyncio.Event()
        self._watchers.setdefault(table_id, set()).add(arrived)
        try:
            yield arrived
        finally:
            watchers = self._watchers.get(table_id)
            if watchers is not None:
                watchers.discard(arrived)
                if not watchers:
                    del self._watchers[table_id]

    def record(self, updated: tournament_events_pb2.TournamentRatingUpdated, number: int = 0) -> None:
        for seat in updated.seats:
            if not seat.bot:
                self._mu[(updated.game, updated.mode, seat.player_id)] = seat.after.mu
        if not updated.table_id:
            return
        known = self._tables.get(updated.table_id)
        if known is None or (known.updated.lobby_sequence, known.updated.model) <= (
            updated.lobby_sequence,
            updated.model,
        ):
            self._tables[updated.table_id] = RatedMatch(number, updated)
            for arrived in self._watchers.get(updated.table_id, ()):
                arrived.set()

    async def apply(self, tracked: Tracked, batch: Sequence[Recorded]) -> None:
        for recorded in batch:
            envelope = tournament_events_pb2.TournamentEnvelope.FromString(recorded.data)
            if envelope.event.WhichOneof("event") == "rating_updated":
                self.record(envelope.event.rating_updated, recorded.version)

    def consumer(self, store: EventStore) -> Consumer:
        return Consumer(store, MemoryTracking(), self)


_MODE_NUMBERS = {tb.Mode.RANKED: 1, tb.Mode.CASUAL: 2}


# --- the queue ------------------------------------------------------------------------------------------


class Matchmaker:
    """Queueing, following an entry, and forming the matches of the games whose lease this replica holds."""

    def __init__(
        self,
        queue: Aggregates[qu.Queue],
        tables: Aggregates[tb.Table],
        parties: Parties,
        ratings: Ratings,
        now: Callable[[], int],
        *,
        attendance: Attendance | None = None,
        grace_seconds: float = GRACE_SECONDS,
        confirm_seconds: int = qu.CONFIRM_SECONDS,
        generation_events: int = GENERATION_EVENTS.default,
        retries_kept: int = RETRIES_KEPT.default,
    ) -> None:
        self.queue = queue
        """The queue's aggregates (every generation's; the store's feed keeps them current)."""
        self.history = Generations(queue, events=generation_events, retries_kept=retries_kept)
        """The queue as its current generation (`paiju.lobby.generations`)."""
        self._tables = tables
        self._parties = parties
        self.ratings = ratings
        self._now = now
        self._attendance = attendance if attendance is not None else LocalAttendance()
        self._grace = grace_seconds
        self._confirm = confirm_seconds
        self.forming: frozenset[str] = frozenset()
        """The games this replica forms the matches of now (its lease)."""
        self._lease_moved = asyncio.Event()
        self._checks: set[asyncio.Task[None]] = set()
        self._fanout = Fanout(self.history)

    async def _state(self) -> Loaded[qu.Queue]:
        return await self.history.load()

    async def _act(self, command: Any, actor: str, command_id: str = "") -> Loaded[qu.Queue]:
        return await self.history.act(command, command_id or uuid.uuid4().hex, actor)

    # --- the players' calls

    async def enqueue(self, player_id: str, name: str, game: str, mode: tb.Mode, bot_wait: int) -> str:
        """Queue the player, or their party when they lead one; the entry's id. A party's other member does not
        queue: they follow the party's entry (`updates`), and are refused (NOT_PARTY_LEADER) when it has none."""
        state = (await self._state()).state
        mine = state.entry_of(player_id)
        if mine is not None and mine.game == game and mine.mode is mode:
            return mine.entry_id
        party = await self._parties.party_of(player_id)
        if party is not None and party.leader != player_id:
            raise Refused(Reason.NOT_PARTY_LEADER, "your party's leader queues for the party")
        if party is not None and party.game != game:
            raise Refused(
                Reason.INVALID_REQUEST,
                f"your party plays {party.game}: queue for it, or leave the party",
                {"field": "game"},
            )
        members = party.members if party is not None else (pt.Member(player_id, name),)
        players = tuple(
            qu.QueuedPlayer(m.player_id, m.name, round(100 * self.ratings.of(game, mode, m.player_id))) for m in members
        )
        entry_id = "entry-" + uuid.uuid4().hex[:16]
        command = qu.Enqueue(entry_id, game, mode, players, party.party_id if party else "", bot_wait, self._now())
        await self._act(command, player_id)
        return entry_id

    async def withdraw(self, player_id: str) -> None:
        entry = (await self._state()).state.entry_of(player_id)
        if entry is not None and entry.party_id and entry.players[0].player_id != player_id:
            raise Refused(Reason.NOT_PARTY_LEADER, "your party's leader takes the party out of the queue")
        await self._act(qu.Withdraw(player_id), player_id)

    async def confirm(self, player_id: str, offer_id: str) -> None:
        await self._act(qu.Confirm(offer_id, player_id), player_id)

    async def updates(
        self, player_id: str, draining: asyncio.Event, *, until_queued: bool = False
    ) -> AsyncIterator[tuple[str, Any]]:
        """What the player's stream shows, each time their entry changes: ``("waiting", entry)``, ``("offer",
        (offer, entry))``, then ``("found", (table_id, seat))`` or ``("ended", reason)``; ``("draining", None)``
        when the server stops. The player is present in the queue while this runs. ``until_queued``: a party's
        member waits for the leader to queue the party (else, not queued, NOT_QUEUED)."""
        changed = self._fanout.watch(player_id)  # before the first read: no change between them is missed
        try:
            loaded = await self._state()
            entry = loaded.state.entry_of(player_id)
            if entry is None and not until_queued:
                raise Refused(Reason.NOT_QUEUED, "you are not in the queue")
            await self._attendance.arrive(QUEUE_ATTENDANCE, player_id)
        except BaseException:
            self._fanout.unwatch(player_id, changed)
            raise
        try:
            shown: Any = None
            while True:
                if entry is not None:  # (a member without one waits until the leader queues the party)
                    state = loaded.state
                    current = state.entries.get(entry.entry_id)
                    if current is None:
                        outcome = state.outcome(entry.entry_id)
                        if outcome is not None and outcome.reason is qu.LeaveReason.SEATED:
                            table = (await self._tables.load(outcome.table_id)).state
                            yield "found", (outcome.table_id, table.seat_of(player_id))
                        else:
                            yield "ended", outcome.reason if outcome else qu.LeaveReason.WITHDRAWN
                        return
                    view: Any
                    if current.offer_id:
                        view = ("offer", (state.offers[current.offer_id], current))
                    else:
                        view = ("waiting", current)
                    if view != shown:
                        shown = view
                        yield view
                if await unless(changed.wait(), draining) is None:
                    yield "draining", None
                    return
                changed.clear()
                loaded = await self._state()
                if entry is None:
                    entry = loaded.state.entry_of(player_id)
        finally:
            self._fanout.unwatch(player_id, changed)
            last = await self._attendance.leave(QUEUE_ATTENDANCE, player_id)
            if last and not draining.is_set():
                self.departed(player_id)

    def departed(self, player_id: str) -> None:
        """The player's last stream here ended (or their replica died): the entry goes after the grace, unless a
        stream of theirs is open again by then."""
        task = asyncio.get_running_loop().create_task(self._gone_after_grace(player_id))
        self._checks.add(task)
        task.add_done_callback(self._checks.discard)

    async def _gone_after_grace(self, player_id: str) -> None:
        """After the grace, the entry of a player who follows the queue nowhere is withdrawn (GONE). What stops the
        withdrawal but the queue's own refusal — NATS away, or a failure nobody foresaw (logged with its traceback)
        — is tried again every `GONE_RETRY_SECONDS` for as long as the entry is there and nobody of it follows the
        queue: an entry is never left behind in silence, to be offered matches its players will not confirm."""
        await asyncio.sleep(self._grace)
        await until_done(  # a refusal: the entry has gone (or changed) meanwhile
            lambda: self._withdraw_if_gone(player_id),
            log,
            every=GONE_RETRY_SECONDS,
            waiting="a withdrawal waits for a dependency",
            failed="a withdrawal failed; it is tried again",
            player=player_id,
        )

    async def _withdraw_if_gone(self, player_id: str) -> None:
        entry = (await self._state()).state.entry_of(player_id)
        if entry is None:
            return
        for player in entry.players:  # a party stays while any member follows it
            if await self._attendance.here(QUEUE_ATTENDANCE, player.player_id):
                return
        await self._act(
            qu.Withdraw(entry.players[0].player_id, qu.LeaveReason.GONE, entry.entry_id),
            "lobby",
            f"queue:gone:{entry.entry_id}",
        )

    # --- forming (the lease holder of a game)

    async def lease_changed(self, owned: frozenset[int]) -> None:
        """The partitions (games) this replica holds now: the entries of a game newly held get the grace to be
        followed again (a restart, or another replica died) before its matches are formed here."""
        games = frozenset(GAME_ORDER[p] for p in owned if p < len(GAME_ORDER))
        new = games - self.forming
        self.forming &= games  # a game lost is formed here no more, at once
        self._lease_moved.set()
        if new:
            # a game gained is formed here once its entries have their grace: a queue that cannot be read (NATS
            # away) raises, and the change is told again at the next round of the leases, the game still new
            state = (await self._state()).state
            for entry in state.entries.values():
                if entry.game in new:
                    self.departed(entry.players[0].player_id)
            self.forming = games
            self._lease_moved.set()

    async def run(self, stopping: asyncio.Event) -> None:
        """Form the matches of the games held, each time the queue changes or a second passes while entries wait
        or offers run (the windows widen with the wait, D-MM-3), until ``stopping``. A round that fails, or a wait
        for the queue's next change that fails (NATS away fails both at once), is tried again after a backoff
        (`paiju.platform.retry.Backoff`: 0.2 s doubling to 5 s), never at once: the loop never spins."""
        backoff = Backoff()
        while not stopping.is_set():
            try:
                loaded = await self.form_once()
            except Exception as e:
                report(log, "matches could not be formed", e)
                await backoff.wait(stopping)
                continue
            waiting = any(e.game in self.forming for e in loaded.state.entries.values())
            self._lease_moved.clear()
            change = asyncio.ensure_future(self.history.next_change(loaded))
            stop = asyncio.ensure_future(stopping.wait())
            lease = asyncio.ensure_future(self._lease_moved.wait())
            done, pending = await asyncio.wait(
                {change, stop, lease}, timeout=1.0 if waiting else None, return_when=asyncio.FIRST_COMPLETED
            )
            for task in pending:
                task.cancel()
            if change in done and not change.cancelled():
                failed = change.exception()
                if failed is not None:
                    report(log, "the queue's next change could not be awaited", failed)
                    await backoff.wait(stopping)
                    continue
                loaded = change.result()
            backoff.succeeded()
        for task in list(self._checks):
            task.cancel()

    async def form_once(self) -> Loaded[qu.Queue]:
        """One round for the games held: seat the offers everyone confirmed, drop the non-confirmers of lapsed
        ones, offer the matches `paiju.lobby.queue.form` proposes."""
        loaded = await self._state()
        now = self._now()
        for offer in list(loaded.state.offers.values()):
            if offer.game not in self.forming:
                continue
            if offer.confirmed >= offer.humans:
                loaded = await self._seat(offer)
            elif now >= offer.confirm_by:
                loaded = await self._act(qu.Lapse(offer.offer_id, now), "lobby", f"queue:lapse:{offer.offer_id}")
        for game in sorted(self.forming):
            for mode in tb.Mode:
                for proposal in qu.form(loaded.state, game, mode, now):
                    offer_id = "offer-" + uuid.uuid4().hex[:16]
                    command = qu.Propose(offer_id, proposal.entry_ids, proposal.seats, now + self._confirm)
                    try:
                        loaded = await self._act(command, "lobby", f"queue:offer:{offer_id}")
                    except Refused:
                        break  # another replica offered one of these entries meanwhile: form again next round
        return loaded

    async def _seat(self, offer: qu.Offer) -> Loaded[qu.Queue]:
        """Open the offer's table with its players in their seats (bots in the empty ones), start its match, and
        record it seated. Every step is idempotent (command ids from the offer), so a replica that takes over
        halfway ends it once."""
        table_id = "table-" + offer.offer_id.removeprefix("offer-")[:8] + offer.offer_id[-4:]
        current = await self._state()
        queue = current.state
        if offer.offer_id not in queue.offers:
            return current  # seated (or fallen through) by another replica meanwhile
        state = (await self._tables.load(table_id)).state
        prefix = f"queue:{offer.offer_id}"
        names = {p.player_id: p.name for e in offer.entry_ids for p in queue.entries[e].players}
        if state.status is tb.Status.NEW:
            rules = GAMES[offer.game]
            opened = tb.OpenTable(
                table_id,
                f"{'Ranked' if offer.mode is tb.Mode.RANKED else 'Casual'} match",
                offer.game,
                OWNER,
                **tb.options_fields(offer.game, rules.options()),
                mode=offer.mode,
            )
            state = (await self._tables.act(table_id, opened, f"{prefix}-open", OWNER))[0].state
        if not state.matches:
            for seat, player in enumerate(offer.seats):
                if state.seats[seat].free:
                    command: Any = (
                        tb.TakeSeat(player, names.get(player, player), seat) if player else tb.AddBot(OWNER, seat)
                    )
                    state = (await self._tables.act(table_id, command, f"{prefix}-seat-{seat}", OWNER))[0].state
                if player and not state.seats[seat].ready:
                    ready = tb.SetReady(player, True)
                    state = (await self._tables.act(table_id, ready, f"{prefix}-ready-{seat}", OWNER))[0].state
            await self._tables.act(table_id, tb.StartMatch(OWNER), f"{prefix}-start", OWNER)
            log.info("queue match started", table=table_id, offer=offer.offer_id, game=offer.game)
        return await self._act(qu.Seat(offer.offer_id, table_id), "lobby", f"{prefix}-seated")

    async def close(self) -> None:
        for task in list(self._checks):
            task.cancel()
        await self._fanout.close()


def touched(before: qu.Queue, after: qu.Queue) -> set[str]:
    """The players whose entry or offer differs between two states of the queue (entries and offers are immutable:
    an unchanged one is the same object)."""
    players: set[str] = set()
    for entry_id, entry in after.entries.items():
        if before.entries.get(entry_id) is not entry:
            players.update(p.player_id for p in entry.players)
    for entry_id, entry in before.entries.items():
        if entry_id not in after.entries:
            players.update(p.player_id for p in entry.players)
    for offer_id, offer in after.offers.items():
        if before.offers.get(offer_id) is not offer:
            players.update(offer.humans)
    return players


class Fanout:
    """One follower of the queue per lobby replica, which wakes only the `FindMatch` streams whose player's entry or
    offer changed: a change costs a pass over the queue's maps (by identity), not a wake of every stream
    (bench/matchmaking.py). Runs while some stream watches."""

    def __init__(self, queue: Generations) -> None:
        self._queue = queue
        self._watching: dict[str, set[asyncio.Event]] = {}
        self._task: asyncio.Task[None] | None = None

    def watch(self, player_id: str) -> asyncio.Event:
        changed = asyncio.Event()
        self._watching.setdefault(player_id, set()).add(changed)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._follow())
        return changed

    def unwatch(self, player_id: str, changed: asyncio.Event) -> None:
        events = self._watching.get(player_id)
        if events is not None:
            events.discard(changed)
            if not events:
                del self._watching[player_id]

    def _wake(self, players: Iterable[str]) -> None:
        for player in players:
            for changed in self._watching.get(player, ()):
                changed.set()

    async def _follow(self) -> None:
        loaded: Loaded[qu.Queue] | None = None
        while self._watching:
            try:
                if loaded is None:
                    loaded = await self._queue.load()
                    self._wake(list(self._watching))  # (again) from a fresh read: everyone looks
                moved = await self._queue.next_change(loaded)
                self._wake(touched(loaded.state, moved.state))
                loaded = moved
            except asyncio.CancelledError:
                raise
            except Exception as e:  # the store away: read afresh in a moment, and everyone looks again
                repeats.REPEATS.warn(log, "the queue could not be followed; following again", error=str(e))
                loaded = None
                await asyncio.sleep(1.0)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
