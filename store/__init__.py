"""Persistence: tables, engines, every query, migrations. Imports nothing of aye above it."""
