// Paiju's page to play: sign in (a guest, a new account, or one's own), sit at a table, and play a whole match at a
// card table from the turns the gateway pushes (server-sent events). Every string from the server is set as text,
// never as HTML. The sign-in is a cookie this script cannot read; every change is a same-origin POST.
"use strict";

const SUITS = { S: "♠", H: "♥", C: "♣", D: "♦" };
const GAMES = { zlj: "Za Liu Jia 砸六家", tractor: "Tractor 拖拉机" };
const FROM_HAND = new Set(["play", "return_tribute", "make_bid", "counter"]);
const BY_RANK = new Set(["zlj"]); // games whose suits never matter: chosen cards make a move by their ranks
const main = () => document.getElementById("main");
let me = null; // who this browser is signed in as ({player_id, name, renew_at})
let closeCurrent = () => {};
let renewTimer = null;

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node[key] = value;
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const CARD_IN_TEXT = /(?<![\w-])([2-9TJQKA][SHCD]|10[SHCD]|SJ|BJ)(?![\w-])/g;

function withCards(text, names = []) {
  // words with the cards they name (QS, TD, SJ) drawn as the hand draws them, so the page shows one notation in what
  // happened, the facts and the result (a player named like a card stays a name)
  const parts = [];
  let at = 0;
  for (const found of String(text).matchAll(CARD_IN_TEXT)) {
    if (names.includes(found[0])) continue;
    parts.push(String(text).slice(at, found.index), card(found[0].startsWith("10") ? `T${found[0].slice(2)}` : found[0]));
    at = found.index + found[0].length;
  }
  parts.push(String(text).slice(at));
  return parts;
}

function card(code, attrs = {}) {
  // the notation of docs/rules: rank then suit letter (QS, 10D); SJ and BJ the jokers
  if (code === "SJ" || code === "BJ") {
    return el("span", { class: "card joker", "data-card": code, title: code === "BJ" ? "big joker" : "small joker", ...attrs },
      code === "BJ" ? "BJ" : "SJ");
  }
  const suit = code.slice(-1);
  const red = suit === "H" || suit === "D";
  return el("span", { class: red ? "card red" : "card", "data-card": code, ...attrs }, code.slice(0, -1) + (SUITS[suit] || suit));
}

function show(...nodes) {
  main().replaceChildren(...nodes.flat(Infinity).filter((n) => n !== null && n !== undefined));
}

function failure(error) {
  return el("p", { class: "error", "data-testid": "error", role: "alert" }, String(error.message || error));
}

async function call(method, url, body) {
  const init = { method, headers: { Accept: "application/json" }, credentials: "same-origin" };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const answer = await fetch(url, init);
  const found = await answer.json().catch(() => ({ message: answer.statusText }));
  if (!answer.ok) {
    const error = new Error(found.message || answer.statusText);
    error.status = answer.status;
    error.reason = found.reason;
    throw error;
  }
  return found;
}

// --- signing in ---------------------------------------------------------------------------------------------------

function signedIn(session) {
  me = session && session.signed_in ? session : null;
  const who = document.getElementById("who");
  who.replaceChildren();
  if (me) {
    who.append(el("span", {}, "Signed in as ", el("b", { "data-testid": "name" }, me.name), " "),
      el("button", { type: "button", "data-testid": "sign-out", onclick: signOut }, "Sign out"));
    clearTimeout(renewTimer);
    const wait = Math.max(5, me.renew_at - Date.now() / 1000) * 1000;
    renewTimer = setTimeout(renew, Math.min(wait, 2 ** 31 - 1)); // before the session expires, a fresh one
  }
}

async function renew() {
  try {
    signedIn(await call("POST", "/api/session/renew"));
  } catch (error) {
    signedIn(null);
    route();
  }
}

async function signOut() {
  closeCurrent();
  await call("POST", "/api/session/logout").catch(() => null);
  signedIn(null);
  location.hash = "#/";
  route();
}

