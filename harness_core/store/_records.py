"""Typed rows the store hands back. Frozen: a record is a fact, not a handle."""

from __future__ import annotations

from enum import Enum
from typing import Any

from harness_core._record import record
from harness_core.messages import ToolCall, Usage
from harness_core.records import Edit, ProviderAttempt
from harness_core.tool_data import Refusal, ToolData, read_tool_data

__all__ = [
    "AttemptRecord",
    "CheckpointRecord",
    "CheckpointState",
    "DriveRecord",
    "EditRecord",
    "InputsFate",
    "LedgerEntry",
    "Pause",
    "PolicyEventRecord",
    "RunRecord",
    "RunStatus",
    "StepRecord",
    "VerificationRecord",
]


class RunStatus(Enum):
    """Where a run stands. May grow."""

    RUNNING = "running"
    """A driver is (or was, until it crashed) taking steps."""
    PAUSED = "paused"
    """Waiting for an answer or an approval; `io resume` continues it."""
    FINISHED = "finished"
    """The model finished and every verification gate passed."""
    FAILED = "failed"
    """Finished with a failed gate, or the run failed."""
    STOPPED = "stopped"
    """A budget or the stall detector stopped it."""
    INTERRUPTED = "interrupted"
    """Ctrl-C or `io interrupt`; checkpointed first, resumable."""
    ERRORED = "errored"
    """Stopped by an error (a provider outage, an exhausted replay); resumable."""

    @property
    def is_terminal(self) -> bool:
        """Whether resuming it makes no provider call."""
        return self in (RunStatus.FINISHED, RunStatus.FAILED, RunStatus.STOPPED)


@record
class Pause:
    """What a paused run waits for: an approval of an act, or an answer to a question.

    Recorded with the run and carried by `RunOutcome.pause`; `to_json` is the form the
    store, the events and `io run --json` write.

    Attributes:
        kind: ``approval`` or ``question``.
        step: The step whose call paused.
        call_index: That call's index in the step.
        call_id: That call's id.
        tool: That call's tool.
        question: The question (``question``).
        act: The act kind waiting for approval (``read``, ``write``, ``exec``, ``net``;
            ``tool`` for a whole call a `pre_tool` hook sent to approval).
        target: The act, described (``approval``).
        reason: Why it needs approval.
        rule: The rule that asked, if one did.
        layer: The layer of that rule.
        child_run_id: In a tree: the child run the paused call spawned.
        waiting_run_id: In a tree: the run (maybe deeper) that really waits.
    """

    kind: str
    step: int = 0
    call_index: int = 0
    call_id: str = ""
    tool: str = ""
    question: str | None = None
    act: str | None = None
    target: str | None = None
    reason: str | None = None
    rule: str | None = None
    layer: str | None = None
    child_run_id: str | None = None
    waiting_run_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON object (keys that do not apply are left out)."""
        out: dict[str, Any] = {"kind": self.kind, "step": self.step,
                               "call_index": self.call_index, "call_id": self.call_id,
                               "tool": self.tool}
        for name in ("question", "act", "target", "reason", "rule", "layer", "child_run_id",
                     "waiting_run_id"):
            value = getattr(self, name)
            if value is not None or name in ("rule", "layer") and self.kind == "approval":
                out[name] = value
        return out

    @staticmethod
    def from_json(data: dict[str, Any]) -> Pause:
        """Read a recorded pause (unknown keys are ignored)."""
        known = {f for f in Pause.__dataclass_fields__}
        return Pause(**{k: v for k, v in data.items() if k in known})


@record
class CheckpointState:
    """What a checkpoint records about its step.

    Attributes:
        step: The step.
        done: The model asked for no call: it said it is done.
        verified: Whether the gates passed after it (None: they have not run).
    """

    step: int
    done: bool = False
    verified: bool | None = None

    def to_json(self) -> dict[str, Any]:
        return {"step": self.step, "done": self.done, "verified": self.verified}

    @staticmethod
    def from_json(data: dict[str, Any]) -> CheckpointState:
        verified = data.get("verified")
        return CheckpointState(step=int(data.get("step", 0)), done=bool(data.get("done")),
                               verified=None if verified is None else bool(verified))


@record
class RunRecord:
    """One row of `runs`."""

    run_id: str
    created_at: str
    updated_at: str
    status: RunStatus
    goal: str
    workspace: str
    model: str | None
    session_id: str | None
    parent_run_id: str | None
    settings: dict[str, Any]
    policy: dict[str, Any]
    sandbox: dict[str, Any] | None
    exit_code: int | None
    reason: str | None
    pause: Pause | None
    owner_pid: int | None
    steps_used: int
    tokens_used: int
    wall_used: float
    depth: int = 0
    root_run_id: str = ""
    agent: str | None = None


@record
class StepRecord:
    """A committed completion: the assistant's text and the calls it asked for.

    Attributes:
        step_index: The step.
        created_at: When it was committed (ISO 8601, UTC).
        text: The assistant's text.
        tool_calls: The calls it asked for, in order.
        provider: Which provider answered (None before one was recorded).
        model_served: The model that served it, as the vendor reported it.
        usage: The token counts as reported (a field the vendor left out is None).
        latency_ms: The harness's wall clock around the call.
        ttft_ms: Time to the first streamed token (None when nothing streamed).
    """

    step_index: int
    created_at: str
    text: str
    tool_calls: tuple[ToolCall, ...]
    provider: str | None
    model_served: str | None
    usage: Usage
    latency_ms: float | None
    ttft_ms: float | None


@record
class LedgerEntry:
    """A tool call's intent and, once it ran, its observation.

    Attributes:
        step_index: The step of the call.
        call_index: Its index in the step.
        call_id: Its id.
        name: The tool.
        arguments: The arguments as parsed (empty when they were not a JSON object).
        observation: The text the model saw (None: the call has not been observed).
        is_error: Whether the call failed or was refused.
        data: The tool's typed record (`ShellData`, `FileWritten` …; `OpenData` for a
            tool io does not know; None: none).
        refused: Why the call was refused, when it was.
        raw_arguments: The arguments text as the model sent it, when it was not a JSON
            object.
    """

    step_index: int
    call_index: int
    call_id: str
    name: str
    arguments: dict[str, Any]
    observation: str | None
    is_error: bool
    data: ToolData | None
    refused: Refusal | None = None
    raw_arguments: str | None = None

    @property
    def has_observation(self) -> bool:
        return self.observation is not None

    @property
    def call(self) -> ToolCall:
        """The call, as the model asked for it."""
        return ToolCall(self.call_id, self.name, dict(self.arguments), self.raw_arguments)

    def arguments_json(self) -> dict[str, Any]:
        """The arguments as recorded: ``{"__raw__": text}`` when they were not JSON."""
        if self.raw_arguments is not None:
            return {"__raw__": self.raw_arguments}
        return self.arguments

    def data_json(self) -> dict[str, Any] | None:
        """The ``data`` column's object: the tool's record, and ``refused`` when set."""
        return ledger_data_json(self.data, self.refused)


def ledger_data_json(data: ToolData | None, refused: Refusal | None) -> dict[str, Any] | None:
    """What the ledger's ``data`` column holds for a tool record and a refusal."""
    out = {} if data is None else data.to_json()
    if refused is not None:
        out["refused"] = refused.to_json()
    return out or None


