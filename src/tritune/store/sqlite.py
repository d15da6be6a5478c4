"""``SQLiteStore``: the default store, one SQLite file shared by every process of a user.

Why these choices:

* **WAL mode**, so readers never wait for a writer and a killed writer leaves only an uncommitted
  tail that SQLite discards; ``synchronous=FULL`` so a commit that returned is on disk.
* **One ``BEGIN IMMEDIATE`` transaction per write**: the write lock is taken up front, so two writers
  queue on ``busy_timeout`` instead of failing with "database is locked" when a read upgrades.
* **``application_id`` and ``user_version``** mark the file as a tritune store of a schema version.
  Any other file (random bytes, another application's database) raises StoreCorruptError naming
  the path, and is never written: the header is checked before SQLite is allowed to touch it.
* **Migrations** run from ``user_version`` up to :data:`SCHEMA_VERSION` inside one transaction,
  one function per step in :data:`MIGRATIONS`; a file from a newer tritune is refused, not rewritten.

The path is ``$TRITUNE_STORE``, else ``<user cache dir>/tritune/store.sqlite`` (platformdirs, or
``~/.cache/tritune`` where platformdirs is not installed).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import os
import shutil
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from tritune.config import Config
from tritune.errors import StoreCorruptError, StoreError, StoreRowError
from tritune.outcome import Status
from tritune.paths import user_cache_dir
from tritune.store.base import Store, apply_write
from tritune.store.keys import TuningKey
from tritune.store.opening import StoreFile, close_unchecked, remove_new_store
from tritune.store.records import (
    CandidateRecord,
    Entry,
    Snapshot,
    WinnerRecord,
    Write,
    check_time,
    now,
    thaw_json,
)
from tritune.store.safety import (
    create_store_file,
    read_only_reason,
    safe_store_path,
    shared_folder,
    space_problem,
)
from tritune.store.sqlite_check import DECODE_ERRORS, check_connection

#: What decoding a stored row can raise when the row is damaged (bad JSON, an unknown status, a bad config).
_DECODE_ERRORS = DECODE_ERRORS

SCHEMA_VERSION = 1
#: ``PRAGMA application_id`` of a tritune store: "TRTN" in ASCII.
APPLICATION_ID = 0x5452544E
_HEADER = b"SQLite format 3\x00"

_SCHEMA_V1 = """
CREATE TABLE keys (digest TEXT PRIMARY KEY, kernel TEXT NOT NULL, key_json TEXT NOT NULL);
CREATE INDEX keys_by_kernel ON keys(kernel);
CREATE TABLE candidates (
    digest TEXT NOT NULL REFERENCES keys(digest) ON DELETE CASCADE,
    config TEXT NOT NULL, status TEXT NOT NULL, time_ms REAL, reason TEXT,
    measurement TEXT, provenance TEXT NOT NULL, recorded_at REAL NOT NULL,
    PRIMARY KEY (digest, config));
CREATE TABLE winners (
    digest TEXT PRIMARY KEY REFERENCES keys(digest) ON DELETE CASCADE,
    config TEXT NOT NULL, time_ms REAL, ties TEXT NOT NULL, provenance TEXT NOT NULL, recorded_at REAL NOT NULL);
