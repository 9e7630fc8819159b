"""The public surface of `io`: lazy re-exports only (PEP 562).

Importing `harness_core` costs almost nothing; a name's module is imported the first
time the name is used. `_PUBLIC` says which module defines each public name (`name=attr`
where the module calls it otherwise); `__init__.pyi` gives type checkers the same names.
`docs/public-api.txt` lists every name, its kind and its defining module, and
tests/test_public_api.py keeps the three in sync.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_PUBLIC: dict[str, str] = {
    "harness_core._record": "record",
    "harness_core.agents": "AgentDef AgentLimits",
    "harness_core.batch": "BATCH_LAYER BatchTask load_tasks narrow_run",
    "harness_core.clock": "Clock SystemClock",
    "harness_core.config": (
        "assemble_run build_run_spec check_runnable Config config_json_schema=json_schema "
        "ConfigFile ContextSettings discover_config=discover load_config=load McpAllowed "
        "note_operator_file Requirements Restored "
        "rewind_run RewindSettings RunAssembly RunSettings Scope secret_redactor "
        "ShownValue starter_config STARTER_PROVIDERS STARTER_SCRIPT undo_run"
    ),
    "harness_core.contract": "CriterionKind TaskContract VerifyCriterion",
    "harness_core.documents": "check_document DocumentCheck",
    "harness_core.errors": (
        "AmbiguousId BudgetExceeded CheckpointFormatError ConfigError DocumentEncrypted "
        "DocumentTooLarge GitRefused HarnessError HostBoundaryError InvalidToolArguments McpUnavailable "
        "MissingExtra MissingSecret PathEscape PolicyError ProviderError RequirementError RunInUse "
        "RunNotFound RunNotInFlight SandboxUnavailable ScriptExhausted SessionInUse "
        "ShellRefused StateError StoreDamaged StoreUnavailable ToolError UsageError "
        "WorkspaceChanged WorkspaceError"
    ),
    "harness_core.events": "Event EVENT_SCHEMA EventKind EventSink event_json_schema",
    "harness_core.hooks": (
        "CompactVerdict HOOK_LAYER HookAnswer HookConfig HookDecision HookEvent "
        "HookRunner check_hook_command"
    ),
    "harness_core.host": "run_helper safe_python_argv write_operator_file",
    "harness_core.mcp": "McpCallResult McpFailure McpRefusal McpSession McpTool McpToolInfo",
    "harness_core.tool_servers": "McpElicitation McpGrant McpOAuth McpServerConfig",
    "harness_core.messages": (
        "IMAGE_MEDIA_TYPES Media Message Role ToolCall ToolResult ToolSpec Usage"
    ),
    "harness_core.policy": (
        "Act ActKind ApprovalDecision ApprovalMode ApproveAll Approver BUILTIN_LAYER "
        "Decision DenyAll Effect GATE_LAYER Policy PROTECTED_WRITE_PATTERNS Rule Tier "
        "TIER_LAYER Verdict"
    ),
    "harness_core.providers": (
        "build_provider CarriedState Citation CompletionRequest CompletionResponse "
        "Fallback Provider PROVIDER_KINDS ProviderAttempt ProviderConfig RestoresState "
        "ServerToolCall trust_store TrustStore validate_web WebAccess"
    ),
    "harness_core.providers.scripted": "ScriptedProvider",
    "harness_core.records": "Edit",
    "harness_core.redaction": "SecretRedactor",
    "harness_core.run": (
        "ApprovalPending Budget build_launchers check_answer_schema ContextBudget Gate Guard "
        "gate_inputs GateInputs InputChange INTERRUPTED_OBSERVATION protect_gate_inputs "
        "resume_tree resume_tree_from_stored_policy resume_tree_with_answer run_tree "
        "Runner RunOutcome RunSpec schema_instructions sweep_leftovers TreeOptions"
    ),
    "harness_core.sandbox": (
        "Backend BackendChoice BackendReport CommandResult diagnose Diagnosis DoctorCheck "
        "Health HostProbe LaunchRequest ProcessLauncher run_command "
        "sandbox_launcher=launcher SandboxConfig SandboxLimits SandboxSpec "
        "select_sandbox=select Selected"
    ),
    "harness_core.session": "interrupt_run Queued Session SessionTree steer_run",
    "harness_core.shell": "CONSTRUCTS HandleRegistry MAX_LIVE_HANDLES",
    "harness_core.prices": "ModelPrice PriceTable",
    "harness_core.spend": "SpendBy SpendGroup SpendReport SpendRow SpendSums summarize summarize_sums",
    "harness_core.store": (
        "AttemptRecord BatchRecord BatchTaskRecord check_store CHECKPOINT_FORMAT "
        "CheckpointState CompactionRecord copy_store CopyReport DriveRecord EditRecord "
        "InputsFate is_postgres_url LedgerEntry OPERATOR_KINDS OperatorInputRecord Pause "
        "PolicyEventRecord redact_url RunRecord RunStatus SnapshotRecord StepRecord Store "
        "StoreReport VerificationRecord"
    ),
    "harness_core.store._questions": "QuestionRecord",
    "harness_core.store._sessions": "SessionRecord TurnRecord",
    "harness_core.telemetry": "TelemetrySink",
    "harness_core.otlp": "TelemetryConfig",
    "harness_core.templates": "discover_skills render_template Skill TemplateInfo Templates",
    "harness_core.tool_data": (
        "AnswerData ChildRunData DirListing DocumentRead ExecData FileRead FileWritten "
        "FindData GitCommitData GitDiffData GitStatusData GrepData HandleData "
        "HandleStarted ImageData McpData OpenData PlanData read_tool_data ShellData "
        "SpawnRefused TodoItem ToolData"
    ),
    "harness_core.toolchain": (
        "detect_toolchain=detect DetectedToolchain survey_toolchain=survey Toolchain "
        "ToolchainReport"
    ),
    "harness_core.tools": (
        "default_toolbox DocumentLimits GitSettings GitStatus PauseRequested Refusal "
        "RESERVED_TOOL_NAMES Resumable StatusEntry Tool TOOL_EXTRAS Toolbox ToolContext "
        "ToolOutcome"
    ),
    "harness_core.tools._answers": "Answer AnsweredBy Responder",
    "harness_core.trace": (
        "CallView CostView FileChange FileEdit load_trace load_tree ModelCost "
        "PlanRevision RunTrace StepView"
    ),
    "harness_core.verification": "GateResult run_gates",
    "harness_core.workspace": "DirEntry Workspace",
}

_EXPORTS: dict[str, str] = {
    name: f"{module}:{attr or name}"
    for module, names in _PUBLIC.items()
    for name, _, attr in (word.partition("=") for word in names.split())
}
"""Each public name's `module:attribute`."""

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module 'harness_core' has no attribute {name!r}")
    module, _, attr = target.partition(":")
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
