#!/usr/bin/env node
// A second verifier of Paiju's deals, written from docs/fairness.md alone (not from the servers' code): it reads the
// `events` file of `paiju export` (JSON Lines: one row per event, its `envelope` the whole event in the contract's
// JSON form) and checks every deal of every game in it, by both versions of the protocol:
//
// - each revealed server seed hashes to its commitment: SHA-256("paiju-seed-commitment-v1" || seed);
// - version 2: every commitment before its shuffle's `commits_closed` (the cutter's too), every reveal after it,
//   each reveal's `matches` what hashing it gives, and the closes list exactly what happened;
// - the deck of each deal from the seed and the counted contributions (version 1: in log order; version 2: the
//   matching reveals in seat order), cut by the recorded count (version 2: the cutter's matching reveal, else the
//   commitment's default), dealt one card at a time from the first drawer, equals the recorded hands; the draws seed
//   equals the recorded one; 砸六家's first drawer of a first deal and 拖拉机's flip follow from the draws seed.
//
//   node dist/src/verify.js events.jsonl        one line per game; exit 1 when a deal fails
//   node dist/src/verify.js --vectors           the document's two test vectors
//
// Deals on the server seed alone are named as such, never plainly "verified".

import { createHash, createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const ONE_DECK = (
  "2S 2H 2C 2D 3S 3H 3C 3D 4S 4H 4C 4D 5S 5H 5C 5D 6S 6H 6C 6D 7S 7H 7C 7D 8S 8H 8C 8D 9S 9H 9C 9D " +
  "TS TH TC TD JS JH JC JD QS QH QC QD KS KH KC KD AS AH AC AD SJ BJ"
).split(" ");

const sha256 = (...parts: (string | Uint8Array)[]): Buffer => {
  const hash = createHash("sha256");
  for (const part of parts) hash.update(part);
  return hash.digest();
};
const hmac = (key: Uint8Array, ...parts: (string | Uint8Array)[]): Buffer => {
  const mac = createHmac("sha256", key);
  for (const part of parts) mac.update(part);
  return mac.digest();
};
const u32 = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};

/** The commitment to a server seed. */
export const seedCommitment = (seed: Uint8Array): Buffer => sha256("paiju-seed-commitment-v1", seed);

/** Version 1's shuffle key: the contributions in log order, each its length in 4 bytes and its bytes. */
export const keyV1 = (seed: Uint8Array, contributions: Uint8Array[]): Buffer =>
  hmac(seed, "paiju-fair-shuffle-v1", ...contributions.flatMap((c) => [u32(c.length), c]));

/** Version 2's shuffle key: the counted contributions in seat order, each its seat (1 byte), length and bytes. */
export const keyV2 = (seed: Uint8Array, counted: [number, Uint8Array][]): Buffer =>
  hmac(seed, "paiju-fair-shuffle-v2", ...[...counted].sort((a, b) => a[0] - b[0]).flatMap(([s, c]) => [Buffer.from([s]), u32(c.length), c]));

/** Version 2: a seat's commitment to its contribution. */
export const commitmentV2 = (n: number, seat: number, salt: Uint8Array, cut: number, contribution: Uint8Array): Buffer =>
  sha256("paiju-contribution-commitment-v2", u32(n), Buffer.from([seat]), salt, u32(cut), contribution);

/** The deck of `decks` decks shuffled by the stream of `key`, top first. */
export function shuffled(decks: number, key: Uint8Array): string[] {
  const deck = ONE_DECK.flatMap((card) => Array<string>(decks).fill(card));
  let block = 0n;
  let words: number[] = [];
  const below = (n: number): number => {
    for (;;) {
      if (words.length === 0) {
        const k = Buffer.alloc(8);
        k.writeBigUInt64BE(block);
        block += 1n;
        const digest = hmac(key, k);
        words = Array.from({ length: 8 }, (_, i) => digest.readUInt32BE(4 * i));
      }
      const x = words.shift() as number;
      if (x < 2 ** 32 - (2 ** 32 % n)) return x % n;
    }
  };
  for (let i = deck.length - 1; i > 0; i -= 1) {
    const j = below(i + 1);
    [deck[i], deck[j]] = [deck[j] as string, deck[i] as string];
  }
  return deck;
}

