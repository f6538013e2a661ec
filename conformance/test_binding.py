"""Spec section 10, the Python binding (API-*), and the start method rule (CON-2)."""

import inspect
import logging
import multiprocessing as mp
import time

import pytest
import torch

from . import strategies as S
from . import timing as tm
from .bounds import bounded
from .clauses import occurred
from .conftest import KNOWN_CAPABILITIES
from .model import describe
from .names import lacking, roles
from .rig import expect_error, expect_remote_error, refused, waited
from .verdict import TooSlow, checked_nothing, implementation_packages, in_time


def basic(seed=0):
    return S.distinct_weights(S.BASIC_SPEC, seed)


@pytest.mark.req("API-4")
def test_error_hierarchy(ws):
    base = ws.WeightSyncError
    assert issubclass(base, Exception), "API-4 violated: WeightSyncError is not an Exception"
    for name in ("SyncTimeoutError", "ReceiverError", "ReceiverDiedError", "ProtocolError", "ClosedError",
                 "WeightsMismatchError"):
        assert issubclass(getattr(ws, name), base), f"API-4 violated: {name} is not a WeightSyncError"
    assert issubclass(ws.SyncTimeoutError, TimeoutError), "API-4 violated: SyncTimeoutError is not a TimeoutError"
    assert issubclass(ws.WeightsMismatchError, ValueError), "API-4 violated: WeightsMismatchError is not a ValueError"
    assert issubclass(ws.RefusedError, base) and issubclass(ws.RefusedError, PermissionError), (
        "API-4 violated: RefusedError is not both a WeightSyncError and a PermissionError")
    for name in ("LocalProtocolError", "RemoteProtocolError"):
        assert issubclass(getattr(ws, name), ws.ProtocolError), f"API-4 violated: {name} is not a ProtocolError"


@pytest.mark.req("API-5")
def test_capabilities(ws):
    caps = ws.CAPABILITIES
    assert isinstance(caps, frozenset), f"API-5 violated: CAPABILITIES is a {type(caps).__name__}"
    assert caps <= KNOWN_CAPABILITIES, f"API-5 violated: unknown capabilities {sorted(caps - KNOWN_CAPABILITIES)}"
    assert caps & {"push", "pull"}, "API-5 violated: an implementation declares neither push nor pull"


@pytest.mark.req("API-12", "API-5")
def test_the_roles_a_module_declares_are_classes_it_exports(ws):
    """A module names `sender` or `receiver` when it implements one role only; naming neither means both."""
    for name in ("Sender", "Receiver") if len(roles(ws.CAPABILITIES)) == 2 else ():
        assert isinstance(getattr(ws, name, None), type), (
            f"API-12 violated: CAPABILITIES names neither 'sender' nor 'receiver' (both roles), and {name} is "
            f"{getattr(ws, name, None)!r}, not a class")


@pytest.mark.req("API-1", "API-2", "LIFE-6")
def test_sender_signature_and_context_manager(ws):
    params = inspect.signature(ws.Sender).parameters
    for kw in ("devices", "ctx", "max_slots"):
        assert kw in params and params[kw].kind is inspect.Parameter.KEYWORD_ONLY, f"API-1 violated: Sender has no keyword-only {kw}"
    with ws.Sender(basic(0), 1, ctx=mp.get_context("spawn"), max_slots=4) as s:
        assert s.version == 0, f"VER-1 violated: a new sender's version is {s.version}"
        for name in ("handle", "connect", "send", "send_async", "close"):
            assert callable(getattr(s, name, None)), f"API-2 violated: Sender has no {name}()"
    assert s.closed is True, "API-2 violated: leaving the with block did not close the sender"
    expect_error(ws, "ClosedError", s.send, timeout=tm.T, ids="LIFE-6", what="send after the with block closed the sender")


@pytest.mark.req("API-1")
@pytest.mark.needs("module")
def test_sender_from_module(ws):
    m = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))
    with ws.Sender(m, 1) as s:
        assert s.version == 0, f"VER-1 violated: a new sender's version is {s.version}"


@pytest.mark.req("API-1", "BAD-1")
@pytest.mark.needs("tensordict")
def test_sender_from_tensordict(ws):
    from tensordict import TensorDict

    td = TensorDict({"a": torch.zeros(3), "n": {"b": torch.ones(2, dtype=torch.int64)}}, batch_size=[])
    with ws.Sender(td, 1) as s:
        assert s.version == 0, f"VER-1 violated: a new sender's version is {s.version}"


@pytest.mark.req("API-3", "API-2")
@pytest.mark.needs("push")
def test_receiver_weights_are_a_read_only_mapping(rigs):
    rig = rigs(basic(0), 1, targets=None)
    out = rig.workers[0].call("weights_api")
    expect_remote_error(rig.workers[0].outcome("poll", 0.0), "LocalProtocolError", ids="API-3",
                        what="poll() on a connected push receiver")
    assert out["mapping"] and out["tensors"], f"API-3 violated: receiver.weights is not a mapping of tensors: {out}"
    assert out["read_only"], "API-3 violated: receiver.weights accepts item assignment"
    f = rig.send_async(basic(1))
    assert f.workers == [0] and f.version == 1, f"API-2 violated: future.workers={f.workers}, version={f.version}"
    waited(f, "API-2")
    assert f.done(), "API-2 violated: future.done() is False after wait() returned"


