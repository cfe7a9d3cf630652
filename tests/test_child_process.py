"""A job's work in a child process (subextract/pipeline/child.py): the process-wide policy goes
with it, events come back in order, a cancel kills it, failures come back as themselves."""

from __future__ import annotations

import errno
import os
import threading
import time

import pytest

from subextract.clients import openai_api
from subextract.errors import SubextractError
from subextract.pipeline.child import ChildFailed, ChildProcess
from subextract.stages import netguard, source

HERE = __name__


def policy_seen(*, emit):
    """In the child: what its network policy lets through and what it refuses."""
    refused = None
    try:
        netguard.check_url_host("http://10.1.2.3/live.m3u8")
    except SubextractError as exc:
        refused = str(exc)
    netguard.check_url_host("http://127.0.0.1:9/video.mp4")  # the one address the parent allowed
    return refused, source.input_format(), openai_api.sends_api_key()


def counts(n, *, emit):
    for i in range(n):
        emit("count", i)
    return os.getpid()


def runs_until_killed(*, emit):
    emit("started", os.getpid())
    while True:
        time.sleep(0.05)


def raises(kind, *, emit):
    if kind == "subextract":
        raise SubextractError("no subtitles in this band")
    if kind == "disk":
        raise OSError(errno.ENOSPC, "No space left on device")

    class Local(Exception):  # pickle cannot find it again: comes back as ChildFailed
        pass

    raise Local("a defect")


def exits(*, emit):
    os._exit(3)


@pytest.fixture
def child():
    process = ChildProcess("test-child")
    yield process
    process.stop()


def never(*_):
    raise AssertionError("no event expected")


def test_the_child_refuses_what_this_process_refuses(child):
    allowances = netguard.parse_allowances("127.0.0.1")
    before = netguard.policy()
    netguard.set_policy(netguard.NetworkPolicy(allowances=allowances))
    source.set_input_format("concat")
    openai_api.keep_api_key_private()
    try:
        refused, input_format, sends_key = child.call(f"{HERE}:policy_seen", (), never, lambda: None)
    finally:
        netguard.set_policy(before)
        source.set_input_format(None)
        openai_api._send_api_key = True
    assert refused is not None and "private" in refused
    assert input_format == "concat"
    assert sends_key is False


def test_events_come_back_in_order_and_the_child_is_reused(child):
    seen = []
    first = child.call(f"{HERE}:counts", (5,), lambda kind, payload: seen.append((kind, payload)), lambda: None)
    second = child.call(f"{HERE}:counts", (2,), lambda kind, payload: seen.append((kind, payload)), lambda: None)
    assert seen == [("count", i) for i in range(5)] + [("count", 0), ("count", 1)]
    assert first == second != os.getpid()


def test_a_cancel_kills_a_child_that_never_reports_and_the_next_call_gets_a_fresh_one(child):
    started = []
    cancelled = threading.Event()

    def check():
        if started:
            cancelled.set()
            raise KeyboardInterrupt("cancelled")

    with pytest.raises(KeyboardInterrupt):
        child.call(f"{HERE}:runs_until_killed", (), lambda kind, pid: started.append(pid), check)
    assert cancelled.is_set()
    with pytest.raises(ProcessLookupError):
        os.kill(started[0], 0)
    assert child.call(f"{HERE}:counts", (0,), never, lambda: None) != started[0]


def test_an_event_handler_that_raises_stops_the_child(child):
    def refuse(kind, payload):
        raise SubextractError("the store refused the cue")

    with pytest.raises(SubextractError, match="store refused"):
        child.call(f"{HERE}:counts", (3,), refuse, lambda: None)
    assert child.call(f"{HERE}:counts", (1,), lambda *_: None, lambda: None)


@pytest.mark.parametrize("kind, expected, words", [("subextract", SubextractError, "no subtitles"),
                                                   ("disk", OSError, "No space left"),
                                                   ("defect", ChildFailed, "a defect")])
def test_a_failure_in_the_child_comes_back_as_itself(child, kind, expected, words):
    with pytest.raises(expected, match=words) as raised:
        child.call(f"{HERE}:raises", (kind,), never, lambda: None)
    if kind == "disk":
        assert raised.value.errno == errno.ENOSPC  # the service says "no space left" from the errno
    assert child.call(f"{HERE}:counts", (0,), never, lambda: None)  # the child lives on


def test_a_child_that_dies_is_said_and_replaced(child):
    with pytest.raises(ChildFailed, match="ended"):
        child.call(f"{HERE}:exits", (), never, lambda: None)
    assert child.call(f"{HERE}:counts", (0,), never, lambda: None)
