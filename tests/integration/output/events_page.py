"""docs/guide/events.md, made from the shipped event schema (`event_json_schema()`).

Regenerate after changing harness_core/schemas/events.schema.json:

    python -m tests.integration.output.events_page > docs/guide/events.md

`tests/integration/output/test_event_schema.py` fails while the page is out of date.
"""

from __future__ import annotations

import sys
from typing import Any

from harness_core import event_json_schema

__all__ = ["render_page"]

_HEAD = """# `--json` events

<!-- Made from harness_core/schemas/events.schema.json by
     `python -m tests.integration.output.events_page > docs/guide/events.md`; edit the schema. -->

`io run --json`, `io resume --json`, `io session turn --json` and `io batch --json` write
one JSON object per line on stdout, nothing else. Every line carries `schema` (the
version of the shape, now 1) and `kind`. The schema of every line ships with io:

```python
from harness_core import event_json_schema
schema = event_json_schema()   # JSON Schema, draft 2020-12; $defs/<kind> per kind
```

Kinds and fields may be added without a new `schema` version: a consumer ignores what it
does not know. A field marked *required* is on every line of its kind; the others appear
where they apply. `run_finished` is always the last line of a run's stream, and
`batch_finished` the last of a batch's.

Every run event (all kinds but `run_finished`, `batch_task` and `batch_finished`) also
carries:

"""


def _type(prop: dict[str, Any]) -> str:
    if "$ref" in prop:
        name = str(prop["$ref"]).rsplit("/", 1)[-1]
        return f"[{name}](#{name})"
    if "const" in prop:
        return f"`{prop['const']!s}`" if not isinstance(prop["const"], str) else f'`"{prop["const"]}"`'
    if "enum" in prop:
        return " \\| ".join(f"`{v}`" for v in prop["enum"])
    if "anyOf" in prop:
        return " or ".join(_type(p) for p in prop["anyOf"])
    kind = prop.get("type", "any")
    names = kind if isinstance(kind, list) else [kind]
    return " or ".join(str(n) for n in names)


def _table(definition: dict[str, Any]) -> list[str]:
    required = set(definition.get("required", []))
    rows = ["| field | type | required | meaning |", "|---|---|---|---|"]
    for name, prop in definition.get("properties", {}).items():
        if name in ("schema", "kind") and "allOf" in definition:
            continue
        text = str(prop.get("description", "")).replace("|", "\\|")
        rows.append(f"| `{name}` | {_type(prop)} | {'yes' if name in required else ''} | {text} |")
    return rows


def render_page(schema: dict[str, Any]) -> str:
    """The Markdown page for `schema`."""
    defs: dict[str, Any] = schema["$defs"]
    out = [_HEAD.rstrip("\n"), "", *_table(defs["run_event"]), "", "## Kinds", ""]
    kinds = [str(rule["then"]["$ref"]).rsplit("/", 1)[-1] for rule in schema["allOf"]]
    for kind in kinds:
        definition = defs[kind]
        out += [f"### {kind}", "", str(definition.get("description", "")), "",
                *_table(definition), ""]
    out += ["## Shared shapes", ""]
    for name in ("usage", "pause", "gate"):
        out += [f"### {name}", "", str(defs[name].get("description", "")), "",
                *_table(defs[name]), ""]
    return "\n".join(out).rstrip("\n") + "\n"


if __name__ == "__main__":
    sys.stdout.write(render_page(event_json_schema()))