@pytest.mark.req("API-6")
@pytest.mark.needs("push")
def test_logs_through_logging_and_prints_nothing(rigs, ws, capfd, caplog):
    """An error in apply, then a dead receiver: nothing printed in the trainer's process nor in either receiver's
    (read before each ends), and every log record under the implementation's own loggers."""
    caplog.set_level(logging.DEBUG)
    rig = rigs(basic(0), 2)  # the pool hands out its processes with their earlier output read (do_discard)
    rig.send(basic(1))
    rig.workers[1].call("fault", "raise")
    printed = {}
    for k in (2, 3):  # what matters here is what gets printed, not how each send ends
        try:
            rig.sender.send(basic(k), timeout=tm.T)
        except ws.WeightSyncError:
            pass
        if k == 2:
            printed[1] = rig.workers[1].call("output")  # the failing receiver, before it dies
        rig.workers[1].kill()
    printed[0] = rig.workers[0].call("output")
    rig.sender.close()
    out, err = capfd.readouterr()
    assert not out.strip() and not err.strip(), f"API-6 violated: the sender process printed: {(out + err)[:300]!r}"
    for i, text in printed.items():
        assert not text.strip(), f"API-6 violated: receiver {i}'s process printed: {text[:300]!r}"
    own = implementation_packages(ws) | {"weightsync"}
    foreign = sorted({r.name for r in caplog.records if r.name.split(".")[0] not in own
                      and r.pathname.find("conformance") < 0 and not r.name.startswith(("hypothesis", "asyncio"))})
    assert not foreign, f"API-6 violated: log records under loggers other than the implementation's {sorted(own)}: " \
                        f"{foreign}"


@pytest.mark.req("CON-2")
@pytest.mark.needs("wire")  # CON-2 is stated for the reference binding, whose handles carry a socket
def test_fork_context_is_rejected(ws):
    try:
        s = ws.Sender(basic(0), 1, ctx=mp.get_context("fork"))
    except (ValueError, ws.WeightSyncError):
        return
    s.close()
    raise AssertionError("CON-2 violated: Sender accepted a fork context")


@pytest.mark.req("API-1")
def test_slot_devices_that_cannot_be_had_are_refused(ws):
    """devices= naming a device type other than cpu and cuda, or a CUDA device where CUDA is not
    available, raises ValueError when the sender is made (API-1)."""
    wanted = [["meta"]] + ([] if torch.cuda.is_available() else [["cuda:0"], ["cuda"]])
    for devices in wanted:
        refused(ws.Sender, basic(0), 1, devices=devices, ids="API-1", what=f"devices={devices}",
                expected="this machine cannot have that device")


def _uncarriable(case: str) -> dict:
    if case == "a lone surrogate in a name":
        return {"w\ud800": torch.zeros(2)}
    if case == "a name of 4,097 bytes":
        return {"é" * 2048 + "x": torch.zeros(2)}
    if case == "a dtype Table 12-2 does not define":
        if not hasattr(torch, "float8_e4m3fn"):
            pytest.skip("this torch has no float8 dtype")
        return {"w": torch.zeros(2, dtype=torch.float8_e4m3fn)}
    return {"w": torch.zeros([1] * 65)}


@pytest.mark.req("SEC-7")
@pytest.mark.needs("wire")  # what the wire cannot carry: a binding without the wire profile has no such bound
@pytest.mark.parametrize("case", ["a lone surrogate in a name", "a name of 4,097 bytes",
                                  "a dtype Table 12-2 does not define", "65 dimensions"])
def test_weights_the_wire_cannot_carry_are_refused_at_once(ws, case):
    """Sender() (and pack(), where declared) raises ValueError for weights the wire cannot carry, instead of
    failing later on the wire or in a receiver."""
    weights = _uncarriable(case)
    makers = [("Sender()", lambda: ws.Sender(weights, 1))]
    if "pack" in ws.CAPABILITIES:
        makers.append(("pack()", lambda: ws.pack(weights)))
    for what, make in makers:
        refused(make, ids="SEC-7", what=f"{what} with {case}", expected="the wire cannot carry those weights")


# ---- API-11: hooks ----------------------------------------------------------------------------------


@pytest.mark.req("API-2")
@pytest.mark.needs("push")
def test_done_turns_true_by_itself_once_every_target_answered(rigs):
    """A trainer that polls done() between steps, and makes no other call, sees its send complete: done() reads
    the answers that arrived itself, never blocking, within the reaction bound of the last one (API-2)."""
    import time

    rig = rigs(basic(0), 2)
    f = rig.send_async(basic(1))
    limit = tm.REACTION + tm.SLACK
    t0 = time.monotonic()
    while True:
        started = time.monotonic()
        if f.done():
            break
        in_time(time.monotonic() - started < tm.SLACK, f"API-2 violated: one call of done() took "
                                                       f"{time.monotonic() - started:.1f} s; it never blocks")
        in_time(time.monotonic() - t0 < limit, f"API-2 violated: done() still false {limit:.0f} s after send_async "
                                               "to two push receivers, with no other call made (it must read the "
                                               "answers that arrived itself)")
        time.sleep(0.02)
    assert waited(f, "API-2", timeout=0) == f.version
    rig.model.acked(0, f.version)
    rig.model.acked(1, f.version)
    rig.check()


