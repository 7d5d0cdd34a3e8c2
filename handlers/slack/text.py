"""Text for Slack: escaping agents' and people's words for mrkdwn, cutting to Slack's limits,
and naming people and times as readers see them. Pure, no I/O."""

from __future__ import annotations

from datetime import UTC, datetime

from core.domain.visible import cut_before_code, visible


def escape(text: str) -> str:
    """Slack mrkdwn control characters: an agent's `<!channel>` stays text, not a ping; and
    every hidden character (a bidi override, a zero-width space) shown as its code first."""
    text = visible(text, multiline=True)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def fit(text: str, limit: int) -> str:
    """`text` escaped and cut to `limit` characters with an ellipsis, never inside an entity."""
    return cut_escaped(escape(text), limit)


def cut_escaped(shown: str, limit: int) -> str:
    """Already-escaped text (mrkdwn) cut to `limit` characters with an ellipsis, never inside
    an entity (`&amp;`) nor inside one of Slack's `<…>` (a mention, a date, a link)."""
    if len(shown) <= limit:
        return shown
    cut = shown[: max(limit - 1, 0)]
    amp = cut.rfind("&")
    if amp != -1 and ";" not in cut[amp:]:
        cut = cut[:amp]
    opened = cut.rfind("<")
    if opened != -1 and ">" not in cut[opened:]:
        cut = cut[:opened]
    return cut_before_code(cut) + "…" if limit >= 1 else ""


def clip(text: str, limit: int) -> str:
    """Plain text (no mrkdwn), its hidden characters as codes, cut to `limit` characters."""
    text = visible(text, multiline=True)
    return text if len(text) <= limit else cut_before_code(text[: limit - 1]) + "…"


def slack_date(epoch: float) -> str:
    """A time each reader sees in their own zone, with a UTC fallback for old clients."""
    fallback = datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"<!date^{int(epoch)}^{{date_short_pretty}} at {{time}}|{fallback}>"


def person(responder: str) -> str:
    """A responder (`slack:U…`, `github:x`, `operator:local`, `slack`, `external:docsign`)
    as people read it."""
    kind, _, ident = responder.partition(":")
    if kind == "slack":
        return f"<@{ident}>" if ident else "anyone in Slack"
    if kind == "github":
        return f"{escape(ident)} on GitHub" if ident else "anyone on GitHub"
    if kind == "operator":
        return "the operator"
    if kind == "external":  # an external ask's verifier (core.domain.external)
        return f"{escape(ident)} (an outside system)"
    return escape(responder)


def people(responders: list[str] | None) -> str:
    names = [person(r) for r in responders or []]
    return ", ".join(dict.fromkeys(names)) or "nobody"
