"""How aye reaches a real relay: STARTTLS (required by smtp+starttls://) with AUTH, implicit TLS
(smtps://), each against aiosmtpd on 127.0.0.1 with a certificate aye trusts through
SSL_CERT_FILE; and a relay whose certificate it does not trust gets no mail and no password."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.smtp import AuthResult, LoginPassword
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from bot.config import Config
from tests.conftest import StartAye, eventually
from tests.smtp_server import Mailbox, email_env, smtp_server

ADA = "ada@example.com"
USER, PASSWORD = "aye-relay", "s3cret:/@pass"
CONFIG = Config.model_validate({"defaults": {"responders": [f"email:{ADA}"]}})


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1, and its key."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "smtp.example.test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=1))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = tmp_path / "relay.pem", tmp_path / "relay.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def server_tls(certificate: tuple[Path, Path]) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*certificate)
    return context


class Logins:
    """aiosmtpd's authenticator: who logged in, and with what."""

    def __init__(self) -> None:
        self.seen: list[tuple[bytes, bytes]] = []

    def __call__(self, server: Any, session: Any, envelope: Any, mechanism: str,
                 data: Any) -> AuthResult:
        assert isinstance(data, LoginPassword)
        self.seen.append((data.login, data.password))
        return AuthResult(success=data.login == USER.encode() and data.password == PASSWORD.encode())


@pytest.fixture
def trusted(certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))


async def one_mail(start_aye: StartAye, tmp_path: Path, box: Mailbox, url: str) -> None:
    aye = await start_aye(f"sqlite+aiosqlite:///{tmp_path}/aye.db", config=CONFIG,
                          env=email_env(None, url))
    await aye.ask(question="Over TLS?", options=["yes", "no"])

    async def arrived() -> bool:
        return len(box.received) == 1

    await eventually(arrived)


@pytest.fixture
async def starttls(certificate: tuple[Path, Path]) -> AsyncIterator[tuple[Mailbox, int, Logins]]:
    logins = Logins()
    async with smtp_server(tls_context=server_tls(certificate), require_starttls=True,
                           auth_required=True, authenticator=logins) as server:
        yield server.mailbox, server.port, logins


async def test_starttls_with_auth(
    start_aye: StartAye, tmp_path: Path, trusted: None, starttls: tuple[Mailbox, int, Logins]
) -> None:
    box, port, logins = starttls
    url = f"smtp+starttls://{USER}:s3cret%3A%2F%40pass@127.0.0.1:{port}"
    await one_mail(start_aye, tmp_path, box, url)
    assert logins.seen == [(USER.encode(), PASSWORD.encode())]
    assert box.received[0].to == [ADA]


async def test_implicit_tls(
    start_aye: StartAye, tmp_path: Path, trusted: None, certificate: tuple[Path, Path]
) -> None:
    async with smtp_server(implicit_tls=server_tls(certificate)) as server:
        await one_mail(start_aye, tmp_path, server.mailbox, f"smtps://127.0.0.1:{server.port}")


async def test_an_untrusted_certificate_gets_no_mail_and_no_password(
    start_aye: StartAye, tmp_path: Path, starttls: tuple[Mailbox, int, Logins]
) -> None:
    box, port, logins = starttls
    aye = await start_aye(f"sqlite+aiosqlite:///{tmp_path}/aye.db", config=CONFIG,
                          env=email_env(None, f"smtp+starttls://{USER}:x@127.0.0.1:{port}"))
    ask = await aye.ask(question="Over TLS?", options=["yes", "no"])

    async def tried() -> bool:
        rows = await aye.asks.mails.of(await aye.asks.find(ask["id"]))  # type: ignore[arg-type]
        return bool(rows) and rows[0].last_error is not None

    await eventually(tried)
    assert box.received == [] and logins.seen == []
