"""`aye serve` skips Alembic when the store is at head, reading the scripts' head from their
text (store/migrate.py): that reading must agree with Alembic's own."""

from __future__ import annotations

from store import migrate


def test_the_head_read_from_the_scripts_text_is_alembic_s() -> None:
    assert migrate._script_head() == migrate.head()  # head(): Alembic's, never None
