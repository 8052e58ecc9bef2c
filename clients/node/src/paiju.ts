// Paiju's TypeScript client: the contract's generated types and clients (src/gen, made by `make node` from protos/
// with protoc-gen-es) with a small typed layer over them for what the protos alone do not say:
//
// - tokens: the lobby's session (`Player`, from Guest / Login / Register) and the engine's game token for one
//   seat of one game (`GameTicket`, from JoinGame), each sent as `authorization: Bearer <token>`, renewed before
//   they expire (15 minutes);
// - refusals: `Refusal`, the error model of errors.proto read from the `grpc-status-details-bin` trailer — the
//   status code, the `google.rpc.ErrorInfo` whose `reason` is typed from the contract's `ErrorReason` (`Reason`),
//   and the details unpacked (BadRequest, RuleViolation, RetryInfo, QuotaFailure); calls refused with
//   RATE_LIMITED or a passing UNAVAILABLE are tried again as RetryInfo says, with the same request (a command id
//   is answered as the first time);
// - the watch-and-act loop: `playSeat` follows a game's Watch stream and acts on the turns it brings (engine.proto,
//   `Turn`): the seat's legal actions, view and fair-dealing step arrive with the newest event of each change, so a
//   seat plays a whole match from the stream alone — the caller decides, the loop acts at the turn's version,
//   adds the seat's random bytes to each committed shuffle, takes a stale version as "the next turn is coming",
//   and resumes the stream from the last version received when the server drains or the connection is cut;
// - presence: `Player.present(tableId)` keeps the WatchTable stream open that makes a seated player present (when
//   the last one closes during a match, a bot covers the seat).
//
// Messages are protobuf-es messages: the protos' fields in lowerCamelCase, enums as TypeScript enums (`Game.ZLJ`),
// 64-bit integers as `bigint`, oneofs as `{case, value}`, unset messages and proto3 `optional` fields `undefined`.
// Every call and message is checked by tsc against the contract: a wrong field does not compile.

import { createHash, randomBytes, randomInt, randomUUID } from "node:crypto";

import { create, createRegistry, fromBinary, getOption, type MessageInitShape } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createClient,
  type CallOptions,
  type Client,
  type Interceptor,
  type Transport,
} from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";

import { Code as RpcCode } from "./gen/google/rpc/code_pb.js";
import {
  file_google_rpc_error_details,
  type BadRequest,
  type ErrorInfo,
  type QuotaFailure,
  type RetryInfo,
} from "./gen/google/rpc/error_details_pb.js";
import {
  EngineService,
  FairDealingStepKind,
  Game,
  WatchEndReason,
  file_paiju_v1_engine,
  type ActResponse,
  type Envelope,
  type RuleViolation,
  type Turn,
} from "./gen/paiju/v1/engine_pb.js";
import { ErrorReason, ErrorReasonSchema, status_code } from "./gen/paiju/v1/errors_pb.js";
import { LobbyService, type JoinGameResponse, type Session, type Table } from "./gen/paiju/v1/lobby_pb.js";
import type {
  TractorCommand,
  TractorCommandSchema,
  TractorEvent,
  TractorFollowRequirement,
  TractorSeatView,
} from "./gen/paiju/v1/tractor_pb.js";
import type { ZljCommand, ZljCommandSchema, ZljEvent, ZljSeatView } from "./gen/paiju/v1/zlj_pb.js";

/** `google.rpc.ErrorInfo.domain` of every Paiju refusal. */
export const DOMAIN = "paiju.v1";

// --- refusals ------------------------------------------------------------------------------------------------

/** A reason of the error model: the name of an `ErrorReason` value (errors.proto), as ErrorInfo.reason sends it. */
export type Reason = Exclude<keyof typeof ErrorReason, "ERROR_REASON_UNSPECIFIED">;

/** A gRPC status code's name (google.rpc.Code): "INVALID_ARGUMENT", "ABORTED", ... */
export type CodeName = keyof typeof RpcCode;

/**
 * Each reason's status code, read from the contract's descriptor: the option `(paiju.v1.status_code)` of each
 * `ErrorReason` value. Connect's `Code` numbers are gRPC's.
 */
export const REASON_CODES: Readonly<Record<Reason, Code>> = Object.freeze(
  Object.fromEntries(
    ErrorReasonSchema.values
      .filter((value) => value.number !== ErrorReason.ERROR_REASON_UNSPECIFIED)
      .map((value) => [value.name, getOption(value, status_code) as number as Code]),
  ) as Record<Reason, Code>,
);

/** Whether `name` is a reason of the contract (a newer server may send one this client does not know). */
export function isReason(name: string): name is Reason {
  return Object.prototype.hasOwnProperty.call(REASON_CODES, name);
}

/** The gRPC name of a status code (`Code.Aborted` → "ABORTED"). */
export function codeName(code: Code): CodeName {
  return (RpcCode[code] ?? "UNKNOWN") as CodeName;
}

