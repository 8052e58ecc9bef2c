// Tests of the typed layer (src/paiju.ts) that need no Paiju server: the reasons' status codes read from the
// contract's descriptor, a refusal read from a real `grpc-status-details-bin` trailer, the retrying interceptor,
// and the watch-and-act loop against an engine served in memory by Connect's router (the real client, the real
// serialisation, a scripted EngineService). tests/node runs them (`node --test`) and plays real games against the
// real services.

import assert from "node:assert/strict";
import { test } from "node:test";

import { create, toBinary, type DescMessage, type Message as ProtoMessage, type MessageInitShape } from "@bufbuild/protobuf";
import { anyPack, durationFromMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, createRouterTransport, type HandlerContext } from "@connectrpc/connect";
import { findTrailerError } from "@connectrpc/connect/protocol-grpc";

import {
  BadRequestSchema,
  ErrorInfoSchema,
  QuotaFailureSchema,
  RetryInfoSchema,
} from "../src/gen/google/rpc/error_details_pb.js";
import { StatusSchema } from "../src/gen/google/rpc/status_pb.js";
import {
  ActResponseSchema,
  EngineService,
  ErrorReason,
  FairDealingStepKind,
  Game,
  GameTicket,
  JoinGameResponseSchema,
  Paiju,
  Player,
  REASON_CODES,
  RuleViolationSchema,
  SessionSchema,
  WatchEndReason,
  bearer,
  isReason,
  playSeat,
  refusalOf,
  retrying,
  type ActRequest,
  type Reason,
  type WatchRequest,
  WatchResponseSchema,
  type ZljCommand,
} from "../src/index.js";

test("every reason of the contract has the status code its descriptor gives it", () => {
  const names = Object.keys(ErrorReason).filter((k) => Number.isNaN(Number(k)) && k !== "ERROR_REASON_UNSPECIFIED");
  assert.deepEqual(Object.keys(REASON_CODES).sort(), names.sort());
  const some: [Reason, Code][] = [
    ["INVALID_REQUEST", Code.InvalidArgument],
    ["TOKEN_MISSING", Code.Unauthenticated],
    ["SESSION_REQUIRED", Code.PermissionDenied],
    ["GAME_NOT_FOUND", Code.NotFound],
    ["NOT_YOUR_TURN", Code.FailedPrecondition],
    ["STALE_VERSION", Code.Aborted],
    ["COMMAND_ID_REUSED", Code.AlreadyExists],
    ["VERSION_NOT_REACHED", Code.DeadlineExceeded],
    ["RATE_LIMITED", Code.ResourceExhausted],
    ["DRAINING", Code.Unavailable],
    ["INTERNAL_ERROR", Code.Internal],
  ];
  for (const [reason, code] of some) assert.equal(REASON_CODES[reason], code, reason);
  assert.ok(isReason("NOT_YOUR_SEAT"));
  assert.ok(!isReason("NOT_A_REASON"));
});

/** The trailers of a refused gRPC call, as a server writes them: status, message and the serialised Status. */
function trailers(code: Code, message: string, details: [DescMessage, ProtoMessage][]): Headers {
  const status = create(StatusSchema, { code, message, details: details.map(([schema, value]) => anyPack(schema, value)) });
  const headers = new Headers();
  headers.set("grpc-status", String(code));
  headers.set("grpc-message", encodeURIComponent(message));
  headers.set("grpc-status-details-bin", Buffer.from(toBinary(StatusSchema, status)).toString("base64").replace(/=+$/, ""));
  return headers;
}

