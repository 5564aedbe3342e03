"""The live viewer, `tachyflow view`: its page in a real headless Chromium, its guards.

A small publisher process stands in for a running simulation: every 0.2 s it publishes a
new step, changing metrics and a freshly generated PNG on the run's monitor stream. The
browser is Debian's ``chromium`` driven through ``chromedriver`` by Selenium (``make test``
installs both).
"""

import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from tachyflow.insitu.viewer import ViewerServer
from tests.processes import command_environment, interruptible

PUBLISHER = """
import io, signal, sys, time
import numpy as np
from PIL import Image
from tachyflow.insitu.monitor import MonitorPublisher

running = [True]
signal.signal(signal.SIGTERM, lambda *_: running.clear())  # finish the step, then close
run_dir, interval = sys.argv[1], float(sys.argv[2])
with MonitorPublisher(run_dir) as publisher:
    step = 0
    while running:
        width = 64 + step % 32
        ramp = np.linspace(0, 255, width, dtype=np.uint8)
        pixels = np.stack([np.tile(ramp, (48, 1)), np.full((48, width), 5 * step % 256, np.uint8),
                           np.tile(ramp[::-1], (48, 1))], axis=-1)
        buffer = io.BytesIO()
        Image.fromarray(pixels).save(buffer, format="PNG")
        metrics = {"time_per_step": interval, "cfl": 0.3 + 0.001 * step,
                   "kinetic_energy": 1.0 / (1.0 + step)}
        publisher.publish(step, 0.01 * step, metrics, {"slices": buffer.getvalue()})
        step += 1
        deadline = time.monotonic() + interval
        while running and time.monotonic() < deadline:
            time.sleep(0.05)
"""
BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def wait_for(condition, timeout: float, message: str):
    """Poll ``condition`` until it returns something true; fail after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    pytest.fail(f"{message} (waited {timeout} s)")


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def start_publisher(folder, interval: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", PUBLISHER, str(folder), str(interval)])


def reader_processes(folder) -> list[int]:
    """Process ids of the viewer's reader processes attached (or attaching) to ``folder``."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as file:
                arguments = file.read().split(b"\0")
        except (FileNotFoundError, NotADirectoryError, PermissionError, ProcessLookupError):
            continue
        reads_monitor = any(b"read_monitor" in part for part in arguments)
        if reads_monitor and str(folder).encode() in arguments:
            found.append(int(entry))
    return found


@pytest.fixture
def publishing(tmp_path):
    """A 'run' that publishes a new step every 0.2 s: its folder and its process."""
    folder = tmp_path / "run"
    publisher = start_publisher(folder, 0.2)
    try:
        wait_for((folder / "monitor.sst").exists, 60, "the publisher never started")
        yield folder, publisher
    finally:
        stop(publisher)


@pytest.fixture
def run_dir(publishing):
    """The folder of a run that is publishing."""
    return publishing[0]


def get(url: str, method: str = "GET") -> tuple[int, dict, bytes]:
    request = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def state(server: ViewerServer, viewer: str | None = None) -> dict:
    """``/state`` as a page sees it (with ``viewer``) or as an onlooker (without)."""
    query = f"token={server.token}" + (f"&viewer={viewer}" if viewer else "")
    return json.loads(get(f"http://127.0.0.1:{server.address[1]}/state?{query}")[2])


