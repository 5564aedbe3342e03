"""Emulated cluster nodes on one machine: Linux network namespaces on a bridge, links shaped
with ``tc``, and an MPI launcher that starts ranks inside them (no ssh).

``tachyflow cluster up --nodes N [--bandwidth 100Mbit]`` makes N namespaces
``tachyflow-node0`` ... with private addresses ``10.231.0.1`` ... on the bridge
``tfbr0`` (one veth pair each); with a bandwidth, an HTB class shapes both ends of every
link (rate = ceil, a large quantum: ``tbf`` overshoots with large messages). With
``--latency``, a ``netem`` delay of half the latency on each end of every link, where the
kernel has ``netem``; where it has not (these machines), ``up`` says so and makes nothing,
and the cost models add latency instead (``tachyflow model``).
``tachyflow ... -n R --nodes N`` then runs mpiexec inside node 0 with Hydra's ssh
launcher replaced by a script that enters the target node's namespace, the ranks placed
in blocks, and MPICH forced onto TCP (``MPIR_CVAR_CH4_NETMOD=ofi``, ``FI_PROVIDER=tcp``:
the wheel's default UCX would use shared memory between namespaces, unshaped).

Needs root or CAP_NET_ADMIN. ``up`` twice is harmless; ``down`` removes everything it
made, found by name, also after a crash or a lost state file.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

from tachyflow.errors import ConfigError

PREFIX = "tachyflow-node"
BRIDGE = "tfbr0"
VETH = "tfveth"
SUBNET = "10.231.0"  # private addresses made here, never anything else
MAX_NODES = 64
# What forces MPICH (the mpich wheel, CH4) onto TCP between the namespaces.
TCP_ENVIRONMENT = {"MPIR_CVAR_CH4_NETMOD": "ofi", "FI_PROVIDER": "tcp"}
BANDWIDTH = re.compile(r"^(\d+(?:\.\d+)?)\s*([kKmMgG])bit$")
LATENCY = re.compile(r"^(\d+(?:\.\d+)?)\s*(us|ms)$")
NO_NETEM = "not emulated (no netem in this kernel): modelled by tachyflow model"


class ClusterError(ConfigError):
    """The emulated cluster cannot be made, used or found."""


def state_folder() -> Path:
    """Where the cluster's state and launcher live (``$TACHYFLOW_CLUSTER_STATE``)."""
    return Path(os.environ.get("TACHYFLOW_CLUSTER_STATE", "/run/tachyflow-cluster"))


@dataclass
class ClusterState:
    """What ``up`` made: node count, link bandwidth (``None``: unshaped), addresses."""

    nodes: int
    bandwidth: str | None
    addresses: list[str]
    namespaces: list[str]
    launcher: str
    latency: str | None = None


def parse_latency(text: str | None) -> float | None:
    """Seconds from ``"50us"`` or ``"1.5ms"`` (one-way, between two nodes); None for none."""
    if text is None or text.lower() == "none":
        return None
    match = LATENCY.match(text.strip())
    if not match or float(match.group(1)) <= 0:
        raise ClusterError(
            f"--latency {text!r}: expected a positive time such as 50us or 1ms, or none"
        )
    return float(match.group(1)) * (1e-6 if match.group(2) == "us" else 1e-3)


def parse_bandwidth(text: str | None) -> tuple[str | None, float | None]:
    """``("100Mbit", 100.0)`` from ``"100Mbit"``; ``(None, None)`` for ``none``."""
    if text is None or text.lower() == "none":
        return None, None
    match = BANDWIDTH.match(text.strip())
    if not match:
        raise ClusterError(
            f"--bandwidth {text!r}: expected a rate such as 100Mbit, 1Gbit, 10Gbit or none"
        )
    number, unit = match.group(1), match.group(2).lower()
    value = float(number) * {"k": 1e-3, "m": 1.0, "g": 1e3}[unit]
    if value <= 0:
        raise ClusterError(f"--bandwidth {text!r}: must be positive")
    return f"{number}{ {'k': 'k', 'm': 'M', 'g': 'G'}[unit] }bit", value


def _run(*command: str, namespace: str | None = None, check: bool = True):
    """Run ``ip``/``tc`` (inside ``namespace`` if given); ClusterError naming the command."""
    if namespace is not None:
        command = ("ip", "netns", "exec", namespace, *command)
    result = subprocess.run(command, capture_output=True, text=True)
    if check and result.returncode:
        detail = result.stderr.strip() or f"exit code {result.returncode}"
        if "not permitted" in detail.lower() or "permission denied" in detail.lower():
            raise ClusterError(
                "the emulated cluster needs root or CAP_NET_ADMIN (network namespaces, "
                f"veth, tc): {' '.join(command)}: {detail}"
            )
        raise ClusterError(f"{' '.join(command)}: {detail}")
    return result


def _require_tools() -> None:
    missing = [tool for tool in ("ip", "tc") if shutil.which(tool) is None]
    if missing:
        raise ClusterError(f"the emulated cluster needs {' and '.join(missing)} (iproute2)")


