"""The engine service: runs games of both rules cores as event-sourced aggregates (docs/architecture.md,
"Engine").

`games` loads a game, decides and appends; `service` is `EngineService`; `matches` creates the games of the
lobby's match starts; `timers` plays expired turns; `seeds` draws the shuffle seeds.
"""
