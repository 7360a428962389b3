"""A response cache keyed by the full request, so an unchanged re-run makes no model calls.

SQLite commits atomically, so a run killed mid-write never leaves a corrupt entry behind. A run sees
the cache through `for_run`: the keys it answers are written down (a baseline keeps the responses
of its run, `records.folder.record_baseline`), and a baseline's recorded responses answer the
requests of a gate's candidate that are identical to the baseline's.
"""

from __future__ import annotations

import copy
import hashlib
import json
import sqlite3
import threading
from collections.abc import Mapping
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
        self._keys_log: Path | None = None
        self._logged: set[str] = set()
        self._recorded: Mapping[str, dict[str, Any]] = {}
        self._answered_by_recorded: set[str] = set()

    @classmethod
    def under(cls, results: Path) -> ResponseCache:
        """The cache of a results folder (`results/cache/responses.sqlite`), shared by its runs."""
        return cls(results / "cache" / "responses.sqlite")

    def for_run(self, keys_log: Path, recorded: Mapping[str, dict[str, Any]] | None = None) -> ResponseCache:
        """This cache as one run sees it (the same database): each key it answers is appended to
        `keys_log`, and `recorded` (a baseline's responses, by key) answers what the database lacks."""
        view = copy.copy(self)
        view._keys_log, view._recorded, view._answered_by_recorded = keys_log, recorded or {}, set()
        view._logged = set(read_keys(keys_log))  # a resumed run's earlier keys
        return view

    @staticmethod
    def key(identity: str, sampling: dict[str, Any], request: dict[str, Any]) -> str:
        """Everything that can change the answer: model identity, sampling, and the request."""
        payload = json.dumps([identity, sampling, request], sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(payload.encode()).hexdigest()

    def _stored(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute("SELECT response FROM responses WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def get(self, key: str) -> dict[str, Any] | None:
        response = self._stored(key)
        if response is None and key in self._recorded:
            response = self._recorded[key]
            with self._lock:
                self._answered_by_recorded.add(key)
        if response is not None:
            self._log(key)
        return response

    @property
    def answered_by_recorded(self) -> int:
        """How many distinct requests `for_run`'s recorded responses answered."""
        return len(self._answered_by_recorded)

    def put(self, key: str, response: dict[str, Any]) -> None:
        with self._lock, self._db:
            self._db.execute("INSERT OR REPLACE INTO responses VALUES (?, ?)", (key, json.dumps(response)))
        self._log(key)

    def responses_of_run(self, keys_log: Path) -> dict[str, dict[str, Any]]:
        """The stored responses of the keys a run answered (`for_run`'s log): those the database
        still holds."""
        stored = {key: self._stored(key) for key in read_keys(keys_log)}
        return {key: response for key, response in stored.items() if response is not None}

    def _log(self, key: str) -> None:
        if self._keys_log is None:
            return
        with self._lock:
            if key in self._logged:
                return
            self._logged.add(key)
            with self._keys_log.open("a", encoding="utf-8") as file:
                file.write(key + "\n")


def read_keys(path: Path) -> list[str]:
    """The keys a run answered (`for_run`'s log), complete lines only."""
    if not path.is_file():
        return []
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    return [line.rstrip("\n") for line in lines if line.endswith("\n")]