def _namespaces() -> list[str]:
    """Namespaces of an emulated cluster that exist now (found by name)."""
    listed = _run("ip", "netns", "list", check=False).stdout.split("\n")
    return sorted(
        (name.split()[0] for name in listed if name.startswith(PREFIX)),
        key=lambda name: int(name[len(PREFIX) :]),
    )


def read_state() -> ClusterState | None:
    """The state ``up`` recorded, or None."""
    path = state_folder() / "state.json"
    try:
        return ClusterState(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None


def _shape(device: str, megabits: float, namespace: str | None = None) -> None:
    """An HTB class of ``megabits`` (rate = ceil) as the root qdisc of ``device``."""
    rate = f"{megabits}mbit"
    _run("tc", "qdisc", "add", "dev", device, "root", "handle", "1:", "htb", "default", "10",
         "r2q", "1000", namespace=namespace)
    _run("tc", "class", "add", "dev", device, "parent", "1:", "classid", "1:10", "htb",
         "rate", rate, "ceil", rate, "quantum", "200000", namespace=namespace)


def _delay(device: str, seconds: float, shaped: bool, namespace: str | None = None) -> None:
    """A netem delay of ``seconds`` on ``device`` (under the HTB class when ``shaped``)."""
    where = ("parent", "1:10", "handle", "10:") if shaped else ("root", "handle", "1:")
    result = _run("tc", "qdisc", "add", "dev", device, *where, "netem", "delay",
                  f"{seconds * 1e6:.0f}us", namespace=namespace, check=False)
    if result.returncode:
        detail = result.stderr.strip() or f"exit code {result.returncode}"
        raise ClusterError(
            f"--latency: this kernel cannot delay packets (tc netem: {detail}); latency is "
            "not emulated here: leave --latency out and let the cost models add it "
            "(tachyflow model predict --profile ...)"
        )


def _write_launcher(folder: Path, namespaces: list[str], addresses: list[str]) -> Path:
    """The program Hydra calls instead of ssh: ``launcher [options] HOST COMMAND...``."""
    cases = "\n".join(
        f"  {address}) node={name};;" for address, name in zip(addresses, namespaces, strict=True)
    )
    script = f"""#!/bin/sh
# Written by tachyflow cluster up: start a command in an emulated node (Hydra's "ssh").
while [ $# -gt 0 ]; do case "$1" in -*) shift;; *) break;; esac; done
host="$1"; shift
case "$host" in
{cases}
  *) echo "tachyflow cluster: no emulated node $host" >&2; exit 255;;
esac
exec ip netns exec "$node" sh -c "$*"
"""
    path = folder / "launch"
    path.write_text(script)
    path.chmod(0o755)
    return path


def up(
    nodes: int, bandwidth: str | None = None, latency: str | None = None
) -> tuple[ClusterState, bool]:
    """Make the emulated cluster (idempotent); returns its state and whether it was made
    now (False: the same cluster was already up). ``latency`` (one-way, node to node)
    needs netem: without it, ClusterError and nothing made."""
    if not isinstance(nodes, int) or not 1 <= nodes <= MAX_NODES:
        raise ClusterError(f"--nodes {nodes!r}: expected 1 to {MAX_NODES}")
    label, megabits = parse_bandwidth(bandwidth)
    delay = parse_latency(latency)
    latency_label = None if delay is None else latency.strip()
    _require_tools()
    existing = read_state()
    if (
        existing is not None
        and existing.nodes == nodes
        and existing.bandwidth == label
        and existing.latency == latency_label
        and _namespaces() == existing.namespaces
    ):
        return existing, False
    down()
    namespaces = [f"{PREFIX}{index}" for index in range(nodes)]
    addresses = [f"{SUBNET}.{index + 1}" for index in range(nodes)]
    try:
        _run("ip", "link", "add", BRIDGE, "type", "bridge")
        _run("ip", "link", "set", BRIDGE, "up")
        for index, (name, address) in enumerate(zip(namespaces, addresses, strict=True)):
            veth = f"{VETH}{index}"
            _run("ip", "netns", "add", name)
            _run("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", name)
            _run("ip", "link", "set", veth, "master", BRIDGE, "up")
            _run("ip", "addr", "add", f"{address}/24", "dev", "eth0", namespace=name)
            _run("ip", "link", "set", "eth0", "up", namespace=name)
            _run("ip", "link", "set", "lo", "up", namespace=name)
            if megabits is not None:  # both directions of the link
                _shape(veth, megabits)
                _shape("eth0", megabits, namespace=name)
            if delay is not None:  # half on each end: a message crosses two of them
                _delay(veth, delay / 2, megabits is not None)
                _delay("eth0", delay / 2, megabits is not None, namespace=name)
        folder = state_folder()
        folder.mkdir(parents=True, exist_ok=True)
        launcher = _write_launcher(folder, namespaces, addresses)
        state = ClusterState(nodes, label, addresses, namespaces, str(launcher), latency_label)
        (folder / "state.json").write_text(json.dumps(asdict(state), indent=2) + "\n")
    except BaseException:
        down()  # leave nothing half made
        raise
    return state, True


def down() -> list[str]:
    """Remove every namespace, veth and the bridge an emulated cluster made (found by
    name, so this also cleans up after a crash); returns what was removed."""
    removed = []
    links = _run("ip", "-o", "link", "show", check=False).stdout if shutil.which("ip") else ""
    for veth in sorted(set(re.findall(rf"\d+: ({VETH}\d+)[@:]", links))):
        _run("ip", "link", "del", veth, check=False)  # at once, not when the netns goes
        removed.append(veth)
    for name in _namespaces():
        _run("ip", "netns", "del", name, check=False)
        removed.append(name)
    if re.search(rf"\d+: {BRIDGE}[@:]", links):
        _run("ip", "link", "del", BRIDGE, check=False)
        removed.append(BRIDGE)
    shutil.rmtree(state_folder(), ignore_errors=True)
    return removed


def status() -> dict:
    """What is up now: nodes, addresses, bandwidth, and whether it matches its state."""
    state = read_state()
    found = _namespaces() if shutil.which("ip") else []
    report = {
        "up": state is not None and found == state.namespaces,
        "namespaces": found,
        "latency": NO_NETEM,
    }
    if state is not None:
        report.update(asdict(state))
        report["latency"] = state.latency or NO_NETEM
        if found != state.namespaces:
            report["stale"] = "the recorded nodes do not all exist: run `tachyflow cluster down`"
    elif found:
        report["stale"] = "nodes without a state file: run `tachyflow cluster down`"
    return report


def mpiexec_flavour(mpiexec: str) -> str:
    """``"hydra"`` (MPICH and its derivatives) or ``"open-mpi"``, from ``mpiexec --version``."""
    try:
        text = subprocess.run(
            [mpiexec, "--version"], capture_output=True, text=True, timeout=30
        ).stdout
    except (OSError, subprocess.TimeoutExpired) as error:
        raise ClusterError(f"cannot run {mpiexec} --version: {error}") from None
    if "Open MPI" in text or "OpenRTE" in text:
        return "open-mpi"
    if "HYDRA" in text:
        return "hydra"
    raise ClusterError(
        f"{mpiexec}: neither MPICH's Hydra nor Open MPI's mpirun (its --version says "
        f"{text.strip()[:80]!r}); the emulated cluster knows how to start those two"
    )


def launch_command(ranks: int, nodes: int, mpiexec: str) -> list[str]:
    """The command (without the program) with which ``mpiexec`` (MPICH's Hydra or Open
    MPI's mpirun) starts ``ranks`` ranks on the first ``nodes`` emulated nodes, in blocks,
    over TCP."""
    state = read_state()
    if state is None or _namespaces() != state.namespaces:
        raise ClusterError(
            f"--nodes {nodes}: no emulated cluster is up (`tachyflow cluster up --nodes "
            f"{nodes}` first)"
        )
    if not 1 <= nodes <= state.nodes:
        raise ClusterError(f"--nodes {nodes}: the emulated cluster has {state.nodes} nodes")
    if ranks < nodes:
        raise ClusterError(f"--nodes {nodes} needs at least {nodes} ranks, got -n {ranks}")
    per_node = -(-ranks // nodes)
    environment = {
        "TACHYFLOW_NETWORK": state.bandwidth or "unshaped",
        "TACHYFLOW_PLACEMENT": "block",
    }
    enter = ["ip", "netns", "exec", state.namespaces[0], mpiexec]
    if mpiexec_flavour(mpiexec) == "open-mpi":
        # TCP only (ob1 + tcp, no shared memory between namespaces), on the bridge's subnet,
        # the agent entering the namespaces as ssh would; no binding: every node would
        # otherwise pin its rank to core 0 of the one machine.
        subnet = f"{SUBNET}.0/24"
        command = [
            *enter, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
            "--mca", "plm_rsh_agent", state.launcher, "--mca", "pml", "ob1",
            "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", subnet,
            "--mca", "oob_tcp_if_include", subnet,
            "--host", ",".join(f"{a}:{per_node}" for a in state.addresses[:nodes]),
            "--map-by", f"ppr:{per_node}:node",
        ]
        for name in ("MPI4PY_LIBMPI", "PYTHONPATH", "TACHYFLOW_PIN"):
            if name in os.environ:
                command += ["-x", name]
        for name, value in environment.items():
            command += ["-x", f"{name}={value}"]
        return [*command, "-n", str(ranks)]
    command = [
        *enter, "-launcher", "ssh", "-launcher-exec", state.launcher,
        "-hosts", ",".join(state.addresses[:nodes]), "-localhost", state.addresses[0],
        "-ppn", str(per_node),
    ]
    for name, value in {**TCP_ENVIRONMENT, **environment}.items():
        command += ["-genv", name, value]
    return [*command, "-n", str(ranks)]