def ledger_entry(step: int, index: int, call_id: str, name: str, arguments: Any,
                 observation: str | None, is_error: bool, data: Any) -> LedgerEntry:
    """A ledger row read back: the recorded JSON turned into the typed entry."""
    raw: str | None = None
    if isinstance(arguments, dict) and set(arguments) == {"__raw__"}:
        raw, arguments = str(arguments["__raw__"]), {}
    refused: Refusal | None = None
    record: ToolData | None = None
    if isinstance(data, dict):
        refusal = data.pop("refused", None)
        refused = Refusal.from_json(refusal) if isinstance(refusal, dict) else None
        record = read_tool_data(name, data) if data else None
    return LedgerEntry(step, index, call_id, name,
                       arguments if isinstance(arguments, dict) else {}, observation,
                       is_error, record, refused, raw)


@record(slots=True)
class DriveRecord:
    """One drive of a run (its start or a resume): when, which process, under what.

    Attributes:
        seq: The drive's number (0: the start).
        started_at: When it began (ISO 8601, UTC).
        pid: The process that drove it.
        policy: The policy it ran under, as `Policy.to_json` wrote it.
        sandbox: The sandbox report it ran with (None: none recorded).
    """

    seq: int
    started_at: str
    pid: int
    policy: dict[str, Any]
    sandbox: dict[str, Any] | None

    def to_json(self, *, policy: bool = True) -> dict[str, Any]:
        """The drive as `io trace --json` writes it (there without ``policy``)."""
        head: dict[str, Any] = {"seq": self.seq, "started_at": self.started_at, "pid": self.pid}
        if policy:
            head["policy"] = self.policy
        return {**head, "sandbox": self.sandbox}

    @staticmethod
    def from_json(data: dict[str, Any]) -> DriveRecord:
        policy, sandbox = data.get("policy"), data.get("sandbox")
        return DriveRecord(int(data.get("seq", 0)), str(data.get("started_at", "")),
                           int(data.get("pid", 0)), policy if isinstance(policy, dict) else {},
                           sandbox if isinstance(sandbox, dict) else None)


