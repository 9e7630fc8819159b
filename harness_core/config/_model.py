"""The io.toml schema: one pydantic model per table, the one declaration of every key.

Each field declares its TOML type, bound and default once; its attribute docstring is
its documentation (`io config schema` prints it, `io config init` writes it as a
comment). Defaults are read from the library's typed objects (`Budget`,
`SandboxLimits`, `ProviderConfig`, `RunSpec`, ...), so no default is written twice.

Every field has a default: a key is required only after the four scopes merge (a
local file may set one key of a table a lower scope set), and that check is the
projection's. A ceiling takes `false` for "no ceiling". This module imports pydantic,
so it is imported only when a config is loaded: never by `io --help` and never on the
per-step path. It never reads a file or the environment.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema
from pydantic import ValidationInfo as _Info
from pydantic_core import PydanticCustomError

from harness_core.agents import AgentLimits
from harness_core.hooks import HookConfig
from harness_core.policy import ApprovalMode, Policy, Tier
from harness_core.providers import ProviderConfig, WebAccess
from harness_core.run import RunSpec
from harness_core.run._budget import Budget
from harness_core.sandbox import BackendChoice, SandboxConfig, SandboxLimits
from harness_core.telemetry import TelemetryConfig
from harness_core.tools._doc_limits import DocumentLimits
from harness_core.tools._git import GitSettings
from harness_core.verification import CriterionKind, VerifyCriterion

__all__ = ["DEFAULT_CONTEXT_TOKENS", "MAX_NUMBER", "SECRET", "IoToml", "PathValue"]

MAX_NUMBER = 10**12
"""The largest number any key takes: a trillion steps, tokens, seconds or dollars is no
budget anyone means, and larger values (2**64) overflow the store's integers."""

DEFAULT_CONTEXT_TOKENS = 120_000
"""What the model sees at most when `[context] max_tokens` is not set (a size most
current models take); the store keeps everything whatever this is."""


class _Marker:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


SECRET = _Marker("secret")
"""Metadata of a credential field: shown as ``***`` and scrubbed from every output."""

_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _default(cls: type, name: str) -> Any:
    """The default a library dataclass declares for `name`: the one declaration."""
    for f in fields(cls):
        if f.name == name:
            if f.default is not MISSING:
                return f.default
            if f.default_factory is not MISSING:
                return f.default_factory()
    raise KeyError(name)


def _ceiling(value: Any) -> Any:
    return False if value is None else value


def _resolve_path(value: Path, info: _Info) -> Path:
    base = info.context.get("base_dir") if isinstance(info.context, dict) else None
    if base is not None and not value.is_absolute():
        value = Path(base) / value
    return Path(os.path.normpath(value))