"""

#: ``MIGRATIONS[v]`` turns a schema-``v`` store into schema ``v + 1`` (run inside one transaction).
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {}


def default_store_path() -> Path:
    """``$TRITUNE_STORE``, else ``store.sqlite`` in the user cache dir for tritune."""
    env = os.environ.get("TRITUNE_STORE")
    if env:
        return Path(env).expanduser()
    return user_cache_dir() / "store.sqlite"


def _dumps(v: Any) -> str:
    return json.dumps(v, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _wanted_rows(stored: list[tuple[int, str]], asked: list[Config]) -> list[int]:
    """The rowids of the ``(rowid, config text)`` rows whose text is one of ``asked``'s ``dumps()``.

    Few rows against many configs (a searched key's records against its legal configs: 35 against 2,000 for each
    tuned key of the search benchmark's matmul) parse the rows' texts instead of writing every asked config's:
    2,000 ``dumps()`` took 0.02 s of a transfer's start on this project's CPU, the first time. A parsed row is
    wanted when an equal asked config has its very text (equal configs such as ``B=1`` and ``B=1.0`` differ in
    text); a row that does not parse is no asked config's text."""
    if not stored:  # a new key has none: no texts to make
        return []
    if 4 * len(stored) > len(asked):
        wanted = {c.dumps() for c in asked}
        return [i for i, c in stored if c in wanted]
    one = dict(zip(asked, asked))  # no two asked configs equal (the usual case): one config per parsed row
    equal: dict[Config, list[Config]] = {}
    if len(one) != len(asked):
        for c in asked:
            equal.setdefault(c, []).append(c)
    ids = []
    for i, text in stored:
        try:
            cfg = _config_of(text)
        except Exception:  # not a config's text, so not an asked one's
            continue
        if equal:
            hit = any(c.dumps() == text for c in equal.get(cfg, ()))
        else:
            same = one.get(cfg)
            hit = same is not None and same.dumps() == text
        if hit:
            ids.append(i)
    return ids


#: How many stored config texts :func:`_config_of` keeps parsed, per process.
DECODED_CONFIGS = 8192


@functools.lru_cache(maxsize=DECODED_CONFIGS)
def _config_of(text: str) -> Config:
    """The Config of a stored config text, parsed once per text: :func:`_wanted_rows` parses a key's texts to pick
    its rows, and :meth:`SQLiteStore.times` and the records read the same texts again (a new key's transfer reads
    its tuned neighbours' at every start). Keyed by the text itself, so nothing written later can be answered
    from it wrongly; configs are frozen, so sharing one between callers shares nothing mutable."""
    return Config.from_json(text)


class SQLiteStore(Store):
    """The Store contract on one SQLite file. ``create=False`` refuses to create a missing file."""

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        create: bool = True,
        timeout: float = 60.0,
        read_only: bool = False,
    ) -> None:
        self._shown: Path = Path(path).expanduser() if path is not None else default_store_path()
        self.path = self._shown
        self.timeout = timeout
        self.read_only = read_only
        self.writable = not read_only
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        #: Reads go through a connection of their own (:meth:`_reader`), so a lookup never waits for a write
        #: transaction in progress on ``_conn`` (WAL: readers see the last commit): a serving key's first call
        #: looks its key up while the writer thread commits other keys' promotions.
        self._read_lock = threading.Lock()
        self._read_conn: sqlite3.Connection | None = None
        self._pid = os.getpid()
        self._read_pid = self._pid
        self._closed = False
        #: Where listings (:meth:`entries`, :meth:`snapshot`, :meth:`candidates` of a whole key) report a damaged
        #: row they skip, once per row; None: a damaged row raises :class:`~tritune.errors.StoreRowError`.
        self.on_damaged: Callable[[str], None] | None = None
        self._told: set[str] = set()
        #: The files this store's connections were opened with, held until those are closed (``StoreFile``).
        self._files: list[StoreFile] = []
        #: A read-only store's file (one of ``_files``): its immutable reads check it did not change.
        self._file: StoreFile | None = None
        self._immutable = False
        #: For a read-only store: a sentence on what it cannot show (a ``-wal`` left by a killed writer), or None.
        self.notice: str | None = None
        self._real = safe_store_path(self._shown)
        if not read_only:
            reason = read_only_reason(self._real)
            if reason is not None:
                raise StoreError(
                    f"cannot write the store {self.path}: {reason}; point TRITUNE_STORE / --store at a "
                    "writable path"
                )
        created = False
        if not os.path.lexists(self._real):
            if read_only or not create:
                raise StoreError(f"no store at {self.path}: nothing has been tuned into it yet")
            try:
                created = self._create()
            except OSError as e:
                raise self._os_error(e, "create") from None
        try:
            self._conn = self._open_checked()
        except BaseException:
            if created:
                remove_new_store(self._real)
            raise

    def _create(self) -> bool:
        """Create the missing store file; True when this call created it.

        In a folder others can write to, the store is made complete in a private folder beside it (0700) and then
        linked into place: it appears whole, never empty. SQLite deletes the sidecars of an empty store at its
        first open, which would free their names for another user between the claim and SQLite's open."""
        if not shared_folder(self._real):
            return create_store_file(self._real, self._shown)
        work = Path(tempfile.mkdtemp(prefix=f".{self._real.name}.new-", dir=self._real.parent))
        try:
            made = work / self._real.name
            SQLiteStore(made, timeout=self.timeout).close()  # schema and WAL mode, checkpointed: no sidecar left
            try:
                os.link(made, self._real)  # never replaces a store another process made meanwhile
            except FileExistsError:
                return False
        finally:
            shutil.rmtree(work, ignore_errors=True)
        if safe_store_path(self._shown) != self._real:
            raise StoreError(f"the store path {self._shown} changed while it was being created; try again")
        return True

    def _open_checked(self) -> sqlite3.Connection:
        """Open a connection with the file held and checked (:class:`~tritune.store.opening.StoreFile`), then check
        again: a file or sidecar planted meanwhile (in a shared sticky directory) is refused before any lookup is
        served, and the connection that met it is closed without copying that sidecar into the store."""
        claim = not self.read_only and shared_folder(self._real)
        f = StoreFile(self._real, self._shown, claim=claim)
        try:
            conn = self._open(f)
            try:
                f.verify(sidecars=not self._immutable)
                if not self.read_only:
                    conn.execute("PRAGMA wal_autocheckpoint=1000")  # SQLite's default, held off until verified
            except BaseException:
                if self.read_only:
                    conn.close()  # (a read-only connection never checkpoints)
                else:
                    close_unchecked(conn, self._real)
                    f.discard_swapped()
                raise
        except BaseException:
            f.close()
            raise
        self._files.append(f)
        if self.read_only:
            self._file = f
        return conn

    def _os_error(self, e: OSError, verb: str) -> StoreError:
        if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            return StoreError(f"no space left on device: cannot {verb} the store {self.path} ({e.strerror}); free "
                              "some space on its disk, or point TRITUNE_STORE / --store at another disk")  # fmt: skip
        return StoreError(f"cannot {verb} the store {self.path}: {e.strerror or e}")

    def _sqlite_error(self, e: sqlite3.Error, verb: str) -> StoreError:
        """A StoreError for a failed SQLite call; a full disk (or file size limit) is named as such."""
        code = (getattr(e, "sqlite_errorcode", 0) or 0) & 0xFF
        room = space_problem(self._real) if code in (sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR) else None
        if code == sqlite3.SQLITE_FULL or room is not None:
            return StoreError(
                f"no space left on device: {self.path} could not be written ({room or e}); free some space on "
                "its disk, or point TRITUNE_STORE / --store at another disk"
            )
        if isinstance(e, sqlite3.OperationalError) or code in (sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN):
            return StoreError(f"cannot {verb} the store {self.path}: {e}")
        return self._corrupt(str(e))

    # -- opening -------------------------------------------------------------------------------
    def _corrupt(self, why: str) -> StoreCorruptError:
        return StoreCorruptError(
            f"{self.path} is not a tritune store ({why}); it was left untouched: move it away, or point "
            "TRITUNE_STORE / --store at another path"
        )

    def _open(self, f: StoreFile) -> sqlite3.Connection:
        """One open path for readers and writers: the header (read from the held file), then the file's identity
        and schema version are checked before anything is written (not even the journal mode of a foreign or
        newer file). A writer then sets WAL mode and creates or migrates the schema; a reader needs the current
        schema. A writer checkpoints nothing until :meth:`_open_checked` has checked the sidecars again."""
        head = f.header()
        if head and not head.startswith(_HEADER):
            raise self._corrupt("not a SQLite database")
        if self.read_only:
            conn = self._connect_read_only(head, f)
        else:
            conn = sqlite3.connect(self._real, timeout=self.timeout, isolation_level=None, check_same_thread=False)
        try:
            if not self.read_only:
                conn.execute("PRAGMA wal_autocheckpoint=0")
            state = self._state(conn)
            if state == "foreign":
                raise self._corrupt("a SQLite database of another application")
            if self.read_only and state == "fresh":
                raise StoreError(f"{self.path} holds no tritune tables yet: nothing has been tuned into it")
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            self._refuse_newer(version)
            if self.read_only and version != SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path} has store schema {version}: open it once with a writing command "
                    f"(cache import, tune) to migrate it to {SCHEMA_VERSION}"
                )
            if not self.read_only:
                self._retry(lambda: conn.execute("PRAGMA journal_mode=WAL").fetchone())
                conn.execute("PRAGMA synchronous=FULL")
            conn.execute("PRAGMA foreign_keys=ON")
            if not self.read_only:
                self._prepare(conn)
        except sqlite3.Error as e:
            self._close_failed(conn)
            raise self._sqlite_error(e, "read" if self.read_only else "open") from None
        except BaseException:
            self._close_failed(conn)
            raise
        return conn

    def _close_failed(self, conn: sqlite3.Connection) -> None:
        """Close a connection whose open failed: a writer's without a checkpoint (it may have met a refused
        ``-wal``); a reader's as it is (a read-only connection never checkpoints, and must open no sidecar)."""
        if self.read_only:
            conn.close()
        else:
            close_unchecked(conn, self._real)

    def _connect_read_only(self, head: bytes, f: StoreFile) -> sqlite3.Connection:
        """A connection that cannot write the file, and creates or changes no file next to it either.

        ``mode=ro`` while another process writes the store (its ``-wal`` and ``-shm`` exist and it holds them), so
        the reads see its last commit. Otherwise ``immutable=1``: SQLite reads the file alone and opens no sidecar.
        A ``-wal`` with no process behind it (left by a ``kill -9``, or copied without its ``-shm``) may hold
        commits not yet in the file; a reader must not fold them in (that writes the file), so they are not
        read, and :attr:`notice` says so."""
        if len(head) < 100:
            raise StoreError(f"{self.path} is empty: nothing has been tuned into it yet")
        self._immutable = not (f.size("-wal") > 0 and f.live_writer())
        if self._immutable and f.size("-wal") > 0:
            wal = self._real.with_name(self._real.name + "-wal")
            self.notice = (
                f"{wal} holds results that are not in the store file yet (a process writing it was killed, or the "
                "store was copied without its -shm): they are not shown; the next tune or `tritune cache import` "
                "into this store folds them in"
            )
        mode = "ro&immutable=1" if self._immutable else "ro"
        uri = f"file:{quote(str(self._real))}?mode={mode}"
        return sqlite3.connect(uri, uri=True, timeout=self.timeout, isolation_level=None, check_same_thread=False)

    def _refuse_newer(self, version: int) -> None:
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} has store schema {version}, newer than this tritune's {SCHEMA_VERSION}: "
                "upgrade tritune, or point TRITUNE_STORE / --store at another path"
            )

    def _retry(self, fn: Callable[[], Any]) -> Any:
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                return fn()
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    @staticmethod
    def _state(conn: sqlite3.Connection) -> str:
        """``"ours"``, ``"fresh"`` (no tables, no id) or ``"foreign"``.

        Both facts are read in one snapshot: read apart, another process creating the store in
        between would make a fresh file look like a foreign one (id 0 but tables present).
        """
        own_txn = not conn.in_transaction
        if own_txn:
            conn.execute("BEGIN")
        try:
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            n_tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        finally:
            if own_txn and conn.in_transaction:  # (a failed read, a full disk, may have ended it: say that instead)
                conn.execute("COMMIT")
        if app_id == APPLICATION_ID:
            return "ours"
        return "fresh" if app_id == 0 and n_tables == 0 else "foreign"

    def _prepare(self, conn: sqlite3.Connection) -> None:
        """Create the schema in a fresh file, or migrate an older one, under the write lock."""
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if self._state(conn) == "ours" and version == SCHEMA_VERSION:
            return
        self._retry(lambda: conn.execute("BEGIN IMMEDIATE"))
        try:
            state = self._state(conn)  # another process may have done it meanwhile
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if state == "foreign":
                raise self._corrupt("a SQLite database of another application")
            if state == "fresh":
                for stmt in _SCHEMA_V1.split(";"):
                    if stmt.strip():
                        conn.execute(stmt)
                conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
                version = 1
            self._refuse_newer(version)
            while version < SCHEMA_VERSION:
                step = MIGRATIONS.get(version)
                if step is None:
                    raise StoreError(f"{self.path}: no migration from store schema {version}")
                step(conn)
                version += 1
            conn.execute(f"PRAGMA user_version={version}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # (SQLite may have rolled back itself: a full disk)
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            raise

    # -- plumbing ------------------------------------------------------------------------------
    def _connection(self) -> sqlite3.Connection:
        if self._closed or self._conn is None:
            raise StoreError(f"the store {self.path} is closed")
        if os.getpid() != self._pid:  # a forked child must not share its parent's connection
            self._pid = os.getpid()
            self._conn = self._open_checked()
        return self._conn

    def _reader(self) -> sqlite3.Connection:
        """The reads' own connection (under ``_read_lock``), opened at the first read once the writer's
        connection has made the file a WAL-mode store of the current schema, and again in a forked child."""
        if self._closed or self._conn is None:
            raise StoreError(f"the store {self.path} is closed")
        pid = os.getpid()
        if self._read_conn is None or self._read_pid != pid:
            with self._lock:  # lock order: _read_lock, then _lock (close takes them so too)
                self._connection()  # the writer's open (and its fork check) first
            if safe_store_path(self._shown) != self._real:
                raise StoreError(f"the store path {self.path} changed since it was opened; open it again")
            f = StoreFile(self._real, self._shown)
            try:
                # mode=rw: never creates the file (a store removed since it was opened is an error, not a new
                # empty file with default permissions); create_store_file made it.
                uri = f"file:{quote(str(self._real))}?mode=rw"
                try:
                    conn = sqlite3.connect(uri, uri=True, timeout=self.timeout, isolation_level=None,
                                           check_same_thread=False)  # fmt: skip
                except sqlite3.Error as e:
                    raise self._sqlite_error(e, "read") from None
                try:
                    conn.execute("PRAGMA foreign_keys=ON")
                    conn.execute("PRAGMA schema_version").fetchone()  # opens the sidecars, before they are checked
                    f.verify()
                except sqlite3.Error as e:
                    close_unchecked(conn, self._real)
                    raise self._sqlite_error(e, "read") from None
                except BaseException:
                    close_unchecked(conn, self._real)
                    f.discard_swapped()
                    raise
            except BaseException:
                f.close()
                raise
            self._files.append(f)
            self._read_conn, self._read_pid = conn, pid  # (a parent's reader is left to the parent)
        return self._read_conn

    def _run(self, fn: Callable[[sqlite3.Connection], Any], *, write: bool) -> Any:
        if not write and not self.read_only:
            with self._read_lock:
                return self._transaction(self._reader(), fn, write=False)
        with self._lock:
            if not self._immutable:
                return self._transaction(self._connection(), fn, write=write)
            for _ in range(3):  # an immutable read is only good if the file did not change under it
                assert self._file is not None
                before = self._file.state()
                out = self._transaction(self._connection(), fn, write=write)
                if self._file.state() == before:
                    return out
                self._reopen()
            raise StoreError(f"the store {self.path} kept changing while it was read; run the command again")

    def _reopen(self) -> None:
        """A fresh read-only connection (an immutable one keeps pages that may be stale now)."""
        if self._conn is not None:
            self._conn.close()
        for f in self._files:
            f.close()
        self._files, self._file = [], None
        self._conn, self._immutable, self.notice = None, False, None
        self._conn = self._open_checked()

    def _transaction(self, conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection], Any], *, write: bool) -> Any:
        try:
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                out = fn(conn)
                conn.execute("COMMIT")
                return out
            except BaseException:
                if conn.in_transaction:
                    with contextlib.suppress(sqlite3.Error):  # (SQLite may have rolled back itself: disk full)
                        conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as e:
            raise self._sqlite_error(e, "write" if write else "read") from None

    # -- rows --------------------------------------------------------------------------------------
    def _damaged(self, what: str, e: BaseException) -> StoreRowError:
        return StoreRowError(
            f"{self.path}: {what} is damaged and was not used ({type(e).__name__}: {e}); `tritune cache check` "
            "lists every damaged row, and a new tuning of that key replaces it"
        )

    @staticmethod
    def _cand(row: tuple[Any, ...]) -> CandidateRecord:
        cfg, status, t, reason, meas, prov, at = row
        return CandidateRecord(
            _config_of(cfg), Status(status), t, reason,
            None if meas is None else json.loads(meas), json.loads(prov), at,
        )  # fmt: skip

    @staticmethod
    def _winner(key: TuningKey, row: tuple[Any, ...]) -> WinnerRecord:
        cfg, t, ties, prov, at = row
        return WinnerRecord(
            key, Config.from_json(cfg), t, tuple(Config.from_json(c) for c in json.loads(ties)),
            json.loads(prov), at,
        )  # fmt: skip

    def _record(self, row: tuple[Any, ...], where: str = "") -> CandidateRecord:
        """:meth:`_cand`, a damaged row raising :class:`~tritune.errors.StoreRowError` naming it."""
        try:
            return self._cand(row)
        except _DECODE_ERRORS as e:
            raise self._damaged(f"a candidate record{where}", e) from None

    def _won(self, key: TuningKey, row: tuple[Any, ...]) -> WinnerRecord:
        """:meth:`_winner`, a damaged row raising :class:`~tritune.errors.StoreRowError` naming it."""
        try:
            return self._winner(key, row)
        except _DECODE_ERRORS as e:
            raise self._damaged(f"the winner of kernel {key.kernel} at {key.describe_key() or 'its key'}", e) from None

    def _skip(self, e: StoreRowError) -> None:
        """A damaged row met by a listing: told once to :attr:`on_damaged`, or raised when nobody listens."""
        if self.on_damaged is None:
            raise e
        msg = str(e)
        if msg not in self._told:
            self._told.add(msg)
            self.on_damaged(msg)

    _CAND_COLS = "config, status, time_ms, reason, measurement, provenance, recorded_at"
    _WIN_COLS = "config, time_ms, ties, provenance, recorded_at"

    # -- the contract ----------------------------------------------------------------------------
    def record_many(self, writes: Iterable[Write]) -> None:
        writes = list(writes)
        if self.read_only:
            raise self._read_only(f"cannot record into {self.path}")

        def do(conn: sqlite3.Connection) -> None:
            t = now()
            for w in writes:
                d = w.key.digest
                conn.execute(
                    "INSERT OR IGNORE INTO keys(digest, kernel, key_json) VALUES (?, ?, ?)",
                    (d, w.key.kernel, w.key.dumps()),
                )
                stored: dict[Config, CandidateRecord] = {}
                for cfg in (w.winner, *w.ties) if w.winner is not None else ():
                    row = conn.execute(
                        f"SELECT {self._CAND_COLS} FROM candidates WHERE digest=? AND config=?",
                        (d, cfg.dumps()),
                    ).fetchone()
                    if row is not None:
                        stored[cfg] = self._record(row, self._at(w.key))
                stamped, winner = apply_write(w, stored, t)
                conn.executemany(
                    f"INSERT OR REPLACE INTO candidates(digest, {self._CAND_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        (d, c.config.dumps(), c.status.value, c.time_ms, c.reason,
                         None if c.measurement is None else _dumps(thaw_json(c.measurement)),
                         _dumps(thaw_json(c.provenance)) if c.provenance else "{}", c.recorded_at)
                        for c in stamped
                    ],
                )  # fmt: skip
                if winner is not None:
                    conn.execute(
                        f"INSERT OR REPLACE INTO winners(digest, {self._WIN_COLS}) VALUES (?, ?, ?, ?, ?, ?)",
                        (d, winner.config.dumps(), winner.time_ms, _dumps([c.to_json() for c in winner.ties]),
                         _dumps(winner.to_json()["provenance"]), winner.recorded_at),
                    )  # fmt: skip

        self._run(do, write=True)

    def clear(self, kernel: str | None = None) -> int:
        if self.read_only:
            raise self._read_only(f"cannot clear {self.path}")

        def do(conn: sqlite3.Connection) -> int:
            where, args = ("WHERE kernel=?", (kernel,)) if kernel is not None else ("", ())
            sub = f"(SELECT digest FROM keys {where})"
            conn.execute(f"DELETE FROM candidates WHERE digest IN {sub}", args)
            conn.execute(f"DELETE FROM winners WHERE digest IN {sub}", args)
            return int(conn.execute(f"DELETE FROM keys {where}", args).rowcount)

        return int(self._run(do, write=True))

    def lookup_winner(self, key: TuningKey) -> WinnerRecord | None:
        def do(conn: sqlite3.Connection) -> WinnerRecord | None:
            row = conn.execute(
                f"SELECT {self._WIN_COLS} FROM winners WHERE digest=?", (key.digest,)
            ).fetchone()
            return None if row is None else self._won(key, row)

        return self._run(do, write=False)  # type: ignore[no-any-return]

    def candidates(self, key: TuningKey, configs: Iterable[Config] | None = None) -> list[CandidateRecord]:
        asked = None if configs is None else list(configs)

        def do(conn: sqlite3.Connection) -> list[CandidateRecord]:
            if asked is None:
                rows = conn.execute(f"SELECT {self._CAND_COLS} FROM candidates WHERE digest=?", (key.digest,))
                return self._cands(rows, key)
            return [self._record(r, self._at(key)) for r in self._wanted(conn, key, asked, self._CAND_COLS)]

        return sorted(self._run(do, write=False), key=lambda r: r.config.id)

    def times(self, key: TuningKey, configs: Iterable[Config]) -> dict[Config, float | None]:
        """:meth:`Store.times` from the config, status and time columns only: a transfer's start read every record
        of its 3 tuned keys whole (the measurement's and provenance's JSON, frozen copies) to use these, 0.017 s of
        a fresh process's start, profiled on a 2-core CPU."""
        asked = list(configs)

        def do(conn: sqlite3.Connection) -> list[tuple[Config, float | None]]:
            out = []
            for text, status, t in self._wanted(conn, key, asked, "config, status, time_ms"):
                try:
                    cfg, st = _config_of(text), Status(status)
                    out.append((cfg, check_time(t, st, cfg)))  # as a record checks it (candidates() would raise too)
                except _DECODE_ERRORS as e:
                    raise self._damaged(f"a candidate record{self._at(key)}", e) from None
            return out

        return dict(sorted(self._run(do, write=False), key=lambda x: x[0].id))

    @staticmethod
    def _wanted(conn: sqlite3.Connection, key: TuningKey, asked: list[Config], cols: str) -> list[tuple[Any, ...]]:
        """The ``cols`` of ``key``'s rows of the ``asked`` configs. The wanted rows' ids first, then only those rows:
        a key's records are mostly ones the caller does not want (a searched key's statically illegal configs), not
        worth reading whole."""
        stored = conn.execute("SELECT rowid, config FROM candidates WHERE digest=?", (key.digest,)).fetchall()
        ids = _wanted_rows(stored, asked)
        out: list[tuple[Any, ...]] = []
        for j in range(0, len(ids), 500):
            part = ids[j : j + 500]
            out += conn.execute(f"SELECT {cols} FROM candidates WHERE rowid IN ({','.join('?' * len(part))})", part)
        return out

    @staticmethod
    def _at(key: TuningKey) -> str:
        return f" of kernel {key.kernel} at {key.describe_key() or 'its key'}"

    def _cands(self, rows: Iterable[tuple[Any, ...]], key: TuningKey) -> list[CandidateRecord]:
        """A key's candidate records; a damaged one is skipped (:meth:`_skip`)."""
        out = []
        for r in rows:
            try:
                out.append(self._record(r, self._at(key)))
            except StoreRowError as e:
                self._skip(e)
        return out

    def _keys(self, conn: sqlite3.Connection, kernel: str | None) -> list[tuple[str, TuningKey]]:
        """The stored keys (of ``kernel``); one whose key does not decode is skipped (:meth:`_skip`)."""
        rows = conn.execute(
            "SELECT digest, kernel, key_json FROM keys WHERE ? IS NULL OR kernel=? ORDER BY kernel, digest",
            (kernel, kernel),
        )
        out = []
        for d, name, k in rows:
            try:
                out.append((d, TuningKey.from_json(json.loads(k))))
            except _DECODE_ERRORS as e:
                self._skip(self._damaged(f"the key {str(d)[:12]} of kernel {name}", e))
        return out

    def _listed_winner(self, key: TuningKey, row: tuple[Any, ...] | None) -> WinnerRecord | None:
        if row is None:
            return None
        try:
            return self._won(key, row)
        except StoreRowError as e:
            self._skip(e)
            return None

    def entries(self, kernel: str | None = None) -> list[Entry]:
        def do(conn: sqlite3.Connection) -> list[Entry]:
            out = []
            for d, key in self._keys(conn, kernel):
                n, n_meas = conn.execute(
                    "SELECT count(*), count(time_ms) FROM candidates WHERE digest=?", (d,)
                ).fetchone()
                w = conn.execute(f"SELECT {self._WIN_COLS} FROM winners WHERE digest=?", (d,)).fetchone()
                out.append(Entry(key, self._listed_winner(key, w), n, n_meas))
            return out

        return self._run(do, write=False)  # type: ignore[no-any-return]

    def snapshot(self, kernel: str | None = None) -> list[Snapshot]:
        def do(conn: sqlite3.Connection) -> list[Snapshot]:
            out: list[Snapshot] = []
            for d, key in self._keys(conn, kernel):
                rows = conn.execute(f"SELECT {self._CAND_COLS} FROM candidates WHERE digest=?", (d,))
                cands = sorted(self._cands(rows, key), key=lambda r: r.config.id)
                w = conn.execute(f"SELECT {self._WIN_COLS} FROM winners WHERE digest=?", (d,)).fetchone()
                win = self._listed_winner(key, w)
                have = {c.config for c in cands}
                if win is not None and not {win.config, *win.ties} <= have:  # its record was a damaged row
                    self._skip(StoreRowError(f"{self.path}: the winner{self._at(key)} lost its damaged candidate "
                                             "record and was not exported"))  # fmt: skip
                    win = None
                out.append((key, win, cands))
            return out

        return self._run(do, write=False)  # type: ignore[no-any-return]

    def check(self) -> list[str]:
        with self._lock:
            try:
                conn = self._connection()
            except StoreError as e:
                return [str(e)]
            return check_connection(conn, str(self.path), application_id=APPLICATION_ID,
                                    schema_version=SCHEMA_VERSION)

    def close(self) -> None:
        with self._read_lock, self._lock:
            if self._conn is not None and not self._closed:
                self._conn.close()
            if self._read_conn is not None and not self._closed:
                self._read_conn.close()
            if not self._closed:
                for f in self._files:  # after the connections: their locks are gone with them
                    f.close()
                self._files, self._file = [], None
            self._closed = True


def check_path(path: str | Path | None = None) -> list[str]:
    """Problems of the store at ``path`` (default path when None), without creating or changing it.

    A missing file is not a problem (nothing was tuned yet); an unsafe, corrupt or foreign one, or
    one that is not a store yet, is reported.
    """
    p = Path(path).expanduser() if path is not None else default_store_path()
    if not p.exists() and not p.is_symlink():
        return []
    try:
        store = SQLiteStore(p, create=False, read_only=True)
    except StoreError as e:  # unsafe, corrupt, foreign, empty or newer: one line each
        return [str(e)]
    try:
        return store.check()
    finally:
        store.close()
