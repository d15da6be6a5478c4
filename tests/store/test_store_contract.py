"""The Store contract suite, run against every backend."""

from __future__ import annotations

from pathlib import Path

from tritune.store import MemoryStore, SQLiteStore, Store
from tritune.testing.store_contract import StoreContract


class TestSQLiteStore(StoreContract):
    def make_store(self, tmp_path: Path) -> Store:
        return SQLiteStore(tmp_path / "store.sqlite")


class TestMemoryStore(StoreContract):
    def make_store(self, tmp_path: Path) -> Store:
        return MemoryStore()
