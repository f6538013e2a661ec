"""Spec section 14, rendezvous by URL, seen from a joiner: the implementation's listening Sender.

The scripted joiner (peers.Joiner) connects with any id and secret and checks
every step of the join by hand; real workers join with `sender.url(i)` beside
it. No call runs on the sender while the scripted joiner talks to it unless the
test says so: a listening sender answers joins on its own (RDV-6).
"""

from __future__ import annotations

import os
import socket
import stat
import tempfile
import threading
import time
from urllib.parse import unquote

import msgpack
import pytest

from . import strategies as S
from . import timing as tm
from .bounds import HarnessError, bounded
from .clauses import occurred
from .model import describe
from .peers import (
    HEARTBEAT,
    Joiner,
    PeerClosed,
    ScriptedReceiver,
    ScriptedSender,
    ack,
    frame,
    init,
    layout,
    pack,
    padded,
    readable,
    ready,
    slotinfo,
)
from .rig import Background, expect_error, refused, waited
from .verdict import TooSlow, checked_nothing, in_time

pytestmark = pytest.mark.needs("rendezvous", "push")


def basic(seed=0):
    return S.distinct_weights(S.BASIC_SPEC, seed)


def _connect(ws, rig, i: int) -> None:
    """sender.connect(workers=[i]) for a scripted joiner that answered Ready: it must complete (RDV-5)."""
    try:
        bounded(rig.sender.connect, tm.T, workers=[i], limit=tm.T + tm.SLACK, what=f"connect(workers=[{i}])")
    except (HarnessError, ws.SyncTimeoutError) as e:
        raise TooSlow(f"RDV-5 violated: the handshake of a joiner that answered Ready did not complete: {e}") from None


def _next_receive(j: Joiner, ids: str) -> dict:
    try:
        return j.next_receive()
    except HarnessError as e:
        raise TooSlow(f"{ids} violated: no Receive reached the joined receiver: {e}") from None


def _refused(j: Joiner, what: str) -> str:
    answer = j.join()
    assert answer.get("type") == "Refuse", f"RDV-4 violated: {what} was answered {answer.get('type')}, not Refuse"
    in_time(j.closed_by_peer(tm.SLACK), f"RDV-4 violated: the connection stayed open after refusing {what}")
    assert not j._fds and not j.slot_fds, "RDV-4 violated: a refused joiner was given buffer handles"
    assert not [m for m in j.frames_in if b"Init" in m[:12]], "RDV-4 violated: a refused joiner got an Init"
    return answer["detail"]


@pytest.mark.req("RDV-1", "RDV-2", "API-1")
def test_each_url_names_the_address_the_id_and_its_own_secret(ws, rigs):
    rig = rigs(basic(0), 3, connect=False, listen=True)
    urls = [rig.sender.url(i) for i in range(3)]
    for i, url in enumerate(urls):
        head, _, query = url.partition("?")
        assert head == rig.sender.address, f"RDV-1 violated: url({i}) = {url!r} does not start with the address"
        fields = dict(kv.split("=", 1) for kv in query.split("&"))
        assert fields.get("receiver") == str(i), f"RDV-1 violated: url({i}) names receiver {fields.get('receiver')}"
        secret = fields.get("secret", "")
        assert len(secret) == 64 and int(secret, 16) >= 0 and secret == secret.lower(), f"RDV-1 violated: secret {secret!r}"
    assert len({u.partition("secret=")[2] for u in urls}) == 3, "RDV-2 violated: two receivers share a secret"
    plain = ws.Sender(basic(0), 1)
    try:
        expect_error(ws, "LocalProtocolError", plain.url, 0, ids="API-1", what="url() on a sender that does not listen")
    finally:
        plain.close()


@pytest.mark.req("RDV-3", "RDV-4", "RDV-6", "RDV-2", "WIRE-6")
def test_a_joiner_without_the_secret_learns_nothing(ws, rigs, closing):
    """With no call running on the sender: a wrong secret, an unknown id and another receiver's secret."""
    rig = rigs(basic(0), 2, connect=False, listen=True)
    url0 = rig.sender.url(0)
    j = Joiner(url0, secret=os.urandom(32))
    closing(j)
    hello = j.hello
    assert hello["protocol"].split(".")[0] == "1" and isinstance(hello.get("nonce"), bytes) and len(hello["nonce"]) == 32, (
        f"RDV-3 violated: Hello is {hello}"
    )
    wrong = _refused(j, "a Join with a wrong secret")
    j = Joiner(url0, rid=7)
    closing(j)
    unknown = _refused(j, "a Join for an id that does not exist")
    assert wrong == unknown, f"RDV-4 violated: the refusals tell a wrong secret ({wrong!r}) from an unknown id ({unknown!r})"
    j = Joiner(url0, rid=1)  # receiver 0's secret presented as receiver 1
    closing(j)
    _refused(j, "receiver 0's secret presented for receiver 1")
    second = Joiner(url0)
    closing(second)
    assert second.hello["nonce"] != hello["nonce"], "RDV-3 violated: two joins got the same challenge"


@pytest.mark.req("RDV-3", "RDV-5", "RDV-7", "LIFE-1", "INIT-1", "WIRE-4", "SEC-4")
def test_a_joiner_with_the_secret_gets_proof_and_the_latest_version(ws, rigs, closing):
    rig = rigs(basic(0), 2, connect=[0], listen=True)
    for step in range(1, 4):
        rig.send(basic(step), workers=[0])
    j = Joiner(rig.sender.url(1))
    closing(j)
    answer = j.join()
    assert answer.get("type") == "Welcome", f"RDV-5 violated: a valid Join was answered {answer}"
    assert j.welcome_ok(answer), "RDV-3 violated: Welcome's proof is not HMAC(secret, weightsync-welcome | ...)"
    init = j.handshake(answer=False)  # the sender sends Init with no connect() running (RDV-5)
    assert init["receiver"] == 1 and init["version"] == 3, f"LIFE-1 violated: Init for {init['receiver']} at {init['version']}"
    assert j.slot_fds, "WIRE-4 violated: no slot handle came with the Init of a Unix connection"
    j.send(ready(1, 3))
    _connect(ws, rig, 1)
    f = rig.send_async(basic(4))
    got = _next_receive(j, "RDV-5")
    assert got["version"] == 4, f"VER-1 violated: the joined receiver got Receive({got['version']}), not 4"
    j.send(ack(1, 4))
    waited(f, "RDV-5")
    rig.check([0])


@pytest.mark.req("INIT-5", "INIT-6")
@pytest.mark.parametrize("between", ["nothing", "a send names it"])
def test_a_handshake_that_failed_before_connect_is_named_by_the_next_connect(ws, rigs, closing, between):
    """A joiner refuses its Init while no connect() runs: the caller's next connect() says so, once. A send to
    every receiver in between, which names it too (SEND-4: a failed target), does not take the place of that
    naming (INIT-5.k): the connect after it still names it."""
    rig = rigs(basic(0), 2, connect=[0], listen=True)
    j = Joiner(rig.sender.url(1))
    closing(j)
    assert j.join().get("type") == "Welcome"
    init = j.handshake(answer=False)
    j.send(ready(1, None, "error", "cannot apply"))
    time.sleep(0.3)  # not a bound: the sender has read the Ready(error) before connect() starts, as a rule
    named_by_send = False
    if between == "a send names it":
        try:
            got = bounded(rig.sender.send, basic(1), timeout=tm.T, limit=tm.T + tm.SLACK,
                          what="a send to every receiver after receiver 1 refused its Init")
        except HarnessError as e:
            raise TooSlow(f"SEND-4 violated: {e}") from None
        except ws.ReceiverError as e:
            assert list(getattr(e, "workers", [])) == [1], (
                f"SEND-4 violated: the send after receiver 1 refused its Init named {getattr(e, 'workers', None)}")
            named_by_send = True
            occurred("INIT-5.k")
        except ws.LocalProtocolError:
            pass  # the sender had not read the refusal yet: receiver 1 is still connecting to it (SEND-4)
        else:
            raise AssertionError(f"SEND-4 violated: a send to every receiver, receiver 1 not live, returned {got}")
    expect_error(ws, "ReceiverError", rig.sender.connect, tm.T, ids="INIT-5", naming=[1],
                 what=f"connect() after receiver 1 answered its Init (version {init['version']}) with Ready(error)")
    bounded(rig.sender.connect, tm.T, limit=tm.T + tm.SLACK, what="connect() once the failure was named")
    rig.send(basic(1), workers=[0])
    rig.check([0])
    if between == "a send names it" and not named_by_send:
        checked_nothing("the send found receiver 1 still connecting (its refusal not read yet), so it named nothing")


