"""``tachyflow model ...``: communication cost models (predict, simulate, fit, calibrate)."""

from __future__ import annotations

import json
from pathlib import Path

from tachyflow.commands import Command, options, register, register_group
from tachyflow.errors import ConfigError

register_group(
    "model",
    "communication cost models: predict, simulate, fit, calibrate",
    "Hockney and LogGP cost models of collective algorithms: closed-form predictions, the "
    "schedule simulator, and fits of ping-pong measurements into machine profiles.",
)


def _algorithm_table():
    from tachyflow.collectives.algorithms import ALGORITHMS

    return ALGORITHMS


class _Estimate(Command):
    """``model predict`` and ``model simulate``: one algorithm's time under a profile."""

    def add_arguments(self, parser):
        parser.add_argument("--op", required=True, choices=sorted(_algorithm_table()))
        parser.add_argument(
            "--algo",
            required=True,
            help="algorithm name (see --help of tachyflow.collectives.algorithms)",
        )
        parser.add_argument(
            "-P",
            "--ranks-count",
            dest="size",
            type=options.positive_int,
            required=True,
            help="number of ranks",
        )
        parser.add_argument(
            "--size",
            dest="nbytes",
            type=options.byte_size,
            required=True,
            help="message size per rank, e.g. 8B, 64KiB, 1MiB (one rank's block for gather, "
            "scatter and alltoall)",
        )
        parser.add_argument(
            "--profile",
            default=None,
            help="built-in profile (sp2, t3e, pc-cluster, fast-ethernet, "
            "gigabit-ethernet, myrinet-2000, infiniband-qdr, shared-memory) or a fitted JSON",
        )
        parser.add_argument(
            "--segments",
            type=options.positive_int,
            default=None,
            help="segment count (default: the model's optimum for pipeline, two-path and "
            "segmented-ring)",
        )

    def run(self, args) -> int:
        """``tachyflow model predict`` and ``tachyflow model simulate``."""
        import time

        from tachyflow.collectives import schedule_count, segment_count
        from tachyflow.collectives.algorithms import build
        from tachyflow.collectives.formulas import predict
        from tachyflow.collectives.simulator import simulate
        from tachyflow.models.profiles import builtin_profiles, load_profile, profile_source

        if args.algo not in _algorithm_table()[args.op]:
            raise ConfigError(
                f"{args.op} algorithm must be one of {sorted(_algorithm_table()[args.op])}, got "
                f"{args.algo!r}"
            )
        profile = load_profile(args.profile)
        nbytes = schedule_count(args.op, args.size, args.nbytes)
        segments = args.segments or segment_count(args.op, args.algo, args.size, nbytes, profile)
        print(
            f"{args.op} {args.algo}, P = {args.size}, {args.nbytes} B per rank, profile "
            f"{profile.name} ({type(profile).__name__}: start-up {profile.alpha * 1e6:.3g} us, "
            f"{profile.bandwidth / 1e6:.4g} MB/s)"
        )
        if profile.name in builtin_profiles():
            print(f"profile source: {profile_source(profile.name)}")
        if args.model_command == "predict":
            try:
                seconds, segments = predict(
                    args.op, args.algo, args.size, nbytes, profile, segments
                )
                how = "closed form"
            except ValueError:
                schedule = build(args.op, args.algo, args.size, nbytes, 0, segments)
                seconds, segments = simulate(schedule, profile).time, schedule.segments
                how = "simulated (no closed form for this algorithm or model)"
            print(f"predicted time {seconds * 1e6:.2f} us ({how}), segments {segments or 1}")
            return 0
        schedule = build(args.op, args.algo, args.size, nbytes, 0, segments)
        started = time.perf_counter()
        result = simulate(schedule, profile, check=args.check)
        elapsed = time.perf_counter() - started
        print(
            f"simulated time {result.time * 1e6:.2f} us, segments {schedule.segments}, "
            f"{result.steps} steps, {result.messages} messages, {result.bytes} B moved"
        )
        path = result.critical_path
        print(
            f"critical path (ends on rank {result.critical_rank}): {path['messages']} messages; "
            + ", ".join(
                f"{part} {path[part] * 1e6:.2f} us"
                for part in ("startup", "transfer", "local", "waiting")
            )
        )
        print(f"simulation took {elapsed:.2f} s")
        if args.check:
            print("data tracking: every rank ends with the right data")
        return 0


@register
class Predict(_Estimate):
    name = "model predict"
    help = "closed-form time and optimal segment count"


@register
class Simulate(_Estimate):
    name = "model simulate"
    help = "run the algorithm's schedule in virtual time"

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument(
            "--check", action="store_true", help="also track the data and verify the result"
        )