def _date(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        raise PydanticCustomError("date_type", "expected a date")
    if isinstance(value, str):
        if _ISO_DATE.fullmatch(value):
            try:
                return dt.date.fromisoformat(value)
            except ValueError:
                pass
        raise PydanticCustomError("date_format", "expected a date written YYYY-MM-DD")
    return value


def _path(value: Any) -> Any:
    if value == "":
        raise PydanticCustomError("path_empty", "a path must not be empty")
    return value


PathValue = Annotated[
    Path, Field(strict=False), BeforeValidator(_path), AfterValidator(_resolve_path)
]
"""A path, relative to the directory of the file that names it."""
_Date = Annotated[dt.date, BeforeValidator(_date)]


def _only_false(value: bool) -> bool:
    if value:
        raise PydanticCustomError("ceiling_true", "true is not a ceiling: write a number, or false")
    return value


NoCeiling = Annotated[
    bool, AfterValidator(_only_false), WithJsonSchema({"const": False, "type": "boolean"})
]
"""`false`: no ceiling (a strict boolean: 0 is not false)."""

# Every number is bounded above by MAX_NUMBER; below by what its key means.
_Int0 = Annotated[int, Field(ge=0, le=MAX_NUMBER)]
_Int1 = Annotated[int, Field(ge=1, le=MAX_NUMBER)]
_Int2 = Annotated[int, Field(ge=2, le=MAX_NUMBER)]
_Bytes = Annotated[int, Field(ge=256, le=MAX_NUMBER)]
_Num0 = Annotated[float, Field(ge=0, le=MAX_NUMBER, allow_inf_nan=False)]
IntCeiling = _Int1 | NoCeiling
NumCeiling = _Num0 | NoCeiling
_Seconds = Annotated[float, Field(ge=0.001, le=MAX_NUMBER, allow_inf_nan=False)]
_Price = _Num0


class Table(BaseModel):
    """Base of every table: unknown keys are errors, types are TOML's, no coercion."""

    # The attribute docstrings are read by `_docs` when documentation is asked for, not
    # by pydantic while it builds every class (`use_attribute_docstrings`: ~30 ms a run).
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


ProviderKind = Literal["anthropic", "openai", "openai-responses", "openrouter", "scripted"]
SystemRole = Literal["system", "developer"]


class ProviderEntry(Table):
    """One model provider: how to reach it and what to ask it for."""

    kind: ProviderKind | None = None
    """Which wire protocol to speak. "scripted" replays recorded completions from
    `script`; it is a replay, not a model. Required."""
    model: str | None = None
    """The model string sent with every request (required unless kind = "scripted")."""
    api_key: Annotated[str | None, SECRET] = None
    """The credential; write it as a substitution (`${env:NAME}`) so the key never sits
    in a file you commit. Shown as ***."""
    base_url: str | None = None
    """Another endpoint: a proxy, a gateway, or a local OpenAI-compatible server."""
    max_tokens: _Int1 = _default(ProviderConfig, "max_tokens")
    """Output-token ceiling per completion: bounds the cost of one step."""
    script: PathValue | None = None
    """For kind = "scripted": the replay file (JSON Lines, one completion per step),
    relative to the file that names it."""
    stream: bool = _default(ProviderConfig, "stream")
    """Stream tokens as they come, so the live trace shows progress (false: one response)."""
    timeout_seconds: _Seconds = _default(ProviderConfig, "timeout_seconds")
    """Seconds to wait for a response before counting the attempt as failed."""
    max_retries: _Int0 = _default(ProviderConfig, "max_retries")
    """Retries of a retryable failure (429, 5xx, timeout) before moving to a fallback."""
    ca_bundle: PathValue | None = None
    """A PEM file of CA certificates trusted in addition to the system store (a corporate
    proxy's CA), relative to the file that names it."""
    system_role: SystemRole = _default(ProviderConfig, "system_role")
    """The role system messages are sent with by the OpenAI kinds: "developer" for
    models that refuse "system". Other kinds ignore it."""
    previous_response_id: bool = _default(ProviderConfig, "previous_response_id")
    """kind = "openai-responses" only: chain turns on the vendor's side (it stores each
    response) instead of resending the whole conversation."""


class ProviderTable(ProviderEntry):
    """The model provider, with the providers tried when it fails."""

    fallback: list[ProviderEntry] = []
    """Providers tried in order when the primary still fails after its retries; each
    takes the keys of [provider] (but no fallback of its own)."""


class PolicyTable(Table):
    """The boundary: a tier for unnamed acts, and rules. Every scope's rules are kept
    (tagged with the scope), and a deny anywhere beats an allow anywhere."""

    tier: Annotated[Tier, Field(strict=False)] = _default(Policy, "tier")
    """Default for acts no rule names: read-only allows reads; workspace-write adds
    writes; full adds commands and network."""
    approval: Annotated[ApprovalMode, Field(strict=False)] = _default(Policy, "approval")
    """What an act the tier does not allow and no rule names becomes: "ask" prompts on a
    TTY and, without one, pauses the run (exit 4); "deny" refuses it."""
    allow_read: list[str] = []
    """Paths it may read (patterns relative to the workspace; `**` crosses directories)."""
    deny_read: list[str] = []
    """Paths it must never read: credentials, keys."""
    allow_write: list[str] = []
    """Paths it may write."""
    deny_write: list[str] = []
    """Paths it must never write, whatever an allow says."""
    allow_exec: list[str] = []
    """Commands it may run, matched against the whole command line."""
    deny_exec: list[str] = []
    """Commands it must never run (also caught when called through a path)."""
    allow_net: list[str] = []
    """Hosts it may reach: "host", "*.domain", "host:port", "[v6addr]:port", a network
    "10.0.0.0/8[:port]"; a rule without a port matches every port; addresses compare as
    addresses (127.1 is 127.0.0.1)."""
    deny_net: list[str] = []
    """Hosts it must never reach, in the same forms; a deny wins over any allow."""
    allow_mcp: list[str] = []
    """MCP tools it may call, as "server/tool" ("github/*" every tool of one server)."""
    deny_mcp: list[str] = []
    """MCP tools it must never call, in the same form; a deny wins over any allow."""


RULE_KEYS = tuple(
    f"{effect}_{kind}" for kind in ("read", "write", "exec", "net", "mcp") for effect in ("allow", "deny")
)
"""The `[policy]` rule lists; every scope's rules are kept, never merged as scalars."""

_LIMITS = SandboxLimits()


class SandboxTable(Table):
    """How commands are confined, and the resource ceilings of each command."""

    backend: Annotated[BackendChoice, Field(strict=False)] = _default(SandboxConfig, "backend")
    """auto (the native backend, degrading to the portable floor with a report) | native
    (native or an error) | floor | off."""
    memory_mb: IntCeiling = _ceiling(_LIMITS.memory_mb)
    """Memory ceiling per command, in MiB (or false)."""
    cpu_seconds: IntCeiling = _ceiling(_LIMITS.cpu_seconds)
    """CPU-time ceiling per command, in seconds (or false)."""
    wall_seconds: NumCeiling = _ceiling(_LIMITS.wall_seconds)
    """Wall-clock ceiling per command, in seconds (or false)."""
    max_processes: IntCeiling = _ceiling(_LIMITS.max_processes)
    """Process ceiling per command: stops a fork bomb (or false)."""
    open_files: IntCeiling = _ceiling(_LIMITS.open_files)
    """Open-file ceiling per command (or false)."""
    network: bool = _default(SandboxConfig, "network")
    """Let sandboxed commands reach hosts, only through io's egress proxy, which admits a
    host:port only when allow_net/deny_net allow it (native backend)."""
    commands: bool = _default(SandboxConfig, "commands")
    """Run the agent's own commands (exec, shell) in the sandbox; gates always are."""
    env_allow: list[str] = list(_default(SandboxConfig, "env_allow"))
    """Environment variables passed through the sandbox's scrub beyond the default set."""
    read_paths: list[str] = list(_default(SandboxConfig, "read_paths"))
    """Paths in your home directory commands may read; the rest of it is hidden
    (detected toolchains stay visible)."""


_BUDGET = Budget()


class BudgetTable(Table):
    """The ceilings a run draws against, per step."""

    max_steps: IntCeiling = _ceiling(_BUDGET.max_steps)
    """Completions a run may ask for (or false)."""
    max_tokens: IntCeiling = _ceiling(_BUDGET.max_tokens)
    """Tokens a run may spend, counted as billed (cache reads at cache_read_weight);
    opt-in: no token ceiling by default (or false)."""
    max_cost_usd: NumCeiling = _ceiling(_BUDGET.max_cost_usd)
    """Derived cost in USD a run may spend; needs [prices] for the model (or false)."""
    wall_seconds: NumCeiling = _ceiling(_BUDGET.wall_seconds)
    """Wall-clock seconds a run may take, summed over resumes (or false)."""
    cache_read_weight: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] = (
        _BUDGET.cache_read_weight)
    """What one token read from the prompt cache counts for against max_tokens (0 to 1;
    0.1 is what Anthropic and OpenAI's GPT-5 models bill a cache read at)."""


