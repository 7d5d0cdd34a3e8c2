"""Pure rules: refs, answers, responders, durations, config validation."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import ConfigError, load_config
from core.domain import rules
from core.domain.policy import parse_duration
from core.domain.responders import Responder, admitted
from tests.builders import question


@pytest.mark.parametrize("seq", [1, 7, 10, 35, 36, 1295, 10**6, 10**7 - 1, 10**7, 36**6 - 1])
def test_ref_round_trip(seq: int) -> None:
    ref = rules.ref_for(seq, rules.QUESTION)
    assert len(ref) <= 8 and " " not in ref
    for typed in (ref, ref.upper(), f" {ref} "):
        parsed = rules.parse_ref(typed)
        assert parsed is not None and parsed.kind == rules.QUESTION
        assert (seq, False) in parsed.candidates


@pytest.mark.parametrize("seq", [1, 7, 35, 36, 1295, 10**6, 36**7 - 1])
def test_a_base36_ref_made_before_040_keeps_its_meaning(seq: int) -> None:
    ref = rules.ref_for(seq, rules.APPROVAL, base36=True)
    assert len(ref) <= 8
    parsed = rules.parse_ref(ref)
    assert parsed is not None and parsed.kind == rules.APPROVAL
    assert (seq, True) in parsed.candidates


def test_refs_are_decimal_and_read_like_no_word() -> None:
    assert [rules.ref_for(seq, rules.QUESTION) for seq in (7, 10, 15, 29)] == ["q7", "q10", "q15", "q29"]
    assert rules.ref_for(29, rules.APPROVAL) == "a29"  # once `at`
    assert rules.ref_for(10**7, rules.QUESTION) == "q05yc1s"
    assert all(rules.ref_for(seq, rules.APPROVAL)[1:].isdigit() for seq in range(1, 5000))


def test_one_ref_names_one_ask_whichever_way_it_was_written() -> None:
    """`q10` is decimal ask 10, or pre-0.4.0 ask 36: only one of the two rows has it."""
    parsed = rules.parse_ref("q10")
    assert parsed is not None
    old36 = question(seq=36, ref_base36=True)
    new10 = question(seq=10)
    old10 = question(seq=10, ref_base36=True)
    new36 = question(seq=36)
    assert [parsed.names(a) for a in (old36, new10, old10, new36)] == [True, True, False, False]
    assert rules.ref(old10) == "qa" and rules.ref(new36) == "q36"


@pytest.mark.parametrize("text", ["", "x", "q", "q-1", "qqqqqqqqq", "z12", "q007", "q01", "a0zz"])
def test_not_a_ref(text: str) -> None:
    assert rules.parse_ref(text) is None


def test_canonical_json_ignores_key_order_and_space() -> None:
    assert rules.digest({"a": 1, "b": [1, {"c": 2, "d": 3}]}) == rules.digest(
        {"b": [1, {"d": 3, "c": 2}], "a": 1}
    )
    assert rules.digest({"a": 1}) != rules.digest({"a": 2})


def test_responders() -> None:
    octocat = Responder.parse("github:octocat")
    assert admitted(Responder("github", "OctoCat"), [octocat])
    assert admitted(Responder("slack", "U1"), [Responder.parse("slack")])
    assert not admitted(Responder("slack", "U1"), [octocat, Responder.parse("operator:local")])
    assert Responder.parse("operator") == Responder("operator", "local")
    for bad in ("slack:", "email:x@y", "operator:bob", "slack:lowercase", ""):
        with pytest.raises(ValueError):
            Responder.parse(bad)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("45m", 2700), ("2h", 7200), ("1h30m", 5400), ("7d", 604800)],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "2", "h", "1.5h", "2 h", "-1h", "1m1h"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "aye.toml"
    path.write_text(text)
    return path


def test_a_named_config_file_that_is_missing_is_an_error(tmp_path: Path) -> None:
    """AYE_CONFIG=./aye.tmol must not start aye with no gates."""
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path / "aye.tmol", named=True)
    assert str(err.value) == f"{tmp_path / 'aye.tmol'}: no such file (AYE_CONFIG names it)"


def test_gates_match_operations_whatever_their_case(tmp_path: Path) -> None:
    config = load_config(_config(tmp_path, "[[gates]]\noperations = ['deploy.', 'DB.Migrate']\n"))
    assert config.gate_for("DEPLOY.prod") is not None
    assert config.gate_for("Deploy.Prod") is not None
    assert config.gate_for("db.migrate") is not None
    assert config.gate_for("deployprod") is None


def test_missing_file_means_defaults(tmp_path: Path) -> None:
    config = load_config(tmp_path / "absent.toml")
    assert [str(r) for r in config.defaults.responders] == ["operator:local"]
    assert config.defaults.question_timeout == 86400


def test_full_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AYE_TOKEN_TRIAGE", "t-triage")
    config = load_config(_config(tmp_path, """
