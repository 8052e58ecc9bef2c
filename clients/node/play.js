#!/usr/bin/env node
// Play one deal of 砸六家 (zlj) or 拖拉机 (tractor) through Paiju's lobby and engine, as a client written in
// another language than the servers, from the contract in protos/ alone; check the error model on the way.
//
//   node play.js LOBBY_ADDRESS GAME [ENGINE_ADDRESS] [--engine ADDRESS] [--timeout SECONDS] [--verbose]
//
// GAME is zlj or tractor. The engine's address is not in any answer of the lobby (JoinGame gives a game id and a
// token, not where the engine is): pass it (default $PAIJU_ENGINE_ADDRESS, else 127.0.0.1:50051, `make run`'s).
//
// 1. Signs in guests (six for zlj, four for tractor), the first opens a table (zlj: one deal; tractor: the
//    default options), everyone sits down and says ready, the owner starts the match, each asks JoinGame for
//    its engine token, and keeps a WatchTable stream open (its presence: without it a bot covers the seat).
// 2. Each seat plays from its Watch stream alone (EngineService.Watch; watched again from the last version
//    received when the server drains or the connection is cut): the newest event of each change comes with the
//    turn it leads to, and a turn that names the seat carries its legal actions (and its view, and what a 拖拉机
//    follow owes). On such a turn the seat acts with the first action listed (a 拖拉机 seat bids when it can, and
//    composes a follow of its own from `tractor_follow` and the turn's view, checked with `validate_only` first),
//    the turn's version as `expected_version` and a fresh command id; ABORTED (STALE_VERSION) means another seat
//    moved first: the next turn comes on the stream. A turn whose `fair_step` asks for the seat's random bytes is
//    answered with a Contribute. Nothing else is asked of the engine while playing: no GetView, no
//    GetLegalActions (the calls are counted by method, and the summary says so). zlj ends with the match (one
//    deal); tractor stops when the first deal is settled (`deal_settled`).
// 3. At the first lead of the play, checks the error model: TOKEN_MISSING, TOKEN_INVALID, INVALID_REQUEST (with
//    a BadRequest naming game_id), GAME_NOT_FOUND, NOT_YOUR_TURN, NOT_YOUR_SEAT, RULE_VIOLATION (with a
//    RuleViolation naming the rule), STALE_VERSION, WRONG_GAME_KIND, COMMAND_ID_REUSED and an idempotent retry,
//    SESSION_REQUIRED; every refusal anywhere must carry an ErrorInfo of domain "paiju.v1" whose reason goes
//    with the status code, and none may be UNKNOWN or INTERNAL.
// 4. Prints one JSON line: {"game", "acts", "events", "checked": [reasons seen], "calls": {method: count} (the
//    engine calls of the play, Watch streams opened included), "probe_calls" (those of step 3, made on purpose),
//    "lobby_calls", "ok": true, ...}; exit 0.
//    Any failure: a message on stderr, {"ok": false, "error": ...} on stdout, exit 1.

import { randomBytes } from 'node:crypto';
import * as paiju from './paiju.js';

const { grpc } = paiju;

const GAMES = {
  zlj: { enum: 'GAME_ZLJ', seats: 6, options: { zlj_options: { deals: 1 } } },
  tractor: { enum: 'GAME_TRACTOR', seats: 4, options: {} },
};

/** The reasons this program provokes on purpose; each must have been seen at the end. */
export const REQUIRED = [
  'TOKEN_MISSING',
  'TOKEN_INVALID',
  'INVALID_REQUEST',
  'GAME_NOT_FOUND',
  'NOT_YOUR_TURN',
  'NOT_YOUR_SEAT',
  'RULE_VIOLATION',
  'STALE_VERSION',
  'WRONG_GAME_KIND',
  'COMMAND_ID_REUSED',
  'SESSION_REQUIRED',
];

class Failure extends Error {}

function fail(message) {
  throw new Failure(message);
}

function parseArgs(argv) {
  const options = { engine: process.env.PAIJU_ENGINE_ADDRESS || '127.0.0.1:50051', timeout: 600, verbose: false };
  const positional = [];
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i];
    if (arg === '--engine') options.engine = argv[++i];
    else if (arg === '--timeout') options.timeout = Number(argv[++i]);
    else if (arg === '--verbose' || arg === '-v') options.verbose = true;
    else if (arg === '--help' || arg === '-h') options.help = true;
    else positional.push(arg);
  }
  if (options.help || positional.length < 2 || positional.length > 3 || !(positional[1] in GAMES)) {
    process.stderr.write('usage: node play.js LOBBY_ADDRESS zlj|tractor [ENGINE_ADDRESS] [--engine ADDRESS] ' +
      '[--timeout SECONDS] [--verbose]\n');
    process.exit(2);
  }
  [options.lobby, options.game] = positional;
  if (positional[2]) options.engine = positional[2];
  return options;
}