function signInPage(sessionInfo) {
  const problem = el("div");
  const attempt = (fn) => async (event) => {
    if (event) event.preventDefault();
    problem.replaceChildren();
    try {
      signedIn(await fn());
      route();
    } catch (error) {
      problem.replaceChildren(failure(error));
    }
  };
  const form = (what, url) => {
    const name = el("input", { name: "name", autocomplete: "username", required: true, maxlength: 64, "aria-label": "name" });
    const password = el("input", {
      name: "password", type: "password", required: true, maxlength: 128, "aria-label": "password",
      autocomplete: what === "Register" ? "new-password" : "current-password",
    });
    return el("form", { "data-testid": what.toLowerCase(), onsubmit: attempt(() => call("POST", url, { name: name.value, password: password.value })) },
      el("label", {}, "Name ", name), el("label", {}, "Password ", password), el("button", { type: "submit" }, what));
  };
  const off = sessionInfo && sessionInfo.sign_in === false;
  show(
    el("h1", {}, "Play Za Liu Jia 砸六家 and Tractor 拖拉机"),
    off ? el("p", { class: "error" }, "This server signs nobody in (it has no session key): you may only watch.") : null,
    problem,
    el("div", { class: "panels" },
      el("div", { class: "panel" }, el("h2", {}, "Play now"), el("p", { class: "muted" }, "A guest account, no password."),
        el("button", { type: "button", class: "primary", "data-testid": "guest", onclick: attempt(() => call("POST", "/api/session/guest")) }, "Play as a guest")),
      el("div", { class: "panel" }, el("h2", {}, "Sign in"), form("Log in", "/api/session/login")),
      el("div", { class: "panel" }, el("h2", {}, "New account"), el("p", { class: "muted" }, "A name of 2 to 32 characters, a password of at least 10."), form("Register", "/api/session/register"))));
}

// --- the lobby ----------------------------------------------------------------------------------------------------

async function lobbyPage() {
  const problem = el("div");
  const deals = el("input", { type: "number", min: 1, max: 50, value: 2, "data-testid": "deals", "aria-label": "deals" });
  const open = (game) => async () => {
    problem.replaceChildren();
    try {
      const body = { game, bots: true };
      if (game === "zlj" && deals.value) body.deals = Number(deals.value);
      const found = await call("POST", "/api/play/tables", body);
      location.hash = `#/table/${found.table.table_id}`;
    } catch (error) {
      problem.replaceChildren(failure(error));
    }
  };
  const list = el("tbody");
  const others = el("div", { class: "panel wide", "data-testid": "matchmaking" });
  show(
    el("h1", {}, "Sit down at a table"),
    problem,
    others,
    el("div", { class: "panels" },
      el("div", { class: "panel" }, el("h2", {}, GAMES.zlj), el("p", { class: "muted" }, "Six seats, two teams of three; you with five bots."),
        el("label", {}, "Deals ", deals), " ",
        el("button", { type: "button", class: "primary", "data-testid": "new-zlj", onclick: open("zlj") }, "Play with bots")),
      el("div", { class: "panel" }, el("h2", {}, GAMES.tractor), el("p", { class: "muted" }, "Four seats, two teams of two; you with three bots."),
        el("button", { type: "button", class: "primary", "data-testid": "new-tractor", onclick: open("tractor") }, "Play with bots"))),
    el("h2", {}, "Open tables"),
    el("table", { class: "tables" }, el("thead", {}, el("tr", {}, el("th", {}, "Table"), el("th", {}, "Game"), el("th", {}, "Seats"), el("th", {}, ""))), list));
  closeCurrent = () => { leaveQueueStream(); QUEUE.status = null; QUEUE.offer = null; }; // away from the lobby: out of the queue
  matchmaking(others);
  try {
    const found = await call("GET", "/api/tables");
    for (const t of found.tables) {
      const free = t.seats.filter((s) => !s.name && !s.bot).length;
      if (t.status !== "open" || !free) continue;
      const sit = async () => {
        try {
          await call("POST", `/api/play/tables/${encodeURIComponent(t.table_id)}/sit`, {});
          location.hash = `#/table/${t.table_id}`;
        } catch (error) {
          problem.replaceChildren(failure(error));
        }
      };
      list.append(el("tr", { "data-table": t.table_id }, el("td", {}, t.name), el("td", {}, GAMES[t.game] || t.game),
        el("td", {}, `${free} free`), el("td", {}, el("button", { type: "button", onclick: sit }, "Sit down"))));
    }
    if (!list.children.length) list.append(el("tr", {}, el("td", { colspan: 4, class: "muted" }, "No open table has a free seat: open one above.")));
  } catch (error) {
    problem.replaceChildren(failure(error));
  }
}

// --- parties and the queue (docs/rules/matchmaking.md) ------------------------------------------------------------

const QUEUE = { party: null, invites: [], source: null, status: null, offer: null, game: "zlj", mode: "casual", botWait: 30 };

function leaveQueueStream() {
  if (QUEUE.source) QUEUE.source.close();
  QUEUE.source = null;
}