#: How a joiner's handshake ends before the caller calls connect(): what it writes after taking its Init, whether
#: it hangs up, and the error that names it. Each is named by the next connect() (INIT-5), whether or not the sender
#: read it meanwhile.
ENDINGS = {
    "Ready(error), then it hangs up": (lambda: frame(pack(ready(1, None, "error", "cannot apply"))), True,
                                       "ReceiverError"),
    "it hangs up without answering": (lambda: b"", True, "ReceiverDiedError"),
    "it breaks the protocol": (lambda: frame(b"\xc1garbage"), False, "ReceiverError"),
}


@pytest.mark.req("INIT-5", "INIT-6", "SM-S-9")
@pytest.mark.parametrize("ending", sorted(ENDINGS))
def test_a_handshake_that_ended_before_connect_is_named_by_the_next_connect(ws, rigs, closing, ending):
    """A joiner takes its Init, then refuses and leaves, leaves, or breaks the protocol, while no connect() runs;
    by the time the caller calls connect() the sender may have read all of it. That connect() names it, once;
    the next one does not."""
    rig = rigs(basic(0), 2, connect=[0], listen=True)
    j = Joiner(rig.sender.url(1))
    closing(j)
    assert j.join().get("type") == "Welcome"
    j.handshake(answer=False)
    write, hang_up, error = ENDINGS[ending]
    if write():
        j.send_raw(write())
    if hang_up:
        j.close()
    time.sleep(0.5)  # not a bound: the sender has read it before connect() starts, as a rule
    expect_error(ws, error, rig.sender.connect, tm.T, ids="INIT-5", naming=[1],
                 what=f"connect() after receiver 1's handshake ended so: {ending}")
    bounded(rig.sender.connect, tm.T, limit=tm.T + tm.SLACK, what="connect() once the failure was named")
    rig.send(basic(1), workers=[0])
    rig.check([0])


@pytest.mark.req("RDV-5", "SEND-3", "LIFE-2", "CON-1")
def test_one_process_per_id_and_restart_by_the_same_url(ws, rigs, closing):
    rig = rigs(basic(0), 2, listen=True)
    j = Joiner(rig.sender.url(0))
    closing(j)
    detail = _refused(j, "a second process presenting the id of a live receiver")
    assert "live" in detail, f"RDV-5 violated: the refusal {detail!r} does not say the receiver is live"
    rig.workers[0].kill()
    t0 = time.monotonic()
    e = expect_error(ws, "ReceiverDiedError", rig.sender.send, basic(1), timeout=None, ids="SEND-3",
                     what="send after a receiver that joined by URL was killed", limit=tm.REACTION + tm.SLACK)
    assert 0 in e.workers, f"SEND-3 violated: the ReceiverDiedError names {e.workers}, not the killed receiver 0"
    in_time(time.monotonic() - t0 <= tm.REACTION + tm.SLACK, f"SEND-3 violated: the death was named after "
                                                              f"{time.monotonic() - t0:.1f} s")
    rig.model.publish(rig.model.published[0], [1]) if e.version is not None else None
    if e.version is not None:
        rig.model.acked(1, e.version)
    rig.model.gone(0)
    rig.restart(0)  # a new worker process with the same URL
    rig.send(basic(2))
    rig.check()


@pytest.mark.req("RDV-5", "SM-S-5", "LIFE-1")
def test_a_join_takes_the_place_of_one_still_connecting(ws, rigs, closing):
    """The first process for id 1 got its Init and never answered Ready (a crash mid-handshake, a hung
    start): a new process with the same URL takes its place; only a live receiver's id is refused."""
    rig = rigs(basic(0), 2, connect=[0], listen=True)
    rig.send(basic(1), workers=[0])
    first = Joiner(rig.sender.url(1))
    closing(first)
    assert first.join().get("type") == "Welcome", "RDV-3 violated: a join with the URL\'s id and secret got no Welcome"
    first.handshake(answer=False)
    second = Joiner(rig.sender.url(1))
    closing(second)
    answer = second.join()
    assert answer.get("type") == "Welcome" and second.welcome_ok(answer), (
        f"RDV-5 violated: a Join for a receiver that is connecting, not live, was answered {answer}"
    )
    init = second.handshake(answer=False)
    assert init["version"] == 1, f"LIFE-1 violated: the new joiner's Init carries version {init['version']}, not 1"
    in_time(first.closed_by_peer(tm.REACTION + tm.SLACK), "RDV-5 violated: the replaced joiner's channel stayed open")
    second.send(ready(1, init["version"]))
    _connect(ws, rig, 1)
    refused = Joiner(rig.sender.url(1))
    closing(refused)
    detail = _refused(refused, "a third process presenting the id of the now live receiver 1")
    assert "live" in detail, f"RDV-5 violated: the refusal {detail!r} does not say the receiver is live"


@pytest.mark.waits(10)
@pytest.mark.req("RDV-6")
def test_silent_connections_do_not_keep_a_receiver_out(ws, rigs, closing):
    rig = rigs(basic(0), 1, connect=False, listen=True)
    family, addr = socket.AF_UNIX, "\0" + rig.sender.address[len("unix:@"):]
    idle = []
    for _ in range(100):
        s = socket.socket(family, socket.SOCK_STREAM)
        s.connect(addr)
        idle.append(s)
    newest = time.monotonic()
    try:
        # A bound on the joins under way ends an older one, never the newest connection (RDV-6): the last of the
        # hundred gets its Hello and stays open (its own join time, 10 s, is far off; looked at for a second).
        s = idle[-1]
        s.settimeout(tm.SLACK)
        try:
            first = s.recv(4096)
        except TimeoutError:
            raise TooSlow("RDV-6 violated: the newest of 100 silent connections got no Hello") from None
        ended = not first  # an end of file before any Hello
        if first and readable(s, 1.0):  # more within the second: the rest of the Hello, or an end of file
            s.setblocking(False)
            try:
                ended = s.recv(4096, socket.MSG_PEEK) == b""
            except BlockingIOError:
                ended = False
            finally:
                s.setblocking(True)
        if ended and time.monotonic() - newest < tm.REACTION / 2:  # long before any join time ran out
            raise AssertionError("RDV-6 violated: the newest of 100 silent connections was closed at once: a bound on "
                                 "the joins under way ended the new connection instead of an older join")
        occurred("RDV-6.h")
        rig.connect([0])  # a real worker joins with its URL past the hundred silent ones
        rig.send(basic(1))
        rig.check()
        s = idle[-1]
        s.settimeout(tm.REACTION + tm.SLACK)
        data, t0 = b"x", time.monotonic()
        while data:  # Hello, then end of file once its join time ran out (RDV-6)
            data = s.recv(4096)
        in_time(time.monotonic() - t0 <= tm.REACTION + tm.SLACK, "RDV-6 violated: a connection that never sent "
                f"Join was closed after {time.monotonic() - t0:.1f} s")
    except TimeoutError:
        raise TooSlow(f"RDV-6 violated: a connection that never sent Join was kept open {tm.REACTION + tm.SLACK:.0f} s") from None
    finally:
        for s in idle:
            s.close()


@pytest.mark.req("RDV-8", "RDV-1")
def test_a_filesystem_socket_is_private_and_removed(ws):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trainer.sock")
        sender = ws.Sender(basic(0), 1, listen=f"unix:{path}")
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
            assert mode == 0o600, f"RDV-8 violated: the socket {path} has mode {oct(mode)}, not 0o600"
            assert sender.url(0).startswith(f"unix:{path}?"), f"RDV-1 violated: {sender.url(0)}"
            try:
                ws.Sender(basic(0), 1, listen=f"unix:{path}").close()
            except Exception:  # noqa: BLE001 - any error: the path is taken
                pass
            else:
                raise AssertionError(f"RDV-8 violated: a second sender listened on the taken path {path}")
            assert os.path.exists(path), "RDV-8 violated: a second sender removed the first one's socket"
        finally:
            sender.close()
        assert not os.path.exists(path), "RDV-8 violated: close() left the socket file behind"


@pytest.mark.req("RDV-6", "INIT-5")
@pytest.mark.parametrize("form", ["unix:PATH", "unix:@NAME", pytest.param("tcp", marks=pytest.mark.needs("network"))])
def test_a_join_where_nobody_listens_yet_is_tried_until_its_timeout(ws, form, tmp_path):
    """Nobody listens at the URL's address (a socket file not there yet, an abstract name nobody bound, a
    closed TCP port): connect(timeout) keeps trying and raises SyncTimeoutError once its timeout has
    passed, neither at once nor late (RDV-6, INIT-5)."""
    if form == "tcp":
        with socket.socket() as s:  # a port that was free a moment ago: nobody listens there
            s.bind(("127.0.0.1", 0))
            address = f"tcp://127.0.0.1:{s.getsockname()[1]}"
    elif form == "unix:PATH":
        address = f"unix:{tmp_path / 'not-yet.sock'}"
    else:
        address = f"unix:@conformance-nobody-{os.getpid()}-{time.monotonic_ns()}"
    receiver = ws.Receiver(f"{address}?receiver=0&secret={'ab' * 32}")
    try:
        t0 = time.monotonic()
        expect_error(ws, "SyncTimeoutError", receiver.connect, tm.TIMED, ids="RDV-6",
                     what=f"receiver.connect({tm.TIMED}) to {form} where nobody listens", limit=tm.TIMED + tm.SLACK)
        elapsed = time.monotonic() - t0
        assert elapsed >= tm.TIMED - tm.EARLY, (
            f"RDV-6 violated: connect({tm.TIMED}) to {form} where nobody listens gave up after {elapsed:.2f} s; "
            "it must try again until its timeout"
        )
    finally:
        receiver.close()


