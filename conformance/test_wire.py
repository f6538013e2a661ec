"""Spec sections 1-4 seen through the binding: channels, messages, the state tables (ROLE-2, MSG-*, SM-*).

Some requirements are about bytes on a channel that the binding never shows
(a forged message, a foreign protocol version). They are listed here with the
reason, so the report says "skipped: not observable through the binding"
instead of pretending to check them.
"""

import pytest

from . import strategies as S
from .rig import T

NOT_OBSERVABLE = {
    "MSG-3": "a message of unknown type or carrying code cannot be injected through the binding",
    "SM-S-9": "an illegal message from a receiver cannot be forged through the binding",
    "ACK-5": "an ack for a version that is not pending cannot be forged through the binding",
    "INIT-2": "an Init with another protocol major version cannot be forged through the binding",
}


def basic(seed=0):
    return S.distinct_weights(S.BASIC_SPEC, seed)


@pytest.mark.req("ROLE-2", "VER-3", "SM-R-2", "ACK-1")
@pytest.mark.needs("pull")
def test_many_versions_arrive_in_order(rigs):
    rig = rigs(basic(0), 1, modes=["pull"])
    seen = []
    for k in range(1, 31):
        f = rig.send_async(basic(k % 5))
        if k % 3 == 0:
            while (v := rig.poll(0)) is not None:
                seen.append(v)
            assert f.wait(T) == k
    while (v := rig.poll(0)) is not None:
        seen.append(v)
    assert seen == sorted(set(seen)), f"VER-3 violated: polled versions not strictly increasing: {seen}"
    assert seen[-1] == 30, f"ROLE-2 violated: the last version polled is {seen[-1]}, not 30"
    rig.check()


@pytest.mark.req("MSG-2", "MSG-1", "CONS-5", "SM-S-3")
@pytest.mark.needs("push")
def test_each_receiver_is_the_one_its_handle_names(rigs):
    rig = rigs(basic(0), 3)
    for i in range(3):
        rig.send(basic(10 + i), workers=[i])
        rig.check()
    assert [rig.workers[i].call("peek") for i in range(3)] == [1, 2, 3], "MSG-2 violated: a send reached another receiver"


@pytest.mark.parametrize("rid", [pytest.param(r, marks=pytest.mark.req(r), id=r) for r in sorted(NOT_OBSERVABLE)])
def test_not_observable_through_the_binding(rid):
    pytest.skip(f"{rid}: {NOT_OBSERVABLE[rid]}")