@pytest.mark.req("API-11", "ACK-2")
@pytest.mark.needs("hooks", "pull")
def test_the_figures_of_a_version_answered_by_a_newer_one_s_ack_name_that_answer(ws):
    """A pull worker polls once after two send_async calls: it applies the newer (API-3), and its one Ack answers
    both versions (ACK-2). Both futures are done, and the figures of each, final once done, name worker 0 as
    answered: an `answered_s` entry and cause ok (API-11). Timing an answer only in the future of the version its
    Ack names leaves the older one's figures saying the worker never answered, though its wait() returned."""
    from .rig import pair

    sender, receiver = pair(ws, {"w": torch.zeros(8)}, None, mode="pull")
    try:
        futures = [bounded(sender.send_async, {"w": torch.full((8,), float(v))}, timeout=tm.T,
                           limit=tm.T + tm.SLACK, what=f"send_async of version {v}") for v in (1, 2)]
        got = bounded(receiver.poll, tm.T, limit=tm.T + tm.SLACK, what="receiver.poll()")
        if got != 2:  # the second Receive had not arrived: nothing coalesced
            bounded(receiver.poll, tm.T, limit=tm.T + tm.SLACK, what="receiver.poll()")
        for f in futures:
            waited(f, "ACK-2, API-11")
        if got != 2:
            checked_nothing(f"the first poll() applied version {got}, not 2: no one Ack answered both versions")
        for f in futures:
            fig = f.figures
            assert fig.causes == {0: "ok"} and fig.answered_s.get(0, -1) >= 0, (
                f"API-11 violated: version {f.version} is done (worker 0's Ack of version 2 answered it, ACK-2), yet "
                f"its final figures say answered_s={fig.answered_s}, causes={fig.causes}; expected worker 0, ok")
    finally:
        receiver.close()
        sender.close()


@pytest.mark.req("API-11", "SEND-5", "LIFE-8")
@pytest.mark.needs("hooks", "push")
def test_a_done_callback_is_called_once_without_polling_and_may_call_the_sender(ws, rigs):
    """Two push workers; the callbacks of an acked send run once, with nobody waiting or polling, from a thread
    where the sender is free: a first callback raises (which changes nothing), the next calls send_async, which
    takes the sender's lock; wait(0) then gives the version; a callback added afterwards runs at once; figures
    account for both targets. Receiver 1 is held in reading() until both callbacks are added, so they run
    when its answer comes, in a thread of the binding."""
    import threading

    rig = rigs(basic(0), 2)
    held = rig.workers[1]
    held.call("hold")  # receiver 1 applies (and answers) only once both callbacks are in (CONS-2)
    f = rig.send_async(basic(1))
    calls: list = []
    nested: list = []
    ran = threading.Event()

    first_ran = threading.Event()

    def raising(fut):
        first_ran.set()
        raise RuntimeError("a caller's bug in a done callback")

    def callback(fut):
        try:
            calls.append((fut.version, rig.sender.version, threading.current_thread() is threading.main_thread()))
            nested.append(rig.sender.send_async(basic(2), timeout=tm.T))  # the sender's lock is free here
        except BaseException as e:  # noqa: BLE001 - judged in the test's thread
            nested.append(e)
        finally:
            ran.set()

    f.add_done_callback(raising)
    f.add_done_callback(callback)
    assert not first_ran.is_set(), "API-11 violated: a done callback ran before receiver 1, held in reading(), answered"
    held.call("release")

    in_time(ran.wait(tm.T + tm.SLACK), f"API-11 violated: the second done callback of an acked send did not run "
                                       f"within {tm.T + tm.SLACK:.0f} s while nobody waited (the first raised)")
    rig.model.acked(0, f.version)
    rig.model.acked(1, f.version)
    assert waited(f, "API-11", timeout=0) == f.version
    assert len(calls) == 1 and calls[0][:2] == (f.version, f.version), f"API-11 violated: the callback ran as {calls}"
    assert not calls[0][2], "API-11 violated: a callback added before the send completed ran in the caller's thread"
    g = nested[0]
    if isinstance(g, ws.SyncTimeoutError):
        raise AssertionError(f"API-11 violated: send_async from a done callback timed out after {tm.T:.0f} s: the "
                             f"callback ran with the sender's lock held ({g})")
    assert not isinstance(g, BaseException), f"API-11 violated: send_async from a done callback raised {g!r}"
    rig.model.publish(describe(basic(2)), [0, 1])
    late: list = []
    f.add_done_callback(late.append)
    assert late == [f], "API-11 violated: a callback added after the others ran was not called at once"
    figures = f.figures
    assert figures.version == f.version and figures.nbytes > 0 and figures.publish_s >= 0, (
        f"API-11 violated: figures {figures}")
    assert sorted(figures.answered_s) == [0, 1] and figures.causes == {0: "ok", 1: "ok"}, (
        f"API-11 violated: figures {figures}")
    assert len(calls) == 1, f"API-11 violated: a callback ran {len(calls)} times"
    waited(g, "API-11")
    rig.model.acked(0, g.version)
    rig.model.acked(1, g.version)
    rig.check()


