"""Argument types and options shared by several commands."""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return value


def _seconds(text: str, least: float, inclusive: bool) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value >= least if inclusive else value > least) or value == float("inf"):
        kind = "non-negative" if inclusive else "positive"
        raise argparse.ArgumentTypeError(f"expected a {kind} number of seconds, got {text!r}")
    return value


def positive_float(text: str) -> float:
    return _seconds(text, 0.0, inclusive=False)


def non_negative_float(text: str) -> float:
    return _seconds(text, 0.0, inclusive=True)


def proc_grid(text: str) -> tuple[int, int]:
    from tachyflow.parallel.pencil import parse_proc_grid

    try:
        return parse_proc_grid(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def byte_size(text: str) -> int:
    from tachyflow.units import parse_byte_size

    try:
        return parse_byte_size(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def positive_int_list(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",")]
    except ValueError:
        values = []
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated positive integers, got {text!r}"
        )
    return values


def add_ranks(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-n",
        "--ranks",
        type=positive_int,
        default=None,
        metavar="N",
        help="run on N MPI ranks, launching mpiexec when not already under a launcher",
    )
    parser.add_argument(
        "--nodes",
        type=positive_int,
        default=None,
        metavar="K",
        help="spread the ranks over K nodes of the emulated cluster (`tachyflow cluster up`)",
    )
    parser.add_argument(
        "--pin-cores",
        action="store_true",
        help="bind each rank to one core of its machine, or to T with --threads T "
        "(sets $TACHYFLOW_PIN=core)",
    )
    parser.add_argument(
        "--threads",
        type=positive_int,
        default=None,
        metavar="T",
        help="threads per rank for the kernels (numba, FFTW, BLAS; default 1): hybrid "
        "MPI + threads, e.g. -n 1 --threads 2 against -n 2",
    )


def add_output(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o",
        "--output",
        default="results",
        help="folder for the results JSON and plot (default ./results)",
    )


def add_repeats(parser: argparse.ArgumentParser, repeats: int) -> None:
    parser.add_argument(
        "--repeats",
        type=positive_int,
        default=repeats,
        help=f"timed samples per candidate (default {repeats})",
    )


def add_benchmark_options(
    parser: argparse.ArgumentParser, repeats: int, grid=(128, 128, 128)
) -> None:
    add_ranks(parser)
    parser.add_argument(
        "--grid",
        nargs=3,
        type=positive_int,
        default=list(grid),
        metavar=("NX", "NY", "NZ"),
        help=f"global grid (default {' x '.join(map(str, grid))})",
    )
    parser.add_argument(
        "--proc-grid",
        type=proc_grid,
        default=None,
        metavar="ROWSxCOLS",
        help="process grid, e.g. 2x1 (default: chosen by the cost model)",
    )
    add_repeats(parser, repeats)
    parser.add_argument(
        "--warmup",
        type=non_negative_int,
        default=3,
        help="untimed calls per candidate first (default 3)",
    )
    parser.add_argument("--no-peer", action="store_true", help="do not time the peer")
    add_output(parser)


def add_les_option(parser: argparse.ArgumentParser) -> None:
    """``--les MODEL``: also time the case's large-eddy simulation against its DNS."""
    import typing

    from tachyflow.solvers.pencil.options import LesSection

    models = tuple(m for m in typing.get_args(typing.get_type_hints(LesSection)["model"])
                   if m != "none")
    parser.add_argument(
        "--les",
        choices=models,
        default=None,
        metavar="MODEL",
        help="also time the LES step with this subgrid model against the DNS step, "
             f"interleaved ({', '.join(models)})",
    )


def add_krylov_options(parser: argparse.ArgumentParser) -> None:
    from tachyflow.collectives.algorithms import ALGORITHMS

    parser.add_argument("--solver", choices=["cg", "bicgstab"], default="cg", help="Krylov method")
    parser.add_argument(
        "--tol", type=float, default=1e-8, help="relative residual tolerance (default 1e-8)"
    )
    parser.add_argument(
        "--max-iterations", type=positive_int, default=10000, help="iteration limit"
    )
    parser.add_argument(
        "--halo",
        choices=["p2p", "neighborhood"],
        default="p2p",
        help="halo exchange: persistent point-to-point (default) or a neighbourhood collective",
    )
    parser.add_argument(
        "--reduction",
        choices=["native", *ALGORITHMS["allreduce"]],
        default="native",
        help="allreduce algorithm of the dot products (default native)",
    )
