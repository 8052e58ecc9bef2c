#!/usr/bin/env node
// A 砸六家 bot in TypeScript: six guests sit down at a table, start a match and play it to its end, each seat from
// its Watch stream alone (docs/typescript.md).
//
//   node dist/examples/zlj_bot.js LOBBY_ADDRESS ENGINE_ADDRESS [--deals N]
//
// Prints one JSON line: the game, the moves each seat made, and the result the lobby recorded.

import { Game, Paiju, TableStatus, type Player, type SeatResult, type ZljCommand } from "paiju-client";

/** Play when the rules let the seat, pass when they do not: the first listed action that is not a pass. */
function choose(actions: readonly ZljCommand[]): ZljCommand | undefined {
  return actions.find((action) => action.command.case !== "pass") ?? actions[0];
}

async function main(lobby: string, engine: string, deals: number): Promise<void> {
  const started = Date.now();
  const paiju = new Paiju({ lobby, engine });
  try {
    // six players, one table of 砸六家, everyone seated and ready; the owner starts the match
    const players: Player[] = [];
    for (let i = 0; i < 6; i += 1) players.push(await paiju.guest());
    const owner = players[0]!;
    const { table } = await paiju.lobby.createTable(
      { name: "a TypeScript bot's table", game: Game.ZLJ, options: { case: "zljOptions", value: { deals } } },
      await owner.auth(),
    );
    const tableId = table!.tableId;
    for (const player of players) {
      await paiju.lobby.takeSeat({ tableId }, await player.auth());
      await paiju.lobby.ready({ tableId, ready: true }, await player.auth());
    }
    await paiju.lobby.startMatch({ tableId }, await owner.auth());

    // each player: its game token (JoinGame), its presence (WatchTable), and its seat played from the stream
    const present = players.map((player) => player.present(tableId));
    const tickets = await Promise.all(players.map((player) => player.joinGame(tableId)));
    const results: SeatResult[] = await Promise.all(
      tickets.map((ticket) => paiju.play(ticket, "zlj", { decide: (turn) => choose(turn.actions) })),
    );
    for (const presence of present) presence.close();

    // the lobby reads the game's end from the event stream and records the match's result
    let finished = (await paiju.lobby.getTable({ tableId }, await owner.auth())).table!;
    for (let i = 0; finished.status !== TableStatus.FINISHED && i < 200; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      finished = (await paiju.lobby.getTable({ tableId }, await owner.auth())).table!;
    }
    if (finished.status !== TableStatus.FINISHED) throw new Error(`the table never showed the match finished`);
    const result = finished.lastResult!;
    process.stdout.write(
      `${JSON.stringify({
        ok: true,
        game_id: tickets[0]!.gameId,
        deals,
        version: Number(results[0]!.version),
        ends: results.map((r) => r.end),
        acts: results.map((r) => r.acts),
        contributions: results.reduce((sum, r) => sum + r.contributions, 0),
        team_points: result.teamPoints,
        individual_points: result.individualPoints,
        seconds: (Date.now() - started) / 1000,
      })}\n`,
    );
  } finally {
    paiju.close();
  }
}

const args = process.argv.slice(2);
const dealsAt = args.indexOf("--deals");
const deals = dealsAt >= 0 ? Number(args.splice(dealsAt, 2)[1]) : 2;
if (args.length !== 2 || !Number.isInteger(deals) || deals < 1) {
  process.stderr.write("usage: node dist/examples/zlj_bot.js LOBBY_ADDRESS ENGINE_ADDRESS [--deals N]\n");
  process.exit(2);
}
await main(args[0]!, args[1]!, deals).catch((err: unknown) => {
  process.stderr.write(`zlj_bot: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.stdout.write(`${JSON.stringify({ ok: false, error: String(err) })}\n`);
  process.exitCode = 1;
});