[defaults]
responders = ["operator:local"]
question_timeout = "2h"

[[agents]]
name = "triage"
token_env = "AYE_TOKEN_TRIAGE"
responders = ["slack:U0123ABCD", "github:octocat", "operator:local"]

[slack]
default_channel = "C0123ABCD"

[github]
post_questions = true

[[gates]]
operations = ["deploy."]
timeout = "2h"
escalate = { responders = ["slack:U0456EFGH", "operator:local"], timeout = "4h" }

[[gates]]
operations = ["deploy.prod"]
timeout = "1m"
"""))
    assert config.defaults.question_timeout == 7200
    assert config.agents[0].token() == "t-triage"
    assert config.slack.default_channel == "C0123ABCD"
    assert config.gate_for("deploy.prod") is config.gates[1]
    assert config.gate_for("deploy.staging") is config.gates[0]
    assert config.gate_for("deploy") is None
    assert config.gate_for("build.all") is None


@pytest.mark.parametrize(
    ("body", "key", "problem"),
    [
        ("[defaults]\ncolour = 'blue'\n", "defaults.colour", "unknown key"),
        ("bogus = 1\n", "bogus", "unknown key"),
        ("[defaults]\nquestion_timeout = '2 hours'\n", "defaults.question_timeout", "duration"),
        ("[[gates]]\noperations = ['deploy.']\ntimeout = '30s'\n", "gates[1].timeout", "1m"),
        ("[[gates]]\noperations = ['deploy.']\ntimeout = '9000h'\n", "gates[1].timeout", "8760h"),
        ("[[gates]]\noperations = ['human.ask']\n", "gates[1].operations", "human."),
        ("[[gates]]\noperations = ['human.*']\n", "gates[1].operations", "human."),
        ("[defaults]\nresponders = ['slack:']\n", "defaults.responders[1]", "empty"),
        ("[[agents]]\nname = 'x'\ntoken_env = 'AYE_UNSET_FOR_TEST'\n", "agents[1].token_env",
         "AYE_UNSET_FOR_TEST is not set"),
        ("[[gates]]\noperations = ['a.']\n[gates.escalate]\nresponders = ['operator']\n"
         "timeout = '8750h'\n", "gates[1]", "8760h"),
        ("not toml [", "", "not valid TOML"),
        # Strict: a string is not a boolean, nor a number.
        ("[github]\npost_questions = 'yes'\n", "github.post_questions", "boolean"),
        ("[github]\npost_questions = 1\n", "github.post_questions", "boolean"),
        ("[slack]\ndefault_channel = 7\n", "slack.default_channel", "string"),
    ],
)
def test_bad_config_names_key(tmp_path: Path, body: str, key: str, problem: str) -> None:
    path = _config(tmp_path, body)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    line = str(err.value)
    assert "\n" not in line
    assert line.startswith(str(path))
    assert key in line and problem in line, line
