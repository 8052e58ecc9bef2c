// Paiju's web view: the lobby's tables, a table live (server-sent events of boards), an ended game replayed with a
// slider, a tournament's standings and result sheets, the leaderboards by rating and a player's page (rating,
// rated matches, rating over time, head-to-head). Every string from the server is set as text, never as HTML.
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
  // the notation of docs/rules: rank then suit letter (QS, TD; 10D read as TD), SJ and BJ the jokers; shown with the
  // suit's symbol and the ten as T, as the terminal and the play page show them
  if (code === "SJ" || code === "BJ") {
    return el("span", { class: "card joker", "data-card": code, title: code === "BJ" ? "big joker" : "small joker" },
      code === "BJ" ? "大王" : "小王");
  }
  const suit = code.slice(-1);
  const rank = code.slice(0, -1);
  const red = suit === "H" || suit === "D";
  return el("span", { class: red ? "card red" : "card", "data-card": code }, (rank === "10" ? "T" : rank) + (SUITS[suit] || suit));
}

function cards(codes) {
  return el("span", { class: "cards" }, codes.map(card));
}

const CARD_IN_TEXT = /(?<![\w-])(10|[2-9TJQKA][SHCD]|10[SHCD]|SJ|BJ)(?![\w-])/g;

function withCards(text, names = []) {
  // words with the cards they name (the notation's QS, 10D, SJ) drawn as the page draws every card, so that the
  // page shows one notation: the moves told, the facts, the play to beat (a player named like a card stays a name)
  const parts = [];
  let at = 0;
  for (const found of String(text).matchAll(CARD_IN_TEXT)) {
    if (found[0] === "10" || names.includes(found[0])) continue;  // a number, or a name: not a card
    parts.push(text.slice(at, found.index), card(found[0]));
    at = found.index + found[0].length;
  }
  parts.push(String(text).slice(at));
  return parts;
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
        t.doing ? el("div", { "data-testid": "doing" }, t.doing) : null,
        t.last_result && t.status !== "ended" ?
          el("div", { class: "muted", "data-testid": "last-result" }, "Last match: " + t.last_result) : null),
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

function seatNames(board) {
  return board.seats.map((s) => s.name);
}

function boardNode(board, extra = {}) {
  const names = seatNames(board);
  const seats = board.seats.map((s) => el("div", {
      class: "seat" + (s.turn ? " turn" : ""), "data-seat": String(s.seat) },
    el("div", { class: "who" }, s.name, s.bot ? el("span", { class: "bot", "data-testid": "bot" }, "bot") : null,
      el("span", { class: "team" }, "team " + s.team)),
    el("div", { class: "count", "data-testid": "count" }, s.cards + (s.cards === 1 ? " card" : " cards"),
      s.turn ? " · to act" : ""),
    s.notes.length ? el("div", { class: "notes" }, s.notes.join(" · ")) : null,
    s.hand ? el("div", { class: "hand", "data-testid": "hand" }, cards(s.hand)) : null));
  const center = board.center ? el("div", { class: "center", "data-testid": "center" },
    el("div", { class: "label" }, withCards(board.center.label, names)),
    board.center.plays.map((p) => el("div", { class: "play" },
      el("span", { class: "by" }, board.seats[p.seat].name), cards(p.cards)))) : null;
  const facts = el("dl", {}, board.facts.map(([k, v]) => [el("dt", {}, k), el("dd", {}, withCards(v, names))]));
  if (extra.timer) facts.append(el("dt", {}, "Turn timer"), extra.timer);
  return el("div", { class: "board" },
    el("section", { class: "felt", "aria-label": "the table" }, el("div", { class: "seats" }, seats), center),
    el("section", { class: "facts" }, el("h2", {}, board.title), facts));
}

// --- a table, live ------------------------------------------------------------------------------------------------