@register
class Fit(Command):
    name = "model fit"
    help = "fit a Hockney (and LogGP) profile to ping-pong measurements"
    description = (
        "Fit T(m) = alpha + m beta to one-way ping-pong times: a tachyflow results JSON, or a "
        "text table of size (bytes) and time (osu_latency output). When the results JSON of "
        "`tachyflow bench pingpong` carries PRTT round trips, also fit LogGP (L, o, g, G) by "
        "Netgauge's method; the profile holds both."
    )

    def add_arguments(self, parser):
        parser.add_argument("measurements", help="results JSON or two-column text file")
        parser.add_argument(
            "--time-unit",
            default="us",
            choices=["s", "ms", "us", "ns"],
            help="unit of the times in a text file (default us)",
        )
        parser.add_argument("--name", default=None, help="profile name (default: the file's stem)")
        parser.add_argument(
            "--model",
            default="hockney",
            choices=["hockney", "loggp"],
            help="the model the profile gives by default (default hockney; loggp needs PRTT data)",
        )
        parser.add_argument(
            "-o",
            "--output",
            default=None,
            help="profile JSON to write (default PROFILE_NAME.profile.json)",
        )

    def run(self, args) -> int:
        """``tachyflow model fit``."""

        from tachyflow.bench.results import write_json
        from tachyflow.models.fit import (
            exchange_factor,
            read_local_costs,
            read_measurements,
            read_prtt,
        )
        from tachyflow.models.hockney import Hockney, fit_two_regimes
        from tachyflow.models.loggp import LogGP, fit_loggp
        from tachyflow.models.profiles import LOCAL_COSTS, profile_document

        sizes, times = read_measurements(args.measurements, args.time_unit)
        name = args.name or Path(args.measurements).stem
        try:
            model, quality = fit_two_regimes(sizes, times, name)
        except ValueError as error:
            raise ConfigError(f"{args.measurements}: {error}") from None
        measured = {
            **read_local_costs(args.measurements),
            "exchange": exchange_factor(args.measurements),
        }
        costs = [measured.get(key, default) for key, default in LOCAL_COSTS.items()]
        model = Hockney(
            model.alpha, model.beta, name, *costs, threshold=model.threshold,
            alpha_large=model.alpha_large, beta_large=model.beta_large,
        )
        _print_fit("Hockney", model, quality)
        loggp, why_not = None, "the measurements have no PRTT round trips (`bench pingpong` has)"
        records = read_prtt(args.measurements)
        if records:
            try:
                fitted, loggp_quality = fit_loggp(records, name)
                loggp = (
                    LogGP(fitted.L, fitted.o, fitted.g, fitted.G, name, *costs),
                    loggp_quality,
                )
                _print_fit("LogGP", *loggp)
            except ValueError as error:
                why_not = str(error)
        if loggp is None:
            if args.model == "loggp":
                raise ConfigError(f"{args.measurements}: no LogGP fit: {why_not}")
            print(f"LogGP not fitted: {why_not}")
        output = Path(args.output or f"{name}.profile.json")
        write_json(
            output, profile_document(model, quality, str(args.measurements), loggp, args.model)
        )
        print(f"wrote {output} (default model {args.model})")
        return 0


@register
class Calibrate(Command):
    name = "model calibrate"
    help = "calibrate the collectives' predictions against measured times"
    description = (
        "Compare the measured times of every algorithm (and of the library's own call, "
        "`native`) in `tachyflow bench collectives` results with the profile's predictions, "
        "and store the ratios in the profile: algo='auto' scales its predictions by them (a "
        "tuning run, as MPI libraries' tuning tables are made)."
    )

    def add_arguments(self, parser):
        parser.add_argument("profile", help="profile JSON written by `tachyflow model fit`")
        parser.add_argument("results", nargs="+", help="collectives results JSON files")
        parser.add_argument(
            "-o", "--output", default=None, help="profile JSON to write (default: update PROFILE)"
        )

    def run(self, args) -> int:
        """``tachyflow model calibrate``."""
        from pathlib import Path

        import numpy as np

        from tachyflow.bench.collectives import calibration
        from tachyflow.bench.results import read_results, write_json
        from tachyflow.models.profiles import load_profile

        model = load_profile(args.profile)
        if not Path(args.profile).is_file():
            raise ConfigError(f"calibration needs a fitted profile file, got {args.profile!r}")
        documents = []
        for path in args.results:
            try:
                document = read_results(path)
            except (OSError, ValueError) as error:
                raise ConfigError(f"{path}: {error}") from None
            if document.get("benchmark") != "collectives":
                raise ConfigError(f"{path} is not a `tachyflow bench collectives` results file")
            documents.append(document)
        profile = json.loads(Path(args.profile).read_text())
        table = profile.setdefault("calibration", {})
        for (operation, ranks), algorithms in calibration(documents, model).items():
            table.setdefault(operation, {})[str(ranks)] = algorithms
            shown = ", ".join(
                f"{name} x{np.median([ratio for _, ratio in points]):.2f}"
                for name, points in algorithms.items()
            )
            print(f"{operation} on {ranks} ranks, median measured/predicted: {shown}")
        output = write_json(args.output or args.profile, profile)
        print(f"wrote {output}")
        return 0


def _print_fit(label: str, model, quality: dict) -> None:
    if label == "LogGP":
        parameters = (
            f"L = {model.L * 1e6:.4g} us, o = {model.o * 1e6:.4g} us, "
            f"g = {model.g * 1e6:.4g} us, G = {model.G * 1e9:.4g} ns/B"
        )
    else:
        parameters = f"alpha = {model.alpha * 1e6:.4g} us, beta = {model.beta * 1e9:.4g} ns/B"
        if model.two_regimes:
            parameters += (
                f" up to {model.threshold:.0f} B, then alpha = {model.alpha_large * 1e6:.4g} "
                f"us, beta = {model.beta_large * 1e9:.4g} ns/B"
            )
    parameters += f", exchange factor {model.exchange:.2f}"
    print(
        f"{label}: {parameters} ({model.bandwidth / 1e9:.4g} GB/s), half-bandwidth size "
        f"{model.half_bandwidth_size:.0f} B; rms relative error "
        f"{quality['rms_relative_error']:.2%}, worst {quality['max_relative_error']:.2%} "
        f"over {quality['points']} points"
    )
