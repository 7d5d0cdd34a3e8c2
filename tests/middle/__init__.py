"""Middle tests: the core on a real store (SQLite and PostgreSQL), routers, listeners and handlers
called directly in-process; no server on a socket, no subprocess."""
