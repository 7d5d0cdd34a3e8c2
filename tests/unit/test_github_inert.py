"""What aye writes on GitHub, as pure functions: agent text made inert, an approval's input in
a code block that nothing inside can close, cut to fit a comment and said so; and the facts and
the command read from what people write. No network, no store."""

from __future__ import annotations

import pytest

from core.domain import identity
from handlers.github import inert
from handlers.github.facts import comment_said, review_said, storable
from handlers.github.messages import COMMENT_BUDGET, question_comment
from handlers.github.parsing import parse_command
from tests import builders
from tests.fake_github import issue_comment_event, pull_request_review_event

ZWJ = "\u200d"


@pytest.mark.parametrize(
    ("written", "shown"),
    [
        ("@mallory and @acme/admins", f"@{ZWJ}mallory and @{ZWJ}acme/admins"),
        ("fixes #12 and o/r#3, GH-4", f"fixes #{ZWJ}12 and o/r#{ZWJ}3, GH{ZWJ}-4"),
        ("see https://x.example or www.x.example", f"see https:{ZWJ}//x.example or www{ZWJ}.x.example"),
        ("a@b.example", f"a@{ZWJ}b.example"),
        ("commit deadbeefcafe", f"commit deadbe{ZWJ}efcafe"),
        ("<!-- hidden -->", "&lt;!-- hidden --&gt;"),
        ("![i](u) [l](u) `c` *e* $m$", r"!\[i\](u) \[l\](u) \`c\` \*e\* \$m\$"),
        ("a|b ~s~ \\", r"a\|b \~s\~ \\"),
        ("&amp; stays as written", "&amp;amp; stays as written"),
        ("eu-west 1.4.2 # 1. yes", "eu-west 1.4.2 # 1. yes"),  # plain text stays plain
    ],
)
def test_agent_text_is_inert(written: str, shown: str) -> None:
    assert inert.text(written) == shown


def test_what_would_not_show_is_written_as_its_code() -> None:
    # Its code's brackets are Markdown's, so escaped: GitHub shows `[U+202E]`.
    assert inert.text("pay \u202eevil\u202c now") == r"pay \[U+202E\]evil\[U+202C\] now"
    assert inert.text("tag\U000e0041 nbsp\u00a0") == r"tag\[U+E0041\] nbsp\[U+00A0\]"
    assert inert.text("pay\u200dpal\u200b") == r"pay\[U+200D\]pal\[U+200B\]"
    assert inert.text("emoji \U0001f44d\tok é") == "emoji \U0001f44d\tok é"
    assert inert.code_span("/answer \u202eyes") == "`/answer [U+202E]yes`"


def test_quotes_and_inline_text_keep_every_line_inside() -> None:
    assert inert.quoted("one\n\n> two\r<three>") == ["> one", ">", "> &gt; two", "> &lt;three&gt;"]
    assert inert.inline("one\ntwo\u2028three") == r"one two\[U+2028\]three"


@pytest.mark.parametrize("code", ["plain", "a ``` b", "````", "`x`", ""])
def test_a_code_block_cannot_be_closed_from_inside(code: str) -> None:
    block = inert.code_block(code, "json")
    fence = block.partition("json")[0]
    assert set(fence) == {"`"} and len(fence) >= 3 and fence not in code
    assert block == f"{fence}json\n{code}\n{fence}"


def test_a_code_span_holds_any_backticks_on_one_line() -> None:
    assert inert.code_span("/answer yes") == "`/answer yes`"
    assert inert.code_span("a ` b") == "``a ` b``"
    assert inert.code_span("`x``") == "``` `x`` ```"
    assert inert.code_span("a\n\nb") == "`a  b`"  # a blank line would end the paragraph


def test_a_wide_input_is_cut_by_bytes_and_says_so() -> None:
    wide = {"emoji": "\U0001f308" * 16_000, "then": "DROP DATABASE"}
    ask = builders.approval(call_input=wide)

    text = question_comment(ask, "a7")

    assert len(text.encode()) <= COMMENT_BUDGET
    assert "DROP DATABASE" not in text and "**The input above is cut here.**" in text
    assert f"`input_sha256`: `{identity.input_sha256(wide)}`" in text
    assert "`aye show a7`" in text


def test_a_small_input_is_whole_and_not_said_to_be_cut() -> None:
    text = question_comment(builders.approval(call_input={"region": "eu"}), "a7")
    assert '```json\n{"region":"eu"}\n```' in text and "cut" not in text


# -- what people write ---------------------------------------------------------------------


@pytest.mark.parametrize("body", ["/an\u017fwer yes", "/\u0430nswer yes", "\uff0fanswer yes"])
def test_the_command_is_plain_ascii(body: str) -> None:
    assert parse_command(body) is None


def test_a_ref_is_plain_ascii_too() -> None:
    command = parse_command("/answer q\u212a yes")  # KELVIN SIGN lowercases to k
    assert command is not None and command.ref is None and command.text == "q\u212a yes"


def test_a_comment_and_a_review_are_known_by_their_own_ids_and_times() -> None:
    comment = comment_said(issue_comment_event(body="/answer 1", login="o", comment_id=77))
    review = review_said(pull_request_review_event(body=None, login="o", review_id=88))
    assert (comment.key, review.key) == ("comment:77", "review:88")
    assert comment.at is not None and comment.at == int(comment.at)


def test_what_a_store_cannot_keep_is_replaced() -> None:
    assert storable("a\x00b\ud800c\U0001f308") == "a\ufffdb\ufffdc\U0001f308"
    assert storable("plain") == "plain" and storable(None) is None
