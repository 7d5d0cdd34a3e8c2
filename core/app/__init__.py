"""The use cases: each owns its transaction, through one unit of work (change.py)."""
