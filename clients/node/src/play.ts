#!/usr/bin/env node
// Play one deal of 砸六家 (zlj) or 拖拉机 (tractor) through Paiju's lobby and engine, as a client written in
// another language than the servers, on the TypeScript client of this package (its code generated from protos/);
// check the error model on the way.
//
//   node dist/src/play.js LOBBY_ADDRESS GAME [ENGINE_ADDRESS] [--engine ADDRESS] [--timeout SECONDS] [--verbose]
//
// GAME is zlj or tractor. The engine's address is not in any answer of the lobby (JoinGame gives a game id and a
// token, not where the engine is): pass it (default $PAIJU_ENGINE_ADDRESS, else 127.0.0.1:50051, `make run`'s).
//
// 1. Signs in guests (six for zlj, four for tractor), the first opens a table (zlj: one deal; tractor: the
//    default options), everyone sits down and says ready, the owner starts the match, each asks JoinGame for
//    its engine token, and keeps a WatchTable stream open (its presence: without it a bot covers the seat).
// 2. Each seat plays from its Watch stream alone, with the client's watch-and-act loop (`playSeat`): the newest
//    event of each change comes with the turn it leads to, and a turn that names the seat carries its legal
//    actions (and its view, and what a 拖拉机 follow owes). The seat plays the first action listed (a 拖拉机 seat
//    bids when it can, and composes a follow of its own from `tractor_follow` and the turn's view, checked with
//    `validate_only` first); the loop acts at the turn's version with a fresh command id, takes ABORTED
//    (STALE_VERSION) as "another seat moved first", and answers a turn whose `fair_step` asks for the seat's random
//    bytes with a Contribute. Nothing else is asked of the engine while playing: no GetView, no GetLegalActions
//    (the calls are counted by method, and the summary says so). zlj ends with the match (one deal); tractor stops
//    when the first deal is settled (`deal_settled`).
// 3. At the first lead of the play, checks the error model: TOKEN_MISSING, TOKEN_INVALID, INVALID_REQUEST (with
//    a BadRequest naming game_id), GAME_NOT_FOUND, NOT_YOUR_TURN, NOT_YOUR_SEAT, RULE_VIOLATION (with a
//    RuleViolation naming the rule), STALE_VERSION, WRONG_GAME_KIND, COMMAND_ID_REUSED and an idempotent retry,
//    and a game token refused by the lobby (TOKEN_INVALID: it is for the engine); every refusal anywhere must carry an ErrorInfo of domain "paiju.v1" whose reason goes
//    with the status code the contract's descriptor gives it, and none may be UNKNOWN or INTERNAL.
// 4. Prints one JSON line: {"game", "acts", "events", "checked": [reasons seen], "calls": {method: count} (the
//    engine calls of the play, Watch streams opened included), "probe_calls" (those of step 3, made on purpose),
//    "lobby_calls", "ok": true, ...}; exit 0.
//    Any failure: a message on stderr, {"ok": false, "error": ...} on stdout, exit 1.

import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Interceptor, StreamResponse } from "@connectrpc/connect";

import {
  DOMAIN,
  Game,
  Paiju,
  REASON_CODES,
  TableStatus,
  bearer,
  codeName,
  commandId,
  playSeat,
  refusalOf,
  type ActRequestSchema,
  type ActResponse,
  type Card,
  type Envelope,
  type GameTicket,
  type GetViewResponse,
  type Kind,
  type KindTypes,
  type Player,
  type Presence,
  type Reason,
  type Refusal,
  type SeatResult,
  type SeatTurn,
  type Table,
  type TractorCommand,
  type TractorFollowRequirement,
  type Turn,
} from "./index.js";

const GAMES = {
  zlj: { game: Game.ZLJ, seats: 6 },
  tractor: { game: Game.TRACTOR, seats: 4 },
} as const;

/** The reasons this program provokes on purpose; each must have been seen at the end. */
export const REQUIRED: readonly Reason[] = [
  "TOKEN_MISSING",
  "TOKEN_INVALID",
  "INVALID_REQUEST",
  "GAME_NOT_FOUND",
  "NOT_YOUR_TURN",
  "NOT_YOUR_SEAT",
  "RULE_VIOLATION",
  "STALE_VERSION",
  "WRONG_GAME_KIND",
  "COMMAND_ID_REUSED",
];

