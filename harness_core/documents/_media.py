"""Images of a conversation read back from the store: the bytes are read again.

The store keeps an image's path and the hash of the file it came from, never the bytes.
A resumed run calls `reload_media`, which reads each file again through the workspace,
checks its hash and prepares it as `view_image` did. An image whose file is gone or
changed is dropped and its message says so, so the model never sees a different picture
under the old name. Pillow is imported only when a message carries an image.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import replace

from harness_core.errors import WorkspaceError
from harness_core.messages import Media, Message
from harness_core.workspace import Workspace

__all__ = ["reload_media"]


def _reloaded(media: Media, workspace: Workspace) -> Media | None:
    try:
        data = workspace.read_bytes(workspace.resolve(media.path))
    except WorkspaceError:
        return None
    if hashlib.sha256(data).hexdigest() != media.source_sha256:
        return None
    try:
        from harness_core.documents._image import prepare_image

        return prepare_image(data, media.path)
    except (ImportError, ValueError):  # Pillow uninstalled since; or not an image now
        return None


def reload_media(messages: Iterable[Message], workspace: Workspace) -> list[Message]:
    """`messages` with every stored image read again from `workspace` (or replaced by a
    note saying it is no longer available)."""
    out: list[Message] = []
    for message in messages:
        if all(m.data for m in message.media):
            out.append(message)
            continue
        kept: list[Media] = []
        notes: list[str] = []
        for media in message.media:
            fresh = media if media.data else _reloaded(media, workspace)
            if fresh is None:
                notes.append(media.placeholder())
            else:
                kept.append(fresh)
        content = "\n".join([message.content, *notes]) if notes else message.content
        out.append(replace(message, content=content, media=tuple(kept)))
    return out
