"""ADIOS2 SST engine parameters of transit streams, the queue rules they must obey, and
the EVPath CManager ID read back from a contact file.

The rules and figures come from measurements with the ``adios2`` wheel (2.12, EVPath data
plane only); ``docs/in-transit.md`` tells what was measured and why each setting is what
it is.
"""

from __future__ import annotations

import base64
import os
import re
from numbers import Integral
from pathlib import Path

QUEUE_FULL_POLICIES = ("Block", "Discard")
# TCP control: with ENet a reader that died while attaching hangs the writer for good.
# WAN (EVPath) is the wheel's only data plane.
TRANSPORT_PARAMETERS = {"ControlTransport": "sockets", "DataTransport": "WAN"}
# Queue slots needed beside the reserve: with none SST wedges (measured); with one, a
# reader attaching to two Discard streams once received nothing more from the first
# (SST kept a step it never delivered to that reader, and dropped every new one).
QUEUE_HEADROOM = 2
# Steps a writer may write while a reader opens one stream (about three measured at 20
# steps a second on a loaded two-core machine, with margin): with Block and several
# streams, the queue must hold them beside the reserve (see check_queue).
ATTACH_STEPS = 6
# SST's own wait for a contact file once its lock says the writer is alive: the writer
# locks just before it opens the stream, so the file follows within moments.
OPEN_TIMEOUT_SECONDS = 5
# ADIOS colours its exception messages for terminals.
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")
# Blocks glibc serves from its heap at least (the most its own sliding threshold reaches).
HEAP_SERVED_BYTES = 32 * 2**20


def keep_step_buffers(step_bytes: int) -> bool:
    """Have this process's heap serve and keep the blocks of steps of ``step_bytes``.

    SST allocates each step's buffer (growing it by ``realloc``) and frees it when the
    step is done, and a reader's fields are fresh arrays each step: blocks this large are
    otherwise mapped and every page faulted in afresh each step
    (:func:`tachyflow.runtime.keep_freed_memory`). True when set.
    """
    from tachyflow import runtime

    return runtime.keep_freed_memory(max(2 * step_bytes, HEAP_SERVED_BYTES))


def reason(error: Exception) -> str:
    """An ADIOS exception's message without its terminal colours."""
    return ANSI_ESCAPE.sub("", str(error)).strip()