/** gRPC's own refusals, which carry no ErrorInfo (errors.proto), and our own cancellations. */
const WITHOUT_REASON = ["DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED", "UNAVAILABLE", "CANCELLED"];

class Failure extends Error {}

function fail(message: string): never {
  throw new Failure(message);
}

interface Options {
  lobby: string;
  engine: string;
  game: Kind;
  timeout: number;
  verbose: boolean;
}

function parseArgs(argv: string[]): Options {
  let engine = process.env.PAIJU_ENGINE_ADDRESS || "127.0.0.1:50051";
  let timeout = 600;
  let verbose = false;
  let help = false;
  const positional: string[] = [];
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i]!;
    if (arg === "--engine") engine = argv[++i] ?? "";
    else if (arg === "--timeout") timeout = Number(argv[++i]);
    else if (arg === "--verbose" || arg === "-v") verbose = true;
    else if (arg === "--help" || arg === "-h") help = true;
    else positional.push(arg);
  }
  const [lobby, game, engineAt] = positional;
  if (help || lobby === undefined || (game !== "zlj" && game !== "tractor") || positional.length > 3) {
    process.stderr.write(
      "usage: node dist/src/play.js LOBBY_ADDRESS zlj|tractor [ENGINE_ADDRESS] [--engine ADDRESS] " +
        "[--timeout SECONDS] [--verbose]\n",
    );
    process.exit(2);
  }
  return { lobby, engine: engineAt ?? engine, game, timeout, verbose };
}

const sleep = (seconds: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, seconds * 1000));

/** A multiset of cards as a sorted list (copies from several decks are equal). */
const sorted = (cards: readonly Card[]): Card[] => [...cards].sort((a, b) => a - b);
const sameCards = (a: readonly Card[], b: readonly Card[]): boolean => {
  const [x, y] = [sorted(a), sorted(b)];
  return x.length === y.length && x.every((c, i) => c === y[i]);
};

/** `cards` without one copy of each of `taken`. */
function without(cards: readonly Card[], taken: readonly Card[]): Card[] {
  const left = [...cards];
  for (const card of taken) {
    const i = left.indexOf(card);
    if (i >= 0) left.splice(i, 1);
  }
  return left;
}

/** A string of the same length and alphabet as `s` with every character changed. */
function altered(s: string): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  return [...s].map((c) => alphabet[(alphabet.indexOf(c) + 1) % alphabet.length]).join("");
}

/** A token of the right shape whose signature (its last dot-separated part) is not the issuer's. */
function forged(token: string): string {
  const dot = token.lastIndexOf(".");
  return dot < 0 ? altered(token) : token.slice(0, dot + 1) + altered(token.slice(dot + 1));
}

/** Act's `command` oneof for a command of `game`. */
type ActCommand = MessageInitShape<typeof ActRequestSchema>["command"];
function gameCommand<K extends Kind>(game: K, command: KindTypes[K]["init"]): ActCommand {
  return { case: game, value: command } as ActCommand;
}

// --- the session: calls, refusals and what was seen ------------------------------------------------------

type Book = Record<string, number>;

class Session {
  readonly spec: (typeof GAMES)[Kind];
  /** The play's calls (lobby's counted apart) and the probes' calls, each through its own connections. */
  readonly paiju: Paiju;
  readonly probe: Paiju;
  readonly seen = new Map<string, number>(); // reason -> times refused with it
  readonly checked = new Set<Reason>(); // reasons provoked on purpose and found as documented
  acts = 0;
  readonly composed = { tried: 0, accepted: 0, refused: 0, same: 0 };
  rateLimited = 0;
  resumed = 0; // streams opened again after the server ended them or the connection was cut
  contributions = 0; // random bytes added to committed shuffles (fair dealing)
  turns = 0; // turns the seats' streams brought
  readonly calls: Book = {}; // the engine calls of the play, by method (Watch: streams opened)
  readonly probeCalls: Book = {}; // the engine calls that check the error model on purpose (step 3)
  readonly lobbyCalls: Book = {}; // the lobby's, by method
  readonly notes: string[] = []; // where the servers' answers differ from what the protos' comments say
  problem: string | null = null; // the first failed check met inside a call or a stream (reported at the end)
  rule = "";
  finished = false;

