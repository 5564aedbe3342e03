"""``tachyflow acoustics``: far-field noise from recorded surface data (FW-H)."""

from __future__ import annotations

from tachyflow import runtime
from tachyflow.commands import Command, options, register


@register
class Acoustics(Command):
    name = "acoustics"
    help = "far-field noise from recorded surface data (Ffowcs Williams-Hawkings)"
    description = (
        "Predict the acoustic pressure at the observers of OBSERVERS (TOML) from surface data "
        "(a BP5 series such as a run's acoustics/surface.bp, or .npz: times, positions, "
        "normals, areas, surface_velocity, and pressure (with density and velocity for a "
        "permeable surface) or the source terms normal_flux and load) with Farassat's "
        "formulation 1A; write signals.csv, spectra (CSV, PNG, one-third octaves) and, for "
        "an observer arc, a directivity plot. See tachyflow.acoustics.offline for the file "
        "formats."
    )

    def add_arguments(self, parser):
        options.add_ranks(parser)
        parser.add_argument("surface", help="surface data (.bp folder or .npz)")
        parser.add_argument("--observers", required=True, help="observers file (TOML)")
        options.add_output(parser)

    def run(self, args) -> int:
        """``tachyflow acoustics``."""
        from tachyflow.acoustics import FWHSolver, offline
        from tachyflow.acoustics.results import write_results
        from tachyflow.parallel.pieces import panel_share

        comm = runtime.world()
        setup = offline.read_observers(args.observers, comm)
        data = offline.read_surface_data(args.surface, setup.permeable)
        offline.check_memory(setup, data["areas"].size, args.observers, comm)
        window = offline.observer_window(data, setup.positions, setup.c0, setup.samples)
        share = panel_share(data["areas"].size, comm.Get_rank(), comm.Get_size())
        solver = FWHSolver(
            setup.positions, window, c0=setup.c0, rho0=setup.rho0, permeable=setup.permeable,
            comm=comm, time_order=setup.time_order, interpolation=setup.interpolation,
        )
        signals = offline.predict(solver, data, share)
        if not runtime.is_root():
            return 0
        oaspl = write_results(args.output, setup.names, signals, setup.arc_angles)
        console = runtime.make_console()
        for name, value in zip(setup.names, oaspl, strict=True):
            console.print(f"{name}: OASPL {value:.1f} dB re 20 uPa")
        console.print(f"wrote signals.csv, spectra.csv, bands.csv and plots in {args.output}")
        return 0
