"""Prompt templates, rendered strictly, and the skills catalogue.

`render` substitutes `{{name}}` placeholders and puts whatever is left over at
`$ARGUMENTS`. It returns text and can set nothing else (no policy, budget or tool). A
placeholder without a value is an error, never an empty string; substitution is single
pass, so a value that contains `{{x}}` is emitted as it is. There is no template
language: no conditionals, loops or includes.

`Templates` finds `NAME.md` files in the template directories (the workspace's
`.io/templates/`, or `[templates] dir`, then the user scope's). `discover_skills` reads
the front matter of each `.io/skills/NAME/SKILL.md`: the catalogue the system prompt
lists; a skill's body is read by the model, with `read_file`, only when it wants it.
This module reads files the operator put there and never writes any.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from harness_core._record import record
from harness_core.errors import ConfigError, UsageError

__all__ = ["Skill", "TemplateInfo", "Templates", "discover_skills", "render_template"]

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def render_template(template: str, values: Mapping[str, str], arguments: str = "") -> str:
    """Fill `template`.

    Args:
        template: Text with `{{name}}` placeholders and optionally `$ARGUMENTS`.
        values: A value for every placeholder.
        arguments: Text put where `$ARGUMENTS` appears.

    Raises:
        ConfigError: A placeholder has no value.
    """
    missing = sorted({m.group(1) for m in _PLACEHOLDER.finditer(template)} - set(values))
    if missing:
        raise ConfigError(f"template placeholder(s) without a value: {', '.join(missing)}")
    parts: list[str] = []
    last = 0
    for match in _PLACEHOLDER.finditer(template):
        parts.append(template[last:match.start()].replace("$ARGUMENTS", arguments))
        parts.append(values[match.group(1)])
        last = match.end()
    parts.append(template[last:].replace("$ARGUMENTS", arguments))
    return "".join(parts)


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_MAX_SKILLS = 200
_MAX_DESCRIPTION = 300


def _front_matter(text: str) -> tuple[dict[str, str], str]:
    """(`key: value` pairs of a leading ``---`` block, the text after it)."""
    if not text.startswith("---\n") and not text.startswith("---\r\n"):
        return {}, text
    lines = text.splitlines(keepends=True)
    meta: dict[str, str] = {}
    for index, line in enumerate(lines[1:], start=1):
        if line.strip() == "---":
            return meta, "".join(lines[index + 1:])
        key, sep, value = line.partition(":")
        if sep and key.strip():
            meta[key.strip().lower()] = value.strip().strip("\"'")
    return {}, text  # never closed: not front matter


@record
class TemplateInfo:
    """One template a directory holds.

    Attributes:
        name: What `io run --template NAME` calls it (the file name without `.md`).
        path: The file.
        description: The `description:` of its front matter, or "".
        shadowed: Whether a directory searched earlier holds the same name.
    """

    name: str
    path: Path
    description: str = ""
    shadowed: bool = False


class Templates:
    """Prompt templates: `NAME.md` files in directories searched in order.

    Rendering returns text and nothing else, which is what makes a shared template
    directory safe to read: a template cannot set a policy, a budget, a tool, a model or
    a gate.

    Args:
        dirs: The directories, first match wins (the workspace's, then the user's).
    """

    def __init__(self, dirs: Sequence[Path]) -> None:
        self.dirs = tuple(dirs)

    def available(self) -> list[TemplateInfo]:
        """Every template, by directory then name; a shadowed duplicate is marked."""
        seen: set[str] = set()
        out: list[TemplateInfo] = []
        for directory in self.dirs:
            try:
                files = sorted(p for p in directory.iterdir() if p.suffix == ".md" and p.is_file())
            except OSError:
                continue
            for path in files:
                meta, _ = _front_matter(_read(path))
                out.append(TemplateInfo(path.stem, path, meta.get("description", ""),
                                        shadowed=path.stem in seen))
                seen.add(path.stem)
        return out

    def find(self, name: str) -> Path:
        """The file of template `name`.

        Raises:
            UsageError: No template has that name (the message names those that exist).
        """
        if _NAME.fullmatch(name) is not None:
            for directory in self.dirs:
                path = directory / f"{name}.md"
                if path.is_file():
                    return path
        known = sorted({t.name for t in self.available()})
        raise UsageError(
            f"no template named {name!r}" + (f"; available: {', '.join(known)}" if known
                                              else " (no template directory holds any)"),
            hint="templates are NAME.md files in " + ", ".join(str(d) for d in self.dirs))

    def render(self, name: str, values: Mapping[str, str], arguments: str = "") -> str:
        """Template `name` filled strictly: every `{{key}}` needs a value, every value
        must be used, and `arguments` need a `$ARGUMENTS` to go to.

        Raises:
            UsageError: No such template, a value missing or unused, arguments with
                nowhere to go.
        """
        _, body = _front_matter(_read(self.find(name)))
        used = {m.group(1) for m in _PLACEHOLDER.finditer(body)}
        unused = sorted(set(values) - used)
        if unused:
            raise UsageError(f"template {name!r} has no placeholder for: {', '.join(unused)}",
                             hint=f"its placeholders: {', '.join(sorted(used)) or 'none'}")
        if arguments and "$ARGUMENTS" not in body:
            raise UsageError(f"template {name!r} takes no arguments (it has no $ARGUMENTS)")
        try:
            return render_template(body, values, arguments)
        except ConfigError as exc:
            raise UsageError(f"template {name!r}: {exc.message}",
                             hint="give each one as KEY=VALUE") from None


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read template {path}: {exc}") from exc


@record
class Skill:
    """One skill of the catalogue: `.io/skills/NAME/SKILL.md`.

    Attributes:
        name: The directory's name.
        description: The one-line `description:` of its front matter.
        path: The file, relative to the workspace (what the model passes to read_file).
    """

    name: str
    description: str
    path: str


def discover_skills(root: Path) -> tuple[Skill, ...]:
    """The skills catalogue of the workspace at `root`: name and description only.

    Only each file's front matter is read; a body reaches the model only when the model
    reads it with `read_file` (checked by the policy like any read). A skill without a
    one-line description, or whose file resolves outside the workspace, is left out.
    """
    base = root / ".io" / "skills"
    try:
        entries = sorted(p for p in base.iterdir() if p.is_dir())
    except OSError:
        return ()
    resolved_root = root.resolve()
    skills: list[Skill] = []
    for directory in entries[:_MAX_SKILLS]:
        path = directory / "SKILL.md"
        try:
            if not path.resolve().is_relative_to(resolved_root) or not path.is_file():
                continue
            with path.open(encoding="utf-8", errors="replace") as handle:
                head = handle.read(4096)
        except OSError:
            continue
        meta, _ = _front_matter(head)
        description = " ".join(meta.get("description", "").split())[:_MAX_DESCRIPTION]
        if description and _NAME.fullmatch(directory.name):
            skills.append(Skill(directory.name, description,
                                f".io/skills/{directory.name}/SKILL.md"))
    return tuple(skills)
