"""The client SDK of Paiju's public API, for Python clients and bots (the terminal client and the bot runner use
it): refusals read from the error model (`refusal_of`: the status, the stable reason, the rule a move broke, when to
try again), which failures a call may simply retry, and the back-off between tries; each game over the contract
(`paiju.sdk.games`: its codecs, by name); calls tried again after a lost connection and moves that apply once
however often they are sent (`call`, `act`); following a game's Watch stream across broken connections and
restarting engines (`GameWatch`).

A client in another language does the same from `protos/` and docs/clients.md."""

from paiju.sdk.calls import RETRY_SECONDS, ActStream, Stale, act, call, new_command_id, retryable_for
from paiju.sdk.refusals import RETRYABLE, SEAT_GONE, Refusal, backoff, refusal_of
from paiju.sdk.watch import GameWatch

__all__ = [
    "RETRYABLE",
    "RETRY_SECONDS",
    "SEAT_GONE",
    "ActStream",
    "GameWatch",
    "Refusal",
    "Stale",
    "act",
    "backoff",
    "call",
    "new_command_id",
    "refusal_of",
    "retryable_for",
]