@pytest.mark.req("API-11", "SEND-5")
@pytest.mark.needs("hooks", "pull")
def test_await_gives_the_version_or_the_error_without_blocking_the_loop(ws, rigs):
    """In asyncio, `await future` gives the version of an acked send, and the event loop runs while the send is
    pending: the target is a pull receiver that polls only once a ticker task has run three times after the
    await began (bounded), so an await that blocked the loop is seen however fast the machine is. The ticker
    then ends, so the loop is idle when the Ack comes: the await must still end within T of the poll
    (API-11.l: the outcome wakes a loop that nothing else wakes)."""
    import asyncio
    import threading

    rig = rigs(basic(0), 1, modes=["pull"])
    ticked = threading.Event()
    polled: list = []

    acked: list = []
    failed: list = []

    def poll_once_ticked():
        ticked.wait(tm.T)  # not set: the loop did not run while the send was pending; poll anyway
        polled.append(ticked.is_set())
        time.sleep(0.05)  # the ticker has ended: the loop sleeps in its selector until something wakes it
        try:
            rig.polled(0, 1, "API-11")
        except BaseException as e:  # noqa: BLE001 - raised again in the test's thread
            failed.append(e)
            return
        acked.append(time.monotonic())

    async def main():
        ticks = 0

        async def tick():
            nonlocal ticks
            while ticks < 3:
                ticks += 1
                await asyncio.sleep(0.001)
            ticked.set()  # and it ends: the loop is idle, only the await is left

        f = rig.send_async(basic(1))
        poller = threading.Thread(target=poll_once_ticked, daemon=True)
        poller.start()
        ticker = asyncio.ensure_future(tick())
        try:
            v = await asyncio.wait_for(f, 2 * tm.T)
        except (TimeoutError, asyncio.TimeoutError):  # noqa: UP041 - two classes before Python 3.11
            v = None
        finally:
            ticker.cancel()
            poller.join(tm.T)
        return f, v, time.monotonic()

    f, v, done_at = asyncio.run(main())
    if failed:
        raise failed[0]
    if not acked:
        raise TooSlow(f"API-11 violated: the pull receiver did not poll version 1 within {tm.T:.0f} s, so the "
                      f"await could not be judged (gave {v!r})")
    occurred("API-11.l")
    in_time(v is not None and done_at - acked[0] <= tm.T,
            f"API-11 violated: `await future` on an idle event loop ended {done_at - acked[0]:.1f} s after the "
            f"receiver polled the version (within {tm.T:.0f} s expected; gave {v!r}): the outcome did not wake the loop")
    rig.model.acked(0, f.version)
    assert v == f.version, f"API-11 violated: await gave {v!r}, expected {f.version}"
    assert polled == [True], (f"API-11 violated: the event loop did not run while `await future` waited for a "
                              f"pending send ({tm.T:.0f} s)")
    rig.check()


@pytest.mark.req("API-11")
@pytest.mark.needs("hooks", "push")
def test_a_done_callback_added_while_the_callbacks_run_is_called_once(ws):
    """The first done callback of a send (added while a reading() block holds the apply back) blocks until this
    test lets it go; while it runs, in a thread of the binding, this thread adds a second one. Once the first returns, the second has been called exactly
    once within T, whichever thread called it (API-11.n: no callback is lost between "running" and "ran")."""
    import threading

    from .rig import pair

    sender, receiver = pair(ws, basic(0), None)
    running, go, second, ran_in = threading.Event(), threading.Event(), [], []
    here = threading.current_thread()
    try:

        def first(fut):
            ran_in.append(threading.current_thread())
            if threading.current_thread() is here:
                return  # called at once as it was added: the outcome came first (judged below)
            running.set()
            go.wait(4 * (tm.T + tm.SLACK))  # set by this test, which never takes that long

        with receiver.reading(tm.T):  # the apply, and so the ack, waits for this block (CONS-2)
            f = sender.send_async(basic(1), timeout=tm.T)
            f.add_done_callback(first)
        if ran_in and ran_in[0] is here:
            checked_nothing("the send's outcome was decided before its first callback was added, so no callback "
                            "was running when the second was added")
        in_time(running.wait(tm.T + tm.SLACK), f"API-11 violated: the done callback of a send to a healthy receiver "
                                               f"did not run within {tm.T + tm.SLACK:.0f} s")
        occurred("API-11.n")
        adder = threading.Thread(target=lambda: f.add_done_callback(second.append), daemon=True,
                                 name="conformance-late-callback")
        adder.start()
        adder.join(0.2)  # at once, or it waits for the running callback: either may be right; both end below
        go.set()
        adder.join(tm.T + tm.SLACK)
        in_time(not adder.is_alive(), f"API-11 violated: add_done_callback() while another callback ran did not "
                                      f"return within {tm.T + tm.SLACK:.0f} s of that callback's end")
        deadline = time.monotonic() + tm.T
        while not second and time.monotonic() < deadline:
            time.sleep(0.01)
        assert second, ("API-11 violated: a done callback added while the first was running was never called "
                        f"({tm.T:.0f} s after the first returned)")
        time.sleep(0.05)
        assert second == [f], f"API-11 violated: the callback added while the first ran was called {len(second)} times"
        waited(f, "SEND-5", timeout=0)
    finally:
        go.set()
        sender.close()
        receiver.close()