@pytest.mark.req("API-1", "RDV-5", "LIFE-1")
def test_handles_keep_working_beside_urls(ws, rigs):
    """A listening sender gives out handles too (10.1): receiver 0 joins by its URL, receiver 1 by
    sender.handle(1), and both are served, the late one at the latest version."""
    rig = rigs(basic(0), 2, connect=[0], listen=True)
    rig.send(basic(1), workers=[0])
    try:
        handle = rig.sender.handle(1)
    except Exception as e:  # noqa: BLE001
        raise AssertionError(f"API-1 violated: handle(1) of a listening sender raised {type(e).__name__}: {e}") from None
    rig.connect([1], handles={1: handle})
    rig.send(basic(2))
    rig.check()


GOOD_SECRET = "ab" * 32
MALFORMED_URLS = {
    "port out of range": f"tcp://127.0.0.1:70000?receiver=0&secret={GOOD_SECRET}",
    "port 0": f"tcp://127.0.0.1:0?receiver=0&secret={GOOD_SECRET}",
    "port not decimal": f"tcp://127.0.0.1:+80?receiver=0&secret={GOOD_SECRET}",
    "IPv6 without brackets": f"tcp://::1:5000?receiver=0&secret={GOOD_SECRET}",
    "host with a space": f"tcp://bad host:5000?receiver=0&secret={GOOD_SECRET}",
    "id with a sign": f"unix:@ws-x?receiver=+1&secret={GOOD_SECRET}",
    "id with spaces": f"unix:@ws-x?receiver=%201&secret={GOOD_SECRET}",
    "id with leading zeros": f"unix:@ws-x?receiver=007&secret={GOOD_SECRET}",
    "id past 2**63": f"unix:@ws-x?receiver={2**63}&secret={GOOD_SECRET}",
    "non-ASCII digits": f"unix:@ws-x?receiver=\u0663&secret={GOOD_SECRET}",
    "secret with a space": f"unix:@ws-x?receiver=0&secret={'ab' * 31}%20ab",
    "secret too short": f"unix:@ws-x?receiver=0&secret={'ab' * 31}",
    "secret twice": f"unix:@ws-x?receiver=0&secret={GOOD_SECRET}&secret={GOOD_SECRET}",
    "no id": f"unix:@ws-x?secret={GOOD_SECRET}",
    "path longer than a socket's": f"unix:/{'p' * 120}?receiver=0&secret={GOOD_SECRET}",
    "abstract name longer than a socket's": f"unix:@{'n' * 120}?receiver=0&secret={GOOD_SECRET}",
    "NUL in a name": f"unix:@ws%00x?receiver=0&secret={GOOD_SECRET}",
    "no address": f"?receiver=0&secret={GOOD_SECRET}",
}


@pytest.mark.req("RDV-1")
@pytest.mark.parametrize("case", sorted(MALFORMED_URLS))
def test_a_malformed_url_is_refused_at_once(ws, case):
    """Receiver(url) raises ValueError for a URL outside RDV-1's grammar, at once, before any I/O."""
    url = MALFORMED_URLS[case]
    t0 = time.monotonic()
    try:
        r = ws.Receiver(url)
    except ValueError:
        in_time(time.monotonic() - t0 <= tm.SLACK, f"RDV-1 violated: refusing a URL with {case} took too long")
        return
    except Exception as e:  # noqa: BLE001
        raise AssertionError(f"RDV-1 violated: Receiver(url) with {case} raised {type(e).__name__}: {e}, "
                             "not ValueError") from None
    r.close()
    raise AssertionError(f"RDV-1 violated: Receiver(url) accepted a URL with {case}: {url[:100]!r}")


@pytest.mark.req("RDV-9", "RDV-6")
def test_a_large_frame_before_any_proof_is_not_read(ws, rigs, closing):
    """A joiner that knows no secret sends a 16 KiB frame (a Join padded with an unknown field): the sender
    reads no frame over 8 KiB before the proof, so it closes that connection and answers nothing; the
    receivers that joined before are unaffected."""
    rig = rigs(basic(0), 2, connect=[0], listen=True)
    squatter = Joiner(rig.sender.url(1), secret=bytes(32))
    closing(squatter)
    join = {"type": "Join", "receiver": 1, "nonce": bytes(32), "proof": bytes(32)}
    squatter.send_raw(frame(padded(join, 16 * 1024)))
    rig.send(basic(1), workers=[0])  # the sender serves its channels meanwhile
    in_time(squatter.closed_by_peer(tm.REACTION + tm.SLACK),
            "RDV-9 violated: the sender kept a connection open after a 16 KiB frame before any proof")
    answered = bytes(squatter._buf)  # what came after Hello (read and kept by closed_by_peer)
    assert not answered, (f"RDV-9 violated: the sender read a 16 KiB frame before any proof and answered it: "
                          f"{answered[:40]!r}")
    rig.check()



def _live_joiners(ws, rig, ids, closing) -> dict[int, Joiner]:
    """Scripted receivers `ids` joined by URL, handed their Init and live (connect() returned)."""
    joiners = {}
    for k in ids:
        j = joiners[k] = Joiner(rig.sender.url(k))
        closing(j)
        assert j.join().get("type") == "Welcome", "RDV-3 violated: a join with the URL's id and secret got no Welcome"
        j.send(ready(k, j.handshake(answer=False)["version"]))
    try:
        bounded(rig.sender.connect, tm.T, workers=list(ids), limit=tm.T + tm.SLACK, what=f"connect(workers={ids})")
    except (HarnessError, ws.SyncTimeoutError) as e:
        raise TooSlow(f"RDV-5 violated: the handshake of joiners that answered Ready did not complete: {e}") from None
    return joiners


def _answer_receive(j: Joiner, k: int, ids: str) -> bool:
    """Scripted receiver k acks the next Receive; False when the sender closed its channel instead."""
    try:
        msg, fds = j.recv_past_heartbeats(tm.T)
        assert msg.get("type") == "Receive", f"{ids} violated: receiver {k} got {msg!r:.120}, not Receive"
        j.take_slots(msg["new_slots"], fds)
        j.send(ack(k, msg["version"]))
    except (PeerClosed, ConnectionResetError, BrokenPipeError):
        return False
    except HarnessError as e:
        raise TooSlow(f"{ids} violated: no Receive reached scripted receiver {k}: {e}") from None
    return True


def _cut_off(ws, rig, j: Joiner, k: int, weights) -> bool:
    """Whether the sender cut scripted receiver k off as a violation: a send to k alone, answered if it comes."""
    try:
        f = rig.sender.send_async(weights, workers=[k], timeout=tm.T)
    except ws.ReceiverError as e:  # known failed already: refused before publishing (SEND-4)
        return (getattr(e, "causes", None) or {}).get(k) == "violation"
    rig.model.publish(describe(weights), [k])
    _answer_receive(j, k, "SEC-8")
    try:
        bounded(f.wait, tm.T, limit=tm.T + tm.SLACK, what=f"wait() on a send to scripted receiver {k}")
    except ws.ReceiverError as e:
        return (getattr(e, "causes", None) or {}).get(k) == "violation"
    except (HarnessError, ws.SyncTimeoutError) as e:
        raise TooSlow(f"SEC-8 violated: a send to scripted receiver {k}, which answered it, did not complete: {e}") from None
    return False


def _beats(n: int) -> bytes:
    """n Heartbeats in one write: for the sender, n at once."""
    return frame(pack(HEARTBEAT)) * n


