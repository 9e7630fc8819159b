"""The one `io resume` command line that continues a run, for every view that names it:
the pause and interrupt lines of `io run`, `run_finished.resume` and `io runs --json`.

A value the operator chooses (an answer, a new step budget) is written `"…"`: a script
replaces it, and nothing else needs parsing.
"""

from __future__ import annotations

__all__ = ["resume_command"]

_ROOM_FLAGS = (("token budget", "--max-tokens"), ("cost budget", "--max-cost"),
               ("wall-clock budget", "--max-wall"))


def resume_command(run_id: str, status: str, *, pause_kind: str | None = None,
                   reason: str | None = None) -> str | None:
    """The command that continues run `run_id`, None when it cannot go on (finished,
    failed, or running under a live io).

    Args:
        run_id: The run (the root of a tree).
        status: Its status (`RunStatus` value).
        pause_kind: ``question`` or ``approval`` when it is paused.
        reason: Why it stopped (a stopped run: which budget to raise).
    """
    if status == "paused":
        if pause_kind == "question":
            return f'io resume {run_id} --answer "…"'
        return f"io resume {run_id} --approve"
    if status in ("interrupted", "errored"):
        return f"io resume {run_id}"
    if status == "stopped":
        flag = next((f for words, f in _ROOM_FLAGS if words in (reason or "")), "--max-steps")
        return f'io resume {run_id} {flag} "…"'
    return None
