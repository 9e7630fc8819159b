"""`Toolbox`: the tools a run offers, dispatch by name, and the reserved names.

Every built-in name is reserved in every build, feature-gated ones included, so a
registered tool can never shadow a built-in (or be shadowed by one an extra enables).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from harness_core.errors import InvalidToolArguments, ToolError, WorkspaceError
from harness_core.messages import ToolCall, ToolSpec
from harness_core.tools._base import Tool, ToolContext, ToolOutcome
from harness_core.tools._exec import Exec
from harness_core.tools._files import EditFile, Find, Grep, ListDir, ReadFile, WriteFile
from harness_core.tools._git_tools import git_tools
from harness_core.tools._plan_tools import plan_tools

__all__ = ["RESERVED_TOOL_NAMES", "Toolbox"]

RESERVED_TOOL_NAMES: frozenset[str] = frozenset({
    "read_file", "write_file", "edit_file", "list_dir", "find", "grep", "exec",
    "shell", "shell_start", "shell_poll", "shell_kill", "todo_write", "ask_question",
    "spawn_agent", "git_status", "git_diff", "git_commit", "view_image",
    "xlsx_read", "xlsx_write", "xlsx_edit", "docx_read", "docx_write", "pptx_read",
    "pdf_read", "pdf_write", "pdf_watermark", "pdf_fill_form", "barcode_decode",
})
"""Names no registered tool may take."""

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
    "array": (list,), "object": (dict,),
}


def _is_own_builtin(tool: Tool) -> bool:
    """Whether `tool` is io's own implementation (its class defined in harness_core),
    not a user's tool (nor a subclass of a built-in) that took a reserved name."""
    module = type(tool).__module__
    return module == "harness_core" or module.startswith("harness_core.")


def _check_args(spec: ToolSpec, args: dict[str, Any]) -> None:
    schema = spec.parameters
    props: dict[str, Any] = schema.get("properties", {})
    for key in schema.get("required", []):
        if key not in args:
            raise InvalidToolArguments(f"{spec.name}: missing required argument {key!r}")
    for key, value in args.items():
        if key not in props:
            if schema.get("additionalProperties", True) is False:
                raise InvalidToolArguments(
                    f"{spec.name}: unknown argument {key!r} (expected: {', '.join(props)})"
                )
            continue
        expected = props[key].get("type")
        types = _JSON_TYPES.get(expected) if isinstance(expected, str) else None
        if types is None:
            continue
        ok = isinstance(value, types) and not (
            expected in ("integer", "number") and isinstance(value, bool))
        if not ok:
            raise InvalidToolArguments(f"{spec.name}: argument {key!r} must be {expected}")


class Toolbox:
    """The tools of a run, by name."""

    def __init__(
        self, tools: Iterable[Tool] = (), *, unavailable: Mapping[str, str] | None = None
    ) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.add(tool)
        self._unavailable = {k: v for k, v in (unavailable or {}).items()
                             if k not in self._tools}

    @staticmethod
    def builtins(
        *,
        include_shell: bool = True,
        extra_builtins: Iterable[Tool] = (),
        unavailable: Mapping[str, str] | None = None,
    ) -> Toolbox:
        """The default built-ins: files, find/grep, exec, the plan and question tools,
        and the shell tools.

        Args:
            include_shell: Offer the shell tools.
            extra_builtins: Built-ins from a higher layer (the document tools whose extras
                are installed), which may take reserved names.
            unavailable: Built-in names not offered because an extra is missing, each with
                the command that installs it; a call to one is an error observation
                naming that command.
        """
        tools: list[Tool] = [ReadFile(), WriteFile(), EditFile(), ListDir(), Find(), Grep(), Exec()]
        tools.extend(plan_tools())
        tools.extend(git_tools())
        if include_shell:
            from harness_core.tools._shell_tools import shell_tools

            tools.extend(shell_tools())
        box = Toolbox(tools, unavailable=unavailable)
        for tool in extra_builtins:
            box.add(tool, builtin=True)
        return box

    def add(self, tool: Tool, *, builtin: bool = False) -> None:
        """Register a tool.

        A reserved name may be taken only by io's own implementation of that built-in,
        however the toolbox is built (the constructor, `add`, `with_tools`), so a custom
        `read_file` never silently replaces the built-in one and the model is never
        offered a tool under a built-in's name that does something else.

        Args:
            tool: The tool.
            builtin: Kept for callers that register a built-in explicitly; a reserved
                name is checked the same way with or without it.

        Raises:
            ToolError: The name is reserved for a built-in, or already taken.
        """
        name = tool.spec.name
        if name in RESERVED_TOOL_NAMES and not _is_own_builtin(tool):
            raise ToolError(
                f"tool name {name!r} is reserved for a built-in; register "
                f"{type(tool).__name__} under another name", hint="pick a name that is not"
                " one of io's built-in tools (RESERVED_TOOL_NAMES)")
        if name in self._tools:
            raise ToolError(f"tool name {name!r} is registered twice")
        self._tools[name] = tool

    def with_tools(self, tools: Iterable[Tool]) -> Toolbox:
        """A new toolbox with this one's tools and `tools` (validated like `add`)."""
        combined = Toolbox(self._tools.values(), unavailable=self._unavailable)
        for tool in tools:
            combined.add(tool)
        return combined

    def names(self) -> list[str]:
        return sorted(self._tools)

    def unavailable(self, name: str) -> str | None:
        """The install command of a built-in left out for a missing extra, else None."""
        return self._unavailable.get(name)

    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(self._tools[n].spec for n in sorted(self._tools))

    def get(self, name: str) -> Tool:
        tool = self._tools.get(name)
        if tool is None:
            raise ToolError(
                f"unknown tool {name!r}; available: {', '.join(sorted(self._tools))}"
            )
        return tool

    def can_resume(self, name: str) -> bool:
        """Whether the tool `name` can find out what an interrupted call of it did."""
        tool = self._tools.get(name)
        return tool is not None and callable(getattr(tool, "resume", None))

    def call(self, call: ToolCall, ctx: ToolContext, *, resumed: bool = False) -> ToolOutcome:
        """Validate and run one call (`resumed`: a recorded intent with no observation,
        given to the tool's `resume` when it has one).

        Raises:
            ToolError: Unknown tool or arguments that do not fit its schema (including
                arguments that were not valid JSON).
        """
        install = self._unavailable.get(call.name)
        if install is not None:
            return ToolOutcome(f"{call.name} is not available in this install: its extra is"
                               f" missing ({install})", is_error=True)
        tool = self.get(call.name)
        if call.raw_arguments is not None:
            raise InvalidToolArguments(
                f"{call.name}: arguments are not a valid JSON object: {call.raw_arguments[:200]!r}"
            )
        _check_args(tool.spec, call.arguments)
        resume = getattr(tool, "resume", None) if resumed else None
        try:
            if callable(resume):
                outcome: ToolOutcome = resume(call.arguments, ctx)
                return outcome
            return tool.run(call.arguments, ctx)
        except WorkspaceError as exc:
            return ToolOutcome(f"error: {call.name}: {exc}", is_error=True)
        except (OSError, UnicodeError) as exc:
            # A failure the call's input caused (an odd name, a special file, a full
            # disk) is an observation the model can act on, never the end of the run.
            return ToolOutcome(f"error: {call.name}: {_os_reason(exc)}", is_error=True)


def _os_reason(exc: OSError | UnicodeError) -> str:
    if isinstance(exc, UnicodeError):
        return "the input holds text that cannot be encoded (a lone surrogate?)"
    return exc.strerror or str(exc)