const sleep = (seconds) => new Promise((resolve) => setTimeout(resolve, seconds * 1000));

/** A multiset of cards as a sorted list (cards are enum names; copies from several decks are equal). */
const sorted = (cards) => [...cards].sort();
const sameCards = (a, b) => a.length === b.length && sorted(a).every((c, i) => c === sorted(b)[i]);

/** `cards` without one copy of each of `taken`. */
function without(cards, taken) {
  const left = [...cards];
  for (const card of taken) {
    const i = left.indexOf(card);
    if (i >= 0) left.splice(i, 1);
  }
  return left;
}

/** A string of the same length and alphabet as `s` with every character changed. */
function altered(s) {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  return [...s].map((c) => alphabet[(alphabet.indexOf(c) + 1) % alphabet.length]).join('');
}

/** A token of the right shape whose signature (its last dot-separated part) is not the issuer's. */
function forged(token) {
  const dot = token.lastIndexOf('.');
  return dot < 0 ? altered(token) : token.slice(0, dot + 1) + altered(token.slice(dot + 1));
}

// --- the session: calls, refusals and what was seen ------------------------------------------------------

class Session {
  constructor(options) {
    this.options = options;
    this.spec = GAMES[options.game];
    this.lobby = paiju.lobbyClient(options.lobby);
    this.engine = paiju.engineClient(options.engine);
    this.seen = new Map(); // reason -> times refused with it
    this.checked = new Set(); // reasons provoked on purpose and found as documented
    this.acts = 0;
    this.composed = { tried: 0, accepted: 0, refused: 0, same: 0 };
    this.rateLimited = 0;
    this.streams = [];
    this.resumed = 0; // watch streams opened again after the server ended them or the connection was cut
    this.contributions = 0; // random bytes added to committed shuffles (fair dealing)
    this.turns = 0; // turns the seats' streams brought
    this.calls = {}; // the engine calls of the play, by method (Watch: streams opened)
    this.probeCalls = {}; // the engine calls that check the error model on purpose (step 3), by method
    this.lobbyCalls = {}; // the lobby's, by method
    this.notes = []; // where the servers' answers differ from what the protos' comments say (reported, not fatal)
  }

  log(...parts) {
    if (this.options.verbose) process.stderr.write(`${parts.join(' ')}\n`);
  }

  /** Count a call of `method` (every attempt): a probe's apart from the play's, the lobby's apart. */
  count(client, method, probe) {
    const book = probe ? this.probeCalls : client === this.lobby ? this.lobbyCalls : this.calls;
    book[method] = (book[method] || 0) + 1;
  }

  /**
   * One unary call. A refusal is read with `refusalOf` and checked against the error model (never UNKNOWN or
   * INTERNAL, an ErrorInfo of domain paiju.v1 whose reason goes with the code); RATE_LIMITED is waited out as
   * its RetryInfo says. Rejects with an Error carrying `.refusal`. `probe`: a call made to check the error model,
   * counted apart from the play's.
   */
  async call(client, method, request, token, { retries = 20, probe = false } = {}) {
    for (let attempt = 0; ; attempt += 1) {
      this.count(client, method, probe);
      try {
        return await paiju.unary(client, method, request, { token });
      } catch (err) {
        const refusal = this.judge(err, method);
        if (refusal.reason === 'RATE_LIMITED' && attempt < retries) {
          this.rateLimited += 1;
          if (!refusal.retryInfo || !refusal.quotaFailure) fail(`${method}: RATE_LIMITED without RetryInfo and QuotaFailure`);
          await sleep(Math.max(0.05, paiju.retryDelaySeconds(refusal)));
          continue;
        }
        const error = new Error(`${method}: ${refusal.codeName} ${refusal.reason}: ${refusal.message}`);
        error.refusal = refusal;
        throw error;
      }
    }
  }

