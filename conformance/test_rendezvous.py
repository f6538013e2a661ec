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
import time

import pytest

from . import strategies as S
from . import timing as tm
from .bounds import HarnessError, bounded
from .peers import Joiner, ack, frame, pack, padded, ready
from .rig import expect_error, waited
from .verdict import TooSlow, in_time

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
def test_a_handshake_that_failed_before_connect_is_named_by_the_next_connect(ws, rigs, closing):
    """A joiner refuses its Init while no connect() runs: the caller's next connect() says so, once."""
    rig = rigs(basic(0), 2, connect=[0], listen=True)
    j = Joiner(rig.sender.url(1))
    closing(j)
    assert j.join().get("type") == "Welcome"
    init = j.handshake(answer=False)
    j.send(ready(1, None, "error", "cannot apply"))
    time.sleep(0.3)  # not a bound: the sender has read the Ready(error) before connect() starts, as a rule
    expect_error(ws, "ReceiverError", rig.sender.connect, tm.T, ids="INIT-5", naming=[1],
                 what=f"connect() after receiver 1 answered its Init (version {init['version']}) with Ready(error)")
    bounded(rig.sender.connect, tm.T, limit=tm.T + tm.SLACK, what="connect() once the failure was named")
    rig.send(basic(1), workers=[0])
    rig.check([0])


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
    try:
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