/** The types a refusal's details are unpacked with: google/rpc/error_details.proto and paiju.v1.RuleViolation. */
const DETAIL_TYPES = createRegistry(file_google_rpc_error_details, file_paiju_v1_engine);

/** One detail of a refusal: its type name and, when the type is known, the message. */
export interface Detail {
  readonly type: string;
  readonly value: unknown;
}

/**
 * A refused call, by the error model (errors.proto): the status code, and from the `grpc-status-details-bin`
 * trailer the ErrorInfo's reason, domain and metadata and every other detail. `reason` is null when the status
 * carries no ErrorInfo (gRPC's own refusals: a deadline, a request over the size limit, a server out of reach) or
 * a reason this client does not know (then `rawReason` has it: treat it by its code, as errors.proto says).
 */
export class Refusal extends Error {
  override readonly name = "Refusal";
  /** The call's status code. */
  readonly code: Code;
  /** The status code's gRPC name. */
  readonly codeName: CodeName;
  /** The message for a person (never a program's switch). */
  readonly text: string;
  /** ErrorInfo.reason, typed: switch on it. */
  readonly reason: Reason | null;
  /** ErrorInfo.reason as sent (a reason newer than this client too). */
  readonly rawReason: string | null;
  /** ErrorInfo.domain: "paiju.v1" for every Paiju refusal. */
  readonly domain: string | null;
  /** ErrorInfo.metadata: the facts of the case, as strings (seats and versions in decimal, `waiting: "0,2"`). */
  readonly metadata: Readonly<Record<string, string>>;
  /** INVALID_REQUEST: one field violation per invalid field (protovalidate's paths: `game_id`, `seats[2].x`). */
  readonly badRequest: BadRequest | undefined;
  /** RULE_VIOLATION: the rule broken (`rule`: "§6", "D-TR-6.1") and why. */
  readonly ruleViolation: RuleViolation | undefined;
  /** RATE_LIMITED and the UNAVAILABLE reasons: how long to wait. */
  readonly retryInfo: RetryInfo | undefined;
  /** RATE_LIMITED: the limit. */
  readonly quotaFailure: QuotaFailure | undefined;
  /** Every detail, in order. */
  readonly details: readonly Detail[];
  /** The Connect error this was read from. */
  readonly error: ConnectError;

  constructor(error: ConnectError) {
    super(error.rawMessage);
    this.error = error;
    this.code = error.code;
    this.codeName = codeName(error.code);
    this.text = error.rawMessage;
    const details: Detail[] = [];
    let info: ErrorInfo | undefined;
    let badRequest: BadRequest | undefined;
    let ruleViolation: RuleViolation | undefined;
    let retryInfo: RetryInfo | undefined;
    let quotaFailure: QuotaFailure | undefined;
    for (const raw of error.details) {
      const type = "desc" in raw ? raw.desc.typeName : raw.type;
      const desc = DETAIL_TYPES.getMessage(type);
      let value: unknown = null;
      if ("desc" in raw) value = create(raw.desc, raw.value); // an error made in this process
      else if (desc !== undefined) {
        try {
          value = fromBinary(desc, raw.value);
        } catch {
          value = null; // not decodable as its type says: keep the name
        }
      }
      details.push({ type, value });
      switch (type) {
        case "google.rpc.ErrorInfo":
          info = value as ErrorInfo;
          break;
        case "google.rpc.BadRequest":
          badRequest = value as BadRequest;
          break;
        case "paiju.v1.RuleViolation":
          ruleViolation = value as RuleViolation;
          break;
        case "google.rpc.RetryInfo":
          retryInfo = value as RetryInfo;
          break;
        case "google.rpc.QuotaFailure":
          quotaFailure = value as QuotaFailure;
          break;
        default:
          break;
      }
    }
    this.details = details;
    this.rawReason = info?.reason ?? null;
    this.reason = info !== undefined && isReason(info.reason) ? info.reason : null;
    this.domain = info?.domain ?? null;
    this.metadata = info?.metadata ?? {};
    this.badRequest = badRequest;
    this.ruleViolation = ruleViolation;
    this.retryInfo = retryInfo;
    this.quotaFailure = quotaFailure;
    this.message = `${this.codeName}${this.rawReason ? ` ${this.rawReason}` : ""}: ${this.text}`;
  }

  /** Whether the reason is one of `reasons`. */
  is(...reasons: Reason[]): boolean {
    return this.reason !== null && reasons.includes(this.reason);
  }

  /** Seconds RetryInfo asks to wait, or undefined. */
  get retryDelaySeconds(): number | undefined {
    const delay = this.retryInfo?.retryDelay;
    return delay === undefined ? undefined : Number(delay.seconds) + delay.nanos / 1e9;
  }
}

/** The refusal of a failed call (`err` as thrown by a client), or null when `err` is not a gRPC error. */
export function refusalOf(err: unknown): Refusal | null {
  if (err instanceof Refusal) return err;
  if (err instanceof ConnectError) return new Refusal(err);
  return null;
}

/** Refusals worth trying again with the same request, after RetryInfo's delay. */
const RETRIED: readonly Reason[] = ["RATE_LIMITED", "DEPENDENCY_UNAVAILABLE", "DRAINING", "CONTENTION"];

