"""The client SDK of Paiju's public API, for Python clients and bots (the terminal client and the bot runner use
it): refusals read from the error model (`refusal_of`: the status, the stable reason, the rule a move broke, when to
try again), which failures a call may simply retry, and the back-off between tries.

A client in another language does the same from `protos/` and the README's "The contract for clients"."""

from paiju.sdk.refusals import RETRYABLE, SEAT_GONE, Refusal, backoff, refusal_of

__all__ = ["RETRYABLE", "SEAT_GONE", "Refusal", "backoff", "refusal_of"]