@pytest.mark.req("API-11", "SEND-5")
@pytest.mark.needs("hooks", "pull")
def test_an_await_cancelled_by_its_timeout_leaves_the_future_to_await_again(ws, rigs):
    """`asyncio.wait_for(future, SHORT)` times out while the target (a pull receiver) has not polled, which
    cancels that await; once the receiver polls, `await future` again (in a new task, as a retry loop does) gives
    the version, and so does `wait()` (API-11.m: a cancelled await is the caller's own bound, and changes nothing
    of the future)."""
    import asyncio

    rig = rigs(basic(0), 1, modes=["pull"])

    async def main():
        f = rig.send_async(basic(1))
        try:
            early = await asyncio.wait_for(f, tm.SHORT)
        except (TimeoutError, asyncio.TimeoutError):  # noqa: UP041 - two classes before Python 3.11
            early = None
        if early is not None:
            return f, early, None
        occurred("API-11.m")
        await asyncio.get_running_loop().run_in_executor(None, rig.polled, 0, 1, "API-11")
        try:
            again = await asyncio.wait_for(asyncio.ensure_future(_awaited(f)), 2 * tm.T)
        except asyncio.CancelledError as e:
            return f, None, e
        except (TimeoutError, asyncio.TimeoutError) as e:  # noqa: UP041
            return f, None, e
        return f, None, again

    f, early, again = asyncio.run(main())
    assert early is None, f"API-11 violated: await gave {early!r} before the pull receiver polled the version"
    if isinstance(again, (TimeoutError, asyncio.TimeoutError)):  # noqa: UP038
        raise TooSlow(f"API-11 violated: `await future` again, after the receiver polled, did not end within "
                      f"{2 * tm.T:.0f} s")
    if isinstance(again, BaseException):
        raise AssertionError(f"API-11 violated: `await future` again, once an earlier await of it was cancelled by "
                             f"its timeout, raised {type(again).__name__}: {again}; expected {f.version}")
    assert again == f.version, f"API-11 violated: `await future` again gave {again!r}, expected {f.version}"
    rig.model.acked(0, f.version)
    waited(f, "SEND-5", what="wait() after the awaits")
    rig.check()


@pytest.mark.req("API-11", "API-7")
@pytest.mark.needs("hooks", "pull")
def test_a_cancelled_await_leaves_nothing_waiting_and_the_loop_closes(ws, rigs):
    """`asyncio.run()` of a coroutine whose `asyncio.wait_for(future, SHORT)` timed out, its target (a pull
    receiver) never polling: the run returns at once (API-11.o). The caller's bound ended the await; nothing the
    loop waits for may go on waiting for that outcome (a wait handed to the loop's default executor would, and
    asyncio.run() joins that executor before it returns, so a trainer's coroutine that gave up on a silent worker
    could never end)."""
    import asyncio

    from .rig import Background

    rig = rigs(basic(0), 1, modes=["pull"])
    f = rig.send_async(basic(1))
    ended: list[float] = []  # when the caller's coroutine ended

    async def main():
        try:
            return await asyncio.wait_for(f, tm.SHORT)
        except (TimeoutError, asyncio.TimeoutError):  # noqa: UP041 - two classes before Python 3.11
            return None
        except ws.WeightSyncError as e:  # the future's own outcome (wait() raises it): decided before the bound
            return e
        finally:
            ended.append(time.monotonic())

    def run():
        try:
            return ("returned", asyncio.run(main()))
        except BaseException as e:  # noqa: BLE001 - whatever ends the run is judged below
            return ("raised", e)

    t0 = time.monotonic()
    joined = Background(run, "conformance-asyncio-run").join(tm.SHORT + tm.REACTION + tm.SLACK)
    outcome = None if joined is None else joined[1]  # run() returns what ended asyncio.run(), never raises
    if not ended:
        in_time(False, f"API-11 violated: `await asyncio.wait_for(future, {tm.SHORT:g})` had not ended "
                       f"{time.monotonic() - t0:.1f} s after it began: the await blocked the event loop, or could not "
                       "be cancelled")
    if outcome is not None and outcome[0] == "returned" and outcome[1] is not None:
        checked_nothing(f"the await gave {outcome[1]!r} before its bound: the future was decided")
    occurred("API-11.o")
    in_time(outcome is not None, f"API-11 violated: asyncio.run() had not returned {time.monotonic() - ended[0]:.1f} s "
                                 f"after its coroutine ended (its await of a future cancelled by asyncio.wait_for after "
                                 f"{tm.SHORT:g} s, the target silent): the loop still waits for something of the binding")
    assert outcome[0] == "returned", f"API-11 violated: asyncio.run() raised {type(outcome[1]).__name__}: {outcome[1]}"


async def _awaited(future):
    return await future


