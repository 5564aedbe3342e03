"""Live monitoring stream of a running simulation (ADIOS2 SST), and a reader attached to it.

Rank 0 of a run opens :class:`MonitorPublisher` on ``RUN_DIR/monitor``: an SST stream whose
contact file ``RUN_DIR/monitor.sst`` tells readers on the same host where to connect. Each
:meth:`MonitorPublisher.publish` is one SST step holding

- ``step`` (int64) and ``time`` (float64) scalars;
- ``metric_names`` (string: a JSON list) and ``metrics`` (float64 array, same order). The
  names travel in every step beside the values, so a step may carry a different set of
  metrics than the one before and a reader never pairs values with stale names (one
  attribute, or one variable per metric, would outlive the steps that dropped it);
- ``image_steps`` (string: a JSON object, image name to the step it was rendered at) and,
  per image, ``image/<name>`` (uint8 array: the PNG file). The newest image of every name
  is sent again in each step until a new one replaces it, so every step stands alone: a
  reader that skips steps still has the latest images (and fetches an image only when its
  step changed). PNG sizes vary, so each image's global shape is set again in every step.

The run never waits for a viewer: ``RendezvousReaderCount=0`` opens the stream without
readers; :class:`MonitorReader` asks for the newest step only
(``AlwaysProvideLatestTimestep``), so SST releases the steps it skips as soon as newer ones
are announced, even while the reader reads nothing; and for readers that take every step
(other tools), ``QueueFullPolicy=Discard`` drops new steps for a reader whose queue is full
instead of blocking ``EndStep``. One thing SST cannot bound: closing the writer waits
until every attached reader has released the steps it was sent. :class:`MonitorReader`
holds no step between calls and the viewer drains it continuously (and detaches when no
page is open), so that wait is one poll interval; a reader process that is frozen while
attached (stopped with Ctrl-Z) holds the end of the run until it resumes or exits.

Attaching is the other slow side, on the reader's: SST registers a late reader when the
writer publishes its next step, so :class:`MonitorReader` returns only then, and the
``adios2`` binding keeps the interpreter lock meanwhile (the viewer therefore reads in a
child process). That publish pays for the registration once (under 5 ms measured). A
reader must not die in between: the publisher's step that completes a dead reader's
registration crashes or spins inside SST, so readers are closed, never killed, while
attaching.

The contact address is the loopback interface (``NetworkInterface``), so readers attach from
the same host (the node of rank 0); EVPath's listening sockets themselves are not
restricted to it.
"""

from __future__ import annotations

import fcntl
import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from numbers import Real
from pathlib import Path

import numpy as np

STREAM_NAME = "monitor"
CONTACT_SUFFIX = ".sst"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# Image names become ADIOS variable names and URL path segments: keep them plain.
IMAGE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
# ADIOS colours its exception messages for terminals.
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")
# The pip wheel's SST has no RDMA or MPI data plane: EVPath ("WAN") carries the data.
# Control messages over ENet (reliable UDP) rather than TCP sockets: with sockets, the
# publish at which a reader attached took 70-90 ms, with ENet under 5 ms; other steps cost
# the same with both (measured with a 120 kB PNG per step).
CONTROL_TRANSPORT = "enet"
DATA_TRANSPORT = "WAN"


def contact_file(run_dir) -> Path:
    """The SST contact file that exists while a run in ``run_dir`` is publishing."""
    return Path(run_dir) / (STREAM_NAME + CONTACT_SUFFIX)


def _lock_contact(contact: Path):
    """Hold an exclusive lock on the contact file while publishing (see publisher_alive)."""
    file = open(contact, "rb")  # held open, with its lock, until close()
    try:
        fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # a file system without locks: readers cannot tell, and just try
        file.close()
        return None
    return file


