"""asyncpg connection pools with the defaults the services share."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.parse
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg

APPLICATION_NAME = "paiju"


async def connect(
    dsn: str,
    *,
    application_name: str = APPLICATION_NAME,
    min_size: int = 1,
    max_size: int = 10,
    command_timeout: float | None = 60.0,
    connect_timeout: float = 10.0,
    wait: float = 30.0,
    init: Callable[[asyncpg.Connection[Any]], Awaitable[None]] | None = None,
) -> asyncpg.Pool[Any]:
    """An asyncpg pool on ``dsn``; close it with ``await pool.close()`` (or use it as ``async with``).

    Defaults: 1 to 10 connections (asyncpg's default opens 10 at once), idle connections closed after 5
    minutes, statements cancelled after ``command_timeout`` seconds, ``application_name`` set so that
    ``pg_stat_activity`` says which service a session belongs to, ``json`` and ``jsonb`` values
    encoded and decoded with the `json` module (Python dicts and lists in, out). ``init`` runs after that on
    every new connection.

    While the server is starting (connection refused, or "the database system is starting up") the first
    connection is retried for up to ``wait`` seconds, so that a service may start beside its database.
    """

    async def prepare(connection: asyncpg.Connection[Any]) -> None:
        for name in ("json", "jsonb"):
            await connection.set_type_codec(name, encoder=json.dumps, decoder=json.loads, schema="pg_catalog")
        if init is not None:
            await init(connection)

    deadline = time.monotonic() + wait
    delay = 0.05
    while True:
        try:
            pool: asyncpg.Pool[Any] = await asyncpg.create_pool(
                dsn,
                min_size=min_size,
                max_size=max_size,
                max_inactive_connection_lifetime=300.0,
                command_timeout=command_timeout,
                timeout=connect_timeout,
                server_settings={"application_name": application_name},
                init=prepare,
            )
        except (OSError, asyncpg.CannotConnectNowError):
            if time.monotonic() + delay > deadline:
                raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)
        else:
            return pool


async def close(pool: asyncpg.Pool[Any], timeout: float = 5.0) -> None:
    """Close ``pool``, waiting at most ``timeout`` seconds for its connections to finish; a server that is gone
    (an outage) is not waited for: the connections are terminated."""
    try:
        await asyncio.wait_for(pool.close(), timeout)
    except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
        pool.terminate()


def with_database(dsn: str, database: str) -> str:
    """``dsn`` naming ``database`` instead of its own (host, port, user and options kept)."""
    parts = urllib.parse.urlsplit(dsn)
    if parts.scheme not in ("postgres", "postgresql"):
        raise ValueError(f"not a postgresql:// DSN: {dsn!r}")
    return urllib.parse.urlunsplit(parts._replace(path="/" + urllib.parse.quote(database, safe="")))
