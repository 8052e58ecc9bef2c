"""Terminal front-ends: the terminal client (`paiju.terminal.client`), the 砸六家 narrator, and games between bots
narrated in the terminal (`paiju.terminal.matches`, one per game of the registry)."""
