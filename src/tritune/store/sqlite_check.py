"""``tritune cache check`` for SQLite stores: SQLite's own checks plus tritune's row-level ones."""

from __future__ import annotations

import json
import sqlite3

from tritune.config import Config
from tritune.errors import TrituneError
from tritune.outcome import Status
from tritune.store.keys import TuningKey
from tritune.store.records import CandidateRecord, WinnerRecord

#: What decoding a damaged row can raise.
DECODE_ERRORS = (ValueError, TypeError, KeyError, AttributeError, RecursionError, TrituneError)
#: A stand-in key for decoding a winner row on its own.
_KEY = TuningKey("check", "-", "-", "-", "-", "-", (), (), ())

MAX_PROBLEMS = 50


def check_connection(conn: sqlite3.Connection, where: str, *, application_id: int, schema_version: int) -> list[str]:
    """Every problem found (at most :data:`MAX_PROBLEMS`), each naming ``where``; never raises. ``application_id``
    and ``schema_version``: what tritune's stores of this version carry."""
    APPLICATION_ID, SCHEMA_VERSION = application_id, schema_version
    problems: list[str] = []
    try:
        rows = [r[0] for r in conn.execute("PRAGMA integrity_check")]
        if rows != ["ok"]:
            problems += [f"{where}: integrity_check: {r}" for r in rows]
        for table, rowid, parent, _ in conn.execute("PRAGMA foreign_key_check"):
            problems.append(f"{where}: {table} row {rowid} points at a missing {parent} row")
        app = conn.execute("PRAGMA application_id").fetchone()[0]
        ver = conn.execute("PRAGMA user_version").fetchone()[0]
        if app != APPLICATION_ID:
            problems.append(f"{where}: application_id is {app:#x}, not tritune's {APPLICATION_ID:#x}")
        if ver != SCHEMA_VERSION:
            problems.append(f"{where}: schema version {ver}, expected {SCHEMA_VERSION}")
        for digest, kernel, key_json in conn.execute("SELECT digest, kernel, key_json FROM keys"):
            try:
                key = TuningKey.from_json(json.loads(key_json))
                if key.digest != digest:
                    problems.append(
                        f"{where}: key of kernel {kernel} is filed under digest {digest[:12]}, not its own"
                    )
            except DECODE_ERRORS as e:
                problems.append(f"{where}: key {str(digest)[:12]} of kernel {kernel} does not decode: {e}")
        for digest, cfg, status, t, reason, meas, prov, at in conn.execute(
            "SELECT digest, config, status, time_ms, reason, measurement, provenance, recorded_at FROM candidates"
        ):
            try:
                c = Config.from_json(cfg)
                CandidateRecord(c, Status(status), t, reason, None if meas is None else json.loads(meas),
                                json.loads(prov), at)  # fmt: skip
                if c.dumps() != cfg:
                    problems.append(
                        f"{where}: candidate {c.id} at key {digest[:12]} is not in canonical form"
                    )
            except DECODE_ERRORS as e:
                problems.append(f"{where}: candidate {cfg} at key {str(digest)[:12]} does not decode: {e}")
        for digest, cfg, t, ties, prov, at in conn.execute(
            "SELECT digest, config, time_ms, ties, provenance, recorded_at FROM winners"
        ):
            try:
                c = Config.from_json(cfg)
                tied = json.loads(ties)
                if not isinstance(tied, list):
                    raise ValueError(f"ties is {type(tied).__name__}, not a list")
                WinnerRecord(_KEY, c, t, tuple(Config.from_json(x) for x in tied), json.loads(prov), at)
            except DECODE_ERRORS as e:
                problems.append(f"{where}: the winner {cfg} at key {str(digest)[:12]} does not decode: {e}")
        for digest, cfg in conn.execute(
            "SELECT w.digest, w.config FROM winners w LEFT JOIN candidates c "
            "ON c.digest = w.digest AND c.config = w.config WHERE c.config IS NULL"
        ):
            problems.append(f"{where}: the winner {cfg} at key {digest[:12]} has no candidate record")
    except sqlite3.DatabaseError as e:
        problems.append(f"{where}: {e}")
    return problems[:MAX_PROBLEMS]
