"""Snapshot queries: the recorded states of a run's workspace files, and run branches.

A snapshot row is a manifest (path → content digest, size, kind) of the workspace's
files at one point of a run; the contents live as blob files outside the store (see
`harness_core.run._snapshots`), written before the row that names them is committed.
`branch_run` copies a run's conversation up to a step into a new run (`io rewind`).
`SnapshotQueries` is a mixin of `Store`.
"""

from __future__ import annotations

import json
from typing import Any

from harness_core._record import record
from harness_core.errors import UsageError
from harness_core.store._codec import dumps
from harness_core.store._documents import document_ref, resolved
from harness_core.store._parts import StoreParts
from harness_core.store._parts import now as _now
from harness_core.store._records import CheckpointState
from harness_core.store._schema import CHECKPOINT_FORMAT

__all__ = ["SNAPSHOT_SCHEMA_SQL", "SnapshotQueries", "SnapshotRecord"]

SNAPSHOT_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS snapshots (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    step_index INTEGER NOT NULL,
    kind TEXT NOT NULL,
    created_at TEXT NOT NULL,
    manifest TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    note TEXT,
    PRIMARY KEY (run_id, seq)
)
"""

Manifest = dict[str, tuple[str, int, str]]
"""Workspace path → (sha256 of the content, size, "f" file | "x" executable | "l" link |
"u" unknown: it changed while read, nothing kept | "d" refused by `deny_read`: never read
| "o" written by io for the operator, in an ``operator`` row)."""


@record
class SnapshotRecord:
    """One recorded state of the workspace's files.

    Attributes:
        seq: Its number in the run.
        step_index: The step it belongs to.
        kind: ``baseline`` (when a drive began), ``before`` (before the step's calls, when
            the files differed from the last state), ``after`` (the step changed files),
            ``undo`` (`io undo` restored the state before step `note`), ``capped`` (the
            size cap or a fault writing a blob stopped snapshots: nothing later is
            recorded), ``operator`` (not a state: the paths io wrote for the operator,
            never compared or restored).
        created_at: When it was recorded.
        manifest: The files.
        bytes: Blob bytes this row added to the run's snapshots.
        note: For ``undo``, the step undone; for ``capped``, why (the cause, for a fault).
    """

    seq: int
    step_index: int
    kind: str
    created_at: str
    manifest: Manifest
    bytes: int
    note: str | None

    def to_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "step": self.step_index, "kind": self.kind,
                "created_at": self.created_at, "files": len(self.manifest),
                "bytes": self.bytes, "note": self.note}


def _manifest(text: str) -> Manifest:
    raw = json.loads(text)
    return {str(k): (str(v[0]), int(v[1]), str(v[2])) for k, v in raw.items()}


_BRANCH_COPY = (
    ("messages", "run_id, seq, step_index, role, body", "step_index < ?"),
    ("edits", "run_id, step_index, call_id, path, lines_added, lines_removed, bytes_before,"
              " bytes_after", "step_index < ?"),
)


class SnapshotQueries(StoreParts):
    """Recording and reading snapshots; branching a run at a step."""

    def record_snapshot(self, run_id: str, step: int, kind: str, manifest: Manifest, *,
                        added_bytes: int = 0, note: str | None = None) -> SnapshotRecord:
        """Commit one state of the workspace (its blobs are already written)."""
        created = _now()
        files = {k: list(v) for k, v in sorted(manifest.items())}
        with self._tx() as conn:
            seq = int(conn.execute("SELECT COALESCE(MAX(seq), -1) + 1 FROM snapshots"
                                   " WHERE run_id = ?", (run_id,)).fetchone()[0])
            # Kept once by content (#40): a workspace left as the last step (or the last
            # run at the same commit) left it has the same manifest.
            body = document_ref(conn, files, getattr(self, "_redact", None))
            conn.execute(
                "INSERT INTO snapshots(run_id, seq, step_index, kind, created_at, manifest,"
                " bytes, note) VALUES (?,?,?,?,?,?,?,?)",
                (run_id, seq, step, kind, created, body, added_bytes, note),
            )
        return SnapshotRecord(seq, step, kind, created, dict(manifest), added_bytes, note)

    def snapshots(self, run_id: str) -> list[SnapshotRecord]:
        """Every recorded state of the run's files, oldest first."""
        manifest = resolved("manifest")
        rows = self._query(f"SELECT seq, step_index, kind, created_at, {manifest}, bytes,"  # noqa: S608
                           " note FROM snapshots WHERE run_id = ? ORDER BY seq", (run_id,))
        return [SnapshotRecord(int(r[0]), int(r[1]), str(r[2]), str(r[3]), _manifest(r[4]),
                               int(r[5]), None if r[6] is None else str(r[6])) for r in rows]

    def snapshot_bytes(self, run_id: str) -> int:
        """Blob bytes the run's snapshots hold (what `[rewind] max_bytes` caps)."""
        rows = self._query("SELECT COALESCE(SUM(bytes), 0) FROM snapshots WHERE run_id = ?",
                           (run_id,))
        return int(rows[0][0])

    def branch_run(self, parent_id: str, new_id: str, step: int) -> None:
        """Make run `new_id` a branch of `parent_id` that has its steps before `step`.

        The branch holds the parent's conversation and edits before `step`, its budget
        draws, and a checkpoint at `step - 1`, so resuming it asks the model for step
        `step`. The earlier steps' completions and ledger stay the parent's (spend counts
        each call once; the parent's trace shows them). It is recorded as
        interrupted, with the parent as `parent_run_id` and ``rewound_from`` in its
        settings.

        Raises:
            UsageError: `step` is outside the parent's recorded steps.
        """
        parent = self.run(parent_id)
        if step < 0 or step > parent.steps_used:
            raise UsageError(f"run {parent_id} has steps 0 to {max(parent.steps_used - 1, 0)};"
                             f" there is no step {step} to rewind to")
        settings = dict(parent.settings)
        settings["rewound_from"] = {"run_id": parent_id, "step": step}
        created = _now()
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO runs(run_id, created_at, updated_at, status, goal, workspace,"
                " model, session_id, parent_run_id, settings, policy, sandbox, reason,"
                " steps_used, tokens_used, wall_used, depth, root_run_id)"
                " SELECT ?, ?, ?, 'interrupted', goal, workspace, model, NULL, run_id, ?,"
                " policy, sandbox, ?, ?, (SELECT COALESCE(SUM(tokens), 0) FROM budget_draws"
                " WHERE run_id = ? AND step_index < ?), 0, 0, ? FROM runs WHERE run_id = ?",
                (new_id, created, created,
                 document_ref(conn, settings, getattr(self, "_redact", None)),
                 f"rewound from run {parent_id} to step {step}", step, parent_id, step,
                 new_id, parent_id),
            )
            for table, columns, where in _BRANCH_COPY:
                rest = columns.split(", ", 1)[1]
                conn.execute(
                    f"INSERT INTO {table}({columns}) SELECT ?, {rest} FROM {table}"  # noqa: S608
                    f" WHERE run_id = ? AND {where}", (new_id, parent_id, step))
            if step > 0:
                conn.execute(
                    "INSERT INTO checkpoints(run_id, step_index, format, created_at, state)"
                    " VALUES (?,?,?,?,?)", (new_id, step - 1, CHECKPOINT_FORMAT, created,
                                            dumps(CheckpointState(step - 1, done=False).to_json())))
            conn.execute(
                "INSERT INTO budget_draws(run_id, step_index, steps, tokens, wall_seconds)"
                " SELECT ?, step_index, steps, tokens, 0 FROM budget_draws"
                " WHERE run_id = ? AND step_index < ?", (new_id, parent_id, step))

    def store_id(self) -> str:
        """This store's random id (the key of its snapshots' directory)."""
        rows = self._query("SELECT value FROM meta WHERE key = 'store_id'")
        return str(rows[0][0]) if rows else "store"

    def run_ids(self) -> set[str]:
        """Every run id the store holds."""
        return {str(r[0]) for r in self._query("SELECT run_id FROM runs")}