class VerifyTable(Table):
    """One verification gate, run in the sandbox when the model says it is done."""

    kind: Annotated[CriterionKind, Field(strict=False)] = _default(VerifyCriterion, "kind")
    """command: run a command line, exit 0 passes | each_compiles_python: py_compile
    every changed .py file."""
    command: str | None = None
    """The command line (required for kind = "command")."""
    timeout_seconds: _Seconds = _default(VerifyCriterion, "timeout_seconds")
    """Seconds before the gate is killed and counted failed."""
    inputs: list[str] | None = None
    """Files the verdict depends on (path patterns, as in [policy]); write-protected for
    the run. Unset: inferred from the toolchain and the command."""
    editable: bool = _default(VerifyCriterion, "editable")
    """Let the agent change the inputs (the trace and the report then say so)."""
    path: str | None = None
    """kind = "document_contains": the document (xlsx, docx, pptx, pdf), relative to the
    workspace (required for that kind)."""
    text: str | None = None
    """kind = "document_contains": text the document must contain (or `regex`)."""
    regex: str | None = None
    """kind = "document_contains": a regular expression its text must match (or `text`)."""
    page: _Int1 | None = None
    """kind = "document_contains": a 1-based PDF page or pptx slide to search instead of
    the whole file."""
    sheet: str | None = None
    """kind = "document_contains": an xlsx sheet to search instead of every sheet."""


