"""What a new turn is shown of the turns before it: its own branch, newest first, under
a token ceiling.

Only the branch from the first turn to the parent counts; a sibling branch is never
shown. Whole turns are kept, newest first, while they fit; the older ones are replaced
by one marker saying how many were left out and where to read them. Every tool call
in the history keeps a matching result (a call that never got one is given a stated
placeholder) and call ids are prefixed per turn (by its distance from the new one), so no provider sees a dangling or a
duplicated call. Nothing here reads the terminal or changes the store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

from harness_core.messages import Message, Role, ToolCall
from harness_core.run._context import estimate_tokens

__all__ = ["HISTORY_SHARE", "branch_history", "well_formed"]

HISTORY_SHARE = 0.5
"""The part of `[context] max_tokens` earlier turns may fill: the new turn needs room of
its own, and the context budget elides observations beyond the ceiling anyway."""

NO_OBSERVATION = ("[no observation was recorded for this call: its turn stopped before the"
                  " call finished]")


def well_formed(messages: Sequence[Message], prefix: str) -> list[Message]:
    """One turn's messages with every call answered exactly once and ids prefixed.

    System messages are dropped (a turn's own messages have none); a tool result with
    no call before it is dropped; a call with no result gets `NO_OBSERVATION`.
    """
    out: list[Message] = []
    open_calls: dict[str, ToolCall] = {}

    def close() -> None:
        for call in open_calls.values():
            out.append(Message(Role.TOOL, NO_OBSERVATION, (), prefix + call.id, call.name, True))
        open_calls.clear()

    for message in messages:
        if message.role is Role.TOOL:
            call_id = message.tool_call_id or ""
            if call_id in open_calls:
                del open_calls[call_id]
                out.append(replace(message, tool_call_id=prefix + call_id))
            continue
        close()
        if message.role is Role.SYSTEM:
            continue
        if message.role is Role.ASSISTANT and message.tool_calls:
            calls = tuple(replace(c, id=prefix + c.id) for c in message.tool_calls)
            open_calls.update({c.id: c for c in message.tool_calls})
            out.append(replace(message, tool_calls=calls))
        else:
            out.append(message)
    close()
    return out


def branch_history(
    ancestry: Iterable[str],
    read: Callable[[str], list[Message]],
    *,
    max_tokens: int | None,
    session_id: str,
) -> tuple[Message, ...]:
    """The messages of earlier turns a new turn is shown.

    Args:
        ancestry: Run ids from the parent turn back to the first turn, newest first
            (`Store.turn_ancestry`); read only as far as the budget allows.
        read: A turn's own messages by run id (`Store.turn_messages`).
        max_tokens: The run's context ceiling; None keeps every turn.
        session_id: Named in the marker.

    Returns:
        The history, oldest first. Reading stops at the first turn that does not fit,
        so the cost depends on the ceiling, not on the length of the session.
    """
    limit = None if max_tokens is None else int(max_tokens * HISTORY_SHARE)
    kept: list[list[Message]] = []
    total = 0
    dropped = False
    for distance, run_id in enumerate(ancestry, start=1):
        messages = well_formed(read(run_id), f"h{distance}_")
        size = sum(estimate_tokens(m) for m in messages)
        if limit is not None and kept and total + size > limit:
            dropped = True
            break
        kept.append(messages)
        total += size
    out: list[Message] = []
    if dropped:
        out.append(Message.user(
            "[earlier turns of this conversation were left out to fit the context budget;"
            f" the operator can list them with `io session show {session_id}` and read each"
            " with `io trace RUN`]"))
    for messages in reversed(kept):
        out.extend(messages)
    return tuple(out)