/** What the retrying interceptor tells about each call it tries again. */
export type RetryListener = (refusal: Refusal, method: string, attempt: number) => void;

/**
 * An interceptor that tries a unary call again when it is refused with RATE_LIMITED, DEPENDENCY_UNAVAILABLE,
 * DRAINING or CONTENTION (errors.proto: try again, with the same command id), or UNAVAILABLE without a reason (the
 * server out of reach for a moment): after RetryInfo's delay, else a doubling backoff; at most `attempts` times.
 */
export function retrying(attempts = 20, onRetry?: RetryListener): Interceptor {
  return (next) => async (req) => {
    if (req.stream) return next(req);
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await next(req);
      } catch (err) {
        const refusal = refusalOf(err);
        const again =
          refusal !== null &&
          (refusal.is(...RETRIED) || (refusal.reason === null && refusal.code === Code.Unavailable));
        if (!again || attempt >= attempts || req.signal.aborted) throw err;
        onRetry?.(refusal, req.method.name, attempt);
        const backoff = Math.min(2, 0.05 * 2 ** attempt);
        await sleep(Math.max(0.05, refusal.retryDelaySeconds ?? backoff), req.signal);
      }
    }
  };
}

// --- tokens --------------------------------------------------------------------------------------------------

/** Call options carrying `authorization: Bearer <token>` (none for an empty token), with `more` options. */
export function bearer(token: string, more: CallOptions = {}): CallOptions {
  const headers = new Headers(more.headers);
  if (token) headers.set("authorization", `Bearer ${token}`);
  return { ...more, headers };
}

/** A fresh command id (ActRequest.command_id: unique per game; a retry reuses it). */
export function commandId(): string {
  return randomUUID();
}

/** A token renewed this long before it expires. */
const RENEW_BEFORE_SECONDS = 60;

const nowSeconds = (): number => Date.now() / 1000;

/** The game a `Game` value names, as the oneof cases of commands, events and views name it. */
export type Kind = "zlj" | "tractor";

/** The messages of each game. */
export interface KindTypes {
  zlj: { command: ZljCommand; init: MessageInitShape<typeof ZljCommandSchema>; view: ZljSeatView; event: ZljEvent };
  tractor: {
    command: TractorCommand;
    init: MessageInitShape<typeof TractorCommandSchema>;
    view: TractorSeatView;
    event: TractorEvent;
  };
}

/** The kind of a `Game`. */
export function kindOf(game: Game): Kind {
  if (game === Game.ZLJ) return "zlj";
  if (game === Game.TRACTOR) return "tractor";
  throw new Error(`not a game: ${game}`);
}

/**
 * A seat's ticket to a game: the engine's game token (JoinGame) for one seat of one game, renewed through the
 * player's session (JoinGame again) before it expires.
 */
export class GameTicket {
  constructor(
    readonly player: Player,
    readonly tableId: string,
    private joined: JoinGameResponse,
  ) {}

  get gameId(): string {
    return this.joined.gameId;
  }

  /** The seat (a spectator's ticket has none). */
  get seat(): number | undefined {
    return this.joined.seat;
  }

  get game(): Game {
    return this.joined.game;
  }

  get kind(): Kind {
    return kindOf(this.joined.game);
  }

  /** The game token as it is now (opaque: sent as it is). */
  get token(): string {
    return this.joined.token;
  }

  get expiresAt(): bigint {
    return this.joined.expiresAt;
  }

  /** JoinGame again: a new game token (and the seat as the lobby has it now). */
  async renew(): Promise<void> {
    const joined = await this.player.paiju.lobby.joinGame({ tableId: this.tableId }, await this.player.auth());
    if (joined.gameId !== this.joined.gameId) throw new Error(`JoinGame now answers game ${joined.gameId}, not ${this.gameId}`);
    this.joined = joined;
  }

  /** Call options with the game token, renewed first when it is about to expire. */
  async auth(more: CallOptions = {}): Promise<CallOptions> {
    if (Number(this.joined.expiresAt) - nowSeconds() < RENEW_BEFORE_SECONDS) await this.renew();
    return bearer(this.joined.token, more);
  }
}

/** A signed-in player: the lobby's session token, renewed (RenewSession) before it expires. */
export class Player {
  constructor(
    readonly paiju: Paiju,
    private current: Session,
  ) {}

  get playerId(): string {
    return this.current.playerId;
  }

  get name(): string {
    return this.current.name;
  }

  /** The session token as it is now (opaque: sent as it is). */
  get token(): string {
    return this.current.token;
  }

  get session(): Session {
    return this.current;
  }

  /** A new session token (RenewSession). */
  async renew(): Promise<void> {
    const { session } = await this.paiju.lobby.renewSession({}, bearer(this.current.token));
    if (session === undefined) throw new Error("RenewSession answered no session");
    this.current = session;
  }

