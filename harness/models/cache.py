"""A response cache keyed by the full request, so an unchanged re-run makes no model calls.

SQLite commits atomically, so a run killed mid-write never leaves a corrupt entry behind.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any


class ResponseCache:
    def __init__(self, path: str | Path):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, timeout=60, check_same_thread=False)
        self._lock = threading.Lock()  # one connection shared by the runner's threads
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, response TEXT NOT NULL)")
        self._db.commit()

    @classmethod
    def under(cls, results: Path) -> ResponseCache:
        """The cache of a results folder (`results/cache/responses.sqlite`), shared by its runs."""
        return cls(results / "cache" / "responses.sqlite")

    @staticmethod
    def key(identity: str, sampling: dict[str, Any], request: dict[str, Any]) -> str:
        """Everything that can change the answer: model identity, sampling, and the request."""
        payload = json.dumps([identity, sampling, request], sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(payload.encode()).hexdigest()

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute("SELECT response FROM responses WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, response: dict[str, Any]) -> None:
        with self._lock, self._db:
            self._db.execute("INSERT OR REPLACE INTO responses VALUES (?, ?)", (key, json.dumps(response)))