  constructor(readonly options: Options) {
    this.spec = GAMES[options.game];
    const onRetry = (refusal: Refusal, method: string): void => {
      if (refusal.reason !== "RATE_LIMITED") return;
      this.rateLimited += 1;
      if (!refusal.retryInfo || !refusal.quotaFailure) this.flag(`${method}: RATE_LIMITED without RetryInfo and QuotaFailure`);
    };
    const judge = this.judging();
    this.paiju = new Paiju({ lobby: options.lobby, engine: options.engine, interceptors: [this.counting(false), judge], onRetry });
    this.probe = new Paiju({ lobby: options.lobby, engine: options.engine, interceptors: [this.counting(true), judge], onRetry });
  }

  log(...parts: unknown[]): void {
    if (this.options.verbose) process.stderr.write(`${parts.join(" ")}\n`);
  }

  /** Remember the first failed check (a call's interceptor cannot fail the program itself). */
  flag(message: string): void {
    this.problem ??= message;
    this.log(`PROBLEM: ${message}`);
  }

  /** Count every attempt of every call by method: the probes' apart from the play's, the lobby's apart. */
  counting(probe: boolean): Interceptor {
    return (next) => async (req) => {
      const book = probe ? this.probeCalls : req.service.typeName === "paiju.v1.LobbyService" ? this.lobbyCalls : this.calls;
      book[req.method.name] = (book[req.method.name] ?? 0) + 1;
      return next(req);
    };
  }

  /** Check every refusal, of a unary call or a stream, against the error model (see `judge`). */
  judging(): Interceptor {
    return (next) => async (req) => {
      const method = req.method.name;
      try {
        const res = await next(req);
        if (!res.stream) return res;
        const judge = (err: unknown): void => void this.judge(err, method);
        const messages = res.message;
        async function* judged(): AsyncGenerator<unknown> {
          try {
            yield* messages;
          } catch (err) {
            judge(err);
            throw err;
          }
        }
        return { ...res, message: judged() } as StreamResponse;
      } catch (err) {
        this.judge(err, method);
        throw err;
      }
    };
  }

  /**
   * A refusal checked against the error model: never UNKNOWN or INTERNAL, an ErrorInfo of domain paiju.v1 whose
   * reason goes with the status code the contract gives it (REASON_CODES, from the descriptor's
   * `(paiju.v1.status_code)`), except gRPC's own refusals.
   */
  judge(err: unknown, method: string): Refusal | null {
    const refusal = refusalOf(err);
    if (refusal === null) return null; // not a gRPC error
    if (refusal.codeName === "UNKNOWN" || refusal.codeName === "INTERNAL") {
      this.flag(`${method} answered ${refusal.codeName}: ${refusal.text} (${JSON.stringify(refusal.metadata)})`);
    } else if (refusal.rawReason === null) {
      if (!WITHOUT_REASON.includes(refusal.codeName)) this.flag(`${method} refused with ${refusal.codeName} and no ErrorInfo: ${refusal.text}`);
    } else {
      if (refusal.domain !== DOMAIN) this.flag(`${method}: ErrorInfo domain ${refusal.domain}, not ${DOMAIN}`);
      if (refusal.reason === null) this.notes.push(`${method}: a reason this client does not know: ${refusal.rawReason}`);
      else if (REASON_CODES[refusal.reason] !== refusal.code) {
        this.flag(`${method}: reason ${refusal.reason} came with ${refusal.codeName}, the contract says ${codeName(REASON_CODES[refusal.reason])}`);
      }
      this.seen.set(refusal.rawReason, (this.seen.get(refusal.rawReason) ?? 0) + 1);
    }
    this.log(
      `  refused ${method}: ${refusal.codeName} ${refusal.rawReason} ${JSON.stringify(refusal.metadata)} ` +
        `[${refusal.details.map((d) => d.type).join(", ")}] ${refusal.text}`,
    );
    return refusal;
  }

  /** `attempt()` must be refused with `reason` and `code`; `more(refusal)` checks the details. */
  async expectRefusal(
    what: string,
    attempt: () => Promise<unknown>,
    reason: Reason,
    code: string,
    more: (refusal: Refusal) => void = () => {},
  ): Promise<Refusal> {
    let refusal: Refusal | null = null;
    try {
      await attempt();
    } catch (err) {
      refusal = refusalOf(err);
      if (refusal === null) throw err;
    }
    if (refusal === null) fail(`${what}: answered OK, expected ${code} ${reason}`);
    if (refusal.reason !== reason || refusal.codeName !== code) {
      fail(`${what}: refused with ${refusal.codeName} ${refusal.rawReason} (${refusal.text}), expected ${code} ${reason}`);
    }
    more(refusal);
    this.checked.add(reason);
    this.log(`checked ${reason}: ${what}`);
    return refusal;
  }

