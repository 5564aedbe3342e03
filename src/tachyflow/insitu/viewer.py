"""Live viewer of a running simulation: a small local web page fed by its monitor stream.

:class:`ViewerServer` serves, on 127.0.0.1 only, a page that shows the newest images and
metrics of the run in ``RUN_DIR`` (see :mod:`tachyflow.insitu.monitor`) and updates itself.
Every request must carry the server's random token (``?token=``); without it the answer is
403. The server only reads: GET for the page, its state and images, and the one POST that
browsers' ``navigator.sendBeacon`` can make, ``/detach``, which lets go of the stream.

Endpoints (all with ``?token=TOKEN``):

``/``
    The page (inline script, polls ``/state`` every 0.5 s).
``/state?viewer=ID``
    JSON: ``run``, ``attached``, ``finished``, ``step``, ``time``, ``metrics``,
    ``images`` (name to the step it was rendered at) and ``error``. With ``viewer`` the
    request also counts as that page being open.
``/image/NAME``
    The newest PNG of that name (``&step=N`` only defeats caches).
``/detach?viewer=ID``
    That page closed (sent on ``pagehide``).

The stream is read only while a page is open: the server attaches when a page polls and
detaches when the last page has sent ``/detach`` or none has polled for ``idle_detach``
seconds. The reader runs in a child process, not a thread: attaching to an SST stream
blocks until the run publishes its next step, and the ``adios2`` binding keeps the
interpreter lock meanwhile, which would freeze the server (and Ctrl-C) for a whole step of
the run. The run itself never waits for the viewer (see the monitor module).
"""

from __future__ import annotations

import hmac
import json
import math
import os
import re
import secrets
import subprocess
import sys
import threading
import time
import webbrowser
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from multiprocessing.connection import Connection
from numbers import Real
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from tachyflow.insitu.monitor import MonitorReader, MonitorState, contact_file

LOOPBACK = "127.0.0.1"
TOKEN_CHARACTERS = re.compile(r"[A-Za-z0-9_-]{16,}")
VIEWER_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
# How long closing the viewer waits for its reader processes to let go. A reader that is
# still attaching only notices once the run publishes again; it is left to finish alone.
DETACH_GRACE = 5.0
# A reader that dies before it says anything (killed while attaching, say) is started again
# this many times, after 1, 2, 4, ... seconds, before the viewer gives that run up.
ATTACH_ATTEMPTS = 4
# sendBeacon's body is ignored; read at most this much of it so the connection stays sane.
MAXIMUM_BODY = 4096


# The reader process runs this; a plain interpreter rather than multiprocessing's spawn,
# which re-imports the parent's main script (not always a file).
READER_COMMAND = (
    "import sys; from tachyflow.insitu.viewer import read_monitor; read_monitor(*sys.argv[1:])"
)


def read_monitor(run_dir: str, poll_interval: str, states_fd: str, detach_fd: str) -> None:
    """Reader process: attach, send every new state, stop when the parent closes its pipe.

    Parameters
    ----------
    run_dir : str
        Output folder of the run.
    poll_interval : str
        Seconds between reads.
    states_fd, detach_fd : str
        Descriptors of the pipe to the parent (messages ``(kind, payload)``) and of the one
        from it (closed by the parent to detach).
    """
    states = Connection(int(states_fd), readable=False)
    detach = Connection(int(detach_fd), writable=False)
    try:
        reader = MonitorReader(run_dir, timeout=0.0)
    except TimeoutError:  # the contact file went away: the run closed its stream meanwhile
        states.send(("finished", None))
        return
    except ConnectionError as error:
        states.send(("error", str(error)))
        return
    with reader:
        try:
            states.send(("attached", None))
            while not detach.poll(float(poll_interval)):
                state = reader.latest()
                if state is not None:
                    states.send(("state", state))
                if reader.finished:
                    states.send(("finished", None))
                    return
        except BrokenPipeError:  # the viewer is gone
            return


@dataclass
class _Snapshot:
    """What the page sees; guarded by ``_Feed.lock``."""

    attached: bool = False
    finished: bool = False
    step: int | None = None
    time: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    images: dict[str, tuple[int, bytes]] = field(default_factory=dict)
    error: str | None = None


