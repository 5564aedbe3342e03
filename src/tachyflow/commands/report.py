"""``tachyflow report``: one HTML page from results files."""

from __future__ import annotations

from tachyflow.commands import Command, register, results_modules


@register
class Report(Command):
    name = "report"
    uses_mpi = False
    help = "HTML report from results files"
    description = (
        "Render every tachyflow results JSON file under FOLDER into one self-contained HTML "
        "page with plots and tables."
    )

    def add_arguments(self, parser):
        parser.add_argument("folder", help="folder with results JSON files")
        parser.add_argument(
            "-o", "--output", default=None, help="HTML file to write (default FOLDER/report.html)"
        )

    def run(self, args) -> int:
        from tachyflow.bench.report import write_report

        output = write_report(args.folder, args.output, results_modules())
        print(f"wrote {output}")
        return 0
