"""Agent text as people see it (core/domain/visible.py): every control and format character as
its code in brackets, what was sent unchanged otherwise. Pure; no surface."""

from __future__ import annotations

import json

import pytest

from core.domain.visible import (
    HIDDEN_WARNING,
    approval_hides,
    cut_before_code,
    has_hidden,
    visible,
    visible_json,
)

# The example: shown raw, it reads `echo safe ; rm -fr /tmp/beach.txt` backwards.
TRICK = {"cmd": "echo safe \u202e; txt.hcaeb/ pmt/ fr- mr \u202c"}


@pytest.mark.parametrize(
    ("sent", "shown"),
    [
        ("plain text, été, 日本語, 👍", "plain text, été, 日本語, 👍"),
        ("a\u202eb\u202c", "a[U+202E]b[U+202C]"),
        ("\u202a\u202b\u202d", "[U+202A][U+202B][U+202D]"),
        ("\u2066x\u2067y\u2068z\u2069", "[U+2066]x[U+2067]y[U+2068]z[U+2069]"),
        ("l\u200er\u200f\u061c", "l[U+200E]r[U+200F][U+061C]"),
        ("zero\u200bwidth\ufeff", "zero[U+200B]width[U+FEFF]"),
        ("soft\u00adhyphen", "soft[U+00AD]hyphen"),
        ("esc\x1b[2Kbell\x07del\x7fc1\x9b", "esc[U+001B][2Kbell[U+0007]del[U+007F]c1[U+009B]"),
        ("line\u2028para\u2029", "line[U+2028]para[U+2029]"),
        ("tag\U000e0041", "tag[U+E0041]"),
        ("one\ntwo\tthree\r", "one[U+000A]two[U+0009]three[U+000D]"),
    ],
)
def test_one_line_text_shows_each_hidden_character_as_its_code(sent: str, shown: str) -> None:
    assert visible(sent) == shown


def test_multi_line_text_keeps_its_line_breaks_and_tabs_but_nothing_else() -> None:
    assert visible("one\ntwo\tthree\r\nfour\rfive\u2028", multiline=True) == (
        "one\ntwo\tthree\nfour[U+000D]five[U+2028]"
    )


def test_has_hidden_looks_into_every_key_and_string_of_json() -> None:
    assert has_hidden(TRICK)
    assert has_hidden({"a": [1, {"b\u200b": "x"}]})
    assert has_hidden(["ok", ("x\x1b",)])
    assert not has_hidden({"cmd": "ls -la\n", "n": 3, "ok": True, "none": None})
    assert has_hidden("a\nb", multiline=False)
    assert not has_hidden("a\nb")


def test_an_approval_is_marked_when_its_operation_or_input_hides_something() -> None:
    assert approval_hides("Bash", TRICK)
    assert approval_hides("deploy\u202e", {"to": "prod"})
    assert approval_hides("deploy\nprod", None)
    assert not approval_hides("Bash", {"cmd": "echo safe\nrm -fr x"})
    assert not approval_hides(None, None)
    assert HIDDEN_WARNING == "this request contains hidden or reordering characters"


def test_pretty_json_shows_the_override_that_ensure_ascii_false_would_leave_raw() -> None:
    raw = json.dumps(TRICK, ensure_ascii=False, indent=2)
    assert "\u202e" in raw  # the trap the function exists for
    shown = visible_json(TRICK)
    assert "[U+202E]" in shown and "[U+202C]" in shown
    assert "\u202e" not in shown and "\u202c" not in shown
    assert shown.splitlines()[0] == "{"  # still pretty, over several lines
    assert visible_json({"e": "\x1b\x7f"}, indent=None) == '{"e": "\\u001b[U+007F]"}'


def test_what_was_sent_is_not_changed() -> None:
    sent = dict(TRICK)
    visible_json(sent)
    has_hidden(sent)
    assert sent == TRICK


@pytest.mark.parametrize("cut", ["a[", "a[U", "a[U+", "a[U+20", "a[U+202", "a[U+E004"])
def test_text_cut_inside_a_code_loses_the_codes_start(cut: str) -> None:
    assert cut_before_code(cut) == "a"
    assert cut_before_code("a[U+202E]") == "a[U+202E]"
    assert cut_before_code("see [docs]") == "see [docs]"


def test_slack_shows_codes_before_its_escaping_and_never_cuts_one() -> None:
    from handlers.slack.text import clip, escape, fit

    assert escape("<!channel> \u202e&") == "&lt;!channel&gt; [U+202E]&amp;"
    assert escape("two\nlines\u2028") == "two\nlines[U+2028]"
    assert fit("abc\u202edef", 7) == "abc…"  # `abc[U+2…` would name nothing
    assert clip("go\u200b", 20) == "go[U+200B]"