  close(): void {
    this.paiju.close();
    this.probe.close();
  }
}

// --- the lobby ---------------------------------------------------------------------------------------------

interface Seated {
  player: Player;
  seat: number;
  ticket: GameTicket;
  presence: Presence;
}

async function seatEveryone(session: Session): Promise<{ table: Table; gameId: string; seated: Seated[] }> {
  const { spec, options, paiju } = session;
  const players: Player[] = [];
  for (let i = 0; i < spec.seats; i += 1) players.push(await paiju.guest());
  const owner = players[0]!;
  await session.expectRefusal(
    "CreateTable without a token",
    () => paiju.lobby.createTable({ name: "no token", game: spec.game }),
    "TOKEN_MISSING",
    "UNAUTHENTICATED",
  );
  const options_ =
    options.game === "zlj" ? ({ case: "zljOptions", value: { deals: 1 } } as const) : ({ case: undefined } as const);
  const { table } = await paiju.lobby.createTable(
    { name: `node client ${options.game}`, game: spec.game, options: options_ },
    await owner.auth(),
  );
  if (table === undefined || table.game !== spec.game || table.seats.length !== spec.seats) {
    fail(`CreateTable answered ${JSON.stringify(table)}`);
  }
  const tableId = table.tableId;
  const seats = new Map<Player, number>();
  for (const player of players) {
    const taken = await paiju.lobby.takeSeat({ tableId }, await player.auth());
    const seat = taken.table?.seats.find((s) => s.playerId === player.playerId);
    if (seat === undefined) fail(`TakeSeat: ${player.name} is not at the table`);
    seats.set(player, seat.seat);
    await paiju.lobby.ready({ tableId, ready: true }, await player.auth());
  }
  const started = (await paiju.lobby.startMatch({ tableId }, await owner.auth())).table;
  const gameId = started?.gameId;
  if (!gameId || started?.status !== TableStatus.PLAYING) fail(`StartMatch answered ${JSON.stringify(started)}`);
  const seated: Seated[] = [];
  for (const player of players) {
    const ticket = await player.joinGame(tableId);
    const seat = ticket.seat; // unset: JoinGame gave a spectator's token
    if (ticket.gameId !== gameId || seat === undefined || seat !== seats.get(player) || ticket.game !== spec.game) {
      fail(`JoinGame answered game ${ticket.gameId} seat ${ticket.seat} for ${player.name} in seat ${seats.get(player)}`);
    }
    const presence = player.present(tableId, { onResume: () => (session.resumed += 1) });
    seated.push({ player, seat, ticket, presence });
  }
  await session.expectRefusal(
    "JoinGame with a game token", // a game token names the engine as its audience, not the lobby
    () => paiju.lobby.joinGame({ tableId }, bearer(seated[0]!.ticket.token)),
    "TOKEN_INVALID",
    "UNAUTHENTICATED",
  );
  seated.sort((a, b) => a.seat - b.seat);
  return { table, gameId, seated };
}

// --- the engine: one player per seat ------------------------------------------------------------------------

/** One seat, played by the client's watch-and-act loop with the checks of this program as its hooks. */
class Seat {
  readonly seat: number;
  readonly game: Kind;
  watched = 0n; // the last version the watch delivered

  constructor(
    readonly session: Session,
    readonly match: Match,
    readonly seated: Seated,
  ) {
    this.seat = seated.seat;
    this.game = session.options.game;
  }

  get ticket(): GameTicket {
    return this.seated.ticket;
  }

  get token(): string {
    return this.seated.ticket.token;
  }

  play(): Promise<SeatResult> {
    const { session, match } = this;
    return playSeat(session.paiju.engine, this.ticket, this.game, {
      decide: (turn) => this.decide(turn),
      onEvent: (envelope) => this.received(envelope),
      onTurn: (turn) => this.turned(turn),
      onActed: (response) => {
        session.acts += 1;
        for (const envelope of response.events) match.inspect(envelope);
      },
      onRefused: (refusal, turn) => {
        throw new Failure(`seat ${this.seat} could not play at version ${turn.version}: ${refusal.message}`);
      },
      onContributed: () => (session.contributions += 1),
      onResume: () => (session.resumed += 1),
      signal: match.stop.signal,
    });
  }