@pytest.mark.req("API-11", "ACK-4", "ACK-7")
@pytest.mark.needs("hooks")
@pytest.mark.parametrize("mode", ["push", "pull"])
def test_on_apply_is_told_each_version_applied(ws, mode):
    """Receiver(on_apply=fn) in this process, into a mapping target: fn gets 0 at connect, then each version
    applied, in order, and may open reading() (the apply's lock is free); an fn that raises changes nothing; a
    version whose apply failed (a target tensor given another shape, ACK-7) is answered Ack(error) and not told."""
    import threading
    import time

    lacking(ws, mode)
    lacking(ws, "mapping")
    sender = ws.Sender(basic(0), 1)
    target = {k: v.clone() for k, v in basic(0).items()}
    got: list = []
    receiver = None

    threads: dict = {}  # version -> the thread on_apply ran in

    def on_apply(version):
        threads[version] = threading.get_ident()
        with receiver.reading(tm.SHORT):
            got.append((version, receiver.version))
        if version == 2:
            raise RuntimeError("a caller's bug")

    def send(v: int) -> None:
        f = sender.send_async(basic(v), timeout=tm.T)
        if mode == "pull":
            assert receiver.poll(tm.T) == v, f"API-3 violated: poll() did not apply version {v}"
            # poll() applied it in this thread: on_apply has run here, before poll() returned
            occurred("API-11.q")
            how = "had not run" if v not in threads else "ran in another thread"
            assert threads.get(v) == threading.get_ident(), (
                f"API-11 violated: poll() returned version {v} and on_apply({v}) {how}: it runs in the thread that "
                "applied the version")
        waited(f, "API-11")

    try:
        receiver = ws.Receiver(sender.handle(0), target, mode=mode, on_apply=on_apply)
        t = threading.Thread(target=receiver.connect, args=(tm.T,), daemon=True)
        t.start()
        sender.connect(tm.T)
        t.join(tm.T)
        in_time(not t.is_alive(), f"INIT-4 violated: receiver.connect() had not returned {tm.T:g} s after the sender's")
        if mode == "pull":  # connect() applied the Init's version in its own thread
            how = "had not run" if 0 not in threads else "ran in another thread"
            assert threads.get(0) == t.ident, (
                f"API-11 violated: connect() returned and on_apply(0) {how}: it runs in the thread that applied the "
                "Init's version")
        for v in (1, 2, 3):
            send(v)
        name = next(iter(target))
        kept = target[name].data
        target[name].data = torch.zeros(kept.numel() + 1, dtype=kept.dtype)  # version 4 cannot fit (ACK-7)
        f = sender.send_async(basic(4), timeout=tm.T)
        if mode == "pull":
            try:
                receiver.poll(tm.T)
            except ws.ReceiverError:
                pass
        try:
            f.wait(tm.T)
        except ws.ReceiverError:
            pass
        else:
            raise AssertionError("ACK-7 violated: a version that could not fit the target was acked ok")
        target[name].data = kept
        send(5)
        deadline = time.monotonic() + tm.T  # push: on_apply runs just after the ack that ended wait()
        while (5, 5) not in got and time.monotonic() < deadline:
            time.sleep(0.01)
        in_time((5, 5) in got, f"API-11 violated: on_apply was not told version 5 within {tm.T:.0f} s: {got}")
        assert got == [(0, 0), (1, 1), (2, 2), (3, 3), (5, 5)], f"API-11 violated: on_apply was told {got}"
    finally:
        if receiver is not None:
            receiver.close()
        sender.close()


@pytest.mark.req("API-11", "SEND-2", "LIFE-8")
@pytest.mark.needs("hooks", "push")
def test_done_callbacks_and_await_give_a_failure_and_a_close(ws, rigs):
    """Two push workers, receiver 1 failing every apply (Ack(error)) and held in reading() until the callback is
    in: the callback runs once receiver 1's Ack(error) decides the send, with nobody waiting, and wait(0) then
    raises ReceiverError naming 1; `await` on the next failing send raises that same error. Then receiver 1 is
    held healthy: a callback of a send it never answers runs once close() settles it, and wait(0) raises
    ClosedError."""
    import asyncio
    import threading
    import time

    rig = rigs(basic(0), 2)
    held = rig.workers[1]
    held.call("hold")  # until release, receiver 1's apply waits behind reading() (CONS-2) ...
    held.call("fault", "raise")  # ... and then fails, as each of its applies does: Ack(error) (ACK-7, ACK-6)
    f = rig.send_async(basic(1))
    ran: list = []
    decided = threading.Event()

    def callback(fut):
        ran.append(fut)
        decided.set()

    f.add_done_callback(callback)
    assert not decided.is_set(), "API-11 violated: a done callback ran before receiver 1, held in reading(), answered"
    held.call("release")
    in_time(decided.wait(tm.T + tm.SLACK), f"API-11 violated: the done callback of a send that receiver 1 answered "
                                           f"with Ack(error) did not run within {tm.T + tm.SLACK:.0f} s while nobody "
                                           "waited")
    assert ran == [f], f"API-11 violated: the done callback ran as {ran}"
    expect_error(ws, "ReceiverError", f.wait, 0, ids="API-11", limit=tm.SLACK, naming=[1],
                 what="wait(0) after the done callback of a send receiver 1 failed ran")

    g = rig.sender.send_async(basic(2), timeout=tm.T)  # receiver 1 fails this one too

    async def awaited():
        return await asyncio.wait_for(g, tm.T + tm.SLACK)

    try:
        out = asyncio.run(awaited())
    except TimeoutError:
        raise TooSlow(f"API-11 violated: `await future` of a send receiver 1 failed gave nothing within "
                      f"{tm.T + tm.SLACK:.0f} s") from None
    except ws.ReceiverError as e:
        assert e.workers == [1], f"API-11 violated: `await future` raised ReceiverError naming {e.workers}, not [1]"
    except Exception as e:  # noqa: BLE001
        raise AssertionError(f"API-11 violated: `await future` of a send receiver 1 failed raised "
                             f"{type(e).__name__}: {e}; wait() raises ReceiverError") from None
    else:
        raise AssertionError(f"API-11 violated: `await future` of a send receiver 1 failed gave {out!r}; wait() "
                             "raises ReceiverError")

    held.call("fault", None)
    held.call("hold")  # receiver 1 answers nothing more before close()
    h = rig.sender.send_async(basic(3), timeout=tm.T)
    closed = threading.Event()
    seen: list = []

    def on_close(fut):
        seen.append(fut)
        closed.set()

    h.add_done_callback(on_close)
    assert not closed.is_set(), "API-11 violated: a done callback ran before anything decided the send"
    t0 = time.monotonic()
    bounded(rig.sender.close, limit=tm.REACTION + tm.SLACK, what="sender.close() with a send pending")
    in_time(closed.wait(max(0.0, tm.REACTION + tm.SLACK - (time.monotonic() - t0))),
            "API-11 violated: the done callback of a send pending when the sender closed did not run within the "
            f"reaction bound ({tm.REACTION:.0f} s)")
    assert seen == [h], f"API-11 violated: the done callback ran as {seen}"
    expect_error(ws, "ClosedError", h.wait, 0, ids="API-11", limit=tm.SLACK,
                 what="wait(0) after the done callback of a send pending at close() ran")
    held.call("release")


