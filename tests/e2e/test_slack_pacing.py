"""Slack posts paced per channel: the real slack-bolt/slack-sdk and the app's own outbox loop,
against the fake Slack enforcing Slack's per-channel limit (`FakeSlack.pace_posts`).

At Slack's pace (one post a second) these would take minutes: the tests pace at 0.2 s, with
the fake refusing anything faster, so a post out of pace is a 429 the test sees.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import Any

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from core.app.ports import RetryLater
from handlers.slack import pacing, surface
from handlers.slack.pacing import Pace, Pacer
from store.models import OutboxRow
from tests.conftest import Aye, StartAye
from tests.e2e.test_slack_surface import DEFAULT_CHANNEL, WORK_CHANNEL, ok, start
from tests.fake_slack import BOT_TOKEN, FakeSlack, SlackCall

# Strict (no burst) so that any two posts to a channel within 0.2 s are a 429; at most two
# slots' wait is held in place, longer goes back to the outbox.
PACE = Pace(interval=0.2, burst=1, max_wait=0.4)
BURST = 20


@pytest.fixture
def sqlite_url(tmp_path: Any) -> str:
    return f"sqlite+aiosqlite:///{tmp_path}/aye.db"


@pytest.fixture
def paced(fake_slack: FakeSlack, monkeypatch: pytest.MonkeyPatch) -> FakeSlack:
    """The app paces at PACE (read when the surface is built); the fake enforces it."""
    monkeypatch.setattr(pacing, "DEFAULT_PACE", PACE)
    fake_slack.pace_posts(PACE.interval, burst=PACE.burst)
    return fake_slack


def ask_id(call: SlackCall) -> str:
    return str(call.args["metadata"]["event_payload"]["ask_id"])


async def ask_many(aye: Aye, n: int, name: str, **more: Any) -> list[str]:
    """`n` asks one after the other, as fast as the API takes them; their ids in order."""
    return [
        (await aye.ask(question=f"{name} {i}?", options=["yes", "no"], **more))["id"]
        for i in range(n)
    ]


async def all_posted(fake: FakeSlack, n: int, extra_s: float = 5.0) -> list[SlackCall]:
    return await fake.wait_for_calls(
        "chat.postMessage", n, ok, timeout=n * PACE.interval + extra_s
    )


async def sent_back(aye: Aye) -> int:
    """Outbox rows delivered more than once: the pacer handed them back to wait for their slot
    in the outbox (rather than hold one of the delivery loop's)."""
    async with aye.asks.parts.store.read() as conn:
        rows = (await conn.execute(OutboxRow.__table__.select())).all()  # type: ignore[attr-defined]
    return sum(1 for row in rows if (row.attempts or 0) > 1)


# -- the fake keeps Slack's pace (else "no 429" above would prove nothing) ----------------------


async def test_the_fake_refuses_a_post_sooner_than_its_pace_in_one_channel(
    paced: FakeSlack,
) -> None:
    client = AsyncWebClient(token=BOT_TOKEN, base_url=paced.api_url)  # no retry handlers
    await client.chat_postMessage(channel="C0ONE", text="first")
    await client.chat_postMessage(channel="C0TWO", text="another channel: its own pace")
    with pytest.raises(SlackApiError) as refused:
        await client.chat_postMessage(channel="C0ONE", text="too soon")
    assert refused.value.response.status_code == 429
    assert refused.value.response.headers["Retry-After"] == "1"
    await asyncio.sleep(PACE.interval)  # the pace itself is what is under test
    await client.chat_postMessage(channel="C0ONE", text="on time")
    assert [c.args["text"] for c in paced.calls_to("chat.postMessage") if c.ok] == [
        "first", "another channel: its own pace", "on time"
    ]


# -- end to end --------------------------------------------------------------------------------


async def test_a_burst_into_one_channel_is_posted_in_order_at_its_pace_without_a_429(
    paced: FakeSlack, start_aye: StartAye, database_url: str
) -> None:
    aye = await start(start_aye, database_url, paced)
    asked = await ask_many(aye, BURST, "Ship build")

    calls = await all_posted(paced, BURST)
    assert [ask_id(c) for c in calls] == asked
    assert paced.rate_limited() == []
    assert len(paced.calls_to("chat.postMessage")) == BURST  # none refused, none doubled
    assert len(paced.messages(DEFAULT_CHANNEL)) == BURST
    for earlier, later in itertools.pairwise(calls):
        assert later.at - earlier.at >= PACE.interval * 0.95
    # At the channel's pace, give or take the trips through the outbox (the delivery loop was
    # not held: most of the burst waited for its slot in the outbox, in order).
    assert calls[-1].at - calls[0].at < (BURST - 1) * PACE.interval * 1.5 + 1.0
    assert await sent_back(aye) >= BURST // 2


async def test_a_busy_channel_does_not_hold_up_another(
    paced: FakeSlack, start_aye: StartAye, database_url: str
) -> None:
    thread_ts = paced.add_message(WORK_CHANNEL, "the release thread")
    aye = await start(start_aye, database_url, paced)
    busy = await ask_many(aye, 15, "Busy")
    other_from = time.monotonic()
    other = await ask_many(
        aye, 3, "Other", work={"slack": {"channel": WORK_CHANNEL, "thread_ts": thread_ts}}
    )

    calls = await all_posted(paced, 18)
    in_busy = [c for c in calls if c.args["channel"] == DEFAULT_CHANNEL]
    in_other = [c for c in calls if c.args["channel"] == WORK_CHANNEL]
    assert [ask_id(c) for c in in_busy] == busy
    assert [ask_id(c) for c in in_other] == other
    assert paced.rate_limited() == []
    # The other channel's three went at its own pace, while the busy one still had a dozen to
    # go: before the busy channel's eleventh (behind it they would have come after its last,
    # 3 s on). The time bound leaves room for a loaded machine (CI's three workers on two
    # cores) and stays under what the busy channel's fifteen take.
    assert in_other[-1].at < in_busy[-5].at
    assert in_other[-1].at - other_from < 2 * PACE.interval + 2.0


async def test_a_429_puts_the_channel_s_posts_after_its_retry_after_in_order(
    paced: FakeSlack, start_aye: StartAye, sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Not waited out inside slack-sdk: the pacer and the outbox honour it.
    monkeypatch.setattr(surface, "MAX_INLINE_RETRY_AFTER_S", 0.5)
    paced.fail_next("chat.postMessage", retry_after=1)
    aye = await start(start_aye, sqlite_url, paced)
    asked = await ask_many(aye, 6, "Tag")

    calls = await all_posted(paced, 6)
    [refused] = paced.rate_limited()  # the injected one, and no other
    assert ask_id(refused) == asked[0]
    assert [ask_id(c) for c in calls] == asked  # the refused one first when it came back
    # Nothing went to the channel within Retry-After; then the channel's pace again.
    assert calls[0].at - refused.at >= 0.95
    for earlier, later in itertools.pairwise(calls):
        assert later.at - earlier.at >= PACE.interval * 0.95


async def test_a_429_waited_out_in_place_keeps_the_channel_s_line_behind_it(
    paced: FakeSlack, start_aye: StartAye, sqlite_url: str
) -> None:
    paced.fail_next("chat.postMessage", retry_after=1)  # slack-sdk retries it after 1 s
    aye = await start(start_aye, sqlite_url, paced)
    asked = await ask_many(aye, 5, "Merge")

    calls = await all_posted(paced, 5)
    [refused] = paced.rate_limited()
    assert [ask_id(c) for c in calls] == asked
    assert calls[0].at - refused.at >= 0.95
    assert len(paced.calls_to("chat.postMessage")) == 6


# -- the pacer's book-keeping (a clock moved by hand; nothing waits) ----------------------------


class Ticks:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_a_far_slot_is_kept_in_the_outbox_and_newcomers_queue_behind_it() -> None:
    ticks = Ticks()
    pacer = Pacer(Pace(interval=1.0, burst=1, max_wait=1.5), now=ticks)
    async with pacer.turn("C1", "a"), pacer.turn("C1", "b"):  # now, and in 1 s: held here
        with pytest.raises(RetryLater) as third:
            async with pacer.turn("C1", "c"):
                pass
        assert third.value.after == 2.0
        ticks.now += 0.5
        # While "c" is away, a newcomer goes to the outbox too, after it, even with a slot near.
        with pytest.raises(RetryLater) as fourth:
            async with pacer.turn("C1", "d"):
                pass
        assert fourth.value.after == 2.5
        # Another channel is not behind any of them.
        async with pacer.turn("C2", "x"):
            pass
    ticks.now += 1.5
    async with pacer.turn("C1", "c"):  # back from the outbox: its place, no new slot
        pass


async def test_idle_channels_are_dropped() -> None:
    ticks = Ticks()
    pacer = Pacer(Pace(interval=1.0, burst=1, max_wait=1.5), now=ticks)
    for n in range(50):
        async with pacer.turn(f"C{n}", "a"):
            pass
    assert pacer.channels == 50  # each just posted to: its pace still matters
    ticks.now += pacing.SWEEP_S
    async with pacer.turn("C0", "b"):  # now and then, lines nobody needs are swept
        assert pacer.channels == 1
        ticks.now += 1.0
    assert pacer.channels == 0  # and one left when it needs nothing more is dropped at once
