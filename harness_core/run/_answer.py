"""The root run's final answer checked against a JSON Schema (`io run --output-schema`).

`jsonschema` is imported only when a schema is given. Nothing here touches the store or
the terminal: the loop sends a failed check back to the model as an observation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from harness_core._record import record
from harness_core.errors import UsageError

__all__ = [
    "ANSWER_RETRIES",
    "SCHEMA_REFUSED",
    "AnswerCheck",
    "check_answer",
    "check_answer_schema",
    "schema_instructions",
]

ANSWER_RETRIES = 2
"""How many times a final answer that does not validate is sent back before the run
fails (three answers in all)."""

SCHEMA_REFUSED = "the final answer does not match the output schema"
"""How the reason of a run that ended refusing its last answer begins: such a run has
no answer, on its first ending and when `io resume` reports it again."""

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


def check_answer_schema(schema: Any) -> Mapping[str, Any]:
    """`schema` if it is a JSON Schema (an object its own meta-schema accepts).

    Raises:
        UsageError: It is not an object, or not a valid JSON Schema.
    """
    import jsonschema

    if not isinstance(schema, dict):
        raise UsageError("the output schema must be a JSON object (a JSON Schema)")
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise UsageError(f"the output schema is not a valid JSON Schema: {exc.message}",
                         hint="check it against https://json-schema.org") from None
    return schema


def check_answer(text: str, schema: Mapping[str, Any]) -> AnswerCheck:
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
    validator = jsonschema.validators.validator_for(schema)(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(the whole value)"
        return AnswerCheck("", f"at {where}: {error.message}")
    return AnswerCheck(json.dumps(value, ensure_ascii=False, indent=2), None)


def _no_constant(name: str) -> Any:
    """`NaN` and `Infinity` are not JSON (Python reads them; `jq` does not)."""
    raise ValueError(f"{name} is not a JSON value")


def schema_instructions(schema: Mapping[str, Any]) -> str:
    """What the model is told about the schema (appended to its goal)."""
    return ("When you are done, your final message must be only a JSON value (no other"
            " text) that validates against this JSON Schema:\n```json\n"
            + json.dumps(schema, indent=2, ensure_ascii=False) + "\n```")
