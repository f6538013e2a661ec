"""What the drivers ask the core instead of comparing states themselves (issue 42), over every state.

Each question is answered from the spec's words, not read from the machines: who a send may
go to, who gets an Init, which handle `handle(i)` gives, what a receiver may still call, and
whether a join was accepted. No process, socket or clock.
"""

from __future__ import annotations

import pytest

from weightsync import LocalProtocolError
from weightsync.join import JoinMachine, JoinState
from weightsync.messages import PROTOCOL_VERSION, Hello, Join, Welcome
from weightsync.protocol import KEEP, PAIR, REPLACE, SENDER_TABLE, PeerMachine, PeerState, ReceiverState
from weightsync.receiving import ReceiverMachine


def _peer(state: PeerState) -> PeerMachine:
    m = PeerMachine(3)
    m.state = state
    return m


def _receiver(state: ReceiverState) -> ReceiverMachine:
    m = ReceiverMachine(3)
    m.state = state
    return m


@pytest.mark.parametrize("state", list(PeerState))
def test_live_is_the_one_state_a_send_may_go_to_and_connect_leaves_alone(state):
    """SEND-4, INIT-5: only a live receiver is sent to; connect() waits for every other it names."""
    assert _peer(state).live is (state is PeerState.LIVE)


@pytest.mark.parametrize("state", list(PeerState))
@pytest.mark.parametrize("has_channel", [True, False])
def test_the_init_goes_to_an_unconnected_receiver_with_a_channel(state, has_channel):
    """INIT-1, RDV-5: connect() sends Init to an unconnected receiver over its channel; one that joins by URL has no
    channel yet and is sent its Init when it joins; a connecting or live one was sent it already."""
    assert _peer(state).init_due(has_channel) is (state is PeerState.UNCONNECTED and has_channel)


@pytest.mark.parametrize("state", [s for s in PeerState if s is not PeerState.UNCONNECTED])
@pytest.mark.parametrize("fresh,has_channel", [(True, True), (False, True), (False, False)])
def test_handle_replaces_the_channel_of_a_receiver_that_was_connected_once(state, fresh, has_channel):
    """LIFE-2: a failed, gone or connecting receiver gets a new handle over a new channel (whatever its old handle
    was); a live or stopped one is refused by the table when the channel is replaced."""
    m = _peer(state)
    assert m.handle_to_give(fresh, has_channel) == REPLACE
    if (state, "new handle") not in SENDER_TABLE:
        with pytest.raises(LocalProtocolError):
            m.new_handle()


def test_handle_of_an_unconnected_receiver_is_kept_until_it_went_to_a_process():
    """CON-3: the same handle until it was pickled, then a new one over a new channel; a receiver that would join
    by URL and has no channel gets a first socket pair."""
    m = _peer(PeerState.UNCONNECTED)
    assert m.handle_to_give(fresh=True, has_channel=True) == KEEP
    assert m.handle_to_give(fresh=False, has_channel=True) == REPLACE
    assert m.handle_to_give(fresh=False, has_channel=False) == PAIR


@pytest.mark.parametrize("state", list(ReceiverState))
def test_what_a_receiver_may_still_call_follows_its_state(state):
    """SM-R-1: connect() runs in new and poll() only after it; LIFE-7: a pull receiver looks for the sender's end
    while live; LIFE-5, LIFE-6: a closed receiver refuses every call."""
    m = _receiver(state)
    assert m.awaiting_init is (state is ReceiverState.NEW)
    assert m.live is (state is ReceiverState.LIVE)
    assert m.closed is (state is ReceiverState.CLOSED)
    assert not (m.live and m.stopped), "a live receiver is not stopped (SM-R-8)"


def test_a_receiver_leaves_new_with_its_init_and_reaches_closed_with_close():
    m = ReceiverMachine(0)
    assert m.awaiting_init and not m.live and not m.closed
    m.accept_init(0)
    assert m.live and not m.awaiting_init
    m.channel_closed()
    assert not m.live and not m.closed
    m.close()
    assert m.closed and m.stopped


@pytest.mark.parametrize("valid", [True, False])
def test_a_listener_has_joined_only_after_a_valid_join(valid):
    """RDV-5: a valid Join is answered by Welcome, and Init follows; a refused one ends the connection."""
    m = JoinMachine(listener=True)
    assert not m.joined
    m.handle(Join(0, b"n" * 16, b"p" * 16), valid=valid)
    assert m.joined is valid
    assert m.state is (JoinState.JOINED if valid else JoinState.ENDED)


def test_a_joiner_has_joined_once_the_sender_proved_the_secret():
    """RDV-7: Welcome with a valid proof; nothing before it."""
    m = JoinMachine(listener=False)
    m.handle(Hello(PROTOCOL_VERSION, b"n" * 16))
    assert not m.joined
    m.handle(Welcome(b"p" * 16), valid=True)
    assert m.joined