def publisher_alive(run_dir) -> bool | None:
    """Whether the process that wrote the run's contact file is still publishing.

    The publisher holds a lock on the file for as long as it runs, and the system drops it
    when the process ends, however it ends. A file left by a killed run must not reach
    SST: attaching to it crashes the reader (a segmentation fault with the ENet control
    transport). None when the file system has no locks, False without a contact file.
    """
    contact = contact_file(run_dir)
    # SST creates the file a moment before the publisher locks it: look twice.
    for attempt in range(2):
        try:
            with open(contact, "rb") as file:
                fcntl.flock(file, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except FileNotFoundError:
            return False
        except BlockingIOError:
            return True
        except OSError:
            return None
        if attempt == 0:
            time.sleep(0.2)
    return False


def _transport_parameters() -> dict[str, str]:
    from tachyflow.insitu.transit.sst import network_parameters

    return {
        "ControlTransport": CONTROL_TRANSPORT,
        "DataTransport": DATA_TRANSPORT,
        **network_parameters(),
    }


def writer_parameters(queue_limit: int) -> dict[str, str]:
    """SST engine parameters of the publisher: never wait for, or on, a reader."""
    return {
        "RendezvousReaderCount": "0",
        "QueueLimit": str(queue_limit),
        "QueueFullPolicy": "Discard",
        **_transport_parameters(),
    }


def reader_parameters() -> dict[str, str]:
    """SST engine parameters of a reader: the newest step only, a short open."""
    # MonitorReader has waited for the contact file already; SST's own search for it is
    # then short.
    return {
        "AlwaysProvideLatestTimestep": "true",
        "OpenTimeoutSecs": "1",
        **_transport_parameters(),
    }


@dataclass(frozen=True)
class MonitorState:
    """One published step: what the viewer shows.

    Attributes
    ----------
    step : int
        Time step number of the run.
    time : float
        Simulated time.
    metrics : dict of str to float
        Scalar diagnostics of that step (time per step, CFL, kinetic energy, ...).
    images : dict of str to bytes
        The newest PNG file of every name, rendered at this step or before.
    image_steps : dict of str to int
        The step each image was rendered at.
    """

    step: int
    time: float
    metrics: dict[str, float] = field(default_factory=dict)
    images: dict[str, bytes] = field(default_factory=dict)
    image_steps: dict[str, int] = field(default_factory=dict)


def _check_publication(step, time_value, metrics, images) -> None:
    if isinstance(step, bool) or not isinstance(step, int | np.integer):
        raise TypeError(f"step must be an integer, got {step!r}")
    if isinstance(time_value, bool) or not isinstance(time_value, Real):
        raise TypeError(f"time must be a real number, got {time_value!r}")
    if not isinstance(metrics, Mapping):
        raise TypeError(f"metrics must be a mapping of names to numbers, got {metrics!r}")
    for name, value in metrics.items():
        if not isinstance(name, str) or isinstance(value, bool) or not isinstance(value, Real):
            raise TypeError(f"metrics must map names (str) to numbers, got {name!r}: {value!r}")
    if not isinstance(images, Mapping):
        raise TypeError(f"images must be a mapping of names to PNG bytes, got {images!r}")
    for name, png in images.items():
        if not isinstance(name, str) or not IMAGE_NAME.fullmatch(name):
            raise ValueError(
                f"image name {name!r} must be letters, digits, '_', '.' or '-' "
                "(it becomes a stream variable and a URL)"
            )
        if not isinstance(png, bytes | bytearray | memoryview):
            raise TypeError(f"image {name!r} must be PNG bytes, got {type(png).__name__}")
        if bytes(png[: len(PNG_SIGNATURE)]) != PNG_SIGNATURE:
            raise ValueError(f"image {name!r} is not a PNG file (no PNG signature)")


class MonitorPublisher:
    """Publishes the live state of a run as an SST stream ``RUN_DIR/monitor`` (rank 0).

    Parameters
    ----------
    run_dir : path
        Output folder of the run; the contact file ``monitor.sst`` appears in it.
    queue_limit : int
        Steps SST keeps for readers; when a reader lags by more, new steps are dropped for
        it instead of blocking the run.
    """

    def __init__(self, run_dir, queue_limit: int = 2):
        import adios2

        if isinstance(queue_limit, bool) or not isinstance(queue_limit, int):
            raise TypeError(f"queue_limit must be an integer, got {queue_limit!r}")
        if queue_limit < 1:
            raise ValueError(f"queue_limit must be at least 1, got {queue_limit}")
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._adios = adios2.Adios()
        io = self._adios.declare_io(STREAM_NAME)
        io.set_engine("SST")
        io.set_parameters(writer_parameters(queue_limit))
        self._stream = adios2.Stream(io, str(self.run_dir / STREAM_NAME), "w")
        self._lock = _lock_contact(self.contact_file)
        self._images: dict[str, tuple[int, np.ndarray]] = {}

    @property
    def contact_file(self) -> Path:
        """The file readers look for to attach."""
        return contact_file(self.run_dir)

    def publish(
        self,
        step: int,
        time: float,
        metrics: Mapping[str, float],
        images: Mapping[str, bytes],
    ) -> None:
        """Write one step; returns at once whether or not a reader is attached.

        Parameters
        ----------
        step : int
            Time step number.
        time : float
            Simulated time.
        metrics : mapping of str to float
            Scalar diagnostics, by name.
        images : mapping of str to bytes
            PNG files rendered at this step, by name (letters, digits, ``_``, ``.``,
            ``-``); may be empty. Earlier images are sent again until replaced.

        Raises
        ------
        TypeError, ValueError
            An argument of the wrong kind, a bad image name or not a PNG file; also
            ValueError after :meth:`close`.
        """
        if self._stream is None:
            raise ValueError("publish() on a closed MonitorPublisher")
        _check_publication(step, time, metrics, images)
        stream = self._stream
        stream.begin_step()
        stream.write("step", int(step))
        stream.write("time", float(time))
        stream.write("metric_names", json.dumps(list(metrics)))
        if metrics:
            values = np.fromiter(metrics.values(), dtype=np.float64, count=len(metrics))
            stream.write("metrics", values, [values.size], [0], [values.size])
        for name, png in images.items():
            # A copy: the binding refuses read-only arrays, which bytes give.
            self._images[name] = (int(step), np.frombuffer(png, dtype=np.uint8).copy())
        stream.write("image_steps", json.dumps({n: s for n, (s, _) in self._images.items()}))
        for name, (_, data) in self._images.items():
            stream.write(f"image/{name}", data, [data.size], [0], [data.size])
        stream.end_step()

    def close(self) -> None:
        """End the stream: readers see its end; the contact file is removed."""
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def __enter__(self) -> MonitorPublisher:
        return self

    def __exit__(self, *exception) -> None:
        self.close()


class MonitorReader:
    """Attached to the monitor stream of a run; :meth:`latest` gives its newest step.

    Parameters
    ----------
    run_dir : path
        Output folder of the run.
    timeout : float
        Seconds to wait for the run's contact file (the run may not have started yet).

    Raises
    ------
    TimeoutError
        No run published in ``run_dir`` within ``timeout``.
    ConnectionError
        A contact file is there but its writer is gone (a run that was killed).

    Notes
    -----
    The constructor returns once the publisher has published its next step, holding the
    interpreter lock until then: a reader cannot share a process with its publisher. Do
    not kill a process while its reader attaches: with this SST, the publisher's next step
    then crashes or spins (a reader that dies once attached does no harm).
    """

    def __init__(self, run_dir, timeout: float):
        import adios2

        if isinstance(timeout, bool) or not isinstance(timeout, Real):
            raise TypeError(f"timeout must be a number of seconds, got {timeout!r}")
        if timeout < 0:
            raise ValueError(f"timeout must be a non-negative number of seconds, got {timeout}")
        self.run_dir = Path(run_dir)
        self.finished = False
        self._images: dict[str, tuple[int, bytes]] = {}  # name -> (step rendered, PNG)
        contact = contact_file(self.run_dir)
        # Opening an SST reader blocks the whole interpreter (the binding keeps the GIL)
        # until it has found the writer and the writer has published again, so wait for
        # the contact file here, in Python, where other threads keep running.
        deadline = time.monotonic() + timeout
        while not contact.exists():
            if time.monotonic() >= deadline:
                raise TimeoutError(f"no monitor stream in {self.run_dir} after {timeout} s")
            time.sleep(min(0.1, timeout))
        if publisher_alive(self.run_dir) is False:
            raise ConnectionError(f"{contact} was left by a run that is no longer publishing")
        self._adios = adios2.Adios()
        io = self._adios.declare_io(STREAM_NAME)
        io.set_engine("SST")
        io.set_parameters(reader_parameters())
        try:
            self._stream = adios2.Stream(io, str(self.run_dir / STREAM_NAME), "r")
        except RuntimeError as error:
            reason = ANSI_ESCAPE.sub("", str(error)).strip()
            raise ConnectionError(
                f"cannot attach to the monitor stream of {self.run_dir}: {reason}"
            ) from None

    def latest(self) -> MonitorState | None:
        """The newest step published since the last call, or None; never waits.

        Steps that came meanwhile are skipped. After the run closed its stream,
        :attr:`finished` is true and this returns None.
        """
        from adios2 import bindings

        newest = None
        while self._stream is not None and not self.finished:
            status = self._stream.begin_step(timeout=0.0)
            if status == bindings.StepStatus.OK:
                newest = self._read_step()
                self._stream.end_step()
            elif status == bindings.StepStatus.NotReady:
                break
            else:  # end of stream, or the writer failed: either way the run is over
                self.finished = True
        return newest

    def _read_step(self) -> MonitorState:
        stream = self._stream
        metric_names = json.loads(stream.read("metric_names"))
        values = self._read_array("metrics", np.float64) if metric_names else []
        image_steps = json.loads(stream.read("image_steps"))
        for name, rendered in image_steps.items():
            if self._images.get(name, (None,))[0] != rendered:  # new since the last read
                self._images[name] = (
                    rendered,
                    self._read_array(f"image/{name}", np.uint8).tobytes(),
                )
        return MonitorState(
            step=int(stream.read("step")),
            time=float(stream.read("time")),
            metrics=dict(zip(metric_names, map(float, values), strict=True)),
            images={name: self._images[name][1] for name in image_steps},
            image_steps=image_steps,
        )

    def _read_array(self, name: str, dtype) -> np.ndarray:
        variable = self._stream.inquire_variable(name)
        (size,) = variable.shape()
        output = np.empty(size, dtype=dtype)
        variable.set_selection([[0], [size]])
        self._stream.engine.get(variable, output)
        return output

    def close(self) -> None:
        """Detach; the run goes on."""
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    def __enter__(self) -> MonitorReader:
        return self

    def __exit__(self, *exception) -> None:
        self.close()
