"""The bot runner (``paiju bots``): plays the lobby's bot seats through the engine's public gRPC API with the
heuristic bots of the rules cores, deciding from each seat's view only (docs/architecture.md, "Clients and
bots"). `paiju.botrunner.runner` plays, `paiju.botrunner.leases` leases seats, `paiju.botrunner.cli` is the
command line (``add_parser`` / ``run``) and `paiju.botrunner.service` the process.

This package imports nothing at import time, so the command line stays light.
"""
