"""The client's pure pieces, without a server: how an answer reads as a value, how a gate's 403
reads as an exception, which asks a wait names, and the signatures on either side of a callback
and of an external ask's door."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest

from aye_client import (
    ApprovalRefused,
    ApprovalTimedOut,
    ApprovalUnavailable,
    AskClosed,
    AyeError,
    BadSignature,
    StartRefused,
    answer_value,
    sign_external,
    verify_callback,
)
from aye_client.errors import refusal, start_refusal, work_name
from aye_client.many import MAX_IDS, ids_of
from aye_client.verifiers import SCHEMES, Verifier


def test_an_answer_is_typed_by_its_format() -> None:
    assert answer_value({"status": "answered", "answer": {"value": ["a", "b"]}}) == ["a", "b"]
    assert answer_value({"status": "answered", "answer": {"value": True}}) is True
    assert answer_value({"status": "answered", "answer": {"value": 42}}) == "42"
    external = {"status": "answered", "format": "external", "answer": {"value": 42}}
    assert answer_value(external) == 42  # the outside system's payload, whatever JSON it is
    with pytest.raises(AskClosed, match="expired"):
        answer_value({"status": "expired"})
    with pytest.raises(ValueError, match="a3 is still open"):
        answer_value({"status": "open", "ref": "a3"})


def test_a_gates_403_reads_as_who_refused_and_until_when() -> None:
    said = refusal("deploy.prod", {
        "error": "approval_refused", "by": "slack:U1", "note": "not today", "repeat": True,
        "message": "refused; not asked again until 2026-12-05T10:00:00Z"})
    assert isinstance(said, ApprovalRefused)
    assert (said.by, said.note, said.repeat, said.until) == (
        "slack:U1", "not today", True, "2026-12-05T10:00:00Z")
    assert "remembered: not asked again until 2026-12-05T10:00:00Z" in str(said)
    assert isinstance(refusal("x", {"error": "approval_timed_out"}), ApprovalTimedOut)
    assert isinstance(refusal("x", {}), ApprovalUnavailable)
    other = refusal("x", {"error": "gate_closed", "message": "closed"})
    assert type(other) is AyeError and other.code == "gate_closed"


def test_a_start_refusal_names_the_work() -> None:
    work = {"github": {"repo": "octo/app", "number": 7}}
    said = start_refusal(work, {"error": "start_refused", "by": "github:ada", "approval": "a1"})
    assert isinstance(said, StartRefused) and said.approval == "a1"
    assert str(said) == "start_refused: the start on github:octo/app#7 was refused by github:ada"
    assert work_name({"slack": {"channel": "C1", "thread_ts": "1.2"}}) == "slack:C1/1.2"


def test_a_wait_names_ids_refs_or_asks_up_to_the_servers_limit() -> None:
    assert ids_of("a1") == ["a1"]
    assert ids_of([{"id": "x"}, "a2"]) == ["x", "a2"]
    with pytest.raises(ValueError):
        ids_of([])
    with pytest.raises(ValueError):
        ids_of([f"a{i}" for i in range(MAX_IDS + 1)])


def test_a_callback_verifies_with_its_secret_only() -> None:
    body = json.dumps({"event": "ask.closed", "ask": {"id": "x"}}).encode()
    signed = "sha256=" + hmac.new(b"s3cret", body, hashlib.sha256).hexdigest()
    headers = {"x-aye-signature-256": signed}  # any case, as a server hands headers over
    assert verify_callback(body, headers, "s3cret")["ask"] == {"id": "x"}
    with pytest.raises(BadSignature):
        verify_callback(body, headers, "other")
    with pytest.raises(BadSignature):
        verify_callback(body + b" ", headers, "s3cret")
    with pytest.raises(BadSignature, match="no X-Aye-Signature-256"):
        verify_callback(body, {}, "s3cret")


def test_what_sign_external_signs_the_servers_verifier_accepts() -> None:
    body = b'{"signed": true}'
    verifier = Verifier("docsign", b"k", "X-Sig", SCHEMES["hmac-sha256"], "X-Ts")
    headers = sign_external(body, "k", header="X-Sig", timestamp_header="X-Ts", timestamp=1000)
    assert headers["X-Ts"] == "1000"
    assert verifier.verify(headers, body, now=1100)
    assert not verifier.verify(headers, body, now=1000 + 301)  # older than the tolerance
    assert not verifier.verify(headers, b'{"signed": false}', now=1100)
    with pytest.raises(ValueError, match="unknown scheme"):
        sign_external(body, "k", scheme="md5")