test("a refusal is read from the grpc-status-details-bin trailer: reason, metadata and every detail", () => {
  const error = findTrailerError(
    trailers(Code.InvalidArgument, "invalid request: game_id", [
      [ErrorInfoSchema, create(ErrorInfoSchema, { reason: "INVALID_REQUEST", domain: "paiju.v1", metadata: { field: "game_id" } })],
      [BadRequestSchema, create(BadRequestSchema, { fieldViolations: [{ field: "game_id", description: "must be an id" }] })],
    ]),
  );
  const refusal = refusalOf(error);
  assert.ok(refusal !== null);
  assert.equal(refusal.code, Code.InvalidArgument);
  assert.equal(refusal.codeName, "INVALID_ARGUMENT");
  assert.equal(refusal.reason, "INVALID_REQUEST");
  assert.equal(refusal.domain, "paiju.v1");
  assert.deepEqual(refusal.metadata, { field: "game_id" });
  assert.equal(refusal.badRequest?.fieldViolations[0]?.field, "game_id");
  assert.deepEqual(refusal.details.map((d) => d.type), ["google.rpc.ErrorInfo", "google.rpc.BadRequest"]);
  assert.ok(refusal.is("INVALID_REQUEST", "MALFORMED_MESSAGE"));
  assert.ok(!refusal.is("STALE_VERSION"));
  assert.equal(refusal.message, "INVALID_ARGUMENT INVALID_REQUEST: invalid request: game_id");

  const rule = refusalOf(
    findTrailerError(
      trailers(Code.FailedPrecondition, "the leader must play", [
        [ErrorInfoSchema, create(ErrorInfoSchema, { reason: "RULE_VIOLATION", domain: "paiju.v1" })],
        [RuleViolationSchema, create(RuleViolationSchema, { rule: "§6", reason: "a lead cannot pass" })],
      ]),
    ),
  );
  assert.equal(rule?.ruleViolation?.rule, "§6");

  const limited = refusalOf(
    findTrailerError(
      trailers(Code.ResourceExhausted, "slow down", [
        [ErrorInfoSchema, create(ErrorInfoSchema, { reason: "RATE_LIMITED", domain: "paiju.v1" })],
        [RetryInfoSchema, create(RetryInfoSchema, { retryDelay: durationFromMs(1500) })],
        [QuotaFailureSchema, create(QuotaFailureSchema, { violations: [{ subject: "account", description: "30 Act/s" }] })],
      ]),
    ),
  );
  assert.equal(limited?.retryDelaySeconds, 1.5);
  assert.equal(limited?.quotaFailure?.violations[0]?.subject, "account");
});

test("a reason this client does not know is kept as sent, and gRPC's own refusals have none", () => {
  const newer = refusalOf(
    findTrailerError(
      trailers(Code.FailedPrecondition, "new", [
        [ErrorInfoSchema, create(ErrorInfoSchema, { reason: "SOMETHING_NEWER", domain: "paiju.v1" })],
      ]),
    ),
  );
  assert.equal(newer?.reason, null);
  assert.equal(newer?.rawReason, "SOMETHING_NEWER");
  assert.equal(newer?.code, Code.FailedPrecondition);

  const deadline = refusalOf(new ConnectError("deadline", Code.DeadlineExceeded));
  assert.equal(deadline?.reason, null);
  assert.equal(deadline?.rawReason, null);
  assert.equal(deadline?.codeName, "DEADLINE_EXCEEDED");
  assert.equal(refusalOf(new Error("not a call")), null);
  assert.equal(refusalOf(deadline), deadline);
});

test("bearer puts the token in the authorization header, and nothing for no token", () => {
  assert.equal(new Headers(bearer("abc").headers).get("authorization"), "Bearer abc");
  assert.equal(new Headers(bearer("").headers).get("authorization"), null);
  assert.equal(bearer("abc", { timeoutMs: 5 }).timeoutMs, 5);
});

/** An ErrorInfo refusal as a Paiju service raises it. */
function paijuError(
  reason: Reason,
  code: Code,
  metadata: Record<string, string> = {},
  more: { desc: DescMessage; value: Record<string, unknown> }[] = [],
): ConnectError {
  return new ConnectError(reason, code, undefined, [{ desc: ErrorInfoSchema, value: { reason, domain: "paiju.v1", metadata } }, ...more]);
}