  /** The refusal of `err`, after checking it against the error model. */
  judge(err, method) {
    if (err.code === undefined) throw err; // not a gRPC error
    const refusal = paiju.refusalOf(err);
    if (refusal.codeName === 'UNKNOWN' || refusal.codeName === 'INTERNAL') {
      fail(`${method} answered ${refusal.codeName}: ${refusal.message} (${JSON.stringify(refusal.metadata)})`);
    }
    if (refusal.reason === null) {
      // gRPC's own refusals carry no ErrorInfo (errors.proto): a deadline, a request over the size limit, or the
      // server out of reach; anything else must have one
      if (!['DEADLINE_EXCEEDED', 'RESOURCE_EXHAUSTED', 'UNAVAILABLE', 'CANCELLED'].includes(refusal.codeName)) {
        fail(`${method} refused with ${refusal.codeName} and no ErrorInfo: ${refusal.message}`);
      }
      return refusal;
    }
    if (refusal.domain !== paiju.DOMAIN) fail(`${method}: ErrorInfo domain ${refusal.domain}, not ${paiju.DOMAIN}`);
    const expected = paiju.REASON_CODES[refusal.reason];
    if (expected && expected !== refusal.codeName) {
      fail(`${method}: reason ${refusal.reason} came with ${refusal.codeName}, errors.proto says ${expected}`);
    }
    this.seen.set(refusal.reason, (this.seen.get(refusal.reason) || 0) + 1);
    this.log(`  refused ${method}: ${refusal.codeName} ${refusal.reason} ${JSON.stringify(refusal.metadata)} ` +
      `[${refusal.details.map((d) => d.type).join(', ')}] ${refusal.message}`);
    return refusal;
  }

  /** `attempt()` must be refused with `reason` and `code`; `more(refusal)` checks the details. */
  async expectRefusal(what, attempt, reason, code, more = () => {}) {
    let refusal = null;
    try {
      await attempt();
    } catch (err) {
      if (!err.refusal) throw err;
      refusal = err.refusal;
    }
    if (refusal === null) fail(`${what}: answered OK, expected ${code} ${reason}`);
    if (refusal.reason !== reason || refusal.codeName !== code) {
      fail(`${what}: refused with ${refusal.codeName} ${refusal.reason} (${refusal.message}), expected ${code} ${reason}`);
    }
    more(refusal);
    this.checked.add(reason);
    this.log(`checked ${reason}: ${what}`);
    return refusal;
  }

  /** Open a server stream, remembered so that `close` cancels it. */
  stream(client, method, request, token, onMessage) {
    this.count(client, method, false);
    const opened = paiju.stream(client, method, request, onMessage, { token });
    this.streams.push(opened.call);
    return opened;
  }

  close() {
    for (const call of this.streams) call.cancel();
    this.lobby.close();
    this.engine.close();
  }
}

// --- the lobby ---------------------------------------------------------------------------------------------

async function seatEveryone(session) {
  const { spec, options } = session;
  const players = [];
  for (let i = 0; i < spec.seats; i += 1) {
    const { session: signed } = await session.call(session.lobby, 'Guest', {}, '');
    players.push({ id: signed.player_id, name: signed.name, token: signed.token });
  }
  const owner = players[0];
  await session.expectRefusal(
    'CreateTable without a token',
    () => session.call(session.lobby, 'CreateTable', { name: 'no token', game: spec.enum }, ''),
    'TOKEN_MISSING',
    'UNAUTHENTICATED',
  );
  const { table } = await session.call(
    session.lobby,
    'CreateTable',
    { name: `node client ${options.game}`, game: spec.enum, ...spec.options },
    owner.token,
  );
  if (table.game !== spec.enum || table.seats.length !== spec.seats) fail(`CreateTable answered ${JSON.stringify(table)}`);
  for (const player of players) {
    const taken = await session.call(session.lobby, 'TakeSeat', { table_id: table.table_id }, player.token);
    const seat = taken.table.seats.find((s) => s.player_id === player.id);
    if (!seat) fail(`TakeSeat: ${player.name} is not at the table`);
    player.seat = seat.seat;
    await session.call(session.lobby, 'Ready', { table_id: table.table_id, ready: true }, player.token);
  }
  const started = await session.call(session.lobby, 'StartMatch', { table_id: table.table_id }, owner.token);
  const gameId = started.table.game_id;
  if (!gameId || started.table.status !== 'TABLE_STATUS_PLAYING') fail(`StartMatch answered ${JSON.stringify(started.table)}`);
  for (const player of players) {
    const joined = await session.call(session.lobby, 'JoinGame', { table_id: table.table_id }, player.token);
    if (joined.game_id !== gameId || joined.seat !== player.seat || joined.game !== spec.enum) {
      fail(`JoinGame answered ${JSON.stringify(joined)} for ${player.name} in seat ${player.seat}`);
    }
    player.gameToken = joined.token;
    keepPresent(session, player, table.table_id);
  }
  await session.expectRefusal(
    'JoinGame with a game token',
    () => session.call(session.lobby, 'JoinGame', { table_id: table.table_id }, owner.gameToken),
    'SESSION_REQUIRED',
    'PERMISSION_DENIED',
  );
  players.sort((a, b) => a.seat - b.seat);
  return { table, gameId, players };
}

/**
 * A seated player's presence: an open WatchTable stream (when the last one closes during a match, a bot covers
 * the seat after the grace time). Opened again when the server ends it (draining) or the connection is cut.
 */
