"""Debian's PgBouncer in `pool_mode = transaction` in front of the tests' PostgreSQL, started by
the tests: `pgbouncer` (a fixture) is the pooler's address for a database URL. Skipped when
pgbouncer is not installed, a failure under AYE_REQUIRE_PG=1 (.ci/run installs it)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from tests.stores import PG_SERVER, REQUIRE_PG

START_S = 10
# Well under the tests' PostgreSQL's 100 connections, which every worker shares.
INI = """[databases]
* = host={host} port={port}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {listen}
unix_socket_dir =
auth_type = trust
auth_file = {folder}/userlist.txt
pool_mode = transaction
default_pool_size = 6
max_client_conn = 400
ignore_startup_parameters = extra_float_digits
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_user() -> dict[str, str]:
    """pgbouncer refuses to run as root: run it as nobody when the tests are root."""
    return {"user": "nobody", "group": "nogroup"} if os.geteuid() == 0 else {}


def _start(folder: Path) -> tuple[subprocess.Popen[bytes], int]:
    """pgbouncer on a port free a moment ago; tried again on another when it was taken."""
    server = make_url(PG_SERVER)
    for _ in range(5):
        port = _free_port()
        ini = folder / "pgbouncer.ini"
        ini.write_text(INI.format(host=server.host, port=server.port or 5432, listen=port,
                                  folder=folder))
        (folder / "userlist.txt").write_text(f'"{server.username}" ""\n')
        for path in (ini, folder / "userlist.txt"):
            path.chmod(0o644)
        log = (folder / "pgbouncer.log").open("wb")
        proc = subprocess.Popen(["pgbouncer", str(ini)], stdout=log, stderr=subprocess.STDOUT,
                                **_as_user())  # type: ignore[call-overload]
        if _listening(proc, port):
            return proc, port
        proc.kill()
        proc.wait()
    raise AssertionError("pgbouncer did not start: " + (folder / "pgbouncer.log").read_text())


def _listening(proc: subprocess.Popen[bytes], port: int) -> bool:
    deadline = time.monotonic() + START_S
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            time.sleep(0.02)
    return False


@pytest.fixture(scope="session")
def pgbouncer() -> Iterator[Callable[[str], str]]:
    """`through(url)`: the database URL `url` (on the tests' PostgreSQL) through the pooler."""
    if shutil.which("pgbouncer") is None:
        if REQUIRE_PG:
            pytest.fail("pgbouncer is required (AYE_REQUIRE_PG=1): apt-get install pgbouncer")
        pytest.skip("pgbouncer is not installed")
    # Not under pytest's tmp_path: its root is the owner's alone, and nobody must read these.
    with tempfile.TemporaryDirectory(prefix="aye-pgbouncer-") as name:
        folder = Path(name)
        folder.chmod(0o755)
        yield from _run(folder)


def _run(folder: Path) -> Iterator[Callable[[str], str]]:
    proc, port = _start(folder)

    def through(url: str) -> str:
        return make_url(url).set(host="127.0.0.1", port=port).render_as_string(hide_password=False)

    try:
        yield through
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
