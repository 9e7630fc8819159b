"""What a run costs in input tokens, per wire (issue #36 figures).

    python bench/tokens.py [--steps 100]

`io run` (the real CLI, a child process) against the loopback fake of each vendor
(`tests/fakes/vendor_server.py`, streaming on), N steps of one `exec` call of `echo`
each; the fake keeps every request body as sent. For each wire it prints:

- the first request's size, and how much of it is tool specs;
- the bytes sent over the run;
- the share of each request (after step 2) that repeats the previous request's prefix,
  compared in the order the vendor caches a prompt (tools, system, conversation) with
  the cache marks left out, and how many requests fell under 95 % (breaks);
- billed byte-equivalents under each vendor's published prompt-caching rules, and
  their ratio to the bytes sent:
  - Anthropic (and OpenRouter routed to ``anthropic/*``): only a marked prefix is
    cached; a cache write bills 1.25×, a read 0.1×, the rest 1×. A request reads what
    the previous request wrote (its prefix up to its last mark) when it starts with it,
    and writes the rest up to its own last mark.
  - OpenAI (Chat and Responses): a prompt of 1,024 tokens or more is cached by itself
    in blocks of 128 tokens; a read bills 0.1× (the GPT-5 family; 0.25× for GPT-4.1),
    nothing bills a write. Tokens are taken as 4 bytes.
- each tool spec's size (name, description, parameters as sent), paid on every step,
  and how much of it is the description.

Bytes stand for tokens throughout (the ratio is what matters, and tokenizers differ).
Figures only: no timing, no assertion.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fakes.vendor_server import (  # noqa: E402
    VENDORS,
    FakeCall,
    RecordedRequest,
    Reply,
    Turn,
    start_vendor_server,
    tool_results_in,
)

_WRITE, _READ = 1.25, 0.1
_OPENAI_READ, _OPENAI_MIN, _OPENAI_BLOCK = 0.1, 1024 * 4, 128 * 4
_ANTHROPIC_MODEL = "anthropic/claude-sonnet-4.5"


def responder(steps: int) -> Callable[[RecordedRequest], Reply]:
    def respond(request: RecordedRequest) -> Reply:
        step = tool_results_in(request)
        if step < steps:
            call = FakeCall(f"call_{step}", "exec", json.dumps({"argv": ["echo", f"hi {step}"]}))
            return Turn(text=f"step {step}", tool_calls=(call,))
        return Turn(text="done")

    return respond


def run(vendor: str, steps: int, model: str) -> list[RecordedRequest]:
    with tempfile.TemporaryDirectory() as tmp, start_vendor_server(vendor) as fake:  # type: ignore[arg-type]
        fake.responder = responder(steps)
        ws = Path(tmp) / "ws"
        ws.mkdir()
        (ws / "io.toml").write_text(
            f'[provider]\nkind = "{vendor}"\nmodel = "{model}"\nbase_url = "{fake.base_url}"\n'
            'api_key = "bench-key"\nstream = true\n\n[policy]\nallow_exec = ["echo*"]\n\n'
            f'[sandbox]\nbackend = "off"\n\n[budget]\nmax_steps = {steps + 5}\n')
        env = dict(os.environ, IO_STORE=str(Path(tmp) / "io.db"), NO_COLOR="1",
                   PYTHONPATH=str(ROOT))
        done = subprocess.run([sys.executable, "-m", "io_harness_cli", "run", "bench", "-w",
                               str(ws), "--json"], env=env, capture_output=True, cwd=ROOT)
        if done.returncode != 0:
            raise SystemExit(f"io run failed: {done.stderr.decode()[-2000:]}")
        return list(fake.requests)


def _unmarked(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_unmarked(v) for v in value]
    return value


def cached_order(vendor: str, body: dict[str, Any], *, marks: bool = False) -> bytes:
    """The prompt as the vendor's cache reads it: tools, system, conversation."""
    parts: list[Any] = [body.get("tools") or []]
    if vendor == "anthropic":
        parts += [body.get("system"), body.get("messages")]
    else:
        parts += [body.get("input" if vendor == "openai-responses" else "messages")]
    return json.dumps(parts if marks else _unmarked(parts), separators=(",", ":")).encode()


def common(a: bytes, b: bytes) -> int:
    n, limit = 0, min(len(a), len(b))
    while n < limit and a[n] == b[n]:
        n += 1
    return n