/** The draws seed of a shuffle key: the first 8 bytes of HMAC(key, "paiju-deal-draws-v1"), shifted right by one. */
export const drawsSeed = (key: Uint8Array): bigint => hmac(key, "paiju-deal-draws-v1").readBigUInt64BE(0) >> 1n;

const MASK = (1n << 64n) - 1n;
/** SplitMix64 as the document states it, with below(n) and fork(label). */
export class SplitMix64 {
  constructor(private state: bigint) {}
  next(): bigint {
    this.state = (this.state + 0x9e3779b97f4a7c15n) & MASK;
    let z = this.state;
    z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK;
    z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK;
    return z ^ (z >> 31n);
  }
  below(n: number): number {
    const bound = BigInt(n);
    const limit = (1n << 64n) - ((1n << 64n) % bound);
    for (;;) {
      const x = this.next();
      if (x < limit) return Number(x % bound);
    }
  }
  static fork(seed: bigint, label: number): SplitMix64 {
    return new SplitMix64(new SplitMix64(seed).next() ^ ((BigInt(label) * 0xd1b54a32d192ed03n) & MASK));
  }
}

// --- reading an export ------------------------------------------------------------------------------------------

type Json = Record<string, unknown>;
const bytes = (value: unknown): Buffer => Buffer.from(typeof value === "string" ? value : "", "base64");
const int = (value: unknown): number => (value === undefined ? 0 : Number(value));
const card = (name: unknown): string => {
  const text = String(name);
  if (text === "CARD_SMALL_JOKER") return "SJ";
  if (text === "CARD_BIG_JOKER") return "BJ";
  return text.replace(/^CARD_/, "").replace(/^10/, "T"); // the contract's CARD_10S is the notation's TS
};
const FLIP_VALUES: Record<string, number> = { A: 1, T: 10, J: 11, Q: 12, K: 13 };

interface Shuffle {
  number: number;
  deal: number;
  commitment: Buffer;
  version: 1 | 2;
  cutter?: number;
  contributions: Uint8Array[];
  /** Version 1: the seat of each contribution, in log order. */
  contributors: number[];
  pledges: Map<number, Buffer>;
  reveals: Map<number, { salt: Buffer; contribution: Buffer; cut?: number; matches: boolean }>;
  commitsClosed: boolean;
  revealsClosed: boolean;
  dealt?: { hands: string[][]; firstDrawer: number; cut?: number; cutter?: number; seed?: bigint; first: boolean; hidden: boolean };
  flip?: { flipper: number; card: string; firstDrawer: number };
  seed?: Buffer;
  status?: string;
}

export interface GameVerdict {
  game: string;
  kind: string;
  verified: number;
  alone: number;
  /** Deals of a live game whose hands the export hides: only their seeds are checked against the commitments. */
  hidden: number;
  versions: Set<number>;
  failure?: string;
  contributors: Map<number, number[]>;
}

