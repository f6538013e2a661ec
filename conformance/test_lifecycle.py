"""Spec sections 4 and 9: state machines seen through the binding, handshake, join, restart, close
(SM-*, INIT-*, LIFE-*)."""

import gc
import pickle
import threading
import time

import pytest

from . import strategies as S
from . import timing as tm
from .bounds import HarnessError, bounded
from .clauses import occurred
from .model import describe, digest
from .probes import new_fds, new_threads, open_fds, shm_segments, stack_of
from .rig import (
    Background,
    Rig,
    connect_here,
    expect_error,
    expect_remote_error,
    expect_remote_ok,
    refused,
    spec_of,
    waited,
)
from .verdict import TooSlow, checked_nothing, in_time

pytestmark = pytest.mark.needs("push")


def basic(seed=0):
    return S.distinct_weights(S.BASIC_SPEC, seed)


@pytest.mark.req("LIFE-1", "INIT-1", "INIT-4", "SM-S-1", "SM-R-1")
def test_late_joiner_gets_the_latest_version(rigs):
    rig = rigs(basic(0), 2, connect=[0])
    for k in range(1, 4):
        rig.send(basic(k), workers=[0])
    rig.connect([1])  # checks the joiner's version is 3 (LIFE-1, INIT-4)
    rig.check()
    v, d = rig.workers[1].call("snapshot")
    assert [(n, dt, sh) for n, (dt, sh, _) in d.items()] == [(n, dt, sh) for n, (dt, sh, _) in rig.model.published[3].items()], (
        "INIT-1 violated: the joiner's names, dtypes or shapes differ from the sender's manifest"
    )
    rig.send(basic(4))
    rig.check()


@pytest.mark.req("LIFE-2", "SM-S-5", "SM-S-4", "CON-1")
def test_restart_after_kill(rigs, ws):
    rig = rigs(basic(0), 2)
    rig.send(basic(1))
    rig.workers[1].kill()
    expect_error(ws, "ReceiverDiedError", rig.sender.send, basic(2), timeout=tm.T, ids="CON-1",
                 what="send after receiver 1 was killed", naming=[1])
    rig.model.gone(1)
    if rig.sender.version == 2:
        rig.model.publish(describe(basic(2)), [0])
    v0 = rig.sender.version
    rig.send(basic(3), workers=[0])
    rig.restart(1)  # a new handle and connect(workers=[1]) brings it to the latest (LIFE-2)
    got = rig.workers[1].call("peek")
    assert got == v0 + 1, f"LIFE-2 violated: the restarted receiver holds {got}, not the latest {v0 + 1}"
    rig.send(basic(4))
    rig.check()


@pytest.mark.req("LIFE-2")
def test_consumed_handle_cannot_be_pickled(rigs, ws):
    rig = rigs(basic(0), 1, connect=False)
    h = rig.sender.handle(0)
    rig.open(0, h)
    rig.workers[0].submit("connect", tm.T)
    try:
        bounded(rig.sender.connect, tm.T, workers=[0], limit=tm.T + tm.SLACK, what="sender.connect")
    except (HarnessError, ws.SyncTimeoutError) as e:
        raise TooSlow(f"INIT-4 violated: a healthy receiver's handshake did not complete: {e}") from None
    expect_remote_ok(rig.workers[0].result(), ids="INIT-4", what="receiver.connect")
    expect_error(ws, "LocalProtocolError", pickle.dumps, h, ids="LIFE-2",
                 what="pickling a handle consumed by connect()")


@pytest.mark.req("CON-2")
@pytest.mark.needs("wire")  # CON-2 is stated for the reference binding, whose handles carry a socket
def test_a_handle_inherited_by_fork_is_refused(ws):
    """A forked child holds every channel of its parent, so Receiver(handle) there, with the handle it inherited
    rather than got pickled, raises LocalProtocolError naming CON-2 and the start methods to use, spawn and
    forkserver (the child reports by its exit status)."""
    import os
    import signal

    s = ws.Sender(S.distinct_weights(S.BASIC_SPEC, 0), 1)
    try:
        h = s.handle(0)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child only tries, and exits
            code = 3
            try:
                ws.Receiver(h)
                code = 1
            except ws.LocalProtocolError as e:
                code = 0
                if "CON-2" not in str(e):
                    code = 2
                elif not all(method in str(e) for method in ("spawn", "forkserver")):
                    code = 5
            except ws.ProtocolError:
                code = 6
            except BaseException:  # noqa: BLE001
                code = 4
            finally:
                os._exit(code)
        deadline = time.monotonic() + tm.T
        while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        if done[0] == 0:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise TooSlow(f"CON-2 violated: Receiver(handle) in a forked child did not return within {tm.T:.0f} s")
        code = os.waitstatus_to_exitcode(done[1])
        assert code == 0, ("CON-2 violated: Receiver(handle) in a forked child, with the handle it inherited, "
                           + {1: "was accepted", 2: "raised LocalProtocolError without naming CON-2",
                              4: "raised another error",
                              5: "raised LocalProtocolError naming no start method to use (spawn, forkserver)",
                              6: "raised a ProtocolError that is not a LocalProtocolError"}.get(
                                  code, f"ended the child with status {code}"))
    finally:
        s.close()


def _receiver_by_fork(ws, h) -> None:  # pragma: no cover - runs in a child of the fork start method
    """Receiver(h) with a handle inherited by fork; the exit status says what happened (as in the test above)."""
    import os

    code = 3
    try:
        ws.Receiver(h)
        code = 1
    except ws.LocalProtocolError as e:
        code = 0 if "CON-2" in str(e) and all(m in str(e) for m in ("spawn", "forkserver")) else 2
    except ws.ProtocolError:
        code = 6
    except BaseException:  # noqa: BLE001
        code = 4
    finally:
        os._exit(code)


@pytest.mark.req("CON-2")
@pytest.mark.needs("wire")  # CON-2 is stated for the reference binding, whose handles carry a socket
def test_a_handle_given_to_a_process_of_the_fork_start_method_is_refused(ws):
    """A multiprocessing Process of the fork start method gets the handle as an argument, inherited with its
    parent's memory and never pickled: Receiver(handle) there raises LocalProtocolError naming CON-2 and the
    start methods to use, as in a child of os.fork."""
    import multiprocessing as mp

    s = ws.Sender(S.distinct_weights(S.BASIC_SPEC, 0), 1)
    try:
        h = s.handle(0)
        p = mp.get_context("fork").Process(target=_receiver_by_fork, args=(ws, h), daemon=True)
        p.start()
        p.join(tm.T)
        if p.is_alive():
            p.kill()
            p.join()
            raise TooSlow(f"CON-2 violated: Receiver(handle) in a Process of the fork start method did not return "
                          f"within {tm.T:.0f} s")
        assert p.exitcode == 0, ("CON-2 violated: Receiver(handle) in a Process of the fork start method, given the "
                                 "handle as an argument, "
                                 + {1: "was accepted", 2: "raised LocalProtocolError without naming CON-2 and the "
                                    "start methods to use (spawn, forkserver)", 4: "raised another error",
                                    6: "raised a ProtocolError that is not a LocalProtocolError"}.get(
                                        p.exitcode, f"ended the child with status {p.exitcode}"))
    finally:
        s.close()


@pytest.mark.req("CON-3", "SM-S-5", "LIFE-2", "SM-R-3")
@pytest.mark.needs("wire")  # pickled once: CON-3's rule for the reference binding, whose handles carry a socket
def test_a_handle_reaches_one_process(rigs, ws):
    """A handle pickled into one worker's process is refused a second time, and by Receiver() where it was
    pickled away; handle(0) then gives a new one, which cuts the first process off and connects a new one."""
    rig = rigs(basic(0), 1, connect=False)
    h = rig.sender.handle(0)
    rig.open(0, h)  # pickled into worker 0's process
    expect_error(ws, "ProtocolError", pickle.dumps, h, ids="CON-3", what="pickling a handle that already went to a "
                 "process")
    expect_error(ws, "ProtocolError", ws.Receiver, h, ids="CON-3", what="Receiver(handle) in the process that "
                 "pickled that handle away")
    try:
        fresh = rig.sender.handle(0)
    except Exception as e:  # noqa: BLE001
        raise AssertionError(f"CON-3 violated: handle(0), its handle gone to a process, raised "
                             f"{type(e).__name__}: {e}") from None
    rig.workers[0].submit("connect", tm.T)  # the first process's channel was closed by the new handle
    status, value = rig.workers[0].result(tm.T + tm.SLACK)
    if status == "ok":
        raise AssertionError(f"CON-3 violated: the process holding the replaced handle connected (version {value})")
    in_time(not value.isa("SyncTimeoutError"), f"CON-3, SM-R-3 violated: the process holding the replaced handle "
                                               f"waited out its connect() ({value}) instead of reading end of channel")
    state = rig.workers[0].call("state")  # end of channel moved that receiver, new, to stopped (SM-R-3)
    assert state["stopped"] is True, f"SM-R-3 violated: a receiver whose channel ended before any Init shows {state}"
    rig.model.reset(0)
    try:
        rig.connect([0], handles={0: fresh})
    except TooSlow:
        raise
    except Exception as e:  # noqa: BLE001 - a failed check, or pickling the new handle raised
        raise AssertionError(f"CON-3 violated: a process could not connect with the new handle: "
                             f"{type(e).__name__}: {e}") from None
    rig.send(basic(1))
    rig.check()


