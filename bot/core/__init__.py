"""The domain core: decisions only. Imports store/ (and the standard library and pydantic),
never aiohttp, slack_*, gidgethub, nor anything else of aye's."""
