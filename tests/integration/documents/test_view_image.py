"""view_image: the image reaches each vendor in its own wire format, scaled down when
over the limit, and the store keeps the path and a hash, never the bytes."""

from __future__ import annotations

import base64
import io
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from harness_core.documents import reload_media
from harness_core.documents._image import MAX_IMAGE_BYTES, MAX_IMAGE_EDGE
from harness_core.messages import Media, Message, ToolResult
from harness_core.providers.anthropic import wire_messages as anthropic_wire
from harness_core.providers.openai import wire_messages as openai_wire
from harness_core.providers.responses import wire_items
from harness_core.store._codec import message_from_json, message_to_json
from harness_core.workspace import Workspace
from tests.fakes.vendor_server import VENDORS, FakeCall, FakeVendorServer, RecordedRequest, Turn
from tests.fakes.vendor_server import tool_results_in as results_in
from tests.integration.documents.conftest import call, make_ctx
from tests.integration.providers.conftest import (  # noqa: F401 - fixtures
    Cli,
    cli,
    fakes,
    finished,
    provider_toml,
    write_workspace,
)


def _png(path: Path, size: tuple[int, int] = (40, 30), color: str = "red") -> bytes:
    Image.new("RGB", size, color).save(path, "PNG")
    return path.read_bytes()


def test_small_image_is_sent_as_it_is(tmp_path: Path) -> None:
    data = _png(tmp_path / "dot.png")
    out = call(make_ctx(tmp_path), "view_image", path="dot.png")
    assert not out.is_error, out.output
    [media] = out.media
    assert media.data == data and media.media_type == "image/png"
    assert (media.width, media.height) == (40, 30) and media.path == "dot.png"
    assert out.data.sha256 == media.source_sha256 and "40x30" in out.output


def test_large_image_is_scaled_down_within_the_limits(tmp_path: Path) -> None:
    image = Image.effect_noise((4000, 1000), 60).convert("RGB")
    image.save(tmp_path / "wide.jpg", quality=95)
    out = call(make_ctx(tmp_path), "view_image", path="wide.jpg")
    [media] = out.media
    assert media.media_type == "image/jpeg"
    assert (media.width, media.height) == (MAX_IMAGE_EDGE, 392)
    assert len(media.data) <= MAX_IMAGE_BYTES and "scaled down" in out.output
    assert Image.open(io.BytesIO(media.data)).size == (MAX_IMAGE_EDGE, 392)


def test_a_huge_png_is_shrunk_under_the_byte_cap(tmp_path: Path) -> None:
    Image.effect_noise((1500, 1500), 120).convert("RGB").save(tmp_path / "noise.png")
    assert (tmp_path / "noise.png").stat().st_size > MAX_IMAGE_BYTES
    [media] = call(make_ctx(tmp_path), "view_image", path="noise.png").media
    assert len(media.data) <= MAX_IMAGE_BYTES and media.width < 1500


def test_gif_and_webp_are_accepted_other_formats_are_not(tmp_path: Path) -> None:
    frames = [Image.new("P", (20, 20), i) for i in (1, 2)]
    frames[0].save(tmp_path / "anim.gif", save_all=True, append_images=frames[1:])
    Image.new("RGB", (20, 20), "blue").save(tmp_path / "b.webp")
    Image.new("RGB", (20, 20), "blue").save(tmp_path / "b.bmp")
    ctx = make_ctx(tmp_path)
    assert call(ctx, "view_image", path="anim.gif").media[0].media_type == "image/gif"
    assert call(ctx, "view_image", path="b.webp").media[0].media_type == "image/webp"
    bmp = call(ctx, "view_image", path="b.bmp")
    assert bmp.is_error and "BMP images are not supported" in bmp.output
    (tmp_path / "fake.png").write_bytes(b"not really")
    assert call(ctx, "view_image", path="fake.png").is_error


def _tool_message(media: Media) -> Message:
    return Message.tool(ToolResult("c1", "view_image", "dot.png: image/png", False, (media,)))


def _media(tmp_path: Path) -> Media:
    _png(tmp_path / "dot.png")
    return call(make_ctx(tmp_path), "view_image", path="dot.png").media[0]