@pytest.mark.req("LIFE-3", "SM-S-5")
def test_no_new_handle_for_a_live_receiver(rigs, ws):
    rig = rigs(basic(0), 1)
    expect_error(ws, "LocalProtocolError", rig.sender.handle, 0, ids="LIFE-3", what="handle(0) for a live receiver")
    rig.send(basic(1))
    rig.check()


@pytest.mark.req("ROLE-1")
def test_receiver_ids_are_0_to_n_minus_1(ws):
    with ws.Sender(basic(0), 2) as s:
        s.handle(0)
        s.handle(1)
        for bad in (2, -1):
            try:
                s.handle(bad)
            except (ValueError, IndexError, ws.WeightSyncError):
                pass
            else:
                raise AssertionError(f"ROLE-1 violated: handle({bad}) accepted with 2 receivers")
    for n in (0, -1):
        try:
            ws.Sender(basic(0), n).close()
        except (ValueError, ws.WeightSyncError):
            continue
        raise AssertionError(f"ROLE-1 violated: Sender(weights, {n}) was accepted")


@pytest.mark.req("INIT-3", "SM-S-2", "SM-R-1", "LIFE-2", "SEND-4", "VER-2", "SM-S-5", "API-4", "API-9")
@pytest.mark.needs("mapping")
def test_target_mismatch_fails_the_handshake(rigs, ws):
    rig = rigs(basic(0), 2, connect=[0])
    wrong = [(n, d, (7,) if n == "w" else s) for n, d, s in spec_of(rig.weights)]
    rig.workers[1].call("open", rig.sender.handle(1), "push", False, ("mapping", wrong))
    rig.workers[1].submit("connect", tm.T)
    e = expect_error(ws, "ReceiverError", lambda: rig.sender.connect(tm.T, workers=[1]), ids="INIT-3",
                     what="sender.connect with a mismatching target", naming=[1])
    assert e.details.get(1), f"INIT-3 violated: ReceiverError carries no detail for receiver 1: {e.details}"
    expect_remote_error(rig.workers[1].result(), "WeightsMismatchError", ids="INIT-3", what="receiver.connect with a mismatching target")
    rig.model.peers[1].state = "failed"
    e = expect_error(ws, "ReceiverError", rig.sender.send, basic(1), timeout=tm.T, ids="SEND-4",
                     what="send to a failed receiver", naming=[1])
    assert e.version is None, (f"SEND-4, API-4 violated: the error of a send refused for failed receiver 1 carries "
                               f"version {e.version}, not None (nothing was published)")
    assert rig.sender.version == 0, "VER-2 violated: a send refused for a failed receiver consumed a version"
    before = e.causes
    if "drop" in ws.CAPABILITIES:  # dropping a failed receiver changes nothing (API-9): it stays failed, not gone
        try:
            bounded(rig.sender.drop, 1, tm.T, limit=tm.T + tm.SLACK, what="drop(1) of a failed receiver")
        except HarnessError as err:
            raise TooSlow(f"API-9 violated: {err}") from None
        except Exception as err:  # noqa: BLE001
            raise AssertionError(f"API-9 violated: drop(1) of a failed receiver raised {type(err).__name__}: "
                                 f"{err}") from None
        e = expect_error(ws, "ReceiverError", rig.sender.send, basic(1), timeout=tm.T, ids="API-9",
                         what="send to a failed receiver after drop() of it", naming=[1])
        assert e.causes == before, (f"API-9 violated: drop() of a receiver that refused its Init changed what a "
                                    f"send says of it from {before} to {e.causes}")
        assert rig.sender.version == 0, "VER-2 violated: a send refused for a failed receiver consumed a version"
    rig.send(basic(1), workers=[0])
    rig.restart(1)  # a failed receiver gets a new handle, which resets it; a new process connects (LIFE-2, SM-S-5)
    rig.send(basic(2))
    rig.check()


@pytest.mark.req("INIT-5", "SM-S-5", "LIFE-2")
def test_sender_connect_is_bounded(rigs, ws):
    rig = rigs(basic(0), 2, connect=False)
    rig.open(0)
    rig.open(1)
    rig.workers[0].submit("connect", tm.T)
    # receiver 1 never calls connect()
    expect_error(ws, "SyncTimeoutError", lambda: rig.sender.connect(tm.SHORT, workers=[0, 1]), ids="INIT-5",
                 what="sender.connect with a silent receiver", naming=[1], limit=tm.SHORT + tm.SLACK)
    expect_remote_ok(rig.workers[0].result(), ids="INIT-4", what="receiver 0's connect")
    rig.model.connected(0, 0, "push")
    # Receiver 1 is connecting (its Init sent, no Ready): a new handle replaces it over a new channel
    # (SM-S-5), and a new process connects with it (LIFE-2).
    rig.model.reset(1)
    try:
        handle = rig.sender.handle(1)
    except Exception as e:  # noqa: BLE001
        raise AssertionError(f"SM-S-5 violated: handle(1) of a connecting receiver raised {type(e).__name__}: {e}") from None
    try:
        rig.connect([1], handles={1: handle})
    except TooSlow as e:
        raise TooSlow(f"SM-S-5 violated: a new process with handle(1) of a connecting receiver did not connect: {e}") from None
    except Exception as e:  # noqa: BLE001 - a failed check, or pickling the handle raised
        raise AssertionError(f"SM-S-5 violated: a new process could not connect with handle(1) of a connecting "
                             f"receiver: {type(e).__name__}: {e}") from None
    rig.send(basic(1))
    rig.check()


@pytest.mark.req("INIT-5")
def test_receiver_connect_is_bounded(rigs):
    rig = rigs(basic(0), 1, connect=False)
    rig.open(0)
    t0 = time.monotonic()
    try:
        out = rig.workers[0].outcome("connect", tm.SHORT)
    except HarnessError as e:  # the call never came back: its timeout was not honoured, a verdict on INIT-5
        raise TooSlow(f"INIT-5 violated: receiver.connect(timeout={tm.SHORT:g}) with no sender.connect had not "
                      f"returned after {time.monotonic() - t0:.0f} s ({e})") from None
    expect_remote_error(out, "SyncTimeoutError", ids="INIT-5", what="receiver.connect with no sender.connect")
    in_time(time.monotonic() - t0 < tm.SHORT + tm.SLACK, "INIT-5 violated: receiver.connect overran its timeout")


@pytest.mark.req("INIT-5", "INIT-3")
@pytest.mark.needs("mapping")
def test_connect_fails_at_once_when_a_receiver_refuses(rigs, ws):
    rig = rigs(basic(0), 2, connect=False)
    wrong = [(n, "float64" if n == "w" else d, s) for n, d, s in spec_of(rig.weights)]
    rig.workers[0].call("open", rig.sender.handle(0), "push", False, ("mapping", wrong))
    rig.open(1)  # has its handle, never calls connect()
    rig.workers[0].submit("connect", tm.T)
    t0 = time.monotonic()
    expect_error(ws, "ReceiverError", lambda: rig.sender.connect(60.0, workers=[0, 1]), ids="INIT-5",
                 what="sender.connect with one receiver refusing and one silent", naming=[0], limit=tm.T)
    in_time(time.monotonic() - t0 < tm.T, "INIT-5 violated: a Ready(error) was reported only after waiting for the others")
    expect_remote_error(rig.workers[0].result(), "WeightsMismatchError", ids="INIT-3",
                        what="receiver.connect with a mismatching dtype")


@pytest.mark.req("INIT-5", "SM-S-4", "SEND-3")
def test_connect_to_a_dead_receiver_fails_at_once(rigs, ws):
    rig = rigs(basic(0), 1, connect=False)
    rig.open(0)
    rig.workers[0].kill()
    t0 = time.monotonic()
    expect_error(ws, "ReceiverDiedError", lambda: rig.sender.connect(30.0, workers=[0]), ids="INIT-5",
                 what="sender.connect to a receiver whose process died", naming=[0], limit=tm.T)
    in_time(time.monotonic() - t0 < tm.T, "INIT-5 violated: a dead receiver was found only by the timeout")


