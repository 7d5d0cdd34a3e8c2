"""`aye.gated(…)` (aye_client): run a block or an async function only once this exact
call is approved, and tell aye afterwards what ran: `ran` when it returns, `failed` (with the
exception's type) when it raises. The approval's signed receipt is kept on the way in."""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, Protocol, TypeVar

import aiohttp

from aye_client.errors import AyeError

log = logging.getLogger("aye.client")
P = ParamSpec("P")
R = TypeVar("R")
REPORT_TIMEOUT_S = 10.0


class Client(Protocol):
    async def decide(
        self, operation: str, input: Any = None, work: dict[str, Any] | None = None,
        timeout_s: int | None = None, callback_url: str | None = None,
    ) -> tuple[str | None, str | None]: ...

    async def report(self, approval: str, outcome: str, detail: str | None = None
                     ) -> dict[str, Any]: ...


class Grant(str):
    """The approval's id (a str, as `call()` returns it) with its signed `receipt`."""

    receipt: str | None

    def __new__(cls, approval: str, receipt: str | None) -> Grant:
        grant = super().__new__(cls, approval)
        grant.receipt = receipt
        return grant


class Gated:
    def __init__(
        self, client: Client, operation: str, input: Any, work: Any, timeout_s: int | None,
        callback_url: str | None = None,
    ) -> None:
        self.client, self.operation, self.input, self.work = client, operation, input, work
        self.timeout_s, self.callback_url = timeout_s, callback_url
        self.approval: str | None = None
        self.receipt: str | None = None  # the approval's signed receipt (verify_receipt)

    async def _enter(self, given: Any) -> Grant | None:
        self.approval, self.receipt = await self.client.decide(
            self.operation, given, self.work, self.timeout_s, self.callback_url)
        return Grant(self.approval, self.receipt) if self.approval else None

    async def __aenter__(self) -> Grant | None:
        return await self._enter(self.input)

    async def __aexit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        await self._report(self.approval, kind)

    async def _report(self, approval: str | None, kind: type[BaseException] | None) -> None:
        """What ran, told to aye once (never hiding the block's own exception or result)."""
        if approval is None:
            return  # not gated: nothing was approved, so nothing to report
        outcome, detail = ("ran", None) if kind is None else ("failed", kind.__name__)
        try:
            await asyncio.wait_for(self.client.report(approval, outcome, detail),
                                   REPORT_TIMEOUT_S)
        except (AyeError, aiohttp.ClientError, TimeoutError, ValueError) as exc:
            # Not even an aye that answers in JSON: say so, and let the block's own result be.
            log.warning("aye: could not report %s for approval %s: %s", outcome, approval,
                        type(exc).__name__)

    def __call__(self, func: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
        if not inspect.iscoroutinefunction(func):
            raise TypeError("gated() decorates async functions")
        signature = inspect.signature(func)

        @functools.wraps(func)
        async def run(*args: P.args, **kwargs: P.kwargs) -> R:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            given = self.input if self.input is not None else dict(bound.arguments)
            approval, _ = await self.client.decide(self.operation, given, self.work,
                                                   self.timeout_s, self.callback_url)
            try:
                result = await func(*args, **kwargs)
            except BaseException as exc:
                await self._report(approval, type(exc))
                raise
            await self._report(approval, None)
            return result

        return run