async function matchmaking(panel) {
  const problem = el("div");
  const attempt = (fn) => async (event) => {
    if (event) event.preventDefault();
    problem.replaceChildren();
    try {
      const found = await fn();
      if (found && "invites" in found) { QUEUE.party = found.party; QUEUE.invites = found.invites; }
    } catch (error) {
      problem.replaceChildren(failure(error));
    }
    draw();
  };
  const refresh = attempt(() => call("GET", "/api/play/party"));

  const find = () => {
    problem.replaceChildren();
    leaveQueueStream();
    const game = QUEUE.party ? QUEUE.party.game : QUEUE.game;
    const wait = QUEUE.mode === "ranked" ? 0 : QUEUE.botWait;
    const query = new URLSearchParams({ game, mode: QUEUE.mode, bot_wait: String(wait) });
    const source = new EventSource(`/api/play/queue?${query}`);
    QUEUE.source = source;
    QUEUE.offer = null;
    QUEUE.status = QUEUE.party && !QUEUE.party.leader ? "Waiting for your party's leader to queue…" : "Joining the queue…";
    source.addEventListener("waiting", (e) => {
      const w = JSON.parse(e.data);
      QUEUE.offer = null;
      QUEUE.status = `Waiting for a match (${w.waited_seconds} s so far): ${w.players.join(", ")}.`;
      draw();
    });
    source.addEventListener("offer", async (e) => {
      const offer = JSON.parse(e.data);
      QUEUE.offer = offer;
      QUEUE.status = `Match found: ${offer.confirmed} of ${offer.humans} players confirmed.`;
      draw();
      if (!offer.i_confirmed && !QUEUE.confirmed?.has(offer.offer_id)) {
        // clicking "Find a game" agreed to play the match the queue offers: the page confirms it
        (QUEUE.confirmed ||= new Set()).add(offer.offer_id);
        try {
          await call("POST", "/api/play/queue/confirm", { offer_id: offer.offer_id });
        } catch (error) {
          problem.replaceChildren(failure(error));
        }
      }
    });
    source.addEventListener("found", (e) => {
      const found = JSON.parse(e.data);
      leaveQueueStream();
      QUEUE.status = null;
      QUEUE.offer = null;
      location.hash = `#/table/${found.table_id}`;
    });
    const over = (e) => {
      leaveQueueStream();
      QUEUE.offer = null;
      QUEUE.status = null;
      try {
        problem.replaceChildren(failure(new Error(`Out of the queue: ${JSON.parse(e.data).message}.`)));
      } catch (_) {
        problem.replaceChildren(failure(new Error("Out of the queue.")));
      }
      draw();
    };
    source.addEventListener("ended", over);
    source.addEventListener("trouble", over);
    source.onerror = () => {
      if (source.readyState === EventSource.CLOSED && QUEUE.source === source) {
        leaveQueueStream();
        QUEUE.status = null;
        problem.replaceChildren(failure(new Error("The queue refused or the connection closed: check your party, or a match you still sit in.")));
        draw();
      }
    };
    draw();
  };
  const leave = async () => {
    problem.replaceChildren();
    leaveQueueStream();
    QUEUE.status = null;
    QUEUE.offer = null;
    await call("POST", "/api/play/queue/leave").catch((error) => problem.replaceChildren(failure(error)));
    draw();
  };

  function draw() {
    if (!panel.isConnected) return;
    const party = QUEUE.party;
    const gameChoice = el("select", { "data-testid": "queue-game", "aria-label": "game", disabled: !!party || !!QUEUE.source,
      onchange: (e) => { QUEUE.game = e.target.value; } },
      Object.entries(GAMES).map(([key, name]) => el("option", { value: key, selected: key === (party ? party.game : QUEUE.game) }, name)));
    const mode = el("select", { "data-testid": "queue-mode", "aria-label": "mode", disabled: !!QUEUE.source,
      onchange: (e) => { QUEUE.mode = e.target.value; draw(); } },
      el("option", { value: "casual", selected: QUEUE.mode === "casual" }, "Casual"),
      el("option", { value: "ranked", selected: QUEUE.mode === "ranked" }, "Ranked (people only)"));
    const botWait = el("input", { type: "number", min: 0, max: 600, value: QUEUE.botWait, "data-testid": "bot-wait", "aria-label": "bot wait",
      disabled: QUEUE.mode === "ranked" || !!QUEUE.source, onchange: (e) => { QUEUE.botWait = Math.max(0, Math.min(600, Number(e.target.value) || 0)); } });
    const invitee = el("input", { name: "invitee", maxlength: 64, required: true, "data-testid": "invitee", "aria-label": "name to invite" });
    const member = party && !party.leader;
    panel.replaceChildren(...[
      el("h2", {}, "Play with people"),
      el("p", { class: "muted" }, "Queue for a game: the lobby seats you with players of your rating (a party sits together as partners). ",
        "Clicking “Find a game” agrees to the match the queue offers: this page confirms it for you."),
      problem,
      el("div", { class: "row" },
        el("label", {}, "Game ", gameChoice), " ", el("label", {}, "Mode ", mode), " ",
        el("label", { title: "casual: after this many seconds bots may fill the empty seats (0: never)" }, "Bots after ", botWait, " s"), " ",
        QUEUE.source
          ? el("button", { type: "button", "data-testid": "leave-queue", onclick: leave }, "Leave the queue")
          : el("button", { type: "button", class: "primary", "data-testid": "find-game", onclick: find }, member ? "Follow my party" : "Find a game")),
      QUEUE.status ? el("p", { "data-testid": "queue-status", role: "status" }, QUEUE.status) : null,
      QUEUE.offer ? el("ol", { class: "offer", start: 0, "data-testid": "offer" },
        QUEUE.offer.seats.map((s) => el("li", {}, s.bot ? "a bot" : s.name, s.me ? " (you)" : ""))) : null,
      el("h3", {}, "Party"),
      party
        ? el("div", { "data-testid": "party" },
          el("p", {}, `${GAMES[party.game] || party.game}: `, party.members.map((m) => m.name).join(", "),
            party.invited.length ? el("span", { class: "muted" }, ` (invited: ${party.invited.map((m) => m.name).join(", ")})`) : null),
          party.leader
            ? el("form", { "data-testid": "invite", onsubmit: attempt(() => call("POST", "/api/play/party/invite", { name: invitee.value })) },
              el("label", {}, "Invite ", invitee), " ", el("button", { type: "submit" }, "Invite"))
            : null,
          el("div", { class: "row" },
            el("button", { type: "button", "data-testid": "leave-party", onclick: attempt(() => call("POST", "/api/play/party/leave")) },
              party.leader ? "Disband the party" : "Leave the party"),
            el("button", { type: "button", "data-testid": "refresh-party", onclick: refresh }, "Refresh")))
        : el("div", { class: "row" },
          el("button", { type: "button", "data-testid": "new-party", onclick: attempt(() => call("POST", "/api/play/party", { game: QUEUE.game })) },
            "Form a party"),
          el("button", { type: "button", "data-testid": "refresh-party", onclick: refresh }, "Refresh")),
      QUEUE.invites.length
        ? el("ul", { "data-testid": "invites" }, QUEUE.invites.map((i) => el("li", { "data-party": i.party_id },
          `${i.leader_name} invites you to play ${GAMES[i.game] || i.game} `,
          el("button", { type: "button", "data-testid": "accept", onclick: attempt(() => call("POST", "/api/play/party/accept", { party_id: i.party_id })) }, "Accept"), " ",
          el("button", { type: "button", "data-testid": "decline", onclick: attempt(() => call("POST", "/api/play/party/decline", { party_id: i.party_id })) }, "Decline"))))
        : el("p", { class: "muted" }, "No invite waiting (Refresh to look again)."),
    ].filter((node) => node !== null));
  }

  draw();
  await refresh();
}