@pytest.mark.req("INIT-5", "SEND-3", "SEND-4")
def test_connect_names_a_dead_joiner_at_once_with_the_latest_version_and_never_a_live_one_that_died(rigs, ws):
    """Versions 1 and 2 go to receiver 0; receiver 1 takes its handle and its process is killed, receiver 2 takes
    its handle and stays silent: connect(workers=[1, 2]) with a long timeout raises ReceiverDiedError naming 1 alone within the
    reaction bound, without waiting for 2, and its .version is the latest published one (2), the one an Init
    carries. Receiver 2 then connects; receiver 0, live, closes and a send names it; connect() without workers
    then names neither 0 (live when it failed: the send named it) nor 1 (named once already)."""
    rig = rigs(basic(0), 3, connect=[0])
    for k in (1, 2):
        rig.send(basic(k), workers=[0])
    rig.open(1)
    rig.open(2)  # has its handle, does not call connect() yet
    rig.workers[1].kill()
    patience = 4 * (tm.REACTION + tm.SLACK)  # far past the bound, at every timescale
    e = expect_error(ws, "ReceiverDiedError", lambda: rig.sender.connect(patience, workers=[1, 2]), ids="INIT-5",
                     what=f"sender.connect({patience:.0f}) of a killed receiver and a silent one", naming=[1],
                     limit=tm.REACTION + tm.SLACK)
    assert e.version == rig.sender.version == 2, (
        f"INIT-5 violated: the connect error's .version is {e.version!r}; the latest published version (the one an "
        f"Init carries now) is {rig.sender.version}")
    rig.model.gone(1)
    rig.workers[2].submit("connect", tm.T)  # its Init came in the connect above
    try:
        bounded(rig.sender.connect, tm.T, workers=[2], limit=tm.T + tm.SLACK, what="sender.connect(workers=[2])")
    except (HarnessError, ws.SyncTimeoutError) as err:
        raise TooSlow(f"INIT-4 violated: a healthy receiver's handshake did not complete: {err}") from None
    got = expect_remote_ok(rig.workers[2].result(tm.T + tm.SLACK), ids="INIT-4", what="receiver 2's connect()")
    assert got == 2, f"LIFE-1 violated: receiver 2 connected at version {got}; the latest published is 2"
    rig.model.connected(2, 2, "push")
    rig.workers[0].call("discard")  # receiver 0, live, closes: gone (a second kill would cost a process start)
    expect_error(ws, "ReceiverDiedError", rig.sender.send, basic(3), workers=[0], timeout=tm.T, ids="SEND-3",
                 what="send to live receiver 0 after it closed", naming=[0])
    rig.model.gone(0)
    if rig.sender.version == 3:
        rig.model.publish(describe(basic(3)), [0])
    try:
        bounded(rig.sender.connect, tm.T, limit=tm.T + tm.SLACK, what="sender.connect() without workers")
    except HarnessError as err:
        raise TooSlow(f"INIT-5 violated: {err}") from None
    except ws.WeightSyncError as err:
        raise AssertionError(f"INIT-5 violated: connect() without workers, with receiver 0 gone while live (a send "
                             f"named it) and receiver 1 already named by a connect, raised {type(err).__name__}: "
                             f"{err}") from None
    rig.send(basic(4), workers=[2])
    rig.check()


@pytest.mark.req("LIFE-7", "SM-R-8", "SM-R-3")
@pytest.mark.needs("pull")
def test_a_pull_receiver_sees_the_trainer_close_without_polling(ws, rigs):
    """A pull worker that never polls: once the trainer closes, its `stopped` turns true within the reaction bound,
    read alone (no poll()); the version left unread in its channel is not applied, and poll() then gives None."""
    rig = rigs(basic(0), 1, modes=["pull"])
    rig.send_async(basic(1))  # a Receive the worker never takes
    bounded(rig.sender.close, limit=tm.REACTION + tm.SLACK, what="sender.close()")
    t0, state = time.monotonic(), rig.workers[0].call("state")
    while not state["stopped"] and time.monotonic() - t0 < tm.REACTION + tm.SLACK:
        time.sleep(0.05)
        state = rig.workers[0].call("state")
    in_time(state["stopped"], f"LIFE-7 violated: a pull receiver that did not poll still says stopped=False "
                              f"{time.monotonic() - t0:.1f} s after the trainer's close()")
    assert state["version"] == 0, f"LIFE-7 violated: the stopped pull receiver holds version {state['version']}, not 0"
    assert rig.workers[0].call("poll", 0.0) is None, "LIFE-7 violated: poll() after the end of channel did not give None"


@pytest.mark.req("LIFE-4", "LIFE-7", "SM-S-6", "SM-R-3", "CONS-3", "API-3")
@pytest.mark.needs("pull")
def test_sender_close_stops_everyone_and_releases_everything(ws, pool):
    pool.get(3)  # replace any dead worker now, so that the counts below are the sender's alone
    gc.collect()
    before_shm, before_fds = shm_segments(), open_fds()
    threads_before = {t.ident for t in threading.enumerate()}
    rig = Rig(ws, pool, basic(0), 3, modes=["push", "pull", "push"], connect=[0, 1])
    rig.open(2)  # receiver 2 has its handle but has not connected: it still gets Stop (SM-S-6)
    waited(rig.send_async(basic(1), workers=[0]), "SEND-5")
    rig.model.acked(0, 1)
    rig.sender.close()
    try:
        rig.sender.close()
    except Exception as e:  # noqa: BLE001
        raise AssertionError(f"LIFE-4 violated: a second sender.close() raised {type(e).__name__}: {e}") from None
    out = rig.workers[2].outcome("connect", tm.T)
    assert out[0] == "err", f"SM-S-6 violated: a receiver connecting after close() got {out[1]!r}"
    assert out[1].isa("ClosedError"), f"API-3 violated: receiver.connect() after the sender closed raised {out[1]}, not ClosedError"
    # A pull receiver learns of Stop when it polls (CONS-3); a push receiver on its own.
    assert rig.workers[1].call("poll", 0.0) is None, "LIFE-7 violated: poll() after Stop did not return None"
    deadline = time.monotonic() + tm.T
    while True:
        states = [rig.workers[i].call("state") for i in (0, 1)]
        if all(s["stopped"] for s in states) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    in_time(all(s["stopped"] for s in states), f"LIFE-7 violated: receivers not stopped {tm.T} s after sender.close(): {states}")
    assert rig.workers[1].call("poll", 0.0) is None, "LIFE-7 violated: poll() after Stop did not return None"
    assert [s["version"] for s in states] == [1, 0], f"SM-R-3 violated: versions changed at Stop: {states}"
    rig.check([0, 1])  # the weights stay readable and intact (SM-R-3)
    for w in rig.workers:
        w.call("discard")
    del rig
    gc.collect()
    left_shm, left_fds = shm_segments() - before_shm, new_fds(before_fds)
    assert not left_shm, f"LIFE-4 violated: shared segments left in the sender process: {sorted(left_shm)}"
    assert not left_fds, f"LIFE-4 violated: file descriptors left open after close: {left_fds}"
    left = new_threads(threads_before)
    assert not left, f"LIFE-4 violated: threads left in the sender process after close(): {left}"


@pytest.mark.waits(2)
@pytest.mark.req("INIT-4", "SLOT-2")
@pytest.mark.needs("pull")
@pytest.mark.needs("mapping")
def test_ready_comes_after_the_init_version_is_applied(rigs, ws):
    """A slow apply of the Init's version: with two slots, the sender reuses version 0's slot
    for version 2 as soon as Ready(0) says that slot is no longer read."""
    rig = rigs(basic(0), 1, modes=["pull"], max_slots=2, connect=False)
    rig.open(0)
    rig.workers[0].call("fault", ("slow", 1.0))
    rig.workers[0].submit("connect", tm.T)
    try:
        bounded(rig.sender.connect, tm.T, workers=[0], limit=tm.T + tm.SLACK, what="sender.connect")
        for k in (1, 2):
            bounded(rig.sender.send_async, basic(k), timeout=tm.T, limit=tm.T + tm.SLACK, what="send_async")
    except (HarnessError, ws.SyncTimeoutError) as e:
        raise TooSlow(f"INIT-4 violated: a slow but healthy receiver's handshake did not complete: {e}") from None
    v = expect_remote_ok(rig.workers[0].result(tm.T + tm.SLACK), ids="INIT-4", what="receiver.connect")
    rig.workers[0].call("fault", None)
    assert v == 0, f"INIT-4 violated: connect() gave version {v}, expected 0"
    got, d = rig.workers[0].call("snapshot")
    assert got == 0 and digest(d) == digest(describe(basic(0))), (
        "INIT-4 violated: the receiver reports version 0 but holds other bytes: it answered Ready "
        "before applying, and the sender reused the slot"
    )