class ContractTable(Table):
    """What the run is for, and how it is checked."""

    goal: str = ""
    """What `io run` does when no goal is given on the command line."""
    constraints: list[str] = []
    """Instructions the model must follow. Text, not policy: the policy enforces."""
    verify: list[VerifyTable] = []
    """Gates run when the model says it is done; a failure goes back to the model."""


class ContextTable(Table):
    """What the model sees."""

    max_tokens: _Int1 = DEFAULT_CONTEXT_TOKENS
    """Tokens the model sees at most: old observations are elided from its view, never
    from the store (strategy "elide")."""
    strategy: Literal["elide", "compact"] = _default(RunSpec, "context_strategy")
    """elide: old observations give way to markers past max_tokens | compact: past
    `threshold` of the model's context window the model summarises the older turns
    (a recorded step; the store keeps everything)."""
    threshold: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] = _default(
        RunSpec, "compact_threshold")
    """strategy = "compact": the share of the context window that triggers a compaction."""
    window: _Int1 | None = None
    """The model's context window in tokens (default: io's table of known models; needed
    for any other model with strategy = "compact")."""
    keep_steps: _Int1 = _default(RunSpec, "compact_keep_steps")
    """strategy = "compact": the newest steps kept whole after a compaction."""
    compact_template: str | None = None
    """A template (NAME of NAME.md in the template directories) replacing io's summary
    instruction; `{{goal}}` is the run's goal."""


class RewindTable(Table):
    """Workspace snapshots for `io rewind` and `io undo`."""

    enabled: bool = True
    """Snapshot the workspace's files (what .gitignore does not ignore) before and after
    every step that changes them, outside the workspace beside the store."""
    max_bytes: _Int1 = _default(RunSpec, "snapshot_max_bytes")
    """Bytes of file contents one run's snapshots may hold; past it io stops taking them
    for the run and says so (rewind and undo then refuse)."""


class ToolchainTable(Table):
    """Overrides of the project commands io detects from marker files."""

    test: str | None = None
    """The test command shown to the model."""
    build: str | None = None
    """The build command shown to the model."""
    lint: str | None = None
    """The lint command shown to the model."""