/** What a Watch handler yields. */
type Message = MessageInitShape<typeof WatchResponseSchema>;

test("the retrying interceptor waits RetryInfo's delay and sends the same request again", async () => {
  const ids: string[] = [];
  const transport = createRouterTransport(
    ({ service }) =>
      service(EngineService, {
        act(request: ActRequest) {
          ids.push(request.commandId);
          if (ids.length === 1) {
            throw paijuError("RATE_LIMITED", Code.ResourceExhausted, {}, [
              { desc: RetryInfoSchema, value: { retryDelay: durationFromMs(20) } },
            ]);
          }
          return create(ActResponseSchema, { version: 7n });
        },
      }),
    { transport: { interceptors: [retrying(3, (refusal, method) => retried.push(`${method} ${refusal.reason}`))] } },
  );
  const retried: string[] = [];
  const engine = createClient(EngineService, transport);
  const answer = await engine.act({ gameId: "g", commandId: "c-1", command: { case: "zlj", value: { command: { case: "pass", value: { seat: 1 } } } } });
  assert.equal(answer.version, 7n);
  assert.deepEqual(ids, ["c-1", "c-1"]);
  assert.deepEqual(retried, ["Act RATE_LIMITED"]);
});

/** A seat's ticket whose tokens do not expire during the test (no lobby is asked). */
function ticket(seat: number, game = Game.ZLJ): GameTicket {
  const far = BigInt(Math.floor(Date.now() / 1000) + 3600);
  const paiju = new Paiju({ lobby: "127.0.0.1:9", engine: "127.0.0.1:9" });
  const player = new Player(paiju, create(SessionSchema, { playerId: "p", token: "session", expiresAt: far }));
  return new GameTicket(player, "t", create(JoinGameResponseSchema, { gameId: "g", seat, token: "game-token", game, expiresAt: far }));
}

const pass = (seat: number) => ({ command: { case: "zlj" as const, value: { command: { case: "pass" as const, value: { seat } } } } });
const play = (seat: number) => ({ command: { case: "zlj" as const, value: { command: { case: "play" as const, value: { seat, cards: [5] } } } } });
const event = (version: bigint) => ({ gameId: "g", version, payload: { case: "zlj" as const, value: { event: { case: "passed" as const, value: { seat: 2 } } } } });

