// A small Node.js library for Paiju's gRPC contract, built from protos/ alone.
//
// - `loadContract()` parses protos/paiju/v1/*.proto and the imports `make protos` puts beside them
//   (buf/validate/validate.proto, google/rpc/*.proto) with protobufjs (the parser under @grpc/proto-loader;
//   google/protobuf/*.proto come bundled with it), and hands them to proto-loader as JSON (`fromJSON`), which makes
//   the gRPC service definitions. The sources are parsed as they are, protovalidate annotations included: this
//   client is also the proof that the contract parses outside protoc.
// - `lobbyClient(address)`, `engineClient(address)`: the two services' clients; `unary(client, method, request,
//   {token})` calls one RPC with `authorization: Bearer <token>` and a deadline; `watch(...)` follows a server
//   stream.
// - `refusalOf(err)`: a refusal as the error model says (errors.proto): the status code, and from the
//   `grpc-status-details-bin` trailer (a google.rpc.Status) the ErrorInfo's reason, domain and metadata, and every
//   detail unpacked from its google.protobuf.Any (BadRequest, RuleViolation, RetryInfo, QuotaFailure, ...).
//
// Messages are plain objects with the protos' own field names (keepCase), enums as their value names
// ("GAME_ZLJ", "CARD_10S"), 64-bit integers as decimal strings, every field present (defaults) and, for each
// oneof, a property naming the member that is set (`envelope.payload === "zlj"`).

import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';

import grpc from '@grpc/grpc-js';
// Imported before protobufjs parses anything: it registers descriptor.proto among protobufjs's bundled files.
import protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs';

export { grpc };

const HERE = path.dirname(fileURLToPath(import.meta.url));

/** The contract's folder: protos/ at the repository's root (PAIJU_PROTOS to use another). */
export const PROTOS_DIR = process.env.PAIJU_PROTOS || path.resolve(HERE, '..', '..', 'protos');

/** The files a client of the lobby and the engine needs (their imports are read too). */
export const CONTRACT_FILES = [
  'paiju/v1/lobby.proto',
  'paiju/v1/engine.proto',
  'paiju/v1/errors.proto',
  'google/rpc/status.proto',
  'google/rpc/error_details.proto',
];

/** `google.rpc.ErrorInfo.domain` of every Paiju refusal. */
export const DOMAIN = 'paiju.v1';

/** The trailer that holds the serialised google.rpc.Status of a refusal. */
export const STATUS_DETAILS = 'grpc-status-details-bin';

/** How messages are turned into plain objects, for the gRPC calls and for the refusals' details alike. */
export const OBJECT_OPTIONS = Object.freeze({
  keepCase: true,
  longs: String,
  enums: String,
  bytes: Buffer,
  defaults: true,
  arrays: true,
  oneofs: true,
});

/** gRPC status code names by number (0 OK .. 16 UNAUTHENTICATED). */
export const CODE_NAMES = Object.fromEntries(Object.entries(grpc.status).map(([name, code]) => [code, name]));

// --- loading the contract ----------------------------------------------------------------------------------

/** A protobufjs Root with `files` and everything they import, from `dir` (google/protobuf/* bundled). */
export function loadRoot(dir = PROTOS_DIR, files = CONTRACT_FILES) {
  const root = new protobuf.Root();
  const seen = new Set();
  const visit = (name) => {
    if (seen.has(name)) return;
    seen.add(name);
    if (name in protobuf.common) {
      root.addJSON(protobuf.common[name].nested);
      return;
    }
    const file = path.join(dir, name);
    let source;
    try {
      source = fs.readFileSync(file, 'utf8');
    } catch (e) {
      throw new Error(`cannot read ${file} (run \`make protos\` for the third-party imports): ${e.message}`);
    }
    protobuf.parse.filename = file;
    const parsed = protobuf.parse(source, root, { keepCase: true, alternateCommentMode: true });
    root.files.push(file);
    for (const imported of [...(parsed.imports || []), ...(parsed.weakImports || [])]) visit(imported);
  };
  for (const file of files) visit(file);
  root.resolveAll();
  return root;
}

