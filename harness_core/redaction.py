"""Keeping secret values out of every record: the store, events, traces and printed output.

io knows every secret it loaded: each value a `${env:}` or `${file:}` substitution
produced, each credential in io.toml, each provider key it holds (`config/` collects
them). A command can still print one (under the floor and off backends it may see the
key in its environment), and a model can repeat one. `SecretRedactor` replaces every
occurrence before anything is written: the store runs every text it writes through it
(`Store.redact_with`), `RedactingSink` runs every event through it, and the CLI runs
what it prints through it.

Forms: the value itself, its JSON-escaped forms (a record that is JSON text holds the
escaped value) and its base64 forms. A value shorter than `MIN_SECRET_LENGTH`
characters is left alone: it would mangle every record while protecting nothing.

Cut values: output is capped by keeping its head and its tail, so a value can be cut
in two. A piece of a secret at least `MIN_FRAGMENT` characters long that ends a text, a
line or a JSON string (its head) or starts one (its tail) is replaced as well.

Streams: a secret can arrive split across chunks (token events). `StreamRedactor`
holds back the end of a chunk for as long as it could be the start of a secret, and
releases it once the next chunk shows it is not (or the stream ends).

This module does no I/O and never logs a secret; `repr` of a redactor hides its values.
"""

from __future__ import annotations

import base64
import json
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from harness_core.events import Event, EventKind, EventSink

__all__ = ["MIN_SECRET_LENGTH", "REDACTED", "RedactingSink", "SecretRedactor", "StreamRedactor"]

REDACTED = "[REDACTED]"
"""What every secret is replaced with in a record."""

MIN_FRAGMENT = 12
"""The shortest piece of a cut secret that is replaced (where a text, line or JSON string
ends or starts); vendors echo a key's first twelve characters as its name."""

MIN_SECRET_LENGTH = 8
"""Values shorter than this are not redacted: no credential is that short, and a
short value (a `${env:}` that names a region) would mangle ids and timestamps."""


def _forms(secret: str) -> set[str]:
    forms = {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}
    raw = secret.encode("utf-8", "surrogatepass")
    for encoded in (base64.b64encode(raw), base64.urlsafe_b64encode(raw)):
        text = encoded.decode().rstrip("=")
        if len(text) >= MIN_SECRET_LENGTH:
            forms.add(text)
    return {form for form in forms if len(form) >= MIN_SECRET_LENGTH}


def _ends_here(text: str, at: int) -> bool:
    return at == len(text) or text[at] in '\n"' or text.startswith("\\n", at)


def _starts_here(text: str, at: int) -> bool:
    return at == 0 or text[at - 1] in '\n"' or (at >= 2 and text[at - 2 : at] == "\\n")


def _heads(text: str, form: str) -> list[tuple[int, int]]:
    """Spans of pieces of `form`'s head that end a text, line or JSON string."""
    spans: list[tuple[int, int]] = []
    anchor = form[:MIN_FRAGMENT]
    at = text.find(anchor)
    while at != -1:
        size = MIN_FRAGMENT
        while size < len(form) and at + size < len(text) and text[at + size] == form[size]:
            size += 1
        if size < len(form) and _ends_here(text, at + size):
            spans.append((at, at + size))
        at = text.find(anchor, at + 1)
    return spans


def _tails(text: str, form: str) -> list[tuple[int, int]]:
    """Spans of pieces of `form`'s tail that start a text, line or JSON string."""
    spans: list[tuple[int, int]] = []
    anchor = form[-MIN_FRAGMENT:]
    at = text.find(anchor)
    while at != -1:
        size = MIN_FRAGMENT
        while size < len(form) and at + MIN_FRAGMENT - size - 1 >= 0 and (
            text[at + MIN_FRAGMENT - size - 1] == form[-size - 1]
        ):
            size += 1
        begin = at + MIN_FRAGMENT - size
        if size < len(form) and _starts_here(text, begin):
            spans.append((begin, at + MIN_FRAGMENT))
        at = text.find(anchor, at + 1)
    return spans


def _cut_pieces(text: str, forms: tuple[str, ...]) -> str:
    spans = [span for form in forms if len(form) > MIN_FRAGMENT
             for span in (*_heads(text, form), *_tails(text, form))]
    if not spans:
        return text
    merged: list[list[int]] = []
    for begin, end in sorted(spans):
        if merged and begin <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([begin, end])
    out: list[str] = []
    last = 0
    for begin, end in merged:
        out += [text[last:begin], REDACTED]
        last = end
    out.append(text[last:])
    return "".join(out)


