"""Fixtures the end-to-end tests share beyond tests/conftest.py's."""

from tests.pgbouncer import pgbouncer

__all__ = ["pgbouncer"]
