"""aye's Python client, for agents: ask a person and wait, or run an operation only once a
person approved it, and check what aye signed.

    from aye_client import ApprovalRefused, connect, verify_receipt

    async with connect("http://127.0.0.1:8080", token) as aye:
        answer = await aye.ask("Spend $40 on a GPU tonight?", options=["yes", "no"])
        async with aye.gated("deploy.prod", {"version": "1.4.2"}) as grant:
            await deploy("1.4.2")        # runs only after a person approved this exact call

A distribution of its own (`aye-client`: aiohttp and PyJWT only), importing nothing of aye's
server; the server's own `pip install` brings it too. See aye_client.client for the whole client.
"""

from aye_client.client import AyeClient, connect
from aye_client.errors import (
    Answer,
    ApprovalRefused,
    ApprovalTimedOut,
    ApprovalUnavailable,
    AskClosed,
    AyeError,
    StartRefused,
    answer_value,
)
from aye_client.gated import Gated, Grant
from aye_client.verify import BadReceipt, BadSignature, sign_external, verify_callback, verify_receipt

__all__ = [
    "Answer", "ApprovalRefused", "ApprovalTimedOut", "ApprovalUnavailable", "AskClosed",
    "AyeClient", "AyeError", "BadReceipt", "BadSignature", "Gated", "Grant", "StartRefused",
    "answer_value", "connect", "sign_external", "verify_callback", "verify_receipt",
]
