"""Deprecated: the Python client is its own distribution now, `aye-client` (import `aye_client`).

`from ask_api.client import connect` keeps working through 0.5, with a DeprecationWarning (once,
when this module is first imported); write `from aye_client import connect` instead.
"""

import warnings

from aye_client import *  # noqa: F403 (the whole public client, as before)
from aye_client import __all__  # noqa: F401

warnings.warn(
    "ask_api.client is deprecated and goes after 0.5: import aye_client instead "
    "(pip install aye-client, or the server's own install)",
    DeprecationWarning,
    stacklevel=2,
)
