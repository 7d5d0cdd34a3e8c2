"""Where a callback may go, as pure functions: config prefixes parsed strictly, an ask's
callback_url matched by its parts (never as a string prefix), the addresses a callback may
reach, and the callbacks' resolver keeping only those (with a fake lookup: no DNS, no network)."""

from __future__ import annotations

import ipaddress
import re
import socket

import pytest
from aiohttp.abc import AbstractResolver, ResolveResult

from ask_api.callback_dns import BlockedAddress, GuardedResolver
from core.domain.callback_urls import BadUrl, is_public, match, may_reach, parse_prefix

LOCAL = "http://127.0.0.1:9000/hooks/"
HOOKS = "https://hooks.test/hooks/"
PREFIXES = (LOCAL, HOOKS)

# Each was let through by `url.startswith(prefix)` for one of these prefixes (or a prefix as
# loose as `https://hooks.test`, which the config now refuses), and is refused now.
REFUSED = [
    # The issue's own variants: traversal out of the prefix's path...
    "http://127.0.0.1:9000/hooks/../admin",
    "http://127.0.0.1:9000/hooks/%2e%2e/admin",
    "http://127.0.0.1:9000/hooks/./../admin",
    # ...and another host behind the prefix's text (userinfo, numeric forms, a longer name).
    "https://hooks.test@127.0.0.1:9/hooks/",
    "http://[::ffff:127.0.0.1]:9000/hooks/x",
    "http://0x7f000001:9000/hooks/x",
    "https://hooks.test.127.0.0.1.nip.io/hooks/",
    # More of the same families.
    "http://127.0.0.1:9000/hooks/%2E%2E/admin",
    "http://127.0.0.1:9000/hooks/.%2e/admin",
    "http://127.0.0.1:9000/hooks/..%2fadmin",
    "http://127.0.0.1:9000/hooks/..%2Fadmin",
    "http://127.0.0.1:9000/hooks/..%5cadmin",
    "http://127.0.0.1:9000/hooks/..%5Cadmin",
    "http://127.0.0.1:9000/hooks/%252e%252e/admin",
    "http://127.0.0.1:9000/hooks/..;/admin",
    "http://127.0.0.1:9000/hooks/.",
    "http://127.0.0.1:9000/hooks/..",
    "http://127.0.0.1:9000/hooks/a/../../admin",
    "http://127.0.0.1:9000/hooks\\..\\admin",
    "http://127.0.0.1:9000/hooks/\\..\\admin",
    "http://127.0.0.1:9000/hooks/%zz",
    "http://127.0.0.1:9000/hooks/a b",
    "http://127.0.0.1:9000/hooks/a\tb",
    "http://127.0.0.1:9000/hooks/a\nb",
    "http://127.0.0.1:9000/hooks/\x00",
    "http://127.0.0.1:9000/hooks/<x>",
    "http://127.0.0.1:9000/hooks/x#frag",
    "http://127.0.0.1:9000/hooks",
    "http://127.0.0.1:9000/hooksevil/",
    "http://127.0.0.1:9000/HOOKS/x",
    "http://127.0.0.1:9001/hooks/x",
    "http://127.0.0.1/hooks/x",
    "https://127.0.0.1:9000/hooks/x",
    "http://user:pass@127.0.0.1:9000/hooks/x",
    "http://@127.0.0.1:9000/hooks/x",
    "http://127.0.0.1:9000@evil.test/hooks/x",
    "http://2130706433:9000/hooks/x",
    "http://0177.0.0.1:9000/hooks/x",
    "http://127.1:9000/hooks/x",
    "http://127.0.1:9000/hooks/x",
    "http://0x7f.0.0.1:9000/hooks/x",
    "http://127.000.000.001:9000/hooks/x",
    "http://[::ffff:7f00:1]:9000/hooks/x",
    "http://[::127.0.0.1]:9000/hooks/x",
    "http://[::1]:9000/hooks/x",
    "http://localhost:9000/hooks/x",
    "http://127.0.0.1.:9000/hooks/x",
    "http://%31%32%37.0.0.1:9000/hooks/x",
    "http://[127.0.0.1]:9000/hooks/x",
    "http://[fe80::1%25eth0]:9000/hooks/x",
    "http://127.0.0.1:99999/hooks/x",
    "http://127.0.0.1:0/hooks/x",
    "http://127.0.0.1:9000:9000/hooks/x",
    "http:/127.0.0.1:9000/hooks/x",
    "//127.0.0.1:9000/hooks/x",
    "ftp://127.0.0.1:9000/hooks/x",
    "javascript://127.0.0.1:9000/hooks/x",
    "http://hooks.test/hooks/x",
    "https://hooks.test:8443/hooks/x",
    "https://hooks.test./hooks/x",
    "https://evil.hooks.test/hooks/x",
    "https://hooks.test.evil/hooks/x",
    "https://hooks-test/hooks/x",
    "https://hooks.test%2f@evil.test/hooks/x",
    "https://hooks.test\\@evil.test/hooks/x",
    "https://hooks.test%40evil.test/hooks/x",
    "https://hooks.test:443@evil.test/hooks/x",
    "https://xn--/hooks/x",
    "https://\u00ad/hooks/x",
    "https://hooks.test/hooks/x" + "y" * 2000,
    " https://hooks.test/hooks/x",
    "https://hooks.test/hooks/x ",
]

