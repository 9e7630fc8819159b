"""Build small workspaces with an io.toml and a scripted replay for CLI tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def replay_line(text: str = "", *calls: tuple[str, dict[str, Any]], tokens: int = 10) -> str:
    return json.dumps({
        "text": text,
        "tool_calls": [{"name": name, "arguments": args} for name, args in calls],
        "usage": {"prompt_tokens": tokens, "completion_tokens": 1, "total_tokens": tokens + 1},
    })


def make_workspace(root: Path, lines: list[str], *, toml_extra: str = "",
                   verify: str | None = None, files: dict[str, str] | None = None) -> Path:
    """A workspace with `io.toml` (scripted provider) and `replay.jsonl` made of `lines`."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "replay.jsonl").write_text("\n".join(lines) + "\n")
    toml = ('[provider]\nkind = "scripted"\nscript = "replay.jsonl"\n\n'
            '[sandbox]\nbackend = "floor"\n\n' + toml_extra + "\n")
    if verify is not None:
        toml += f'\n[[contract.verify]]\ncommand = "{verify}"\n'
    (root / "io.toml").write_text(toml)
    for name, content in (files or {}).items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return root


def json_lines(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]