def check_count(value, name: str, least: int) -> int:
    """``value`` as an int, if it is an integer of at least ``least``."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < least:
        raise ValueError(f"{name} must be at least {least}, got {value}")
    return int(value)


def check_queue(queue_limit, policy, reserve, aggregators: int) -> tuple[int, str, int]:
    """``(queue_limit, queue_full_policy, reserve_queue_limit)`` checked against the rules
    SST needs to neither drop every step nor block for good."""
    queue_limit = check_count(queue_limit, "queue_limit", 1)
    reserve = check_count(reserve, "reserve_queue_limit", 0)
    if policy not in QUEUE_FULL_POLICIES:
        raise ValueError(f"queue_full_policy must be one of {QUEUE_FULL_POLICIES}, got {policy!r}")
    if queue_limit < reserve + QUEUE_HEADROOM:
        raise ValueError(
            f"queue_limit ({queue_limit}) must be at least reserve_queue_limit + "
            f"{QUEUE_HEADROOM} ({reserve + QUEUE_HEADROOM}): with less room beside the "
            "reserve SST drops every new step (Discard) or blocks forever (Block)"
        )
    if policy == "Block" and aggregators > 1 and queue_limit < reserve + ATTACH_STEPS:
        raise ValueError(
            f"with Block and {aggregators} aggregators, queue_limit ({queue_limit}) must be at "
            f"least reserve_queue_limit + {ATTACH_STEPS} ({reserve + ATTACH_STEPS}): while a "
            "reader opens one stream the others fill their queues, and a full queue would "
            "stop the run before the reader has opened them all"
        )
    return queue_limit, policy, reserve


INTERFACE_VARIABLE = "TACHYFLOW_SST_INTERFACE"
# Loopback interface names (Linux, BSD/macOS).
LOOPBACK_INTERFACES = ("lo", "lo0")


def network_parameters() -> dict[str, str]:
    """Where SST listens: the interface named by ``$TACHYFLOW_SST_INTERFACE`` (e.g. ``ib0``,
    for readers on other nodes; the run and its readers need the same setting), else
    loopback, so nothing listens beyond this machine by default."""
    import socket

    interface = os.environ.get(INTERFACE_VARIABLE, "").strip()
    if not interface:
        names = {name for _, name in socket.if_nameindex()}
        interface = next((name for name in LOOPBACK_INTERFACES if name in names), "")
    return {"NetworkInterface": interface} if interface else {}


def writer_parameters(queue_limit: int, policy: str, reserve: int) -> dict[str, str]:
    """SST parameters of a writer: it never waits for a reader to start."""
    return {
        "RendezvousReaderCount": "0",
        "QueueLimit": str(queue_limit),
        "QueueFullPolicy": policy,
        "ReserveQueueLimit": str(reserve),
        "MarshalMethod": "BP5",  # one copy in Put (FFS makes two)
        **TRANSPORT_PARAMETERS,
        **network_parameters(),
    }


def reader_parameters() -> dict[str, str]:
    """SST parameters of a reader: no data before it asks (lockstep skips steps, which
    would then have been sent for nothing)."""
    return {
        "OpenTimeoutSecs": str(OPEN_TIMEOUT_SECONDS),
        "SpeculativePreloadMode": "OFF",
        **TRANSPORT_PARAMETERS,
        **network_parameters(),
    }


def lookup3(data: bytes) -> int:
    """Bob Jenkins' ``hashlittle`` (lookup3.c) with seed 0: how EVPath's attribute library
    (ATL) turns an attribute name into its atom."""
    mask = 0xFFFFFFFF

    def rotate(x: int, k: int) -> int:
        return ((x << k) | (x >> (32 - k))) & mask

    def words(block: bytes) -> tuple[int, int, int]:
        return tuple(int.from_bytes(block[i : i + 4], "little") for i in (0, 4, 8))

    a = b = c = (0xDEADBEEF + len(data)) & mask
    rest = data
    while len(rest) > 12:
        x, y, z = words(rest[:12])
        a, b, c = (a + x) & mask, (b + y) & mask, (c + z) & mask
        for shift_a, shift_b, shift_c in ((4, 6, 8), (16, 19, 4)):
            a = ((a - c) & mask) ^ rotate(c, shift_a)
            c = (c + b) & mask
            b = ((b - a) & mask) ^ rotate(a, shift_b)
            a = (a + c) & mask
            c = ((c - b) & mask) ^ rotate(b, shift_c)
            b = (b + a) & mask
        rest = rest[12:]
    if not rest:
        return c
    x, y, z = words(rest + bytes(12 - len(rest)))
    a, b, c = (a + x) & mask, (b + y) & mask, (c + z) & mask
    c = ((c ^ b) - rotate(b, 14)) & mask
    a = ((a ^ c) - rotate(c, 11)) & mask
    b = ((b ^ a) - rotate(a, 25)) & mask
    c = ((c ^ b) - rotate(b, 16)) & mask
    a = ((a ^ c) - rotate(c, 4)) & mask
    b = ((b ^ a) - rotate(a, 14)) & mask
    return ((c ^ b) - rotate(b, 24)) & mask


CMANAGER_ID_ATOM = lookup3(b"CM_CMANAGER_ID")


def cmanager_id(contact: Path) -> int | None:
    """The EVPath CManager ID in an SST contact file, or None when there is none to read.

    The file ends with ``<stream address>:<base64 ATL attribute list>``; the list is a
    4-byte header and 8-byte entries (atom, value; little-endian).
    """
    try:
        encoded = contact.read_text().strip().rsplit(":", 1)[1]
        attributes = base64.b64decode(encoded, validate=True)
    except (OSError, IndexError, ValueError):
        return None
    for offset in range(4, len(attributes) - 7, 8):
        atom, value = (
            int.from_bytes(attributes[i : i + 4], "little") for i in (offset, offset + 4)
        )
        if atom == CMANAGER_ID_ATOM:
            return value
    return None


def clashing(identities) -> set[int]:
    """Indices whose (not None) identity equals an earlier one's: streams that a reader
    must not open together (EVPath would route one writer's messages to the other)."""
    seen, clashes = set(), set()
    for index, identity in enumerate(identities):
        if identity is not None and identity in seen:
            clashes.add(index)
        seen.add(identity)
    return clashes