function livePage(tableId) {
  const heading = el("h1", {}, "Table " + tableId);
  const status = el("p", { class: "muted", "data-testid": "status" }, "Connecting…");
  const doing = el("p", { class: "doing", "data-testid": "doing" });
  const holder = el("div", { "data-testid": "live" });
  const last = el("div", { "data-testid": "last-match" });
  const log = el("div", { class: "log", "data-testid": "log" });
  show(heading, doing, status, last, holder, el("h2", {}, "What happened"), log);
  let resultFor = "";
  const showResult = (found) => {
    // who won the table's last match, and each player's rating before and after it: told by the live table's
    // `waiting` messages, sent again the moment scoring has rated the match (the lobby's table watch brings it)
    if (!found || !found.game_id) return;
    resultFor = found.game_id;
    last.replaceChildren(resultNode(found));
  };
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
    doing.textContent = data.board.doing;
    if (!data.board.ended && resultFor && data.game_id !== resultFor) {
      last.replaceChildren();  // the next match has begun
      resultFor = "";
    }
    status.textContent = (data.delay_moves ? "Delayed by " + data.delay_moves + " moves" : "Live")
      + " · game " + data.game_id + " · version " + data.version;
    status.setAttribute("data-version", String(data.version));
    deadline = data.deadline_ms;
    if (!data.timer_seconds) timer.textContent = "off";
    else if (deadline === null) timer.textContent = data.timer_seconds + " s a turn";
    holder.replaceChildren(boardNode(data.board, { timer }));
    for (const line of data.lines) log.prepend(el("p", {}, withCards(line, seatNames(data.board))));
    while (log.childElementCount > 200) log.lastElementChild.remove();
  });
  const over = (gameId, words) => {
    deadline = null;
    status.replaceChildren(words, " ", el("a", {
      href: "#/replay/" + encodeURIComponent(gameId) + "?table=" + encodeURIComponent(tableId),
      "data-testid": "replay-link" }, "Replay it move by move"), " — or stay for the table's next match.");
  };
  source.addEventListener("ended", (e) => {
    const gameId = JSON.parse(e.data).game_id;
    over(gameId, "The match is over.");  // its result follows in the table's `waiting` messages
  });
  source.addEventListener("waiting", (e) => {
    const data = JSON.parse(e.data);
    doing.textContent = data.message;
    if (data.last_game_id) {
      over(data.last_game_id, "The last match is over.");
      showResult(data.last);
    } else status.textContent = "No match has been played at this table yet.";
  });
  source.addEventListener("closing", (e) => { status.textContent = JSON.parse(e.data).message; });
  source.addEventListener("trouble", (e) => { status.textContent = "Reconnecting: " + JSON.parse(e.data).message; });
  source.addEventListener("gone", (e) => { status.textContent = JSON.parse(e.data).message; source.close(); });
  source.onerror = () => { status.textContent = "Connection lost; trying again…"; };
  closeCurrent = () => { source.close(); clearInterval(tick); };
}

function resultNode(found) {
  // a finished match: who won and by how much, and each player's rating change (μ − 3σ) when it was rated
  const rows = found.ratings.map((r) => el("tr", { "data-player": r.player_id },
    el("td", {}, playerLink(r, found.game || "zlj", found.mode)), el("td", {}, "team " + r.team),
    el("td", {}, r.result), el("td", {}, fixed(r.before.conservative) + " → " + fixed(r.after.conservative)),
    el("td", { class: r.change >= 0 ? "up" : "down", "data-testid": "change" }, signed(r.change))));
  return el("section", { class: "result" },
    el("h2", {}, "Last match"),
    el("p", { "data-testid": "result" }, found.result || "The match is over."),
    rows.length ? el("table", { class: "list", "data-testid": "rating-changes" },
      el("thead", {}, el("tr", {}, ["Player", "Team", "Result", "Rating (μ − 3σ)", "Change"].map((h) => el("th", {}, h)))),
      el("tbody", {}, rows)) :
      el("p", { class: "muted" }, found.rated === false ? "No rating changed (yet): a match is rated once scoring " +
        "has it, and only a table opened as ranked or casual is rated." : ""));
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
  const doing = el("p", { class: "doing", "data-testid": "doing" });
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
    doing.textContent = step.board.doing;
    holder.replaceChildren(boardNode(step.board));
    told.replaceChildren(...step.lines.map((line) => el("p", {}, withCards(line, seatNames(step.board)))));
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
    doing, told, holder);
  const wanted = Number(new URLSearchParams(location.hash.split("?")[1] || "").get("version"));
  await go(wanted || firstVersion);
}


// --- ratings: leaderboards and players ---------------------------------------------------------------------------

const GAMES = { zlj: "砸六家", tractor: "拖拉机" };
const MODES = ["casual", "ranked"];

function fixed(x) { return (Math.round(x * 10) / 10).toFixed(1); }
function matchCount(n) { return n + (n === 1 ? " match" : " matches"); }
function signed(x) { return (x >= 0 ? "+" : "−") + fixed(Math.abs(x)); }

function playerLink(p, game, mode) {
  return el("a", { href: "#/player/" + encodeURIComponent(p.player_id) + "?game=" + game + "&mode=" + (mode || "casual"),
    "data-testid": "player-link" }, p.name || p.player_id);
}

function choices(base, game, mode, extra = "") {
  // links to the same page in the other game and mode
  return el("p", { class: "choices" },
    Object.entries(GAMES).map(([g, title]) => el("a", { href: base + "?game=" + g + "&mode=" + mode + extra,
      class: g === game ? "chosen" : "" }, title)), " · ",
    MODES.map((m) => el("a", { href: base + "?game=" + game + "&mode=" + m + extra,
      class: m === mode ? "chosen" : "" }, m)));
}

