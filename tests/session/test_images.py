"""Images a user sent become image content only when they are images (by their bytes), within the size
limit, for a model that can see."""

from __future__ import annotations

from pathlib import Path

from conversation.images import MAX_IMAGE_BYTES, image_content, sees_images
from messages.chat import ImagePart, TextPart

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 20


def test_which_models_see() -> None:
    assert sees_images("auto", "anthropic/claude-sonnet-4.5") and sees_images("auto", "openai/gpt-4o-mini")
    assert not sees_images("auto", "deepseek-chat") and not sees_images("auto", "scripted-model")
    assert sees_images("on", "scripted-model") and not sees_images("off", "openai/gpt-4o")


def test_only_real_images_within_the_limit(tmp_path: Path) -> None:
    png, fake, big = tmp_path / "a.png", tmp_path / "b.jpg", tmp_path / "c.png"
    png.write_bytes(PNG)
    fake.write_text("not an image, whatever its name")
    big.write_bytes(PNG + b"\x00" * MAX_IMAGE_BYTES)
    content = image_content("look", [str(png), str(fake), str(big), str(tmp_path / "gone.png")])
    assert isinstance(content, tuple) and content[0] == TextPart("look")
    assert [part.url[:22] for part in content[1:] if isinstance(part, ImagePart)] == ["data:image/png;base64,"]
    assert len(content) == 2
    assert image_content("look", [str(fake)]) == "look"
