"""Content-addressed run documents (#40): a settings, policy or sandbox document identical
to one already stored is kept once in `documents` and referenced from `runs` and
`drives`; a store written before migration 0018 is moved over on open, page by page,
and reads back the same; the hash is of the redacted text."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import Any

from harness_core import Message, Store

POLICY = {"tier": "workspace-write", "allow_exec": [f"tool-{i} *" for i in range(200)]}
SANDBOX = {"backend": "bubblewrap", "binds": [f"/usr/lib/{i}" for i in range(100)]}


def _create(store: Store, run_id: str, **extra: Any) -> None:
    store.create_run(run_id, goal="g", workspace="/w", model="m",
                     settings=extra.pop("settings", {"max_steps": 10}),
                     policy=extra.pop("policy", POLICY),
                     sandbox=extra.pop("sandbox", SANDBOX), messages=[Message.user("hi")],
                     **extra)


def _rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_identical_documents_are_stored_once_and_referenced(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with Store(path) as store:
        for i in range(5):
            _create(store, f"r{i}")
        store.record_drive("r0", 1, 99, POLICY, None)
        assert store.run("r3").policy == POLICY and store.run("r3").sandbox == SANDBOX
        assert [(d.policy, d.sandbox) for d in store.drives("r0")] == [
            (POLICY, SANDBOX), (POLICY, None)]
        assert store.run("r0").sandbox is None  # the resumed drive's, as before
    assert len(_rows(path, "SELECT hash FROM documents")) == 3  # settings, policy, sandbox
    refs = _rows(path, "SELECT settings, policy, sandbox FROM runs")
    assert all(str(ref).startswith("sha256:") for row in refs for ref in row if ref)
    (body,) = _rows(path, "SELECT body FROM documents d JOIN runs r ON d.hash = r.policy"
                          " WHERE r.run_id = 'r1'")[0]
    ref = _rows(path, "SELECT policy FROM runs WHERE run_id = 'r1'")[0][0]
    assert ref == "sha256:" + hashlib.sha256(body.encode()).hexdigest()


def test_a_rewound_branch_references_its_parents_documents(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        _create(store, "r1")
        store.branch_run("r1", "r2", 0)
        branch = store.run("r2")
        assert branch.policy == POLICY and branch.sandbox == SANDBOX
        assert branch.settings == {"max_steps": 10,
                                   "rewound_from": {"run_id": "r1", "step": 0}}


def _unmigrate(path: Path) -> None:
    """Make the store what io wrote before 0018: every document inline, no table."""
    conn = sqlite3.connect(path)
    with conn:
        for table, columns in (("runs", ("settings", "policy", "sandbox")),
                               ("drives", ("policy", "sandbox"))):
            for column in columns:
                conn.execute(f"UPDATE {table} SET {column} = (SELECT body FROM documents"
                             f" WHERE hash = {table}.{column})")
        conn.execute("DROP TABLE documents")
        conn.execute("DELETE FROM migrations WHERE name = '0018_run_documents'")
    conn.close()


def test_an_older_store_moves_its_documents_over_on_open_page_by_page(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with Store(path) as store:
        _create(store, "r0000")
        _create(store, "r0001", policy={"other": True}, sandbox=None)
        store.record_drive("r0000", 1, 99, {"resumed": 1}, SANDBOX)
    conn = sqlite3.connect(path)
    with conn:  # 1,200 more runs, across the migration's pages of 500
        conn.executemany(
            "INSERT INTO runs(run_id, created_at, updated_at, status, goal, workspace, model,"
            " settings, policy, sandbox, depth, root_run_id) SELECT ?, created_at, updated_at,"
            " status, goal, workspace, model, settings, policy, sandbox, 0, ?"
            " FROM runs WHERE run_id = 'r0000'",
            [(f"x{i:04d}", f"x{i:04d}") for i in range(1200)])
    conn.close()
    _unmigrate(path)
    assert _rows(path, "SELECT policy FROM runs WHERE run_id = 'x0599'")[0][0].startswith("{")
    with Store(path) as store:
        assert store.run("x1199").policy == {"resumed": 1}  # r0000's row when copied
        assert store.run("x0000").sandbox == SANDBOX
        assert store.run("r0001").policy == {"other": True} and store.run("r0001").sandbox is None
        assert [d.policy for d in store.drives("r0000")] == [POLICY, {"resumed": 1}]
    inline = _rows(path, "SELECT count(*) FROM runs WHERE settings NOT LIKE 'sha256:%'"
                         " OR policy NOT LIKE 'sha256:%' OR sandbox NOT LIKE 'sha256:%'")
    assert inline == [(0,)]
    assert _rows(path, "SELECT count(*) FROM drives WHERE policy NOT LIKE 'sha256:%'") == [(0,)]
    assert _rows(path, "SELECT count(*) FROM documents") == [(5,)]


def test_the_hash_is_of_the_redacted_document(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with Store(path) as store:
        store.redact_with(lambda text: text.replace("s3cret-token", "[REDACTED]"))
        _create(store, "r1", settings={"header": "Bearer s3cret-token"})
        assert store.run("r1").settings == {"header": "Bearer [REDACTED]"}
    assert "s3cret" not in path.read_bytes().decode("latin-1")
    ref, body = _rows(path, "SELECT r.settings, d.body FROM runs r JOIN documents d"
                            " ON d.hash = r.settings")[0]
    assert ref == "sha256:" + hashlib.sha256(body.encode()).hexdigest()


def test_a_snapshot_manifest_recorded_before_is_kept_once(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    files = {"a.py": ("0" * 64, 10, "f"), "b/c.txt": ("1" * 64, 3, "f")}
    with Store(path) as store:
        _create(store, "r1")
        _create(store, "r2")
        store.record_snapshot("r1", 0, "baseline", files)
        store.record_snapshot("r1", 1, "after", {**files, "new": ("2" * 64, 1, "f")})
        store.record_snapshot("r2", 0, "baseline", files)  # the same tree, another run
        assert [s.manifest for s in store.snapshots("r2")] == [files]
        assert len(store.snapshots("r1")[1].manifest) == 3
    assert _rows(path, "SELECT count(DISTINCT manifest), count(*) FROM snapshots") == [(2, 3)]
    _unmigrate(path)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE snapshots SET manifest = '{\"x\":[\"' || ? || '\",1,\"f\"]}'",
                     ("9" * 64,))
    conn.close()
    with Store(path) as store:  # an older store's inline manifests move over too
        assert store.snapshots("r1")[0].manifest == {"x": ("9" * 64, 1, "f")}
    assert _rows(path, "SELECT count(*) FROM snapshots WHERE manifest LIKE 'sha256:%'") == [(3,)]