  /** Call options with the session token, renewed first when it is about to expire. */
  async auth(more: CallOptions = {}): Promise<CallOptions> {
    if (Number(this.current.expiresAt) - nowSeconds() < RENEW_BEFORE_SECONDS) await this.renew();
    return bearer(this.current.token, more);
  }

  /** The engine's token for this player's seat at the table's match (a spectator's ticket when not seated). */
  async joinGame(tableId: string): Promise<GameTicket> {
    const joined = await this.paiju.lobby.joinGame({ tableId }, await this.auth());
    return new GameTicket(this, tableId, joined);
  }

  /**
   * Be present at a table: keep a WatchTable stream open (a seated player is present while one is; when the last
   * closes during a match, a bot covers the seat after the grace time). Opened again when the server ends it
   * (draining) or the connection is cut.
   */
  present(tableId: string, hooks: PresenceHooks = {}): Presence {
    return new Presence(this, tableId, hooks);
  }
}

/** What a `Presence` tells. */
export interface PresenceHooks {
  /** Each state of the table the stream brings. */
  onTable?: (table: Table) => void;
  /** The stream was opened again (after the server drained or the connection was cut). */
  onResume?: () => void;
  /** Every refusal the stream ended with (before it is retried or given up). */
  onRefusal?: (refusal: Refusal) => void;
  /** Attempts to open the stream again in a row before giving up (20). */
  attempts?: number;
}

/** An open WatchTable stream: the player's presence at a table, until `close()`. */
export class Presence {
  private readonly stop = new AbortController();
  /** Resolves when the presence ends: `close()`, or the stream failed (then `failure` says why). */
  readonly done: Promise<void>;
  failure: Refusal | Error | null = null;

  constructor(
    readonly player: Player,
    readonly tableId: string,
    private readonly hooks: PresenceHooks,
  ) {
    this.done = this.run();
  }

  close(): void {
    this.stop.abort();
  }

  private async run(): Promise<void> {
    const attempts = this.hooks.attempts ?? 20;
    for (let attempt = 0; !this.stop.signal.aborted; attempt += 1) {
      try {
        const options = await this.player.auth({ signal: this.stop.signal });
        for await (const message of this.player.paiju.lobby.watchTable({ tableId: this.tableId }, options)) {
          attempt = 0;
          if (message.table !== undefined) this.hooks.onTable?.(message.table);
        }
      } catch (err) {
        if (this.stop.signal.aborted) return;
        const refusal = refusalOf(err);
        if (refusal === null) {
          this.failure = err instanceof Error ? err : new Error(String(err));
          return;
        }
        this.hooks.onRefusal?.(refusal);
        if (refusal.code !== Code.Unavailable || attempt >= attempts) {
          this.failure = refusal;
          return;
        }
      }
      if (this.stop.signal.aborted) return;
      this.hooks.onResume?.();
      await sleep(Math.min(2, 0.1 * 2 ** attempt), this.stop.signal);
    }
  }
}

// --- the two services ----------------------------------------------------------------------------------------

/** Where the services are, and what every call goes through. */
export interface PaijuOptions {
  /** The lobby's address, host:port (plaintext HTTP/2) or a URL (`https://...`). */
  lobby: string;
  /** The engine's address: the lobby never says where the engine is (JoinGame answers a game id and a token). */
  engine: string;
  /** Interceptors of every call, after the retrying one (so they see each attempt). */
  interceptors?: Interceptor[];
  /** Attempts of a unary call refused with RATE_LIMITED or a passing UNAVAILABLE (20); 1: none again. */
  attempts?: number;
  /** Told of each call tried again. */
  onRetry?: RetryListener;
}

function baseUrl(address: string): string {
  return /^https?:\/\//.test(address) ? address : `http://${address}`;
}

/** The lobby's and the engine's clients (gRPC over HTTP/2), typed from the contract. */
export class Paiju {
  readonly lobby: Client<typeof LobbyService>;
  readonly engine: Client<typeof EngineService>;
  private readonly sessions: Http2SessionManager[] = [];

  constructor(readonly options: PaijuOptions) {
    const interceptors = [retrying(options.attempts ?? 20, options.onRetry), ...(options.interceptors ?? [])];
    this.lobby = createClient(LobbyService, this.transport(options.lobby, interceptors));
    this.engine = createClient(EngineService, this.transport(options.engine, interceptors));
  }

  /** gRPC over one HTTP/2 connection to `address` (kept open while idle, with pings, until `close()`). */
  private transport(address: string, interceptors: Interceptor[]): Transport {
    const url = baseUrl(address);
    const sessionManager = new Http2SessionManager(url, { pingIntervalMs: 30_000 });
    this.sessions.push(sessionManager);
    return createGrpcTransport({ baseUrl: url, interceptors, sessionManager });
  }

  /** Play as a guest: a fresh account with a generated name. */
  async guest(): Promise<Player> {
    return this.signedIn((await this.lobby.guest({})).session);
  }

  /** Sign in with a name and a password. */
  async login(name: string, password: string): Promise<Player> {
    return this.signedIn((await this.lobby.login({ name, password })).session);
  }

