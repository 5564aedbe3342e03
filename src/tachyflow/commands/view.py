"""``tachyflow view``: the live page of a running simulation."""

from __future__ import annotations

from tachyflow.commands import Command, options, register
from tachyflow.errors import ConfigError


@register
class View(Command):
    name = "view"
    uses_mpi = False
    help = "live web page of a running simulation"
    description = (
        "Serve, on 127.0.0.1 only, a read-only page with the newest images and metrics "
        "(step, simulated time, time per step, CFL, kinetic energy) of the run publishing in "
        "RUN_DIR; it updates itself. The URL carries a random token that every request "
        "needs. The stream is read only while a page is open; the run never waits. Stop "
        "with Ctrl-C."
    )

    def add_arguments(self, parser):
        parser.add_argument("run_dir", metavar="RUN_DIR", help="output folder of the run")
        parser.add_argument(
            "--port",
            type=options.non_negative_int,
            default=0,
            help="TCP port (default: a free one)",
        )
        parser.add_argument(
            "--no-browser", action="store_true", help="print the URL only, do not open a browser"
        )

    def run(self, args) -> int:
        """``tachyflow view``: serve the live page until Ctrl-C."""
        import threading

        from tachyflow.insitu.viewer import ViewerServer, open_in_browser

        try:
            server = ViewerServer(args.run_dir, port=args.port)
        except ValueError as error:
            raise ConfigError(str(error)) from None
        with server:
            print(f"viewing {args.run_dir} at {server.url}", flush=True)
            if not args.no_browser:
                open_in_browser(server.url)
            print("press Ctrl-C to stop", flush=True)
            try:
                threading.Event().wait()  # the server runs in its own threads
            except KeyboardInterrupt:
                pass
        return 0