function ratingWords(r) {
  return fixed(r.conservative) + " (μ " + fixed(r.mu) + ", σ " + fixed(r.sigma) + ")";
}

async function leaderboardPage(game, mode) {
  const mine = shown;
  game = GAMES[game] ? game : "zlj";
  mode = MODES.includes(mode) ? mode : "casual";
  const title = el("h1", {}, "Ratings · " + GAMES[game] + " · " + mode);
  const pick = choices("#/ratings", game, mode);
  show(title, pick, el("p", { class: "muted" }, "Loading the leaderboard…"));
  let found;
  try {
    found = await getJson("/api/ratings/" + game + "?mode=" + mode);
  } catch (error) {
    if (mine === shown) show(title, pick, failure(error));
    return;
  }
  if (mine !== shown) return;
  const rows = found.rows.map((r) => el("tr", { "data-player": r.player_id, class: r.provisional ? "provisional" : "" },
    el("td", {}, r.place), el("td", {}, playerLink(r, game, mode),
      r.provisional ? el("span", { class: "pill provisional", "data-testid": "provisional",
        title: "fewer rated matches than a rating needs to settle" }, "provisional") : null),
    el("td", { class: "num" }, fixed(r.conservative)), el("td", { class: "num" }, fixed(r.mu)),
    el("td", { class: "num" }, fixed(r.sigma)), el("td", { class: "num" }, r.matches),
    el("td", { class: "num" }, r.wins)));
  show(title, pick,
    el("p", { class: "muted" }, "Ranked by the conservative estimate μ − 3σ (the skill the model is nearly sure of); " +
      "a provisional rating has fewer than 20 rated matches behind it. Brought up to date every 15 s."),
    rows.length ? el("table", { class: "list", "data-testid": "leaderboard" },
      el("thead", {}, el("tr", {}, ["#", "Player", "μ − 3σ", "μ", "σ", "Matches", "Won"].map((h) => el("th", {}, h)))),
      el("tbody", {}, rows)) : el("p", { class: "muted", "data-testid": "no-ratings" }, "Nobody is rated here yet."));
  refreshIn(15000, () => leaderboardPage(game, mode));
}

function sparkline(values) {
  // the rating over time as a small inline SVG line (oldest left), its lowest and highest marked
  const NS = "http://www.w3.org/2000/svg";
  const width = 320, height = 64, pad = 4;
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("width", String(width));
  svg.setAttribute("height", String(height));
  svg.setAttribute("role", "img");
  svg.setAttribute("class", "sparkline");
  svg.setAttribute("data-testid", "sparkline");
  const low = Math.min(...values), high = Math.max(...values);
  const span = high - low || 1;
  const points = values.map((v, i) => [
    pad + (values.length === 1 ? (width - 2 * pad) / 2 : (i * (width - 2 * pad)) / (values.length - 1)),
    height - pad - ((v - low) * (height - 2 * pad)) / span]);
  const line = document.createElementNS(NS, "polyline");
  line.setAttribute("points", points.map(([x, y]) => x.toFixed(1) + "," + y.toFixed(1)).join(" "));
  line.setAttribute("fill", "none");
  line.setAttribute("stroke", "currentColor");
  line.setAttribute("stroke-width", "2");
  svg.append(line);
  const [x, y] = points[points.length - 1];
  const dot = document.createElementNS(NS, "circle");
  dot.setAttribute("cx", x.toFixed(1));
  dot.setAttribute("cy", y.toFixed(1));
  dot.setAttribute("r", "3");
  dot.setAttribute("fill", "currentColor");
  svg.append(dot);
  const label = document.createElementNS(NS, "title");
  label.textContent = "μ − 3σ over the last " + values.length + " rated matches: from " + fixed(values[0]) +
    " to " + fixed(values[values.length - 1]) + " (lowest " + fixed(low) + ", highest " + fixed(high) + ")";
  svg.append(label);
  return svg;
}

function matchesTable(matches, game, mode) {
  return el("table", { class: "list", "data-testid": "matches" },
    el("thead", {}, el("tr", {}, ["#", "When", "Result", "Score", "Rating after", "Change", "With", ""].map((h) => el("th", {}, h)))),
    el("tbody", {}, matches.map((m) => el("tr", { "data-game": m.game_id },
      el("td", {}, m.number), el("td", {}, new Date(m.at).toLocaleString()),
      el("td", { "data-testid": "match-result" }, m.result + " (team " + m.team + ")"),
      el("td", {}, "A " + (m.team_scores[0] ?? "") + " · B " + (m.team_scores[1] ?? "")),
      el("td", { class: "num" }, fixed(m.after.conservative)),
      el("td", { class: "num " + (m.change >= 0 ? "up" : "down") }, signed(m.change)),
      el("td", {}, others(m.others, game, mode)),
      el("td", {}, el("a", { href: "#/replay/" + encodeURIComponent(m.game_id) + "?table=" + encodeURIComponent(m.table_id) },
        "Replay"))))));
}