_GIT = GitSettings()


class GitTable(Table):
    """How the git built-ins (git_status, git_diff, git_commit) run."""

    author_name: str | None = None
    """Who git_commit commits as (default: git's own configuration)."""
    author_email: str | None = None
    """The author's email (default: git's own configuration)."""
    author: str | None = None
    """Both at once, written 'Name <email>' (author_name / author_email win over it)."""
    timeout_seconds: _Seconds = _GIT.timeout_seconds
    """Seconds one git command may take before it is killed."""
    history_depth: _Int1 = _GIT.history_depth
    """Commits of history the git built-ins look at, at most."""


class DocumentsTable(Table):
    """How far the document tools unpack an Office file (xlsx, docx, pptx are zips)."""

    max_member_bytes: _Bytes = _default(DocumentLimits, "max_member_bytes")
    """Largest unpacked size of one zip member; a file with a larger one is refused."""
    max_total_bytes: _Bytes = _default(DocumentLimits, "max_total_bytes")
    """Largest unpacked size of all of a file's members together."""
    max_ratio: Annotated[float, Field(ge=1, le=MAX_NUMBER, allow_inf_nan=False)] = _default(
        DocumentLimits, "max_ratio")
    """Largest unpacked/stored ratio of a member past its first MiB (zip bombs: 1000+)."""
    max_members: _Int1 = _default(DocumentLimits, "max_members")
    """Most members one file may hold."""


class ModelPriceTable(Table):
    """USD per million tokens for one model string."""

    input_per_mtok: _Price | None = None
    """Price of prompt tokens (required)."""
    output_per_mtok: _Price | None = None
    """Price of completion tokens (required)."""
    cache_read_per_mtok: _Price | None = None
    """Price of tokens read from the prompt cache."""
    cache_write_per_mtok: _Price | None = None
    """Price of tokens written to the prompt cache."""


class PricesTable(Table):
    """Prices to derive costs from; a model with no entry is unpriced, never zero."""

    as_of: _Date | None = None
    """The date these prices were true (required: prices go stale)."""
    models: dict[str, ModelPriceTable] = {}
    """Prices per model string."""


class WebTable(Table):
    """Provider-executed web access: declared here, enforced by the vendor, not by io."""

    search: bool = _default(WebAccess, "search")
    """Offer the vendor's web search tool to the model."""
    fetch: bool = _default(WebAccess, "fetch")
    """Offer the vendor's web fetch tool to the model."""
    allowed_domains: list[str] = []
    """Domains the vendor may reach (empty: no filter)."""
    blocked_domains: list[str] = []
    """Domains the vendor must not reach."""
    max_uses: _Int1 | None = None
    """Cap on provider-executed uses per completion."""


class McpOAuthTable(Table):
    """OAuth 2.1 for a remote MCP server that asks for it (a 401 naming its metadata).
    Without this table io still answers a 401: it registers a client dynamically and asks
    a person to authorize once (authorization code with PKCE)."""

    grant: Literal["authorization_code", "client_credentials"] = "authorization_code"
    """authorization_code (a person authorizes once in a browser; refreshed after) |
    client_credentials (a pre-registered client_id and client_secret: CI)."""
    client_id: str | None = None
    """A pre-registered client (default: dynamic client registration)."""
    client_secret: Annotated[str | None, SECRET] = None
    """Its secret; a secret (shown as ***, never recorded)."""
    private_key: Annotated[str | None, SECRET] = None
    """Instead of client_secret: a PEM private key that signs client-credentials
    assertions (private_key_jwt), e.g. "${file:/run/secrets/mcp.pem}"; a secret."""
    signing_algorithm: str = "RS256"
    """The JWS algorithm of those assertions (RS256, ES256 …)."""
    scopes: list[str] = []
    """Scopes to ask for (default: what the server's challenge or metadata names)."""
    client_metadata_url: str | None = None
    """An https URL serving io's client metadata document, used as the client id where
    the authorization server supports it (CIMD)."""
    issuer: str | None = None
    """The authorization server a pre-registered client belongs to; its credentials are
    only sent there (default: whichever server discovery finds)."""
    redirect_port: Annotated[int, Field(ge=0, le=65535)] = 0
    """Port of the 127.0.0.1 redirect listener (0: a free port, kept once registered)."""
    authorize_timeout_seconds: _Seconds = 300.0
    """Seconds a start waits for the person to authorize in the browser."""


