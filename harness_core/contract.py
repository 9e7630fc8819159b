"""The task contract: what a run is for and the gates that say it is done. Data only.

Config loading and the run carry these records on every start, so this module imports
nothing but the record decorator; running a gate is `harness_core.verification`'s, which
re-exports these names and is imported only by a run (or a check) that has a gate.
"""

from __future__ import annotations

from dataclasses import field
from enum import Enum

from harness_core._record import record

__all__ = ["CriterionKind", "TaskContract", "VerifyCriterion"]


class CriterionKind(Enum):
    """Kinds of verification criterion. May grow."""

    COMMAND = "command"
    """Run a command line; exit 0 passes."""
    EACH_COMPILES_PYTHON = "each_compiles_python"
    """py_compile every changed `.py` file."""
    DOCUMENT_CONTAINS = "document_contains"
    """A document's text (one page, slide or sheet, or all of it) holds a text or regex."""


@record
class VerifyCriterion:
    """One gate.

    Attributes:
        kind: What kind of check.
        command: The command line (for `COMMAND`), split with shell-like quoting.
        timeout_seconds: Seconds before the gate is killed and counted failed.
        path: The document (for `DOCUMENT_CONTAINS`), relative to the workspace.
        text: The text the document must contain (or `regex`).
        regex: A regular expression the document's text must match (or `text`).
        page: A 1-based PDF page or pptx slide to search instead of the whole file.
        sheet: An xlsx sheet to search instead of every sheet.
        inputs: Path patterns of the files its verdict depends on; None: inferred from
            the toolchain and the command (see `harness_core.run.gate_inputs`).
        editable: Whether the agent may change those inputs. False (the default)
            write-protects them for the run under the policy layer ``gate``.
    """

    kind: CriterionKind = CriterionKind.COMMAND
    command: str = ""
    timeout_seconds: float = 600.0
    inputs: tuple[str, ...] | None = None
    editable: bool = False
    path: str = ""
    text: str | None = None
    regex: str | None = None
    page: int | None = None
    sheet: str | None = None

    def describe(self) -> str:
        """The criterion as one line (what a gate result calls it)."""
        if self.kind is CriterionKind.DOCUMENT_CONTAINS:
            what = f"/{self.regex}/" if self.regex is not None else repr(self.text)
            where = (f" page {self.page}" if self.page else "") + (
                f" sheet {self.sheet!r}" if self.sheet else "")
            return f"document_contains {self.path}{where} {what}"
        if self.kind is CriterionKind.EACH_COMPILES_PYTHON:
            return "each_compiles_python"
        return self.command


@record
class TaskContract:
    """What the run is for and how we know it is done.

    Attributes:
        goal: The goal given to the model.
        constraints: Extra instructions the model must follow (text, not policy).
        verify: The gates that run when the model says it is done.
    """

    goal: str = ""
    constraints: tuple[str, ...] = ()
    verify: tuple[VerifyCriterion, ...] = field(default_factory=tuple)
