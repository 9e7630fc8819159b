"""The context budget: what the model sees stays under a token ceiling.

The oldest tool observations are replaced by a marker saying what was elided and how to
see it again; the newest are kept whole, and the store keeps everything. Token counts
are estimated (about four characters a token) because no tokenizer is shipped.
"""

from __future__ import annotations

from harness_core.messages import Message, Role

__all__ = ["ContextBudget", "estimate_tokens"]

_CHARS_PER_TOKEN = 4
_MESSAGE_OVERHEAD = 4
ELIDE_TO = 0.75
"""Past its ceiling the view is elided down to this share of it, in one block."""


def estimate_tokens(message: Message) -> int:
    """A rough token estimate of one message."""
    size = len(message.content)
    for call in message.tool_calls:
        size += len(call.name) + len(str(call.arguments))
    return size // _CHARS_PER_TOKEN + _MESSAGE_OVERHEAD


class ContextBudget:
    """Keeps a running view of the conversation under `max_tokens`.

    Appending is O(1); a view is built per step. Elision only ever moves forward, so a
    message elided once stays elided (the view is stable step to step), past the ceiling
    it elides a block at once (down to `ELIDE_TO` of it) so the cached prefix changes
    once in many steps rather than on each, and its marker
    is made once: every later view holds the same marker object, which the providers'
    encoders recognise by identity and do not encode again.
    """

    def __init__(self, max_tokens: int | None) -> None:
        self.max_tokens = max_tokens
        self._messages: list[Message] = []
        self._shown: list[Message] = []  # `_messages` with each elided one as its marker
        self._sizes: list[int] = []
        self._total = 0
        self._elided: set[int] = set()
        self._next_candidate = 0

    def extend(self, messages: list[Message]) -> None:
        for message in messages:
            self.append(message)

    def append(self, message: Message) -> None:
        self._messages.append(message)
        self._shown.append(message)
        size = estimate_tokens(message)
        self._sizes.append(size)
        self._total += size

    def reset(self, messages: list[Message]) -> None:
        """Start over from `messages` (a compaction replaced the older turns)."""
        self._messages, self._shown, self._sizes = [], [], []
        self._total, self._elided, self._next_candidate = 0, set(), 0
        self.extend(messages)

    @property
    def messages(self) -> list[Message]:
        return self._messages

    @property
    def elided_count(self) -> int:
        return len(self._elided)

    def view(self) -> tuple[Message, ...]:
        """The messages the model sees now."""
        if self.max_tokens is not None and self._total > self.max_tokens:
            self._elide()
        return tuple(self._shown)

    def _elide(self) -> None:
        assert self.max_tokens is not None
        # Keep the last 4 messages whole whatever happens: the newest observations matter most.
        # Elide in a block, down to `ELIDE_TO` of the ceiling, not just under it: each
        # elision changes the prefix the vendor cached, so one turn at a time would break
        # the cache on every step past the ceiling; a block breaks it once in many steps.
        last = len(self._messages) - 4
        target = int(self.max_tokens * ELIDE_TO)
        i = self._next_candidate
        while self._total > target and i < last:
            message = self._messages[i]
            if message.role is Role.TOOL and i not in self._elided:
                marker = _marker(message)
                marker_size = estimate_tokens(marker)
                if self._sizes[i] > marker_size:
                    self._elided.add(i)
                    self._shown[i] = marker
                    self._total += marker_size - self._sizes[i]
                    self._sizes[i] = marker_size
            i += 1
        self._next_candidate = i


def _marker(message: Message) -> Message:
    text = (f"[observation of {message.name or 'a tool'} call {message.tool_call_id} elided to"
            f" fit the context budget ({len(message.content)} chars); call the tool again to"
            " see it]")
    return Message(Role.TOOL, text, (), message.tool_call_id, message.name, message.is_error)
