"""The store's schema as append-only named migrations, and `CHECKPOINT_FORMAT`.

A migration, once released, is never edited: a change is a new migration appended to
`MIGRATIONS`. Tables are an implementation detail reached through `Store` methods.
"""

from __future__ import annotations

__all__ = [
    "CHECKPOINT_FORMAT", "MIGRATIONS", "REPORT_INDEXES_SQL", "RESUME_STATE_SQL",
    "RUNNER_HOST_SQL", "USAGE_ESTIMATED_SQL", "VERIFICATION_REPORT_SQL",
]

CHECKPOINT_FORMAT = 7
"""The layout of a checkpoint; a store recording another value is refused, never half-read."""

_CORE = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    status TEXT NOT NULL,
    goal TEXT NOT NULL,
    workspace TEXT NOT NULL,
    model TEXT,
    session_id TEXT,
    parent_run_id TEXT,
    settings TEXT NOT NULL,
    policy TEXT NOT NULL,
    sandbox TEXT,
    exit_code INTEGER,
    reason TEXT,
    pause TEXT,
    owner_pid INTEGER,
    owner_started REAL,
    steps_used INTEGER NOT NULL DEFAULT 0,
    tokens_used INTEGER NOT NULL DEFAULT 0,
    wall_used REAL NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS runs_created ON runs(created_at);
CREATE INDEX IF NOT EXISTS runs_session ON runs(session_id);

CREATE TABLE IF NOT EXISTS messages (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    step_index INTEGER NOT NULL,
    role TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);

CREATE TABLE IF NOT EXISTS steps (
    run_id TEXT NOT NULL,
    step_index INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    text TEXT NOT NULL,
    tool_calls TEXT NOT NULL,
    PRIMARY KEY (run_id, step_index)
);

CREATE TABLE IF NOT EXISTS completions (
    run_id TEXT NOT NULL,
    step_index INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    provider TEXT NOT NULL,
    model_requested TEXT NOT NULL,
    model_served TEXT NOT NULL,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    total_tokens INTEGER,
    cache_read_tokens INTEGER,
    cache_write_tokens INTEGER,
    reasoning_tokens INTEGER,
    server_tool_requests INTEGER,
    latency_ms REAL NOT NULL,
    ttft_ms REAL,
    stop_reason TEXT,
    PRIMARY KEY (run_id, step_index)
);
CREATE INDEX IF NOT EXISTS completions_created ON completions(created_at);

CREATE TABLE IF NOT EXISTS provider_attempts (
    run_id TEXT NOT NULL,
    step_index INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    ok INTEGER NOT NULL,
    error TEXT,
    status INTEGER,
    PRIMARY KEY (run_id, step_index, seq)
);

CREATE TABLE IF NOT EXISTS citations (
    run_id TEXT NOT NULL,
    step_index INTEGER NOT NULL,
    url TEXT NOT NULL,
    title TEXT,
    cited_text TEXT
);

