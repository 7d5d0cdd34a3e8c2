"""The email surface's settings, without building it: its people (`email:` addresses, the
core's own kind), its environment (AYE_SMTP_URL, AYE_MAIL_FROM, and an https:// AYE_PUBLIC_URL
the links lead to, or an http:// one on a loopback host, to try email on one machine)."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from email.utils import parseaddr
from urllib.parse import parse_qsl, unquote, urlsplit

from core.app.ports import ConfigNames, SurfaceConfigError
from core.domain import kinds
from handlers.env import get

SURFACE = "email"
# The URL forms: plain SMTP (STARTTLS when the server offers it), STARTTLS required, and
# implicit TLS (smtps, port 465); each with its usual port.
SCHEMES = {"smtp": ("plain", 25), "smtp+starttls": ("starttls", 587), "smtps": ("tls", 465)}
FORMS = "smtp://host[:25], smtp+starttls://user:password@host[:587] or smtps://user:password@host[:465]"
DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S = 30.0, 300.0
# Mails a second this process sends at most (relays limit senders: Amazon SES 14/s at first).
DEFAULT_RATE, MAX_RATE = 10.0, 1000.0


@dataclass(frozen=True, slots=True, repr=False)
class SmtpServer:
    host: str
    port: int
    tls: str  # plain (STARTTLS if offered), starttls (required) or tls (implicit)
    username: str | None = None
    password: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    rate: float = DEFAULT_RATE

    def __repr__(self) -> str:
        return f"SmtpServer({self.describe()})"  # never the password

    def describe(self) -> str:
        how = {"plain": "STARTTLS if offered", "starttls": "STARTTLS", "tls": "implicit TLS"}
        auth = ", AUTH" if self.username else ""
        return f"{self.host}:{self.port}, {how[self.tls]}{auth}"


@dataclass(frozen=True, slots=True, repr=False)
class EmailSettings:
    smtp: SmtpServer
    mail_from: str  # as given: `aye <aye@example.com>` or a bare address
    public_url: str  # https://… (http:// on a loopback host), without a trailing slash

    def __repr__(self) -> str:
        return f"EmailSettings({self.smtp.describe()}, from {self.mail_from!r})"

    @property
    def sender(self) -> str:
        """The envelope sender: the address of AYE_MAIL_FROM."""
        return parseaddr(self.mail_from)[1]


def read_settings(env: Mapping[str, str]) -> EmailSettings | None:
    url, mail_from = get(env, "AYE_SMTP_URL"), get(env, "AYE_MAIL_FROM")
    if url is None and mail_from is None:
        return None
    if url is None or mail_from is None:
        given, missing = ("AYE_SMTP_URL", "AYE_MAIL_FROM") if url else ("AYE_MAIL_FROM", "AYE_SMTP_URL")
        raise SurfaceConfigError(f"email needs both AYE_SMTP_URL and AYE_MAIL_FROM: {given} is "
                                 f"set, {missing} is not")
    public = (get(env, "AYE_PUBLIC_URL") or "").rstrip("/")
    parsed = urlsplit(public)
    if not parsed.hostname or not (
        parsed.scheme == "https" or (parsed.scheme == "http" and loopback(parsed.hostname))
    ):
        raise SurfaceConfigError(
            "email needs AYE_PUBLIC_URL, an https:// URL where people reach aye (http:// only on "
            "a loopback host, to try it on this machine): the links in its mails lead there"
            + ("" if not public else f" (it is {public!r})")
        )
    return EmailSettings(smtp_server(url), _mail_from(mail_from), public)


def loopback(host: str) -> bool:
    """`localhost`, 127.0.0.0/8 or ::1: this machine, where a link over plain http:// stays
    (as OpenID Connect sign-in allows an http:// issuer there)."""
    if host.lower().rstrip(".") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _mail_from(text: str) -> str:
    _name, address = parseaddr(text)
    if "\n" in text or "\r" in text or not kinds.EMAIL.fullmatch(address or ""):
        raise SurfaceConfigError(f"AYE_MAIL_FROM is not an address: {text!r} (write "
                                 "aye@example.com or aye <aye@example.com>)")
    return text


def smtp_server(url: str) -> SmtpServer:
    """AYE_SMTP_URL read; SurfaceConfigError naming what is wrong (never the password)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES or not parts.hostname:
        raise SurfaceConfigError(f"AYE_SMTP_URL is not an SMTP URL: use {FORMS}")
    tls, default_port = SCHEMES[scheme]
    try:
        port = parts.port or default_port
    except ValueError:
        raise SurfaceConfigError("AYE_SMTP_URL: its port is not a number from 1 to 65535") from None
    user = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password is not None else None
    if (user is None) != (password is None):
        raise SurfaceConfigError("AYE_SMTP_URL: give both the user and the password, or neither")
    if user is not None and tls == "plain":
        raise SurfaceConfigError(
            "AYE_SMTP_URL: smtp:// with a password could send it in clear: use smtp+starttls:// "
            "or smtps://")
    timeout, rate = _options(parts.query)
    return SmtpServer(parts.hostname, port, tls, user, password, timeout, rate)


def _options(query: str) -> tuple[float, float]:
    timeout, rate = DEFAULT_TIMEOUT_S, DEFAULT_RATE
    for key, value in parse_qsl(query, keep_blank_values=True):
        if key not in ("timeout", "rate"):
            raise SurfaceConfigError(f"AYE_SMTP_URL: unknown option {key!r} (timeout, rate)")
        try:
            number = float(value)
        except ValueError:
            number = -1.0
        top = MAX_TIMEOUT_S if key == "timeout" else MAX_RATE
        if not 0 < number <= top:
            raise SurfaceConfigError(f"AYE_SMTP_URL: {key} must be a number above 0, at most "
                                     f"{top:g} (seconds for timeout, mails a second for rate)")
        if key == "timeout":
            timeout = number
        else:
            rate = number
    return timeout, rate


def warnings(settings: EmailSettings | None, config: ConfigNames) -> list[str]:
    """A start-up line when the config names an email: responder while email is off: it
    would be mailed nothing."""
    if settings is not None:
        return []
    key = config.first_naming(kinds.EMAIL_KIND)
    if key is None:
        return []
    return [f"warning: {key} names an email: responder but email is off (set AYE_SMTP_URL, "
            "AYE_MAIL_FROM and AYE_PUBLIC_URL): nothing will be mailed"]


def describe(settings: EmailSettings | None) -> str:
    if settings is None:
        return "email: off (set AYE_SMTP_URL, AYE_MAIL_FROM and an https:// AYE_PUBLIC_URL)"
    line = (f"email: on (SMTP {settings.smtp.describe()}, from {settings.sender}, "
            f"links to {settings.public_url}/e/…)")
    if settings.public_url.startswith("http://"):
        line += ("\nwarning: AYE_PUBLIC_URL is http:// on a loopback host: the mailed links open "
                 "only on this machine and go unencrypted; use an https:// URL for anyone else")
    return line



_KNOWN = kinds.CORE.known(kinds.EMAIL_KIND)
assert _KNOWN is not None  # the core's own kind: always known
KIND: kinds.SurfaceKind = _KNOWN
