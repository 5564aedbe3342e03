"""``tachyflow bench ...``: benchmarks, each comparing with a named peer in the same run."""

from __future__ import annotations

from tachyflow import runtime
from tachyflow.commands import EXIT_FAILURE, register_group, save_results

register_group(
    "bench",
    "run a benchmark",
    "Benchmarks; each writes results JSON and a plot, and measures the named peer in the same "
    "run.",
)


def run_stages(stages, failed: list[str], prefix: str = "") -> None:
    """Run each ``(label, tachyflow arguments)`` stage as its own process, one after
    another; a stage that fails is added to ``failed`` and the next one runs."""
    import subprocess
    import sys

    for label, command in stages:
        print(f"== {prefix}{label}: tachyflow {' '.join(command)}", flush=True)
        code = subprocess.call([sys.executable, "-m", "tachyflow", *command])
        if code:
            failed.append(f"{prefix}{label} (exit {code})")


def report_benchmark(document: dict, operation: str, output: str) -> int:
    """Save results and plot (rank 0), print the table; exit code 1 if a check failed."""
    from rich.table import Table

    console = runtime.make_console()
    if runtime.is_root():
        json_path, png_path = save_results(document, output)
        params = document["params"]
        peer = document["peers"][0]["name"] if document["peers"] else "peer"
        table = Table(
            title=(
                f"{operation}, {'x'.join(map(str, params['global_shape']))} {params['dtype']}, "
                f"{document['mpi']['ranks']} ranks, {'x'.join(map(str, params['proc_grid']))} "
                f"grid, {params['repeats']} repeats"
            )
        )
        columns = ["candidate", "verified", "median", "min"]
        with_bandwidth = any("bandwidth" in e for e in document["results"])
        columns += ["bandwidth"] if with_bandwidth else []
        for column in [*columns, f"vs {peer}"]:
            table.add_column(
                column, justify="left" if column == "candidate" else "right", no_wrap=True
            )
        for entry in document["results"] + document["peers"]:
            ok = entry["verified"]
            speedup = entry.get("speedup_vs_peer")
            row = [
                entry["name"],
                "yes" if ok else "[red]FAILED[/red]",
                f"{entry['median'] * 1e3:.2f} ms" if ok else "-",
                f"{entry['min'] * 1e3:.2f} ms" if ok else "-",
            ]
            if with_bandwidth:
                row.append(f"{entry['bandwidth'] / 2**30:.2f} GiB/s" if ok else "-")
            row.append(f"{speedup:.2f}x faster" if speedup else "-")
            table.add_row(*row)
        console.print(table)
        for entry in document["results"]:
            ratios = entry.get("speedup_vs_peers", {})
            if len(ratios) > 1:  # the table shows the first only
                console.print(
                    f"{entry['name']}: "
                    + ", ".join(f"{r:.2f}x faster than {n}" for n, r in ratios.items())
                )
        for name, why in document.get("peers_missing", {}).items():
            console.print(f"peer {name} {why}")
        from tachyflow.bench import overlap, slabs

        for line in (overlap.summary(document), slabs.summary(document)):
            if line:
                console.print(line)
        console.print(f"wrote {json_path} and {png_path}")
    failed = [e["name"] for e in document["results"] + document["peers"] if not e["verified"]]
    if failed:
        console.print(f"[red]verification failed for {', '.join(failed)}: not timed[/red]")
        return EXIT_FAILURE
    return 0