@pytest.mark.req("API-11", "SEND-7")
@pytest.mark.needs("hooks", "push")
def test_a_done_callback_runs_once_a_failure_decides_though_another_target_is_silent(ws, rigs):
    """Receiver 1 fails every apply (Ack(error)) while receiver 0 is held in reading() and answers nothing: the
    outcome of wait() is decided once SEND-7's window (1 s) closes after that failure, though receiver 0 has not
    answered, so the done callback runs then, with nobody waiting, and wait(0) raises ReceiverError naming 1
    alone. A callback kept for the moment every target answered never runs here."""
    import threading

    rig = rigs(basic(0), 2)
    silent, failing = rig.workers
    silent.call("hold")  # receiver 0's apply waits behind reading() until release: no answer (CONS-2)
    failing.call("fault", "raise")  # receiver 1 answers Ack(error) at once (ACK-7)
    decided = threading.Event()
    ran: list = []
    try:
        f = rig.send_async(basic(1))
        f.add_done_callback(lambda fut: (ran.append(fut), decided.set()))
        bound = 1.0 + tm.T + tm.SLACK  # the window, then the reaction the suite allows any answer
        in_time(decided.wait(bound), f"API-11 violated: receiver 1 answered Ack(error) and receiver 0 stayed "
                                     f"silent; SEND-7's window decides the send 1 s after that failure, yet its "
                                     f"done callback did not run within {bound:.0f} s while nobody waited")
        assert ran == [f], f"API-11 violated: the done callback ran as {ran}"
        expect_error(ws, "ReceiverError", f.wait, 0, ids="SEND-7", limit=tm.SLACK, naming=[1],
                     what="wait(0) after the done callback of a send receiver 1 failed (receiver 0 silent, no timeout) ran")
    finally:
        failing.call("fault", None)
        silent.call("release")