  /** Every event the watch delivers (in order, each version once: the loop checks that). */
  received(envelope: Envelope): void {
    this.watched = envelope.version;
    if (envelope.gameId !== this.match.gameId) fail(`seat ${this.seat}: an event of ${envelope.gameId}`);
    const payload = envelope.payload;
    if (payload.case !== this.game && payload.case !== "seatsAssigned") fail(`a ${payload.case} event in a ${this.game} game`);
    if (payload.case === "zlj" || payload.case === "tractor") {
      const event = payload.value.event;
      if (event.case === "handsDealt") {
        event.value.hands.forEach((hand, s) => {
          const shown = hand.cards.length > 0;
          if (shown !== (s === this.seat)) fail(`seat ${this.seat} was dealt a view of seat ${s}'s hand (${hand.cards.length} cards)`);
        });
        if (event.value.seed !== undefined) fail(`seat ${this.seat} was shown the deal's seed`);
      }
    }
    this.match.inspect(envelope);
  }

  /**
   * A turn: at the version of the newest event received, and with no actions, view or step for a seat it does
   * not name (another seat's actions or view never reach this seat).
   */
  turned(turn: Turn): void {
    if (turn.version !== this.watched) fail(`seat ${this.seat}: a turn at version ${turn.version} after the event of version ${this.watched}`);
    const mine = turn.seats.includes(this.seat);
    if (!mine && (turn.actions.length || turn.view.case !== undefined || turn.tractorFollow || turn.fairStep)) {
      fail(`seat ${this.seat} was told what seats ${turn.seats} may do at version ${turn.version}`);
    }
    if (turn.actions.length && turn.view.case !== this.game) fail(`seat ${this.seat}'s turn has actions but no ${this.game} view`);
    this.session.turns += 1;
  }

  /** The seat's move: the first listed action; a 拖拉机 seat bids when it can and composes its own follows. */
  async decide(turn: SeatTurn<Kind>): Promise<KindTypes[Kind]["init"] | undefined> {
    const { match } = this;
    if (match.stopping) return undefined;
    const actions = turn.actions;
    if (this.game === "tractor" && actions.some((a) => a.command.case === "cut")) {
      match.dealOver(); // a cut comes after a deal is settled: one deal is what this program plays
      return undefined;
    }
    if (!match.checked && actions.every((a) => a.command.case === "play") && turn.follow === undefined) {
      match.checked = true; // the first lead of the play: nobody else can move, the game stands still
      await match.checkErrorModel(this, actions, turn.version);
      return undefined;
    }
    if (this.game !== "tractor") return actions[0];
    const tractor = actions as readonly TractorCommand[];
    const bid = tractor.find((a) => a.command.case === "makeBid");
    if (bid !== undefined) return bid; // the first listed is a pass: if nobody ever bid, every deal would be void
    const first = tractor[0]!;
    if (turn.follow !== undefined && first.command.case === "play") {
      return (await this.composeFollow(turn.follow, first.command.value.cards, turn)) ?? first;
    }
    return first;
  }

  /**
   * A follow made from what it owes (TractorFollowRequirement): `must_include`, then `free` more cards of the led
   * suit class (`free_of_suit`) or of the whole hand (the turn's view), taken from the top instead of the
   * bottom; checked with Act {validate_only}. Undefined when no other follow can be made, or the engine refuses it.
   */
  async composeFollow(
    follow: TractorFollowRequirement,
    listed: readonly Card[],
    turn: SeatTurn<Kind>,
  ): Promise<KindTypes["tractor"]["init"] | undefined> {
    const { session, match } = this;
    if (turn.turn.view.case !== "tractor") fail(`seat ${this.seat}: a follow without a tractor view`);
    const hand = turn.turn.view.value.hand;
    const must = follow.mustInclude;
    const pool = sorted(without(follow.freeOfSuit ? follow.suitCards : hand, must)).reverse();
    const free = follow.free;
    if (must.length + free !== follow.count || pool.length < free) fail(`tractor_follow does not add up: ${JSON.stringify(follow)}`);
    let candidate: Card[] | null = null;
    for (let start = 0; start + free <= pool.length; start += 1) {
      const cards = [...must, ...pool.slice(start, start + free)];
      if (!sameCards(cards, listed)) {
        candidate = cards;
        break;
      }
    }
    if (candidate === null) {
      session.composed.same += 1;
      return undefined;
    }
    const command: KindTypes["tractor"]["init"] = { command: { case: "play", value: { seat: this.seat, cards: candidate } } };
    session.composed.tried += 1;
    try {
      const checked = await session.paiju.engine.act(
        {
          gameId: match.gameId,
          commandId: commandId(),
          expectedVersion: turn.version,
          command: gameCommand("tractor", command),
          validateOnly: true,
        },
        bearer(this.token),
      );
      if (checked.version !== turn.version || checked.events.length) fail(`validate_only answered version ${checked.version} with ${checked.events.length} events`);
    } catch (err) {
      const refusal = refusalOf(err);
      if (refusal?.reason === "RULE_VIOLATION") {
        session.composed.refused += 1;
        return undefined;
      }
      if (refusal?.reason === "STALE_VERSION") return undefined;
      throw err;
    }
    session.composed.accepted += 1;
    return command;
  }
}