@pytest.mark.req("SEC-8", "MSG-4")
def test_the_heartbeat_budget_is_64_at_once_refilled_at_64_a_second(ws, rigs, closing):
    """Three scripted receivers, live. Receiver 0 sends 64 Heartbeats at once, and 64 at once again once the sender
    has read the first (a send it answered came after them) and 1.5 s more have passed: within a bucket of 64
    refilled at 64 a second, so it must not be cut off (SEC-8). Receiver 2 sends 200 at once: a side MAY cut it off.
    Receiver 1 sends one Heartbeat, then, 1.5 s after the sender read it, 200 at once: a sender that cut receiver 2
    off must cut receiver 1 off too, as a bucket holds 64 at most however long its peer was quiet (a budget
    refilled from the first Heartbeat, not the last, never cuts it off)."""
    rig = rigs(basic(0), 3, connect=False, listen=True)
    a, b, c = 0, 1, 2
    j = _live_joiners(ws, rig, [a, b, c], closing)
    j[a].send_raw(_beats(64))
    j[b].send_raw(_beats(1))
    j[c].send_raw(_beats(200))
    # 65 Heartbeats from two peers, each within its own budget, beside a third's 200; a shared bucket shows while the
    # sender reads them within a 64th of a second of each other, as a sender reading them in one call does
    occurred("SEC-8.e")
    try:  # answered after the Heartbeats: the sender has read them then
        f = rig.send_async(basic(1), workers=[a, b])
    except AssertionError as err:  # the rig's SEND-5: a send to healthy receivers raised
        e = err.__cause__
        assert not (isinstance(e, (ws.ReceiverError, ws.ReceiverDiedError)) and set(getattr(e, "workers", ())) & {a, b}), (
            f"SEC-8 violated: a send to receivers 0 and 1, which sent 64 Heartbeats at once and one, found "
            f"{sorted(e.workers)} cut off ({e}): each peer has a budget of its own, and each stayed within it")
        raise
    for k in (a, b):
        assert _answer_receive(j[k], k, "SEC-8"), (f"SEC-8 violated: the sender closed receiver {k}'s channel, which "
                                                   f"sent {64 if k == a else 1} Heartbeat(s) at once")
    waited(f, "SEC-8", what="wait() on a send to receivers that sent 64 Heartbeats at once, and one")
    time.sleep(1.5)  # not a bound: the bucket refills (64 a second); only a budget refilled past 64 gains by waiting
    j[a].send_raw(_beats(64))
    j[b].send_raw(_beats(200))
    cut = {k: _cut_off(ws, rig, j[k], k, basic(1 + k)) for k in (a, b, c)}
    assert not cut[a], ("SEC-8 violated: receiver 0 sent 64 Heartbeats at once and, 1.5 s after the sender read them, "
                        "64 more: within a bucket of 64 refilled at 64 a second, yet it was cut off as a violation")
    assert not (cut[c] and not cut[b]), (
        "SEC-8 violated: the sender cut receiver 2 off for 200 Heartbeats at once, but not receiver 1, which sent 200 "
        "at once 1.5 s after a single one: the budget is a bucket of 64, never more, however long a peer was quiet")


def _connecting(receiver) -> tuple[dict, threading.Thread]:
    """receiver.connect(T) in a thread of this process; its outcome lands in the dict ("value" or "error")."""
    out: dict = {}

    def run():
        try:
            out["value"] = receiver.connect(tm.T)
        except BaseException as e:  # noqa: BLE001 - judged by the test
            out["error"] = e

    t = threading.Thread(target=run, daemon=True, name="conformance-connect")
    t.start()
    return out, t


#: A scripted listener's answer to a receiver joining by URL, and the error connect() must raise (RDV-4, RDV-7, RDV-9).
JOIN_ENDINGS = {
    "Refuse": ({"welcome": "refuse"}, "RefusedError", "RDV-4"),
    "a Welcome with a wrong proof": ({"welcome": "bad"}, "RemoteProtocolError", "RDV-7"),
    "a Hello of 16 KiB": ({"hello_size": 16 * 1024}, "RemoteProtocolError", "RDV-9"),
}


@pytest.mark.req("RDV-4", "RDV-7", "RDV-9", "INIT-4")
@pytest.mark.parametrize("ending", sorted(JOIN_ENDINGS))
def test_a_join_that_fails_raises_its_own_error_and_a_refused_receiver_may_join_again(ws, ending):
    """The binding's Receiver joins a scripted listener that answers its join so: connect() raises RefusedError for
    Refuse (RDV-4), RemoteProtocolError for a wrong Welcome proof (RDV-7) or a Hello over 8 KiB (RDV-9). A refused
    receiver stays new: its next connect() joins the listener, which now welcomes it, and returns Init's version."""
    kwargs, cls, rule = JOIN_ENDINGS[ending]
    listener = ScriptedSender(**kwargs)
    receiver = ws.Receiver(listener.url(0))
    try:
        out, t = _connecting(receiver)
        session = listener.accept(tm.BOUND)
        t.join(tm.T + tm.SLACK)
        if session is not None:
            session.close()
        in_time(not t.is_alive(), f"{rule} violated: connect() did not end after {ending}")
        err = out.get("error")
        assert isinstance(err, getattr(ws, cls)), (
            f"{rule} violated: after {ending} connect() "
            f"{'returned ' + repr(out.get('value')) if err is None else 'raised ' + type(err).__name__ + ': ' + str(err)}"
            f", not {cls}")
        if ending != "Refuse":
            return
        listener.welcome = "good"  # the listener takes the join now (RDV-4: a refused receiver stays new)
        out, t = _connecting(receiver)
        end = time.monotonic() + tm.BOUND
        while not readable(listener.sock, 0.05):  # the receiver connects again, unless its connect() gave up
            assert t.is_alive(), f"RDV-4 violated: a refused receiver's next connect() did not join again: {out}"
            if time.monotonic() > end:
                raise TooSlow(f"RDV-4 violated: a refused receiver's next connect() did not connect in {tm.BOUND:.0f} s")
        session = listener.accept(tm.BOUND)
        assert session is not None, "the scripted listener's join ended"
        manifest, data, nbytes = layout([("w", "float32", (4,), bytes(range(16)))])
        session.send(init(0, manifest, [slotinfo(0, nbytes)], 3, 0), fds=[listener.slot(0, data, nbytes)])
        answer = session.recv_past_heartbeats(tm.T)[0]
        assert (answer.get("type"), answer.get("status"), answer.get("version")) == ("Ready", "ok", 3), (
            f"RDV-4 violated: a receiver refused once, joining again, answered its Init with {answer!r:.200}")
        t.join(tm.T + tm.SLACK)
        in_time(not t.is_alive(), "RDV-4 violated: connect() after a refusal did not return once Ready went out")
        assert out.get("value") == 3, f"RDV-4 violated: connect() after a refusal gave {out}, not version 3"
        session.send({"type": "Stop"})
        session.close()
    finally:
        receiver.close()
        listener.close()


def _listens_at(address: str) -> None:
    """The socket of `address` (a unix: path or @name) is bound where its text decoded once puts it (RDV-1)."""
    if address.startswith("unix:@"):
        name = "@" + unquote(address[len("unix:@"):])
        if not os.path.exists("/proc/net/unix"):
            return
        with open("/proc/net/unix") as f:
            bound = {fields[-1] for fields in map(str.split, f) if len(fields) > 7}
        assert name in bound, f"RDV-1 violated: listen={address!r} bound no abstract socket {name!r}"
    else:
        path = unquote(address[len("unix:"):])
        assert os.path.exists(path), f"RDV-1 violated: listen={address!r} bound no socket at {path!r}"


def _address(form: str, tmp: str) -> tuple[str, str]:
    """(the address a sender listens on, how its receiver's URL is written) for each form of RDV-1 tried."""
    tag = f"{os.getpid()}-{time.monotonic_ns()}"
    if form == "an abstract name holding % and ?":
        return f"unix:@%40conformance-%25x%2541%3Fy-{tag}", "as given"  # the name "@conformance-%x%41?y-..."
    if form == "a path holding % and ?":
        return f"unix:{tmp}/s%25%3F%2541.sock", "as given"  # "s%?%41.sock": a '%' and two hex digits stay so
    if form == "a path of 107 bytes":
        return f"unix:{tmp}/" + "p" * (107 - len(tmp) - 1), "as given"
    if form == "an upper-case secret and another parameter":
        return f"unix:@conformance-upper-{tag}", "upper-case secret, an extra parameter"
    return "tcp://localhost:0", "as given"  # a DNS name for a host


@pytest.mark.req("RDV-1")
@pytest.mark.parametrize("form", ["an abstract name holding % and ?", "a path holding % and ?", "a path of 107 bytes",
                                  "an upper-case secret and another parameter",
                                  pytest.param("a DNS host name", marks=pytest.mark.needs("network"))])