// --- fair dealing: the seat's own randomness (docs/fairness.md), drawn and kept in this browser -------------------

const DOMAIN = new TextEncoder().encode("paiju-contribution-commitment-v2");

function random(n) {
  return crypto.getRandomValues(new Uint8Array(n));
}

function base64(bytes) {
  return btoa(String.fromCharCode(...bytes));
}

function unbase64(text) {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

function bigEndian(value, size) {
  const out = new Uint8Array(size);
  for (let i = size - 1; i >= 0; i -= 1) { out[i] = value & 255; value = Math.floor(value / 256); }
  return out;
}

async function fairCommand(game, gameId, step) {
  // the command of the seat's fair-dealing step: random bytes; or a commitment (SHA-256 of the domain, shuffle,
  // seat, a fresh salt, the cut and the contribution), its parts kept in sessionStorage; or the reveal of them
  const key = `paiju-pledge:${gameId}:${step.shuffle}`;
  if (step.kind === "contribute") return { [game]: { contribute: { seat: step.seat, contribution: base64(random(16)) } } };
  if (step.kind === "commit") {
    let kept = JSON.parse(sessionStorage.getItem(key) || "null");
    if (!kept) {
      const cut = step.max_cut > 0 ? 1 + (new Uint32Array(random(4).buffer)[0] % step.max_cut) : 0;
      kept = { seat: step.seat, salt: base64(random(32)), contribution: base64(random(16)), cut };
      sessionStorage.setItem(key, JSON.stringify(kept));
    }
    const parts = [DOMAIN, bigEndian(step.shuffle, 4), bigEndian(step.seat, 1), unbase64(kept.salt), bigEndian(kept.cut, 4), unbase64(kept.contribution)];
    const message = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const part of parts) { message.set(part, at); at += part.length; }
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", message));
    return { [game]: { commit_contribution: { seat: step.seat, commitment: base64(digest) } } };
  }
  const kept = JSON.parse(sessionStorage.getItem(key) || "null");
  if (!kept) return null; // committed to nothing from this browser: the engine deals without it
  return { [game]: { reveal_contribution: { seat: kept.seat, salt: kept.salt, contribution: kept.contribution, cut: kept.cut } } };
}