// --- the match ----------------------------------------------------------------------------------------------

class Match {
  readonly game: Kind;
  readonly seats: Seat[];
  readonly stop = new AbortController();
  checked = false;
  stopping = false; // 拖拉机: the first deal is settled, nobody decides any more
  settledAt = 0n; // 拖拉机: the version of the first deal's settlement

  constructor(
    readonly session: Session,
    readonly table: Table,
    readonly gameId: string,
    seated: Seated[],
  ) {
    this.game = session.options.game;
    this.seats = seated.map((s) => new Seat(session, this, s));
  }

  inspect(envelope: Envelope): void {
    if (envelope.payload.case === "tractor" && envelope.payload.value.event.case === "dealSettled") {
      if (this.settledAt === 0n) this.settledAt = envelope.version;
      this.dealOver();
    }
  }

  /** 拖拉机: the first deal is settled: stop deciding, and stop once every seat's watch has seen it. */
  dealOver(): void {
    if (this.settledAt === 0n || this.stopping) return;
    this.stopping = true;
    const caughtUp = (): void => {
      if (this.seats.every((s) => s.watched >= this.settledAt)) this.stop.abort();
      else setTimeout(caughtUp, 20);
    };
    caughtUp();
  }

  /** Every seat played by the loop: 砸六家 until the game ends, 拖拉机 until the first deal is settled. */
  async run(): Promise<SeatResult[]> {
    const playing = this.seats.map((seat) => seat.play());
    try {
      return await Promise.all(playing);
    } catch (err) {
      this.stop.abort(); // one seat failed: the others stop
      await Promise.allSettled(playing);
      throw err;
    }
  }

  /** A seat's view: only the error model's probes ask for one (counted apart from the play's calls). */
  view(seat: Seat, minVersion = 0n): Promise<GetViewResponse> {
    return this.session.probe.engine.getView({ gameId: this.gameId, minVersion }, bearer(seat.token));
  }

