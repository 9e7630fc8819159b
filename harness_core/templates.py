"""Prompt and role templates, rendered strictly.

`render` substitutes `{{name}}` placeholders and puts whatever is left over at
`$ARGUMENTS`. It returns text and can set nothing else (no policy, budget or tool). A
placeholder without a value is an error, never an empty string; substitution is single
pass, so a value that contains `{{x}}` is emitted as it is. There is no template
language: no conditionals, loops or includes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from harness_core.errors import ConfigError

__all__ = ["render_template"]

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