class McpTable(Table):
    """An MCP server whose tools the agent may call: a local one started with `command`
    (its start is an exec act) or a remote one at `url` (its host is a net act)."""

    name: str | None = None
    """Unique name (no '/'); its tools appear as mcp__<name>__<tool>, and policy rules
    name them <name>/<tool> (required)."""
    command: str | None = None
    """The program to start, for a local server spoken to over stdio."""
    args: list[str] = []
    """Its arguments."""
    env: Annotated[dict[str, str], SECRET] = {}
    """Extra environment for it; values are secrets (shown as ***, never recorded)."""
    cwd: PathValue | None = None
    """Its working directory, relative to the file that names it (default: the workspace)."""
    url: str | None = None
    """A remote server's streamable-HTTP endpoint (https://…), instead of command."""
    headers: Annotated[dict[str, str], SECRET] = {}
    """Headers sent to a remote server (an API key); values are secrets, shown as ***."""
    optional: bool = False
    """When it cannot start or connect, warn and run without it (default: the run does
    not start)."""
    oauth: McpOAuthTable | None = None
    """OAuth settings of a remote server."""
    elicitation: Literal["decline", "defaults"] = "decline"
    """What to answer a server asking the user for input mid-call: decline | defaults
    (accept with the defaults its schema declares)."""


HookEventName = Literal["run_start", "pre_tool", "post_tool", "pre_compact", "stop",
                        "child_stop"]


class HookTable(Table):
    """A program run at one point of every run; it can only narrow (deny, ask, add
    context), never allow what the policy refuses. Hooks of every scope apply."""

    event: HookEventName | None = None
    """When it runs: run_start | pre_tool | post_tool | pre_compact | stop | child_stop
    (required)."""
    command: list[str] | None = None
    """The program and its arguments, no shell (required). Relative paths are resolved
    in the workspace; the files it names there are protected from the agent."""
    matcher: str = "*"
    """pre_tool / post_tool: a glob on the tool name (an MCP tool is also server/tool)."""
    timeout_s: _Seconds = _default(HookConfig, "timeout_s")
    """Seconds before it is killed; a pre_tool hook that times out refuses the call."""
    name: str | None = None
    """Its name in the trace (default: <scope>.hooks[<index>])."""


class AgentTable(Table):
    """A named agent definition. It can only narrow: pick a model and a role, add denies."""

    model: str | None = None
    """The model it runs on (default: the provider's)."""
    role: str | None = None
    """The role text given to the model."""
    deny_write: list[str] = []
    """Paths it may not write, on top of [policy]."""
    deny_net: list[str] = []
    """Hosts it may not reach, on top of [policy] ("*" is every host; "host:port" one
    port)."""


_LIMITS_OF_TREES = AgentLimits()


