"""aye's core: the domain (pure decisions) and the use cases that change state."""
