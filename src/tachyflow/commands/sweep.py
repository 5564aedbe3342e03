"""``tachyflow sweep``: a case run at every combination of some of its values.

Each point is an ordinary run (``tachyflow run CASE --set KEY=VALUE ...``, its console in
``run.out``) in a folder of its own under the sweep's, named after its values; the sweep
runs the points one after the other and is resumable: a point whose
run finished (its ``timings.json`` is written last) is kept, a point cut short goes on from
its last checkpoint (or starts again where it has none). After each point ``sweep.csv``
collects every finished point's values and results — the final statistics and the
numbers of the run's summaries (``summary.json`` of an airfoil, ``fan.json``,
``statistics.json``, ``wake.json``) — and ``sweep.png`` plots the chosen results against
the first varied key, beside a reference curve from a CSV file when one is given.
"""

from __future__ import annotations

import csv
import itertools
import json
import math
import subprocess
import sys
import tomllib
from pathlib import Path

from tachyflow.commands import Command, options, register
from tachyflow.errors import ConfigError

# The run's files whose top-level numbers become sweep.csv's columns, in this order.
SUMMARIES = ("summary.json", "fan.json", "statistics.json", "wake.json")


def parse_variation(text: str) -> tuple[str, list]:
    """``KEY=V1,V2,...`` into the key and its values (each a TOML value, a bare word a
    string); ValueError naming what is wrong."""
    key, equals, values = text.partition("=")
    if not equals or "." not in key or not values.strip():
        raise ValueError(f"--vary {text!r} must be SECTION.KEY=V1,V2,...")
    parsed = []
    for value in values.split(","):
        try:
            parsed.append(tomllib.loads(f"value = {value.strip()}")["value"])
        except tomllib.TOMLDecodeError:
            parsed.append(value.strip())
    return key.strip(), parsed


def point_name(values: dict) -> str:
    """The folder of a point: ``KEY=VALUE`` pairs joined by ``,`` (the keys' last parts)."""
    return ",".join(f"{key.rsplit('.', 1)[-1]}={value}" for key, value in values.items())


def results(folder: Path) -> dict[str, float]:
    """The numbers a finished run reports: its final statistics, then its summaries'
    top-level numbers (a name already taken gets the file's stem as a prefix)."""
    found = {}
    timings = json.loads((folder / "timings.json").read_text())
    documents = [("", timings.get("final_statistics", {}))]
    for name in SUMMARIES:
        path = folder / name
        if path.is_file():
            documents.append((path.stem, json.loads(path.read_text())))
    for stem, document in documents:
        for key, value in document.items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                found[key if key not in found else f"{stem}.{key}"] = float(value)
    return found


def write_table(path: Path, rows: list[dict]) -> None:
    """``sweep.csv`` from the finished points' rows (every column any row has)."""
    from tachyflow.io.files import replacing

    columns = list(dict.fromkeys(key for row in rows for key in row))
    with replacing(path) as temporary, Path(temporary).open("w", newline="") as table:
        writer = csv.DictWriter(table, columns, restval="")
        writer.writeheader()
        writer.writerows(rows)


def plot(path: Path, rows: list[dict], key: str, shown: list[str], reference=None) -> None:
    """The ``shown`` results against ``key``, one panel each; a reference's points beside."""
    from tachyflow.io.figures import new_subplots, save_figure

    figure, axes = new_subplots(1, len(shown), figsize=(4.5 * len(shown), 3.8), squeeze=False)
    for axis, name in zip(axes[0], shown, strict=True):
        points = sorted((row[key], row[name]) for row in rows
                        if isinstance(row.get(key), int | float) and name in row)
        axis.plot([p[0] for p in points], [p[1] for p in points], "o-", label="tachyflow")
        if reference is not None and name in reference and key in reference:
            axis.plot(reference[key], reference[name], "ks", mfc="none", label="reference")
        axis.set_xlabel(key)
        axis.set_ylabel(name)
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    save_figure(figure, path)


def read_reference(path: str) -> dict[str, list[float]]:
    """A reference curve: a CSV file whose columns are named as sweep.csv's."""
    with Path(path).open(newline="") as table:
        rows = list(csv.DictReader(table))
    if not rows:
        raise ConfigError(f"--reference {path}: no rows")
    return {name: [float(row[name]) for row in rows] for name in rows[0]}


