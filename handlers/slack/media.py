"""An ask's media (pictures and links beside the question) as Block Kit: pure, no I/O.

Slack fetches an image block's `image_url` itself when the message is posted, and refuses the
whole message (`invalid_blocks`, "downloading image failed [json-pointer:/blocks/N/image_url]")
when it cannot: a picture that went away must not cost the question. So every message with
pictures also carries its blocks with each picture shown as a link instead (`links_only`), and
the poster sends those once when Slack refuses one of the pictures (see `refused_an_image`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from core.domain.visible import visible

IMAGE, LINK = "image", "link"
HTTPS = "https://"
IMAGE_BLOCK = "aye_image_"  # + the item's number: which blocks are pictures
CAPTION_MAX = 200
ALT_DEFAULT = "image"
URL_MAX = 2000  # the API's own limit; Slack's image_url takes 3,000
TEXT_MAX = 3000  # Slack's limit on a context element's text
# What would end or split Slack's `<url|text>` link syntax, percent-encoded in the URL: these
# are not valid in a URL as they are (RFC 3986), so the address stays the same.
URL_BREAKERS = {"|": "%7C", "<": "%3C", ">": "%3E", " ": "%20", "\n": "%0A", "\r": "%0D", "\t": "%09"}
POINTER = re.compile(r"json-pointer:/blocks/(\d+)")


def _escape(text: str) -> str:
    """mrkdwn's own characters escaped, and a hidden character in a caption or address shown
    as its code (in an address it was never valid: RFC 3986)."""
    text = visible(text, multiline=True)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def safe_url(url: str) -> str | None:
    """The URL as it may stand inside `<…|…>`, or None for one aye does not link (the API lets
    only absolute https URLs through; an older row is not trusted to be one)."""
    if not url.startswith(HTTPS) or len(url) > URL_MAX or len(url) <= len(HTTPS):
        return None
    encoded = "".join(URL_BREAKERS.get(c, c) for c in url if c.isprintable() or c in URL_BREAKERS)
    return _escape(encoded)


def _caption(item: dict[str, Any]) -> str | None:
    caption = item.get("caption")
    if not isinstance(caption, str) or not caption.strip():
        return None
    # One line (a newline would end the link), each hidden character as its code.
    caption = " ".join(visible(caption, multiline=True).split())
    return caption if len(caption) <= CAPTION_MAX else caption[: CAPTION_MAX - 1] + "…"


def link_text(item: dict[str, Any]) -> str:
    """One item as a Slack link `<url|caption>` (caption escaped), or as plain escaped text when
    its URL cannot be a link, or would not fit in a context element once escaped."""
    url, caption = str(item.get("url") or ""), _caption(item)
    safe = safe_url(url)
    if safe is None:
        return _escape(caption or url)[:TEXT_MAX]
    linked = f":link: <{safe}|{_escape(caption or url)}>"
    if len(linked) <= TEXT_MAX:
        return linked
    # An address of `&`s and `|`s grows five- or three-fold once escaped: never cut a link.
    return f":link: {_escape(caption or 'A link')} (its address is too long to show here)"


def _image(number: int, item: dict[str, Any]) -> dict[str, Any]:
    caption = _caption(item)
    block: dict[str, Any] = {
        "type": "image",
        "block_id": f"{IMAGE_BLOCK}{number}",
        "image_url": str(item["url"]),
        "alt_text": caption or ALT_DEFAULT,
    }
    if caption:
        block["title"] = {"type": "plain_text", "text": caption, "emoji": True}
    return block


def _links(items: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    texts = [link_text(item) for item in items]
    if not texts:
        return []
    return [{"type": "context", "elements": [{"type": "mrkdwn", "text": t} for t in texts]}]


def _is_picture(item: dict[str, Any]) -> bool:
    return item.get("kind") == IMAGE and safe_url(str(item.get("url") or "")) is not None


def media_blocks(media: list[dict[str, Any]] | None, pictures: bool = True) -> list[dict[str, Any]]:
    """Each picture as an image block (captioned), then the links in one context block; with
    `pictures=False`, the pictures shown as links too."""
    items = [m for m in media or [] if isinstance(m, dict)]
    shown: list[dict[str, Any]] = []
    if pictures:
        shown = [_image(n, m) for n, m in enumerate(items, start=1) if _is_picture(m)]
    rest = [m for m in items if not (pictures and _is_picture(m))]
    return [*shown, *_links(rest)]


def has_pictures(media: list[dict[str, Any]] | None) -> bool:
    return any(isinstance(m, dict) and _is_picture(m) for m in media or [])


def refused_an_image(messages: Iterable[str], sent: list[dict[str, Any]]) -> bool:
    """Whether Slack's words for a refused message (`response_metadata.messages`) point at one of
    its picture blocks, or say it could not download one."""
    for message in messages:
        if "downloading image" in message.lower():
            return True
        for found in POINTER.finditer(message):
            index = int(found.group(1))
            if index < len(sent) and sent[index].get("type") == IMAGE:
                return True
    return False
