"""Where a callback may go: the operator's `callback_urls` prefixes, an ask's `callback_url`
matched against them, and which addresses a callback may be sent to (the contract's "Callback
URLs, exactly").

A prefix is compared by its parts, never as a string: `https://hooks.test` as a string prefix
lets through `https://hooks.test@127.0.0.1/` and `https://hooks.test.127.0.0.1.nip.io/`, and a
path prefix lets through `/hooks/../admin`. Both URLs are parsed here by one strict reading of
RFC 3986 (no browser leniency: no backslashes, no spaces, no legacy numeric hosts), and the
sender posts to the URL rebuilt from these parts (`Callback.url`), so that what was checked is
what is reached, whatever another parser would make of the original text.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

DEFAULT_PORTS = {"http": 80, "https": 443}
# The literal loopback hosts a prefix may name with plain http:// (a receiver on this machine).
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "[::1]", "localhost"})
# A name whose addresses may be loopback ones when a prefix names it: it means this machine.
LOOPBACK_NAME = "localhost"
MAX_URL = 2000

# RFC 3986's pchar (and `/`), and the query's; `%` only as the start of %XX (checked apart).
PATH_CHARS = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/%]*")
QUERY_CHARS = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/?%]*")
PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
# Encoded `.`, `/`, `\` (a receiver's decoding may make a dot segment or a new segment of
# them), and an encoded `%` (a receiver decoding twice turns %252e into `.`).
ENCODED_TRAPS = ("%2e", "%2f", "%5c", "%25")
NETLOC = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[^\[\]:]+)(?::(?P<port>[0-9]{0,5}))?")
LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
# WHATWG reads a host whose last label is a number (decimal, octal or 0x hex) as IPv4:
# `2130706433`, `0x7f000001`, `0177.0.0.1` and `127.1` all reach 127.0.0.1 in some client.
NUMERIC_LABEL = re.compile(r"(?:0x[0-9a-f]*|[0-9]+)")
# Addresses outside the contract's "public" that ipaddress's flags miss on Python 3.11.
CGNAT = ipaddress.ip_network("100.64.0.0/10")
NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
SIX_TO_FOUR = ipaddress.ip_network("2002::/16")
IPV4_COMPATIBLE = ipaddress.ip_network("::/96")


class BadUrl(ValueError):
    """The URL is not one aye will call back; the message says why, safe to show."""


@dataclass(frozen=True, slots=True)
class Parsed:
    """A URL read strictly: scheme and host lowercased (the host IDNA-encoded, an IPv6
    literal bracketed and compressed), the port made explicit, path and query as written."""

    scheme: str
    host: str
    port: int
    path: str
    query: str | None = None

    @property
    def literal(self) -> Address | None:
        """The address the host names literally, or None for a name."""
        return literal_address(self.host)

    @property
    def url(self) -> str:
        """The URL rebuilt from its checked parts: what the sender posts to."""
        port = "" if DEFAULT_PORTS[self.scheme] == self.port else f":{self.port}"
        query = "" if self.query is None else f"?{self.query}"
        return f"{self.scheme}://{self.host}{port}{self.path}{query}"

    def same_origin(self, other: Parsed) -> bool:
        return (self.scheme, self.host, self.port) == (other.scheme, other.host, other.port)


def parse_prefix(text: str) -> Parsed:
    """A `callback_urls` entry: an absolute https:// URL (http:// for a literal loopback host)
    whose path ends in `/`, with no userinfo, query or fragment; BadUrl otherwise."""
    if "?" in text or "#" in text:
        raise BadUrl("must have no query or fragment")
    prefix = _parse(text)
    if prefix.scheme == "http" and prefix.host not in LOOPBACK_HOSTS:
        raise BadUrl("must be https:// (http:// only for 127.0.0.1, [::1] or localhost)")
    if not prefix.path.endswith("/"):
        raise BadUrl("must have a path that ends in /")
    return prefix


def parse_callback(text: str) -> Parsed:
    """An ask's `callback_url`, read as strictly as a prefix (a query is allowed, a fragment
    is not: it is never sent, and only makes two parsers disagree); BadUrl otherwise."""
    if "#" in text:
        raise BadUrl("must have no fragment")
    callback = _parse(text)
    if not callback.path:  # `https://host` is `https://host/`
        return Parsed(callback.scheme, callback.host, callback.port, "/", callback.query)
    return callback


def match(url: str, prefixes: tuple[str, ...] | list[str]) -> Parsed:
    """The callback as it will be sent, when it is under one of `prefixes`: the same scheme,
    host and port, and a path under the prefix's; BadUrl saying why otherwise. A prefix that
    does not parse (the config checks them at start) matches nothing."""
    callback = parse_callback(url)
    for text in prefixes:
        try:
            prefix = parse_prefix(text)
        except BadUrl:
            continue
        # No dot segment survives _parse, so the path is its own dot-segment removal.
        if callback.same_origin(prefix) and callback.path.startswith(prefix.path):
            return callback
    raise BadUrl("is not under this agent's callback_urls")


def _parse(text: str) -> Parsed:
    if len(text) > MAX_URL:
        raise BadUrl(f"must be at most {MAX_URL} characters")
    if any(c.isspace() or not c.isprintable() or c == "\\" for c in text):
        raise BadUrl("must not contain spaces, control characters or backslashes")
    scheme, sep, rest = text.partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in DEFAULT_PORTS:
        raise BadUrl("must be an absolute http(s) URL")
    cut = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
    netloc, tail = rest[:cut], rest[cut:]
    path, _, query = tail.partition("?")
    host, port = _authority(netloc, scheme)
    return Parsed(scheme, host, port, _path(path), _query(query) if "?" in tail else None)


def _authority(netloc: str, scheme: str) -> tuple[str, int]:
    if "@" in netloc:
        raise BadUrl("must have no userinfo (user@ or user:password@)")
    found = NETLOC.fullmatch(netloc)
    if found is None:
        raise BadUrl("has no valid host")
    port_text = found["port"]
    port = int(port_text) if port_text else DEFAULT_PORTS[scheme]
    if not 0 < port < 65536:
        raise BadUrl("has a port out of range")
    return _host(found["host"]), port


def _host(raw: str) -> str:
    """The host as compared: an IPv6 literal compressed, a name lowercased and IDNA-encoded
    (then it is read again, as IDNA maps full-width digits and dots to ASCII ones)."""
    if raw.startswith("["):
        try:
            return f"[{ipaddress.IPv6Address(raw[1:-1]).compressed}]"
        except ValueError:
            raise BadUrl("has an invalid IPv6 address") from None
    if "%" in raw:
        raise BadUrl("must not percent-encode its host")
    try:
        host = raw.encode("idna").decode("ascii").lower() if not raw.isascii() else raw.lower()
    except UnicodeError:
        raise BadUrl("has a host that is not a valid international domain name") from None
    labels = host.split(".")
    if NUMERIC_LABEL.fullmatch(labels[-1]):
        return _dotted_quad(host)
    if not all(LABEL.fullmatch(label) for label in labels) or len(host) > 253:
        raise BadUrl("has an invalid host name")
    return host


def _dotted_quad(host: str) -> str:
    try:
        address = ipaddress.IPv4Address(host)
    except ValueError:
        address = None
    if address is None or str(address) != host:
        raise BadUrl("has a numeric host that is not a plain dotted IPv4 address")
    return host


def _path(path: str) -> str:
    if not PATH_CHARS.fullmatch(path) or PERCENT.search(path):
        raise BadUrl("has characters a URL path may not hold unencoded")
    lowered = path.lower()
    if any(trap in lowered for trap in ENCODED_TRAPS):
        raise BadUrl("must not hold an encoded '.', '/', '\\' or '%' (%2e, %2f, %5c, %25)")
    # `..;` is `..` to some servers (Tomcat drops a segment's ;parameters).
    if any(segment.partition(";")[0] in (".", "..") for segment in path.split("/")):
        raise BadUrl("must not hold '.' or '..' segments")
    return path


def _query(query: str) -> str:
    if not QUERY_CHARS.fullmatch(query) or PERCENT.search(query):
        raise BadUrl("has characters a URL query may not hold unencoded")
    return query


def literal_address(host: str) -> Address | None:
    """The address a host (`127.0.0.1`, `[::1]`) names literally, or None for a name."""
    try:
        return ipaddress.ip_address(host[1:-1] if host.startswith("[") else host)
    except ValueError:
        return None


def embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries and reaches (mapped, compatible, 6to4, NAT64)."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if any(address in net for net in NAT64) or (address in IPV4_COMPATIBLE and int(address) > 1):
        return ipaddress.IPv4Address(address.packed[-4:])
    return None


def is_public(address: Address) -> bool:
    """Whether a callback may reach `address` when the prefix does not name it: not loopback,
    private (RFC 1918, fc00::/7), link-local, CGNAT, multicast, unspecified, reserved or any
    other special-purpose block, nor an IPv6 form (mapped, compatible, 6to4, NAT64) of one."""
    if isinstance(address, ipaddress.IPv6Address):
        inner = embedded_ipv4(address)
        if inner is not None and not is_public(inner):
            return False
        if address.scope_id:
            return False
    flags = (
        address.is_loopback, address.is_private, address.is_link_local, address.is_multicast,
        address.is_unspecified, address.is_reserved,
    )
    if any(flags):
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.is_site_local:
        return False
    if isinstance(address, ipaddress.IPv4Address) and address in CGNAT:
        return False
    return address.is_global


def may_reach(host: str, address: Address) -> bool:
    """Whether a callback to `host` (a matched callback's host, so one a prefix names) may be
    sent to `address`, one of the host's: a public one; any, when the host is that literal
    address; a loopback one, when it is `localhost` (which names this machine as 127.0.0.1
    does, so a `http://localhost:…/` prefix is allowed the way `http://127.0.0.1:…/` is)."""
    literal = literal_address(host)
    if literal is not None:
        return literal == address
    if host.rstrip(".") == LOOPBACK_NAME and address.is_loopback:
        return True
    return is_public(address)
