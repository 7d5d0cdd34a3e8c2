"""Unit tests: pure functions only. No store, no sockets, no servers, no subprocesses."""