def test_urls_at_the_edges_of_the_grammar_join(ws, form):
    """A sender listens on each address at an edge of RDV-1's grammar: '%' and '?' in a name or path, written %25 and
    %3F in listen and in the URL alike; a path of 107 bytes; a DNS host name. Its url(0) starts with the address
    as given (the chosen port in place of 0), and the binding's Receiver joins with it: as written, or with its
    secret in upper case and a parameter it does not know (ignored)."""
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        address, written = _address(form, tmp)
        sender = ws.Sender(basic(0), 1, listen=address)
        receiver = None
        try:
            if "%25" in address:  # decoded once: a sender and a receiver that both decoded twice would meet elsewhere
                _listens_at(address)
            url = sender.url(0)
            head, _, query = url.partition("?")
            if address.endswith(":0"):
                assert head.rpartition(":")[0] == address.rpartition(":")[0], f"RDV-1 violated: url(0) = {url!r}"
            else:  # the same socket, whatever else it escapes: '@' may be written raw or as %40
                kind = "unix:@" if address.startswith("unix:@") else "unix:"
                assert head.startswith(kind) and unquote(head[len(kind):]) == unquote(address[len(kind):]), (
                    f"RDV-1 violated: listening on {address!r} gave url(0) = {url!r}")
            if written != "as given":
                secret = dict(kv.split("=", 1) for kv in query.split("&"))["secret"]
                url = f"{head}?x-conformance=1&receiver=0&secret={secret.upper()}&x-other=%3F"
            try:
                receiver = ws.Receiver(url)
            except ValueError as e:
                raise AssertionError(f"RDV-1 violated: Receiver({url!r}) ({form}) raised ValueError: {e}") from None
            out, t = _connecting(receiver)
            try:
                bounded(sender.connect, tm.T, limit=tm.T + tm.SLACK, what=f"sender.connect() ({form})")
            except (HarnessError, ws.SyncTimeoutError) as e:
                t.join(tm.T + tm.SLACK)
                raise AssertionError(f"RDV-1 violated: the receiver given {url!r} ({form}) did not join: {e}; its "
                                     f"connect() gave {out}") from None
            t.join(tm.T + tm.SLACK)
            assert out.get("value") == 0, f"RDV-1 violated: the receiver given {url!r} ({form}) connected so: {out}"
        finally:
            if receiver is not None:
                receiver.close()
            sender.close()


@pytest.mark.req("RDV-1")
def test_urls_at_the_edges_of_the_grammar_are_accepted(ws):
    """Receiver(url) takes, without I/O, the URLs at RDV-1's edges that need no listener to be read: id 0 and
    the largest id, port 65535, an IPv6 host in [], a host name of several labels."""
    secret = "ab" * 32
    for url in (f"tcp://[::1]:65535?receiver=0&secret={secret}",
                f"tcp://trainer-0.cluster.example:1?receiver={2**63 - 1}&secret={secret}",
                f"tcp://10.0.0.5:41000?receiver=0&secret={secret.upper()}"):
        try:
            r = ws.Receiver(url)
        except ValueError as e:
            raise AssertionError(f"RDV-1 violated: Receiver({url!r}) raised ValueError: {e}") from None
        r.close()


@pytest.mark.req("SEC-2", "LIFE-4")
def test_close_waits_for_no_frame_a_receiver_left_half_written(ws, rigs, closing):
    """Scripted receiver 1, live, writes the length prefix and part of a frame, and no more. close() returns at once
    (SEC-2: a partial frame delays no close()), well before the 10 s WIRE-7 gives the frame."""
    rig = rigs(basic(0), 2, connect=[0], listen=True)
    j = _live_joiners(ws, rig, [1], closing)[1]
    rig.send(basic(1), workers=[0])
    rig.check([0])
    j.send_raw(frame(pack(ack(1, 0)))[:9])  # 4 length bytes and 5 of the payload
    time.sleep(0.1)  # not a bound: the bytes have reached the sender's socket
    t0 = time.monotonic()
    try:
        bounded(rig.sender.close, limit=tm.REACTION + tm.SLACK, what="close() with a frame half read")
    except HarnessError as e:
        raise TooSlow(f"SEC-2 violated: {e}") from None
    elapsed = time.monotonic() - t0
    assert elapsed < 0.7 * tm.FRAME_BOUND, (
        f"SEC-2 violated: close() took {elapsed:.1f} s with receiver 1's frame half written: it waited for the frame "
        f"(WIRE-7 ends it {tm.FRAME_BOUND:g} s after its first byte)")


@pytest.mark.req("RDV-8")
@pytest.mark.parametrize("what", ["a socket nobody listens on", "a regular file"])
def test_a_path_that_exists_is_not_taken_over(ws, what):
    """A stale socket file (its listener gone without removing it) or a regular file at PATH: Sender(listen=
    "unix:PATH") refuses the path, whatever the error, and leaves the file there as it was (RDV-8)."""
    with tempfile.TemporaryDirectory(dir="/tmp") as d:
        path = os.path.join(d, "trainer.sock")
        if what == "a regular file":
            with open(path, "wb") as f:
                f.write(b"not a socket")
        else:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(path)  # bound, never listening, then closed: the file stays
            s.close()
        before = os.stat(path)
        try:
            ws.Sender(basic(0), 1, listen=f"unix:{path}").close()
        except Exception:  # noqa: BLE001 - any error: the path is taken
            pass
        else:
            raise AssertionError(f"RDV-8 violated: a sender listened on {path}, which held {what}")
        after = os.stat(path) if os.path.exists(path) else None
        assert after is not None and (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode), (
            f"RDV-8 violated: a sender refused {path} but removed or replaced {what} there")


@pytest.mark.req("RDV-8", "RDV-1")
@pytest.mark.parametrize("form", ["unix:@NAME", pytest.param("tcp", marks=pytest.mark.needs("network"))])
def test_a_closed_senders_name_or_port_can_be_listened_on_again(ws, form):
    """A sender listens on an abstract name, or a TCP port the system chose, takes a join there, and closes; a new
    sender then listens on the very same address (RDV-8: the system releases them with the listening socket)."""
    address = f"unix:@conformance-again-{os.getpid()}-{time.monotonic_ns()}" if form != "tcp" else "tcp://127.0.0.1:0"
    first = ws.Sender(basic(0), 1, listen=address)
    try:
        address = first.url(0).partition("?")[0]  # the port chosen in place of 0
        j = Joiner(first.url(0))
        try:
            assert j.join().get("type") == "Welcome", "RDV-3 violated: a join with the URL's id and secret got no Welcome"
        finally:
            j.close()
    finally:
        first.close()
    try:
        second = ws.Sender(basic(0), 1, listen=address)
    except Exception as e:  # noqa: BLE001
        raise AssertionError(f"RDV-8 violated: {address}, where a sender listened and closed, could not be listened on "
                             f"again: {type(e).__name__}: {e}") from None
    second.close()


#: What a joiner sends, after Hello, in place of one Join (RDV-3: legal only in the join's order, before Init).
OUT_OF_ORDER = {
    "a Hello of its own": lambda j: [{"type": "Hello", "protocol": "1.1", "nonce": bytes(32)}],
    "a Ready before any Welcome": lambda j: [ready(j.rid, 0)],
    "a Welcome": lambda j: [{"type": "Welcome", "proof": bytes(32)}],
    "a second Join after its first": lambda j: [j.join_message(), j.join_message()],
}


@pytest.mark.req("RDV-3")
@pytest.mark.parametrize("case", sorted(OUT_OF_ORDER))
def test_a_join_message_out_of_order_ends_that_connection(ws, rigs, closing, case):
    """A joiner with receiver 0's URL sends, after Hello, a join message out of order: the sender takes it as a
    violation and closes that connection at once (not at the join's 10 s bound), having sent no Init; a second
    Join, which comes after the first was welcomed, cuts the new channel off too. The receiver can still join."""
    rig = rigs(basic(0), 1, connect=False, listen=True)
    j = Joiner(rig.sender.url(0))
    closing(j)
    j.send_raw(b"".join(frame(pack(m)) for m in OUT_OF_ORDER[case](j)))
    closed = j.closed_by_peer(min(tm.SLACK, 0.5 * tm.FRAME_BOUND))
    came = [msgpack_type(m) for m in j.frames_in]
    in_time(closed, f"RDV-3 violated: after {case} the sender kept the connection open (it got {came})")
    if case != "a second Join after its first":
        assert "Welcome" not in came and "Init" not in came, f"RDV-3 violated: after {case} the sender sent {came}"
    rig.connect([0])
    rig.send(basic(1))
    rig.check()


def msgpack_type(payload: bytes) -> str:
    """The type of a payload the suite read (the peers' own reader has checked it)."""
    return msgpack.unpackb(payload, raw=False, strict_map_key=False).get("type", "?")


def _uncarriable_named() -> dict[str, tuple[dict, str]]:
    """Weights the wire cannot carry, each with the text the refusal must hold to name the entry (SEC-7)."""
    import torch

    cases = {
        "a name that is not a string": ({12345: torch.zeros(2)}, "12345"),
        "a lone surrogate in a name": ({"conformance-surrogate-\ud800": torch.zeros(2)}, "conformance-surrogate-"),
        "a name of 4,097 bytes": ({"conformance-long-" + "x" * 4080: torch.zeros(2)}, "conformance-long-"),
        "65 dimensions": ({"conformance-65-dims": torch.zeros([1] * 65)}, "conformance-65-dims"),
    }
    if hasattr(torch, "float8_e4m3fn"):
        cases["a dtype Table 12-2 does not define"] = ({"conformance-float8": torch.zeros(2, dtype=torch.float8_e4m3fn)},
                                                       "conformance-float8")
    return cases


