"""Step queries: the conversation, each committed completion, and the ledger of tool
calls (an intent before the call runs, its observation after).

`StepQueries` is a mixin of `Store`. A completion and its messages commit in one
transaction; an observation is written once, so a resumed run replays it instead of
running the call again."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from harness_core.messages import Message, ToolCall, ToolResult, Usage, escape_surrogates
from harness_core.records import Citation, Edit, ProviderAttempt, ServerToolCall
from harness_core.store._checkpoints import write_checkpoint
from harness_core.store._codec import dumps, loads, message_from_json, message_to_json
from harness_core.store._parts import HOST, StoreParts
from harness_core.store._parts import now as _now
from harness_core.store._records import (
    AttemptRecord,
    CheckpointState,
    EditRecord,
    LedgerEntry,
    StepRecord,
    ledger_data_json,
    ledger_entry,
)
from harness_core.tool_data import Refusal, ToolData

__all__ = ["StepQueries"]

class StepQueries(StoreParts):
    """Messages, completions, provider attempts, the ledger and edits of each run."""

    # ---- conversation -------------------------------------------------------------

    def _insert_messages(
        self, conn: sqlite3.Connection, run_id: str, step: int, messages: Sequence[Message]
    ) -> None:
        if not messages:
            return
        # The next seq is computed by each INSERT itself: no answer to wait for, so on
        # PostgreSQL the whole transaction goes out in one pipeline.
        conn.executemany(
            "INSERT INTO messages(run_id, seq, step_index, role, body)"
            " SELECT ?, COALESCE(MAX(seq), -1) + 1, ?, ?, ? FROM messages WHERE run_id = ?",
            [(run_id, step, m.role.value, dumps(message_to_json(m)), run_id) for m in messages],
        )

    def append_messages(self, run_id: str, step: int, messages: Sequence[Message]) -> None:
        """Append messages the model will see (a steer, an answer) to the conversation."""
        with self._tx() as conn:
            self._insert_messages(conn, run_id, step, messages)

    def messages(self, run_id: str) -> list[Message]:
        """The whole conversation of the run, in order (the store keeps everything)."""
        rows = self._query(
            "SELECT body FROM messages WHERE run_id = ? ORDER BY seq", (run_id,)
        )
        return [message_from_json(loads(r[0])) for r in rows]

    # ---- steps and the ledger -----------------------------------------------------

    def record_completion(
        self,
        run_id: str,
        step: int,
        *,
        text: str,
        tool_calls: Sequence[ToolCall],
        provider: str,
        model_requested: str,
        model_served: str,
        usage: Usage,
        latency_ms: float,
        ttft_ms: float | None,
        stop_reason: str | None,
        attempts: Sequence[ProviderAttempt] = (),
        citations: Sequence[Citation] = (),
        server_tool_calls: Sequence[ServerToolCall] = (),
        carry: str | None = None,
    ) -> None:
        """Commit a completion: the step, its numbers and the assistant message, at once.

        `carry` is the provider's opaque state (`CompletionResponse.carry`), kept for a
        resumed run only (`carried`): no report or trace reads it."""
        now = _now()
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO steps(run_id, step_index, created_at, text, tool_calls)"
                " VALUES (?,?,?,?,?)",
                (run_id, step, now, escape_surrogates(text),
                 dumps([c.to_json() for c in tool_calls])),
            )
            conn.execute(
                "INSERT INTO completions(run_id, step_index, created_at, provider, model_requested,"
                " model_served, prompt_tokens, completion_tokens, total_tokens, cache_read_tokens,"
                " cache_write_tokens, reasoning_tokens, server_tool_requests, latency_ms, ttft_ms,"
                " stop_reason, host, carry, usage_estimated)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (run_id, step, now, provider, model_requested, model_served,
                 usage.prompt_tokens, usage.completion_tokens, usage.total_tokens,
                 usage.cache_read_tokens, usage.cache_write_tokens, usage.reasoning_tokens,
                 usage.server_tool_requests, latency_ms, ttft_ms, stop_reason, HOST, carry,
                 1 if usage.estimated else 0),
            )
            # Each row's seq is computed by its INSERT (after the failed attempts already
            # recorded for the step): no answer to wait for inside the transaction.
            conn.executemany(
                "INSERT INTO provider_attempts(run_id, step_index, seq, provider, model, ok,"
                " error, status) SELECT ?, ?, COALESCE(MAX(seq), -1) + 1, ?, ?, ?, ?, ?"
                " FROM provider_attempts WHERE run_id = ? AND step_index = ?",
                [(run_id, step, a.provider, a.model, 1 if a.ok else 0, a.error, a.status,
                  run_id, step) for a in attempts],
            )
            for cite in citations:
                conn.execute(
                    "INSERT INTO citations(run_id, step_index, url, title, cited_text)"
                    " VALUES (?,?,?,?,?)",
                    (run_id, step, cite.url, cite.title, cite.cited_text),
                )
            for call in server_tool_calls:
                conn.execute(
                    "INSERT INTO server_tool_calls(run_id, step_index, name, input) VALUES (?,?,?,?)",
                    (run_id, step, call.name, dumps(dict(call.input))),
                )
            self._insert_messages(conn, run_id, step, [Message.assistant(text, tuple(tool_calls))])

    def record_failed_attempts(
        self, run_id: str, step: int, attempts: Sequence[ProviderAttempt]
    ) -> None:
        """Record the attempts of a completion that failed after every retry and fallback."""
        if not attempts:
            return
        with self._tx() as conn:
            base = conn.execute(
                "SELECT COALESCE(MAX(seq), -1) + 1 FROM provider_attempts"
                " WHERE run_id = ? AND step_index = ?", (run_id, step),
            ).fetchone()[0]
            conn.executemany(
                "INSERT INTO provider_attempts(run_id, step_index, seq, provider, model, ok,"
                " error, status) VALUES (?,?,?,?,?,?,?,?)",
                [(run_id, step, base + i, a.provider, a.model, 0, a.error, a.status)
                 for i, a in enumerate(attempts)],
            )

    def provider_attempts(self, run_id: str) -> list[AttemptRecord]:
        """Every recorded attempt of the run (successful and failed), in order."""
        rows = self._query(
            "SELECT step_index, seq, provider, model, ok, error, status FROM provider_attempts"
            " WHERE run_id = ? ORDER BY step_index, seq", (run_id,),
        )
        return [AttemptRecord(r[0], r[1], ProviderAttempt(r[2], r[3], bool(r[4]), r[5], r[6]))
                for r in rows]

    def step(self, run_id: str, step: int) -> StepRecord | None:
        """The committed completion of `step`, or None."""
        rows = self._query(
            "SELECT s.step_index, s.created_at, s.text, s.tool_calls, c.provider, c.model_served,"
            " c.prompt_tokens, c.completion_tokens, c.total_tokens, c.cache_read_tokens,"
            " c.cache_write_tokens, c.reasoning_tokens, c.server_tool_requests, c.latency_ms,"
            " c.ttft_ms, c.usage_estimated FROM steps s LEFT JOIN completions c"
            " ON c.run_id = s.run_id AND c.step_index = s.step_index"
            " WHERE s.run_id = ? AND s.step_index = ?",
            (run_id, step),
        )
        return _step_record(rows[0]) if rows else None

    def steps(self, run_id: str) -> list[StepRecord]:
        """Every committed completion of the run, in order."""
        rows = self._query(
            "SELECT s.step_index, s.created_at, s.text, s.tool_calls, c.provider, c.model_served,"
            " c.prompt_tokens, c.completion_tokens, c.total_tokens, c.cache_read_tokens,"
            " c.cache_write_tokens, c.reasoning_tokens, c.server_tool_requests, c.latency_ms,"
            " c.ttft_ms, c.usage_estimated FROM steps s LEFT JOIN completions c"
            " ON c.run_id = s.run_id AND c.step_index = s.step_index"
            " WHERE s.run_id = ? ORDER BY s.step_index",
            (run_id,),
        )
        return [_step_record(r) for r in rows]

    def carried(self, run_id: str) -> list[tuple[StepRecord, str]]:
        """Each committed completion that carried provider state, with that state."""
        rows = self._query(
            "SELECT s.step_index, s.created_at, s.text, s.tool_calls, c.provider, c.model_served,"
            " c.prompt_tokens, c.completion_tokens, c.total_tokens, c.cache_read_tokens,"
            " c.cache_write_tokens, c.reasoning_tokens, c.server_tool_requests, c.latency_ms,"
            " c.ttft_ms, c.usage_estimated, c.carry FROM steps s JOIN completions c"
            " ON c.run_id = s.run_id AND c.step_index = s.step_index"
            " WHERE s.run_id = ? AND c.carry IS NOT NULL ORDER BY s.step_index",
            (run_id,),
        )
        return [(_step_record(r), str(r[16])) for r in rows]

    def progress_trail(self, run_id: str, last: int) -> list[tuple[str, str]]:
        """The `last` calls the stall detector counted, oldest first: each call's key
        (`ToolCall.key`) and the workspace print taken with it ('' when none was)."""
        rows = self._query(
            "SELECT step_index, call_index, call_id, name, arguments, progress FROM ledger"
            " WHERE run_id = ? AND progress IS NOT NULL"
            " ORDER BY step_index DESC, call_index DESC LIMIT ?", (run_id, last),
        )
        trail: list[tuple[str, str]] = []
        for r in reversed(rows):
            entry = ledger_entry(r[0], r[1], r[2], r[3], loads(r[4]), None, False, None)
            call = ToolCall(entry.call_id, entry.name, entry.arguments, entry.raw_arguments)
            trail.append((call.key(), str(r[5])))
        return trail

    def record_intent(self, run_id: str, step: int, call_index: int, call: ToolCall) -> None:
        """Write a tool call's intent before it runs."""
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO ledger(run_id, step_index, call_index, call_id, name, arguments,"
                " intent_at) VALUES (?,?,?,?,?,?,?)",
                (run_id, step, call_index, call.id, call.name,
                 dumps(call.arguments if call.raw_arguments is None
                       else {"__raw__": call.raw_arguments}), _now()),
            )

    def record_observation(
        self,
        run_id: str,
        step: int,
        call_index: int,
        result: ToolResult,
        *,
        data: ToolData | None = None,
        refused: Refusal | None = None,
        edits: Sequence[Edit] = (),
        checkpoint: CheckpointState | None = None,
        tokens: int = 0,
        wall_seconds: float = 0.0,
        progress: str | None = None,
    ) -> None:
        """Write a tool call's observation (and the tool message) after it ran.

        Args:
            data: The tool's record, kept in the ledger's ``data`` column.
            refused: Why the call was refused, kept there too (as ``refused``).
            edits: The size of each write it made (the ``edits`` table).
            checkpoint: The step's checkpoint, when this is the step's last call: the
                observation and the checkpoint (as `record_checkpoint` writes it, with
                `tokens` and `wall_seconds`) commit in one transaction, both or neither,
                one commit where there were two.
            progress: The workspace print the stall detector took with the call ('' for
                none), when it counted the call (`progress_trail` reads it back).
        """
        recorded = ledger_data_json(data, refused)
        with self._tx() as conn:
            conn.execute(
                "UPDATE ledger SET observation = ?, is_error = ?, data = ?, observed_at = ?,"
                " progress = ? WHERE run_id = ? AND step_index = ? AND call_index = ?",
                (escape_surrogates(result.output), 1 if result.is_error else 0,
                 dumps(recorded) if recorded is not None else None, _now(), progress, run_id,
                 step, call_index),
            )
            for edit in edits:
                conn.execute(
                    "INSERT INTO edits(run_id, step_index, call_id, path, lines_added,"
                    " lines_removed, bytes_before, bytes_after) VALUES (?,?,?,?,?,?,?,?)",
                    (run_id, step, result.call_id, escape_surrogates(edit.path),
                     edit.lines_added, edit.lines_removed, edit.bytes_before, edit.bytes_after),
                )
            self._insert_messages(conn, run_id, step, [Message.tool(result)])
            if checkpoint is not None:
                write_checkpoint(conn, run_id, step, checkpoint, tokens=tokens,
                                 wall_seconds=wall_seconds)

    def ledger(self, run_id: str, step: int | None = None) -> list[LedgerEntry]:
        """Ledger entries of the run (or of one step), in order."""
        sql = (
            "SELECT step_index, call_index, call_id, name, arguments, observation, is_error, data"
            " FROM ledger WHERE run_id = ?"
        )
        params: list[Any] = [run_id]
        if step is not None:
            sql += " AND step_index = ?"
            params.append(step)
        rows = self._query(sql + " ORDER BY step_index, call_index", params)
        return [ledger_entry(r[0], r[1], r[2], r[3], loads(r[4]), r[5], bool(r[6]), loads(r[7]))
                for r in rows]

    def edits(self, run_id: str) -> list[EditRecord]:
        """Per-file edit sizes recorded for the run, in the order they were written."""
        rows = self._query(
            "SELECT step_index, call_id, path, lines_added, lines_removed, bytes_before, bytes_after"
            " FROM edits WHERE run_id = ? ORDER BY rowid",
            (run_id,),
        )
        return [EditRecord(r[0], r[1], Edit(r[2], r[3], r[4], r[5], r[6])) for r in rows]


def _step_record(r: tuple[Any, ...]) -> StepRecord:
    usage_keys = ("prompt_tokens", "completion_tokens", "total_tokens", "cache_read_tokens",
                  "cache_write_tokens", "reasoning_tokens", "server_tool_requests")
    return StepRecord(
        step_index=r[0], created_at=r[1], text=r[2],
        tool_calls=tuple(ToolCall.from_json(c) for c in loads(r[3])), provider=r[4],
        model_served=r[5], usage=Usage(**dict(zip(usage_keys, r[6:13], strict=True)),
                                       estimated=bool(r[15])),
        latency_ms=r[13], ttft_ms=r[14],
    )