let contract = null;

/** The loaded contract (once per process): `{root, v1}` — the protobufjs root and the gRPC package paiju.v1. */
export function loadContract() {
  if (contract === null) {
    const root = loadRoot();
    const definition = protoLoader.fromJSON(root.toJSON(), OBJECT_OPTIONS);
    const loaded = grpc.loadPackageDefinition(definition);
    contract = { root, v1: loaded.paiju.v1 };
  }
  return contract;
}

/** A message type of the contract by its full name (`google.rpc.Status`, `paiju.v1.RuleViolation`). */
export function messageType(name) {
  return loadContract().root.lookupType(name);
}

/** A plain object of `bytes` decoded as the message type `name`. */
export function decode(name, bytes) {
  const type = messageType(name);
  return type.toObject(type.decode(bytes), OBJECT_OPTIONS);
}

// --- clients and calls -------------------------------------------------------------------------------------

/** A LobbyService client for `address` (host:port, plaintext). */
export function lobbyClient(address) {
  return new (loadContract().v1.LobbyService)(address, grpc.credentials.createInsecure());
}

/** An EngineService client for `address` (host:port, plaintext). */
export function engineClient(address) {
  return new (loadContract().v1.EngineService)(address, grpc.credentials.createInsecure());
}

/** Call metadata carrying `authorization: Bearer <token>` (none when `token` is empty). */
export function bearer(token) {
  const metadata = new grpc.Metadata();
  if (token) metadata.set('authorization', `Bearer ${token}`);
  return metadata;
}

/** A fresh command id (ActRequest.command_id: 1..128 printable ASCII characters, unique per game). */
export function commandId() {
  return randomUUID();
}

/**
 * Call the unary RPC `method` of `client`: resolves with the response object, rejects with the gRPC error
 * (read it with `refusalOf`). `token`: the bearer token; `seconds`: the deadline.
 */
export function unary(client, method, request, { token = '', seconds = 30 } = {}) {
  return new Promise((resolve, reject) => {
    const deadline = new Date(Date.now() + seconds * 1000);
    client[method](request, bearer(token), { deadline }, (err, response) => (err ? reject(err) : resolve(response)));
  });
}

/**
 * Open the server stream `method` of `client`; `onMessage(message)` for each message. Returns `{call, done}`:
 * `done` resolves when the stream ends (the server closed it, or `call.cancel()`), rejects with its error.
 */
export function stream(client, method, request, onMessage, { token = '' } = {}) {
  const call = client[method](request, bearer(token));
  const done = new Promise((resolve, reject) => {
    let cancelled = false;
    const cancel = call.cancel.bind(call);
    call.cancel = () => {
      cancelled = true;
      cancel();
    };
    call.on('data', (message) => {
      try {
        onMessage(message);
      } catch (e) {
        call.cancel();
        reject(e);
      }
    });
    call.on('error', (err) => (cancelled && err.code === grpc.status.CANCELLED ? resolve() : reject(err)));
    call.on('end', () => resolve());
  });
  return { call, done };
}

// --- refusals ----------------------------------------------------------------------------------------------

/** The type name of a google.protobuf.Any's `type_url` (`type.googleapis.com/google.rpc.ErrorInfo`). */
function typeName(typeUrl) {
  return typeUrl.slice(typeUrl.lastIndexOf('/') + 1);
}

/** Unpack a google.protobuf.Any (`{type_url, value}`) with the contract's types: `{type, value}`. */
export function unpack(any) {
  const type = typeName(any.type_url);
  try {
    return { type, value: decode(type, any.value) };
  } catch (e) {
    return { type, value: null, error: e.message }; // a type the contract does not know: keep its name
  }
}

