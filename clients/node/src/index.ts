// paiju-client: the contract's messages, enums and service descriptors (generated from protos/ into src/gen by
// `make node`), and the typed layer over them (paiju.ts): tokens, refusals, presence and the watch-and-act loop.

export * from "./paiju.js";

export * from "./gen/paiju/v1/cards_pb.js";
export * from "./gen/paiju/v1/engine_pb.js";
export * from "./gen/paiju/v1/errors_pb.js";
export * from "./gen/paiju/v1/lobby_pb.js";
export * from "./gen/paiju/v1/tractor_pb.js";
export * from "./gen/paiju/v1/zlj_pb.js";

export { Code, ConnectError } from "@connectrpc/connect";