@pytest.fixture
def chromium(tmp_path):
    """A headless Chromium under Selenium; quit (browser and driver) whatever happens."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is in the test extra")
    browser = next(filter(None, map(shutil.which, BROWSERS)), None)
    driver_path = shutil.which("chromedriver")
    if browser is None or driver_path is None:
        pytest.skip("chromium and chromedriver are not installed (`make test` installs them)")
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    # No sandbox: Chromium refuses to start as root (containers, CI) with one.
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}"):
        options.add_argument(flag)
    # An explicit driver: Selenium would otherwise try to download one.
    driver = webdriver.Chrome(service=webdriver.ChromeService(driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def test_page_in_headless_chromium_shows_live_images_and_metrics(run_dir, chromium):
    from selenium.webdriver.common.by import By

    # A long idle limit: only the page's own beacon can detach quickly below.
    with ViewerServer(run_dir, idle_detach=60.0) as server:
        chromium.get(server.url)
        assert chromium.title == "tachyflow view"

        def shown(element_id):
            return chromium.find_element(By.ID, element_id).text

        first_step = int(wait_for(lambda: shown("step").strip("-"), 30, "no step shown"))
        first_energy = float(wait_for(lambda: shown("metric-kinetic_energy").strip("-"), 10,
                                      "no kinetic energy shown"))
        assert float(shown("metric-cfl")) > 0
        assert float(shown("metric-time_per_step")) == pytest.approx(0.2)
        natural_width = (
            "const image = document.getElementById('image-slices');"
            "return image && image.complete ? image.naturalWidth : 0;"
        )
        assert wait_for(lambda: chromium.execute_script(natural_width), 20, "no image") >= 64
        first_image = chromium.find_element(By.ID, "image-slices").get_attribute("src")

        # The run advances and the page follows by itself.
        wait_for(lambda: int(shown("step")) >= first_step + 3, 20, "the step did not advance")
        assert float(shown("metric-kinetic_energy")) < first_energy
        assert float(shown("time")) > 0
        wait_for(lambda: chromium.find_element(By.ID, "image-slices").get_attribute("src")
                 != first_image, 20, "the image was not replaced")
        assert shown("status") == "live"
        assert server.attached

        # Leaving the page (pagehide) sends the beacon: the server lets go of the stream.
        chromium.get("about:blank")
        wait_for(lambda: not state(server)["attached"], 5, "still attached after the page left")


def test_requests_without_the_token_are_refused(tmp_path):
    with ViewerServer(tmp_path / "run") as server:
        base = f"http://127.0.0.1:{server.address[1]}"
        for path in ("/", "/state", "/image/slices", "/?token=", "/state?token=wrong"):
            status, headers, _ = get(base + path)
            assert status == 403, path
            assert headers["Referrer-Policy"] == "no-referrer"
            assert headers["Cache-Control"] == "no-store"
        assert get(base + "/detach?viewer=page", "POST")[0] == 403
        status, headers, page = get(f"{base}/?token={server.token}")
        assert status == 200
        assert b"<title>tachyflow view</title>" in page
        assert headers["Referrer-Policy"] == "no-referrer"
        assert headers["Cache-Control"] == "no-store"
        assert "default-src 'none'" in headers["Content-Security-Policy"]
        # Read-only: nothing but GET, and the beacon's POST to /detach.
        for method in ("PUT", "DELETE"):
            assert get(f"{base}/?token={server.token}", method)[0] >= 400, method
        assert get(f"{base}/state?token={server.token}", "POST")[0] == 405
        assert get(f"{base}/image/slices?token={server.token}")[0] == 404  # none yet
        assert get(f"{base}/state?token={server.token}&viewer=a%20b")[0] == 400
        # A malformed body length is a bad request, not a dropped connection.
        connection = http.client.HTTPConnection("127.0.0.1", server.address[1], timeout=10)
        connection.putrequest("POST", f"/detach?token={server.token}&viewer=page")
        connection.putheader("Content-Length", "abc")
        connection.endheaders()
        assert connection.getresponse().status == 400
        connection.close()


def test_server_listens_on_loopback_only(tmp_path):
    with ViewerServer(tmp_path / "run") as server:
        host, port = server.address
        assert host == "127.0.0.1"
        connection = http.client.HTTPConnection(host, port, timeout=10)
        connection.request("GET", f"/?token={server.token}")
        assert connection.getresponse().status == 200
        connection.close()
        # The same port on this machine's other addresses is closed.
        others = {
            address[4][0]
            for address in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)
            if not address[4][0].startswith("127.")
        }
        for address in others:
            with pytest.raises(OSError):
                socket.create_connection((address, port), timeout=2).close()


def test_server_detaches_when_no_page_polls_and_attaches_again(publishing):
    run_dir, publisher = publishing
    with ViewerServer(run_dir, idle_detach=1.0, poll_interval=0.1) as server:
        assert not state(server)["attached"]  # an onlooker does not attach it
        time.sleep(0.5)
        assert not server.attached
        first = wait_for(lambda: (s := state(server, "page"))["step"] is not None and s, 30,
                         "no state while a page polled")
        assert first["attached"]
        assert set(first["metrics"]) == {"time_per_step", "cfl", "kinetic_energy"}
        assert first["images"]["slices"] <= first["step"]
        # The page goes quiet without a beacon (a crashed browser): detached after 1 s.
        wait_for(lambda: not server.attached, 5, "still attached with no page polling")
        last_seen = state(server)["step"]  # kept while detached
        time.sleep(1.0)
        assert state(server)["step"] == last_seen
        # A page polls again: attached again, news again.
        wait_for(lambda: (s := state(server, "page"))["attached"] and s["step"] > last_seen, 30,
                 "no new state after attaching again")
        # The run ends: the page is told so, and keeps the last state.
        stop(publisher)
        assert publisher.returncode == 0
        final = wait_for(lambda: (s := state(server, "page"))["finished"] and s, 10,
                         "the end of the run was not noticed")
        assert final["step"] is not None
        wait_for(lambda: not server.attached, 5, "still attached to a finished run")


def test_closing_the_viewer_while_it_attaches_leaves_the_run_unharmed(tmp_path):
    folder = tmp_path / "slow-run"
    publisher = start_publisher(folder, 8.0)  # steps far apart
    try:
        wait_for((folder / "monitor.sst").exists, 60, "the publisher never started")
        server = ViewerServer(folder, poll_interval=0.1).start()
        state(server, "page")  # a page opens: a reader starts attaching
        wait_for(lambda: reader_processes(folder), 10, "no reader process started")
        time.sleep(1.0)  # it now waits inside SST for the run's next step
        started = time.monotonic()
        server.close()
        assert time.monotonic() - started < 6.0
        assert reader_processes(folder), "the attaching reader was killed"
        # The run's next step completes the reader's registration; the reader then sees
        # that the viewer is gone and closes itself. Killed instead, it would have made
        # that step crash or spin.
        wait_for(lambda: not reader_processes(folder), 20, "the reader never closed itself")
        stop(publisher)
        assert publisher.returncode == 0
    finally:
        stop(publisher)


def test_page_reports_a_run_that_was_killed_and_does_not_retry_it(tmp_path):
    folder = tmp_path / "killed-run"
    killed = subprocess.run(
        [sys.executable, "-c", "import os, signal, sys\n"
         "from tachyflow.insitu.monitor import MonitorPublisher\n"
         "publisher = MonitorPublisher(sys.argv[1])\n"
         "os.kill(os.getpid(), signal.SIGKILL)", str(folder)],
        timeout=60,
    )
    assert killed.returncode == -signal.SIGKILL
    assert (folder / "monitor.sst").exists()  # left behind
    with ViewerServer(folder, poll_interval=0.1) as server:
        failed = wait_for(lambda: (s := state(server, "page"))["error"] and s, 20,
                          "the page was not told")
        assert "no longer publishing" in failed["error"]
        assert not failed["attached"]
        wait_for(lambda: not reader_processes(folder), 10, "the failed reader did not exit")
        for _ in range(10):  # the page keeps polling; no new reader for the same file
            state(server, "page")
            assert not reader_processes(folder)
            time.sleep(0.1)


def test_a_reader_that_dies_attaching_is_started_again_then_given_up(tmp_path, monkeypatch):
    """A reader killed while attaching (it said nothing) is not the end of a live run: the
    viewer starts another after 1 s, 2 s, ..., and gives up after ATTACH_ATTEMPTS."""
    from tachyflow.insitu import monitor, viewer

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    monitor.contact_file(run_dir).write_text("a live run's contact\n")
    attempts = tmp_path / "attempts"
    # Stands for a reader killed before it spoke: it records its start and exits.
    monkeypatch.setattr(viewer, "READER_COMMAND", f"open({str(attempts)!r}, 'a').write('x')")
    monkeypatch.setattr(viewer, "ATTACH_ATTEMPTS", 3)
    with ViewerServer(run_dir, poll_interval=0.05) as server:
        first = wait_for(lambda: (s := state(server, "page"))["error"] and s, 10,
                         "the page was not told of the first death")
        assert "died attaching; again in 1 s" in first["error"]
        wait_for(lambda: "crashed" in (state(server, "page")["error"] or ""), 20,
                 "the viewer did not give up")
        for _ in range(5):  # given up: no more readers for this contact
            state(server, "page")
            time.sleep(0.1)
    assert attempts.read_text() == "xxx"


def test_server_and_command_check_their_arguments(tmp_path):
    with pytest.raises(ValueError, match="port"):
        ViewerServer(tmp_path, port=70000)
    with pytest.raises(TypeError, match="port"):
        ViewerServer(tmp_path, port="8080")
    with pytest.raises(ValueError, match="token"):
        ViewerServer(tmp_path, token="short")
    with pytest.raises(ValueError, match="idle_detach"):
        ViewerServer(tmp_path, idle_detach=0)
    result = subprocess.run(
        [sys.executable, "-m", "tachyflow", "view", str(tmp_path), "--port", "70000"],
        capture_output=True, text=True, timeout=60, env=command_environment(),
    )
    assert result.returncode == 2
    assert "port must be from 0 to 65535" in result.stderr + result.stdout


def test_view_command_prints_the_url_and_stops_on_ctrl_c(run_dir):
    command = subprocess.Popen(
        [sys.executable, "-m", "tachyflow", "view", str(run_dir), "--no-browser"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=command_environment(), preexec_fn=interruptible,
    )
    try:
        line = command.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/\?token=[\w-]+", line)
        assert url, line
        status, _, page = get(url.group(0))
        assert status == 200
        assert b"tachyflow view" in page
        bare = url.group(0).split("?")[0]
        assert get(bare)[0] == 403
        command.send_signal(signal.SIGINT)
        assert command.wait(60) == 0  # generous: a loaded machine (CI) is slow to wind down
    finally:
        stop(command)