@pytest.mark.req("SEC-7", "WIRE-3", "WIRE-8")
@pytest.mark.needs("wire")
def test_weights_at_the_wire_bounds_are_carried_and_past_them_refused_by_name(ws, rigs, closing):
    """Sender() refuses weights the wire cannot carry with ValueError naming the entry: a name that is not a string,
    a lone surrogate, a name of 4,097 bytes, a float8 dtype, 65 dimensions; and a manifest whose Init would pass
    the 64 MiB frame bound (16,500 names of 4,096 bytes). Weights exactly at the bounds, a name of 4,096 bytes and
    64 dimensions, are taken: a joiner's Init carries both, and the slot holds their bytes (SEC-7)."""
    import torch

    for case, (weights, name) in _uncarriable_named().items():
        e = refused(ws.Sender, weights, 1, ids="SEC-7", what=f"Sender() with {case}")
        assert name in str(e), f"SEC-7 violated: the ValueError for {case} does not name the entry {name!r}: {e}"
    huge = {f"{i:05d}" + "x" * 4091: torch.zeros(0) for i in range(16_500)}  # an Init of more than 64 MiB
    refused(ws.Sender, huge, 1, ids="SEC-7", what="Sender() with 16,500 names of 4,096 bytes (an Init over 64 MiB)")
    del huge
    long_name = "é" * 2047 + "xx"  # 4,096 bytes of UTF-8
    edge = {long_name: torch.arange(3, dtype=torch.int32), "d64": torch.arange(2, dtype=torch.float32).reshape([2] + [1] * 63)}
    try:
        ws.Sender(edge, 1).close()
    except ValueError as e:
        raise AssertionError(f"SEC-7 violated: Sender() refused a name of 4,096 bytes and 64 dimensions: {e}") from None
    rig = rigs(edge, 1, connect=False, listen=True)
    j = Joiner(rig.sender.url(0))
    closing(j)
    assert j.join().get("type") == "Welcome", "RDV-3 violated: a join with the URL's id and secret got no Welcome"
    init = j.handshake(answer=False)
    entries = {e["name"]: e for e in init["manifest"]}
    assert set(entries) == {long_name, "d64"}, f"SEC-7 violated: Init's manifest names {sorted(entries)!r:.200}"
    assert entries["d64"]["shape"] == [2] + [1] * 63, f"SEC-7 violated: 64 dimensions arrived as {entries['d64']['shape']}"
    fd = j.slot_fds.get(init["slot"])
    assert fd is not None, "WIRE-4 violated: no handle came for Init's slot"
    for name, tensor in edge.items():
        raw = tensor.contiguous().view(torch.uint8).numpy().tobytes()
        got = os.pread(fd, len(raw), entries[name]["offset"])
        assert got == raw, f"SEC-7 violated: the slot holds other bytes than {name[:20]!r}... at its offset"


@pytest.mark.req("RDV-5", "SM-S-5")
@pytest.mark.needs("wire")  # the handle given out goes to a scripted receiver, which speaks the wire on it
def test_a_join_closes_the_handle_given_out_for_its_id(ws, rigs, closing):
    """handle(1) is given out (here, to a scripted receiver that never answers), then a process joins with url(1):
    the join takes receiver 1's place, as a new handle does, and the channel of the handle given out is closed
    (RDV-5); the joined receiver is served."""
    rig = rigs(basic(0), 2, connect=[0], listen=True)
    old = ScriptedReceiver(rig.sender.handle(1), 1)
    closing(old)
    j = Joiner(rig.sender.url(1))
    closing(j)
    answer = j.join()
    assert answer.get("type") == "Welcome", f"RDV-5 violated: a join for a receiver given out as a handle got {answer}"
    in_time(old.closed_by_peer(tm.REACTION + tm.SLACK),
            "RDV-5 violated: the channel of handle(1) stayed open after a join by url(1) took its place")
    init = j.handshake(answer=False)
    j.send(ready(1, init["version"]))
    _connect(ws, rig, 1)
    f = rig.send_async(basic(1))
    got = _next_receive(j, "RDV-5")
    j.send(ack(1, got["version"]))
    waited(f, "RDV-5")
    rig.check([0])


@pytest.mark.req("SEC-5", "SEND-3")
@pytest.mark.needs("pull")
def test_a_receiver_killed_with_a_send_pending_leaves_the_others_as_they_were(ws, rigs):
    """Three receivers joined by URL; receiver 2 pulls and has not polled when a send to all is pending, and its
    process is killed: the send names receiver 2 died, and only it (SEND-3); receivers 0 and 1 hold that version,
    and the next sends to them proceed as if receiver 2 had never been (SEC-5)."""
    rig = rigs(basic(0), 3, modes=["push", "push", "pull"], listen=True)
    f = rig.send_async(basic(1))
    rig.workers[2].kill()
    e = expect_error(ws, "ReceiverDiedError", f.wait, tm.T, ids="SEND-3", naming=[2],
                     what="wait() on a send pending on a receiver that was killed", limit=tm.REACTION + tm.SLACK)
    assert e.version == f.version, f"SEND-3 violated: the error's version is {e.version}, not the send's {f.version}"
    rig.model.gone(2)
    for i in (0, 1):
        rig.model.acked(i, f.version)
    rig.check([0, 1])
    for step in (2, 3):
        try:
            rig.send(basic(step), workers=[0, 1])
        except AssertionError as err:
            raise AssertionError(f"SEC-5 violated: after receiver 2 was killed, a send to receivers 0 and 1 failed: "
                                 f"{err}") from None
    rig.check([0, 1])


@pytest.mark.req("RDV-9", "WIRE-6")
def test_a_join_of_exactly_the_bound_before_proof_is_read(ws, rigs, closing):
    """A Join padded with an unknown field to a payload of exactly 8,192 bytes is legal before any proof (RDV-9:
    only a longer frame is refused): a right one is welcomed and handed its Init."""
    rig = rigs(basic(0), 1, connect=False, listen=True)
    j = Joiner(rig.sender.url(0))
    closing(j)
    j.send_raw(frame(padded(j.join_message(), 8192)))
    try:
        answer = j.answer_before_close(tm.T)
    except HarnessError as e:
        raise TooSlow(f"RDV-9 violated: no answer to a Join of exactly 8,192 bytes: {e}") from None
    assert answer is not None and answer.get("type") == "Welcome" and j.welcome_ok(answer), (
        f"RDV-9 violated: a right Join of exactly 8,192 bytes was answered {answer!r:.200} (None: the connection closed)")
    assert j.handshake(answer=False)["receiver"] == 0, "RDV-5 violated: the welcomed joiner's Init is not receiver 0's"


def _listening(ws, n: int, closing):
    """A sender of basic(0) for n receivers, listening on an abstract name of its own (no worker processes)."""
    sender = ws.Sender(basic(0), n, listen=f"unix:@conformance-scripted-{os.getpid()}-{time.monotonic_ns()}")
    closing(sender)
    return sender


def _connect_scripted(ws, sender, i: int) -> None:
    try:
        bounded(sender.connect, tm.T, workers=[i], limit=tm.T + tm.SLACK, what=f"connect(workers=[{i}])")
    except (HarnessError, ws.SyncTimeoutError) as e:
        raise TooSlow(f"RDV-5 violated: the handshake of a joiner that answered Ready did not complete: {e}") from None


def _live_joiners_of(ws, sender, ids, closing) -> dict[int, Joiner]:
    """Scripted receivers `ids` joined to `sender` by URL, welcomed with the right proof, handed Init and live."""
    joiners = {}
    for k in ids:
        j = joiners[k] = Joiner(sender.url(k))
        closing(j)
        answer = j.join()
        assert answer.get("type") == "Welcome" and j.welcome_ok(answer), f"RDV-5 violated: a valid Join got {answer}"
        j.send(ready(k, j.handshake(answer=False)["version"]))
        _connect_scripted(ws, sender, k)
    return joiners


