"""`[[people]]`, `person:` and `email:` responders and a gate's `sign_in_within` in the config
file: what a user writes wrong is one line naming the key (exit 2 at `aye serve`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import ConfigError, load_config
from core.domain.responders import Responder

ADA = '[[people]]\nname = "ada"\nids = ["slack:U0123ABCD", "github:ada-l", "email:Ada@Example.com"]\n'


def _load(tmp_path: Path, text: str) -> str | None:
    path = tmp_path / "aye.toml"
    path.write_text(text)
    try:
        load_config(path)
    except ConfigError as exc:
        return str(exc).removeprefix(f"{path}: ")
    return None


def test_a_person_and_person_responders_are_read(tmp_path: Path) -> None:
    path = tmp_path / "aye.toml"
    path.write_text(ADA + '[[gates]]\noperations = ["deploy."]\nresponders = ["person:ada"]\n'
                    'sign_in_within = "15m"\n')
    config = load_config(path)
    people = config.directory()
    assert people.person_of(Responder.parse("email:ada@example.com")) == "ada"
    assert people.person_of(Responder.parse("github:ADA-L")) == "ada"
    assert config.gates[0].sign_in_within == 900


@pytest.mark.parametrize(("text", "said"), [
    (ADA + '[[people]]\nname = "bob"\nids = ["github:ADA-L"]\n',
     "people[2].ids[0]: github:ada-l is also ada's: an identity is one person's"),
    ('[[people]]\nname = "ada"\nids = ["slack"]\n',
     "people[1].ids[0]: 'slack' is not one person's identity"),
    ('[[people]]\nname = "ada"\nids = ["operator:local"]\n',
     "people[1].ids[0]: 'operator:local' is not one person's identity"),
    ('[[people]]\nname = "Ada"\nids = ["slack:U0123ABCD"]\n', "people[1].name:"),
    ('[defaults]\nresponders = ["person:zed"]\n',
     "defaults.responders: person:zed names no [[people]] entry"),
    ('[[gates]]\noperations = ["x."]\nresponders = ["person:zed"]\n',
     "gates[1].responders: person:zed names no [[people]] entry"),
    ('[defaults]\nresponders = ["email"]\n', "defaults.responders[1]: 'email' alone is nobody"),
    ('[defaults]\nresponders = ["person"]\n', "defaults.responders[1]: 'person' alone is nobody"),
    ('[[gates]]\noperations = ["x."]\nsign_in_within = "30s"\n',
     "gates[1].sign_in_within: must be from 1m to 24h"),
    ('[[gates]]\noperations = ["x."]\nsign_in_within = "25h"\n',
     "gates[1].sign_in_within: must be from 1m to 24h"),
])
def test_what_is_wrong_is_one_line_naming_the_key(tmp_path: Path, text: str, said: str) -> None:
    found = _load(tmp_path, text)
    assert found is not None and found.startswith(said), found