@register
class Sweep(Command):
    name = "sweep"
    help = "run a case at every combination of some of its values (polars, fan curves)"
    description = __doc__.split("\n\n", 1)[1].replace("\n", " ")
    uses_mpi = False  # each point is a run of its own; the sweep only starts them

    def add_arguments(self, parser):
        parser.add_argument("case", help="built-in case name or path to a .toml case file")
        parser.add_argument(
            "--vary", action="append", required=True, metavar="SECTION.KEY=V1,V2,...",
            help="a key and its values (repeatable: every combination is a point)",
        )
        parser.add_argument(
            "--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
            dest="overrides", help="a value changed at every point (as tachyflow run --set)",
        )
        parser.add_argument("-n", type=options.positive_int, default=None, metavar="N",
                            dest="point_ranks", help="ranks of each point's run")
        parser.add_argument("-o", "--output", required=True, help="the sweep's folder")
        parser.add_argument(
            "--plot", action="append", default=[], metavar="RESULT",
            help="a result of sweep.csv plotted against the first varied key (repeatable; "
            "default: those of the run's summary files, at most four)",
        )
        parser.add_argument(
            "--against", default=None, metavar="RESULT",
            help="plot against this column of sweep.csv instead of the first varied key "
            "(a fan's flow_rate when its inflow velocity is varied)",
        )
        parser.add_argument("--reference", default=None, metavar="CSV",
                            help="points to draw beside (columns named as sweep.csv's)")

    def run(self, args) -> int:
        from tachyflow import config

        try:
            variations = dict(parse_variation(text) for text in args.vary)
        except ValueError as error:
            raise ConfigError(str(error)) from None
        reference = read_reference(args.reference) if args.reference else None
        points = [dict(zip(variations, values, strict=True))
                  for values in itertools.product(*variations.values())]
        for point in points:  # every point checked before any runs
            config.load(args.case, [*args.overrides, *_overrides(point)])
        folder = Path(args.output)
        folder.mkdir(parents=True, exist_ok=True)
        rows = []
        for number, point in enumerate(points, 1):
            run = folder / point_name(point)
            if not (run / "timings.json").is_file():
                print(f"point {number}/{len(points)}: {point_name(point)}", flush=True)
                self._run_point(args, point, run)
            else:
                print(f"point {number}/{len(points)}: {point_name(point)} (done)", flush=True)
            rows.append({**point, **results(run)})
            write_table(folder / "sweep.csv", rows)
        shown = args.plot or _summary_columns(rows, folder / point_name(points[0]))
        first = next(iter(variations))
        if args.against is not None:
            missing = [number for number, row in enumerate(rows, 1) if args.against not in row]
            if missing:
                raise ConfigError(f"--against {args.against}: no such result at point(s) "
                                  f"{missing}; sweep.csv's are {sorted(rows[0])}")
            plot(folder / "sweep.png", rows, args.against, shown, reference)
        elif shown and all(isinstance(value, int | float) for value in variations[first]):
            plot(folder / "sweep.png", rows, first, shown, reference)
        print(f"{len(points)} points: {folder / 'sweep.csv'}", flush=True)
        return 0

    @staticmethod
    def _run_point(args, point: dict, run: Path) -> None:
        """One point's ``tachyflow run``, from its last checkpoint when it has one."""
        sets = [*args.overrides, *_overrides(point)]
        command = [sys.executable, "-m", "tachyflow", "run", args.case, "-o", str(run),
                   "--quiet", *(item for value in sets for item in ("--set", value))]
        if args.point_ranks:
            command += ["-n", str(args.point_ranks)]
        if any((run / "checkpoints").glob("*.ckpt")):
            command += ["--restart", "latest"]
        run.mkdir(parents=True, exist_ok=True)
        with (run / "run.out").open("a") as output:  # the run's own console, kept
            finished = subprocess.run(command, stdout=output, stderr=subprocess.STDOUT,
                                      check=False)
        if finished.returncode != 0:
            raise ConfigError(
                f"point {point_name(point)} failed (exit {finished.returncode}): see "
                f"{run / 'run.out'}; run the sweep again to go on from it"
            )


def _overrides(point: dict) -> list[str]:
    """A point's values as ``--set`` overrides (``SECTION.KEY=VALUE``, the value in TOML)."""
    from tachyflow.options import toml_value

    return [f"{key}={toml_value(value)}" for key, value in point.items()]


def _summary_columns(rows: list[dict], first_run: Path) -> list[str]:
    """Default plots: the numbers of the first point's summary files, at most four."""
    names = []
    for name in SUMMARIES:
        path = first_run / name
        if path.is_file():
            names += [key for key, value in json.loads(path.read_text()).items()
                      if isinstance(value, int | float) and not isinstance(value, bool)
                      and math.isfinite(value)]
    return [name for name in dict.fromkeys(names) if name in rows[0]][:4]
