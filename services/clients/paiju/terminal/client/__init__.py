"""The terminal client for a person: ``paiju play zlj|tractor`` and ``paiju watch TABLE``, over the public
gRPC API only (the lobby, then the engine). Wire it into a command line with `add_parsers`."""

from paiju.terminal.client.app import add_parsers, main, run_play, run_watch

__all__ = ["add_parsers", "main", "run_play", "run_watch"]