def _held_init(ws, sender, r0, peer) -> dict:
    """Receiver 0 (`r0`, the binding's) connected, and receiver 1 (`peer`, scripted on its handle) holding the Init
    that a connect(SHORT, workers=[1]) sent it and timed out on: that Init, unanswered."""
    joined = Background(lambda: r0.connect(tm.T), "conformance-receiver-0")
    try:
        bounded(sender.connect, tm.T, workers=[0], limit=tm.T + tm.SLACK, what="sender.connect(workers=[0])")
        bounded(sender.connect, tm.SHORT, workers=[1], limit=tm.SHORT + tm.SLACK,
                what="sender.connect(SHORT, workers=[1]), receiver 1 silent")
    except ws.SyncTimeoutError as e:
        if 1 not in getattr(e, "workers", []):
            raise TooSlow(f"INIT-4 violated: receiver 0's handshake did not complete: {e}") from None
    except HarnessError as e:
        raise TooSlow(f"INIT-4 violated: {e}") from None
    in_time(joined.join(tm.T + tm.SLACK) == ("ok", 0), f"INIT-4 violated: receiver 0 connected as {joined.outcome}")
    return peer.handshake(answer=False, bound=tm.T)


@pytest.mark.req("SLOT-2", "CONS-1", "INIT-4")
@pytest.mark.needs("wire", "push")
def test_an_unanswered_init_pins_its_slot_while_the_others_are_sent_versions(ws):
    """Receiver 1, a scripted receiver on its handle, takes the Init a timed-out connect(workers=[1]) sent and
    holds its Ready, while receiver 0 (the binding's, live) is sent six versions, more than the sender's slots:
    the slot the Init names keeps version 0's bytes throughout (SLOT-2.f: an unanswered Init pins its slot though
    newer versions were published and its receiver, connecting, is sent none of them). Then receiver 1 answers,
    connects, and acks a version sent to both."""
    from .peers import ScriptedReceiver, ack, ready, slot_bytes

    sender = ws.Sender(basic(0), 2)
    r0 = peer = None
    try:
        r0 = ws.Receiver(sender.handle(0))
        peer = ScriptedReceiver(sender.handle(1), 1)
        init = _held_init(ws, sender, r0, peer)
        version0 = slot_bytes(peer, init["slot"])
        occurred("SLOT-2.f")
        for k in range(1, 7):
            try:
                v = bounded(sender.send, basic(k), workers=[0], timeout=tm.T, limit=tm.T + tm.SLACK,
                            what=f"send {k} to receiver 0")
            except ws.SyncTimeoutError as e:
                if e.version is None:  # SLOT-3: every other slot pinned; this send may publish nothing
                    continue
                raise TooSlow(f"SEND-1 violated: a send to healthy receiver 0 timed out: {e}") from None
            except HarnessError as e:
                raise TooSlow(f"SEND-1 violated: {e}") from None
            assert slot_bytes(peer, init["slot"]) == version0, (
                f"SLOT-2 violated: version {v}, sent to receiver 0 alone, was written into slot {init['slot']}, "
                f"which receiver 1's unanswered Init (version {init['version']}) names")
        peer.send(ready(1, init["version"]))
        bounded(sender.connect, tm.T, workers=[1], limit=tm.T + tm.SLACK, what="connect(workers=[1]) after its Ready")
        f = sender.send_async(basic(9), timeout=tm.T)
        m = peer.next_receive(tm.T)
        peer.send(ack(1, m["version"]))
        waited(f, "SEND-1", what="wait(T) on a send to both once receiver 1 connected")
    finally:
        for o in (peer, r0, sender):
            if o is not None:
                o.close()


@pytest.mark.req("SLOT-1", "SLOT-5", "INIT-4")
@pytest.mark.needs("wire", "pull")
def test_slots_made_while_a_receiver_connects_reach_it_before_a_receive_names_them(ws):
    """Receiver 1, a scripted receiver on its handle, holds its Ready while receiver 0 (the binding's, pull) is sent
    versions 1 and 2 and has not polled: with the Init's slot and version 1's pinned, version 2 goes to a slot made
    while receiver 1 connects. Receiver 1 then connects, and versions go to both while receiver 0 polls none, each
    pinning its slot, until no slot is free: every slot has then been named to receiver 1, and each Receive must
    carry the handle of a slot it names unless an earlier message did (SLOT-1), whatever existed at its Ready."""
    from .peers import ScriptedReceiver, ack, ready

    sender = ws.Sender(basic(0), 2)
    r0 = peer = None
    try:
        r0 = ws.Receiver(sender.handle(0), mode="pull")
        peer = ScriptedReceiver(sender.handle(1), 1)
        init = _held_init(ws, sender, r0, peer)
        known = init_slots(init)
        # Versions 1 and 2 pinned beside the Init's slot: three slots, so one was made meanwhile unless the Init
        # listed three or more (INIT-1: it lists every slot there is).
        made_meanwhile = len(known) < 3
        for k in (1, 2):
            try:
                sender.send_async(basic(k), workers=[0], timeout=tm.SHORT)
            except ws.SyncTimeoutError:  # SLOT-3: at its bound the sender may publish nothing
                made_meanwhile = False
        if bounded(r0.poll, tm.T, limit=tm.T + tm.SLACK, what="receiver 0's poll()") is None:
            raise TooSlow(f"API-3 violated: receiver 0's poll({tm.T:g}) applied nothing, with versions pending")
        peer.send(ready(1, init["version"]))
        bounded(sender.connect, tm.T, workers=[1], limit=tm.T + tm.SLACK, what="connect(workers=[1]) after its Ready")
        refused, last = False, None
        for k in range(3, 3 + 16):
            try:
                last = sender.send_async(basic(k), timeout=tm.SHORT)  # receiver 0 polls none: each pins its slot
            except ws.SyncTimeoutError:  # no free slot: each slot was named to receiver 1 by now
                refused = True
                break
            m = peer.next_receive(tm.T)
            introduced = {s["slot"] for s in m["new_slots"]}
            assert not introduced & known, (f"SLOT-5 violated: Receive({m['version']}) introduces slots "
                                             f"{sorted(introduced & known)} a second time")
            assert m["slot"] in known | introduced, (
                f"SLOT-1 violated: Receive({m['version']}) names slot {m['slot']}, whose handle never reached receiver "
                f"1: its Init listed {sorted(init_slots(init))}, and no Receive since introduced it (new_slots: "
                f"{sorted(introduced)})")
            known |= introduced
            peer.send(ack(1, m["version"]))
        if made_meanwhile and refused:
            occurred("SLOT-1.g")
        if last is not None and bounded(r0.poll, tm.T, limit=tm.T + tm.SLACK, what="receiver 0's last poll()") is None:
            raise TooSlow(f"API-3 violated: receiver 0's poll({tm.T:g}) applied nothing, with versions pending")
        if last is not None:
            waited(last, "SEND-1", what="wait(T) on the last send to both, both having acked it")
        if not (made_meanwhile and refused):
            checked_nothing("the sender published nothing while receiver 1 connected, or never ran out of slots "
                            "afterwards: no slot made meanwhile was sure to be named to it")
    finally:
        for o in (peer, r0, sender):
            if o is not None:
                o.close()


def init_slots(init: dict) -> set[int]:
    return {s["slot"] for s in init["slots"]}


@pytest.mark.req("LIFE-4")
def test_sender_close_releases_the_channels_of_gone_receivers(ws, pool):
    """Counted while the sender object is still referenced: close() itself must release, not the GC."""
    pool.get(3)
    gc.collect()
    before_fds = open_fds()
    rig = Rig(ws, pool, basic(0), 3)
    rig.send(basic(1))
    rig.workers[1].call("discard")  # receiver 1 closed its end
    rig.workers[2].kill()  # receiver 2's process is gone
    for i in (1, 2):  # the sender learns that both are gone
        expect_error(ws, "ReceiverDiedError", rig.sender.send, basic(2), workers=[i], timeout=tm.T, ids="SEND-3",
                     what=f"send to gone receiver {i}", naming=[i])
    rig.sender.close()
    left_fds = new_fds(before_fds)
    assert not left_fds, (
        f"LIFE-4 violated: file descriptors still open after close() with a closed and a killed "
        f"receiver (counted before the sender object was freed): {left_fds}"
    )
    rig.workers[0].call("discard")


