// Paiju's web view: the lobby's tables, a table live (server-sent events of boards), an ended game replayed with a
// slider, a tournament's standings and result sheets. Every string from the server is set as text, never as HTML.
"use strict";

const SUITS = { S: "♠", H: "♥", C: "♣", D: "♦" };
const main = () => document.getElementById("main");
let closeCurrent = () => {};
let shown = 0; // the route on screen: a page whose data comes after the reader left it draws nothing

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key.startsWith("data-")) node.setAttribute(key, value);
    else if (key === "onclick" || key === "oninput" || key === "onsubmit") node[key] = value;
    else node.setAttribute(key, value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function card(code) {
  // the notation of docs/rules: rank then suit letter (QS, 10D), SJ and BJ the jokers
  if (code === "SJ" || code === "BJ") {
    return el("span", { class: "card joker", "data-card": code, title: code === "BJ" ? "big joker" : "small joker" },
      code === "BJ" ? "大王" : "小王");
  }
  const suit = code.slice(-1);
  const rank = code.slice(0, -1);
  const red = suit === "H" || suit === "D";
  return el("span", { class: red ? "card red" : "card", "data-card": code }, (rank === "T" ? "10" : rank) + (SUITS[suit] || suit));
}

function cards(codes) {
  return el("span", { class: "cards" }, codes.map(card));
}

async function getJson(url) {
  const answer = await fetch(url, { headers: { Accept: "application/json" } });
  const body = await answer.json().catch(() => ({ message: answer.statusText }));
  if (!answer.ok) throw new Error(body.message || answer.statusText);
  return body;
}

function show(...nodes) {
  const m = main();
  m.replaceChildren(...nodes.flat(Infinity).filter((n) => n !== null && n !== undefined));
}

function failure(error) {
  return el("p", { class: "error", "data-testid": "error" }, String(error.message || error));
}

// --- the tables ---------------------------------------------------------------------------------------------------

async function tablesPage() {
  const mine = shown;
  show(el("h1", {}, "Tables"), el("p", { class: "muted" }, "Loading the lobby's tables…"));
  const form = el("form", { class: "inline", onsubmit: (e) => {
    e.preventDefault();
    const id = form.querySelector("input").value.trim();
    if (id) location.hash = "#/tournament/" + encodeURIComponent(id);
  } }, el("input", { name: "tournament", placeholder: "tournament id", "aria-label": "tournament id" }),
  el("button", { type: "submit" }, "Show tournament"));
  try {
    const { tables } = await getJson("/api/tables");
    if (mine !== shown) return;
    const rows = tables.map((t) => el("tr", { "data-table": t.table_id },
      el("td", {}, el("strong", {}, t.name), el("div", { class: "muted" }, t.title)),
      el("td", {}, el("span", { class: "pill " + t.status }, t.status),
        t.last_result ? el("div", { class: "muted", "data-testid": "last-result" }, "Last match: " + t.last_result) : null),
      el("td", {}, t.seats.map((s) => (s.name || "empty") + (s.bot ? " (bot)" : "")).join(" · ")),
      el("td", {},
        el("a", { href: "#/table/" + encodeURIComponent(t.table_id), "data-testid": "watch" }, "Watch"),
        t.last_game_id ? el("span", {}, " · ", el("a", {
          href: "#/replay/" + encodeURIComponent(t.last_game_id) + "?table=" + encodeURIComponent(t.table_id),
          "data-testid": "replay" }, "Replay the last match")) : null)));
    show(el("h1", {}, "Tables"),
      tables.length ? el("table", { class: "list", "data-testid": "tables" },
        el("thead", {}, el("tr", {}, el("th", {}, "Table"), el("th", {}, "Status"), el("th", {}, "Players"), el("th", {}, ""))),
        el("tbody", {}, rows)) : el("p", { class: "muted" }, "No tables yet."),
      el("h2", {}, "Tournaments"), form);
    const input = form.querySelector("input");
    const again = () => (input.value ? refreshIn(5000, again) : tablesPage());  // not while a tournament is typed
    refreshIn(5000, again);
  } catch (error) {
    if (mine !== shown) return;
    show(el("h1", {}, "Tables"), failure(error), el("h2", {}, "Tournaments"), form);
  }
}

// --- a board (live or replayed) -------------------------------------------------------------------------------------

function boardNode(board, extra = {}) {
  const seats = board.seats.map((s) => el("div", {
      class: "seat" + (s.turn ? " turn" : ""), "data-seat": String(s.seat) },
    el("div", { class: "who" }, s.name, s.bot ? el("span", { class: "bot", "data-testid": "bot" }, "bot") : null,
      el("span", { class: "team" }, "team " + s.team)),
    el("div", { class: "count", "data-testid": "count" }, s.cards + (s.cards === 1 ? " card" : " cards"),
      s.turn ? " · to act" : ""),
    s.notes.length ? el("div", { class: "notes" }, s.notes.join(" · ")) : null,
    s.hand ? el("div", { class: "hand", "data-testid": "hand" }, cards(s.hand)) : null));
  const center = board.center ? el("div", { class: "center", "data-testid": "center" },
    el("div", { class: "label" }, board.center.label),
    board.center.plays.map((p) => el("div", { class: "play" },
      el("span", { class: "by" }, board.seats[p.seat].name), cards(p.cards)))) : null;
  const facts = el("dl", {}, board.facts.map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
  if (extra.timer) facts.append(el("dt", {}, "Turn timer"), extra.timer);
  return el("div", { class: "board" },
    el("section", { class: "felt", "aria-label": "the table" }, el("div", { class: "seats" }, seats), center),
    el("section", { class: "facts" }, el("h2", {}, board.title), facts));
}

// --- a table, live ------------------------------------------------------------------------------------------------

function livePage(tableId) {
  const heading = el("h1", {}, "Table " + tableId);
  const status = el("p", { class: "muted", "data-testid": "status" }, "Connecting…");
  const holder = el("div", { "data-testid": "live" });
  const log = el("div", { class: "log", "data-testid": "log" });
  show(heading, status, holder, el("h2", {}, "What happened"), log);
  const timer = el("dd", { class: "timer", "data-testid": "timer" }, "off");
  let deadline = null;
  const tick = setInterval(() => {
    if (deadline === null) return;
    const left = Math.max(0, Math.ceil((deadline - Date.now()) / 1000));
    timer.textContent = left + " s left";
    timer.className = left <= 3 ? "timer low" : "timer";
  }, 250);
  const source = new EventSource("/api/tables/" + encodeURIComponent(tableId) + "/live");
  source.addEventListener("board", (e) => {
    const data = JSON.parse(e.data);
    heading.textContent = data.table + " · " + data.board.title;
    status.textContent = (data.delay_moves ? "Delayed by " + data.delay_moves + " moves" : "Live")
      + " · game " + data.game_id + " · version " + data.version;
    status.setAttribute("data-version", String(data.version));
    deadline = data.deadline_ms;
    if (!data.timer_seconds) timer.textContent = "off";
    else if (deadline === null) timer.textContent = data.timer_seconds + " s a turn";
    holder.replaceChildren(boardNode(data.board, { timer }));
    for (const line of data.lines) log.prepend(el("p", {}, line));
    while (log.childElementCount > 200) log.lastElementChild.remove();
  });
  const over = (gameId, words) => {
    deadline = null;
    status.replaceChildren(words, " ", el("a", {
      href: "#/replay/" + encodeURIComponent(gameId) + "?table=" + encodeURIComponent(tableId),
      "data-testid": "replay-link" }, "Replay it move by move"), " — or stay for the table's next match.");
  };
  source.addEventListener("ended", (e) => over(JSON.parse(e.data).game_id, "The game is over."));
  source.addEventListener("waiting", (e) => {
    const data = JSON.parse(e.data);
    if (data.last_game_id) over(data.last_game_id, "The game is over: " + data.message + ".");
    else status.textContent = data.message;
  });
  source.addEventListener("closing", (e) => { status.textContent = JSON.parse(e.data).message; });
  source.addEventListener("trouble", (e) => { status.textContent = "Reconnecting: " + JSON.parse(e.data).message; });
  source.addEventListener("gone", (e) => { status.textContent = JSON.parse(e.data).message; source.close(); });
  source.onerror = () => { status.textContent = "Connection lost; trying again…"; };
  closeCurrent = () => { source.close(); clearInterval(tick); };
}

// --- a game, replayed ---------------------------------------------------------------------------------------------

async function replayPage(gameId, tableId) {
  // one deal at a time: the server draws the deal asked for, with the index of the game's deals
  const mine = shown;
  show(el("h1", {}, "Replay of " + gameId), el("p", { class: "muted" }, "Loading the first deal…"));
  const base = "/api/games/" + encodeURIComponent(gameId) + "/replay?" +
    (tableId ? "table=" + encodeURIComponent(tableId) + "&" : "");
  const loaded = new Map();
  const fetchDeal = async (n) => {
    if (!loaded.has(n)) {
      loaded.set(n, await getJson(base + "deal=" + n));
      while (loaded.size > 3) loaded.delete(loaded.keys().next().value);  // a few deals kept, not the match
    }
    return loaded.get(n);
  };
  let replay;
  try {
    replay = await fetchDeal(1);
  } catch (error) {
    if (mine === shown) show(el("h1", {}, "Replay of " + gameId), failure(error));
    return;
  }
  if (mine !== shown) return;
  const deals = replay.deals;
  const firstVersion = deals[0].first;
  const lastVersion = replay.last_version;
  const slider = el("input", { type: "range", min: String(firstVersion), max: String(lastVersion),
    value: String(firstVersion), "aria-label": "move", "data-testid": "slider" });
  const label = el("span", { "data-testid": "at" });
  const holder = el("div");
  const told = el("div", { class: "log", "data-testid": "told" });
  let at = firstVersion;
  const go = async (version) => {
    version = Math.max(firstVersion, Math.min(lastVersion, version));
    at = version;
    slider.value = String(version);
    const deal = deals.find((d) => d.first <= version && version <= d.last) || deals[deals.length - 1];
    let drawn;
    try {
      drawn = await fetchDeal(deal.deal);
    } catch (error) {
      told.replaceChildren(failure(error));
      return;
    }
    if (at !== version) return;  // moved on meanwhile
    const steps = drawn.steps;
    const step = steps.filter((s) => s.version <= version).pop() || steps[0];
    label.textContent = "version " + step.version + " of " + lastVersion + " · deal " + step.deal +
      " of " + deals.length;
    label.setAttribute("data-version", String(step.version));
    holder.replaceChildren(boardNode(step.board));
    told.replaceChildren(...step.lines.map((line) => el("p", {}, line)));
  };
  slider.oninput = () => go(Number(slider.value));
  window.paijuReplayTo = (version) => go(version);
  show(el("h1", {}, replay.title + " · replay of " + gameId),
    el("p", { class: "muted" }, "The game has ended: every hand is shown, as dealt and as it shrank."),
    el("div", { class: "controls" },
      el("button", { onclick: () => go(at - 1), "aria-label": "previous move" }, "◀"),
      slider,
      el("button", { onclick: () => go(at + 1), "aria-label": "next move" }, "▶"),
      label),
    told, holder);
  const wanted = Number(new URLSearchParams(location.hash.split("?")[1] || "").get("version"));
  await go(wanted || firstVersion);
}

// --- a tournament -------------------------------------------------------------------------------------------------

async function tournamentPage(id) {
  const mine = shown;
  show(el("h1", {}, "Tournament " + id), el("p", { class: "muted" }, "Loading…"));
  let found;
  try {
    found = await getJson("/api/tournaments/" + encodeURIComponent(id));
  } catch (error) {
    if (mine === shown) show(el("h1", {}, "Tournament " + id), failure(error));
    return;
  }
  if (mine !== shown) return;
  const t = found.tournament;
  const standings = el("table", { class: "list", "data-testid": "standings" },
    el("thead", {}, el("tr", {}, ["Rank", "Team", "VP", "Rounds won", "VP by round"].map((h) => el("th", {}, h)))),
    el("tbody", {}, found.standings.map((s) => el("tr", {},
      el("td", {}, s.rank), el("td", {}, s.name), el("td", {}, s.vp), el("td", {}, s.rounds_won),
      el("td", {}, (s.round_vp || []).join(" · "))))));
  const sheets = found.sheets.map((sheet) => [
    el("h2", {}, "Round " + sheet.round + " result sheet (成绩单)"),
    el("table", { class: "list", "data-testid": "sheet" },
      el("thead", {}, el("tr", {}, ["Table", "Team", "Difference", "VP", "Remarks", "Confirmed by"].map((h) => el("th", {}, h)))),
      el("tbody", {}, sheet.lines.map((l) => el("tr", {},
        el("td", {}, l.table), el("td", {}, l.team_name), el("td", {}, l.difference), el("td", {}, l.vp),
        el("td", {}, l.remarks), el("td", {}, l.confirmed_by)))))]);
  show(el("h1", {}, t.name || id),
    el("p", { class: "muted" }, `${t.game} · ${t.rounds} rounds · ${t.status} · brought up to date every 15 s`),
    el("h2", {}, "Standings"), standings, sheets);
  refreshIn(15000, () => tournamentPage(id));
}

function refreshIn(ms, again) {
  // a page that shows data without a stream reads it again while it stays on screen
  const hash = location.hash;
  const timer = setTimeout(() => { if (location.hash === hash) again(); }, ms);
  closeCurrent = () => clearTimeout(timer);
}

// --- routes -------------------------------------------------------------------------------------------------------

function decoded(part) {
  try {
    return decodeURIComponent(part);
  } catch {
    return part; // a malformed %: the server refuses the id with a reason
  }
}

function route() {
  closeCurrent();
  closeCurrent = () => {};
  shown += 1;
  const [path, query] = location.hash.replace(/^#/, "").split("?");
  const parts = path.split("/").filter(Boolean).map(decoded);
  const params = new URLSearchParams(query || "");
  if (parts[0] === "table" && parts[1]) livePage(parts[1]);
  else if (parts[0] === "replay" && parts[1]) replayPage(parts[1], params.get("table"));
  else if (parts[0] === "tournament" && parts[1]) tournamentPage(parts[1]);
  else tablesPage();
}

window.addEventListener("hashchange", route);
document.addEventListener("DOMContentLoaded", route);