test("the watch-and-act loop contributes, acts at each turn's version, takes stale as stale and resumes after a drain", async () => {
  const watches: WatchRequest[] = [];
  const acts: ActRequest[] = [];
  const tokens = new Set<string | null>();
  const transport = createRouterTransport(({ service }) =>
    service(EngineService, {
      async *watch(request: WatchRequest, context: HandlerContext): AsyncIterable<Message> {
        tokens.add(context.requestHeader.get("authorization"));
        watches.push(request);
        if (watches.length === 1) {
          yield { envelope: event(1n) };
          // the first deal waits for the seats' random bytes: seat 0 may contribute, and may do nothing else
          yield { envelope: event(2n), turn: { version: 2n, seats: [0, 1], fairStep: { kind: FairDealingStepKind.CONTRIBUTE, shuffle: 1 } } };
          yield { envelope: event(3n), turn: { version: 3n, seats: [0], actions: [pass(0), play(0)], view: { case: "zlj", value: { seat: 0 } } } };
          // wait for the seat's move (refused as stale below), then the server drains
          while (acts.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
          yield { end: { reason: WatchEndReason.DRAINING, version: 3n } };
          return;
        }
        // resumed from version 3: the turn alone at once (decided already: not asked again), then the next change;
        // this engine answers the batched form: the events of a change together, in `envelopes`
        yield { turn: { version: 3n, seats: [0], actions: [pass(0), play(0)] } };
        yield { envelopes: [event(4n)], turn: { version: 4n, seats: [0], actions: [pass(0), play(0)] } };
        while (acts.length < 3) await new Promise((resolve) => setTimeout(resolve, 5));
        yield { envelopes: [event(5n), event(6n)], turn: { version: 6n, seats: [] } };
        yield { end: { reason: WatchEndReason.GAME_ENDED, version: 6n } };
      },
      act(request: ActRequest, context: HandlerContext) {
        tokens.add(context.requestHeader.get("authorization"));
        acts.push(request);
        if (request.expectedVersion === 3n) throw paijuError("STALE_VERSION", Code.Aborted, { version: "4" });
        return create(ActResponseSchema, { version: (request.expectedVersion ?? 2n) + 1n });
      },
    }),
  );
  const decided: bigint[] = [];
  const events: bigint[] = [];
  const stale: string[] = [];
  const result = await playSeat(createClient(EngineService, transport), ticket(0), "zlj", {
    decide: (turn) => {
      decided.push(turn.version);
      assert.equal(turn.seat, 0);
      return turn.actions.find((action: ZljCommand) => action.command.case === "play");
    },
    onEvent: (envelope) => void events.push(envelope.version),
    onStale: (refusal) => void stale.push(`${refusal.reason} ${refusal.metadata.version}`),
  });
  assert.equal(result.end, "game_ended");
  assert.equal(result.version, 6n);
  assert.deepEqual(events, [1n, 2n, 3n, 4n, 5n, 6n]);
  assert.deepEqual(decided, [3n, 4n]);
  assert.deepEqual(watches.map((w) => w.fromVersion), [0n, 3n]);
  assert.deepEqual(watches.map((w) => w.batched), [true, true]);
  assert.deepEqual(tokens, new Set(["Bearer game-token"]));
  // the contribution: 16 bytes of the seat's own, no expected version; then the moves at the turns' versions
  const [contribution, ...moves] = acts;
  assert.equal(contribution?.command.case, "zlj");
  const contributed = contribution?.command.case === "zlj" ? contribution.command.value.command : undefined;
  assert.equal(contributed?.case, "contribute");
  assert.equal(contributed?.case === "contribute" ? contributed.value.contribution.length : 0, 16);
  assert.equal(contribution?.expectedVersion, undefined);
  assert.deepEqual(moves.map((m) => m.expectedVersion), [3n, 4n]);
  assert.notEqual(moves[0]?.commandId, moves[1]?.commandId);
  assert.deepEqual(stale, ["STALE_VERSION 4"]);
  assert.deepEqual(
    { acts: result.acts, stale: result.stale, contributions: result.contributions, resumed: result.resumed },
    { acts: 1, stale: 1, contributions: 1, resumed: 1 },
  );
});

/** Protocol version 2 scripted: the seat commits and reveals; the log shows its commitment changed (when `alter`)
 * and its matching reveal not counted. */
function pledgingEngine(alter: boolean) {
  const acts: ActRequest[] = [];
  const fair = (version: bigint, value: Record<string, unknown>) =>
    ({ gameId: "g", version, payload: { case: "zlj", value: { event: value } } }) as Message["envelope"];
  const transport = createRouterTransport(({ service }) =>
    service(EngineService, {
      async *watch(): AsyncIterable<Message> {
        const until = async (n: number) => {
          while (acts.length < n) await new Promise((resolve) => setTimeout(resolve, 5));
        };
        yield {
          envelope: fair(1n, { case: "seedCommitted", value: { number: 2, deal: 2, commitment: new Uint8Array(32) } }),
          turn: { version: 1n, seats: [0], fairStep: { kind: FairDealingStepKind.COMMIT, shuffle: 2, maxCut: 107 } },
        };
        await until(1);
        const sent = acts[0]?.command.case === "zlj" ? acts[0].command.value.command : undefined;
        const commitment = Uint8Array.from(sent?.case === "commitContribution" ? sent.value.commitment : new Uint8Array(32));
        if (alter) commitment[0] = (commitment[0] ?? 0) ^ 1;
        yield { envelope: fair(2n, { case: "contributionCommitted", value: { number: 2, seat: 0, commitment } }) };
        yield {
          envelope: fair(3n, { case: "commitsClosed", value: { number: 2, committed: [0] } }),
          turn: { version: 3n, seats: [0], fairStep: { kind: FairDealingStepKind.REVEAL, shuffle: 2 } },
        };
        await until(2);
        const reveal = acts[1]?.command.case === "zlj" ? acts[1].command.value.command : undefined;
        const revealed = reveal?.case === "revealContribution" ? reveal.value : undefined;
        yield {
          envelope: fair(4n, {
            case: "contributionRevealed",
            value: { number: 2, seat: 0, salt: revealed?.salt, contribution: revealed?.contribution, cut: revealed?.cut, matches: true },
          }),
        };
        yield { envelope: fair(5n, { case: "revealsClosed", value: { number: 2, contributors: [], withheld: [], mismatched: [] } }) };
        yield { end: { reason: WatchEndReason.GAME_ENDED, version: 5n } };
      },
      act(request: ActRequest) {
        acts.push(request);
        return create(ActResponseSchema, { version: BigInt(acts.length) + 1n });
      },
    }),
  );
  return { acts, engine: createClient(EngineService, transport) };
}

test("the loop checks the seat's own commitment and reveal in the log: each change is told, or rejects naming the deal", async () => {
  const told: string[] = [];
  const { acts, engine } = pledgingEngine(true);
  const result = await playSeat(engine, ticket(0), "zlj", {
    decide: () => undefined,
    onAltered: (deal, shuffle, what) => void told.push(`deal ${deal} shuffle ${shuffle}: ${what}`),
  });
  assert.deepEqual(acts.map((a) => (a.command.case === "zlj" ? a.command.value.command.case : "")), ["commitContribution", "revealContribution"]);
  const revealed = acts[1]?.command.case === "zlj" ? acts[1].command.value.command : undefined;
  assert.ok(revealed?.case === "revealContribution" && revealed.value.cut >= 1 && revealed.value.cut <= 107, "the cutter's cut");
  assert.deepEqual(told, [
    "deal 2 shuffle 2: seat 0's commitment is recorded changed",
    "deal 2 shuffle 2: seat 0's contribution, revealed and taken, is not counted",
  ]);
  assert.equal(result.altered, 2);
  await assert.rejects(
    playSeat(pledgingEngine(true).engine, ticket(0), "zlj", { decide: () => undefined }),
    /game g, deal 2 \(shuffle 2\): seat 0's commitment is recorded changed/,
  );
});

test("a move refused by the rules stops the loop with the refusal; a ticket of the other game is refused", async () => {
  const ended: number[] = [];
  const transport = createRouterTransport(({ service }) =>
    service(EngineService, {
      async *watch(_: WatchRequest, context: HandlerContext): AsyncIterable<Message> {
        yield { envelope: event(1n), turn: { version: 1n, seats: [3], actions: [pass(3)] } };
        // the stream stays open until the client ends it
        await new Promise((resolve) => context.signal.addEventListener("abort", resolve));
        ended.push(1);
      },
      act() {
        throw new ConnectError("a lead cannot pass", Code.FailedPrecondition, undefined, [
          { desc: ErrorInfoSchema, value: { reason: "RULE_VIOLATION", domain: "paiju.v1" } },
          { desc: RuleViolationSchema, value: { rule: "§6", reason: "a lead cannot pass" } },
        ]);
      },
    }),
  );
  const engine = createClient(EngineService, transport);
  await assert.rejects(
    playSeat(engine, ticket(3), "zlj", { decide: (turn) => turn.actions[0] }),
    (err: unknown) => {
      const refusal = refusalOf(err);
      assert.equal(refusal?.reason, "RULE_VIOLATION");
      assert.equal(refusal?.ruleViolation?.rule, "§6");
      return true;
    },
  );
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.deepEqual(ended, [1], "the open stream was ended with the loop");
  await assert.rejects(playSeat(engine, ticket(3), "tractor", { decide: () => undefined }), /is zlj, not tractor/);
});