/** Check every deal of one game's events (in version order). */
export function verifyGame(gameId: string, envelopes: Json[]): GameVerdict {
  const verdict: GameVerdict = { game: gameId, kind: "", verified: 0, alone: 0, hidden: 0, versions: new Set(), contributors: new Map() };
  const fail = (version: number, reason: string): GameVerdict => ({ ...verdict, failure: `version ${version}: ${reason}` });
  let commitReveal = false;
  let current: Shuffle | undefined;
  let seats = 6;
  const shuffles: Shuffle[] = [];
  for (const envelope of envelopes) {
    const version = int(envelope.version);
    const kind = "zlj" in envelope ? "zlj" : "tractor" in envelope ? "tractor" : undefined;
    if (kind === undefined) continue; // the engine's own events (seat assignments)
    verdict.kind = kind;
    seats = kind === "zlj" ? 6 : 4;
    const [name, e] = Object.entries(envelope[kind] as Json)[0] as [string, Json];
    switch (name) {
      case "match_started":
      case "game_started":
        commitReveal = e.commit_reveal === true;
        break;
      case "seed_committed":
        if (current !== undefined && current.dealt === undefined && current.seed === undefined && current.number !== int(e.number)) {
          return fail(version, `shuffle ${int(e.number)} committed while shuffle ${current.number} waits`);
        }
        current = {
          number: int(e.number), deal: int(e.deal), commitment: bytes(e.commitment), version: commitReveal ? 2 : 1,
          contributions: [], contributors: [], pledges: new Map(), reveals: new Map(), commitsClosed: false, revealsClosed: false,
        };
        shuffles.push(current);
        break;
      case "seed_contributed":
        if (current === undefined || current.dealt !== undefined || current.version !== 1 || current.number !== int(e.number)) {
          return fail(version, "a contribution to no shuffle waiting for one");
        }
        current.contributions.push(bytes(e.contribution));
        current.contributors.push(int(e.seat));
        if (e.cut !== undefined) current.cutter = int(e.seat);
        break;
      case "contribution_committed": {
        if (current === undefined || current.version !== 2 || current.commitsClosed || current.number !== int(e.number)) {
          return fail(version, "a commitment to no shuffle taking commitments");
        }
        if (current.pledges.has(int(e.seat))) return fail(version, `seat ${int(e.seat)} commits twice`);
        current.pledges.set(int(e.seat), bytes(e.commitment));
        break;
      }
      case "commits_closed": {
        if (current === undefined || current.version !== 2 || current.commitsClosed || current.number !== int(e.number)) {
          return fail(version, "commitments closed twice, or for another shuffle");
        }
        const listed = ((e.committed as number[] | undefined) ?? []).map(Number);
        if (listed.join() !== [...current.pledges.keys()].sort((a, b) => a - b).join()) return fail(version, "the commitments close with other seats than committed");
        current.commitsClosed = true;
        break;
      }
      case "contribution_revealed": {
        if (current === undefined || !current.commitsClosed || current.revealsClosed || current.number !== int(e.number)) {
          return fail(version, "a reveal while the commitments are still taken, or to another shuffle");
        }
        const seat = int(e.seat);
        const pledged = current.pledges.get(seat);
        if (pledged === undefined || current.reveals.has(seat)) return fail(version, `seat ${seat} reveals without a commitment, or twice`);
        const cut = e.cut === undefined ? undefined : int(e.cut);
        if (cut !== undefined) current.cutter = seat;
        const reveal = { salt: bytes(e.salt), contribution: bytes(e.contribution), cut, matches: e.matches === true };
        const matches = commitmentV2(current.number, seat, reveal.salt, cut ?? 0, reveal.contribution).equals(pledged);
        if (matches !== reveal.matches) return fail(version, `seat ${seat}'s reveal is recorded as ${reveal.matches ? "" : "not "}matching, wrongly`);
        current.reveals.set(seat, reveal);
        break;
      }
      case "reveals_closed": {
        if (current === undefined || !current.commitsClosed || current.revealsClosed || current.number !== int(e.number)) {
          return fail(version, "reveals closed out of order");
        }
        const pledged = [...current.pledges.keys()].sort((a, b) => a - b);
        const matching = pledged.filter((s) => current?.reveals.get(s)?.matches === true);
        const withheld = pledged.filter((s) => !current?.reveals.has(s));
        const mismatched = pledged.filter((s) => current?.reveals.get(s)?.matches === false);
        const list = (key: string) => ((e[key] as number[] | undefined) ?? []).map(Number).join();
        if (list("contributors") !== matching.join() || list("withheld") !== withheld.join() || list("mismatched") !== mismatched.join()) {
          return fail(version, "the reveals close with other seats than revealed");
        }
        current.revealsClosed = true;
        break;
      }
      case "card_flipped":
        if (current !== undefined && current.dealt === undefined) {
          current.flip = { flipper: int(e.flipper), card: card(e.card), firstDrawer: int(e.first_drawer) };
        }
        break;
      case "hands_dealt":
        if (current !== undefined && current.dealt === undefined && current.seed === undefined) {
          if (current.version === 2 && !current.revealsClosed) return fail(version, "a deal before the reveals closed");
          const hands = ((e.hands as Json[] | undefined) ?? []).map((h) => ((h.cards as unknown[] | undefined) ?? []).map(card));
          current.dealt = {
            hands, firstDrawer: int(e.first_drawer), cut: e.cut === undefined ? undefined : int(e.cut),
            cutter: e.cutter === undefined ? undefined : int(e.cutter), seed: e.seed === undefined ? undefined : BigInt(String(e.seed)),
            first: e.cut === undefined,
            hidden: e.seed === undefined, // a live game's export: the hands are hidden until the game ends
          };
        }
        break;
      case "seed_revealed": {
        const shuffle = shuffles.find((s) => s.number === int(e.number));
        if (shuffle === undefined || shuffle.dealt === undefined) return fail(version, `a seed revealed for shuffle ${int(e.number)}, not dealt`);
        const seed = bytes(e.server_seed);
        if (!seedCommitment(seed).equals(shuffle.commitment)) return fail(version, `the seed of shuffle ${shuffle.number} does not match its commitment`);
        shuffle.seed = seed;
        if (shuffle.dealt.hidden) {
          verdict.hidden += 1;
          verdict.versions.add(shuffle.version);
          if (current === shuffle) current = undefined;
          break;
        }
        const reason = checkDeal(shuffle, seed, kind, seats);
        if (reason !== "") return fail(version, `deal ${shuffle.deal} (shuffle ${shuffle.number}): ${reason}`);
        const contributors = shuffle.version === 2
          ? [...shuffle.reveals.entries()].filter(([, r]) => r.matches).map(([s]) => s).sort((a, b) => a - b)
          : [...new Set(shuffle.contributors)].sort((a, b) => a - b);
        verdict.versions.add(shuffle.version);
        verdict.verified += 1;
        if (contributors.length === 0) verdict.alone += 1;
        verdict.contributors.set(shuffle.deal, contributors);
        if (current === shuffle) current = undefined;
        break;
      }
    }
  }
  return verdict;
}