// --- the table ----------------------------------------------------------------------------------------------------

function rankOf(code) {
  return code === "SJ" || code === "BJ" ? code : code.slice(0, -1);
}

function multiset(codes, key) {
  return codes.map(key).sort().join(" ");
}

function tablePage(tableId) {
  const state = { table: null, turn: null, selected: [], focus: 0, log: [], ended: null, error: null, sending: null, ratings: null };
  // sending: the move on its way ({ version, concealed }): a newer turn may come before its answer does
  const source = new EventSource(`/api/play/tables/${encodeURIComponent(tableId)}/live`);
  let ticking = null;
  closeCurrent = () => {
    source.close();
    clearInterval(ticking);
    document.onkeydown = null;
  };
  source.addEventListener("table", (e) => { state.table = JSON.parse(e.data); draw(); });
  source.addEventListener("turn", (e) => {
    const turn = JSON.parse(e.data);
    state.log.push(...turn.lines);
    if (!state.turn || state.turn.version !== turn.version || !turn.mine) state.selected = [];
    state.turn = turn;
    state.ended = null;
    state.error = null;
    draw();
    if (turn.fair_step) takeFairStep(turn);
  });
  source.addEventListener("ended", (e) => {
    const found = JSON.parse(e.data);
    state.log.push(...found.lines);
    state.ended = found;
    draw();
    ratings(found.game_id, 1);
  });

  async function ratings(gameId, tries) {
    // the players' rating changes, once scoring has rated the match (asked again a few times, more slowly each)
    const found = await call("GET", `/api/tables/${encodeURIComponent(tableId)}/result`).catch(() => null);
    if (found && found.game_id === gameId && found.rated) {
      state.ratings = found.ratings;
      draw();
    } else if (tries < 6) {
      setTimeout(() => ratings(gameId, tries + 1), 1000 * 2 ** tries);
    }
  }
  source.addEventListener("trouble", (e) => { state.error = JSON.parse(e.data).message; draw(); });
  source.addEventListener("gone", (e) => { state.error = JSON.parse(e.data).message; source.close(); draw(); });
  source.onerror = () => { if (source.readyState === EventSource.CLOSED) { state.error = "the connection closed: reload the page"; draw(); } };
  ticking = setInterval(tick, 1000);

  function tick() {
    const node = document.querySelector("[data-testid=timer]");
    const turn = state.turn;
    if (!node || !turn || !turn.deadline_ms) return;
    const left = Math.max(0, Math.round((turn.deadline_ms - Date.now()) / 1000));
    node.textContent = `${left} s left`;
  }

  const fairDone = new Set();

  async function takeFairStep(turn) {
    const step = turn.fair_step;
    const key = `${turn.game_id}:${step.shuffle}:${step.kind}`;
    if (fairDone.has(key)) return;
    fairDone.add(key);
    try {
      const command = await fairCommand(turn.game, turn.game_id, step);
      if (command) await call("POST", "/api/play/act", { table_id: tableId, version: null, command });
    } catch (error) {
      fairDone.delete(key);
      if (error.status !== 409) { state.error = `Your part of the shuffle was refused: ${error.message}`; draw(); }
    }
  }

  function actions() {
    return state.turn && state.turn.mine ? state.turn.actions : [];
  }

  function handKinds() {
    return actions().filter((a) => FROM_HAND.has(a.kind) && a.cards);
  }

  function sameCards(a, b) {
    const key = BY_RANK.has(state.turn.game) ? rankOf : (c) => c;
    return multiset(a, key) === multiset(b, key);
  }

  function legalCards() {
    // the cards of the hand that some legal action uses (by rank in 砸六家, where suits never matter)
    const turn = state.turn;
    const found = new Set();
    const kinds = handKinds();
    if (!kinds.length) return found;
    const key = BY_RANK.has(turn.game) ? rankOf : (c) => c;
    // a 拖拉机 follow: the cards of the led class when the seat holds more of them than the lead has, else any
    const owed = turn.follow.length ? new Set(turn.follow_cards) : null;
    const used = new Set(kinds.flatMap((a) => a.cards.map(key)));
    for (const c of turn.hand) {
      if (owed ? (owed.size === 0 || owed.has(c.card)) : used.has(key(c.card))) found.add(c.card);
    }
    return found;
  }

  function chosenAction() {
    // the legal action the selected cards make (its command sent with the cards chosen), or null
    const picked = state.selected.map((i) => state.turn.hand[i].card);
    if (!picked.length) return null;
    const matching = handKinds().find((a) => sameCards(a.cards, picked));
    if (matching) return { action: matching, cards: state.selected.map((i) => state.turn.hand[i].pb) };
    const play = handKinds().find((a) => a.kind === "play");
    if (play && state.turn.follow.length) return { action: play, cards: state.selected.map((i) => state.turn.hand[i].pb) };
    return null;
  }

  function sending() {
    // a move of the turn shown is on its way: its controls wait for the answer, so the same turn is not played
    // twice. A newer turn is the player's to play at once, unless the move on its way was concealed (made at no
    // version): whether a newer turn already holds it, only its answer says.
    const on = state.sending;
    return on !== null && state.turn !== null && (on.concealed || on.version === state.turn.version);
  }

  async function send(action, cards) {
    const turn = state.turn;
    if (sending()) return;
    const command = JSON.parse(JSON.stringify(action.command));
    if (cards) {
      const inner = command[turn.game];
      const kind = Object.keys(inner)[0];
      inner[kind].cards = cards;
    }
    const sent = { version: turn.version, concealed: turn.concealed };
    state.sending = sent;
    draw(); // the turn's controls wait for the answer
    const body = { table_id: tableId, version: turn.concealed ? null : turn.version, command };
    // what the answer says is shown only while the page still shows the turn the move was made at (a concealed
    // move's, whatever turn is shown): the stream may tell the next turn (the bots' moves) before the answer comes,
    // and that turn is the player's to play
    const current = () => state.turn !== null && (sent.concealed || state.turn.version === turn.version);
    try {
      for (let tries = 1; ; tries += 1) {
        try {
          await call("POST", "/api/play/act", body);
          break;
        } catch (error) {
          // a service that could not answer, or a limit: the same move again after a pause (at the same version,
          // so it is made at most once: a move that did land is answered as stale)
          if ((error.status !== 503 && error.status !== 429) || tries >= 6) throw error;
          if (current()) {
            state.error = `${error.message} (trying again)`;
            draw();
          }
          await new Promise((resolve) => setTimeout(resolve, 250 * 2 ** tries));
        }
      }
      if (current()) {
        state.selected = [];
        state.error = null;
      }
    } catch (error) {
      if (current()) state.error = error.message;
    } finally {
      if (state.sending === sent) state.sending = null;
      draw();
    }
  }

  function playSelected() {
    const chosen = chosenAction();
    if (!chosen) {
      state.error = "Those cards are not a legal choice now: choose others, or one of the options.";
      draw();
      return;
    }
    send(chosen.action, chosen.cards);
  }

  function pass() {
    const found = actions().find((a) => a.kind === "pass");
    if (found) send(found, null);
  }

  function toggle(index) {
    const at = state.selected.indexOf(index);
    if (at >= 0) state.selected.splice(at, 1);
    else state.selected.push(index);
    state.focus = index;
    draw();
  }

  function select(codes) {
    // select cards of the hand making ``codes`` (the same ranks in 砸六家)
    const key = BY_RANK.has(state.turn.game) ? rankOf : (c) => c;
    const want = codes.map(key);
    const picked = [];
    state.turn.hand.forEach((c, i) => {
      const at = want.indexOf(key(c.card));
      if (at >= 0) { want.splice(at, 1); picked.push(i); }
    });
    state.selected = picked;
    draw();
  }

  document.onkeydown = (event) => {
    if (!state.turn || event.target instanceof HTMLInputElement) return;
    const size = state.turn.hand.length;
    if (event.key === "ArrowRight" || event.key === "ArrowLeft") {
      if (!size) return;
      state.focus = (state.focus + (event.key === "ArrowRight" ? 1 : size - 1)) % size;
      draw();
      event.preventDefault();
    } else if ((event.key === " " || event.key === "ArrowUp") && size && event.target.closest?.(".hand")) {
      toggle(state.focus);
      event.preventDefault();
    } else if (event.key === "Enter" && event.target.closest?.(".hand")) {
      playSelected();
      event.preventDefault();
    } else if (event.key === "p" || event.key === "P") {
      pass();
    } else if (event.key === "Escape") {
      state.selected = [];
      draw();
    } else if (/^[1-9]$/.test(event.key)) {
      const button = document.querySelectorAll("[data-testid=options] button")[Number(event.key) - 1];
      if (button) button.click();
    }
  };

  function seatNode(seat, n, mySeat) {
    const rel = ((seat.seat - (mySeat ?? 0)) % n + n) % n;
    const angle = (90 + (rel * 360) / n) * (Math.PI / 180); // the next seat to act is to the right
    const node = el("div", {
      class: `seat team-${seat.team}${seat.turn ? " turn" : ""}${seat.seat === mySeat ? " me" : ""}`,
      "data-seat": seat.seat, "data-testid": "seat",
    },
    el("div", { class: "name" }, seat.seat === mySeat ? `${seat.name} (you)` : seat.name),
    el("div", { class: "tag" }, `seat ${seat.seat} · team ${seat.team}${mySeat !== null && mySeat !== undefined && seat.seat !== mySeat && seat.seat % 2 === mySeat % 2 ? " · partner" : ""}${seat.bot ? " · bot" : ""}`),
    el("div", { class: "tag", "data-testid": "count" }, `${seat.cards} card${seat.cards === 1 ? "" : "s"}`),
    seat.notes.length ? el("div", { class: "tag" }, seat.notes.join(" · ")) : null);
    const across = window.innerWidth < 760 ? 34 : 40; // on a phone the seats keep inside the table's width
    node.style.left = `${50 - across * Math.cos(angle)}%`;
    node.style.top = `${50 + 38 * Math.sin(angle)}%`;
    return node;
  }

  function draw() {
    const turn = state.turn;
    const table = state.table;
    const header = el("h1", {}, table ? `${table.name} · ${GAMES[table.game] || table.game}` : "Table");
    const problem = state.error ? failure(new Error(state.error)) : null;
    if (!turn) {
      const waiting = [];
      if (table) {
        waiting.push(el("ul", {}, table.seats.map((s) => el("li", {}, `seat ${s.seat}: ${s.name || (s.bot ? "bot" : "empty")}${s.ready ? " (ready)" : ""}`))));
        if (table.owner && table.status === "open") {
          waiting.push(el("button", { type: "button", class: "primary", "data-testid": "start", onclick: async () => {
            try { await call("POST", `/api/play/tables/${encodeURIComponent(tableId)}/start`, { bots: true }); } catch (error) { state.error = error.message; draw(); }
          } }, "Fill the empty seats with bots and start"));
        } else {
          waiting.push(el("p", { class: "muted" }, "Waiting for the match to start…"));
        }
      }
      show(header, problem, waiting);
      return;
    }
    const board = turn.board;
    const n = board.seats.length;
    state.focus = Math.max(0, Math.min(state.focus, turn.hand.length - 1));
    const mySeat = turn.my_seat;
    const center = el("div", { class: "center", "data-testid": "center" },
      board.center ? [el("div", { class: "label" }, board.center.label),
        el("div", { class: "plays" }, board.center.plays.map((p) => el("span", { class: "play-of", "data-seat": p.seat }, p.cards.map((c) => card(c)))))] : null);
    const felt = el("div", { class: "felt", "data-testid": "status", "data-version": turn.version },
      board.seats.map((s) => seatNode(s, n, mySeat)), center,
      turn.deadline_ms ? el("div", { class: "timer", "data-testid": "timer" }, "") : null);
    const legal = turn.mine ? legalCards() : new Set();
    const hand = el("div", { class: `hand${turn.mine && handKinds().length ? " acting" : ""}`, "data-testid": "hand", role: "listbox", "aria-label": "your hand", "aria-multiselectable": "true" },
      turn.hand.map((c, i) => {
        const chosen = state.selected.includes(i);
        const node = card(c.card, {
          role: "option", "aria-selected": chosen ? "true" : "false", tabindex: i === state.focus ? 0 : -1, "data-index": i,
        });
        if (chosen) node.classList.add("selected");
        if (legal.has(c.card)) node.classList.add("legal");
        node.onclick = () => toggle(i);
        return node;
      }));
    const options = el("div", { class: "actions", "data-testid": "options" });
    if (turn.mine) {
      const kinds = handKinds();
      if (kinds.length) {
        options.append(el("button", { type: "button", class: "primary", "data-testid": "play", disabled: !state.selected.length || sending(), onclick: playSelected },
          kinds[0].kind === "play" ? "Play the chosen cards" : "Give the chosen cards"));
      }
      const pass = actions().find((a) => a.kind === "pass");
      if (pass) options.append(el("button", { type: "button", "data-testid": "pass", "data-action": "pass", disabled: sending(), onclick: () => send(pass, null) }, "Pass (p)"));
      const others = actions().filter((a) => a.kind !== "pass" && !(FROM_HAND.has(a.kind) && a.cards));
      const cuts = others.filter((a) => a.kind === "cut");
      if (cuts.length) {
        const middle = cuts[Math.floor(cuts.length / 2)];
        options.append(el("button", { type: "button", "data-action": "cut", disabled: sending(), onclick: () => send(middle, null) }, "Cut the deck"));
      }
      for (const a of others.filter((x) => x.kind !== "cut").slice(0, 40)) {
        options.append(el("button", { type: "button", "data-action": a.kind, disabled: sending(), onclick: () => send(a, null) }, a.label));
      }
    }
    const suggestionsNode = turn.mine && handKinds().length
      ? el("div", { class: "actions", "data-testid": "suggestions" },
        el("span", { class: "muted" }, "Legal choices (click to choose):"),
        handKinds().slice(0, 24).map((a) => el("button", { type: "button", class: "chip", "data-action": a.kind, disabled: sending(), onclick: () => select(a.cards), title: a.label }, a.cards.map((c) => card(c)))))
      : null;
    const whose = turn.mine ? (turn.hint || "Your move.") : (turn.to_act.length ? `Waiting for ${turn.to_act.map((s) => board.seats[s]?.name || `seat ${s}`).join(", ")}…` : "…");
    const names = board.seats.map((s) => s.name);
    const facts = el("dl", { class: "facts", "data-testid": "facts" }, board.facts.map(([k, v]) => [el("dt", {}, k), el("dd", {}, withCards(v, names))]));
    const log = el("div", { class: "log", "data-testid": "log" }, state.log.slice(-300).map((line) => el("p", {}, withCards(line, names))));
    const result = board.ended || state.ended
      ? el("div", { class: "result", "data-testid": "result", role: "status" }, el("h2", {}, "Match over"),
        board.facts.filter(([k]) => /Match over|Last deal|Team points|Result|Levels/.test(k)).map(([k, v]) => el("p", {}, `${k}: `, withCards(v, names))),
        state.ratings ? el("div", { "data-testid": "ratings" }, el("h2", {}, "Ratings"),
          state.ratings.filter((r) => !r.bot).map((r) => el("p", {},
            `${r.player_id === me?.player_id ? "You" : r.name}: ${r.before.conservative.toFixed(1)} → ${r.after.conservative.toFixed(1)} `
            + `(${r.change >= 0 ? "+" : ""}${r.change.toFixed(1)})`))) : null,
        state.table && state.table.owner
          ? el("button", { type: "button", class: "primary", "data-testid": "again", onclick: async () => {
            try {
              await call("POST", `/api/play/tables/${encodeURIComponent(tableId)}/start`, { bots: true });
              state.turn = null;
              state.log = [];
              state.ratings = null;
              draw();
            } catch (error) { state.error = error.message; draw(); }
          } }, "Play again")
          : null, " ",
        el("button", { type: "button", onclick: () => { location.hash = "#/"; } }, "Back to the tables"))
      : null;
    show(header, problem, result,
      el("div", { class: "play" },
        el("section", {}, felt,
          el("p", { class: "hint", "data-testid": "whose" }, whose),
          turn.follow.length ? el("div", { class: "follow", "data-testid": "follow" }, turn.follow.map((l) => el("div", {}, l))) : null,
          hand, options, suggestionsNode),
        el("aside", { class: "side" }, el("div", { class: "panel" }, facts), el("div", { class: "panel" }, el("h2", {}, "What happened"), log))));
    const logNode = document.querySelector("[data-testid=log]");
    if (logNode) logNode.scrollTop = logNode.scrollHeight;
    const focused = document.querySelector(`[data-testid=hand] [data-index="${state.focus}"]`);
    if (focused && document.activeElement === document.body) focused.focus({ preventScroll: true });
    tick();
  }

  show(el("h1", {}, "Table"), el("p", { class: "muted" }, "Taking your seat…"));
}

// --- routes -------------------------------------------------------------------------------------------------------

async function route() {
  closeCurrent();
  closeCurrent = () => {};
  if (!me) {
    const found = await call("GET", "/api/me").catch(() => ({ signed_in: false }));
    signedIn(found);
    if (!me) return signInPage(found);
  }
  const table = location.hash.match(/^#\/table\/([A-Za-z0-9_-]{1,100})$/);
  if (table) return tablePage(table[1]);
  return lobbyPage();
}

window.addEventListener("hashchange", route);
window.addEventListener("DOMContentLoaded", route);