CREATE TABLE IF NOT EXISTS server_tool_calls (
    run_id TEXT NOT NULL,
    step_index INTEGER NOT NULL,
    name TEXT NOT NULL,
    input TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS ledger (
    run_id TEXT NOT NULL,
    step_index INTEGER NOT NULL,
    call_index INTEGER NOT NULL,
    call_id TEXT NOT NULL,
    name TEXT NOT NULL,
    arguments TEXT NOT NULL,
    intent_at TEXT NOT NULL,
    observation TEXT,
    is_error INTEGER,
    data TEXT,
    observed_at TEXT,
    PRIMARY KEY (run_id, step_index, call_index)
);

CREATE TABLE IF NOT EXISTS checkpoints (
    run_id TEXT NOT NULL,
    step_index INTEGER NOT NULL,
    format INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    state TEXT NOT NULL,
    PRIMARY KEY (run_id, step_index)
);

CREATE TABLE IF NOT EXISTS budget_draws (
    run_id TEXT NOT NULL,
    step_index INTEGER NOT NULL,
    steps INTEGER NOT NULL,
    tokens INTEGER NOT NULL,
    wall_seconds REAL NOT NULL,
    PRIMARY KEY (run_id, step_index)
);

CREATE TABLE IF NOT EXISTS policy_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    step_index INTEGER,
    created_at TEXT NOT NULL,
    act TEXT NOT NULL,
    target TEXT NOT NULL,
    verdict TEXT NOT NULL,
    reason TEXT NOT NULL,
    rule TEXT,
    layer TEXT,
    decided_by TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS policy_events_run ON policy_events(run_id);

CREATE TABLE IF NOT EXISTS edits (
    run_id TEXT NOT NULL,
    step_index INTEGER NOT NULL,
    call_id TEXT NOT NULL,
    path TEXT NOT NULL,
    lines_added INTEGER NOT NULL,
    lines_removed INTEGER NOT NULL,
    bytes_before INTEGER NOT NULL,
    bytes_after INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS verifications (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    step_index INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    criterion TEXT NOT NULL,
    passed INTEGER NOT NULL,
    exit_status INTEGER,
    output TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS run_inbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at TEXT NOT NULL,
    consumed_step INTEGER
);
CREATE INDEX IF NOT EXISTS run_inbox_run ON run_inbox(run_id, consumed_step);

CREATE TABLE IF NOT EXISTS drives (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    started_at TEXT NOT NULL,
    pid INTEGER NOT NULL,
    policy TEXT NOT NULL,
    sandbox TEXT,
    PRIMARY KEY (run_id, seq)
);
"""

MIGRATIONS: tuple[tuple[str, str], ...] = (("0001_core", _CORE),)
"""(name, SQL) in order; applied once each, recorded in `migrations`."""

VERIFICATION_REPORT_SQL = """
ALTER TABLE verifications ADD COLUMN duration_seconds REAL;
ALTER TABLE verifications ADD COLUMN sandbox TEXT;
ALTER TABLE verifications ADD COLUMN inputs TEXT
"""
"""The gates report: how long a gate ran, in which sandbox, and what became of its inputs
(NULL on rows written before it)."""

RUNNER_HOST_SQL = """
ALTER TABLE completions ADD COLUMN host TEXT;
ALTER TABLE drives ADD COLUMN host TEXT
"""
"""The machine (hostname) that made each completion and each drive: `io spend --by runner`
across a fleet sharing one store (NULL on rows written before it)."""

RESUME_STATE_SQL = """
ALTER TABLE completions ADD COLUMN carry TEXT;
ALTER TABLE ledger ADD COLUMN progress TEXT
"""
"""What a resumed run needs to go on as an uninterrupted one would: the provider's opaque
state of each completion (`CompletionResponse.carry`: the Responses API's encrypted
reasoning items and response id), and, per tool call the stall detector counted, the
workspace print it took ('' when it took none); NULL on rows written before it, or for
a call the detector did not count."""

REPORT_INDEXES_SQL = """
CREATE INDEX IF NOT EXISTS runs_workspace ON runs(workspace, created_at);
CREATE INDEX IF NOT EXISTS verifications_run ON verifications(run_id);
CREATE INDEX IF NOT EXISTS edits_run ON edits(run_id);
CREATE INDEX IF NOT EXISTS citations_run ON citations(run_id, step_index);
CREATE INDEX IF NOT EXISTS server_tool_calls_run ON server_tool_calls(run_id, step_index);
CREATE INDEX IF NOT EXISTS batch_tasks_run ON batch_tasks(run_id)
"""
"""What `io runs -w`, `io spend` (a workspace's runs, a batch's) and `io trace` filter on,
so that none of them reads a table whole (#40): a workspace's runs newest first, and each per-run table that had no index leading with `run_id`."""

USAGE_ESTIMATED_SQL = """
ALTER TABLE completions ADD COLUMN usage_estimated INTEGER NOT NULL DEFAULT 0;
ALTER TABLE compactions ADD COLUMN usage_estimated INTEGER NOT NULL DEFAULT 0
"""
"""1 where the provider reported no token counts and the row holds io's estimate
(`Usage.estimated`); 0 on rows written before it, whose counts are as reported."""
