"""The peer of ``tachyflow bench hpl``: HPL inside Debian's ``hpcc`` (HPC Challenge 1.5.0,
built on Open MPI), launched with Open MPI's ``mpirun`` in a scratch folder (through
the emulated cluster's namespaces with ``--nodes``).

HPCC has no switch to run HPL alone: it runs its whole suite (HPL, DGEMM, STREAM, PTRANS,
RandomAccess, FFT, latency and bandwidth), reading ``hpccinf.txt`` (HPL's input file) in
its working folder and writing ``hpccoutf.txt``. Every order N goes into one input file,
so the suite runs once; HPL's own result lines (time, GFLOP/s, scaled residual, PASSED or
FAILED) are read from its section of the output.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from tachyflow.bench.hpl import hpl_flops
from tachyflow.bench.results import summarize

PEER_NAME = "hpcc HPL"
INSTALL_HINT = "install Debian's hpcc and openmpi-bin (make install-bench)"

# HPL.dat as HPCC reads it: the settings of HPCC's example input (right-looking panel
# factorisation with Crout recursion, increasing modified ring broadcast, look-ahead 1,
# mixed swapping), with N, NB and P x Q filled in.
_INPUT = """HPLinpack benchmark input file
Innovative Computing Laboratory, University of Tennessee
HPL.out      output file name (if any)
8            device out (6=stdout,7=stderr,file)
{count}            # of problems sizes (N)
{sizes}         Ns
1            # of NBs
{block}           NBs
0            PMAP process mapping (0=Row-,1=Column-major)
1            # of process grids (P x Q)
{rows}            Ps
{cols}            Qs
16.0         threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
4            NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
1            # of recursive panel fact.
1            RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
1            DEPTHs (>=0)
2            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
##### This line (no. 32) is ignored (it serves as a separator). ######
0                      		Number of additional problem sizes for PTRANS
1200 10000 30000        	values of N
0                       	number of additional blocking sizes for PTRANS
40 9 8 13 13 20 16 32 64       	values of NB
"""

_RESULT = re.compile(r"^W\S+\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s*$")
_RESIDUAL = re.compile(r"^\|\|Ax-b\|\|_oo.*=\s*(\S+)\s+\.+\s+(PASSED|FAILED)")


def input_file(sizes, block: int, rows: int, cols: int) -> str:
    """The text of ``hpccinf.txt`` for these orders, block size and process grid."""
    return _INPUT.format(
        count=len(sizes), sizes=" ".join(map(str, sizes)), block=block, rows=rows, cols=cols
    )


def parse_output(text: str) -> list[dict]:
    """HPL's results in an ``hpccoutf.txt``: one dict per test (N, NB, P, Q, seconds,
    GFLOP/s, scaled residual, passed)."""
    section = text.split("Begin of HPL section.", 1)[-1].split("End of HPL section.", 1)[0]
    found, last = [], None
    for line in section.splitlines():
        if match := _RESULT.match(line.strip()):
            n, nb, rows, cols = (int(v) for v in match.groups()[:4])
            last = {"n": n, "nb": nb, "proc_grid": [rows, cols],
                    "median": float(match[5]), "gflops": float(match[6])}
        elif (match := _RESIDUAL.match(line.strip())) and last is not None:
            last.update(residual=float(match[1]), residual_passed=match[2] == "PASSED")
            found.append(last)
            last = None
    return found


def run_hpcc(
    sizes, block: int, grid_shape, repeats: int = 1, nodes: int | None = None,
    timeout: float = 3600,
) -> list[dict]:
    """Run Debian's ``hpcc`` on ``P × Q`` ranks of this machine (or spread over ``nodes``
    nodes of the emulated cluster, :mod:`tachyflow.cluster`), HPL solving every order in
    ``sizes`` ``repeats`` times (interleaved); the peer's results entries, one per order,
    with the median time.

    Raises
    ------
    FileNotFoundError
        ``hpcc`` or Open MPI's ``mpirun`` is not installed.
    RuntimeError
        hpcc failed or printed no HPL result.
    subprocess.TimeoutExpired
        It ran longer than ``timeout`` seconds.
    """
    program = shutil.which("hpcc")
    launcher = shutil.which("mpirun.openmpi") or shutil.which("orterun")
    if program is None or launcher is None:
        missing = "hpcc" if program is None else "Open MPI's mpirun"
        raise FileNotFoundError(f"{missing} not found: {INSTALL_HINT}")
    rows, cols = grid_shape
    if nodes is not None:
        from tachyflow import cluster

        command = cluster.launch_command(rows * cols, nodes, mpiexec=launcher)
    else:
        command = [launcher, "--bind-to", "none", "--oversubscribe", "-np", str(rows * cols)]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            command.append("--allow-run-as-root")
    # One BLAS thread per rank, as ours; no variable of the MPICH job that launched us.
    environment = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PMI_", "PMIX_", "HYDRA_", "MPIR_", "OMPI_"))
    }
    environment.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    with tempfile.TemporaryDirectory(prefix="tachyflow-hpcc-") as folder:
        orders = [n for _ in range(repeats) for n in sizes]
        Path(folder, "hpccinf.txt").write_text(input_file(orders, block, rows, cols))
        completed = subprocess.run(
            [*command, program], cwd=folder, env=environment, capture_output=True, text=True,
            timeout=timeout,
        )
        output = Path(folder, "hpccoutf.txt")
        text = output.read_text() if output.exists() else ""
    results = parse_output(text)
    if completed.returncode or {r["n"] for r in results} != set(sizes):
        raise RuntimeError(
            f"hpcc failed (exit {completed.returncode}): "
            f"{(completed.stderr or completed.stdout)[-400:].strip()}"
        )
    version = re.search(r"HPC Challenge Benchmark version (\S+)", text)
    entries = []
    for n in sizes:
        runs = [r for r in results if r["n"] == n]
        # HPL prints its time to 0.01 s, its GFLOP/s to four digits: time from the latter.
        timing = summarize([hpl_flops(n) / (r["gflops"] * 1e9) for r in runs])
        passed = all(r["residual_passed"] for r in runs)
        entries.append({
            "name": PEER_NAME,
            "n": n,
            "nb": block,
            "proc_grid": [rows, cols],
            "ranks": rows * cols,
            "verified": passed,
            "residual": max(r["residual"] for r in runs),
            "residual_passed": passed,
            "gflops": hpl_flops(n) / timing["median"] / 1e9,
            "gflops_reported": [r["gflops"] for r in runs],
            "version": version[1] if version else "unknown",
            "program": program,
            **timing,
        })
    return entries
