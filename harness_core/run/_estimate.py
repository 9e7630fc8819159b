"""Estimated usage: what a completion counts when its provider reports no tokens.

Some servers report no usage at all (llama.cpp's server when streaming, vLLM without
``include_usage``, some proxies). A budget that counted nothing for such a call would
fail open, so io counts an estimate instead and marks it (`Usage.estimated`): spend
and the trace say "estimated", and token and cost budgets draw it as they draw a
reported count.

The estimate is the context budget's: about four characters a token, four tokens of
overhead a message, over everything the request carried (every message, and the tool
specs as their JSON text) for the input, and over the answer's text and tool calls for
the output. It is rough by design (io ships no tokenizer): a token budget over an
estimating provider holds to within that error, not exactly. Nothing here does I/O.
"""

from __future__ import annotations

import json
from dataclasses import replace

from harness_core.messages import Message, Usage
from harness_core.providers import CompletionRequest, CompletionResponse
from harness_core.run._context import estimate_tokens

__all__ = ["estimate_usage", "with_estimate"]

_CHARS_PER_TOKEN = 4


def estimate_usage(request: CompletionRequest, response: CompletionResponse) -> Usage:
    """The estimated `Usage` of one completion (see the module docstring)."""
    prompt = sum(estimate_tokens(m) for m in request.messages)
    for spec in request.tools:
        text = spec.name + spec.description + json.dumps(spec.parameters)
        prompt += len(text) // _CHARS_PER_TOKEN
    completion = estimate_tokens(Message.assistant(response.text, response.tool_calls))
    return Usage(prompt_tokens=prompt, completion_tokens=completion,
                 total_tokens=prompt + completion, estimated=True)


def with_estimate(request: CompletionRequest, response: CompletionResponse) -> CompletionResponse:
    """`response` as it is when its provider reported a count, or with its usage
    estimated when the provider reported none (no prompt, completion or total)."""
    if response.usage.is_reported:
        return response
    estimate = estimate_usage(request, response)
    reported = response.usage
    return replace(response, usage=replace(
        estimate, server_tool_requests=reported.server_tool_requests))
