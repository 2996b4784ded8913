"""What only the Postgres store does: one server per database, errors that name the
database without its password, the SQL it is given in sqlite3's dialect."""

from __future__ import annotations

import pytest

from partwire.bus import Bus
from partwire.errors import StorageError
from partwire.storage.postgres import PostgresStore, pg_sql, redacted
from tests.postgres_server import PostgresServer


async def test_a_second_server_on_the_same_database_is_refused(postgres: PostgresServer) -> None:
    url = postgres.new_database()
    first = PostgresStore(url, Bus())
    await first.open()
    try:
        second = PostgresStore(url, Bus())
        with pytest.raises(StorageError, match="another partwire server uses the database"):
            await second.open()
    finally:
        await first.close()
    third = PostgresStore(url, Bus())  # the lock went with the first server
    await third.open()
    await third.close()


async def test_a_database_that_cannot_be_reached_is_named_without_its_password(
    postgres: PostgresServer,
) -> None:
    url = f"postgresql://partwire:hunter2@127.0.0.1:{postgres.port}/no_such_database"
    store = PostgresStore(url, Bus())
    with pytest.raises(StorageError) as raised:
        await store.open()
    message = raised.value.message
    assert "partwire:***@127.0.0.1" in message and "no_such_database" in message
    assert "hunter2" not in message


def test_urls_lose_only_their_password() -> None:
    assert (
        redacted("postgresql://u:secret@db.example:5433/pw")
        == "postgresql://u:***@db.example:5433/pw"
    )
    assert redacted("postgresql://u@db/pw") == "postgresql://u@db/pw"


def test_sqlite_parameters_become_psycopg_ones_and_percent_signs_stay_literal() -> None:
    sql = "SELECT id FROM message WHERE data LIKE '%\"role\"%' AND session_id = ? AND seq > ?"
    assert pg_sql(sql) == (
        "SELECT id FROM message WHERE data LIKE '%%\"role\"%%' AND session_id = %s AND seq > %s"
    )


async def test_the_sqlite_migrations_make_64_bit_sequences_in_postgres(
    postgres: PostgresServer,
) -> None:
    url = postgres.new_database()
    store = PostgresStore(url, Bus())
    await store.open()
    await store.close()
    from partwire.storage.postgres import connect

    conn = connect(url, autocommit=True)
    try:
        types = dict(
            conn.execute(
                "SELECT table_name, data_type FROM information_schema.columns "
                "WHERE column_name = 'seq' ORDER BY table_name"
            ).fetchall()
        )
        epoch = conn.execute("SELECT value FROM meta WHERE key = 'event_epoch'").fetchone()[0]
    finally:
        conn.close()
    assert types == {"event_log": "bigint", "message": "bigint", "part": "bigint"}
    assert int(epoch) == store.epoch > 0