function keepPresent(session, player, tableId, attempt = 0) {
  const opened = session.stream(session.lobby, 'WatchTable', { table_id: tableId }, player.token, () => {});
  opened.done.then(() => null, (err) => err).then((err) => {
    if (session.finished) return;
    const refusal = err ? session.judge(err, 'WatchTable') : null;
    if ((refusal && refusal.codeName !== 'UNAVAILABLE') || attempt >= 20) {
      session.problem = session.problem || `the WatchTable stream of seat ${player.seat} failed: ${refusal?.message}`;
      return;
    }
    session.resumed += 1;
    setTimeout(() => keepPresent(session, player, tableId, attempt + 1), 200);
  }).catch((err) => {
    session.problem = session.problem || err.message;
  });
}

// --- the engine: one player per seat ------------------------------------------------------------------------

class Seat {
  constructor(session, match, player) {
    this.session = session;
    this.match = match;
    this.player = player;
    this.seat = player.seat;
    this.game = session.options.game;
    this.watched = 0; // the last version the watch delivered
    this.turn = null; // the latest turn the watch delivered
    this.doneAt = -1; // the latest turn's version this seat acted at (or was refused at)
    this.contributed = new Set(); // the committed shuffles this seat added its random bytes to
    this.dirty = true;
    this.waiter = null;
    this.ended = null; // the WatchEnd reason, once the stream says it ends
  }

  get token() {
    return this.player.gameToken;
  }

  wake() {
    this.dirty = true;
    if (this.waiter) this.waiter();
  }

  /**
   * Follow the game from the start: every version once and in order, each seat's own hand only, and the turns. A
   * stream that
   * ends without the game's end (the server drains: WATCH_END_REASON_DRAINING; or the connection is cut) is
   * watched again from the last version received.
   */
  async watch() {
    const { session, match } = this;
    for (let attempt = 0; ; attempt += 1) {
      const opened = session.stream(session.engine, 'Watch', { game_id: match.gameId, from_version: String(this.watched) },
        this.token, (message) => this.received(message));
      try {
        await opened.done;
      } catch (err) {
        if (err.code === undefined) throw err; // a failed check of what the watch delivered
        if (match.stopped && err.code === grpc.status.CANCELLED) return;
        const refusal = session.judge(err, 'Watch');
        if (refusal.codeName !== 'UNAVAILABLE' || attempt >= 20) {
          fail(`the watch of seat ${this.seat} failed: ${refusal.codeName} ${refusal.reason} ${refusal.message}`);
        }
      }
      if (match.stopped || this.ended === 'WATCH_END_REASON_GAME_ENDED') return;
      session.resumed += 1;
      await sleep(Math.min(2, 0.1 * 2 ** attempt));
    }
  }

  received(message) {
    if (message.end) {
      this.ended = message.end.reason;
      if (Number(message.end.version) !== this.watched) fail(`seat ${this.seat}: WatchEnd at ${message.end.version}, last event ${this.watched}`);
      if (this.ended === 'WATCH_END_REASON_GAME_ENDED') this.match.gameEnded(this);
      else if (this.ended !== 'WATCH_END_REASON_DRAINING') fail(`seat ${this.seat}: watch ended with ${this.ended}`);
      this.wake();
      return;
    }
    const envelope = message.envelope;
    if (envelope) {
      const version = Number(envelope.version);
      if (version !== this.watched + 1) fail(`seat ${this.seat}: the watch jumped from version ${this.watched} to ${version}`);
      if (envelope.game_id !== this.match.gameId) fail(`seat ${this.seat}: an event of ${envelope.game_id}`);
      this.watched = version;
      this.match.event(this, envelope);
    }
    if (message.turn) this.turned(message.turn);
  }

  /**
   * A turn: who may act at its version and, when this seat may, its legal actions (its view, what a follow owes,
   * the fair-dealing step it may take). It goes with the newest event received, or comes alone at the current
   * version; another seat's actions or view never reach this seat.
   */
  turned(turn) {
    const version = Number(turn.version);
    if (version !== this.watched) fail(`seat ${this.seat}: a turn at version ${version} after the event of version ${this.watched}`);
    const mine = turn.seats.includes(this.seat);
    if (!mine && (turn.actions.length || turn.view || turn.tractor_follow || turn.fair_step)) {
      fail(`seat ${this.seat} was told what seats ${turn.seats} may do: ${JSON.stringify(turn)}`);
    }
    for (const action of turn.actions) {
      if (action.command !== this.game) fail(`a turn listed a ${action.command} command in a ${this.game} game`);
    }
    if (turn.actions.length && turn.view !== this.game) fail(`seat ${this.seat}'s turn has actions but no ${this.game} view`);
    this.session.turns += 1;
    this.turn = turn;
    this.wake();
  }

