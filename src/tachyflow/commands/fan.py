"""``tachyflow fan design``: a low-pressure axial fan's blades from its duty point."""

from __future__ import annotations

from tachyflow.commands import Command, register, register_group

register_group(
    "fan",
    "axial fans: design a rotor from its duty point",
    "Tools for axial fans. 'fan design' lays out a low-pressure rotor by the blade-element "
    "method and writes its blade table and surfaces.",
)

DESCRIPTION = (
    "Design the blades of a low-pressure axial fan from its duty point by the classical "
    "blade-element method (T. Carolus, 'Ventilatoren'; R. A. Wallis, 'Axial Flow Fans and "
    "Ducts'; F. Krömer's 2017 dissertation for the FAU benchmark fan): a free vortex "
    "(r c_u constant), c_u from Euler's equation Δp_t = ρ η_h u c_u, the lift coefficient "
    "x solidity of each section from its velocity triangles and its lift from thin-airfoil "
    "theory, hence chord and stagger. The defaults are the FAU benchmark fan FAN-01 "
    "(Zenger et al., 'A benchmark case for aerodynamics and aeroacoustics of a low pressure "
    "axial fan'). With --sections the blade is stacked from a table instead. Prints the "
    "table and writes sections.csv, blade.stl (one blade) and rotor.stl (all blades: axis "
    "x, flow towards +x, turning towards -θ) into the output folder; angles are from the "
    "circumferential direction, lengths in m."
)

# The printed columns: the table's key, its heading and its format (units in the title).
PRINTED = (
    ("r", "r", "{:.4f}"), ("chord", "chord", "{:.4f}"), ("stagger", "stagger", "{:.2f}"),
    ("camber", "f/c", "{:.3f}"), ("thickness", "t/c", "{:.3f}"), ("solidity", "σ", "{:.3f}"),
    ("lift_coefficient", "C_L", "{:.3f}"), ("alpha", "α", "{:.2f}"),
    ("beta1", "β1", "{:.2f}"), ("beta2", "β2", "{:.2f}"), ("beta_inf", "β∞", "{:.2f}"),
    ("c_u", "c_u", "{:.3f}"), ("r_c_u", "r·c_u", "{:.4f}"), ("w_inf", "w∞", "{:.2f}"),
)
SECTION_PRINTED = (*PRINTED[:5], ("sweep", "sweep", "{:.4f}"),
                   ("dihedral", "dihedral", "{:.4f}"))
UNITS = ("lengths in m, angles in degrees (stagger and β from the circumferential "
         "direction), velocities in m/s, r·c_u in m²/s")


@register
class FanDesign(Command):
    name = "fan design"
    help = "design a low-pressure axial fan's blades from its duty point (table + STL)"
    description = DESCRIPTION
    uses_mpi = False

    def add_arguments(self, parser):
        from tachyflow.numerics.fan_design import FAU_ANGLES_OF_ATTACK

        design = parser.add_argument_group("duty point and rotor (defaults: FAU FAN-01)")
        design.add_argument("--flow-rate", type=float, default=1.4, metavar="Q",
                            help="flow rate, m³/s (default 1.4)")
        design.add_argument("--pressure-rise", type=float, default=150.0, metavar="PA",
                            help="total-to-static pressure rise, Pa (default 150)")
        design.add_argument("--speed", type=float, default=1486.0, metavar="RPM",
                            help="rotational speed, rpm (default 1486)")
        design.add_argument("--diameter", type=float, default=0.495, metavar="M",
                            help="rotor (blade tip) diameter, m (default 0.495)")
        design.add_argument("--hub-ratio", type=float, default=0.5,
                            help="hub diameter / rotor diameter (default 0.5)")
        design.add_argument("--blades", type=int, default=9, help="blade count (default 9)")
        design.add_argument("--section", default="naca4510",
                            help="NACA 4-digit section of every blade section (default "
                            "naca4510)")
        design.add_argument(
            "--angles", default=",".join(map(str, FAU_ANGLES_OF_ATTACK)), metavar="A1,A2,...",
            help="angle of attack of each section from hub to tip, degrees; their count is "
            "the sections' (default the FAU fan's ten: %(default)s)",
        )
        design.add_argument("--volumetric-efficiency", type=float, default=0.95,
                            help="η_vol: the rotor passes Q/η_vol (default 0.95)")
        design.add_argument("--hydraulic-efficiency", type=float, default=0.9,
                            help="η_h in Δp_t = ρ η_h u c_u (default 0.9)")
        design.add_argument("--density", type=float, default=1.2, help="air ρ, kg/m³ "
                            "(default 1.2)")
        design.add_argument("--glide-ratio", type=float, default=0.0,
                            help="C_D/C_L in the blade-element relation (default 0: the "
                            "losses are in η_h)")
        parser.add_argument(
            "--sections", default=None, metavar="CSV",
            help="stack the blade from this section table instead of designing it: columns "
            "r, chord, stagger, camber, thickness, sweep, dihedral (m, degrees from the "
            "circumferential direction, chord fractions; others ignored; sections.csv of "
            "an earlier design is one); the camber position is --section's",
        )
        parser.add_argument("--points", type=int, default=40,
                            help="outline points per side of each section (default 40)")
        parser.add_argument("-o", "--output", default="fan-design",
                            help="folder for sections.csv, blade.stl, rotor.stl "
                            "(default ./fan-design)")

    def run(self, args) -> int:
        from pathlib import Path

        from tachyflow.errors import ConfigError

        try:
            design, sections = _design_or_table(args)
            blade = sections.blade()
            rotor = sections.rotor(args.blades)
        except ValueError as error:
            raise ConfigError(str(error)) from None
        output = Path(args.output)
        table = design.table() if design is not None else _section_table(sections)
        written = [_write_csv(output / "sections.csv", table, sections.camber_position),
                   _export(blade, output / "blade.stl"), _export(rotor, output / "rotor.stl")]
        _print(args, design, table, blade, rotor)
        for path in written:
            print(f"wrote {path}")
        return 0


