"""The domain: pure decisions, no I/O (rules, answering, formats, identity, policy)."""