  /** Create an account and sign in. */
  async register(name: string, password: string): Promise<Player> {
    return this.signedIn((await this.lobby.register({ name, password })).session);
  }

  private signedIn(session: Session | undefined): Player {
    if (session === undefined) throw new Error("the lobby answered no session");
    return new Player(this, session);
  }

  /** Play a seat from its Watch stream until the game ends (see `playSeat`). */
  play<K extends Kind>(ticket: GameTicket, kind: K, strategy: Strategy<K>): Promise<SeatResult> {
    return playSeat(this.engine, ticket, kind, strategy);
  }

  /** Close the HTTP/2 connections (calls still open fail). */
  close(): void {
    for (const session of this.sessions) session.abort();
  }
}

// --- the watch-and-act loop ----------------------------------------------------------------------------------

/** A turn as the seat's stream brought it, typed for the game it plays. */
export interface SeatTurn<K extends Kind> {
  /** The game's version the turn is at: the loop acts at it (`expected_version`). */
  readonly version: bigint;
  /** The seats that may act now, ascending (several at once: concealed bids, tribute, contributions). */
  readonly seats: readonly number[];
  /** This seat. */
  readonly seat: number;
  /** The seat's legal actions (as GetLegalActions lists them); never empty when `decide` is asked. */
  readonly actions: readonly KindTypes[K]["command"][];
  /** The seat's view at `version`. */
  readonly view: KindTypes[K]["view"] | undefined;
  /** 拖拉机, when the seat follows a trick's lead: what any legal follow owes (§6). */
  readonly follow: TractorFollowRequirement | undefined;
  /** When the turn runs out (the engine then plays the seat's default action); undefined when untimed. */
  readonly deadline: Date | undefined;
  /** The turn as the stream sent it. */
  readonly turn: Turn;
}

/** What a strategy answers to a turn: a command of the game (init or message), or one with its command id. */
export type Decision<K extends Kind> =
  | KindTypes[K]["init"]
  | { readonly command: KindTypes[K]["init"]; readonly commandId: string }
  | undefined;

/** How a seat plays, and what it is told. Only `decide` is needed. */
export interface Strategy<K extends Kind> {
  /**
   * The move for a turn that lists actions for the seat (the newest turn when several came meanwhile; each
   * version asked once): a command (acted at the turn's version with a fresh command id), or undefined to let the
   * turn pass (the stream brings the next).
   */
  decide(turn: SeatTurn<K>): Decision<K> | Promise<Decision<K>>;
  /** Every event of the game, in order (each version once), redacted for the seat. */
  onEvent?(envelope: Envelope): void | Promise<void>;
  /** Every turn the stream brings, the seat's or not, before the loop acts on it. */
  onTurn?(turn: Turn): void;
  /** A move the engine applied, with its answer. */
  onActed?(response: ActResponse, command: KindTypes[K]["init"], turn: SeatTurn<K>): void | Promise<void>;
  /** A move refused because another seat moved first (STALE_VERSION) or the turn moved on (NOT_YOUR_TURN). */
  onStale?(refusal: Refusal, turn: SeatTurn<K>): void;
  /**
   * Any other refusal of a move: return true to go on (the next turn comes on the stream); else (the default) the
   * loop stops and rejects with it.
   */
  onRefused?(refusal: Refusal, turn: SeatTurn<K>): boolean;
  /** Each contribution of random bytes to a committed shuffle the engine accepted (fair dealing). */
  onContributed?(shuffle: number): void;
  /**
   * The log does not show the seat's commitment or reveal (protocol version 2) as the seat sent it: `deal` and
   * `shuffle` name it. Without this callback the loop stops and rejects with an error naming the deal.
   */
  onAltered?(deal: number, shuffle: number, what: string): void;
  /** The stream was opened again, from the last version received. */
  onResume?(after: Refusal | WatchEndReason | null): void;
  /** Stop playing (the loop returns with `end: "stopped"`). */
  signal?: AbortSignal;
  /** Watch from this version on (0: the game's start). */
  fromVersion?: bigint;
  /** Ask the stream for the seat's view in every turn (WatchRequest.views). */
  views?: boolean;
  /** Add the seat's random bytes to committed shuffles (docs/fairness.md); true unless false. */
  contribute?: boolean;
  /** Attempts to open the stream again in a row before giving up (20). */
  attempts?: number;
}

/** How a seat's play ended, and what it saw. */
export interface SeatResult {
  /** GAME_ENDED: the game is over; "stopped": the strategy's signal. */
  readonly end: "game_ended" | "stopped";
  /** The last version the stream delivered. */
  readonly version: bigint;
  readonly events: number;
  readonly turns: number;
  /** Moves the engine applied. */
  readonly acts: number;
  /** Moves refused as stale. */
  readonly stale: number;
  readonly contributions: number;
  /** Events that did not show the seat's commitment or reveal as sent (protocol version 2). */
  readonly altered: number;
  /** Streams opened again. */
  readonly resumed: number;
}