def _design_or_table(args):
    """The design (None for a table) and the sections to stack."""
    from tachyflow.numerics.airfoils import naca4_parameters
    from tachyflow.numerics.fan_design import BladeSections, FanSpecification

    code = args.section.lower().removeprefix("naca")
    _, position, _ = naca4_parameters(code)
    if args.sections is not None:
        position = position or 0.5  # a symmetric code (00xx) names no position: any will do
        return None, BladeSections.from_columns(_read_csv(args.sections), position,
                                                args.points)
    if not 0 < args.hub_ratio < 1:
        raise ValueError(f"--hub-ratio must be in (0, 1), got {args.hub_ratio!r}")
    try:
        angles = tuple(float(part) for part in args.angles.split(","))
    except ValueError:
        raise ValueError(f"--angles must be numbers separated by commas, got "
                         f"{args.angles!r}") from None
    design = FanSpecification(
        flow_rate=args.flow_rate, pressure_rise=args.pressure_rise, speed=args.speed,
        tip_diameter=args.diameter, hub_diameter=args.hub_ratio * args.diameter,
        blades=args.blades, section=code, angles_of_attack=angles, density=args.density,
        volumetric_efficiency=args.volumetric_efficiency,
        hydraulic_efficiency=args.hydraulic_efficiency, glide_ratio=args.glide_ratio,
    ).design()
    return design, design.sections(args.points)


def _read_csv(path) -> dict:
    """A CSV's columns by header name, as floats (lines starting with # skipped)."""
    import csv
    from pathlib import Path

    from tachyflow.numerics.fan_design import SECTION_COLUMNS

    if not Path(path).is_file():
        raise ValueError(f"no such section table: {path}")
    lines = [line for line in Path(path).read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    rows = list(csv.DictReader(lines))
    if not rows:
        raise ValueError(f"{path}: no section rows under a header")
    columns = {}
    for name in rows[0]:
        try:
            columns[name.strip()] = [float(row[name]) for row in rows]
        except (TypeError, ValueError):
            if name.strip() in SECTION_COLUMNS:
                raise ValueError(f"{path}: column {name.strip()!r} must hold numbers in "
                                 "every row") from None
    return columns


def _section_table(sections) -> dict:
    return {"r": sections.radius, "chord": sections.chord, "stagger": sections.stagger,
            "camber": sections.camber, "thickness": sections.thickness,
            "sweep": sections.sweep, "dihedral": sections.dihedral}


def _write_csv(path, table: dict, camber_position: float):
    from pathlib import Path

    from tachyflow.io.files import replacing

    names = list(table)
    lines = [
        "# tachyflow fan design: r, chord, sweep, dihedral in m; stagger and the angles in "
        "degrees from the circumferential direction; camber, thickness per chord (NACA "
        f"4-digit mean line, maximum camber at {camber_position:g} of the chord); velocities "
        "in m/s",
        ",".join(names),
    ]
    lines += [",".join(repr(float(table[name][k])) for name in names)
              for k in range(len(table["r"]))]
    with replacing(path) as temporary:
        Path(temporary).write_text("\n".join(lines) + "\n")
    return path


def _export(mesh, path):
    from tachyflow.io.files import replacing

    with replacing(path) as temporary:
        mesh.export(temporary, file_type="stl")
    return path


def _print(args, design, table, blade, rotor) -> None:
    from rich import box
    from rich.table import Table

    from tachyflow import runtime

    columns = PRINTED if design is not None else SECTION_PRINTED
    shown = Table(title=f"blade sections, hub to tip ({UNITS})", box=box.SIMPLE_HEAD,
                  title_justify="left")
    for _, heading, _ in columns:
        shown.add_column(heading, justify="right")
    for k in range(len(table["r"])):
        shown.add_row(*(form.format(table[key][k]) for key, _, form in columns))
    console = runtime.make_console()
    if design is not None:
        spec = design.specification
        console.print(
            f"NACA {spec.section}, {spec.blades} blades, D {spec.tip_diameter:g} m, hub "
            f"{spec.hub_diameter:.4g} m, {spec.speed:g} rpm: Q {spec.flow_rate:g} m³/s, "
            f"Δp_ts {spec.pressure_rise:g} Pa (ρ {spec.density:g} kg/m³, η_vol "
            f"{spec.volumetric_efficiency:g}, η_h {spec.hydraulic_efficiency:g})"
        )
        console.print(
            f"c_m {design.axial_velocity:.4f} m/s, free vortex r·c_u "
            f"{design.swirl_constant:.4f} m²/s, Euler's Δp_t {design.total_pressure_rise:.2f} "
            f"Pa, tip speed {design.blade_speed[-1]:.2f} m/s, BPF "
            f"{spec.speed / 60 * spec.blades:.1f} Hz"
        )
    console.print(shown)
    console.print(
        f"blade: {len(blade.faces)} triangles, volume {blade.volume * 1e6:.2f} cm³, "
        f"watertight; rotor: {args.blades} blades, {len(rotor.faces)} triangles"
    )