function others(people, game, mode) {
  // the other players of a match: each person linked to their page, the bots counted
  const bots = people.filter((o) => o.bot).length;
  const persons = people.filter((o) => !o.bot).map((o, i) => [i ? ", " : "", playerLink(o, game, mode)]);
  return [persons, bots ? (persons.length ? " and " : "") + bots + (bots === 1 ? " bot" : " bots") : ""];
}

async function playerPage(playerId, game, mode, versus) {
  const mine = shown;
  game = GAMES[game] ? game : "zlj";
  mode = MODES.includes(mode) ? mode : "casual";
  const base = "#/player/" + encodeURIComponent(playerId);
  const title = el("h1", {}, playerId);
  const pick = choices(base, game, mode);
  show(title, pick, el("p", { class: "muted" }, "Loading…"));
  const query = "?game=" + game + "&mode=" + mode;
  let found;
  try {
    found = await getJson("/api/players/" + encodeURIComponent(playerId) + query);
  } catch (error) {
    if (mine === shown) show(title, pick, failure(error));
    return;
  }
  if (mine !== shown) return;
  title.textContent = found.name + " · " + GAMES[game] + " · " + mode;
  const r = found.rating;
  const history = found.matches.map((m) => m.after.conservative).reverse();
  if (found.matches.length) history.unshift(found.matches[found.matches.length - 1].before.conservative);
  const form = el("form", { class: "inline", "data-testid": "versus-form", onsubmit: (e) => {
    e.preventDefault();
    const other = form.querySelector("input").value.trim();
    if (other) location.hash = base + query + "&versus=" + encodeURIComponent(other);
  } }, el("input", { name: "other", placeholder: "another player's id", "aria-label": "another player's id",
    value: versus || "" }), el("button", { type: "submit" }, "Head-to-head"));
  const versusHolder = el("div", { "data-testid": "versus" });
  const met = new Map();  // the people met in the matches listed: a head-to-head with each is one click away
  for (const m of found.matches) for (const o of m.others) if (!o.bot && !met.has(o.player_id)) met.set(o.player_id, o);
  const metLinks = met.size ? el("p", { "data-testid": "met" }, "With a player met: ",
    [...met.values()].slice(0, 20).map((o, i) => [i ? " · " : "", el("a", {
      href: base + query + "&versus=" + encodeURIComponent(o.player_id), "data-testid": "versus-link" }, o.name)])) : null;
  show(title, pick,
    el("dl", { class: "summary", "data-testid": "rating" },
      el("dt", {}, "Rating (μ − 3σ)"), el("dd", { "data-testid": "conservative" }, ratingWords(r),
        r.provisional ? el("span", { class: "pill provisional", "data-testid": "provisional" }, "provisional") : null),
      el("dt", {}, "Rated matches"), el("dd", {}, matchCount(r.matches) + " · " + r.wins + " won · " + r.draws + " drawn")),
    history.length > 1 ? el("div", { class: "trend" }, sparkline(history)) : null,
    el("h2", {}, "Rated matches"), found.matches.length ? matchesTable(found.matches, game, mode) :
      el("p", { class: "muted" }, "No rated match listed."),
    el("h2", {}, "Head-to-head"), metLinks, form, versusHolder);
  if (versus) {
    try {
      const h = await getJson("/api/players/" + encodeURIComponent(playerId) + "/versus/" +
        encodeURIComponent(versus) + query);
      if (mine !== shown) return;
      versusHolder.replaceChildren(
        el("p", { "data-testid": "versus-counts" }, "Against ", playerLink(h.other, game, mode), ": " +
          matchCount(h.against) + ", " + h.wins + " won, " + h.losses + " lost, " + h.draws + " drawn. As partners: " +
          matchCount(h.together) + ", " + h.together_wins + " won."),
        h.matches.length ? matchesTable(h.matches, game, mode) : null);
    } catch (error) {
      if (mine === shown) versusHolder.replaceChildren(failure(error));
    }
  }
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
  else if (parts[0] === "ratings") leaderboardPage(params.get("game") || parts[1], params.get("mode"));
  else if (parts[0] === "player" && parts[1]) {
    playerPage(parts[1], params.get("game"), params.get("mode"), params.get("versus"));
  }
  else tablesPage();
}

window.addEventListener("hashchange", route);
document.addEventListener("DOMContentLoaded", route);
