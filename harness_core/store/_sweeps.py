"""What a sweep killed: processes a dead `io` left running, ended by a later `io`.

One row per (dead `io` process, run it drove): its pid and what was killed, as JSON
(pid, process name, why). Read back with `Store.sweeps`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from harness_core.store._parts import StoreParts

__all__ = ["SWEEP_SCHEMA_SQL", "SweepQueries"]

SWEEP_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS sweeps (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    owner_pid INTEGER NOT NULL,
    killed TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS sweeps_run ON sweeps(run_id)
"""


class SweepQueries(StoreParts):
    """Recording and reading sweeps."""

    def record_sweep(
        self, run_id: str, owner_pid: int, killed: Sequence[dict[str, Any]]
    ) -> None:
        """Record what was killed of a run whose `io` process died (``""``: no run)."""
        at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO sweeps(run_id, created_at, owner_pid, killed) VALUES (?,?,?,?)",
                (run_id, at, owner_pid, json.dumps(list(killed))),
            )

    def sweeps(self, run_id: str) -> list[dict[str, Any]]:
        """The sweeps recorded for `run_id`, oldest first."""
        rows = self._conn.execute(
            "SELECT created_at, owner_pid, killed FROM sweeps WHERE run_id = ? ORDER BY id",
            (run_id,),
        ).fetchall()
        return [{"at": at, "owner_pid": pid, "killed": json.loads(killed)}
                for at, pid, killed in rows]