  /**
   * The error model, at the first lead of the play (`leader` is to play, nobody else may act): each refusal
   * with its reason, code and details, the game unchanged by all of them; then the leader's first listed play,
   * a retry of it (answered as the first time) and its command id reused for another command.
   */
  async checkErrorModel(leader: Seat, actions: SeatTurn<Kind>["actions"], version: bigint): Promise<void> {
    const { session, game, gameId } = this;
    const other = this.seats.find((s) => s !== leader)!;
    const engine = session.probe.engine;
    const first = actions[0]!;
    const get = (gameId: string, token: string) => engine.getView({ gameId }, bearer(token));
    const act = (
      request: { gameId?: string; expectedVersion?: bigint; command: ActCommand; validateOnly?: boolean },
      token: string,
    ): Promise<ActResponse> => engine.act({ gameId, commandId: commandId(), ...request }, bearer(token));
    const before = await this.view(leader, version);
    if (before.version !== version) fail(`GetView at min_version ${version} answered version ${before.version}`);

    await session.expectRefusal("GetView without a token", () => get(gameId, ""), "TOKEN_MISSING", "UNAUTHENTICATED");
    await session.expectRefusal("GetView with a forged token", () => get(gameId, forged(leader.token)), "TOKEN_INVALID", "UNAUTHENTICATED");
    await session.expectRefusal("GetView with a token that is no token", () => get(gameId, "not-a-token"), "TOKEN_INVALID", "UNAUTHENTICATED");
    const namesGameId = (refusal: Refusal): void => {
      const fields = refusal.badRequest?.fieldViolations.map((v) => v.field) ?? [];
      if (!fields.includes("game_id")) fail(`INVALID_REQUEST without a BadRequest naming game_id: ${refusal.details.map((d) => d.type)}`);
    };
    await session.expectRefusal('GetView of game "*"', () => get("*", leader.token), "INVALID_REQUEST", "INVALID_ARGUMENT", namesGameId);
    await session.expectRefusal("GetView of a game id of 5,000 characters", () => get("g".repeat(5000), leader.token),
      "INVALID_REQUEST", "INVALID_ARGUMENT", namesGameId);
    await session.expectRefusal('Act on game "*"', () => act({ gameId: "*", command: gameCommand(game, first) }, leader.token),
      "INVALID_REQUEST", "INVALID_ARGUMENT", namesGameId);
    await session.expectRefusal("GetView of an unknown game", () => get(`no-such-game-${commandId()}`, leader.token),
      "GAME_NOT_FOUND", "NOT_FOUND");

    // commands: out of turn, for another seat, against the rules, at a stale version, of the other game
    const pass = (seat: number): ActCommand => gameCommand(game, { command: { case: "pass", value: { seat } } }); // ZljPass and TractorPass alike
    let outOfTurn: ActCommand;
    if (game === "zlj") outOfTurn = pass(other.seat);
    else {
      const view = (await this.view(other, version)).view;
      if (view.case !== "tractor") fail(`GetView of seat ${other.seat} answered a ${view.case} view`);
      outOfTurn = gameCommand("tractor", { command: { case: "play", value: { seat: other.seat, cards: [view.value.hand[0]!] } } });
    }
    await session.expectRefusal(`seat ${other.seat} acting out of turn`,
      () => act({ expectedVersion: version, command: outOfTurn }, other.token), "NOT_YOUR_TURN", "FAILED_PRECONDITION",
      (refusal) => {
        const waiting = (refusal.metadata.waiting ?? "").split(",").filter(Boolean).map(Number);
        if (!waiting.includes(leader.seat)) fail(`NOT_YOUR_TURN metadata ${JSON.stringify(refusal.metadata)}: seat ${leader.seat} is to play`);
        if (refusal.metadata.seat !== String(other.seat)) {
          fail(`NOT_YOUR_TURN metadata ${JSON.stringify(refusal.metadata)}: the acting seat ${other.seat} is missing`);
        }
      });
    await session.expectRefusal(`seat ${other.seat} acting for seat ${leader.seat}`,
      () => act({ expectedVersion: version, command: gameCommand(game, first) }, other.token), "NOT_YOUR_SEAT", "PERMISSION_DENIED",
      (refusal) => {
        if (refusal.metadata.seat !== String(other.seat)) fail(`NOT_YOUR_SEAT metadata ${JSON.stringify(refusal.metadata)}`);
      });
    await session.expectRefusal(`seat ${leader.seat} passing when it leads`,
      () => act({ expectedVersion: version, command: pass(leader.seat) }, leader.token), "RULE_VIOLATION", "FAILED_PRECONDITION",
      (refusal) => {
        if (!refusal.ruleViolation?.rule || !refusal.ruleViolation.reason) {
          fail(`RULE_VIOLATION without a RuleViolation naming its rule: ${refusal.details.map((d) => d.type)}`);
        }
        session.rule = refusal.ruleViolation.rule;
      });
    const stale = (refusal: Refusal): void => {
      if (refusal.metadata.version !== String(version)) fail(`STALE_VERSION metadata ${JSON.stringify(refusal.metadata)}, the game is at ${version}`);
    };
    await session.expectRefusal(`seat ${leader.seat} acting at version ${version - 1n}`,
      () => act({ expectedVersion: version - 1n, command: gameCommand(game, first) }, leader.token), "STALE_VERSION", "ABORTED", stale);
    await session.expectRefusal(`seat ${leader.seat} checking a move at version ${version - 1n}`,
      () => act({ expectedVersion: version - 1n, command: gameCommand(game, first), validateOnly: true }, leader.token),
      "STALE_VERSION", "ABORTED", stale);
    const otherGame: Kind = game === "zlj" ? "tractor" : "zlj";
    await session.expectRefusal(`a ${otherGame} command in a ${game} game`,
      () => act({ expectedVersion: version, command: gameCommand(otherGame, { command: { case: "pass", value: { seat: 0 } } }) }, leader.token),
      "WRONG_GAME_KIND", "INVALID_ARGUMENT");

    // nothing changed on any refusal; validate_only stores nothing either
    const checked = await act({ expectedVersion: version, command: gameCommand(game, first), validateOnly: true }, leader.token);
    if (checked.version !== version || checked.events.length) fail(`validate_only answered version ${checked.version} with ${checked.events.length} events`);
    const after = await this.view(leader);
    if (after.version !== version) fail(`the game moved from ${version} to ${after.version} on refusals alone`);

    // the leader plays; a retry with the same command id is answered as the first time; a new command needs a new id
    const id = commandId();
    const request = { gameId, commandId: id, expectedVersion: version, command: gameCommand(game, first) };
    const played = await session.paiju.engine.act(request, bearer(leader.token));
    session.acts += 1;
    for (const envelope of played.events) this.inspect(envelope);
    const again = await engine.act(request, bearer(leader.token));
    if (again.version !== played.version || again.events.length !== played.events.length) {
      fail(`a retried command answered version ${again.version} (${again.events.length} events), the first time ${played.version} (${played.events.length})`);
    }
    await session.expectRefusal("a command id used again for another command",
      () => engine.act({ gameId, commandId: id, command: pass(leader.seat) }, bearer(leader.token)),
      "COMMAND_ID_REUSED", "ALREADY_EXISTS");
  }
}