/** Why a dealt shuffle is not what its seed and contributions give ("" when it is). */
function checkDeal(shuffle: Shuffle, seed: Buffer, kind: string, seats: number): string {
  const dealt = shuffle.dealt;
  if (dealt === undefined) return "not dealt";
  let key: Buffer;
  let cut = dealt.cut;
  if (shuffle.version === 2) {
    const counted = [...shuffle.reveals.entries()].filter(([, r]) => r.matches).map(([s, r]) => [s, r.contribution] as [number, Uint8Array]);
    key = keyV2(seed, counted);
    if (!dealt.first) {
      // the cutter: 砸六家 records it with the hands; 拖拉机's is the seat whose reveal carries a cut. One that
      // committed nothing, withheld or revealed a mismatch cuts what the server's commitment names.
      const cutter = dealt.cutter ?? shuffle.cutter;
      const reveal = cutter === undefined ? undefined : shuffle.reveals.get(cutter);
      const expected = reveal?.matches === true && reveal.cut !== undefined ? reveal.cut : 1 + (shuffle.commitment.readUInt32BE(0) % (kind === "zlj" ? 107 : 323));
      if (cut !== expected) return `cut ${cut} where the reveals give ${expected}`;
    }
  } else {
    key = keyV1(seed, shuffle.contributions);
  }
  const draws = drawsSeed(key);
  if (dealt.seed !== undefined && dealt.seed !== draws) return `draws seed ${dealt.seed} where the key gives ${draws}`;
  let deck = shuffled(kind === "zlj" ? 2 : 6, key);
  if (cut !== undefined) deck = [...deck.slice(cut), ...deck.slice(0, cut)];
  if (dealt.first && kind === "zlj") {
    const first = SplitMix64.fork(draws, 2).below(6);
    if (first !== dealt.firstDrawer) return `first drawer ${dealt.firstDrawer} where the draws seed gives ${first}`;
  }
  if (dealt.first && kind === "tractor" && shuffle.flip !== undefined) {
    const rng = SplitMix64.fork(draws, 2);
    const flipper = rng.below(4);
    const nonJokers = deck.filter((c) => c !== "SJ" && c !== "BJ");
    const flipped = nonJokers[rng.below(nonJokers.length)] as string;
    const value = FLIP_VALUES[flipped[0] as string] ?? Number(flipped[0]);
    const first = (flipper + value - 1) % 4;
    if (flipper !== shuffle.flip.flipper || flipped !== shuffle.flip.card || first !== shuffle.flip.firstDrawer) {
      return `the flip (${shuffle.flip.flipper} ${shuffle.flip.card}) where the draws seed gives ${flipper} ${flipped}`;
    }
  }
  const hands: string[][] = Array.from({ length: seats }, () => []);
  deck.forEach((c, i) => hands[(dealt.firstDrawer + i) % seats]?.push(c));
  const sorted = (hand: string[]): string => [...hand].sort().join(" ");
  for (let s = 0; s < seats; s += 1) {
    if (sorted(hands[s] ?? []) !== sorted(dealt.hands[s] ?? [])) return `seat ${s}'s hand differs from dealing the seed`;
  }
  return "";
}