/** Wakes the actor when a newer turn has come. */
class Latest {
  turn: Turn | undefined;
  private waiter: (() => void) | null = null;
  private dirty = false;

  put(turn: Turn | undefined): void {
    if (turn !== undefined) this.turn = turn;
    this.dirty = true;
    const waiter = this.waiter;
    this.waiter = null;
    waiter?.();
  }

  async next(): Promise<Turn | undefined> {
    if (!this.dirty) await new Promise<void>((resolve) => (this.waiter = resolve));
    this.dirty = false;
    return this.turn;
  }
}

/**
 * Play `ticket`'s seat of a game of `kind` from its Watch stream until the game ends (WatchEnd GAME_ENDED) or
 * `strategy.signal` stops it:
 *
 * - every event is handed to `onEvent` in order; each turn goes to `onTurn`;
 * - a turn whose `fair_step` asks for the seat's random bytes (FAIR_DEALING_STEP_KIND_CONTRIBUTE) is answered with a
 *   Contribute of 16 random bytes, once per shuffle (the cutter contributes with its cut: a cut decided with no
 *   contribution gets the seat's 16 bytes);
 * - a turn that lists actions for the seat is put to `decide` (the newest one, when several came while the seat was
 *   busy), and the decision is acted at the turn's version with a fresh command id. STALE_VERSION / NOT_YOUR_TURN
 *   (another seat moved first): the next turn is on its way. Other refusals reject, unless `onRefused` says go on;
 * - the stream is opened again from the last version received when the server drains (WATCH_END_REASON_DRAINING)
 *   or the connection is cut (UNAVAILABLE), and the game token is renewed when it is about to expire.
 *
 * Nothing else is asked of the engine: no GetView, no GetLegalActions.
 */