/**
 * What a failed call says, by the error model (errors.proto):
 * `{code, codeName, message, reason, domain, metadata, details, badRequest, ruleViolation, retryInfo,
 * quotaFailure}`. `reason` is the ErrorInfo's (null when the status carries none: gRPC's own refusals, e.g.
 * DEADLINE_EXCEEDED, or a server that is not Paiju); `details` every detail unpacked, in order.
 */
export function refusalOf(err) {
  const refusal = {
    code: err.code,
    codeName: CODE_NAMES[err.code] || String(err.code),
    message: err.details ?? err.message,
    reason: null,
    domain: null,
    metadata: {},
    details: [],
    badRequest: null,
    ruleViolation: null,
    retryInfo: null,
    quotaFailure: null,
  };
  const trailer = err.metadata ? err.metadata.get(STATUS_DETAILS) : [];
  if (trailer.length === 0) return refusal;
  const status = decode('google.rpc.Status', trailer[0]);
  if (status.code !== err.code) {
    throw new Error(`the status details say code ${status.code} but the call ended with ${err.code}`);
  }
  refusal.message = status.message;
  for (const any of status.details) {
    const detail = unpack(any);
    refusal.details.push(detail);
    switch (detail.type) {
      case 'google.rpc.ErrorInfo':
        refusal.reason = detail.value.reason;
        refusal.domain = detail.value.domain;
        refusal.metadata = detail.value.metadata;
        break;
      case 'google.rpc.BadRequest':
        refusal.badRequest = detail.value;
        break;
      case 'paiju.v1.RuleViolation':
        refusal.ruleViolation = detail.value;
        break;
      case 'google.rpc.RetryInfo':
        refusal.retryInfo = detail.value;
        break;
      case 'google.rpc.QuotaFailure':
        refusal.quotaFailure = detail.value;
        break;
      default:
        break;
    }
  }
  return refusal;
}

/** Seconds a RetryInfo asks to wait (`retry_delay`, a google.protobuf.Duration), or `fallback`. */
export function retryDelaySeconds(refusal, fallback = 1) {
  const delay = refusal.retryInfo?.retry_delay;
  if (!delay) return fallback;
  return Number(delay.seconds || 0) + Number(delay.nanos || 0) / 1e9;
}

/** The reasons with their gRPC status codes, as errors.proto documents them (for checking answers). */
export const REASON_CODES = Object.freeze({
  INVALID_REQUEST: 'INVALID_ARGUMENT',
  MALFORMED_MESSAGE: 'INVALID_ARGUMENT',
  WRONG_GAME_KIND: 'INVALID_ARGUMENT',
  MALFORMED_COMMAND: 'INVALID_ARGUMENT',
  INVALID_OPTIONS: 'INVALID_ARGUMENT',
  TOKEN_MISSING: 'UNAUTHENTICATED',
  TOKEN_INVALID: 'UNAUTHENTICATED',
  TOKEN_EXPIRED: 'UNAUTHENTICATED',
  TOKEN_REVOKED: 'UNAUTHENTICATED',
  WRONG_CREDENTIALS: 'UNAUTHENTICATED',
  SESSION_REQUIRED: 'PERMISSION_DENIED',
  ROLE_REQUIRED: 'PERMISSION_DENIED',
  GAME_NOT_FOUND: 'NOT_FOUND',
  GAME_EXISTS: 'ALREADY_EXISTS',
  NOT_YOUR_TURN: 'FAILED_PRECONDITION',
  NOT_YOUR_SEAT: 'PERMISSION_DENIED',
  SEAT_LOST: 'PERMISSION_DENIED',
  RULE_VIOLATION: 'FAILED_PRECONDITION',
  STALE_VERSION: 'ABORTED',
  COMMAND_ID_REUSED: 'ALREADY_EXISTS',
  VERSION_NOT_REACHED: 'DEADLINE_EXCEEDED',
  RATE_LIMITED: 'RESOURCE_EXHAUSTED',
  DEPENDENCY_UNAVAILABLE: 'UNAVAILABLE',
  DRAINING: 'UNAVAILABLE',
  INTERNAL_ERROR: 'INTERNAL',
});
