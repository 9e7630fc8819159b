"""The root run's final answer checked against a JSON Schema (`io run --output-schema`).

`jsonschema` is imported only when a schema is given. Nothing here touches the store or
the terminal: the loop sends a failed check back to the model as an observation.

io fetches nothing to check a schema: every ``$ref`` (and ``$dynamicRef``) must point
into the schema itself (``#/$defs/item``, ``#anchor``). One that names another
document (``https://…``, ``other.json``) is refused when the schema is loaded, and the
validator is given a registry that cannot retrieve anything, so a schema that got past
the load (one recorded by an older version) still reaches no host: its reference is
reported as unresolvable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, NoReturn

from harness_core._record import record
from harness_core.errors import UsageError

if TYPE_CHECKING:
    from referencing._core import Resolver

__all__ = [
    "ANSWER_RETRIES",
    "SCHEMA_REFUSED",
    "AnswerCheck",
    "check_answer",
    "check_answer_schema",
    "reference_problem",
    "schema_instructions",
]

ANSWER_RETRIES = 2
"""How many times a final answer that does not validate is sent back before the run
fails (three answers in all)."""

SCHEMA_REFUSED = "the final answer does not match the output schema"
"""How the reason of a run that ended refusing its last answer begins: such a run has
no answer, on its first ending and when `io resume` reports it again."""

_REFS = ("$ref", "$dynamicRef")
"""The keywords whose value names another schema."""
_DATA = frozenset({"enum", "const", "default", "examples"})
"""Keywords whose value is data, not a schema: a ``$ref`` key inside is not a reference."""

_FENCE = re.compile(r"\A```(?:json|JSON)?[ \t]*\n(?P<body>(?:(?!```).)*)\n[ \t]*```\Z", re.DOTALL)
"""One fenced block and nothing else (no second fence inside it)."""


@record
class AnswerCheck:
    """A final answer checked against the output schema.

    Attributes:
        document: The JSON the check validated, as io writes it (the model's value, out
            of its fence, serialised once); "" when the answer was refused.
        problem: Why the answer was refused (None: it was accepted).
    """

    document: str
    problem: str | None


def check_answer_schema(schema: object) -> Mapping[str, object]:
    """`schema` if it is a JSON Schema (an object its own meta-schema accepts) whose
    references all resolve inside it.

    Raises:
        UsageError: It is not an object, not a valid JSON Schema, or a ``$ref`` names
            another document (io would have to fetch it) or nothing in the schema.
    """
    import jsonschema

    if not isinstance(schema, dict):
        raise UsageError("the output schema must be a JSON object (a JSON Schema)")
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise UsageError(f"the output schema is not a valid JSON Schema: {exc.message}",
                         hint="check it against https://json-schema.org") from None
    problem = reference_problem(schema)
    if problem is not None:
        raise UsageError(f"the output schema {problem}",
                         hint="copy what it refers to under \"$defs\" and refer to it as"
                              " \"#/$defs/NAME\"; io fetches nothing to check an answer")
    return schema


def reference_problem(schema: Mapping[str, object]) -> str | None:
    """Why a reference of `schema` would not resolve inside it (None: every one does)."""
    import referencing
    import referencing.exceptions
    import referencing.jsonschema

    spec = referencing.jsonschema.specification_with(
        str(schema.get("$schema", "")), default=referencing.jsonschema.DRAFT202012)
    resolver = referencing.Registry().resolver_with_root(spec.create_resource(schema))
    pending: list[tuple[object, Resolver[object], bool]] = [(schema, resolver, True)]
    while pending:
        node, here, root = pending.pop()
        if isinstance(node, list):
            pending.extend((item, here, False) for item in node)
            continue
        if not isinstance(node, dict):
            continue
        if not root and isinstance(node.get("$id"), str):
            here = here.in_subresource(spec.create_resource(node))
        for keyword in _REFS:
            target = node.get(keyword)
            if not isinstance(target, str):
                continue
            if not target.startswith("#"):
                return (f"has {keyword} {target!r}, which names another document; only"
                        " references into the schema itself (\"#/...\") are allowed")
            try:
                here.lookup(target)
            except referencing.exceptions.Unresolvable:
                return f"has {keyword} {target!r}, which names nothing in the schema"
        pending.extend((value, here, False) for key, value in node.items() if key not in _DATA)
    return None


def check_answer(text: str, schema: Mapping[str, object]) -> AnswerCheck:
    """Check `text` as a JSON value valid under `schema`.

    When the whole answer is one fenced block (```` ```json ````), its body is checked;
    anything else around the value is refused. An accepted answer's `document` is the
    value serialised again: exactly one JSON document, which `jq` reads.
    """
    import jsonschema

    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced is not None:
        body = fenced.group("body").strip()
    try:
        value = json.loads(body, parse_constant=_no_constant)
    except (json.JSONDecodeError, ValueError) as exc:
        where = (f" ({exc.msg} at line {exc.lineno} column {exc.colno})"
                 if isinstance(exc, json.JSONDecodeError) else f" ({exc})")
        return AnswerCheck("", f"the answer is not JSON{where}")
    import referencing
    import referencing.exceptions

    # An empty registry retrieves nothing: a reference outside the schema is an error here,
    # never a fetch (jsonschema's default registry still downloads one, with a warning).
    validator = jsonschema.validators.validator_for(schema)(schema,
                                                            registry=referencing.Registry())
    try:
        error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    except referencing.exceptions.Unresolvable as exc:
        return AnswerCheck("", f"the output schema has a reference io does not resolve ({exc})")
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(the whole value)"
        return AnswerCheck("", f"at {where}: {error.message}")
    return AnswerCheck(json.dumps(value, ensure_ascii=False, indent=2), None)


def _no_constant(name: str) -> NoReturn:
    """`NaN` and `Infinity` are not JSON (Python reads them; `jq` does not)."""
    raise ValueError(f"{name} is not a JSON value")


def schema_instructions(schema: Mapping[str, object]) -> str:
    """What the model is told about the schema (appended to its goal)."""
    return ("When you are done, your final message must be only a JSON value (no other"
            " text) that validates against this JSON Schema:\n```json\n"
            + json.dumps(schema, indent=2, ensure_ascii=False) + "\n```")