// --- main -------------------------------------------------------------------------------------------------

async function playOnce(session: Session): Promise<{ table: string; gameId: string; events: number }> {
  const { table, gameId, seated } = await seatEveryone(session);
  session.log(`table ${table.tableId}, game ${gameId}`);
  const match = new Match(session, table, gameId, seated);
  try {
    const results = await match.run();
    const ends = new Set(results.map((r) => r.end));
    const expected = session.options.game === "zlj" ? "game_ended" : "stopped";
    if (ends.size !== 1 || !ends.has(expected)) fail(`the seats' plays ended with ${[...ends]}, expected ${expected}`);
  } finally {
    session.finished = true;
    for (const { presence } of seated) {
      presence.close();
      if (presence.failure) session.flag(`the WatchTable stream of a seat failed: ${presence.failure.message}`);
    }
  }
  const events = Math.max(...match.seats.map((s) => Number(s.watched)));
  if (session.options.game === "zlj") {
    // the lobby reads the end of the game from the event stream and finishes the match with its result
    const owner = seated.find((s) => s.player.playerId === table.ownerId)!.player;
    for (let i = 0; ; i += 1) {
      const now = (await session.paiju.lobby.getTable({ tableId: table.tableId }, await owner.auth())).table!;
      if (now.status === TableStatus.FINISHED && now.lastResult?.gameId === gameId) {
        if (now.lastResult.teamPoints.length !== 2) fail(`a 砸六家 result without team points: ${now.lastResult.teamPoints}`);
        break;
      }
      if (i > 200) fail(`the table never showed the match finished: status ${TableStatus[now.status]}`);
      await sleep(0.05);
    }
  }
  return { table: table.tableId, gameId, events };
}

async function main(): Promise<number> {
  const options = parseArgs(process.argv.slice(2));
  const started = Date.now();
  const session = new Session(options);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Failure(`not done after ${options.timeout} s`)), options.timeout * 1000);
  });
  try {
    const result = await Promise.race([timeout, playOnce(session)]);
    const seen = [...session.seen.keys()].sort();
    const missing = REQUIRED.filter((r) => !session.checked.has(r));
    if (missing.length) fail(`not checked: ${missing.join(", ")}`);
    if (session.problem) fail(session.problem);
    if (session.acts === 0) fail("no act");
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
      composed_follows: options.game === "tractor" ? session.composed : undefined,
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
    const message = err instanceof Failure ? err.message : err instanceof Error ? err.stack ?? err.message : String(err);
    process.stderr.write(`play.js ${options.game}: ${message}\n`);
    process.stdout.write(`${JSON.stringify({ game: options.game, acts: session.acts, ok: false, error: String(err) })}\n`);
    return 1;
  } finally {
    clearTimeout(timer);
    session.close();
  }
}

process.exitCode = await main();
// the connections are closed; leave without waiting for their timers
process.exit(process.exitCode);