@record(slots=True)
class EditRecord:
    """One recorded write's size (`Store.edits`): which call made it, and the `Edit`.

    Attributes:
        step_index: The step of the call.
        call_id: The call that wrote.
        edit: The file and the size of the change.
    """

    step_index: int
    call_id: str
    edit: Edit

    def to_json(self) -> dict[str, Any]:
        """The row as `io trace --json` writes it (``step``, ``call_id``, the edit's keys)."""
        return {"step": self.step_index, "call_id": self.call_id, **self.edit.to_json()}

    @staticmethod
    def from_json(data: dict[str, Any]) -> EditRecord:
        return EditRecord(int(data.get("step", 0)), str(data.get("call_id", "")),
                          Edit.from_json(data))


@record(slots=True)
class AttemptRecord:
    """One recorded provider attempt (`Store.provider_attempts`).

    Attributes:
        step_index: The step it was made for.
        seq: Its order within the step.
        attempt: The attempt (provider, model, ok, error, status).
    """

    step_index: int
    seq: int
    attempt: ProviderAttempt

    def to_json(self) -> dict[str, Any]:
        """The row as `io trace --json` writes it (``step``, ``seq``, the attempt's keys;
        ``ok`` as the 0 or 1 the column holds, as that output always wrote it)."""
        return {"step": self.step_index, "seq": self.seq, **self.attempt.to_json(),
                "ok": int(self.attempt.ok)}

    @staticmethod
    def from_json(data: dict[str, Any]) -> AttemptRecord:
        return AttemptRecord(int(data.get("step", 0)), int(data.get("seq", 0)),
                             ProviderAttempt.from_json(data))


@record
class CheckpointRecord:
    """The state committed with a step."""

    step_index: int
    format: int
    state: CheckpointState


@record
class PolicyEventRecord:
    """A refusal or an approver decision, with the rule and layer that decided."""

    step_index: int | None
    created_at: str
    act: str
    target: str
    verdict: str
    reason: str
    rule: str | None
    layer: str | None
    decided_by: str


@record(slots=True)
class InputsFate:
    """What became of a gate's inputs (the files it reads) since the run started.

    Attributes:
        inputs: The gate's input patterns, as recorded at the start.
        editable: Whether the agent may edit them (`[[contract.verify]] editable`).
        untouched: Whether they are as they were (None: nothing recorded to compare with).
        modified: The input files that changed.
    """

    inputs: tuple[str, ...] | None
    editable: bool
    untouched: bool | None
    modified: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The object the store's ``inputs`` column holds."""
        return {"inputs": None if self.inputs is None else list(self.inputs),
                "editable": self.editable, "untouched": self.untouched,
                "modified": list(self.modified)}

    @staticmethod
    def from_json(data: dict[str, Any]) -> InputsFate:
        patterns, untouched = data.get("inputs"), data.get("untouched")
        return InputsFate(
            None if not isinstance(patterns, list) else tuple(str(p) for p in patterns),
            bool(data.get("editable")), None if untouched is None else bool(untouched),
            tuple(str(m) for m in data.get("modified") or ()))


@record
class VerificationRecord:
    """One run of one verification gate.

    Attributes:
        step_index: The step after which it ran.
        criterion: The command line (or the gate's kind).
        passed: Whether it reported success.
        exit_status: The command's exit status (None when killed or not a command).
        output: Its output, bounded.
        duration_seconds: How long it ran (None on rows recorded before 0006).
        sandbox: The backend it ran in (``linux``, ``floor``, ``off`` …).
        inputs: Its inputs' fate (None: the gate names no inputs, or nothing was
            recorded to compare with).
    """

    step_index: int
    criterion: str
    passed: bool
    exit_status: int | None
    output: str
    duration_seconds: float | None = None
    sandbox: str | None = None
    inputs: InputsFate | None = None

    def to_json(self) -> dict[str, Any]:
        """The gates report entry (`run_finished`, `io trace --json`)."""
        fate = self.inputs
        return {
            "step": self.step_index, "command": self.criterion, "passed": self.passed,
            "exit_status": self.exit_status,
            "duration_seconds": None if self.duration_seconds is None
            else round(self.duration_seconds, 3),
            "sandbox": self.sandbox, "inputs": None if fate is None else fate.to_json()["inputs"],
            "editable": None if fate is None else fate.editable,
            "inputs_untouched": None if fate is None else fate.untouched,
            "modified_inputs": [] if fate is None else list(fate.modified),
        }

    def row_json(self) -> dict[str, Any]:
        """Every field, the inputs' fate as its JSON object (`io trace --json`)."""
        return {"step_index": self.step_index, "criterion": self.criterion,
                "passed": self.passed, "exit_status": self.exit_status, "output": self.output,
                "duration_seconds": self.duration_seconds, "sandbox": self.sandbox,
                "inputs": None if self.inputs is None else self.inputs.to_json()}
