"""Email's settings from the environment (pure): the SMTP URL's forms, what is refused in one
line (never repeating a password), and the start-up line."""

from __future__ import annotations

import pytest

from core.app.ports import SurfaceConfigError
from handlers.email.message import subject
from handlers.email.settings import describe, read_settings, smtp_server
from tests.builders import approval, question

ON = {"AYE_SMTP_URL": "smtp://relay.example.com", "AYE_MAIL_FROM": "aye <aye@example.com>",
      "AYE_PUBLIC_URL": "https://aye.example.com/"}


@pytest.mark.parametrize(("url", "expected"), [
    ("smtp://relay.example.com", ("relay.example.com", 25, "plain", None)),
    ("smtp+starttls://u%40x:p%3Aw@relay.example.com", ("relay.example.com", 587, "starttls", "u@x")),
    ("smtps://u:p@relay.example.com:2465?timeout=5&rate=2", ("relay.example.com", 2465, "tls", "u")),
])
def test_smtp_url_forms(url: str, expected: tuple[object, ...]) -> None:
    server = smtp_server(url)
    assert (server.host, server.port, server.tls, server.username) == expected
    assert ":p" not in repr(server) and "p:" not in repr(server)


@pytest.mark.parametrize(("env", "said"), [
    ({"AYE_SMTP_URL": "smtp://h"}, "AYE_MAIL_FROM is not"),
    ({**ON, "AYE_PUBLIC_URL": ""}, "email needs AYE_PUBLIC_URL"),
    ({**ON, "AYE_SMTP_URL": "http://relay"}, "is not an SMTP URL"),
    ({**ON, "AYE_SMTP_URL": "smtp://u:secret-pw@relay"}, "could send it in clear"),
    ({**ON, "AYE_SMTP_URL": "smtps://u@relay"}, "both the user and the password"),
    ({**ON, "AYE_SMTP_URL": "smtp://relay?retries=3"}, "unknown option 'retries'"),
    ({**ON, "AYE_SMTP_URL": "smtp://relay?rate=0"}, "rate must be a number above 0"),
    ({**ON, "AYE_MAIL_FROM": "not an address"}, "AYE_MAIL_FROM is not an address"),
])
def test_a_half_or_badly_configured_email_is_one_line(env: dict[str, str], said: str) -> None:
    with pytest.raises(SurfaceConfigError) as raised:
        read_settings(env)
    assert said in str(raised.value) and "secret-pw" not in str(raised.value)


def test_the_start_up_line_says_whether_email_is_on() -> None:
    assert describe(None).startswith("email: off (set AYE_SMTP_URL, AYE_MAIL_FROM")
    assert read_settings({}) is None
    line = describe(read_settings(ON))
    assert line == ("email: on (SMTP relay.example.com:25, STARTTLS if offered, from "
                    "aye@example.com, links to https://aye.example.com/e/…)")


@pytest.mark.parametrize(("public", "taken"), [
    ("http://127.0.0.1:8080", True), ("http://127.3.4.5", True), ("http://LOCALHOST", True),
    ("http://[::1]:8080/", True), ("http://10.0.0.1", False), ("http://127.0.0.1.example.test", False),
    ("http://[::ffff:10.0.0.1]", False), ("ftp://127.0.0.1", False),
])
def test_plain_http_links_only_to_a_loopback_host(public: str, taken: bool) -> None:
    env = {**ON, "AYE_PUBLIC_URL": public}
    if not taken:
        with pytest.raises(SurfaceConfigError, match="http:// only on a loopback host"):
            read_settings(env)
        return
    line, warning = describe(read_settings(env)).splitlines()
    assert line.startswith("email: on (") and warning.startswith("warning: AYE_PUBLIC_URL is http://")


def test_the_subject_is_one_line_cut_to_120_characters() -> None:
    long = subject(question(question="Ship\nit " + "x" * 200))
    assert len(long) == 120 and long.startswith("[aye] Ship it xx") and long.endswith("…")
    assert subject(approval(operation="deploy.prod")) == "[aye] Approval needed: deploy.prod"