/** The games of an export's `events.jsonl`, each its envelopes in version order. */
export function readExport(path: string): Map<string, Json[]> {
  const games = new Map<string, Json[]>();
  for (const line of readFileSync(path, "utf8").split("\n")) {
    if (line.trim() === "") continue;
    const row = JSON.parse(line) as Json;
    const envelope = JSON.parse(String(row.envelope)) as Json;
    const id = String(row.game_id);
    games.set(id, [...(games.get(id) ?? []), envelope]);
  }
  for (const envelopes of games.values()) envelopes.sort((a, b) => int(a.version) - int(b.version));
  return games;
}

/** One line per game, as `paiju verify` writes it. */
export function verdictLine(v: GameVerdict): string {
  if (v.failure !== undefined) return `${v.game}: FAILED at ${v.failure}`;
  const versions = [...v.versions].sort().join(" and ");
  const alone = v.alone > 0 ? `; ${v.alone} of them on the server seed alone` : "";
  const hidden = v.hidden > 0 ? `; ${v.hidden} deal(s) whose hands the export hides (a live game): their seeds match their commitments` : "";
  return `${v.game}: ${v.verified} deal(s) verified (protocol ${versions || "none"})${alone}${hidden}`;
}

// --- the document's test vectors --------------------------------------------------------------------------------

const hex = (b: Uint8Array): string => Buffer.from(b).toString("hex");
const range = (from: number, to: number): Buffer => Buffer.from(Array.from({ length: to - from }, (_, i) => from + i));