def last_mark(text: bytes) -> int:
    """Where the last cache breakpoint ends in `text` (0: no mark)."""
    at = text.rfind(b'"cache_control"')
    if at < 0:
        return 0
    return text.find(b"}", at) + 1


def billed_marked(prompts: list[bytes], marked: list[bytes]) -> float:
    """Anthropic's rules over unmarked prompts, with the mark positions of `marked`.
    The mark positions are mapped to the unmarked text by the share of the request."""
    total, cached, prev = 0.0, 0, b""
    for text, with_marks in zip(prompts, marked, strict=True):
        end = last_mark(with_marks)
        upto = round(len(text) * end / len(with_marks)) if end else 0
        read = min(cached, common(text, prev)) if cached else 0
        write = max(0, upto - read)
        total += read * _READ + write * _WRITE + (len(text) - read - write)
        cached, prev = upto, text
    return total


def billed_auto(prompts: list[bytes]) -> float:
    """OpenAI's rules: a long prompt's shared prefix, in whole blocks, read at 0.1×."""
    total, prev = 0.0, b""
    for text in prompts:
        read = 0
        if len(text) >= _OPENAI_MIN and prev:
            read = common(text, prev) // _OPENAI_BLOCK * _OPENAI_BLOCK
        total += read * _OPENAI_READ + (len(text) - read)
        prev = text
    return total


def report(vendor: str, steps: int, model: str) -> None:
    requests = run(vendor, steps, model)
    first = requests[0]
    sent = sum(len(r.raw) for r in requests)
    tools = json.dumps(first.body.get("tools") or [], separators=(",", ":")).encode()
    prompts = [cached_order(vendor, r.body) for r in requests]
    shares = [common(a, b) / len(b) for a, b in zip(prompts, prompts[1:], strict=False)][2:]
    marked = [cached_order(vendor, r.body, marks=True) for r in requests]
    has_marks = any(b'"cache_control"' in m for m in marked)
    size = sum(len(p) for p in prompts)
    billed = billed_marked(prompts, marked) if has_marks else (
        float(size) if vendor == "anthropic" or model.startswith("anthropic/")
        else billed_auto(prompts))
    repeated = sum(common(a, b) for a, b in zip(prompts, prompts[1:], strict=False))
    name = vendor if vendor != "openrouter" else f"openrouter ({model})"
    print(f"{name}: first request {len(first.raw) / 1024:.1f} KB"
          f" ({len(tools) / 1024:.1f} KB tool specs); {steps} steps sent"
          f" {sent / 1e6:.2f} MB, {repeated / 1e6:.2f} MB of it repeating the previous"
          f" prefix; share after step 2 min {min(shares):.1%}"
          f" mean {sum(shares) / len(shares):.1%}, breaks (<95%)"
          f" {sum(1 for s in shares if s < 0.95)}; billed {billed / 1e6:.3f} M"
          f" byte-equivalents = {billed / size:.3f} of the prompt bytes"
          f"{' (1.000 without the marks)' if has_marks else ' (no cache marks)'}")


def _spec_size(spec: dict[str, Any], *, description: bool = True) -> int:
    if not description:
        spec = {**spec, "function": {**spec["function"], "description": ""}}
    return len(json.dumps(spec, separators=(",", ":")))


def tool_specs() -> None:
    """Each spec's size as sent, and how much of it is the tool's description (the rest is
    the name, the schema with its property descriptions, and the wire's own wrapping)."""
    requests = run("openai", 1, "bench-model")
    specs = requests[0].body.get("tools") or []
    sizes = sorted(((_spec_size(t), _spec_size(t) - _spec_size(t, description=False),
                     t["function"]["name"]) for t in specs), reverse=True)
    described = sum(d for _, d, _ in sizes)
    print(f"tool specs (OpenAI wire), {len(specs)} tools, {sum(s for s, _, _ in sizes)} bytes,"
          f" {described} of them descriptions:")
    for size, desc, name in sizes:
        print(f"  {name:<16} {size:>5} B (description {desc} B)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=100)
    steps = parser.parse_args().steps
    for vendor in VENDORS:
        report(vendor, steps, "bench-model")
    report("openrouter", steps, _ANTHROPIC_MODEL)
    tool_specs()


if __name__ == "__main__":
    main()
