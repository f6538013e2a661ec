"""Bug: the sender accepts Heartbeat only from a live receiver; a receiver that says "still here"
after Init and before its Ready (a slow data-plane setup, a foreign implementation that heartbeats on
every channel) is cut off as a protocol violation and `sender.connect()` raises ReceiverError.
MSG-4: Heartbeat is legal in every state in which the channel is read once the join is done, "the
sender's view connecting or live", and a sender MUST NOT treat one from a receiver that has not
answered Ready yet as a violation. Plausible: heartbeats are thought of as a live-connection thing.

Seam: weightsync.protocol.SENDER_TABLE (the (connecting, recv Heartbeat) row left out).
"""
from weightsync import *  # noqa: F403
from weightsync import CAPABILITIES, __all__, sender  # noqa: F401
from weightsync import protocol as _protocol

VIOLATES = "MSG-4"

_protocol.SENDER_TABLE.pop((_protocol.PeerState.CONNECTING, "recv Heartbeat"), None)
