"""What a resumed run takes back from the store: its conversation's images (read again
from the workspace), the stall detector's recent calls and the provider's carried state
(the Responses API's encrypted reasoning items and response chain), so it goes on exactly
as an uninterrupted run would. Reads the store; writes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness_core.messages import Message
from harness_core.providers import CarriedState, Provider, RestoresState
from harness_core.run._progress import Progress
from harness_core.store import Store
from harness_core.workspace import Workspace

__all__ = ["restore_state", "stored_conversation"]


def stored_conversation(messages: Sequence[Message], workspace: Workspace) -> list[Message]:
    """`messages` as the store gave them back, with each image read again from `workspace`
    (`harness_core.documents.reload_media`). The document package is imported only when
    a message carries an image whose bytes the store did not keep."""
    if all(media.data for message in messages for media in message.media):
        return list(messages)
    from harness_core.documents import reload_media

    return reload_media(messages, workspace)


def restore_state(store: Store, run_id: str, provider: Provider, progress: Progress) -> None:
    """Refill `progress` and `provider` from what run `run_id` recorded."""
    progress.replay(store.progress_trail(run_id, progress.window))
    if not isinstance(provider, RestoresState):
        return
    provider.restore([
        CarriedState(record.step_index, record.provider or "",
                     Message.assistant(record.text, record.tool_calls), carry)
        for record, carry in store.carried(run_id)
    ])
