"""Keeping the provider key out of every error text a vendor or a socket produces.

A vendor's error body, an httpx exception's words and a proxy's refusal all pass
through a `Redactor` before they reach an exception message or an attempt record.
"""

from __future__ import annotations

import base64

__all__ = ["REDACTED", "Redactor", "one_line"]

REDACTED = "[REDACTED]"
_KEY_PREFIX_LEN = 12
"""Vendors echo a key's head in 401 bodies (``sk-proj-abc1…``); twelve characters is
enough to identify most keys, so that prefix is treated as the secret itself."""
_MAX_ERROR_CHARS = 300


class Redactor:
    """Removes a secret, its leading characters and its base64 forms from text.

    An echoed prefix is removed as far as it goes: if a vendor echoes the first 20
    characters, all 20 go, not only the first 12.
    """

    __slots__ = ("_secret", "_head", "_encoded")

    def __init__(self, secret: str) -> None:
        self._secret = secret
        self._head = secret[:_KEY_PREFIX_LEN]
        encoded: set[str] = set()
        if secret:
            raw = secret.encode()
            for enc in (base64.b64encode(raw), base64.urlsafe_b64encode(raw)):
                text = enc.decode().rstrip("=")
                if text:
                    encoded.add(text)
        # Longest first, so a longer form is never left half-replaced by a shorter one.
        self._encoded = sorted(encoded, key=len, reverse=True)

    def __repr__(self) -> str:
        return "Redactor(<secret>)"

    def __call__(self, text: str) -> str:
        if not self._secret or not text:
            return text
        for enc in self._encoded:
            text = text.replace(enc, REDACTED)
        text = text.replace(self._secret, REDACTED)
        return self._strip_prefixes(text)

    def _strip_prefixes(self, text: str) -> str:
        head = self._head
        start = text.find(head)
        while start != -1:
            end = start + len(head)
            # Extend the match while the text keeps following the secret.
            while (
                end < len(text)
                and end - start < len(self._secret)
                and text[end] == self._secret[end - start]
            ):
                end += 1
            text = text[:start] + REDACTED + text[end:]
            start = text.find(head, start + len(REDACTED))
        return text


def one_line(text: str, redact: Redactor) -> str:
    """Redact, flatten to one line and truncate a piece of vendor text."""
    flat = " ".join(redact(text).split())
    if len(flat) > _MAX_ERROR_CHARS:
        flat = flat[: _MAX_ERROR_CHARS - 1] + "…"
    return flat
