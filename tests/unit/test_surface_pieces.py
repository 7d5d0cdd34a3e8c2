"""The pure pieces the surfaces were split into (issue 37, item 6): each surface's start-up
warnings and kept section, the sign-in names the config accepts, the kit's form pieces, the
OpenAPI document's shared builders and the query bounds it states."""

from __future__ import annotations

import pytest
from multidict import CIMultiDict
from pydantic import ValidationError

from ask_api import bounds
from ask_api.openapi_parts import errors, operation
from bot.config import WebConfig
from handlers.email import settings as email
from handlers.kit.forms import HEADERS, protect
from handlers.slack import settings as slack
from handlers.web.providers import ORDER, SIGNS_IN_AS

SILENT_SLACK = ("warning: Slack is on but no responder in the config is on Slack (slack:U… or a "
                "[[people]] id): Slack will show nothing")


class Names:
    """A config file naming the kinds given, `gates[1].responders` first."""

    def __init__(self, *kinds: str) -> None:
        self.kinds = kinds

    def names_kind(self, kind: str) -> bool:
        return kind in self.kinds

    def first_naming(self, kind: str) -> str | None:
        return "gates[1].responders" if kind in self.kinds else None


SLACK_ON = slack.SlackSettings("xoxb-1", "xapp-1")


def test_slack_warns_when_on_and_no_responder_is_of_slack() -> None:
    assert slack.warnings(SLACK_ON, Names("operator")) == [SILENT_SLACK]
    assert slack.warnings(SLACK_ON, Names("slack")) == []
    assert slack.warnings(None, Names()) == []  # off: nothing to warn of


def test_email_warns_when_off_and_the_config_names_an_email_responder() -> None:
    assert email.warnings(None, Names("email")) == [
        "warning: gates[1].responders names an email: responder but email is off (set "
        "AYE_SMTP_URL, AYE_MAIL_FROM and AYE_PUBLIC_URL): nothing will be mailed"]
    assert email.warnings(None, Names("slack")) == []
    on = email.read_settings({"AYE_SMTP_URL": "smtp://mail.test", "AYE_MAIL_FROM": "aye@x.test",
                              "AYE_PUBLIC_URL": "https://aye.test"})
    assert email.warnings(on, Names("email")) == []


def test_a_slack_section_of_teams_alone_is_kept_while_sign_in_with_slack_is_set_up() -> None:
    teams = slack.SlackSection(teams=["T0123"])
    assert slack.kept_while_off({"SLACK_CLIENT_ID": "1.2"}, teams)
    assert not slack.kept_while_off({}, teams)  # no sign-in: the section does nothing
    channel = slack.SlackSection(default_channel="C0123", teams=["T0123"])
    assert not slack.kept_while_off({"SLACK_CLIENT_ID": "1.2"}, channel)


def test_the_config_names_the_sign_ins_the_inbox_offers() -> None:
    assert WebConfig(sign_in=list(ORDER)).sign_in == list(ORDER)
    assert set(SIGNS_IN_AS) == set(ORDER)
    for wrong in ("gitlab", 5):
        with pytest.raises(ValidationError) as caught:
            WebConfig(sign_in=["github", wrong])
        (error,) = caught.value.errors()
        assert error["loc"] == ("sign_in", 1)
        assert error["type"] == "literal_error"
        assert error["msg"] == "Input should be 'slack', 'github' or 'oidc'"


def test_the_kit_protects_a_page_without_overriding_what_it_set() -> None:
    headers: CIMultiDict[str] = CIMultiDict({"Cache-Control": "max-age=60"})
    protect(headers)
    assert headers["Cache-Control"] == "max-age=60"
    assert all(headers[name] == value for name, value in HEADERS.items())
    bare: CIMultiDict[str] = CIMultiDict()
    protect(bare)
    assert bare["Cache-Control"] == "no-store"


def test_the_openapi_pieces_build_an_operation_with_its_errors() -> None:
    responses = errors({503: ("busy",), 401: ("unauthorized",)})
    assert list(responses) == ["401", "503"]
    assert "Retry-After" in responses["503"]["headers"]
    assert "headers" not in responses["401"]
    op = operation("x", "X", "Does x.", responses, tags=["meta"])
    assert op["operationId"] == "x" and op["tags"] == ["meta"]
    assert bounds.DEFAULT_WAIT_S <= bounds.MAX_WAIT_S and bounds.DEFAULT_LIMIT <= bounds.MAX_LIMIT