  /**
   * Fair dealing (docs/fairness.md): add 16 random bytes of this machine to a committed shuffle the seat has not
   * contributed to, as the engine's commitment asks. The cutter contributes with its cut instead (refused here:
   * FAILED_PRECONDITION), and a shuffle dealt meanwhile refuses it too: neither is an error.
   */
  async contribute() {
    const { session, match } = this;
    try {
      const acted = await session.call(session.engine, 'Act', {
        game_id: match.gameId,
        command_id: paiju.commandId(),
        [this.game]: { contribute: { seat: this.seat, contribution: randomBytes(16) } },
      }, this.token);
      session.contributions += 1;
      if (Number(acted.version) <= 0) fail(`a contribution answered version ${acted.version}`);
    } catch (err) {
      if (err.refusal?.codeName !== 'FAILED_PRECONDITION') {
        throw new Failure(`seat ${this.seat} could not contribute to the shuffle: ${err.message}`);
      }
    }
  }

  /** Act on each turn the stream brings (the latest, when several came meanwhile) until the match stops. */
  async play() {
    while (!this.match.stopped) {
      if (!this.dirty) {
        await new Promise((resolve) => {
          this.waiter = resolve;
        });
        this.waiter = null;
      }
      this.dirty = false;
      if (this.match.stopped) break;
      await this.take(this.turn);
    }
  }

  /**
   * This seat's part of a turn: its random bytes when the turn's `fair_step` asks for them, and, when the turn
   * lists actions for it, a move at the turn's version. Asks the engine nothing but `Act`.
   */
  async take(turn) {
    const { match } = this;
    if (!turn) return;
    const step = turn.fair_step;
    if (step && step.kind === 'FAIR_DEALING_STEP_KIND_CONTRIBUTE' && !this.contributed.has(step.shuffle)) {
      this.contributed.add(step.shuffle);
      await this.contribute();
    }
    const version = Number(turn.version);
    if (version <= this.doneAt || !turn.seats.includes(this.seat)) return;
    const actions = turn.actions.map((a) => a[this.game]);
    if (actions.length === 0 || match.stopped) return;
    this.doneAt = version;
    if (this.game === 'tractor' && actions.some((a) => a.command === 'cut')) {
      match.dealOver(); // a cut comes after a deal is settled: one deal is what this program plays
      return;
    }
    if (!match.checked && actions.every((a) => a.command === 'play') && !turn.tractor_follow) {
      match.checked = true; // the first lead of the play: nobody else can move, the game stands still
      await match.checkErrorModel(this, actions, version);
      return;
    }
    const command = await this.choose(actions, turn, version);
    await this.act(command, version);
  }

  /** The first listed action; a 拖拉机 seat bids when it can and composes its own follows. */
  async choose(actions, turn, version) {
    if (this.game !== 'tractor') return actions[0];
    const bid = actions.find((a) => a.command === 'make_bid');
    if (bid) return bid; // the first listed is a pass: if nobody ever bid, every deal would be void
    const follow = turn.tractor_follow;
    if (follow && actions[0].command === 'play') return (await this.composeFollow(follow, actions[0], turn, version)) || actions[0];
    return actions[0];
  }

  /**
   * A follow made from what it owes (TractorFollowRequirement): `must_include`, then `free` more cards of the led
   * suit class (`free_of_suit`) or of the whole hand (the turn's view), taken from the top instead of the
   * bottom; checked with Act {validate_only}. Null when no other follow can be made, or the engine refuses it.
   */
  async composeFollow(follow, listed, turn, version) {
    const { session, match } = this;
    const hand = turn.tractor.hand;
    const must = follow.must_include;
    const pool = sorted(without(follow.free_of_suit ? follow.suit_cards : hand, must)).reverse();
    const free = follow.free;
    if (must.length + free !== follow.count || pool.length < free) fail(`tractor_follow does not add up: ${JSON.stringify(follow)}`);
    let candidate = null;
    for (let start = 0; start + free <= pool.length; start += 1) {
      const cards = [...must, ...pool.slice(start, start + free)];
      if (!sameCards(cards, listed.play.cards)) {
        candidate = cards;
        break;
      }
    }
    if (candidate === null) {
      session.composed.same += 1;
      return null;
    }
    const command = { play: { seat: this.seat, cards: candidate } };
    session.composed.tried += 1;
    try {
      const checked = await session.call(session.engine, 'Act', {
        game_id: match.gameId, command_id: paiju.commandId(), expected_version: String(version),
        tractor: command, validate_only: true,
      }, this.token);
      if (Number(checked.version) !== version || checked.events.length) fail(`validate_only answered ${JSON.stringify(checked)}`);
    } catch (err) {
      if (err.refusal?.reason === 'RULE_VIOLATION') {
        session.composed.refused += 1;
        return null;
      }
      if (err.refusal?.reason === 'STALE_VERSION') return null;
      throw err;
    }
    session.composed.accepted += 1;
    return command;
  }

