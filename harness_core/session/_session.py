"""`Session`: a conversation whose turns are runs, in an append-only tree.

A session adds a tree over runs and nothing else: each turn is started through
`Runner.start` like any run (its own run row, steps, budget and checkpoint, resumable by
its run id), with the conversation along its own branch as history. Taking a turn from
an earlier one branches; nothing is edited or deleted, so an abandoned branch stays
readable. One process drives a session at a time: a second one gets `SessionInUse`.
Nothing here writes to the terminal.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness_core._record import record
from harness_core.errors import UsageError
from harness_core.messages import Message
from harness_core.session._history import branch_history
from harness_core.store._sessions import SessionRecord, TurnRecord

if TYPE_CHECKING:  # the loop is needed only to take a turn; `show` must stay cheap
    from harness_core.run import Runner, RunOutcome, RunSpec
    from harness_core.store import AliveCheck, Store

__all__ = ["Session", "SessionTree"]


def _process_alive(pid: int, started: float | None) -> bool:
    import psutil

    try:
        proc = psutil.Process(pid)
        if started is None:
            return bool(proc.is_running())
        return abs(proc.create_time() - started) < 0.01 and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _own_start_time() -> float:
    import psutil

    return float(psutil.Process(os.getpid()).create_time())


@record
class SessionTree:
    """A session and its turns, as a tree (read once; a snapshot, not a live view).

    Attributes:
        session: The session.
        turns: Every turn, oldest first (turn ``n`` is ``turns[n - 1]``).
    """

    session: SessionRecord
    turns: tuple[TurnRecord, ...]

    @property
    def latest(self) -> TurnRecord | None:
        """The newest turn (where a plain `turn` continues), or None before the first."""
        return self.turns[-1] if self.turns else None

    def by_run(self) -> dict[str, TurnRecord]:
        """Turns keyed by run id (built once per tree)."""
        return self._by_run

    @cached_property
    def _by_run(self) -> dict[str, TurnRecord]:
        return {t.run_id: t for t in self.turns}

    def parent(self, turn: TurnRecord) -> TurnRecord | None:
        """The turn `turn` continues, or None for a first turn."""
        if turn.parent_run_id is None:
            return None
        return self.by_run().get(turn.parent_run_id)

    def children(self, turn: TurnRecord | None) -> list[TurnRecord]:
        """The turns taken from `turn` (None: the first turns), oldest first."""
        parent = turn.run_id if turn is not None else None
        runs = self.by_run()
        return [t for t in self.turns
                if (t.parent_run_id if t.parent_run_id in runs else None) == parent]

    def path(self, turn: TurnRecord) -> list[TurnRecord]:
        """The branch from the first turn to `turn`, oldest first."""
        runs = self.by_run()
        out: list[TurnRecord] = []
        node: TurnRecord | None = turn
        while node is not None and len(out) <= len(self.turns):
            out.append(node)
            node = runs.get(node.parent_run_id) if node.parent_run_id else None
        out.reverse()
        return out

    def find(self, ref: int | str) -> TurnRecord:
        """The turn numbered `ref`, or whose run id is (or uniquely starts with) `ref`.

        A number within the session's turns is a turn number; anything else is read as
        a run id.

        Raises:
            UsageError: No such turn in this session.
        """
        text = str(ref).strip().lstrip("#")
        if text.isdigit() and 1 <= int(text) <= len(self.turns):
            return self.turns[int(text) - 1]
        matches = [t for t in self.turns if t.run_id.startswith(text)] if text else []
        exact = [t for t in matches if t.run_id == text]
        if len(exact) == 1 or len(matches) == 1:
            return (exact or matches)[0]
        raise UsageError(
            f"session {self.session.session_id} has no turn {ref!r}"
            f" (it has turns 1-{len(self.turns)})" if self.turns else
            f"session {self.session.session_id} has no turns yet",
            hint=f"`io session show {self.session.session_id}` lists its turns",
        )

    def walk(self) -> Iterator[tuple[int, TurnRecord, bool]]:
        """(depth, turn, starts a branch) in display order.

        A turn's first child continues at the same depth; each later child opens a
        branch one level deeper, listed right under the turn it branches from. Depth
        grows with branching, never with the length of a line, and no recursion is used.
        """
        kids: dict[str | None, list[TurnRecord]] = {}
        runs = self.by_run()
        for t in self.turns:
            kids.setdefault(t.parent_run_id if t.parent_run_id in runs else None, []).append(t)
        stack: list[tuple[int, TurnRecord, bool]] = [
            (0, t, i > 0) for i, t in reversed(list(enumerate(kids.get(None, []))))]
        while stack:
            depth, turn, opens = stack.pop()
            yield depth, turn, opens
            children = kids.get(turn.run_id, [])
            if children:
                stack.append((depth, children[0], False))
                for child in reversed(children[1:]):
                    stack.append((depth + 1, child, True))

    def to_json(self) -> dict[str, Any]:
        """The session and its turns (each with its parent's number) as JSON."""
        runs = self.by_run()
        turns = []
        for t in self.turns:
            entry = t.to_json()
            parent = runs.get(t.parent_run_id) if t.parent_run_id else None
            entry["parent"] = parent.number if parent is not None else None
            turns.append(entry)
        latest = self.latest
        return {"session": self.session.to_json(), "turns": turns,
                "latest": latest.number if latest is not None else None}


class Session:
    """One conversation. Open one with `Session.new` or `Session.open`.

    Args:
        store: Where the session and its turns (runs) are recorded.
        record: The session's record.
        alive: Whether a recorded (pid, start time) still runs; injected in tests.
    """

    def __init__(self, store: Store, record: SessionRecord, *,
                 alive: AliveCheck | None = None) -> None:
        self.store = store
        self.record = record
        self._alive = alive or _process_alive

    @property
    def id(self) -> str:
        """The session id."""
        return self.record.session_id

    @classmethod
    def new(
        cls,
        store: Store,
        *,
        workspace: str | os.PathLike[str],
        title: str = "",
        new_id: Callable[[], str] | None = None,
        alive: AliveCheck | None = None,
    ) -> Session:
        """Record a new, empty session whose turns run in `workspace` by default."""
        session_id = (new_id or (lambda: "s" + uuid.uuid4().hex[:11]))()
        record = store.create_session(session_id, workspace=str(Path(workspace)), title=title)
        return cls(store, record, alive=alive)

    @classmethod
    def open(cls, store: Store, session_id: str, *, alive: AliveCheck | None = None) -> Session:
        """The recorded session `session_id` (a unique prefix works).

        Raises:
            UsageError: No such session.
        """
        return cls(store, store.session(session_id), alive=alive)

    @staticmethod
    def list(store: Store, limit: int = 50) -> list[SessionRecord]:
        """Recorded sessions, newest first."""
        return store.list_sessions(limit)

    def tree(self) -> SessionTree:
        """The session's turns as a tree, read now."""
        return SessionTree(self.store.session(self.id), tuple(self.store.session_turns(self.id)))

    def history(self, parent: TurnRecord | None, max_tokens: int | None) -> tuple[Message, ...]:
        """What a turn taken from `parent` is shown of the conversation before it."""
        if parent is None:
            return ()
        return branch_history(self.store.turn_ancestry(parent.run_id), self.store.turn_messages,
                              max_tokens=max_tokens, session_id=self.id)

    def find(self, ref: int | str) -> TurnRecord:
        """The turn numbered `ref`, or whose run id is (or uniquely starts with) `ref`.

        A number within the session's turns is a turn number; anything else is read as
        a run id.

        Raises:
            UsageError: No such turn in this session.
        """
        turn = self.store.find_turn(self.id, str(ref))
        if turn is None:
            raise UsageError(f"session {self.id} has no turn {ref!r}",
                             hint=f"`io session show {self.id}` lists its turns")
        return turn

    def turn(self, runner: Runner, spec: RunSpec, *,
             from_turn: int | str | None = None) -> RunOutcome:
        """Take a turn: run `spec` (its goal is the operator's message) as the next turn.

        The turn continues the newest turn, or branches from `from_turn` (a turn number
        or run id). It sees the conversation along its own branch, bounded by
        `spec.context_max_tokens`. Whatever `spec` says about the session, parent or
        history is replaced. Its cost does not grow with the number of turns.

        Raises:
            SessionInUse: Another live process has a turn of this session in flight.
            UsageError: `from_turn` names no turn of this session, or (without
                `from_turn`) the latest turn is paused: it is resumed, not built on.
        """
        parent = self.find(from_turn) if from_turn is not None else self.store.latest_turn(self.id)
        if from_turn is None and parent is not None and parent.status.value == "paused":
            # A new turn on top would leave the paused one waiting under it for good.
            from harness_core.session._operator import _paused_hint

            raise UsageError(
                f"turn {parent.number} of session {self.id} (run {parent.run_id}) is paused;"
                " a new turn would leave it waiting",
                hint=_paused_hint(self.store.run(parent.run_id))
                + f", or branch past it with `io session turn {self.id} --from N`")
        pid = os.getpid()
        self.store.acquire_session(self.id, pid, _own_start_time(), alive=self._alive)
        try:
            history = self.history(parent, spec.context_max_tokens)
            turn_spec = replace(spec, session_id=self.id, history=history,
                                parent_run_id=parent.run_id if parent is not None else None)
            return runner.start(turn_spec)
        finally:
            self.store.release_session(self.id, pid)

    def branch(self, runner: Runner, spec: RunSpec, from_turn: int | str) -> RunOutcome:
        """Take a turn from the earlier turn `from_turn`; `turn(..., from_turn=...)`."""
        return self.turn(runner, spec, from_turn=from_turn)
