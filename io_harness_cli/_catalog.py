"""The catalog of `io`'s commands and groups: each name, the module that defines it and
its summary, and `command_path`, which names the command a command line runs.

It imports nothing of io's: `main` builds the app from it, and the error reporting of
`commands/` names the command a usage error's hint points at (importing `main` there
tied `main` → `commands/_entry` → `commands/_failure` → `main` into a circle).
"""

from __future__ import annotations

__all__ = ["_COMMANDS", "_GROUPS", "command_path"]

_COMMANDS: dict[str, tuple[str, str, str]] = {
    "run": ("run", "run",
            "Run an agent on GOAL (or the contract's goal) inside the configured boundary."),
    "resume": ("resume", "resume",
               "Resume RUN_ID where it stopped; nothing committed is run or requested again."),
    "runs": ("runs", "runs", "List recent runs, newest first."),
    "trace": ("trace", "trace",
              "Show what RUN_ID did: each step, each call and its observation, each refusal."),
    "spend": ("spend", "spend", "Tokens and derived cost by model, run, session or day or "
              "runner; unpriced calls are counted."),
    "batch": ("batch", "batch",
              "Run every task of TASKS.jsonl (or finish batch --resume BATCH_ID)."),
    "tool": ("tool", "tool", "Call one tool in the workspace under the loaded policy and "
             "print what the model\nwould see."),
    "toolchain": ("toolchain", "toolchain", "Print the detected toolchains (root and "
                  "nested), why, and what the run will use."),
    "steer": ("steer", "steer",
              "Send TEXT to the run; the model sees it at the next step boundary."),
    "interrupt": ("steer", "interrupt", "Stop the run at its next step boundary (it "
                  "checkpoints; `io resume` continues)."),
    "rewind": ("rewind", "rewind", "Restore RUN_ID's files to when step --to began and "
               "continue it from there as a new run."),
    "undo": ("rewind", "undo", "Revert the files of RUN_ID's last step that changed files "
             "(again: the one before)."),
    "doctor": ("doctor", "doctor", "Say which sandbox backends run here, why not, and what `auto` would pick."),
}
"""Command name -> (module under `io_harness_cli.commands`, function, the first paragraph
of its docstring), in help order. The index prints the summaries without importing the
commands; tests/integration/cli/test_help_index.py holds them to the docstrings."""

_GROUPS: dict[str, str] = {
    "config": "Show, check or start io.toml; print its JSON Schema.",
    "templates": "Prompt templates (NAME.md) for `io run --template NAME`.",
    "session": "Conversations whose turns are runs, in an append-only tree.",
    "store": "Check the run store, or copy it into PostgreSQL.",
}
"""Sub-apps (`io config ...`, each module's own `app`, after the commands) -> their help."""


def command_path(argv: list[str]) -> str:
    """The command a command line names, as its help shows it (`io run`, `io config
    check`, or `io` when it names none): where a usage error's hint points."""
    words = [arg for arg in argv if not arg.startswith("-")]
    if not words or (words[0] not in _COMMANDS and words[0] not in _GROUPS):
        return "io"
    if words[0] in _GROUPS and len(words) > 1 and words[1].replace("-", "").isalpha():
        return f"io {words[0]} {words[1]}"
    return f"io {words[0]}"
