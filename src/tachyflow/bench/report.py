"""``tachyflow report DIR``: one self-contained HTML page from the results files in DIR."""

from __future__ import annotations

import base64
import html
import importlib
import tempfile
from pathlib import Path

from tachyflow.bench.plots import plot_samples
from tachyflow.bench.results import read_results, write_json
from tachyflow.errors import ConfigError
from tachyflow.io.files import replacing


def save(document: dict, folder, module) -> tuple[Path, Path]:
    """Write a results document and its plot into ``folder``; return both paths.

    ``module`` names (``stem(document)``) and plots (``plot(document, png)``) the document:
    the one its benchmark command declares (:func:`tachyflow.commands.save_results`).
    """
    folder = Path(folder)
    stem = module.stem(document)
    json_path = write_json(folder / f"{stem}.json", document)
    return json_path, module.plot(document, folder / f"{stem}.png")


def collect(folder) -> list[tuple[Path, dict]]:
    """Every tachyflow results file under ``folder``, oldest first; other JSON is skipped."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ConfigError(f"results folder {str(folder)!r} does not exist or is not a folder")
    found = []
    for path in sorted(folder.rglob("*.json")):
        try:
            found.append((path, read_results(path)))
        except ValueError:
            continue
    if not found:
        raise ConfigError(
            f"no tachyflow results files (*.json with a 'benchmark' key) in {folder}"
        )
    return sorted(found, key=lambda item: item[1].get("created", ""))


def _format_seconds(value) -> str:
    return "" if value is None else f"{value * 1e3:.3f} ms"


def _format_bandwidth(value) -> str:
    return "" if value is None else f"{value / 2**30:.2f} GiB/s"


def _loaded(document: dict) -> bool:
    """Whether other processes took more CPU than the threshold while it was measured."""
    return not (document.get("machine_load") or {}).get("quiet", True)


def _table(document: dict) -> str:
    # A ratio taken beside other processes' load is marked where it is shown.
    mark = " (loaded machine)" if _loaded(document) else ""
    rows = []
    for kind, entries in (("ours", document["results"]), ("peer", document["peers"])):
        for entry in entries:
            speedup = entry.get("speedup_vs_peer")
            cells = (
                entry["name"],
                kind,
                "yes" if entry.get("verified", True) else "FAILED",
                _format_seconds(entry.get("median")),
                _format_seconds(entry.get("min")),
                _format_bandwidth(entry.get("bandwidth")),
                "" if speedup is None else f"{speedup:.2f}x{mark}",
            )
            rows.append(
                "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>"
            )
    header = "".join(
        f"<th>{h}</th>"
        for h in ("candidate", "kind", "verified", "median", "min", "bandwidth", "speedup vs peer")
    )
    return f"<table><tr>{header}</tr>{''.join(rows)}</table>"


def _context(document: dict) -> str:
    machine, mpi = document["machine"], document["mpi"]
    load = machine.get("load_avg")
    versions = ", ".join(f"{k} {v}" for k, v in document.get("versions", {}).items() if v)
    missing = document.get("peers_missing", {})
    record = document.get("machine_load")
    lines = [
        f"created {document.get('created')}, tachyflow {document.get('tachyflow')}, "
        f"git {document.get('git') or 'unknown'}",
        f"machine {machine.get('host')} ({machine.get('processor')}), "
        f"{machine.get('cores')} cores, load average "
        + (", ".join(f"{x:.2f}" for x in load) if load else "unknown"),
        "other processes' CPU unknown (not measured)" if not record else
        f"other processes used {record['other_cpu']:.2f} CPU on average over "
        f"{record['window']:.1f} s (steal {record['steal']:.2f}): "
        + ("quiet" if record["quiet"] else
           f"LOADED (over {record['threshold']}): the ratios are not a fair comparison"),
        f"MPI: {mpi.get('library')} (MPI {mpi.get('standard')}), {mpi.get('ranks')} ranks on "
        f"{mpi.get('nodes')} node(s)",
        f"versions: {versions}",
        "parameters: " + ", ".join(f"{k}={v}" for k, v in document["params"].items()),
    ] + [f"peer {name} not measured: {why}" for name, why in missing.items()]
    return "".join(f"<li>{html.escape(line)}</li>" for line in lines)


def _plot_base64(document: dict, modules: dict[str, str]) -> str:
    with tempfile.TemporaryDirectory() as scratch:
        png = Path(scratch) / "plot.png"
        name = modules.get(document["benchmark"])
        module = None if name is None else importlib.import_module(name)
        if module is None:
            plot_samples(document, png, document["benchmark"], "time per call [ms]")
        else:
            module.plot(document, png)
        return base64.b64encode(png.read_bytes()).decode("ascii")


def write_report(folder, output=None, modules: dict[str, str] | None = None) -> Path:
    """Render every results file in ``folder`` into ``output`` (default DIR/report.html).

    ``modules`` maps a document's ``benchmark`` to the module that plots it (the registered
    benchmark commands declare them); others get a generic plot of their samples.
    """
    modules = modules or {}
    folder = Path(folder)
    output = folder / "report.html" if output is None else Path(output)
    sections = []
    for path, document in collect(folder):
        sections.append(
            f"<section><h2>{html.escape(document['benchmark'])} — "
            f"{html.escape(path.name)}</h2>"
            f"<img alt='plot of {html.escape(path.name)}' "
            f"src='data:image/png;base64,{_plot_base64(document, modules)}'>"
            f"{_table(document)}<ul>{_context(document)}</ul></section>"
        )
    page = (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>tachyflow benchmark report"
        "</title><style>body{font-family:sans-serif;max-width:60em;margin:auto}"
        "table{border-collapse:collapse}td,th{border:1px solid #bbb;padding:.2em .6em}"
        "img{max-width:100%}li{font-size:.9em}</style></head><body>"
        f"<h1>tachyflow benchmark report</h1><p>{len(sections)} results file(s) from "
        f"{html.escape(str(folder))}. Times are medians over repetitions of the slowest "
        "rank; speedups are the peer's median divided by ours, measured in the same run."
        f"</p>{''.join(sections)}</body></html>\n"
    )
    with replacing(output) as temporary:
        temporary.write_text(page)
    return output