  /** Act; a stale version (another seat moved first) means: the next turn comes on the stream. */
  async act(command, version, commandId = paiju.commandId()) {
    const { session, match } = this;
    try {
      const acted = await session.call(session.engine, 'Act', {
        game_id: match.gameId, command_id: commandId, expected_version: String(version), [this.game]: command,
      }, this.token);
      session.acts += 1;
      for (const envelope of acted.events) match.inspect(envelope);
      return acted;
    } catch (err) {
      const reason = err.refusal?.reason;
      if (reason === 'STALE_VERSION' || reason === 'NOT_YOUR_TURN') return null;
      throw new Failure(`seat ${this.seat} could not play the listed ${JSON.stringify(command)}: ${err.message}`);
    }
  }
}

// --- the match ----------------------------------------------------------------------------------------------

class Match {
  constructor(session, table, gameId, players) {
    this.session = session;
    this.table = table;
    this.gameId = gameId;
    this.game = session.options.game;
    this.seats = players.map((player) => new Seat(session, this, player));
    this.checked = false;
    this.stopped = false;
    this.settledAt = 0; // tractor: the version of the first deal's settlement
    this.ends = 0;
    this.finished = new Promise((resolve) => {
      this.finish = resolve;
    });
  }

  /** Every envelope a seat's watch delivers. */
  event(seat, envelope) {
    const payload = envelope.payload;
    if (payload !== this.game && payload !== 'seats_assigned') fail(`a ${payload} event in a ${this.game} game`);
    if (payload === this.game) {
      const event = envelope[this.game];
      if (event.event === 'hands_dealt') {
        const dealt = event.hands_dealt;
        dealt.hands.forEach((hand, s) => {
          const shown = hand.cards.length > 0;
          if (shown !== (s === seat.seat)) fail(`seat ${seat.seat} was dealt a view of seat ${s}'s hand (${hand.cards.length} cards)`);
        });
        if (dealt.seed !== undefined) fail(`seat ${seat.seat} was shown the deal's seed`);
      }
    }
    this.inspect(envelope);
  }

  inspect(envelope) {
    if (this.game === 'tractor' && envelope.payload === 'tractor' && envelope.tractor.event === 'deal_settled') {
      this.settledAt = this.settledAt || Number(envelope.version);
      this.dealOver();
    }
  }

  /** 拖拉机: the first deal is settled: stop deciding (the game goes on until a team passes A). */
  dealOver() {
    if (!this.settledAt || this.stopped) return;
    this.stopped = true;
    for (const seat of this.seats) seat.wake();
    const caughtUp = () => {
      if (this.seats.every((s) => s.watched >= this.settledAt)) this.finish();
      else setTimeout(caughtUp, 20);
    };
    caughtUp();
  }

  /** 砸六家: a seat's watch says the game is over. */
  gameEnded() {
    this.ends += 1;
    if (this.ends === this.seats.length) {
      this.stopped = true;
      this.finish();
    }
  }

  async run() {
    const watches = this.seats.map((seat) => seat.watch());
    const players = this.seats.map((seat) => seat.play());
    const failed = Promise.all([...watches, ...players]).then(
      () => new Promise(() => {}), // all of them over: the match has finished too
      (err) => {
        throw err;
      },
    );
    failed.catch(() => {}); // a failure after the end changes nothing
    await Promise.race([this.finished, failed]);
    this.stopped = true;
    for (const seat of this.seats) seat.wake();
    await Promise.all(players);
  }

  /** A seat's view: only the error model's probes ask for one (counted apart from the play's calls). */
  async view(seat, minVersion = 0) {
    return this.session.call(this.session.engine, 'GetView', { game_id: this.gameId, min_version: String(minVersion) },
      seat.token, { probe: true });
  }

