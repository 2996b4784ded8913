"""Numbered schema migrations, applied in order at open. Never edit a released one.

They run on Postgres too, through ``storage/postgres.py``'s connection, which takes
SQLite's dialect as written here (see ``pg_sql``)."""

from __future__ import annotations

import json
from collections.abc import Callable

from partwire import ids
from partwire.storage.connection import Conn

Migration = Callable[[Conn], None]


def _001_initial(conn: Conn) -> None:
    conn.executescript(
        """
        CREATE TABLE session (
            id TEXT PRIMARY KEY,
            parent_id TEXT,
            data TEXT NOT NULL
        );
        CREATE TABLE message (
            id TEXT PRIMARY KEY,
            session_id TEXT NOT NULL,
            data TEXT NOT NULL
        );
        CREATE INDEX message_session ON message (session_id, id);
        CREATE TABLE part (
            id TEXT PRIMARY KEY,
            message_id TEXT NOT NULL,
            session_id TEXT NOT NULL,
            data TEXT NOT NULL,
            -- while a part streams: the row holds every delta up to this event id;
            -- later deltas are read from event_log. NULL once the row is complete.
            delta_from TEXT
        );
        CREATE INDEX part_session ON part (session_id, message_id, id);
        CREATE TABLE event_log (
            seq INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            session_id TEXT,
            part_id TEXT,
            type TEXT NOT NULL,
            payload TEXT NOT NULL
        );
        CREATE INDEX event_log_part ON event_log (part_id, id) WHERE part_id IS NOT NULL;
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        """
    )


def _002_todo(conn: Conn) -> None:
    conn.execute("CREATE TABLE todo (session_id TEXT PRIMARY KEY, data TEXT NOT NULL)")


# The event types recovery reads back (see storage/recovery.py): statuses and asks.
LIFECYCLE_TYPES = (
    "session.status",
    "permission.asked",
    "permission.replied",
    "question.asked",
    "question.replied",
    "question.rejected",
)
# Migrations 3 and 4 made the partial index on this IN list; released, it stays as written.
_LIFECYCLE_IN = (
    "('session.status', 'permission.asked', 'permission.replied', "
    "'question.asked', 'question.replied', 'question.rejected')"
)
# The partial index's condition since migration 8, and the term a query reading the
# lifecycle rows must have, as written here, for SQLite to use that index.
LIFECYCLE = "(" + " OR ".join(f"type = '{kind}'" for kind in LIFECYCLE_TYPES) + ")"


def _003_sequence(conn: Conn) -> None:
    """History order is the order rows were first written, never the order of their ids
    (clients may mint ids of another scheme). Existing rows keep their id order."""
    for table in ("message", "part"):
        conn.execute(f"ALTER TABLE {table} ADD COLUMN seq INTEGER")
        conn.execute(
            f"UPDATE {table} SET seq = o.n FROM "
            f"(SELECT id, ROW_NUMBER() OVER (ORDER BY id) AS n FROM {table}) AS o "
            f"WHERE o.id = {table}.id"
        )
    for statement in (
        "CREATE UNIQUE INDEX message_seq ON message (seq)",
        "CREATE INDEX message_session_seq ON message (session_id, seq)",
        "DROP INDEX message_session",
        "CREATE UNIQUE INDEX part_seq ON part (seq)",
        "CREATE INDEX part_message_seq ON part (message_id, seq)",
        # recovery reads the open asks and statuses from the log; a partial index keeps
        # that cheap without indexing the deltas that make up most of the log
        f"CREATE INDEX event_log_lifecycle ON event_log (session_id) WHERE type IN {_LIFECYCLE_IN}",
    ):
        conn.execute(statement)


def _004_event_ids_from_sequence(conn: Conn) -> None:
    """Event ids derive from the log's sequence (``ids.logged_event_id``) and are not
    stored. The log keeps only seq, type and the properties' JSON, and loses the UNIQUE
    id index and the part index: appending a delta touches one small row on one page. A
    streaming part records the sequence number its row is complete up to."""
    newest = conn.execute("SELECT id FROM event_log ORDER BY seq DESC LIMIT 1").fetchone()
    epoch = ids.log_epoch(after=newest[0] if newest else None)
    conn.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES ('event_epoch', ?)", (str(epoch),)
    )
    conn.execute("ALTER TABLE part ADD COLUMN delta_seq INTEGER")
    conn.execute(
        "UPDATE part SET delta_seq = COALESCE("
        "(SELECT e.seq FROM event_log e WHERE e.id = part.delta_from), 0) "
        "WHERE delta_from IS NOT NULL"
    )
    conn.execute("ALTER TABLE part DROP COLUMN delta_from")
    conn.execute(
        "CREATE TABLE event_log_v4 "
        "(seq INTEGER PRIMARY KEY, type TEXT NOT NULL, payload TEXT NOT NULL)"
    )
    rows = conn.execute("SELECT seq, id, type, payload FROM event_log ORDER BY seq").fetchall()
    conn.executemany(
        "INSERT INTO event_log_v4 VALUES (?, ?, ?)",
        ((seq, kind, _properties(payload, old, kind)) for seq, old, kind, payload in rows),
    )
    conn.execute("DROP TABLE event_log")
    conn.execute("ALTER TABLE event_log_v4 RENAME TO event_log")
    conn.execute(
        f"CREATE INDEX event_log_lifecycle ON event_log (type) WHERE type IN {_LIFECYCLE_IN}"
    )


