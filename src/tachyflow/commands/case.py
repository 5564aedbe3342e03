"""``tachyflow case list|show|init``: the built-in cases as templates."""

from __future__ import annotations

from pathlib import Path

from tachyflow.commands import Command, register, register_group

register_group(
    "case",
    "the built-in cases: list them, show one resolved, start a case file from one",
    "The built-in cases are templates: 'case show NAME' prints one with every default "
    "filled in and what each key may be, 'case init NAME -o FILE' writes it as a case file "
    "to edit and run (tachyflow run FILE).",
)


@register
class CaseList(Command):
    name = "case list"
    help = "the built-in cases, with their solver and description"
    uses_mpi = False

    def run(self, args) -> int:
        from tachyflow import config

        for name in config.builtin_cases():
            case = config.load(name).case
            print(f"{name:24s} {case.solver:15s} {case.description}".rstrip())
        return 0


class _Template(Command):
    """A built-in case (or a case file) resolved, every default filled in."""

    uses_mpi = False

    def add_arguments(self, parser):
        parser.add_argument("case", help="built-in case name or path to a .toml case file")
        parser.add_argument(
            "--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
            dest="overrides", help="change one value first (as tachyflow run --set)",
        )

    def text(self, args) -> str:
        from tachyflow import config

        case = config.load(args.case, args.overrides)
        title = f"# {case.case.name}: {case.case.description}".rstrip(": ")
        return f"{title}\n# solver {case.case.solver!r}\n\n{case.to_toml(comments=True)}"


@register
class CaseShow(_Template):
    name = "case show"
    help = "print a case resolved: every key, its value and what it may be"

    def run(self, args) -> int:
        print(self.text(args), end="")
        return 0


@register
class CaseInit(_Template):
    name = "case init"
    help = "write a built-in case as a case file to edit"

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("-o", "--output", required=True, help="the case file to write")
        parser.add_argument("--force", action="store_true", help="replace an existing file")

    def run(self, args) -> int:
        from tachyflow.errors import ConfigError
        from tachyflow.io.files import replacing

        path = Path(args.output)
        if path.exists() and not args.force:
            raise ConfigError(f"{path} exists: choose another file or add --force")
        with replacing(path) as temporary:
            Path(temporary).write_text(self.text(args))
        print(f"wrote {path}: edit it, then tachyflow run {path}")
        return 0