  /**
   * The error model, at the first lead of the play (`leader` is to play, nobody else may act): each refusal
   * with its reason, code and details, the game unchanged by all of them; then the leader's first listed play,
   * a retry of it (answered as the first time) and its command id reused for another command.
   */
  async checkErrorModel(leader, actions, version) {
    const { session, game, gameId } = this;
    const other = this.seats.find((s) => s !== leader);
    const engine = session.engine;
    const get = (request, token) => session.call(engine, 'GetView', request, token, { probe: true });
    const act = (request, token) => session.call(engine, 'Act', { game_id: gameId, command_id: paiju.commandId(), ...request },
      token, { probe: true });
    const before = await this.view(leader, version);
    if (Number(before.version) !== version) fail(`GetView at min_version ${version} answered version ${before.version}`);

    await session.expectRefusal('GetView without a token', () => get({ game_id: gameId }, ''), 'TOKEN_MISSING', 'UNAUTHENTICATED');
    await session.expectRefusal('GetView with a forged token', () => get({ game_id: gameId }, forged(leader.token)),
      'TOKEN_INVALID', 'UNAUTHENTICATED');
    await session.expectRefusal('GetView with a token that is no token', () => get({ game_id: gameId }, 'not-a-token'),
      'TOKEN_INVALID', 'UNAUTHENTICATED');
    const namesGameId = (refusal) => {
      const fields = refusal.badRequest?.field_violations?.map((v) => v.field) || [];
      if (!fields.includes('game_id')) fail(`INVALID_REQUEST without a BadRequest naming game_id: ${JSON.stringify(refusal.details)}`);
    };
    await session.expectRefusal('GetView of game "*"', () => get({ game_id: '*' }, leader.token),
      'INVALID_REQUEST', 'INVALID_ARGUMENT', namesGameId);
    await session.expectRefusal('GetView of a game id of 5,000 characters', () => get({ game_id: 'g'.repeat(5000) }, leader.token),
      'INVALID_REQUEST', 'INVALID_ARGUMENT', namesGameId);
    await session.expectRefusal('Act on game "*"', () => act({ game_id: '*', [game]: actions[0] }, leader.token),
      'INVALID_REQUEST', 'INVALID_ARGUMENT', namesGameId);
    await session.expectRefusal('GetView of an unknown game', () => get({ game_id: `no-such-game-${paiju.commandId()}` }, leader.token),
      'GAME_NOT_FOUND', 'NOT_FOUND');

    // commands: out of turn, for another seat, against the rules, at a stale version, of the other game
    const pass = (seat) => ({ pass: { seat } }); // ZljPass and TractorPass alike
    let outOfTurn;
    if (game === 'zlj') outOfTurn = pass(other.seat);
    else outOfTurn = { play: { seat: other.seat, cards: [(await this.view(other, version)).tractor.hand[0]] } };
    await session.expectRefusal(`seat ${other.seat} acting out of turn`,
      () => act({ expected_version: String(version), [game]: outOfTurn }, other.token), 'NOT_YOUR_TURN', 'FAILED_PRECONDITION',
      (refusal) => {
        const waiting = (refusal.metadata.waiting || '').split(',').filter(Boolean).map(Number);
        if (!waiting.includes(leader.seat)) fail(`NOT_YOUR_TURN metadata ${JSON.stringify(refusal.metadata)}: seat ${leader.seat} is to play`);
        if (refusal.metadata.seat !== String(other.seat)) {
          fail(`NOT_YOUR_TURN metadata ${JSON.stringify(refusal.metadata)}: the acting seat ${other.seat} is missing`);
        }
      });
    await session.expectRefusal(`seat ${other.seat} acting for seat ${leader.seat}`,
      () => act({ expected_version: String(version), [game]: actions[0] }, other.token), 'NOT_YOUR_SEAT', 'PERMISSION_DENIED',
      (refusal) => {
        if (refusal.metadata.seat !== String(other.seat)) fail(`NOT_YOUR_SEAT metadata ${JSON.stringify(refusal.metadata)}`);
      });
    await session.expectRefusal(`seat ${leader.seat} passing when it leads`,
      () => act({ expected_version: String(version), [game]: pass(leader.seat) }, leader.token), 'RULE_VIOLATION', 'FAILED_PRECONDITION',
      (refusal) => {
        if (!refusal.ruleViolation || !refusal.ruleViolation.rule || !refusal.ruleViolation.reason) {
          fail(`RULE_VIOLATION without a RuleViolation naming its rule: ${JSON.stringify(refusal.details)}`);
        }
        session.rule = refusal.ruleViolation.rule;
      });
    const stale = (refusal) => {
      if (refusal.metadata.version !== String(version)) fail(`STALE_VERSION metadata ${JSON.stringify(refusal.metadata)}, the game is at ${version}`);
    };
    await session.expectRefusal(`seat ${leader.seat} acting at version ${version - 1}`,
      () => act({ expected_version: String(version - 1), [game]: actions[0] }, leader.token), 'STALE_VERSION', 'ABORTED', stale);
    await session.expectRefusal(`seat ${leader.seat} checking a move at version ${version - 1}`,
      () => act({ expected_version: String(version - 1), [game]: actions[0], validate_only: true }, leader.token),
      'STALE_VERSION', 'ABORTED', stale);
    const otherGame = game === 'zlj' ? 'tractor' : 'zlj';
    await session.expectRefusal(`a ${otherGame} command in a ${game} game`,
      () => act({ expected_version: String(version), [otherGame]: { pass: { seat: 0 } } }, leader.token),
      'WRONG_GAME_KIND', 'INVALID_ARGUMENT');

    // nothing changed on any refusal; validate_only stores nothing either
    const checked = await act({ expected_version: String(version), [game]: actions[0], validate_only: true }, leader.token);
    if (Number(checked.version) !== version || checked.events.length) fail(`validate_only answered ${JSON.stringify(checked)}`);
    const after = await this.view(leader);
    if (Number(after.version) !== version) fail(`the game moved from ${version} to ${after.version} on refusals alone`);

    // the leader plays; a retry with the same command id is answered as the first time; a new command needs a new id
    const commandId = paiju.commandId();
    const first = await leader.act(actions[0], version, commandId);
    if (!first) fail('the leader could not play its first listed action');
    const again = await session.call(engine, 'Act', {
      game_id: gameId, command_id: commandId, expected_version: String(version), [game]: actions[0],
    }, leader.token, { probe: true });
    if (again.version !== first.version || again.events.length !== first.events.length) {
      fail(`a retried command answered ${JSON.stringify(again)}, the first time ${JSON.stringify(first)}`);
    }
    await session.expectRefusal('a command id used again for another command',
      () => session.call(engine, 'Act', { game_id: gameId, command_id: commandId, [game]: pass(leader.seat) }, leader.token,
        { probe: true }),
      'COMMAND_ID_REUSED', 'ALREADY_EXISTS');
  }
}

