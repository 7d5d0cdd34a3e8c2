"""aye's schema migrations (Alembic): `env.py` and `versions/`, run by `store.migrate`."""
