"""PostgreSQL for the lobby and scoring services: an embedded server, migrations and asyncpg pools."""