class SecretRedactor:
    """Replaces every known secret value (and its escaped forms) with `REDACTED`.

    Args:
        secrets: The values to remove; empty and short ones are ignored.
    """

    __slots__ = ("_forms", "_pattern", "_probes")

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        forms: set[str] = set()
        for secret in secrets:
            if isinstance(secret, str) and len(secret) >= MIN_SECRET_LENGTH:
                forms |= _forms(secret)
        # Longest first: a longer form is never left half-replaced by a shorter one.
        self._forms = tuple(sorted(forms, key=len, reverse=True))
        self._pattern = (re.compile("|".join(re.escape(f) for f in self._forms))
                         if self._forms else None)
        # What any text that `__call__` changes contains: a whole form, or the anchor
        # `_cut_pieces` looks for (a longer form's first or last `MIN_FRAGMENT`
        # characters, which a whole form holds too). A text holding none is returned
        # as it is without the replacing and the cutting (most texts a run writes).
        probes: set[str] = set()
        for form in self._forms:
            if len(form) > MIN_FRAGMENT:
                probes |= {form[:MIN_FRAGMENT], form[-MIN_FRAGMENT:]}
            else:
                probes.add(form)
        self._probes = tuple(sorted(probes))

    def __repr__(self) -> str:
        return f"SecretRedactor(<{len(self._forms)} forms>)"

    def __bool__(self) -> bool:
        return self._pattern is not None

    def __call__(self, text: str) -> str:
        """`text` with every secret form replaced, and every piece of one cut off at an
        end of the text, a line or a JSON string."""
        if self._pattern is None or not text:
            return text
        for probe in self._probes:
            if probe in text:
                return _cut_pieces(self._pattern.sub(REDACTED, text), self._forms)
        return text

    def whole(self, text: str) -> str:
        """`text` with every whole secret form replaced (no pieces): for a stream."""
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(REDACTED, text)

    def value(self, value: Any) -> Any:
        """`value` (JSON-like: str, list, tuple, dict) with every string redacted."""
        if isinstance(value, str):
            return self(value)
        if isinstance(value, dict):
            return {self(k) if isinstance(k, str) else k: self.value(v)
                    for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value

    def held(self, text: str) -> int:
        """How many characters at the end of `text` could begin a secret form."""
        longest = 0
        for form in self._forms:
            for size in range(min(len(form) - 1, len(text)), longest, -1):
                if text.endswith(form[:size]):
                    longest = size
                    break
        return longest

    def stream(self) -> StreamRedactor:
        """A redactor for one stream of chunks."""
        return StreamRedactor(self)


class StreamRedactor:
    """Redacts a stream of text chunks, including a secret split across chunks."""

    __slots__ = ("_held", "_redact")

    def __init__(self, redact: SecretRedactor) -> None:
        self._redact = redact
        self._held = ""

    def feed(self, chunk: str) -> str:
        """The text that can be released now (possibly empty); the rest is held."""
        text = self._redact.whole(self._held + chunk)
        keep = self._redact.held(text)
        self._held = text[len(text) - keep:] if keep else ""
        return text[: len(text) - keep]

    def flush(self) -> str:
        """The held text, released at the end of the stream (a secret's head that ends
        the stream is replaced)."""
        text, self._held = self._held, ""
        return self._redact(text)


class RedactingSink:
    """An event sink that redacts every event before passing it on.

    Token events are a stream per run and step: a secret split across them is
    caught, the held text released before the run's next other event.

    Args:
        sink: Where the redacted events go.
        redact: The redactor.
    """

    def __init__(self, sink: EventSink, redact: SecretRedactor) -> None:
        self._sink = sink
        self._redact = redact
        self._streams: dict[tuple[str, object], StreamRedactor] = {}
        self._lock = threading.Lock()

    def __call__(self, event: Event) -> None:
        with self._lock:
            for out in self._events(event):
                self._sink(out)

    def _events(self, event: Event) -> list[Event]:
        if event.kind is EventKind.TOKEN:
            key = (event.run_id, event.data.get("step"))
            stream = self._streams.setdefault(key, self._redact.stream())
            text = stream.feed(str(event.data.get("text", "")))
            return [replace(event, data={**event.data, "text": text})] if text else []
        out = [self._flushed(event, key) for key in self._open(event.run_id)]
        data = self._redact.value(event.data)
        # Most events hold no secret: passed on as they are, not rebuilt.
        out.append(event if data == event.data else replace(event, data=data))
        return [e for e in out if e is not None]

    def _open(self, run_id: str) -> list[tuple[str, object]]:
        return [key for key in self._streams if key[0] == run_id]

    def _flushed(self, event: Event, key: tuple[str, object]) -> Event | None:
        text = self._streams.pop(key).flush()
        if not text:
            return None
        return replace(event, kind=EventKind.TOKEN, data={"text": text, "step": key[1]})


def redacting(sink: EventSink | None, redact: SecretRedactor) -> EventSink | None:
    """`sink` wrapped in a `RedactingSink` when there is anything to redact."""
    if sink is None or not redact:
        return sink
    return RedactingSink(sink, redact)


Redact = Callable[[str], str]
"""A function that removes secrets from text."""