class _Feed:
    """Background thread: attaches a reader process while pages are open, keeps its news."""

    def __init__(self, run_dir: Path, idle_detach: float, poll_interval: float):
        self.run_dir = run_dir
        self.idle_detach = idle_detach
        self.poll_interval = poll_interval
        self.lock = threading.Lock()
        self.snapshot = _Snapshot()
        self._viewers: dict[str, float] = {}  # page id -> last poll (monotonic)
        self._process: subprocess.Popen | None = None
        self._states: Connection | None = None  # from the reader process
        self._detach: Connection | None = None  # to it: closing it detaches
        self._leaving: list[tuple[subprocess.Popen, float]] = []
        # A contact file whose writer is gone stays until someone removes it: do not
        # try it again until it changes (a new run).
        self._failed_contact: int | None = None
        self._contact_tried: int | None = None
        self._reader_spoke = False  # whether the current reader process sent anything
        self._silent_deaths = 0  # readers of this contact that died before speaking
        self._retry_at = 0.0  # monotonic time before which no new reader starts
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tachyflow-view-feed", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def page_polled(self, viewer: str) -> None:
        with self.lock:
            self._viewers[viewer] = time.monotonic()

    def page_closed(self, viewer: str) -> None:
        with self.lock:
            self._viewers.pop(viewer, None)

    def _wanted(self) -> bool:
        now = time.monotonic()
        with self.lock:
            for viewer, last in list(self._viewers.items()):
                if now - last > self.idle_detach:
                    del self._viewers[viewer]
            return bool(self._viewers)

    def _run(self) -> None:
        while not self._stop.wait(self.poll_interval):
            wanted = self._wanted()
            if self._process is None and wanted:
                self._attach_if_published()
            elif self._process is not None and not wanted:
                self._let_go()
            if self._process is not None:
                self._drain()
            self._reap(wait=False)

    def _attach_if_published(self) -> None:
        try:
            changed = contact_file(self.run_dir).stat().st_mtime_ns
        except FileNotFoundError:
            return
        if changed == self._failed_contact or time.monotonic() < self._retry_at:
            return
        if changed != self._contact_tried:  # a new run: a fresh count of attempts
            self._silent_deaths = 0
        self._contact_tried = changed
        self._reader_spoke = False
        states_read, states_write = os.pipe()
        detach_read, detach_write = os.pipe()
        self._process = subprocess.Popen(
            [sys.executable, "-c", READER_COMMAND, str(self.run_dir), str(self.poll_interval),
             str(states_write), str(detach_read)],
            stdin=subprocess.DEVNULL,
            pass_fds=(states_write, detach_read),
            # Its own session: Ctrl-C in the viewer's terminal must not reach it (see _let_go).
            start_new_session=True,
        )
        os.close(states_write)
        os.close(detach_read)
        self._states = Connection(states_read, writable=False)
        self._detach = Connection(detach_write, readable=False)

    def _drain(self) -> None:
        try:
            while self._states.poll():
                kind, payload = self._states.recv()
                self._reader_spoke = True
                self._receive(kind, payload)
        except (EOFError, OSError):  # the reader process ended
            if not self._reader_spoke:  # it died attaching: again a few times, then give up
                self._silent_deaths += 1
                if self._silent_deaths >= ATTACH_ATTEMPTS:
                    self._failed_contact = self._contact_tried
                    message = f"the reader of the run in {self.run_dir} crashed"
                else:
                    delay = 2.0 ** (self._silent_deaths - 1)
                    self._retry_at = time.monotonic() + delay
                    message = f"the reader of the run died attaching; again in {delay:g} s"
                with self.lock:
                    self.snapshot.error = message
            self._let_go()

    def _receive(self, kind: str, payload) -> None:
        with self.lock:
            snapshot = self.snapshot
            if kind == "attached":
                snapshot.attached, snapshot.finished, snapshot.error = True, False, None
                self._silent_deaths = 0
            elif kind == "state":
                self._keep(payload)
            elif kind == "finished":
                snapshot.finished = True
            elif kind == "error":  # a run that is gone or cannot be reached: not again
                self._failed_contact = self._contact_tried
                snapshot.error = payload

    def _keep(self, state: MonitorState) -> None:
        snapshot = self.snapshot
        snapshot.step, snapshot.time, snapshot.metrics = state.step, state.time, state.metrics
        snapshot.images = {
            name: (state.image_steps[name], png) for name, png in state.images.items()
        }

    def _let_go(self) -> None:
        """Detach from the stream without waiting for the reader.

        The reader is asked to close (its pipe closes), never killed: a reader that dies
        while attaching, before the run's next step completes its registration, makes that
        step crash or spin in SST (measured with this wheel, both control transports).
        """
        self._detach.close()
        self._states.close()
        self._leaving.append((self._process, time.monotonic() + DETACH_GRACE))
        self._process = self._states = self._detach = None
        with self.lock:
            self.snapshot.attached = False

    def _reap(self, wait: bool) -> None:
        """Collect the readers that have exited; with ``wait``, give each until its deadline."""
        remaining = []
        for process, deadline in self._leaving:
            if wait:
                try:
                    process.wait(max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
            if process.poll() is None:
                remaining.append((process, deadline))
        self._leaving = remaining

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        if self._process is not None:
            self._let_go()
        # Any reader still running is attaching: it closes itself at the run's next step.
        self._reap(wait=True)


class ViewerServer:
    """Local, read-only, token-protected web page of a running simulation.

    Parameters
    ----------
    run_dir : path
        Output folder of the run (it may not exist yet: the page waits for the run).
    port : int
        TCP port on 127.0.0.1; 0 picks a free one.
    token : str, optional
        Secret required on every request (at least 16 of ``A-Z a-z 0-9 _ -``); a random
        one by default.
    idle_detach : float
        Seconds without a poll from any page after which the stream is let go.
    poll_interval : float
        Seconds between reads of the stream.
    """

    def __init__(
        self,
        run_dir,
        port: int = 0,
        token: str | None = None,
        idle_detach: float = 10.0,
        poll_interval: float = 0.2,
    ):
        if isinstance(port, bool) or not isinstance(port, int):
            raise TypeError(f"port must be an integer, got {port!r}")
        if not 0 <= port <= 65535:
            raise ValueError(f"port must be from 0 to 65535, got {port}")
        if token is not None and not isinstance(token, str):
            raise TypeError(f"token must be a string, got {type(token).__name__}")
        if token is not None and not TOKEN_CHARACTERS.fullmatch(token):
            # The token itself is not repeated: error messages end up in logs.
            raise ValueError("token must be at least 16 characters of A-Z, a-z, 0-9, '_', '-'")
        for name, value in (("idle_detach", idle_detach), ("poll_interval", poll_interval)):
            if isinstance(value, bool) or not isinstance(value, Real):
                raise TypeError(f"{name} must be a number of seconds, got {value!r}")
            if not value > 0:
                raise ValueError(f"{name} must be a positive number of seconds, got {value}")
        self.run_dir = Path(run_dir)
        self.token = token or secrets.token_urlsafe(24)
        self._feed = _Feed(self.run_dir, float(idle_detach), float(poll_interval))
        self._http = ThreadingHTTPServer((LOOPBACK, port), _Handler)
        self._http.daemon_threads = True
        self._http.viewer = self
        self._serving = threading.Thread(
            target=self._http.serve_forever, name="tachyflow-view-http", daemon=True
        )

    @property
    def address(self) -> tuple[str, int]:
        """Host and port the server listens on."""
        host, port = self._http.server_address[:2]
        return host, port

    @property
    def url(self) -> str:
        """Address of the page, token included."""
        return f"http://{LOOPBACK}:{self.address[1]}/?token={self.token}"

    @property
    def attached(self) -> bool:
        """Whether a reader is attached to the run's stream now."""
        with self._feed.lock:
            return self._feed.snapshot.attached

    def start(self) -> ViewerServer:
        """Serve in background threads; returns at once."""
        self._feed.start()
        self._serving.start()
        return self

    def close(self) -> None:
        """Stop serving and detach from the stream.

        Waits up to 5 s for the reader process to close; one that is still attaching is
        left to close itself at the run's next step (killing it would harm the run).
        """
        if self._serving.is_alive():
            self._http.shutdown()
        self._http.server_close()
        self._feed.stop()

    def __enter__(self) -> ViewerServer:
        return self.start()

    def __exit__(self, *exception) -> None:
        self.close()

    def check_token(self, candidate: str) -> bool:
        """Whether ``candidate`` is the token (in constant time)."""
        return hmac.compare_digest(candidate.encode(), self.token.encode())

    def state(self) -> dict:
        """The page's view of the run, as sent by ``/state``."""
        with self._feed.lock:
            snapshot = self._feed.snapshot
            return {
                "run": str(self.run_dir),
                "attached": snapshot.attached,
                "finished": snapshot.finished,
                "step": snapshot.step,
                "time": _json_number(snapshot.time),
                "metrics": {name: _json_number(v) for name, v in snapshot.metrics.items()},
                "images": {name: step for name, (step, _) in snapshot.images.items()},
                "error": snapshot.error,
            }

    def image(self, name: str) -> bytes | None:
        """The newest PNG called ``name``, or None."""
        with self._feed.lock:
            entry = self._feed.snapshot.images.get(name)
        return None if entry is None else entry[1]

    def page_polled(self, viewer: str) -> None:
        """A page with this id is open (it polled just now)."""
        self._feed.page_polled(viewer)

    def page_closed(self, viewer: str) -> None:
        """The page with this id has closed."""
        self._feed.page_closed(viewer)


def _json_number(value: float | None) -> float | None:
    """JSON has no NaN or infinity: send them as null."""
    return value if value is None or math.isfinite(value) else None


def open_in_browser(url: str) -> bool:
    """Open ``url`` in a graphical browser, if this session has a display.

    Without one, :mod:`webbrowser` would fall back to a text browser that takes over the
    terminal the server prints to, so nothing is opened. Returns whether a browser was
    asked to open it.
    """
    graphical = sys.platform in ("darwin", "win32") or any(
        os.environ.get(name) for name in ("DISPLAY", "WAYLAND_DISPLAY")
    )
    return graphical and webbrowser.open(url)


class _Handler(BaseHTTPRequestHandler):
    server_version = "tachyflow-view"
    sys_version = ""

    def log_message(self, format, *arguments) -> None:
        """Silent: request lines carry the token."""

    def end_headers(self) -> None:
        # On every answer, errors included: nothing is cached and no link leaks the URL.
        self.send_header("Cache-Control", "no-store")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("X-Content-Type-Options", "nosniff")
        super().end_headers()

    @property
    def viewer(self) -> ViewerServer:
        return self.server.viewer

    def _authorised(self) -> tuple[str, dict[str, list[str]]] | None:
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        if not self.viewer.check_token(query.get("token", [""])[0]):
            self.send_error(HTTPStatus.FORBIDDEN, "a valid token is required")
            return None
        return parts.path, query

    def _viewer_id(self, query) -> str | None:
        """The page id of the request; answers 400 and returns None when it is malformed."""
        viewer = query.get("viewer", [""])[0]
        if not VIEWER_ID.fullmatch(viewer):
            self.send_error(HTTPStatus.BAD_REQUEST, "viewer must be 1-64 of A-Z a-z 0-9 _ -")
            return None
        return viewer

    def do_GET(self) -> None:
        request = self._authorised()
        if request is None:
            return
        path, query = request
        if path == "/":
            self._send_page()
        elif path == "/state":
            if "viewer" in query:
                viewer = self._viewer_id(query)
                if viewer is None:
                    return
                self.viewer.page_polled(viewer)
            body = json.dumps(self.viewer.state()).encode()
            self._send(HTTPStatus.OK, "application/json", body)
        elif path.startswith("/image/"):
            png = self.viewer.image(unquote(path.removeprefix("/image/")))
            if png is None:
                self.send_error(HTTPStatus.NOT_FOUND, "no such image")
            else:
                self._send(HTTPStatus.OK, "image/png", png)
        else:
            self.send_error(HTTPStatus.NOT_FOUND)

    def do_POST(self) -> None:
        """``/detach`` only: browsers send beacons as POST."""
        request = self._authorised()
        if request is None:
            return
        path, query = request
        if path != "/detach":
            self.send_error(HTTPStatus.METHOD_NOT_ALLOWED)
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            self.send_error(HTTPStatus.BAD_REQUEST, "Content-Length must be a whole number")
            return
        self.rfile.read(min(max(length, 0), MAXIMUM_BODY))
        viewer = self._viewer_id(query)
        if viewer is None:
            return
        self.viewer.page_closed(viewer)
        self._send(HTTPStatus.NO_CONTENT, None, b"")

    def _send_page(self) -> None:
        nonce = secrets.token_urlsafe(16)
        self.send_response(HTTPStatus.OK)
        self.send_header(
            "Content-Security-Policy",
            f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; "
            "img-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'",
        )
        body = PAGE.replace("NONCE", nonce).encode()
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _send(self, status: HTTPStatus, content_type: str | None, body: bytes) -> None:
        self.send_response(status)
        if content_type is not None:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


# The token is read from the page's own address by the script, never written into the page;
# values are set with textContent, so names from the stream cannot inject markup.
PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>tachyflow view</title>
<style nonce="NONCE">
body { font-family: system-ui, sans-serif; margin: 1.5rem; color: #222; }
h1 { font-size: 1.3rem; margin: 0 0 .3rem; }
#status { color: #666; margin-bottom: 1rem; }
#status.live { color: #187a2f; }
table { border-collapse: collapse; margin-bottom: 1rem; }
td { padding: .15rem .8rem .15rem 0; font-variant-numeric: tabular-nums; }
td:first-child { color: #555; }
figure { display: inline-block; margin: 0 1rem 1rem 0; }
figcaption { color: #555; font-size: .9rem; }
img { max-width: 100%; border: 1px solid #ddd; }
</style>
</head>
<body>
<h1>tachyflow view: <span id="run"></span></h1>
<div id="status">connecting</div>
<table><tbody id="metrics">
<tr><td>step</td><td id="step">-</td></tr>
<tr><td>simulated time</td><td id="time">-</td></tr>
</tbody></table>
<div id="images"></div>
<script nonce="NONCE">
"use strict";
const token = new URLSearchParams(location.search).get("token") || "";
const viewer = Array.from(crypto.getRandomValues(new Uint8Array(12)),
                          (b) => b.toString(16).padStart(2, "0")).join("");
const labels = {time_per_step: "time per step (s)", cfl: "CFL", kinetic_energy: "kinetic energy"};
const query = (extra) => "?" + new URLSearchParams({token, ...extra});
const number = (value) => (value === null ? "-" : Number(value).toPrecision(6));

function showMetric(name, value) {
  const id = "metric-" + name;
  let cell = document.getElementById(id);
  if (!cell) {
    const row = document.createElement("tr");
    const label = document.createElement("td");
    label.textContent = labels[name] || name.replaceAll("_", " ");
    cell = document.createElement("td");
    cell.id = id;
    cell.dataset.metric = name;
    row.append(label, cell);
    document.getElementById("metrics").append(row);
  }
  cell.textContent = number(value);
}

function showImage(name, step) {
  const id = "image-" + name;
  let image = document.getElementById(id);
  if (!image) {
    const figure = document.createElement("figure");
    const caption = document.createElement("figcaption");
    image = document.createElement("img");
    image.id = id;
    image.alt = name;
    figure.append(image, caption);
    document.getElementById("images").append(figure);
  }
  if (image.dataset.step !== String(step)) {
    image.dataset.step = String(step);
    image.src = "image/" + encodeURIComponent(name) + query({step});
    image.nextElementSibling.textContent = name + " (step " + step + ")";
  }
}

function showStatus(state) {
  const status = document.getElementById("status");
  status.className = state.attached ? "live" : "";
  status.textContent = state.error ? state.error
    : state.finished ? "the run has finished"
    : state.attached ? "live"
    : "waiting for the run to publish (" + state.run + "/monitor.sst)";
}

async function refresh() {
  try {
    const response = await fetch("state" + query({viewer}), {cache: "no-store"});
    if (response.ok) {
      const state = await response.json();
      document.getElementById("run").textContent = state.run;
      showStatus(state);
      document.getElementById("step").textContent = state.step === null ? "-" : state.step;
      document.getElementById("time").textContent = number(state.time);
      for (const cell of document.querySelectorAll("[data-metric]")) {
        if (!(cell.dataset.metric in state.metrics)) cell.textContent = "-";
      }
      for (const [name, value] of Object.entries(state.metrics)) showMetric(name, value);
      for (const [name, step] of Object.entries(state.images)) showImage(name, step);
    } else {
      document.getElementById("status").textContent = "server answered " + response.status;
    }
  } catch (error) {
    document.getElementById("status").textContent = "viewer stopped";
  }
  setTimeout(refresh, 500);
}

addEventListener("pagehide", () => navigator.sendBeacon("detach" + query({viewer})));
refresh();
</script>
</body>
</html>
"""
