"""The engine service: runs games of both rules cores as event-sourced aggregates (design.md).

So far: the event store (`store`), on NATS JetStream and in memory.
"""