@pytest.mark.req("LIFE-5", "SM-R-4")
@pytest.mark.parametrize("mode", [pytest.param(m, marks=pytest.mark.needs(m)) for m in ("push", "pull")])
def test_receiver_close_is_idempotent_and_leaves_nothing(rigs, ws, mode):
    rig = rigs(basic(0), 1, modes=[mode])
    rig.send_async(basic(1))
    out = rig.workers[0].call("close", twice=True)
    assert out["second_close"] is None, f"LIFE-5 violated: a second receiver.close() raised {out['second_close']}"
    in_time(out["elapsed"] < tm.T, f"LIFE-5 violated: receiver.close() took {out['elapsed']:.1f} s")
    assert not out["threads"], f"LIFE-5 violated: threads left in the receiver process after close(): {out['threads']}"
    assert out["maps"] == 0 and out["fds"] == 0, f"LIFE-5 violated: slots still mapped after receiver.close(): {out}"


@pytest.mark.req("SM-R-4", "LIFE-5", "API-3")
def test_close_a_receiver_that_never_connected(rigs):
    rig = rigs(basic(0), 1, connect=False)
    rig.open(0)
    state = rig.workers[0].call("state")
    assert state["version"] is None, f"API-3 violated: a receiver that has not connected has version {state['version']!r}, not None"
    out = rig.workers[0].call("close", twice=True)
    assert out["second_close"] is None, f"LIFE-5 violated: a second receiver.close() raised {out['second_close']}"
    assert not out["threads"], f"LIFE-5 violated: threads left: {out['threads']}"


@pytest.mark.req("LIFE-6")
def test_closed_sender_refuses_calls(rigs, ws):
    rig = rigs(basic(0), 1)
    rig.send(basic(1))
    rig.sender.close()
    assert rig.sender.version == 1, "LIFE-6 violated: version of a closed sender is not readable"
    for what, fn in (
        ("send", lambda: rig.sender.send(basic(2), timeout=tm.SHORT)),
        ("send_async", lambda: rig.sender.send_async(basic(2), timeout=tm.SHORT)),
        ("connect", lambda: rig.sender.connect(tm.SHORT)),
        ("handle", lambda: rig.sender.handle(0)),
    ):
        expect_error(ws, "ClosedError", fn, ids="LIFE-6", what=f"{what} on a closed sender")


@pytest.mark.req("CON-1", "SEND-3")
def test_a_receiver_closed_while_its_process_keeps_the_handle_is_seen_gone(ws, rigs):
    """Worker 0 closes its receiver and lives on, its handle still referenced (a `Process` argument lives as long
    as the worker, as in the quickstart): the end of its channel is observable all the same (CON-1), so the
    trainer's next send names receiver 0 gone (ReceiverDiedError, SEND-3) once receiver 1 answered, not a
    SyncTimeoutError after the send's timeout."""
    rig = rigs(basic(0), 2, connect=False)
    rig.keep_handles.add(0)
    rig.connect([0, 1])
    rig.workers[0].call("close", keep=True)
    t0 = time.monotonic()
    try:
        rig.sender.send(basic(1), timeout=tm.T)
    except ws.ReceiverDiedError as e:
        assert list(e.workers) == [0], f"SEND-3 violated: the send named {e.workers} gone, expected [0]: {e}"
    except ws.SyncTimeoutError as e:
        if 0 in e.workers:  # it closed before the send began: nothing but an open channel keeps it from being seen
            raise AssertionError(f"CON-1 violated: receiver 0 closed with its process alive and its handle kept; the "
                                 f"send waited {time.monotonic() - t0:.1f} s for it and timed out: {e}") from None
        raise TooSlow(f"SEND-1 violated: a healthy receiver did not answer in time: {e}") from None
    else:
        raise AssertionError("SEND-3 violated: a send to a receiver closed before it began returned a version")


@pytest.mark.req("LIFE-6", "SM-R-4")
def test_closed_receiver_calls(ws, pool):
    r = Rig(ws, pool, basic(0), 1)
    try:
        r.send(basic(1))
        w = r.workers[0]
        w.call("close", keep=True)
        out = w.call("closed_calls")
        for name in ("poll", "connect", "reading"):
            assert out[name] is not None and out[name].isa("ClosedError"), (
                f"LIFE-6 violated: {name}() on a closed receiver gave {out[name]!r}, not ClosedError"
            )
        assert out["version"] == ("value", 1), f"LIFE-6 violated: version of a closed receiver: {out['version']!r}"
        assert out["stopped"][0] == "value", f"LIFE-6 violated: stopped of a closed receiver raised {out['stopped']}"
        assert out["weights"][0] == "value" and out["weights"][1] == r.model.published[1], (
            f"LIFE-6 violated: the weights of a closed receiver are not readable as version 1: {out['weights']!r}"[:300]
        )
    finally:
        r.teardown()


@pytest.mark.req("SM-R-7", "CONS-3")
@pytest.mark.needs("pull")
def test_illegal_receiver_calls_raise_protocol_error(rigs):
    rig = rigs(basic(0), 1, modes=["pull"], connect=False)
    rig.open(0)
    expect_remote_error(rig.workers[0].outcome("poll", 0.0), "ProtocolError", ids="SM-R-7", what="poll() before connect()")
    rig.connect([0])
    expect_remote_error(rig.workers[0].outcome("connect", tm.SHORT), "ProtocolError", ids="SM-R-7", what="connect() twice")
    expect_remote_error(rig.workers[0].outcome("poll_inside_reading"), "ProtocolError", ids="CONS-3",
                        what="poll() inside reading()")
    expect_remote_error(rig.workers[0].outcome("poll_inside_reading", nested=True), "ProtocolError", ids="CONS-3",
                        what="poll() inside reading(), after a reading() nested in it ended")
    rig.send_async(basic(1))
    rig.polled(0, 1, "CONS-3")
    rig.check()


# ---- LIFE-9: an interrupt at any line ----------------------------------------------------------------

#: Lines of the implementation's calls at which an interrupt is raised, spread evenly over all of them
#: (tests/test_interrupts.py in the reference raises at every line; this keeps the suite quick) ...
INTERRUPT_POINTS = 24
#: ... and every one of the first and the last lines: where the first call takes its locks, and where
#: close() releases what the object holds (a close() cut short must leave the next one able to finish).
INTERRUPT_EDGES = 12


def _code_dirs(ws) -> tuple[str, ...]:
    """The folders of the implementation's code: its module's package and those its classes come from
    (a shim's or a mutant's calls run in the package it wraps)."""
    import os
    import sys

    from .verdict import implementation_packages

    files = (getattr(sys.modules.get(name), "__file__", None) for name in implementation_packages(ws))
    return tuple(os.path.dirname(f) + os.sep for f in files if f)


def _interrupted(package_dir: tuple[str, ...], n: int | None, body) -> int:
    """Runs body, raising KeyboardInterrupt at the n-th line the implementation executes in this thread
    (never when n is None); returns how many of its lines ran."""
    import sys

    count = [0]

    def local(frame, event, arg):
        if event == "line":
            count[0] += 1
            if count[0] == n:
                raise KeyboardInterrupt
        return local

    sys.settrace(lambda frame, event, arg: local if frame.f_code.co_filename.startswith(package_dir) else None)
    try:
        body()
    except KeyboardInterrupt:
        pass
    except body.ws.WeightSyncError:  # a failure the interrupt caused on the other side is not this test's
        pass
    finally:
        sys.settrace(None)
    return count[0]


def _scenario(ws, side: str):
    s = ws.Sender(S.distinct_weights(S.BASIC_SPEC, 0), 1)
    r = ws.Receiver(s.handle(0), mode="pull" if side == "receiver" else "push")
    if side == "sender":
        threading.Thread(target=lambda: _quietly(ws, r.connect, tm.T), daemon=True).start()

        def body():
            s.connect(tm.T)
            s.send(S.distinct_weights(S.BASIC_SPEC, 1), timeout=tm.T)
            s.send_async(S.distinct_weights(S.BASIC_SPEC, 2), timeout=tm.T).wait(tm.T)
            s.close()
    else:
        def trainer():
            s.connect(tm.T)
            for k in (1, 2):
                s.send_async(S.distinct_weights(S.BASIC_SPEC, k), timeout=tm.T)

        threading.Thread(target=lambda: _quietly(ws, trainer), daemon=True).start()

        def body():
            r.connect(tm.T)
            for _ in range(2):
                r.poll(timeout=tm.SHORT)
                with r.reading():
                    dict(r.weights)
            r.close()
    body.ws = ws
    return s, r, body