@pytest.mark.req("RDV-3", "RDV-2", "RDV-4", "RDV-5")
def test_what_the_sender_sends_to_joiners_holds_no_secret(ws, closing):
    """Every byte a listening sender sends to joiners is searched for any receiver's secret (raw, or as hex in
    either case) and for every HMAC a join could compute under any receiver's secret, with each joiner's nonces,
    for every id presented (RDV-3: the sender never sends the secret, nor anything derived from another
    receiver's secret). The joiners: receiver 0 with its URL (welcomed, handed Init, then a Receive), a random
    secret as receiver 1, receiver 0's secret as receiver 1, receiver 1's secret as id 7, and receiver 2's secret
    as the live receiver 0. Only the Welcome proof of the welcomed joiner, under its own secret, may appear."""
    from .peers import JOIN_LABEL, WELCOME_LABEL, parse_url, proof

    sender = _listening(ws, 3, closing)
    urls = [sender.url(i) for i in range(3)]
    secret = [parse_url(u)[3] for u in urls]
    welcomed = _live_joiners_of(ws, sender, [0], closing)[0]
    f = sender.send_async(basic(1), workers=[0], timeout=tm.T)
    got = _next_receive(welcomed, "RDV-5")
    welcomed.send(ack(0, got["version"]))
    waited(f, "SEND-1")
    joiners = [welcomed]
    for rid, presented in ((1, os.urandom(32)), (1, secret[0]), (7, secret[1]), (0, secret[2])):
        j = Joiner(urls[0], rid=rid, secret=presented)
        closing(j)
        answer = j.join()
        assert answer.get("type") == "Refuse", f"RDV-4 violated: a join as {rid} with a wrong secret got {answer}"
        j.closed_by_peer(tm.SLACK)  # whatever else comes before the end of the connection is searched too
        joiners.append(j)
    ids = (0, 1, 2, 7)
    for n, j in enumerate(joiners):
        sent = b"".join(j.frames_in) + bytes(j._buf)
        forbidden = {}
        for k in range(3):
            forbidden[f"receiver {k}'s secret"] = secret[k]
            for rid in ids:
                for label in (JOIN_LABEL, WELCOME_LABEL):
                    if n == 0 and k == 0 and rid == 0 and label == WELCOME_LABEL:
                        continue  # the Welcome proof the welcomed joiner is owed
                    forbidden[f"HMAC(receiver {k}'s secret, {label.decode()} | nonces | id {rid})"] = proof(
                        secret[k], label, j.hello["nonce"], j.nonce, rid)
        for what, raw in forbidden.items():
            for form in (raw, raw.hex().encode(), raw.hex().upper().encode()):
                assert form not in sent, (
                    f"RDV-3 violated: the sender sent {what} to joiner {n} (presenting id {j.rid}); it sends no secret "
                    f"nor anything derived from another receiver's secret")


def _join_by_hand(listener: ScriptedSender, bound: float):
    """The scripted listener's side of a join up to the Join it reads: (the session, the Hello's nonce, the Join)."""
    from .peers import MAX_TO_SENDER, WireSocket

    if not readable(listener.sock, bound):
        raise HarnessError(f"no receiver connected within {bound:.1f} s")
    conn, _ = listener.sock.accept()
    s = WireSocket(conn, MAX_TO_SENDER)
    nonce = os.urandom(32)
    s.send({"type": "Hello", "protocol": "1.1", "nonce": nonce})
    join, _ = s.expect("Join", bound)
    return s, nonce, join


def _welcome(listener: ScriptedSender, nonce: bytes, join: dict) -> dict:
    from .peers import WELCOME_LABEL, proof

    rid = join["receiver"]
    return {"type": "Welcome", "proof": proof(listener.secret(rid), WELCOME_LABEL, nonce, join["nonce"], rid)}


#: What a scripted listener sends after reading a right Join, in place of Welcome (or, after it, in place of Init):
#: join messages out of their order (RDV-3). Each entry: (messages, whether the last one carries a slot handle).
LISTENER_OUT_OF_ORDER = {
    "a second Hello in place of Welcome": lambda L, nonce, join: [
        ({"type": "Hello", "protocol": "1.1", "nonce": os.urandom(32)}, False)],
    "an Init before Welcome": lambda L, nonce, join: [(_slot_init(0), True)],
    "a Join in place of Welcome": lambda L, nonce, join: [
        ({"type": "Join", "receiver": 0, "nonce": os.urandom(32), "proof": os.urandom(32)}, False)],
    "a second Welcome in place of Init": lambda L, nonce, join: [(_welcome(L, nonce, join), False)] * 2,
    "a Hello in place of Init": lambda L, nonce, join: [
        (_welcome(L, nonce, join), False), ({"type": "Hello", "protocol": "1.1", "nonce": os.urandom(32)}, False)],
}

_SLOT = layout([("w", "float32", (4,), bytes(range(16)))])


def _slot_init(rid: int, version: int = 3) -> dict:
    manifest, _, nbytes = _SLOT
    return init(rid, manifest, [slotinfo(0, nbytes)], version, 0)


@pytest.mark.req("RDV-3", "SM-R-7", "INIT-4")
@pytest.mark.parametrize("case", sorted(LISTENER_OUT_OF_ORDER))
def test_a_listener_that_breaks_the_join_order_is_a_violation(ws, case):
    """The binding's Receiver joins a scripted listener that reads its right Join, then sends a join message out of
    order (a second Hello, an Init before Welcome, a Join; after a right Welcome, a second Welcome or a Hello where
    Init is due). The joiner takes it as a violation (RDV-3): connect() raises RemoteProtocolError at once, not at
    its timeout, having sent no Ready, and the receiver closes the connection."""
    listener = ScriptedSender()
    receiver = ws.Receiver(listener.url(0))
    session = None
    try:
        out, t = _connecting(receiver)
        try:
            session, nonce, join = _join_by_hand(listener, tm.BOUND)
        except HarnessError as e:
            raise TooSlow(f"RDV-6 violated: the receiver did not join a listener that is there: {e}") from None
        _, data, nbytes = _SLOT
        for msg, with_handle in LISTENER_OUT_OF_ORDER[case](listener, nonce, join):
            session.send(msg, fds=[listener.slot(0, data, nbytes)] if with_handle else ())
        t.join(tm.T + tm.SLACK)
        in_time(not t.is_alive(), f"RDV-3 violated: connect() did not end after {case}")
        err = out.get("error")
        assert isinstance(err, ws.RemoteProtocolError), (
            f"RDV-3 violated: after {case} connect() "
            f"{'returned ' + repr(out.get('value')) if err is None else 'raised ' + type(err).__name__ + ': ' + str(err)}"
            ", not RemoteProtocolError: a join message out of order is a violation")
        try:
            closed = session.closed_by_peer(tm.SLACK)
        except AssertionError:  # the peers' reader refused what came: not a clean end, and not Ready either
            closed = True
        answered = [msgpack_type(m) for m in session.frames_in[1:]]  # after its Join
        assert "Ready" not in answered, f"RDV-3 violated: after {case} the receiver answered {answered}"
        in_time(closed, f"RDV-3 violated: after {case} the receiver kept the connection open")
    finally:
        if session is not None:
            session.close()
        receiver.close()
        listener.close()


@pytest.mark.req("RDV-5", "SM-S-5", "INIT-5", "LIFE-1")
def test_a_join_takes_the_place_of_a_receiver_that_refused_its_init(ws, closing):
    """Receiver 1 joins by URL and answers its Init with Ready(error): it is failed (connect() names it). A new
    process with the same URL is welcomed (RDV-5: a valid Join for a failed receiver takes its place), handed
    Init with the latest version at once, and once it answers Ready it is live and served. Receiver 0, scripted
    too, is live throughout."""
    sender = _listening(ws, 2, closing)
    j0 = _live_joiners_of(ws, sender, [0], closing)[0]
    f = sender.send_async(basic(1), workers=[0], timeout=tm.T)
    j0.send(ack(0, _next_receive(j0, "RDV-5")["version"]))
    waited(f, "SEND-1")
    first = Joiner(sender.url(1))
    closing(first)
    assert first.join().get("type") == "Welcome", "RDV-3 violated: a join with the URL's id and secret got no Welcome"
    first.handshake(answer=False)
    first.send(ready(1, None, "error", "cannot apply"))
    # connect() without workers names the refusal whether the sender read it before the call or during it (INIT-5);
    # connect(workers=[1]) names it only if read during the call, and once it was read waits for a rejoin (RDV-5)
    expect_error(ws, "ReceiverError", sender.connect, tm.T, ids="INIT-5", naming=[1],
                 what="connect() after receiver 1 answered its Init with Ready(error)")
    first.close()
    second = Joiner(sender.url(1))
    closing(second)
    answer = second.join()
    assert answer.get("type") == "Welcome" and second.welcome_ok(answer), (
        f"RDV-5 violated: a valid Join for a receiver that failed its handshake was answered {answer}")
    try:
        init = second.handshake(answer=False)
    except HarnessError as e:
        raise TooSlow(f"RDV-5 violated: no Init followed the Welcome of a join taking a failed receiver's place: {e}") from None
    assert init["receiver"] == 1 and init["version"] == 1, (
        f"LIFE-1 violated: the new joiner's Init is receiver {init['receiver']}'s at version {init['version']}, not 1's at 1")
    second.send(ready(1, init["version"]))
    _connect_scripted(ws, sender, 1)
    f = sender.send_async(basic(2), timeout=tm.T)
    for k, j in ((0, j0), (1, second)):
        got = _next_receive(j, "RDV-5")
        assert got["version"] == 2, f"VER-1 violated: receiver {k} got Receive({got['version']}), not 2"
        j.send(ack(k, 2))
    waited(f, "RDV-5")