export async function playSeat<K extends Kind>(
  engine: Client<typeof EngineService>,
  ticket: GameTicket,
  kind: K,
  strategy: Strategy<K>,
): Promise<SeatResult> {
  const seat = ticket.seat;
  if (seat === undefined) throw new Error(`a spectator's ticket cannot play (game ${ticket.gameId})`);
  if (ticket.kind !== kind) throw new Error(`game ${ticket.gameId} is ${ticket.kind}, not ${kind}`);
  const gameId = ticket.gameId;
  const stop = new AbortController();
  const stopped = (): boolean => stop.signal.aborted || strategy.signal?.aborted === true;
  const onAbort = (): void => stop.abort();
  strategy.signal?.addEventListener("abort", onAbort);
  const latest = new Latest();
  const counts = { events: 0, turns: 0, acts: 0, stale: 0, contributions: 0, altered: 0, resumed: 0 };
  let watched = strategy.fromVersion ?? 0n;
  let ended = false;
  let doneAt = -1n; // the newest turn's version the seat decided at
  const contributed = new Set<number>();
  const stepped = new Set<string>(); // protocol version 2: the steps taken, "kind:shuffle"
  const pledges = new Map<number, Pledge>(); // protocol version 2: what the seat committed to, by shuffle
  const deals = new Map<number, number>(); // the deal of each shuffle committed (SeedCommitted)

  /** A command of this game for Act's oneof. */
  const command = (init: KindTypes[K]["init"]) =>
    ({ case: kind, value: init }) as { case: "zlj"; value: KindTypes["zlj"]["init"] };

  const watch = async (): Promise<void> => {
    const attempts = strategy.attempts ?? 20;
    for (let attempt = 0; ; attempt += 1) {
      let after: Refusal | WatchEndReason | null = null;
      try {
        const options = await ticket.auth({ signal: stop.signal });
        // one message per change (WatchRequest.batched): the events of a command come together in `envelopes`
        const stream = engine.watch({ gameId, fromVersion: watched, views: strategy.views ?? false, batched: true }, options);
        for await (const message of stream) {
          if (message.end !== undefined) {
            after = message.end.reason;
            if (message.end.reason === WatchEndReason.GAME_ENDED) ended = true;
            break;
          }
          attempt = 0; // something new: the stream is well
          // a batched message's events, or the one event of a message of an engine that does not batch
          const envelopes = message.envelopes.length > 0 ? message.envelopes : message.envelope !== undefined ? [message.envelope] : [];
          for (const envelope of envelopes) {
            const version = envelope.version;
            if (version !== watched + 1n) throw new Error(`seat ${seat}: the watch went from version ${watched} to ${version}`);
            watched = version;
            counts.events += 1;
            checkPledge(envelope);
            await strategy.onEvent?.(envelope);
          }
          if (message.turn !== undefined) {
            counts.turns += 1;
            strategy.onTurn?.(message.turn);
            latest.put(message.turn);
          }
        }
      } catch (err) {
        if (stopped()) return;
        const refusal = refusalOf(err);
        if (refusal === null) throw err;
        const renewable = refusal.is("TOKEN_EXPIRED");
        if ((refusal.code !== Code.Unavailable && !renewable) || attempt >= attempts) throw refusal;
        if (renewable) await ticket.renew();
        after = refusal;
      }
      if (ended || stopped()) return;
      if (attempt >= attempts) throw new Error(`seat ${seat}: the watch of game ${gameId} ended ${attempt + 1} times in a row with nothing new`);
      counts.resumed += 1;
      strategy.onResume?.(after);
      await sleep(Math.min(2, 0.1 * 2 ** attempt), stop.signal);
    }
  };

  const act = async (turn: SeatTurn<K>, init: KindTypes[K]["init"], id: string): Promise<void> => {
    try {
      const response = await engine.act(
        { gameId, commandId: id, expectedVersion: turn.version, command: command(init) },
        await ticket.auth({ timeoutMs: 30_000 }),
      );
      counts.acts += 1;
      await strategy.onActed?.(response, init, turn);
    } catch (err) {
      const refusal = refusalOf(err);
      if (refusal === null) throw err;
      if (refusal.is("STALE_VERSION", "NOT_YOUR_TURN")) {
        counts.stale += 1;
        strategy.onStale?.(refusal, turn);
        return;
      }
      if (strategy.onRefused?.(refusal, turn) === true) return;
      throw refusal;
    }
  };

  /** Add the seat's random bytes to a committed shuffle (refused when it was dealt meanwhile, or to the cutter). */
  const contribute = async (shuffle: number): Promise<void> => {
    try {
      await engine.act(
        {
          gameId,
          commandId: commandId(),
          command: command({ command: { case: "contribute", value: { seat, contribution: randomBytes(16) } } }),
        },
        await ticket.auth({ timeoutMs: 30_000 }),
      );
      counts.contributions += 1;
      strategy.onContributed?.(shuffle);
    } catch (err) {
      const refusal = refusalOf(err);
      if (refusal === null || refusal.code !== Code.FailedPrecondition) throw refusal ?? err;
    }
  };

  /** Protocol version 2: commit to fresh bytes drawn here (and, the cutter, a cut), or reveal them. */
  const pledge = async (step: { kind: FairDealingStepKind; shuffle: number; maxCut: number }): Promise<void> => {
    const committing = step.kind === FairDealingStepKind.COMMIT;
    let kept = pledges.get(step.shuffle);
    if (committing && kept === undefined) {
      const salt = new Uint8Array(randomBytes(32));
      const contribution = new Uint8Array(randomBytes(16));
      const cut = step.maxCut > 0 ? 1 + randomInt(step.maxCut) : 0;
      kept = { salt, contribution, cut, commitment: contributionCommitment(step.shuffle, seat, salt, cut, contribution), sent: false, revealed: false };
      pledges.set(step.shuffle, kept);
    }
    if (kept === undefined) return;
    const value = committing
      ? { case: "commitContribution", value: { seat, commitment: kept.commitment } }
      : { case: "revealContribution", value: { seat, salt: kept.salt, contribution: kept.contribution, cut: kept.cut } };
    try {
      await engine.act(
        { gameId, commandId: commandId(), command: command({ command: value } as KindTypes[K]["init"]) },
        await ticket.auth({ timeoutMs: 30_000 }),
      );
      if (committing) kept.sent = true;
      else kept.revealed = true;
      counts.contributions += 1;
      strategy.onContributed?.(step.shuffle);
    } catch (err) {
      const refusal = refusalOf(err);
      if (refusal === null || refusal.code !== Code.FailedPrecondition) throw refusal ?? err;
    }
  };

  /** Protocol version 2: the log must show the seat's commitment and reveal as sent, and count a matching reveal. */
  const checkPledge = (envelope: Envelope): void => {
    if (envelope.payload.case !== kind) return;
    const event = (envelope.payload.value as { event: { case?: string; value?: Record<string, unknown> } }).event;
    if (event.case === undefined || event.value === undefined) return;
    const number = event.value.number as number;
    if (event.case === "seedCommitted") deals.set(number, event.value.deal as number);
    const kept = pledges.get(number);
    if (kept === undefined) return;
    const altered = (what: string): void => {
      counts.altered += 1;
      const deal = deals.get(number) ?? 0;
      if (strategy.onAltered === undefined) throw new Error(`game ${gameId}, deal ${deal} (shuffle ${number}): ${what}`);
      strategy.onAltered(deal, number, what);
    };
    const same = (a: Uint8Array, b: Uint8Array): boolean => Buffer.from(a).equals(Buffer.from(b));
    const v = event.value;
    if (event.case === "contributionCommitted" && v.seat === seat && !same(v.commitment as Uint8Array, kept.commitment)) {
      altered(`seat ${seat}'s commitment is recorded changed`);
    } else if (event.case === "commitsClosed" && kept.sent && !(v.committed as number[]).includes(seat)) {
      altered(`seat ${seat}'s commitment, which the engine took, is missing`);
    } else if (event.case === "contributionRevealed" && v.seat === seat) {
      const cut = v.cut === undefined ? 0 : (v.cut as number);
      if (!same(v.salt as Uint8Array, kept.salt) || !same(v.contribution as Uint8Array, kept.contribution) || cut !== kept.cut || v.matches !== true) {
        altered(`seat ${seat}'s reveal is recorded changed or as not matching its commitment`);
      }
    } else if (event.case === "revealsClosed") {
      pledges.delete(number);
      if (kept.revealed && !(v.contributors as number[]).includes(seat)) altered(`seat ${seat}'s contribution, revealed and taken, is not counted`);
    }
  };

  const take = async (turn: Turn): Promise<void> => {
    const step = turn.fairStep;
    if (
      strategy.contribute !== false &&
      step !== undefined &&
      (step.kind === FairDealingStepKind.COMMIT || step.kind === FairDealingStepKind.REVEAL) &&
      !stepped.has(`${step.kind}:${step.shuffle}`)
    ) {
      stepped.add(`${step.kind}:${step.shuffle}`);
      await pledge(step);
    }
    if (
      strategy.contribute !== false &&
      step !== undefined &&
      step.kind === FairDealingStepKind.CONTRIBUTE &&
      !contributed.has(step.shuffle)
    ) {
      contributed.add(step.shuffle);
      await contribute(step.shuffle);
    }
    if (turn.version <= doneAt || !turn.seats.includes(seat) || turn.actions.length === 0 || stopped()) return;
    doneAt = turn.version;
    const actions = turn.actions.map((action) => {
      if (action.command.case !== kind) throw new Error(`a turn of a ${kind} game listed a ${action.command.case} command`);
      return action.command.value as KindTypes[K]["command"];
    });
    const view = turn.view.case === kind ? (turn.view.value as KindTypes[K]["view"]) : undefined;
    const deadline = turn.deadline === undefined ? undefined : new Date(Number(turn.deadline.seconds) * 1000 + turn.deadline.nanos / 1e6);
    const seatTurn: SeatTurn<K> = { version: turn.version, seats: turn.seats, seat, actions, view, follow: turn.tractorFollow, deadline, turn };
    const decision = await strategy.decide(seatTurn);
    if (decision === undefined || stopped()) return;
    const [init, id] =
      typeof decision === "object" && decision !== null && "commandId" in decision && "command" in decision && typeof decision.commandId === "string"
        ? [decision.command as KindTypes[K]["init"], decision.commandId]
        : [decision as KindTypes[K]["init"], commandId()];
    await act(seatTurn, withContribution(init), id);
  };

  /** A cut decided with no contribution carries the seat's 16 random bytes (the cutter's part of a fair deal). */
  const withContribution = (init: KindTypes[K]["init"]): KindTypes[K]["init"] => {
    const inner = (init as { command?: { case?: string; value?: { contribution?: Uint8Array } } }).command;
    if (strategy.contribute === false || inner?.case !== "cut" || inner.value === undefined) return init;
    if (inner.value.contribution !== undefined && inner.value.contribution.length > 0) return init;
    return { ...init, command: { ...inner, value: { ...inner.value, contribution: randomBytes(16) } } } as KindTypes[K]["init"];
  };

  let watching = true;
  const actor = async (): Promise<void> => {
    while (watching && !stopped()) {
      const turn = await latest.next();
      if (!watching || stopped()) return;
      if (turn !== undefined) await take(turn);
    }
  };

  const following = watch().finally(() => {
    watching = false; // the game ended, the seat stopped, or the stream failed: the actor stops too
    latest.put(undefined);
  });
  const acting = actor();
  try {
    await Promise.all([
      following,
      acting.catch((err: unknown) => {
        stop.abort(); // end the stream: the seat cannot go on
        throw err;
      }),
    ]);
  } finally {
    strategy.signal?.removeEventListener("abort", onAbort);
    stop.abort();
  }
  return { end: ended ? "game_ended" : "stopped", version: watched, ...counts };
}