def test_wire_formats_of_each_vendor(tmp_path: Path) -> None:
    media = _media(tmp_path)
    b64 = base64.b64encode(media.data).decode()
    asked = Message.assistant("", ())
    messages = (Message.user("look"), asked, _tool_message(media), Message.user("next"))

    _, anthropic = anthropic_wire(messages)
    [result] = [b for m in anthropic for b in m["content"] if b.get("type") == "tool_result"]
    assert result["content"][1] == {"type": "image", "source": {
        "type": "base64", "media_type": "image/png", "data": b64}}

    openai = openai_wire(messages)
    tool_at = next(i for i, m in enumerate(openai) if m["role"] == "tool")
    assert openai[tool_at]["content"] == "dot.png: image/png"
    image_turn = openai[tool_at + 1]
    assert image_turn["role"] == "user"
    assert image_turn["content"][1] == {"type": "image_url",
                                        "image_url": {"url": f"data:image/png;base64,{b64}"}}
    assert openai[tool_at + 2] == {"role": "user", "content": "next"}

    items = wire_items(_tool_message(media))
    assert items[0]["type"] == "function_call_output"
    assert items[1]["content"][1] == {"type": "input_image",
                                      "image_url": f"data:image/png;base64,{b64}"}


def test_store_keeps_hash_and_path_and_resume_reads_the_file_again(tmp_path: Path) -> None:
    media = _media(tmp_path)
    stored = message_to_json(_tool_message(media))
    assert base64.b64encode(media.data).decode() not in json.dumps(stored)
    assert set(stored["media"][0]) == {"media_type", "path", "source_sha256", "width",
                                       "height", "bytes"}
    assert stored["media"][0]["source_sha256"] == media.source_sha256
    back = message_from_json(stored)
    assert back.media[0].data == b""
    [again] = reload_media([back], Workspace(tmp_path))
    assert again.media[0].data == media.data
    _png(tmp_path / "dot.png", color="green")  # the file changed since it was viewed
    [changed] = reload_media([back], Workspace(tmp_path))
    assert changed.media == () and "not available any more" in changed.content
    # A vendor given a message without the bytes is told, in text, to look again.
    _, wire = anthropic_wire((Message.user("x"), Message.assistant(""), back))
    assert "call view_image again" in json.dumps(wire)


def _looks_once(request: RecordedRequest) -> Turn:
    if results_in(request) == 0:
        return Turn(text="let me look", tool_calls=(
            FakeCall("call_0", "view_image", json.dumps({"path": "shot.png"})),))
    return Turn(text="it is red")


def _image_sent(vendor: str, body: dict[str, Any]) -> str:
    text = json.dumps(body)
    if vendor == "anthropic":
        return "source" if '"type": "image"' in text and '"base64"' in text else ""
    if vendor == "openai-responses":
        return "input_image" if '"input_image"' in text else ""
    return "image_url" if '"image_url"' in text else ""


@pytest.mark.parametrize("vendor", VENDORS)
def test_io_run_shows_the_image_to_each_vendor(
    vendor: str, cli: Cli, fakes: Callable[..., FakeVendorServer], tmp_path: Path  # noqa: F811
) -> None:
    fake = fakes(vendor, responder=_looks_once)
    ws = write_workspace(tmp_path / "ws", provider_toml(vendor, fake))
    data = _png(ws / "shot.png", (64, 48))
    result = cli("run", "what colour is shot.png?", "-w", str(ws), "--json")
    assert result.returncode == 0, result.stderr
    assert fake.violations == []
    assert len(fake.requests) == 2
    assert _image_sent(vendor, fake.requests[1].body), fake.requests[1].body
    assert base64.b64encode(data).decode() in json.dumps(fake.requests[1].body)
    assert finished(result.stdout)["status"] == "finished"
    # The store holds the path and the hash, not the picture.
    raw = sqlite3.connect(cli.store).execute(
        "SELECT group_concat(body) FROM messages").fetchone()[0]
    assert "shot.png" in raw and base64.b64encode(data).decode()[:40] not in raw