def _quietly(ws, fn, *args):
    """The other side's calls, in a helper thread: what an interrupt made them raise is not this test's verdict."""
    try:
        fn(*args)
    except Exception:  # noqa: BLE001
        pass


@pytest.mark.req("LIFE-9", "LIFE-4", "LIFE-5", "LIFE-6")
@pytest.mark.parametrize("side", ["sender", pytest.param("receiver", marks=pytest.mark.needs("pull"))])
def test_an_interrupt_at_any_line_leaves_close_bounded(ws, side):
    """KeyboardInterrupt raised at lines spread over the implementation's calls (its package, in this
    thread): close() of both ends then returns within the reaction bound, and the closed sender refuses
    a new call at once with ClosedError."""
    package_dir = _code_dirs(ws)
    s, r, body = _scenario(ws, side)
    total = _interrupted(package_dir, None, body)
    for end in (r, s):
        bounded(end.close, limit=tm.REACTION + tm.SLACK, what="close() after a run without interrupts")
    if total < 2:
        checked_nothing("the implementation ran no Python lines here: nothing to interrupt")
    spread = {1 + (total - 1) * i // (INTERRUPT_POINTS - 1) for i in range(INTERRUPT_POINTS)}
    edges = {*range(1, INTERRUPT_EDGES + 1), *range(total - INTERRUPT_EDGES + 1, total + 1)}
    for n in sorted(n for n in spread | edges if 1 <= n <= total):
        s, r, body = _scenario(ws, side)
        _interrupted(package_dir, n, body)
        for what, end in (("receiver", r), ("sender", s)):
            try:
                bounded(end.close, limit=tm.REACTION + tm.SLACK, what=f"the {what}'s close()")
            except HarnessError as e:
                raise AssertionError(f"LIFE-9 violated: after a KeyboardInterrupt at line {n} of {total} of the "
                                     f"{side}'s calls, {e}") from None
            except Exception as e:  # noqa: BLE001 - close() is idempotent and does not raise (LIFE-4, LIFE-5)
                raise AssertionError(f"LIFE-9 violated: after a KeyboardInterrupt at line {n} of {total} of the "
                                     f"{side}'s calls, the {what}'s close() raised {type(e).__name__}: {e}") from None
        expect_error(ws, "ClosedError", s.handle, 0, ids="LIFE-6", limit=tm.SLACK,
                     what=f"handle(0) on a sender closed after an interrupt at line {n} of {total}")


@pytest.mark.req("LIFE-9", "SEND-1", "API-2", "API-3")
@pytest.mark.needs("pull")
@pytest.mark.parametrize("side", ["sender", "receiver", "reader"])
def test_an_interrupt_while_a_call_waits_leaves_the_object_working(ws, side):
    """Ctrl-C where a blocked call spends its time: SIGINT reaches this (the main) thread while it waits in
    send(), for the Ack of a pull receiver in this process that does not poll yet (sent once sender.version
    shows the version published), or in poll(), for a version not sent yet, or (`reader`) for another thread's
    reading() block that holds back the version it has found. The KeyboardInterrupt comes out of that call; the
    object then works on as after a timeout there (LIFE-9.d, LIFE-9.e): with the receiver polling, a send
    returns its version and a send_async's done() turns true; a poll() applies the newest pending version, the
    one the interrupted poll() had found included. The handler raises only while the call runs: a signal taken
    after it (a call that does not take interrupts while it waits) is not judged and cannot reach pytest."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        checked_nothing("a signal reaches the main thread only, and this test ran in another")
    sender = ws.Sender(basic(0), 1)
    receiver = ws.Receiver(sender.handle(0), mode="pull")
    stop, previous, poller = threading.Event(), signal.getsignal(signal.SIGINT), None
    in_call, taken = threading.Event(), threading.Event()

    class Interrupted(KeyboardInterrupt):
        """The suite's own Ctrl-C, told apart from anyone else's."""

    def handler(signum, frame):
        taken.set()
        if in_call.is_set():
            raise Interrupted()

    def apply_waits() -> bool:
        """Whether a new reading() block is held back now: an apply waits for the readers (CONS-2)."""
        try:
            with receiver.reading(timeout=0):
                return False
        except ws.SyncTimeoutError:
            return True

    def interrupt():
        end = time.monotonic() + tm.T
        if side == "sender":  # the version is published: send() is past its checks and copies, in its wait
            while sender.version < 1 and time.monotonic() < end:
                time.sleep(0.01)
        if side == "reader":  # poll() found the version and waits for the reader: new blocks are held back
            while not apply_waits():
                if time.monotonic() > end or not in_call.is_set():
                    return  # poll() never waited for the reader: no signal, nothing judged
                time.sleep(0.01)
        time.sleep(tm.SHORT)
        if in_call.is_set():
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    inside, leave, reader, held = threading.Event(), threading.Event(), None, None

    def read() -> None:
        with receiver.reading(timeout=tm.T):
            inside.set()
            leave.wait(4 * tm.T)

    try:
        connect_here(ws, sender, [receiver], "a healthy pull receiver")
        if side == "reader":  # a block in another thread, then a version for poll() to find and wait with
            reader = threading.Thread(target=read, daemon=True, name="conformance-reader")
            reader.start()
            if not inside.wait(tm.T):
                raise TooSlow(f"a reading() block in a second thread had not begun within {tm.T:.0f} s")
            held = bounded(sender.send_async, basic(1), timeout=tm.T, limit=tm.T + tm.SLACK, what="send_async")
        signal.signal(signal.SIGINT, handler)
        timer = threading.Thread(target=interrupt, daemon=True, name="conformance-interrupt")
        interrupted, late = False, False
        try:
            try:
                in_call.set()
                timer.start()
                if side == "sender":
                    got = sender.send(basic(1), timeout=4 * tm.T)
                else:
                    got = receiver.poll(4 * tm.T)
            except Interrupted:
                interrupted = True
            except Exception as e:  # noqa: BLE001 - the call ended its wait some other way: nothing to judge
                got = f"{type(e).__name__}: {e}"
            finally:
                in_call.clear()
        except Interrupted:  # taken after the call had returned, before the flag fell: not a wait's interrupt
            late = True
        finally:
            timer.join(tm.T + tm.SLACK)
            signal.signal(signal.SIGINT, previous)
        if late:
            checked_nothing(f"the signal reached the {side}'s call only as it returned")
        if not interrupted:
            checked_nothing(f"the {side}'s call did not take the interrupt while it waited (it ended with {got!r}"
                            f"{', the signal taken after it' if taken.is_set() else ''})")
        occurred("LIFE-9.d")
        if side == "reader":
            occurred("LIFE-9.e")
            # As after a timeout of that wait, no apply waits: a new block in another thread goes on (CONS-2)
            entered = Background(apply_waits, "conformance-reader-2").join(tm.T)
            if entered is None:
                raise TooSlow(f"reading(timeout=0) in another thread had not returned within {tm.T:.0f} s")
            assert entered == ("ok", False), (
                f"LIFE-9 violated: after a KeyboardInterrupt ended poll()'s wait for another thread's reading() block, "
                f"a new reading(timeout=0) in a third thread was {'held back' if entered[0] == 'ok' else entered[1]!r} "
                "beside that block: an apply still waits, as none does after a timeout of that wait (CONS-2)")
            leave.set()
            reader.join(tm.T)
            in_time(not reader.is_alive(), f"the first reading() block had not ended {tm.T:.0f} s after it was let go")
            try:
                got = bounded(receiver.poll, tm.T, limit=tm.T + tm.SLACK, what="poll() after the interrupted poll()")
            except HarnessError as e:
                raise TooSlow(f"LIFE-9 violated: {e}") from None
            assert got == held.version, (f"LIFE-9 violated: a KeyboardInterrupt reached poll() while another "
                                         f"thread's reading() held back version {held.version}; once the reader left, "
                                         f"poll() gave {got!r}, not that version")
            waited(held, "LIFE-9", what="wait() on the version an interrupted poll() had found")
            return
        if side == "receiver":
            f = bounded(sender.send_async, basic(1), timeout=tm.T, limit=tm.T + tm.SLACK, what="send_async")
            try:
                got = bounded(receiver.poll, tm.T, limit=tm.T + tm.SLACK, what="poll() after the interrupted poll()")
            except HarnessError as e:
                raise TooSlow(f"LIFE-9 violated: {e}") from None
            assert got == f.version, (f"LIFE-9 violated: after a KeyboardInterrupt in a waiting poll(), poll() with "
                                      f"version {f.version} pending gave {got!r}")
            waited(f, "LIFE-9", what="wait() on the version the receiver polled after its interrupted poll()")
            return

        def polling():
            while not stop.is_set():
                try:
                    receiver.poll(0.05)
                except Exception:  # noqa: BLE001 - judged by the sends below
                    return

        poller = threading.Thread(target=polling, daemon=True, name="conformance-poller")
        poller.start()
        waited(sender.send_async(basic(2), timeout=tm.T), "LIFE-9",
               what="wait() on a send to a polling receiver after a send was interrupted")
        try:
            v = bounded(sender.send, basic(3), timeout=tm.T, limit=tm.T + tm.SLACK, what="send() after the interrupt")
        except (HarnessError, ws.SyncTimeoutError) as e:
            raise TooSlow(f"LIFE-9 violated: after a KeyboardInterrupt in a waiting send(), a send to a polling "
                          f"receiver did not return: {e}") from None
        assert v == sender.version, f"SEND-1 violated: send() returned {v}, sender.version is {sender.version}"
        f = bounded(sender.send_async, basic(4), timeout=tm.T, limit=tm.T + tm.SLACK, what="send_async")
        end = time.monotonic() + tm.T
        while not f.done() and time.monotonic() < end:
            time.sleep(0.02)
        in_time(f.done(), f"LIFE-9 violated: after a KeyboardInterrupt in a waiting send(), the future of a send to "
                          f"a polling receiver was not done() within {tm.T:.0f} s (API-2)")
    finally:
        stop.set()
        leave.set()
        if poller is not None:
            poller.join(tm.T)
        if reader is not None:
            reader.join(tm.T)
        bounded(receiver.close, limit=tm.REACTION + tm.SLACK, what="receiver.close()")
        bounded(sender.close, limit=tm.REACTION + tm.SLACK, what="sender.close()")


@pytest.mark.req("LIFE-4", "API-9", "SM-S-6")
@pytest.mark.needs("wire")
@pytest.mark.parametrize("how", ["close", pytest.param("drop", marks=pytest.mark.needs("drop"))])
def test_a_receiver_between_init_and_ready_gets_stop_from_close_and_drop(ws, how):
    """A scripted receiver takes its Init and does not answer: sender.close(), or drop(0) while a connect waits on
    it, sends it Stop and ends its channel (LIFE-4, API-9); after drop the waiting connect raises
    ReceiverDiedError naming 0 at once, and handle(0) restarts it (the sender treats it as gone)."""
    from .peers import PeerClosed, ScriptedReceiver

    sender = ws.Sender(basic(0), 2)
    peer = None
    try:
        peer = ScriptedReceiver(sender.handle(0), 0)
        connecting = None
        if how == "close":
            expect_error(ws, "SyncTimeoutError", lambda: sender.connect(tm.TIMED, workers=[0]), ids="INIT-5",
                         what="sender.connect with a receiver that takes its Init and stays silent", naming=[0],
                         limit=tm.TIMED + tm.SLACK)
            peer.expect("Init", tm.T)
            bounded(sender.close, limit=tm.REACTION + tm.SLACK, what="sender.close()")
        else:
            connecting = Background(lambda: sender.connect(4 * (tm.REACTION + tm.SLACK), workers=[0]),
                                    "conformance-sender-connect")
            peer.expect("Init", tm.T)  # connect() has sent Init and now waits for Ready
            bounded(sender.drop, 0, tm.T, limit=tm.T + tm.SLACK, what="drop(0) of a connecting receiver")
        ids = "LIFE-4" if how == "close" else "API-9"
        try:
            msg = peer.answer_before_close(tm.REACTION + tm.SLACK, ignore=("Heartbeat",))
        except HarnessError:
            raise TooSlow(f"{ids} violated: after {how}() the channel of a receiver between Init and Ready stayed "
                          f"open {tm.REACTION + tm.SLACK:g} s with no Stop") from None
        except (PeerClosed, ConnectionResetError):
            msg = None
        assert msg is not None and msg.get("type") == "Stop", (
            f"{ids} violated: after {how}() a receiver between Init and Ready got {msg} before its channel ended, "
            "not Stop")
        if connecting is not None:
            outcome = connecting.join(tm.REACTION + tm.SLACK)
            in_time(outcome is not None, "API-9 violated: the connect waiting on receiver 0 did not end after drop(0)")
            status, e = outcome
            assert status == "err" and isinstance(e, ws.ReceiverDiedError) and e.workers == [0], (
                f"API-9 violated: the connect waiting on receiver 0 ended with {e!r} after drop(0), not "
                "ReceiverDiedError naming 0")
            try:
                sender.handle(0)
            except Exception as err:  # noqa: BLE001
                raise AssertionError(f"API-9 violated: handle(0) after drop(0) raised {type(err).__name__}: "
                                     f"{err}") from None
    finally:
        if peer is not None:
            peer.close()
        sender.close()


@pytest.mark.req("LIFE-6", "API-3")
@pytest.mark.needs("rendezvous")
def test_a_closed_listening_sender_refuses_url_and_bad_urls_are_refused(ws):
    """url(i) on a closed listening sender raises ClosedError (LIFE-6); Receiver() given a URL outside RDV-1's
    grammar raises ValueError (API-3)."""
    import os

    key = "0" * 64
    for bad in (f"unix:@name?receiver=x&secret={key}", f"http://host:1?receiver=0&secret={key}",
                "unix:@name?receiver=0&secret=zz", f"unix:@name?secret={key}",
                f"unix:@name?receiver=0&receiver=1&secret={key}"):
        refused(ws.Receiver, bad, ids="API-3", what=f"Receiver({bad!r})", expected="a malformed URL raises ValueError")
    s = ws.Sender(basic(0), 1, listen=f"unix:@conformance-closed-{os.getpid()}")
    s.url(0)
    s.close()
    expect_error(ws, "ClosedError", s.url, 0, ids="LIFE-6", what="url(0) on a closed listening sender")


@pytest.mark.req("LIFE-1", "LAYOUT-3")
@pytest.mark.needs("cast")
def test_the_first_joiner_of_a_cast_slot_group_starts_from_the_latest_version(ws):
    """Versions 1 to 3 go to receiver 0 while no receiver of the bfloat16 slot group is connected; receiver 1,
    of that group, then joins in this process and holds version 3, rounded to bfloat16 (LIFE-1)."""
    import torch

    sender = ws.Sender(basic(0), 2, dtypes=[None, torch.bfloat16])
    receivers = []
    try:
        def join(i):
            rx = ws.Receiver(sender.handle(i), mode="push")
            receivers.append(rx)
            box = {}
            t = threading.Thread(target=lambda: box.setdefault("v", rx.connect(tm.T)), daemon=True)
            t.start()
            bounded(sender.connect, tm.T, workers=[i], limit=tm.T + tm.SLACK, what=f"sender.connect(workers=[{i}])")
            t.join(tm.T + tm.SLACK)
            in_time("v" in box, f"INIT-4 violated: receiver {i}'s connect() did not return")
            return rx, box["v"]

        join(0)
        for k in (1, 2, 3):
            waited(sender.send_async(basic(k), workers=[0], timeout=tm.T), "SEND-5")
        rx, v = join(1)
        assert v == 3 and rx.version == 3, f"LIFE-1 violated: the first joiner of a cast slot group connected at {v}"
        want = {k: t.to(torch.bfloat16) if t.dtype.is_floating_point else t for k, t in basic(3).items()}
        with rx.reading(tm.T):
            got = describe(rx.weights)
        assert got == describe(want), ("LIFE-1 violated: the first joiner of a bfloat16 slot group does not hold "
                                       "version 3 rounded to bfloat16")
    finally:
        for rx in receivers:
            rx.close()
        sender.close()


@pytest.mark.req("LIFE-5", "API-7")
@pytest.mark.needs("mapping")
def test_receiver_close_during_an_apply_waits_for_it_and_starts_no_other(ws):
    """A push receiver in this process whose target blocks the apply of version 1 while version 2 waits behind it:
    close() from another thread returns within the reaction bound once the apply may go on, and from the moment
    it returned the receiver's version and the target's bytes no longer change (the apply in progress was waited
    for, and version 2's never starts)."""
    import torch

    from .targets import ControlledMapping

    class Gate(ControlledMapping):
        def __init__(self, tensors):
            super().__init__(tensors)
            self.armed, self.entered, self.release = False, threading.Event(), threading.Event()

        def _trip(self):
            if self.armed:
                self.armed = False
                self.entered.set()
                self.release.wait(tm.T)

    tensors = {k: torch.zeros_like(v) for k, v in basic(0).items()}
    target = Gate(tensors)
    sender = ws.Sender(basic(0), 1)
    receiver = ws.Receiver(sender.handle(0), target, mode="push")
    seen: dict = {}

    def state():
        return receiver.version, {k: t.clone() for k, t in tensors.items()}

    def closer():
        receiver.close()
        seen["at_return"] = state()

    try:
        t = threading.Thread(target=lambda: receiver.connect(tm.T), daemon=True)
        t.start()
        bounded(sender.connect, tm.T, limit=tm.T + tm.SLACK, what="sender.connect")
        t.join(tm.T)
        target.armed = True
        sender.send_async(basic(1), timeout=tm.T)
        in_time(target.entered.wait(tm.T), f"ACK-7 violated: the apply of version 1 did not read the target within "
                                           f"{tm.T:g} s")
        sender.send_async(basic(2), timeout=tm.T)  # waits behind the apply in progress
        c = threading.Thread(target=closer, name="conformance-closer", daemon=True)
        c.start()
        end = time.monotonic() + tm.T
        while c.is_alive() and time.monotonic() < end:  # until close() runs (it may already have returned)
            names = [frame.f_code.co_name for frame in stack_of(c.ident)]
            if names.count("close") >= 1 and "closer" in names and len(names) > 3:
                break
            time.sleep(0.005)
        target.release.set()
        c.join(tm.REACTION + tm.SLACK)
        in_time(not c.is_alive(), f"LIFE-5 violated: receiver.close() during an apply did not return within "
                                  f"{tm.REACTION + tm.SLACK:g} s")
        version, held = seen["at_return"]
        deadline = time.monotonic() + tm.SLACK / 3
        while time.monotonic() < deadline:
            now_version, now = state()
            changed = [k for k in held if not torch.equal(held[k], now[k])]
            assert now_version == version and not changed, (
                f"LIFE-5 violated: after receiver.close() returned, an apply still ran: version {version} -> "
                f"{now_version}, target entries changed {changed}")
            time.sleep(0.02)
    finally:
        target.release.set()
        receiver.close()
        sender.close()


def _numbers(text: str) -> set[int]:
    import re

    return {int(n) for n in re.findall(r"(?<![\w.-])\d+(?![\w.])", text)}


@pytest.mark.req("LIFE-8", "SEND-5")
@pytest.mark.needs("pull")
def test_close_names_in_its_closed_error_only_the_targets_that_had_not_answered(ws):
    """A sender of 13 receivers, of which 11 and 12 (pull, in this process) are connected; version 1 is sent to both,
    receiver 11 polls it (its Ack goes out), receiver 12 never polls. close() settles the send: wait() raises
    ClosedError naming receiver 12, the target that had not answered, and not receiver 11, which had (LIFE-8).
    Ids of two digits, so that no version number or count in the text passes for one."""
    sender = ws.Sender(basic(0), 13)
    receivers = {i: ws.Receiver(sender.handle(i), mode="pull") for i in (11, 12)}
    try:
        outs = {i: Background(lambda r=r: r.connect(tm.T), name=f"conformance-connect-{i}") for i, r in receivers.items()}
        try:
            bounded(sender.connect, tm.T, workers=[11, 12], limit=tm.T + tm.SLACK, what="connect(workers=[11, 12])")
        except (HarnessError, ws.SyncTimeoutError) as e:
            raise TooSlow(f"INIT-4 violated: healthy pull receivers 11 and 12 did not connect: {e}") from None
        for i, b in outs.items():
            out = b.join(tm.T + tm.SLACK)
            in_time(out is not None, f"INIT-4 violated: receiver {i}'s connect() did not return")
            assert out == ("ok", 0), f"INIT-4 violated: receiver {i}'s connect() gave {out}"
        f = sender.send_async(basic(1), workers=[11, 12], timeout=tm.T)
        try:
            got = bounded(receivers[11].poll, tm.T, limit=tm.T + tm.SLACK, what="receiver 11's poll()")
        except HarnessError as e:
            raise TooSlow(f"API-3 violated: {e}") from None
        in_time(got is not None, f"ACK-1 violated: receiver 11's poll({tm.T:.0f}) found nothing; version 1 was sent")
        assert got == f.version, f"ACK-1 violated: receiver 11's poll() applied {got}, not {f.version}"
        bounded(sender.close, limit=tm.REACTION + tm.SLACK, what="sender.close() with a send pending on receiver 12")
        assert f.done(), "LIFE-8 violated: after close() done() is false for a send receiver 12 never answered"
        e = expect_error(ws, "ClosedError", f.wait, 0, ids="LIFE-8", limit=tm.SLACK,
                         what="wait() of a send answered by receiver 11 and not by receiver 12 before close()")
        workers = getattr(e, "workers", None)
        if workers is not None:  # a binding that carries the targets as data: exactly the unanswered one
            assert list(workers) == [12], f"LIFE-8 violated: the ClosedError's .workers is {workers}, not [12]"
        named = _numbers(str(e))
        assert 12 in named, (f"LIFE-8 violated: the ClosedError does not name receiver 12, the target that had not "
                             f"answered: {e}")
        assert 11 not in named, (f"LIFE-8 violated: the ClosedError names receiver 11, which had answered before "
                                 f"close(): {e}")
    finally:
        for r in receivers.values():
            r.close()
        sender.close()


def _slot_mappings() -> list[tuple[str, str, str]]:
    """(address range, permissions, inode) of each shared memory (memfd, /dev/shm) mapping of this process."""
    out = []
    with open("/proc/self/maps") as f:
        for line in f:
            if "/memfd:" in line or "/dev/shm/" in line:
                parts = line.split()
                out.append((parts[0], parts[1], parts[4]))
    return out


@pytest.mark.req("LIFE-5", "ZC-3", "LIFE-6")
@pytest.mark.needs("zero_copy", "mapping")
def test_a_closed_zero_copy_receivers_mappings_go_with_its_last_tensor(ws):
    """A zero-copy receiver in this process; its read-only mappings are the shared mappings that appear once it
    connected and are not writable (the sender writes through its own). The caller keeps the weights of version 0
    and of version 1 (tensors that view the slots), closes the receiver, then the sender: every kept tensor still
    reads its version's bytes (LIFE-5: what zero-copy weights view stays mapped while they live). Once the last
    tensor, the receiver and its weights are dropped, none of the receiver's mappings is left (LIFE-5: released then)."""
    import os

    if not os.path.exists("/proc/self/maps"):
        checked_nothing("no /proc/self/maps on this system to count mappings in")
    sender = ws.Sender(basic(0), 1)
    receiver = None
    try:
        before = set(_slot_mappings())
        receiver = ws.Receiver(sender.handle(0), zero_copy=True)
        from .rig import connect_here

        connect_here(ws, sender, [receiver], "a healthy zero-copy receiver")
        kept0 = dict(receiver.weights)
        try:
            bounded(sender.send, basic(1), timeout=tm.T, limit=tm.T + tm.SLACK, what="send of 1")
        except (HarnessError, ws.SyncTimeoutError) as e:
            raise TooSlow(f"SEND-1 violated: a send to a healthy zero-copy receiver did not complete: {e}") from None
        kept1 = dict(receiver.weights)
        mine = {m for m in set(_slot_mappings()) - before if "w" not in m[1]}
        if not mine:
            checked_nothing("the zero-copy receiver made no read-only shared mapping to count")
        inodes = {m[2] for m in mine}
        receiver.close()
        bounded(sender.close, limit=tm.REACTION + tm.SLACK, what="sender.close()")
        for v, kept in ((0, kept0), (1, kept1)):
            want = describe(basic(v))
            got = describe({n: t.clone() for n, t in kept.items()})
            assert got == want, (f"LIFE-5 violated: tensors of version {v} a closed zero-copy receiver handed out read "
                                 "other bytes once it and its sender closed")
        left_held = [m for m in _slot_mappings() if m[2] in inodes and "w" not in m[1]]
        del kept0, kept1, kept, got, want
        receiver = None
        for _ in range(3):
            gc.collect()
        left = [m for m in _slot_mappings() if m[2] in inodes and "w" not in m[1] and m not in before]
        assert not left, (f"LIFE-5 violated: {len(left)} of the closed zero-copy receiver's mappings are still there "
                          f"once its last tensor, the receiver and its weights were dropped (while they lived: "
                          f"{len(left_held)}; at most: {len(mine)}): {left}")
    finally:
        if receiver is not None:
            receiver.close()
        sender.close()