/** What a seat committed to for one shuffle (protocol version 2), kept until it reveals. */
interface Pledge {
  salt: Uint8Array;
  contribution: Uint8Array;
  cut: number;
  commitment: Uint8Array;
  sent: boolean;
  revealed: boolean;
}

/**
 * A seat's commitment to its contribution (docs/fairness.md, "Version 2: commit, then reveal"): SHA-256 of
 * "paiju-contribution-commitment-v2", the shuffle number (4 bytes), the seat (1 byte), the salt (32 bytes), the cut
 * (4 bytes; 0 unless the seat cuts) and the contribution.
 */
export function contributionCommitment(shuffle: number, seat: number, salt: Uint8Array, cut: number, contribution: Uint8Array): Uint8Array {
  const fixed = Buffer.alloc(9);
  fixed.writeUInt32BE(shuffle, 0);
  fixed.writeUInt8(seat, 4);
  fixed.writeUInt32BE(cut, 5);
  const hash = createHash("sha256").update("paiju-contribution-commitment-v2").update(fixed.subarray(0, 5));
  return new Uint8Array(hash.update(salt).update(fixed.subarray(5)).update(contribution).digest());
}

/** Sleep `seconds` (sooner when `signal` aborts). */
export function sleep(seconds: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) {
      resolve();
      return;
    }
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, seconds * 1000);
    signal?.addEventListener("abort", done);
  });
}
