"""The agents' HTTP API (`/v1`), and a small client for agents to import."""