ALLOWED = [  # (the URL, what is sent)
    ("http://127.0.0.1:9000/hooks/aye", "http://127.0.0.1:9000/hooks/aye"),
    ("http://127.0.0.1:9000/hooks/", "http://127.0.0.1:9000/hooks/"),
    ("http://127.0.0.1:9000/hooks/a/b?x=1&y=%20", "http://127.0.0.1:9000/hooks/a/b?x=1&y=%20"),
    ("HTTP://127.0.0.1:9000/hooks/aye", "http://127.0.0.1:9000/hooks/aye"),
    ("https://hooks.test/hooks/aye", "https://hooks.test/hooks/aye"),
    ("https://HOOKS.Test/hooks/aye", "https://hooks.test/hooks/aye"),
    ("https://hooks.test:443/hooks/aye", "https://hooks.test/hooks/aye"),
    ("https://hooks.test/hooks//aye", "https://hooks.test/hooks//aye"),
    ("https://hooks.test/hooks/a..b/.c/d.", "https://hooks.test/hooks/a..b/.c/d."),
    ("https://hooks.test/hooks/@me;v=1", "https://hooks.test/hooks/@me;v=1"),
    # Full-width letters are the same name once IDNA-mapped; what is sent is the ASCII name.
    ("https://\uff48\uff4f\uff4f\uff4b\uff53.test/hooks/aye", "https://hooks.test/hooks/aye"),
]


@pytest.mark.parametrize("url", REFUSED)
def test_a_callback_url_outside_its_prefixes_is_refused(url: str) -> None:
    with pytest.raises(BadUrl):
        match(url, PREFIXES)


@pytest.mark.parametrize(("url", "sent"), ALLOWED)
def test_a_callback_url_under_a_prefix_is_sent_as_checked(url: str, sent: str) -> None:
    assert match(url, PREFIXES).url == sent


def test_the_refusals_say_why() -> None:
    def why(url: str) -> str:
        with pytest.raises(BadUrl) as caught:
            match(url, PREFIXES)
        return str(caught.value)

    assert "userinfo" in why("https://hooks.test@127.0.0.1:9/hooks/")
    assert "'..'" in why("http://127.0.0.1:9000/hooks/../admin")
    assert "%2e" in why("http://127.0.0.1:9000/hooks/%2E%2E/admin")
    assert "numeric host" in why("http://0x7f000001:9000/hooks/x")
    assert "backslash" in why("http://127.0.0.1:9000/hooks\\..\\admin")
    assert why("https://hooks.test.127.0.0.1.nip.io/hooks/") == "is not under this agent's callback_urls"


def test_international_names_compare_by_their_idna_form() -> None:
    prefixes = ("https://b\u00fccher.test/hooks/",)
    assert match("https://xn--bcher-kva.test/hooks/x", prefixes).host == "xn--bcher-kva.test"
    assert match("https://B\u00dcCHER.test/hooks/x", prefixes).url == "https://xn--bcher-kva.test/hooks/x"
    with pytest.raises(BadUrl, match="international"):
        match("https://" + "\u00fc" * 70 + ".test/hooks/x", prefixes)  # a label over 63 once encoded
    # IDNA maps full-width digits and dots to ASCII ones: still not a numeric trick.
    with pytest.raises(BadUrl):
        match("http://\uff11\uff12\uff17\uff0e\uff10\uff0e\uff10\uff0e\uff11:9000/hooks/", ("http://127.0.0.2:9000/hooks/",))


def test_ipv6_prefixes_compare_by_address() -> None:
    prefixes = ("http://[::1]:9000/hooks/",)
    assert match("http://[0:0::1]:9000/hooks/x", prefixes).url == "http://[::1]:9000/hooks/x"
    with pytest.raises(BadUrl):
        match("http://[::ffff:127.0.0.1]:9000/hooks/x", prefixes)


def test_a_callback_with_no_path_is_at_the_root() -> None:
    assert match("https://hooks.test?x=1", ("https://hooks.test/",)).url == "https://hooks.test/?x=1"
    with pytest.raises(BadUrl):
        match("https://hooks.test", (HOOKS,))


def test_a_prefix_that_does_not_parse_matches_nothing() -> None:
    with pytest.raises(BadUrl):
        match("https://hooks.test/x", ("https://hooks.test",))