/** The two test vectors of docs/fairness.md; the list of what differs (empty: both hold). */
export function checkVectors(): string[] {
  const wrong: string[] = [];
  const expect = (what: string, got: unknown, want: unknown): void => {
    if (got !== want) wrong.push(`${what}: ${String(got)}, the document says ${String(want)}`);
  };
  // version 1
  const seed1 = range(0, 32);
  const key1 = keyV1(seed1, [Buffer.from("0a0b0c0d", "hex"), Buffer.from("seat-3 cuts 42")]);
  expect("v1 commitment", hex(seedCommitment(seed1)), "5844d6fdf0023135954a6eda9ab024a87611fef793bac1733b00e19448eefaaa");
  expect("v1 key", hex(key1), "1dcc7634f1c70e17d982a88a4f53d2f589cdb6adadc703ae9cfc637a0723f9ac");
  expect("v1 two decks", hex(sha256(shuffled(2, key1).join(" "))), "feaecabda3bdb4a1dd61b39e4e88cbd185cefdbf9b382302493fab34d88990b3");
  expect("v1 six decks", hex(sha256(shuffled(6, key1).join(" "))), "ff58dfa57f897ad99dd0141bbe0b52dad20f1d983828395f29813b765b665be0");
  const draws1 = drawsSeed(key1);
  expect("v1 draws seed", draws1, 2062245181578769612n);
  expect("v1 first next", new SplitMix64(draws1).next().toString(16), "35853672c6446bcc");
  expect("v1 zlj first drawer", SplitMix64.fork(draws1, 2).below(6), 5);
  // version 2
  const seed2 = range(0x20, 0x40);
  expect("v2 commitment", hex(seedCommitment(seed2)), "af9955c0b6a8d0b56e73aafb49b53cbaaa0670c5ef86114e526847995b44fe3e");
  const salts = [0, 1, 2, 3, 4, 5].map((s) => sha256(`salt ${s}`));
  const commitments = [
    "4c23fd6ac9bd8b9e83b74d48cd852fe51b41f45ebe63d36e8d56013baae93e18",
    "1e4a0e36f5d2a7cc9ffaaa1cce6d56d192fc75ae835a7950c60c79ae3aded7f4",
    "cbaeac8b8bba2a92a60cdb09794293359e2d63a05ada155bdd70d572e6586d80",
    "342db296c1e5c47bc0884824e1727895ed28b4644bac8d2dabea12dcf1c265f5",
    "77e2ac5120e1d915fe7b558dfee698ddfcaf2f1dd60958b940014b6809f313a2",
    "34236bac29f6e1cb03b68aa73fe4f69ffd7b37f0afda9382bf3418370f9c7eed",
  ];
  salts.forEach((salt, s) => expect(`v2 seat ${s} commitment`, hex(commitmentV2(2, s, salt, s === 4 ? 50 : 0, Buffer.from(`seat ${s}`))), commitments[s]));
  expect("v2 seat 1 mismatch", hex(commitmentV2(2, 1, salts[1] as Buffer, 0, Buffer.from("seat 1!"))) === commitments[1], false);
  const key2 = keyV2(seed2, [5, 4, 2, 0].map((s) => [s, Buffer.from(`seat ${s}`)] as [number, Uint8Array]));
  expect("v2 key", hex(key2), "78167aed563c12924113e33391d327f6bb6703bc4f8b7a17f4222d0d2ca1e427");
  const deck2 = shuffled(2, key2);
  expect("v2 first cards", deck2.slice(0, 12).join(" "), "2S AD 7S 5D KH KC 2C 7C 2S 4C TD QH");
  expect("v2 two decks", hex(sha256(deck2.join(" "))), "f1ae97479195f2c9d8cda358858de5a766bddbf2fdf96442beeb3dc179a904f9");
  expect("v2 six decks", shuffled(6, key2).slice(0, 12).join(" "), "QH KS 8H 7H AS QC TS AH 8C 6C QD 5D");
  const cutDeck = [...deck2.slice(50), ...deck2.slice(0, 50)];
  expect("v2 first cards drawn (seats 3, 4, 5, 0, 1, 2)", cutDeck.slice(0, 6).join(" "), "9C JD 9H TS 9D 5C");
  expect("v2 default cut", 1 + (seedCommitment(seed2).readUInt32BE(0) % 107), 52);
  const draws2 = drawsSeed(key2);
  expect("v2 draws seed", draws2, 3649080454316170223n);
  expect("v2 tribute tie", rockPaperScissors([3, 5, 1], SplitMix64.fork(draws2, 4)).join(), "1,3,5");
  expect("v2 tie in seat order", rockPaperScissors([1, 3, 5], SplitMix64.fork(draws2, 4)).join(), "5,1,3");
  return wrong;
}

/** Rock–paper–scissors as the document states it: the seats throw in the order given. */
export function rockPaperScissors(seats: number[], rng: SplitMix64): number[] {
  if (seats.length <= 1) return seats;
  for (;;) {
    const throws = seats.map((s) => [s, rng.below(3)] as const);
    const shapes = new Set(throws.map(([, t]) => t));
    if (shapes.size !== 2) continue;
    const [a, b] = [...shapes] as [number, number];
    const win = (a + 2) % 3 === b ? a : b; // a shape beats the one before it
    const winners = throws.filter(([, t]) => t === win).map(([s]) => s);
    const losers = throws.filter(([, t]) => t !== win).map(([s]) => s);
    return [...rockPaperScissors(winners, rng), ...rockPaperScissors(losers, rng)];
  }
}

function main(argv: string[]): number {
  if (argv[0] === "--vectors") {
    const wrong = checkVectors();
    for (const line of wrong) console.log(line);
    console.log(wrong.length === 0 ? "both test vectors hold" : `${wrong.length} value(s) differ`);
    return wrong.length === 0 ? 0 : 1;
  }
  if (argv.length !== 1) {
    console.error("usage: verify.js EVENTS.jsonl | --vectors");
    return 2;
  }
  let failed = 0;
  for (const [game, envelopes] of readExport(argv[0] as string)) {
    const verdict = verifyGame(game, envelopes);
    if (verdict.failure !== undefined) failed += 1;
    console.log(verdictLine(verdict));
    for (const [deal, seats] of verdict.contributors) console.log(`  deal ${deal}: contributors ${seats.join(" ") || "none"}`);
  }
  return failed === 0 ? 0 : 1;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) process.exitCode = main(process.argv.slice(2));
