"""whenpro_core.storage.gcpause: the collector is paused while traces load and restored after."""

from __future__ import annotations

import gc
import threading

import pytest

from conftest import SAMPLES
from tests.support.waiting import TIMEOUT_S
from whenpro_core.errors import TraceFormatError
from whenpro_core.formats import load_trace
from whenpro_core.library.opening import open_target
from whenpro_core.storage.gcpause import paused_gc, release_long_lived


@pytest.fixture(autouse=True)
def collector_enabled():
    gc.enable()
    yield
    gc.enable()


def test_nested_pauses_restore_the_collector_only_at_the_outermost_exit() -> None:
    with paused_gc():
        assert not gc.isenabled()
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner exit leaves the outer pause in place
    assert gc.isenabled()


def test_a_collector_the_caller_disabled_stays_disabled() -> None:
    gc.disable()
    with paused_gc():
        pass
    assert not gc.isenabled()


def test_an_exception_inside_still_restores_the_collector() -> None:
    with pytest.raises(ValueError), paused_gc():
        raise ValueError("bad trace")
    assert gc.isenabled()


def test_concurrent_loads_keep_it_paused_until_both_are_done() -> None:
    inside, release = threading.Event(), threading.Event()

    def slow_load() -> None:
        with paused_gc():
            inside.set()
            release.wait(TIMEOUT_S)

    worker = threading.Thread(target=slow_load)
    worker.start()
    assert inside.wait(TIMEOUT_S)
    with paused_gc():
        pass
    assert not gc.isenabled()  # the worker's load is still running
    release.set()
    worker.join(5)
    assert gc.isenabled()


def test_loading_and_opening_traces_leave_the_collector_enabled() -> None:
    trace = load_trace(SAMPLES / "team_text" / "trace.json")
    assert trace.steps and gc.isenabled()
    assert open_target(str(SAMPLES / "team_text" / "trace.json")).trace is not None
    assert gc.isenabled()
    with pytest.raises(TraceFormatError):
        load_trace(SAMPLES / "no_such_trace.json")
    assert gc.isenabled()


def test_keep_freezes_what_the_block_loaded_and_release_gives_it_back() -> None:
    gc.unfreeze()
    with paused_gc(keep=True):
        trace = load_trace(SAMPLES / "team_text" / "trace.json")
    assert gc.isenabled() and gc.get_freeze_count() > 0
    assert not any(gc.is_tracked(trace) and trace is obj for obj in gc.get_objects())
    release_long_lived()
    assert gc.get_freeze_count() == 0
