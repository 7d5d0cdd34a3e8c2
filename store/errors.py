"""The store's one error for the operator: what stops it from being used as configured (raised by
store/db.py's engines and store/migrate.py's upgrade alike)."""


class StoreError(Exception):
    """The store cannot be used as configured; the message is for the operator."""