@pytest.mark.parametrize(
    "prefix",
    [
        "http://127.0.0.1:9000/hooks/", "http://[::1]:9000/", "http://localhost:8090/hooks/",
        "https://agents.internal/hooks/", "https://hooks.test/", "HTTPS://Hooks.Test/a/b/",
        "https://10.0.0.5/hooks/", "https://[2001:db8::5]:8443/x/",
    ],
)
def test_good_prefixes(prefix: str) -> None:
    assert parse_prefix(prefix).path.endswith("/")


@pytest.mark.parametrize(
    ("prefix", "why"),
    [
        ("https://hooks.test", "path that ends in /"),
        ("https://hooks.test/hooks", "path that ends in /"),
        ("http://hooks.test/hooks/", "https://"),
        ("http://10.0.0.1/hooks/", "https://"),
        ("http://127.0.0.2/hooks/", "https://"),
        ("http://[::ffff:127.0.0.1]/hooks/", "https://"),
        ("http://0x7f000001/hooks/", "numeric host"),
        ("https://2130706433/hooks/", "numeric host"),
        ("https://user@hooks.test/hooks/", "userinfo"),
        ("https://hooks.test/hooks/?a=1", "query"),
        ("https://hooks.test/hooks/?", "query"),
        ("https://hooks.test/hooks/#x", "fragment"),
        ("https://hooks.test/hooks/../", "'..'"),
        ("https://hooks.test/%2e%2e/", "%2e"),
        ("ftp://hooks.test/hooks/", "http(s)"),
        ("hooks.test/hooks/", "http(s)"),
        ("https:///hooks/", "host"),
        ("https://hooks test/", "spaces"),
    ],
)
def test_bad_prefixes_say_why(prefix: str, why: str) -> None:
    with pytest.raises(BadUrl, match=re.escape(why)):
        parse_prefix(prefix)


PUBLIC = ["8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "2a00:1450:4001::200e"]
NOT_PUBLIC = [
    "127.0.0.1", "127.255.255.254", "10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.1.1",
    "169.254.169.254", "100.64.0.1", "100.127.255.254", "224.0.0.1", "239.255.255.250",
    "255.255.255.255", "0.0.0.0", "0.1.2.3", "240.0.0.1", "192.0.2.1", "198.18.0.1",
    "::1", "::", "fc00::1", "fd12:3456::1", "fe80::1", "fe80::1%1", "fec0::1", "ff02::1",
    "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "::127.0.0.1",
    "2002:7f00:1::", "2002:a00:1::", "64:ff9b::7f00:1", "64:ff9b::a00:1", "64:ff9b:1::a00:1",
    "2001::1", "2001:db8::1", "100::1",
]


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_may_be_reached(address: str) -> None:
    assert is_public(ipaddress.ip_address(address))
    assert may_reach("hooks.test", ipaddress.ip_address(address))


@pytest.mark.parametrize("address", NOT_PUBLIC)
def test_other_addresses_are_refused_unless_the_prefix_names_them(address: str) -> None:
    ip = ipaddress.ip_address(address)
    assert not is_public(ip)
    assert not may_reach("hooks.test", ip)
    literal = f"[{ip.compressed}]" if ip.version == 6 else str(ip)
    assert may_reach(literal, ip)  # the prefix named it, so the match made the host it


def test_localhost_may_reach_loopback_only() -> None:
    for address in ("127.0.0.1", "::1", "127.0.0.2"):
        assert may_reach("localhost", ipaddress.ip_address(address))
    for address in ("10.0.0.1", "169.254.169.254", "::ffff:10.0.0.1"):
        assert not may_reach("localhost", ipaddress.ip_address(address))
    assert not may_reach("127.0.0.1", ipaddress.ip_address("127.0.0.2"))


class FakeLookup(AbstractResolver):
    """A DNS that answers from a table, counting its lookups."""

    def __init__(self, table: dict[str, list[str]]) -> None:
        self.table, self.lookups = table, 0

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        self.lookups += 1
        return [
            ResolveResult(hostname=host, host=a, port=port, family=family, proto=0, flags=0)
            for a in self.table[host]
        ]

    async def close(self) -> None:
        pass


async def test_the_resolver_hands_over_only_what_it_checked() -> None:
    lookup = FakeLookup({
        "mixed.test": ["10.0.0.1", "8.8.8.8", "::ffff:127.0.0.1", "2606:4700:4700::1111", "bogus"],
        "inside.test": ["127.0.0.1", "10.0.0.1", "169.254.169.254", "fd00::1"],
        "localhost.": ["127.0.0.1", "::1"],
    })
    guard = GuardedResolver(lookup)
    kept = await guard.resolve("mixed.test", 443)
    assert [r["host"] for r in kept] == ["8.8.8.8", "2606:4700:4700::1111"]
    assert lookup.lookups == 1  # one answer, checked and connected to: no second lookup
    with pytest.raises(BlockedAddress):
        await guard.resolve("inside.test", 443)
    assert [r["host"] for r in await guard.resolve("localhost.", 80)] == ["127.0.0.1", "::1"]