@pytest.mark.req("RDV-6", "INIT-4")
@pytest.mark.parametrize("form", ["unix:@NAME", "unix:PATH"])
def test_a_join_started_before_anyone_listens_joins_once_a_listener_appears(ws, form, tmp_path):
    """receiver.connect(T) starts where nobody listens (an abstract name nobody bound, a socket file not there yet);
    a scripted listener appears there a moment later, well before T: the joiner, trying again until its timeout,
    joins it, takes its Init and returns its version (RDV-6). A joiner that gives up, or sleeps out its timeout,
    before trying again fails."""
    listener = ScriptedSender()
    listener.sock.close()  # its name is free again: nobody listens at the URL's address yet
    if form == "unix:PATH":
        where = str(tmp_path / "late.sock")
        url = f"unix:{where}?receiver=0&secret={listener.secret(0).hex()}"
    else:
        where = "\0" + listener.name
        url = listener.url(0)
    receiver = ws.Receiver(url)
    try:
        t0 = time.monotonic()
        out, t = _connecting(receiver)
        time.sleep(0.3)  # not a bound: the receiver's first tries find nobody there
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(where)
        sock.listen(8)
        listener.sock = sock
        appeared = time.monotonic() - t0
        end = time.monotonic() + tm.T + tm.SLACK
        while not readable(listener.sock, 0.05):
            if not t.is_alive():
                err = out.get("error")
                raise AssertionError(
                    f"RDV-6 violated: receiver.connect({tm.T:.0f}) ended without joining the listener that appeared at "
                    f"{form} {appeared:.1f} s into it: "
                    f"{'returned ' + repr(out.get('value')) if err is None else type(err).__name__ + ': ' + str(err)}")
            if time.monotonic() > end:
                raise TooSlow(f"RDV-6 violated: receiver.connect({tm.T:.0f}) did not reach the listener that appeared "
                              f"{appeared:.1f} s into it")
        session = listener.accept(tm.BOUND)
        assert session is not None, "the scripted listener's join ended"
        try:
            _, data, nbytes = _SLOT
            session.send(_slot_init(0), fds=[listener.slot(0, data, nbytes)])
            try:
                answer = session.recv_past_heartbeats(tm.T)[0]
            except HarnessError as e:
                raise TooSlow(f"INIT-4 violated: no answer to the Init of a receiver that joined late: {e}") from None
            assert (answer.get("type"), answer.get("status"), answer.get("version")) == ("Ready", "ok", 3), (
                f"INIT-4 violated: a receiver that joined a listener appearing late answered its Init with "
                f"{answer!r:.200}")
            t.join(tm.T + tm.SLACK)
            in_time(not t.is_alive(), "RDV-6 violated: connect() did not return once its Ready went out")
            assert out.get("value") == 3, f"RDV-6 violated: connect() to a listener appearing late gave {out}, not 3"
            session.send({"type": "Stop"})
        finally:
            session.close()
    finally:
        receiver.close()
        listener.close()


@pytest.mark.req("RDV-2", "RDV-5", "API-9", "LIFE-2", "INIT-5", "SEND-7")
@pytest.mark.needs("push", "mapping")
@pytest.mark.parametrize("ended", [pytest.param("dropped", marks=pytest.mark.needs("drop")), "closed", "refused"])
def test_a_url_restarts_its_receiver_whatever_ended_it_and_a_restart_that_refuses_is_named_at_once(ws, closing, ended):
    """Receiver 0 joins by URL and ends: the trainer drops it, its process closes it, or it refuses its Init. Its
    URL stays what it was (RDV-2: each receiver's secret is fixed for the sender's life; API-9: its URL restarts a
    dropped one). A connect(workers=[0]) waiting for the restart meets a new process with that URL that refuses its
    Init too: it raises ReceiverError naming receiver 0, cause error, without waiting for its timeout (INIT-5, SEND-7:
    the new incarnation's own refusal). A third process with the URL then connects at the latest version and is
    sent the next one. Receiver 1, joined by URL, is live throughout. (Two bugs of an outside round: a drop that drew
    receiver 0 a new secret, and a connect waiting for a rejoin that took the new refusal for the old failure.)"""
    sender = _listening(ws, 2, closing)
    urls = [sender.url(0), sender.url(1)]
    r1 = ws.Receiver(urls[1])
    closing(r1)
    r0 = ws.Receiver(urls[0], S.basic_mismatching_target() if ended == "refused" else None)
    closing(r0)
    joins = [Background(lambda r=r: r.connect(tm.T), f"conformance-receiver-{i}") for i, r in enumerate((r0, r1))]
    if ended == "refused":
        expect_error(ws, "ReceiverError", sender.connect, tm.T, ids="INIT-5", naming=[0],
                     what="connect() while receiver 0 refuses its Init")
    else:
        try:
            bounded(sender.connect, tm.T, limit=tm.T + tm.SLACK, what="connect() of two receivers joining by URL")
        except (HarnessError, ws.SyncTimeoutError) as e:
            raise TooSlow(f"RDV-5 violated: two receivers joining by URL did not connect: {e}") from None
    for j in joins:
        in_time(j.join(tm.T + tm.SLACK) is not None, "INIT-5 violated: a receiver's connect() did not return")
    try:  # returns at once for a live receiver 1; waits for its Ready where a refusal of 0 ended the first connect
        bounded(sender.connect, tm.T, workers=[1], limit=tm.T + tm.SLACK, what="connect(workers=[1])")
    except (HarnessError, ws.SyncTimeoutError) as e:
        raise TooSlow(f"INIT-4 violated: receiver 1, joining by URL, did not connect: {e}") from None
    version = bounded(sender.send, basic(1), workers=[1], timeout=tm.T, limit=tm.T + tm.SLACK, what="send to receiver 1")
    if ended == "dropped":
        bounded(sender.drop, 0, tm.T, limit=tm.T + tm.SLACK, what="drop(0)")
    elif ended == "closed":
        r0.close()
        expect_error(ws, "ReceiverDiedError", sender.send, basic(2), workers=[0], timeout=tm.T, ids="SEND-3",
                     naming=[0], what="send(workers=[0]) after receiver 0 closed")
        version = sender.version
    assert sender.url(0) == urls[0], (
        f"RDV-2 violated: receiver 0's URL changed after it was {ended}: each receiver's secret is fixed for the "
        "sender's life")
    waiting = Background(lambda: sender.connect(tm.T, workers=[0]), "conformance-connect")
    time.sleep(tm.SHORT)  # the connect waits for a new join before the new process dials
    assert waiting.outcome is None, (
        f"RDV-5 violated: connect(workers=[0]), receiver 0 {ended}, gave {waiting.outcome} before any new process "
        "joined as receiver 0; on a listening sender it waits for one (the earlier incarnation's end is not this one's)")
    refusing = ws.Receiver(urls[0], S.basic_mismatching_target())
    closing(refusing)
    Background(lambda: refusing.connect(tm.T), "conformance-receiver-0-refusing")
    t0 = time.monotonic()
    outcome = waiting.join(tm.T + tm.SLACK)
    in_time(outcome is not None, "INIT-5 violated: connect(workers=[0]) did not return within its timeout and the grace")
    status, e = outcome
    if status == "err" and isinstance(e, ws.SyncTimeoutError):
        raise TooSlow(f"INIT-5 violated: connect(workers=[0]) timed out ({e}) though the process that rejoined as "
                      f"receiver 0 refused its Init {time.monotonic() - t0:.1f} s before; expected ReceiverError")
    assert status == "err" and isinstance(e, ws.ReceiverError) and e.workers == [0], (
        f"INIT-5 violated: connect(workers=[0]) gave {status} {e!r}; the process that rejoined as receiver 0 refused "
        "its Init (ReceiverError naming it expected)")
    assert set(e.causes.values()) == {"error"}, f"SEND-7 violated: the refusal is named with causes {e.causes}"
    occurred("INIT-5.o")
    good = ws.Receiver(urls[0])
    closing(good)
    join = Background(lambda: good.connect(tm.T), "conformance-receiver-0-again")
    try:
        bounded(sender.connect, tm.T, workers=[0], limit=tm.T + tm.SLACK, what="connect(workers=[0]) of a third process")
    except (HarnessError, ws.SyncTimeoutError) as err:
        raise TooSlow(f"LIFE-2 violated: a third process with receiver 0's URL did not connect: {err}") from None
    got = join.join(tm.T + tm.SLACK)
    in_time(got is not None, "LIFE-2 violated: the third process's connect() did not return")
    assert got == ("ok", version), f"LIFE-2 violated: the third process connected with {got}, version {version} expected"
    f = sender.send_async(basic(version + 1), timeout=tm.T)
    waited(f, "LIFE-2", what="wait(T) on a send to both once receiver 0 restarted by its URL")