class AgentsTable(Table):
    """Agent trees: how deep and wide they may grow, and the named agent definitions
    (`[agents.NAME]`), each of which can only narrow."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, AgentTable] = Field(init=False)

    max_depth: _Int0 = _LIMITS_OF_TREES.max_depth
    """How many levels of children a run may spawn below it (0: none)."""
    max_children: _Int1 = _LIMITS_OF_TREES.max_children
    """Children one run may spawn in all."""
    parallel: _Int1 = _LIMITS_OF_TREES.parallel
    """Children that may run at the same time."""


class TemplatesTable(Table):
    """Prompt templates (`io run --template NAME`)."""

    dir: PathValue | None = None
    """Where templates live, relative to the file that names it (default: .io/templates/
    in the workspace)."""


class StoreTable(Table):
    """Where the SQLite store lives."""

    path: PathValue | None = None
    """The store file, relative to the file that names it. IO_STORE wins over it; the
    default is $XDG_STATE_HOME/io/state.db, else ~/.local/state/io/state.db."""
    url: Annotated[str | None, SECRET] = None
    """A PostgreSQL store (postgresql://...) shared by many machines; when set it is the
    store and `path` is unused (needs the `postgres` extra). Shown as ***."""


_TELEMETRY = _default(TelemetryConfig, "service_name"), _default(TelemetryConfig, "timeout_seconds")


class TelemetryTable(Table):
    """OpenTelemetry export over OTLP/HTTP: off unless an endpoint is set here or in the
    standard `OTEL_EXPORTER_OTLP_*` variables (this key wins over them)."""

    otlp_endpoint: str | None = None
    """The collector, e.g. http://localhost:4318 (`/v1/traces` is added)."""
    include_content: bool = _default(TelemetryConfig, "include_content")
    """Put model text, tool output and file contents on spans (off: counts and names only)."""
    headers: Annotated[dict[str, str], SECRET] = {}
    """Headers sent to the collector (an API key); values are secrets, shown as ***."""
    service_name: str = _TELEMETRY[0]
    """The `service.name` of the spans."""
    timeout_seconds: _Seconds = _TELEMETRY[1]
    """Seconds one export may take."""


class RunTable(Table):
    """Loop mechanics that are not budgets."""

    output_cap_bytes: _Bytes = _default(RunSpec, "output_cap")
    """Bytes of one tool output the model sees; the rest is cut and the cut is stated."""
    exec_timeout_seconds: _Seconds = _default(RunSpec, "exec_timeout")
    """Default timeout of one exec call, in seconds; the whole process group is killed."""
    stall_window: _Int2 = _default(RunSpec, "stall_window")
    """The same tool call this many times in a row (or repeating while the workspace
    stays still) stops the run as stalled (exit 3)."""


class IoToml(Table):
    """io.toml: what an agent run may do, and how it is run. Four scopes merge into it
    (system, user, project, local); an unknown key is an error."""

    provider: ProviderTable | None = None
    """The model provider."""
    policy: PolicyTable = PolicyTable()
    """The boundary: tier, approval and rules."""
    sandbox: SandboxTable = SandboxTable()
    """How commands are confined."""
    budget: BudgetTable = BudgetTable()
    """The run's ceilings."""
    contract: ContractTable = ContractTable()
    """Goal, constraints and verification gates."""
    context: ContextTable = ContextTable()
    """What the model sees."""
    toolchain: ToolchainTable = ToolchainTable()
    """Overrides of the detected project commands."""
    git: GitTable = GitTable()
    """How the git built-ins run."""
    documents: DocumentsTable = DocumentsTable()
    """How far the document tools unpack a file."""
    prices: PricesTable | None = None
    """Prices to derive costs from."""
    web: WebTable | None = None
    """Provider-executed web access."""
    mcp: list[McpTable] = []
    """MCP servers: local (stdio) and remote (streamable HTTP)."""
    hooks: list[HookTable] = []
    """Programs run at points of a run (every scope's hooks apply)."""
    agents: AgentsTable = AgentsTable()
    """Agent trees and named agent definitions."""
    templates: TemplatesTable = TemplatesTable()
    """Prompt templates."""
    store: StoreTable = StoreTable()
    """Where the store lives."""
    telemetry: TelemetryTable = TelemetryTable()
    """OpenTelemetry export."""
    run: RunTable = RunTable()
    """Loop mechanics."""
    rewind: RewindTable = RewindTable()
    """Workspace snapshots for io rewind and io undo."""