@pytest.mark.req("API-8")
@pytest.mark.needs("pack", "module", "mapping")
def test_an_optimizer_built_before_pack_keeps_working_and_a_packed_object_is_sent_as_weights(ws):
    """An optimizer built before pack() keeps stepping the same tensors, now in the buffer; send(packed) with the
    Packed object itself delivers exactly those values; pack() of a TensorDict (where declared) keeps its
    tensors' values and puts them in the buffer too."""
    import threading

    torch.manual_seed(3)
    net = torch.nn.Sequential(torch.nn.Linear(5, 3), torch.nn.Tanh(), torch.nn.Linear(3, 2))
    opt = torch.optim.SGD(net.parameters(), lr=0.5)  # before pack
    packed = ws.pack(net)
    before = {k: v.detach().clone() for k, v in packed.items()}
    sender = ws.Sender(net, 1)
    target = {k: torch.zeros_like(v) for k, v in packed.items()}
    receiver = ws.Receiver(sender.handle(0), target, mode="push" if "push" in ws.CAPABILITIES else "pull")
    try:
        t = threading.Thread(target=lambda: receiver.connect(tm.T), daemon=True)
        t.start()
        bounded(sender.connect, tm.T, limit=tm.T + tm.SLACK, what="sender.connect")
        t.join(tm.T)
        for _ in range(2):
            opt.zero_grad()
            net(torch.randn(4, 5)).pow(2).sum().backward()
            opt.step()
        moved = [k for k, v in packed.items() if not torch.equal(v.detach(), before[k])]
        assert moved, "API-8 violated: an optimizer built before pack() no longer changes the packed tensors"
        for k, p in net.named_parameters():
            assert p is packed[k], f"API-8 violated: after pack() the module's {k!r} is not the Packed's tensor"
        try:
            f = sender.send_async(packed, timeout=tm.T)
        except ws.SyncTimeoutError as e:
            raise TooSlow(f"SLOT-3 violated: send_async(packed) to a healthy receiver timed out: {e}") from None
        except Exception as e:  # noqa: BLE001
            raise AssertionError(f"API-8 violated: send_async(packed), the Packed object itself as the weights, "
                                 f"raised {type(e).__name__}: {e}") from None
        if "push" not in ws.CAPABILITIES:
            receiver.poll(tm.T)
        waited(f, "API-8")
        with receiver.reading(tm.T):
            got = {k: v.detach().clone() for k, v in receiver.weights.items()}
        for k, v in packed.items():
            assert torch.equal(got[k], v.detach()), (
                f"API-8 violated: send(packed) delivered other values for {k!r} than the Packed holds")
    finally:
        receiver.close()
        sender.close()
    if "tensordict" in ws.CAPABILITIES:
        from tensordict import TensorDict

        td = TensorDict({"a": torch.randn(3, 2), "b": torch.arange(4), "c": torch.randn(5)}, batch_size=[])
        values = {k: td.get(k).clone() for k in ("a", "b", "c")}
        p = ws.pack(td)
        assert sorted(p) == ["a", "b", "c"], f"API-8 violated: pack() of a TensorDict names {sorted(p)}"
        for k, v in values.items():
            assert torch.equal(p[k], v) and torch.equal(td.get(k), v), f"API-8 violated: pack() changed {k!r}"
            assert td.get(k).data_ptr() == p[k].data_ptr(), (
                f"API-8 violated: after pack() the TensorDict's {k!r} is not the Packed's tensor")
        ptrs = sorted(p[k].untyped_storage().data_ptr() for k in p)
        assert ptrs[0] == ptrs[-1], "API-8 violated: pack() of a TensorDict left its tensors in several buffers"


@pytest.mark.req("API-1")
@pytest.mark.needs("mapping")
@pytest.mark.parametrize("form", ["a sequence", "a function of the receiver id"])
def test_devices_may_be_a_sequence_or_a_function_of_the_receiver_id(ws, form):
    """Sender(..., devices=) takes a slot device per receiver as a sequence indexed by receiver id or as a
    callable i -> device; with every device "cpu" a send then delivers to receiver 1 as usual."""
    import threading

    lacking(ws, "push")
    devices = ["cpu", "cpu"] if form == "a sequence" else (lambda i: "cpu")
    weights = basic(0)
    try:
        sender = ws.Sender(weights, 2, devices=devices)
    except Exception as e:  # noqa: BLE001
        raise AssertionError(f"API-1 violated: Sender(..., devices=<{form}>) raised {type(e).__name__}: {e}") from None
    receiver = None
    try:
        receiver = ws.Receiver(sender.handle(1), {k: torch.zeros_like(v) for k, v in weights.items()}, mode="push")
        t = threading.Thread(target=lambda: receiver.connect(tm.T), daemon=True)
        t.start()
        bounded(sender.connect, tm.T, workers=[1], limit=tm.T + tm.SLACK, what="sender.connect(workers=[1])")
        t.join(tm.T)
        new = basic(1)
        waited(sender.send_async(new, workers=[1], timeout=tm.T), "API-1")
        with receiver.reading(tm.T):
            got = describe(receiver.weights)
        assert got == describe(new), f"API-1 violated: with devices as {form}, receiver 1 did not get version 1"
    finally:
        if receiver is not None:
            receiver.close()
        sender.close()


@pytest.mark.req("API-10")
@pytest.mark.needs("network", "pull")
def test_network_times_leave_a_unix_channel_alone(ws):
    """Sender(..., lease=, heartbeat=) with a lease far shorter than the default, giving handles (Unix channels):
    a pull receiver that stays silent for several leases is not cut off, and its answer then completes the send
    (the times change only a TCP receiver's timing, API-10)."""
    import threading
    import time

    lease = 0.2
    sender = ws.Sender(basic(0), 1, lease=lease, heartbeat=lease / 4)
    receiver = ws.Receiver(sender.handle(0), mode="pull")
    try:
        t = threading.Thread(target=lambda: receiver.connect(tm.T), daemon=True)
        t.start()
        bounded(sender.connect, tm.T, limit=tm.T + tm.SLACK, what="sender.connect")
        t.join(tm.T)
        f = sender.send_async(basic(1), timeout=tm.T)
        time.sleep(6 * lease)  # the receiver stays silent past the lease: this makes the condition, it judges nothing
        try:
            done_early = f.done()
            if done_early:
                f.wait(0)
        except ws.WeightSyncError as e:
            raise AssertionError(f"API-10 violated: a Unix receiver silent for {6 * lease:g} s, past a lease of "
                                 f"{lease:g} s, was cut off: {type(e).__name__}: {e}") from None
        assert not done_early, "API-10 violated: a send was decided while its only receiver had not answered"
        assert receiver.poll(tm.T) == 1, "API-10 violated: the pull receiver did not apply version 1 after its silence"
        waited(f, "API-10")
    finally:
        receiver.close()
        sender.close()