// --- main -------------------------------------------------------------------------------------------------

async function main() {
  const options = parseArgs(process.argv.slice(2));
  const started = Date.now();
  const session = new Session(options);
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Failure(`not done after ${options.timeout} s`)), options.timeout * 1000);
  });
  try {
    const result = await Promise.race([timeout, playOnce(session)]);
    const seen = [...session.seen.keys()].sort();
    const missing = REQUIRED.filter((r) => !session.checked.has(r));
    if (missing.length) fail(`not checked: ${missing.join(', ')}`);
    if (session.problem) fail(session.problem);
    if (result.acts === 0) fail('no act');
    process.stdout.write(`${JSON.stringify({
      game: options.game,
      acts: session.acts,
      events: result.events,
      checked: seen,
      ok: true,
      table: result.table,
      game_id: result.gameId,
      rule_violated: session.rule,
      refusals: Object.fromEntries([...session.seen.entries()].sort()),
      composed_follows: options.game === 'tractor' ? session.composed : undefined,
      notes: session.notes,
      rate_limited: session.rateLimited,
      resumed: session.resumed,
      contributions: session.contributions,
      turns: session.turns,
      calls: session.calls,
      probe_calls: session.probeCalls,
      lobby_calls: session.lobbyCalls,
      seconds: Math.round((Date.now() - started) / 100) / 10,
    })}\n`);
    return 0;
  } catch (err) {
    const message = err instanceof Failure ? err.message : err.stack || String(err);
    process.stderr.write(`play.js ${options.game}: ${message}\n`);
    process.stdout.write(`${JSON.stringify({ game: options.game, acts: session.acts, ok: false, error: err.message })}\n`);
    return 1;
  } finally {
    clearTimeout(timer);
    session.finished = true;
    session.close();
  }
}

async function playOnce(session) {
  paiju.loadContract();
  const { table, gameId, players } = await seatEveryone(session);
  session.log(`table ${table.table_id}, game ${gameId}`);
  const match = new Match(session, table, gameId, players);
  await match.run();
  const events = Math.max(...match.seats.map((s) => s.watched));
  if (session.options.game === 'zlj') {
    // the lobby reads the end of the game from the event stream and finishes the match with its result
    const owner = players[0];
    for (let i = 0; ; i += 1) {
      const { table: now } = await session.call(session.lobby, 'GetTable', { table_id: table.table_id }, owner.token);
      if (now.status === 'TABLE_STATUS_FINISHED' && now.last_result?.game_id === gameId) {
        if (now.last_result.team_points.length !== 2) fail(`a 砸六家 result without team points: ${JSON.stringify(now.last_result)}`);
        break;
      }
      if (i > 200) fail(`the table never showed the match finished: ${JSON.stringify(now)}`);
      await sleep(0.05);
    }
  }
  return { table: table.table_id, gameId, events, acts: session.acts };
}

process.exitCode = await main();
// the gRPC channels are closed; leave without waiting for their timers
process.exit(process.exitCode);