def _005_sessions_shared_by_servers(conn: Conn) -> None:
    """What servers sharing one database (Postgres) keep beside the log: which server runs
    which session (a lease, renewed while it runs), and the user messages stored as context
    only (noReply), which no server may answer. One server on a SQLite file leaves them
    empty. (Postgres databases made before this migration have them already.)"""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS session_lease "
        "(session_id TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_ms INTEGER NOT NULL)"
    )
    conn.execute(
        "CREATE TABLE IF NOT EXISTS prompt_no_reply "
        "(message_id TEXT PRIMARY KEY, session_id TEXT NOT NULL)"
    )
    conn.execute(
        "CREATE INDEX IF NOT EXISTS prompt_no_reply_session ON prompt_no_reply (session_id)"
    )


def _006_server_commands(conn: Conn) -> None:
    """Commands between servers too large for a NOTIFY payload (a long permission reply,
    say): the NOTIFY names the row instead. One server on a SQLite file leaves it empty."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS server_command "
        "(id TEXT PRIMARY KEY, payload TEXT NOT NULL, created_ms BIGINT NOT NULL)"
    )


def _007_users_and_access(conn: Conn) -> None:
    """Users, their tokens (only a SHA-256 of each is kept) and who may read or write
    which session (``partwire/access.py``). A token with a session id is a share link's:
    it reads that one session and nothing else."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS app_user (name TEXT PRIMARY KEY, created_ms BIGINT NOT NULL)"
    )
    conn.execute(
        "CREATE TABLE IF NOT EXISTS api_token (id TEXT PRIMARY KEY, user_name TEXT, "
        "digest TEXT NOT NULL UNIQUE, scope TEXT NOT NULL, session_id TEXT, "
        "created_ms BIGINT NOT NULL, expires_ms BIGINT, revoked_ms BIGINT)"
    )
    conn.execute(
        "CREATE TABLE IF NOT EXISTS session_grant (session_id TEXT NOT NULL, "
        "user_name TEXT NOT NULL, role TEXT NOT NULL, PRIMARY KEY (session_id, user_name))"
    )
    conn.execute("CREATE INDEX IF NOT EXISTS session_grant_user ON session_grant (user_name)")


def _008_lifecycle_index_without_an_in_list(conn: Conn) -> None:
    """The lifecycle index's condition as equalities joined by OR. SQLite evaluates a
    partial index's condition on every row inserted, and codes an IN list of six strings
    as a temporary B-tree it builds anew each time: a third of the cost of appending 64
    deltas in one statement. The ORs are six comparisons; queries name the same terms
    (``LIFECYCLE``), so the index still serves them."""
    conn.execute("DROP INDEX IF EXISTS event_log_lifecycle")
    conn.execute(f"CREATE INDEX event_log_lifecycle ON event_log (type) WHERE {LIFECYCLE}")


def _009_streaming_parts_index(conn: Conn) -> None:
    """The parts still streaming (``delta_seq`` set), indexed: the log's prune keeps their
    deltas and asks for the oldest of them each time it runs, which without the index
    reads every part there is."""
    conn.execute(
        "CREATE INDEX IF NOT EXISTS part_streaming ON part (delta_seq) WHERE delta_seq IS NOT NULL"
    )


def _properties(payload: str, old: str, kind: str) -> str:
    """What the log now keeps of a logged event's wire JSON."""
    head = f'{{"id":"{old}","type":"{kind}","properties":'
    if payload.startswith(head) and payload.endswith("}"):
        return payload[len(head) : -1]
    return json.dumps(json.loads(payload)["properties"], separators=(",", ":"))


MIGRATIONS: list[tuple[int, str, Migration]] = [
    (1, "initial", _001_initial),
    (2, "todo", _002_todo),
    (3, "sequence", _003_sequence),
    (4, "event ids from sequence", _004_event_ids_from_sequence),
    (5, "sessions shared by servers", _005_sessions_shared_by_servers),
    (6, "server commands", _006_server_commands),
    (7, "users and access", _007_users_and_access),
    (8, "lifecycle index without an IN list", _008_lifecycle_index_without_an_in_list),
    (9, "streaming parts index", _009_streaming_parts_index),
]

LATEST_VERSION = MIGRATIONS[-1][0]


def migrate(conn: Conn) -> int:
    """Bring the database to the newest version; returns the version reached."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_version "
        "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    current = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version").fetchone()[0]
    for version, name, apply in MIGRATIONS:
        if version <= current:
            continue
        with conn:
            apply(conn)
            conn.execute(
                "INSERT INTO schema_version VALUES (?, ?, datetime('now'))", (version, name)
            )
        current = version
    return int(current)
