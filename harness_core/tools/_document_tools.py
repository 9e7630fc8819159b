"""`DocumentTool`: a built-in whose implementation is imported on its first call.

A toolbox offers every document tool (its spec is plain data) without importing
`harness_core.documents`: the package, and the format's library, load when a tool is
first called (its implementation is named ``"module:function"``).

A document is untrusted input parsed by a third-party library, which may raise anything
on a malformed file. This is the one boundary where such an exception becomes an error
observation the model sees, so a bad file never ends a run.
"""

from __future__ import annotations

import importlib
import zipfile
from collections.abc import Callable
from typing import Any

from harness_core.errors import DocumentEncrypted, DocumentTooLarge, HarnessError, MissingExtra
from harness_core.messages import ToolSpec
from harness_core.tools._base import PauseRequested, Tool, ToolContext, ToolOutcome
from harness_core.tools._document_registry import (
    TOOL_EXTRAS,
    TOOL_IMPLEMENTATIONS,
    install_command,
    is_installed,
)
from harness_core.tools._document_specs import DOCUMENT_SPECS
from harness_core.tools._toolbox import Toolbox

__all__ = ["DocumentTool", "default_toolbox", "document_tools", "unavailable_tools"]

_Impl = Callable[[dict[str, Any], ToolContext], ToolOutcome]


class DocumentTool:
    """A document built-in; `run` imports its format module on first use."""

    def __init__(self, name: str) -> None:
        self.spec: ToolSpec = DOCUMENT_SPECS[name]
        self._target = TOOL_IMPLEMENTATIONS[name]
        self._impl: _Impl | None = None

    def _load(self) -> _Impl:
        if self._impl is None:
            module, _, attr = self._target.partition(":")
            self._impl = getattr(importlib.import_module(module), attr)
        return self._impl

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        name = self.spec.name
        if not is_installed(TOOL_EXTRAS[name]):
            return ToolOutcome(str(MissingExtra(name, TOOL_EXTRAS[name])), is_error=True)
        try:
            return self._load()(args, ctx)
        except (DocumentTooLarge, DocumentEncrypted) as exc:
            return ToolOutcome(f"{name}: {exc}", is_error=True)
        except (HarnessError, PauseRequested):
            raise  # typed errors and the gate's pause for an approval pass through
        except zipfile.BadZipFile as exc:
            return ToolOutcome(f"{name}: not a valid {_kind(name)} file ({exc})", is_error=True)
        # Third-party parsers raise anything on a malformed document (KeyError, lxml
        # errors, struct.error …); each is an observation, never the end of the run.
        except Exception as exc:  # noqa: BLE001
            return ToolOutcome(f"{name}: cannot process the file: {type(exc).__name__}: {exc}",
                               is_error=True)


def _kind(name: str) -> str:
    return name.split("_", 1)[0]


def document_tools() -> list[Tool]:
    """The document built-ins whose extras are installed (nothing is imported)."""
    return [DocumentTool(name) for name in DOCUMENT_SPECS if is_installed(TOOL_EXTRAS[name])]


def unavailable_tools() -> dict[str, str]:
    """Each document built-in whose extra is missing, with the command that installs it."""
    return {name: install_command(extra) for name, extra in TOOL_EXTRAS.items()
            if not is_installed(extra)}


def default_toolbox(*, include_shell: bool = True) -> Toolbox:
    """Every built-in of this install: the core ones and the document tools whose extras
    are installed; a call to a document tool whose extra is missing is an error
    observation naming the install command."""
    return Toolbox.builtins(include_shell=include_shell, extra_builtins=document_tools(),
                            unavailable=unavailable_tools())
