"""Case files (TOML) parsed once into frozen, validated dataclasses.

Every key is checked: an unknown key, a value of the wrong type or out of range raises
:class:`~tachyflow.errors.ConfigError` naming the key and the file. Built-in cases live in
``tachyflow/cases/*.toml``; ``tachyflow run NAME`` finds them by name.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
import typing
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from tachyflow.errors import ConfigError

INITIAL_CONDITIONS = (
    "rest", "taylor-green", "poiseuille", "perturbed-channel",  # incompressible
    "hagen-poiseuille", "couette", "solid-body", "perturbed-pipe", "inflow",  # cylindrical
)
FORCINGS = ("none", "pressure-gradient", "flow-rate")
X_BOUNDARIES = ("periodic", "inflow-outflow")
INFLOW_PROFILES = ("uniform", "laminar")
SURFACES = ("none", "sphere", "box", "cylinder", "mesh", "blades")
EXCHANGES = ("auto", "two-sided", "put", "aggregated-put", "source-put")
SYNCS = ("auto", "lock", "fence", "pscw")
TIME_ORDERS = (2, 4)  # FW-H source-time derivatives: 3- or 5-step stencils
INTERPOLATIONS = ("linear", "cubic")  # FW-H signals between arrivals, in observer time
PLANES = ("xy", "xz", "yz")
MODES = ("insitu", "transit")
QUEUE_FULL_POLICIES = ("Block", "Discard")
# [insitu] transit_precision: the type of the values the in-transit stream carries.
TRANSIT_PRECISIONS = {"single": "float32", "double": "float64"}
# [insitu] transit_threads: where the stream's own threads (SST's) run when ranks are pinned.
TRANSIT_THREADS = ("spare-cores", "rank")
FIELDS = ("u", "v", "w", "p", "speed")


@dataclass(frozen=True)
class CaseSection:
    """``[case]``: what the case is."""

    name: str = "case"
    description: str = ""
    solver: str = "incompressible"


@dataclass(frozen=True)
class GridSection:
    """``[grid]``: cells, domain size, walls and their clustering, and what bounds x:
    periodic, or ``"inflow-outflow"`` (a profile enters at x = 0 with bulk velocity
    ``inflow_velocity``, no swirl in the inertial frame, and leaves through a convective
    outflow at the other end)."""

    cells: tuple[int, int, int] = (32, 32, 32)
    lengths: tuple[float, float, float] = (6.283185307179586,) * 3
    walls: bool = False
    stretching: float = 0.0
    x_boundaries: str = "periodic"
    inflow_profile: str = "uniform"  # or "laminar": the developed laminar profile
    inflow_velocity: float = 1.0
    wall_condition: str = "no-slip"  # or "slip": stress-free walls (far boundaries)
    core_width: float = 0.0  # with core_cells > 0: a uniform band in the middle of y
    core_cells: int = 0  # its cells; the rest grow geometrically to the walls


@dataclass(frozen=True)
class FlowSection:
    """``[flow]``: fluid, forcing and initial condition."""

    viscosity: float = 1e-2
    forcing: str = "none"
    forcing_value: float = 0.0
    initial: str = "rest"
    perturbation: float = 0.0
    seed: int = 0


@dataclass(frozen=True)
class TimeSection:
    """``[time]``: how many steps and how long each is."""

    steps: int = 100
    dt: float = 0.0  # 0: adaptive from cfl
    cfl: float = 0.5
    max_cfl: float = 2.0  # beyond this the run is declared diverged


@dataclass(frozen=True)
class OutputSection:
    """``[output]``: what is written how often (0: never, except at the end)."""

    statistics_every: int = 10
    checkpoint_every: int = 0
    checkpoints_kept: int = 2  # the newest ones; older are removed once a new one is whole
    images_every: int = 0
    fields_every: int = 0
    vtk_fields: bool = True  # also VTK XML files + fields.pvd beside fields.bp


@dataclass(frozen=True)
class StatisticsSection:
    """``[statistics]``: turbulence statistics (the ``turbulence`` observer); off while
    ``every`` is 0. Samples from ``start_step`` and ``start_time`` on, every ``every``
    steps, averaged over the ``homogeneous`` directions ("x" and "z" -- "theta" on a
    cylindrical grid --: profiles across the walls; none: mean and rms fields)."""

    every: int = 0
    start_step: int = 0
    start_time: float = 0.0
    homogeneous: tuple[str, ...] = ("x", "z")
    output_every: int = 0  # 0: only at the end


@dataclass(frozen=True)
class CylinderSection:
    """``[cylinder]``: the domain of ``solver = "cylindrical"`` (x, r, θ), in a frame
    rotating at ``rotation`` (rad per unit time) about x; wall rotations are the walls'
    angular velocities in the inertial frame (a duct at rest: 0)."""

    length: float = 10.0
    radius: float = 1.0
    inner_radius: float = 0.0  # 0: through the axis (a pipe); > 0: an annulus
    sectors: int = 1  # θ spans 2π / sectors, periodic
    stretching: float = 0.0  # tanh clustering of r towards the walls
    clustering: str = "walls"  # or "axis" (through the axis): where stretching clusters r
    rotation: float = 0.0
    inner_wall_rotation: float = 0.0
    outer_wall_rotation: float = 0.0
    outer_wall: str = "no-slip"  # or "slip": stress-free (a far boundary, not a duct)
    # 0: the θ viscous terms implicit at every radius; > 0: only for r below it (the core).
    theta_core_radius: float = 0.0


@dataclass(frozen=True)
class BodySection:
    """``[[immersed.body]]``: a solid imposed on the flow by direct forcing. ``shape`` is a
    registered body shape (``sphere``, ``cylinder``: infinitely long along ``axis``,
    ``slab``: ``thickness`` across the plane normal to ``axis``, ``surface``: a closed
    triangulated ``file``, scaled then moved by ``offset``). ``motion`` is a registered
    motion: ``rigid``, the body turning at ``angular_velocity`` about ``rotation_axis``
    through ``rotation_centre`` (in the solver's frame: a fan's blades in its rotating
    frame are at rest), or ``oscillation`` (Cartesian solver): translation
    ``oscillation sin(2π f t)`` (an amplitude vector) and pitching by ``pitch sin(2π f t
    + pitch_phase)`` (degrees) about ``pitch_axis`` through the moving ``rotation_centre``,
    at ``frequency`` f."""

    name: str = "body"
    shape: str = "sphere"
    centre: tuple[float, float, float] = (0.0, 0.0, 0.0)
    radius: float = 0.5
    axis: tuple[float, float, float] = (0.0, 0.0, 1.0)
    hollow: bool = False  # cylinder: the solid is outside (a duct)
    file: str = ""
    scale: float = 1.0
    offset: tuple[float, float, float] = (0.0, 0.0, 0.0)
    thickness: float = 0.1  # slab
    angular_velocity: float = 0.0
    rotation_axis: tuple[float, float, float] = (1.0, 0.0, 0.0)
    rotation_centre: tuple[float, float, float] = (0.0, 0.0, 0.0)
    motion: str = "rigid"
    oscillation: tuple[float, float, float] = (0.0, 0.0, 0.0)
    pitch: float = 0.0
    pitch_axis: tuple[float, float, float] = (0.0, 0.0, 1.0)
    pitch_phase: float = 0.0
    frequency: float = 0.0


@dataclass(frozen=True)
class FanSection:
    """``[fan]``: the rotor of an axial fan in the cylindrical domain (its hub is
    ``[cylinder] inner_radius``, its duct ``radius``, its speed ``rotation``), made an
    immersed body by ``[[immersed.body]] shape = "fan-rotor"``. Pairs are (root, tip), varied
    linearly; angles in degrees; camber and thickness as fractions of the chord. ``section``
    is ``naca4`` (``camber`` at ``camber_position``) or ``naca65`` (the 65-010 thickness
    form on the a = 1.0 mean line of design lift coefficients ``design_lift``)."""

    blades: int = 5
    tip_clearance: float = 0.02
    position: float = 1.0  # x of the blades' quarter chord
    pressure_planes: tuple[float, float] = (0.5, 1.5)  # x up- and downstream: Δp between
    chord: tuple[float, float] = (0.35, 0.25)
    stagger: tuple[float, float] = (40.0, 56.0)  # from the axis
    camber: tuple[float, float] = (0.04, 0.02)
    camber_position: float = 0.4
    section: str = "naca4"
    design_lift: tuple[float, float] = (1.0, 0.6)
    thickness: float = 0.08
    sweep: float = 0.0
    stations: int = 12
    points: int = 40


@dataclass(frozen=True)
class ImmersedSection:
    """``[immersed]``: immersed bodies (``[[immersed.body]]``) and the cadence, in steps, of
    their loads in ``forces.csv`` (0: only at the end)."""

    forces_every: int = 1
    body: tuple[BodySection, ...] = ()


OVERLAP_PLACES = ("poisson", "theta")


@dataclass(frozen=True)
class ParallelSection:
    """``[parallel]``: the process grid (``[0, 0]``: chosen automatically) and where
    transposes overlap computation (non-blocking; the same results): ``"theta"``, the
    cylindrical solver's θ solves, one velocity component travelling while another is
    solved; ``"poisson"``, the Poisson solve, in windows of planes. Measured on 2 shared
    cores (docs/benchmarks.md): the θ solves no slower, the Poisson solve slower, hence the
    default."""

    proc_grid: tuple[int, int] = (0, 0)
    overlap: tuple[str, ...] = ("theta",)


@dataclass(frozen=True)
class MeshSection:
    """``[mesh]``: the unstructured mesh of the ``pressure`` solver and its distribution.

    ``file`` is a mesh file meshio reads (Gmsh ``.msh``, ``.vtu``, ...; relative to the case
    file) or a generated box, ``box:CELLS`` (hexahedra) or ``tet:CELLS`` (perturbed
    tetrahedra). ``partition`` is ``metis`` or a file with the part of every cell.
    """

    file: str = "box:1000"
    partition: str = "metis"


@dataclass(frozen=True)
class PressureSection:
    """``[pressure]``: ``-∇·∇p + shift p = source``, p = 0 on the boundary, and its solver.

    ``method`` is ``cg`` or ``bicgstab`` (Jacobi-preconditioned); ``halo`` is ``p2p`` or
    ``neighborhood``; ``reduction`` the allreduce algorithm of the dot products.
    """

    source: float = 1.0
    shift: float = 0.0
    method: str = "cg"
    tol: float = 1e-8
    max_iterations: int = 10000
    halo: str = "p2p"
    reduction: str = "native"


@dataclass(frozen=True)
class CompressibleSection:
    """``[compressible]``: the 2D compressible Navier–Stokes / RANS solver (``solver =
    "compressible"``): grid, free stream, scheme and the pseudo-time iteration.

    ``grid`` names a registered grid (``"flat-plate"``: an H-grid over a plate of unit length
    from x = 0, ``upstream`` chords of symmetry plane before it, ``far_field`` high) of
    ``cells = [ni, nj]``; ``mach``, ``alpha`` (degrees), ``reynolds`` (per chord) and
    ``temperature`` (K, for Sutherland's law) set the free stream. ``time_stepping``:
    ``lu-sgs`` or ``dp-sgs`` (``sweeps`` symmetric Gauss–Seidel sweep pairs, Jacobi across
    blocks; ``line_implicit``: each relaxation step solves a whole line of constant i,
    implicit along j) iterate to a steady state with local time steps, the CFL number growing
    geometrically from ``cfl_start`` to ``cfl`` over ``cfl_ramp`` iterations, until the
    density residual falls below ``target_residual`` times its first value; ``rk3``
    (SSP-RK3) advances in time with ``[time] cfl`` or ``dt``; ``dual-lu-sgs`` and
    ``dual-dp-sgs`` (dual time stepping) advance in time by steps of ``[time] dt`` of the
    second-order backward difference (the first a backward Euler step), each solved by
    LU-SGS or DP-SGS pseudo-time iterations (the CFL ramp over the run's pseudo-time
    iterations) until the density equation's unsteady residual has fallen by
    ``inner_tolerance`` or after ``inner_iterations``.

    ``grid = "file"`` reads the grid from ``grid_file``, a Plot3D (``.xyz``, ``.p3d``,
    ``.p2d``, ``.x``) or CGNS (``.cgns``) file; a relative path is taken from the case
    file's folder. ``cells`` must then be the file's; ``wake_cells``, ``wall_spacing``,
    ``far_field`` and ``upstream`` are not read (see docs/grid-files.md).
    """

    grid: str = "flat-plate"
    grid_file: str = ""
    cells: tuple[int, int] = (64, 32)
    wall_spacing: float = 5e-4
    far_field: float = 0.5
    upstream: float = 0.5
    wake_cells: int = 0
    mach: float = 0.4
    alpha: float = 0.0
    reynolds: float = 1e5
    temperature: float = 288.15
    scheme: str = "roe"
    limiter: str = "van-albada"
    entropy_fix: float = 0.1
    turbulence: str = "laminar"
    nu_tilde_ratio: float = 3.0
    time_stepping: str = "dp-sgs"
    sweeps: int = 4
    line_implicit: bool = False
    inner_iterations: int = 30
    inner_tolerance: float = 1e-3
    cfl: float = 30.0
    cfl_start: float = 2.0
    cfl_ramp: int = 100
    target_residual: float = 1e-7
    vortex_correction: bool = False


COMPRESSIBLE_SCHEMES = ("roe", "ausm+up")
COMPRESSIBLE_LIMITERS = ("van-albada", "minmod", "none", "first-order")
COMPRESSIBLE_TIME_STEPPING = ("lu-sgs", "dp-sgs", "rk3", "dual-lu-sgs", "dual-dp-sgs")
TURBULENCE_MODELS = ("laminar", "sa")


@dataclass(frozen=True)
class AcousticsSection:
    """``[acoustics]``: a permeable FW-H surface sampled from the flow as the run goes.

    ``surface = "none"`` (the default) switches it off. The surface is a ``sphere``
    (``centre``, ``radius``, about ``panels`` panels), a ``cylinder`` (``centre``, ``axis``,
    ``radius``, ``length``, ``panels``), a ``box`` (``lower``, ``upper``, ``spacing``), a
    surface ``mesh`` file read with meshio, or the ``blades`` of a ``fan-rotor`` body
    (solid, rotating: see :mod:`tachyflow.acoustics.rotor`). Observers are points and/or
    an arc (as in the observers file of ``tachyflow acoustics``). ``time_order`` (4 or 2)
    and ``interpolation`` (``cubic`` or ``linear``) choose the FW-H scheme's order: the
    fourth-order default's relative error at 64 steps per period is about 5e-6, the
    second order's 2.4e-3 (docs/acoustics-verification.md).
    """

    surface: str = "none"
    centre: tuple[float, float, float] = (0.0, 0.0, 0.0)
    radius: float = 1.0
    panels: int = 2000
    axis: tuple[float, float, float] = (0.0, 0.0, 1.0)
    length: float = 1.0
    lower: tuple[float, float, float] = (0.0, 0.0, 0.0)
    upper: tuple[float, float, float] = (1.0, 1.0, 1.0)
    spacing: float = 0.1
    mesh: str = ""
    every: int = 1
    start_step: int = 0  # the record starts at this step (past a start-up transient)
    exchange: str = "auto"
    sync: str = "auto"
    c0: float = 340.0
    rho0: float = 1.0
    p0: float = 0.0
    samples: int = 1024
    time_order: int = 4
    interpolation: str = "cubic"
    duration: float = 0.0  # simulated time the record covers; 0: steps x dt
    observers: tuple[tuple[float, float, float], ...] = ()
    arc_radius: float = 0.0  # 0: no arc
    arc_plane: str = "xy"
    arc_centre: tuple[float, float, float] = (0.0, 0.0, 0.0)
    arc_start: float = 0.0
    arc_stop: float = 180.0
    arc_count: int = 13
    write_surface: bool = True


@dataclass(frozen=True)
class ObserverPoint:
    """``[[observer]]`` of an observers file: a named point."""

    name: str = ""
    position: tuple[float, float, float] = (math.nan, math.nan, math.nan)


@dataclass(frozen=True)
class ArcTable:
    """``[arc]`` of an observers file: ``count`` observers on a circle (0 radius: none)."""

    radius: float = 0.0
    plane: str = "xy"
    centre: tuple[float, float, float] = (0.0, 0.0, 0.0)
    start: float = 0.0
    stop: float = 180.0
    count: int = 13


@dataclass(frozen=True)
class ObserversFile:
    """The observers file of ``tachyflow acoustics``: the medium and the observers, with the
    same keys' defaults as ``[acoustics]`` (one schema: ``c0``, ``rho0``, ``samples``,
    ``time_order``, ``interpolation``)."""

    c0: float = AcousticsSection.c0
    rho0: float = AcousticsSection.rho0
    permeable: bool = False
    samples: int = AcousticsSection.samples
    time_order: int = AcousticsSection.time_order
    interpolation: str = AcousticsSection.interpolation
    observer: tuple[ObserverPoint, ...] = ()
    arc: ArcTable = field(default_factory=ArcTable)


def parse_observers(text: str, source: str) -> ObserversFile:
    """Parse and check an observers file strictly (ConfigError naming the key and file)."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{source}: not valid TOML: {error}") from None
    observers = _section(ObserversFile, document, "", source)

    def require(condition: bool, key: str, expectation: str, value) -> None:
        if not condition:
            raise ConfigError(f"{source}: '{key}' must be {expectation}, got {value!r}")

    require(observers.c0 > 0, "c0", "positive", observers.c0)
    require(observers.rho0 > 0, "rho0", "positive", observers.rho0)
    require(observers.samples >= 8, "samples", ">= 8", observers.samples)
    _validate_scheme(observers, "", require)
    for index, point in enumerate(observers.observer):
        require(all(math.isfinite(v) for v in point.position), f"observer[{index}].position",
                "[x, y, z]", point.position)
    arc = observers.arc
    require(arc.radius >= 0, "arc.radius", ">= 0", arc.radius)
    require(arc.plane in PLANES, "arc.plane", f"one of {PLANES}", arc.plane)
    require(arc.count >= 1, "arc.count", ">= 1", arc.count)
    require(bool(observers.observer) or arc.radius > 0, "observer", "at least one "
            "[[observer]] entry or an [arc] with radius > 0", observers.observer)
    return observers


@dataclass(frozen=True)
class PipelineSection:
    """``[[insitu.pipeline]]``: one visualisation made every ``every`` steps (or every
    ``every_time`` of simulated time), in situ (by the ranks) or in transit (by
    ``tachyflow transit-render``)."""

    name: str = "pipeline"
    kind: str = "slice"
    field: str = "u"
    colour_by: str = ""  # isosurface: the field that colours it (default: field)
    plane: str = "xy"  # slice: the plane, at ``position`` along its normal axis
    position: float = 0.0
    value: float = 0.0  # isosurface level
    points: tuple[tuple[float, float, float], ...] = ()  # probes
    colour_map: str = "viridis"
    range: tuple[float, float] = (0.0, 0.0)  # (0, 0): from the data
    every: int = 0
    every_time: float = 0.0
    mode: str = "insitu"


@dataclass(frozen=True)
class InsituSection:
    """``[insitu]``: visualisation pipelines and the in-transit stream's settings."""

    width: int = 800
    height: int = 600
    monitor: bool = False  # publish metrics and images for `tachyflow view`
    aggregators: int = 1
    queue_limit: int = 4
    queue_full_policy: str = "Discard"
    reserve_queue_limit: int = 2
    # Of the fields streamed in transit: single halves what the writer copies and sends
    # (pictures need no more); double carries the solver's values exactly.
    transit_precision: str = "double"
    # With ranks pinned to cores (--pin-cores) and cores left: SST's threads (they send
    # each step to the readers) on those, or on the rank's own core.
    transit_threads: str = "spare-cores"
    # (steps on, steps off): the pipelines are due only in the first `on` steps of every
    # `on + off`, and the run measures what they cost against the quiet steps (0, 0: always).
    duty_cycle: tuple[int, int] = (0, 0)
    pipeline: tuple[PipelineSection, ...] = ()


@dataclass(frozen=True)
class Config:
    """A whole case, resolved."""

    case: CaseSection = field(default_factory=CaseSection)
    grid: GridSection = field(default_factory=GridSection)
    flow: FlowSection = field(default_factory=FlowSection)
    time: TimeSection = field(default_factory=TimeSection)
    output: OutputSection = field(default_factory=OutputSection)
    parallel: ParallelSection = field(default_factory=ParallelSection)
    cylinder: CylinderSection = field(default_factory=CylinderSection)
    immersed: ImmersedSection = field(default_factory=ImmersedSection)
    fan: FanSection = field(default_factory=FanSection)
    statistics: StatisticsSection = field(default_factory=StatisticsSection)
    mesh: MeshSection = field(default_factory=MeshSection)
    pressure: PressureSection = field(default_factory=PressureSection)
    compressible: CompressibleSection = field(default_factory=CompressibleSection)
    acoustics: AcousticsSection = field(default_factory=AcousticsSection)
    insitu: InsituSection = field(default_factory=InsituSection)
    # [observers.NAME] tables: a plug-in's observers and their options (tachyflow.observers).
    observers: dict = field(default_factory=dict)
    source: str = field(default="", compare=False)

    def replace(self, section: str, **values) -> Config:
        """A copy with some values of one section changed (validated again)."""
        updated = dataclasses.replace(getattr(self, section), **values)
        result = dataclasses.replace(self, **{section: updated})
        _validate(result, self.source)
        return result

    def to_toml(self) -> str:
        """The resolved configuration as TOML (written to a run's ``config.toml``)."""
        lines = []
        for section in dataclasses.fields(self):
            if section.name not in ("source", "observers"):
                lines += _table_lines(section.name, getattr(self, section.name), "[{}]")
        for name, options in self.observers.items():
            lines += [f"[observers.{name}]"]
            lines += [f"{key} = {_toml_value(value)}" for key, value in options.items()]
            lines += [""]
        return "\n".join(lines)


def _table_lines(name: str, table, header: str) -> list[str]:
    """TOML lines of one section; tuples of tables become ``[[name.key]]`` arrays."""
    lines, nested = [header.format(name)], []
    for item in dataclasses.fields(table):
        value = getattr(table, item.name)
        if value and isinstance(value, tuple) and dataclasses.is_dataclass(value[0]):
            for entry in value:
                nested += _table_lines(f"{name}.{item.name}", entry, "[[{}]]")
        else:
            lines.append(f"{item.name} = {_toml_value(value)}")
    return [*lines, "", *nested]


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return repr(value)


def _convert(value, annotation, key: str, source: str):
    """Check ``value`` against a field type; ints are accepted where floats are expected."""
    if dataclasses.is_dataclass(annotation):
        return _section(annotation, value, key, source)
    if typing.get_origin(annotation) is tuple and typing.get_args(annotation)[-1] is Ellipsis:
        item_type = typing.get_args(annotation)[0]
        if not isinstance(value, list):
            raise ConfigError(f"{source}: '{key}' must be a list, got {value!r}")
        if dataclasses.is_dataclass(item_type):
            return tuple(_section(item_type, item, key, source) for item in value)
        return tuple(_convert(item, item_type, key, source) for item in value)
    if typing.get_origin(annotation) is tuple:
        item_types = typing.get_args(annotation)
        if not isinstance(value, list) or len(value) != len(item_types):
            raise ConfigError(
                f"{source}: '{key}' must be a list of {len(item_types)} values, got {value!r}"
            )
        return tuple(_convert(v, t, key, source) for v, t in zip(value, item_types, strict=True))
    if annotation is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if annotation is float and isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{source}: '{key}' must be a finite number, got {value!r}")
    if not isinstance(value, annotation) or (annotation is not bool and isinstance(value, bool)):
        raise ConfigError(f"{source}: '{key}' must be {annotation.__name__}, got {value!r}")
    return value


def _section(cls, table, name: str, source: str):
    """``cls`` from a TOML table, strictly; ``name`` ("" at the top of a file) prefixes keys."""
    if not isinstance(table, dict):
        raise ConfigError(f"{source}: [{name}] must be a table")
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    qualified = {key: f"{name}.{key}" if name else key for key in table}
    for key in table:
        if key not in known:
            raise ConfigError(
                f"{source}: unknown key '{qualified[key]}' (known: {', '.join(sorted(known))})"
            )
    values = {
        key: _convert(value, hints[key], qualified[key], source) for key, value in table.items()
    }
    return cls(**values)


def parse(text: str, source: str = "<string>") -> Config:
    """Parse and validate a case file's text."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{source}: not valid TOML: {error}") from None
    hints = typing.get_type_hints(Config)
    sections = {f.name for f in dataclasses.fields(Config)} - {"source", "observers"}
    for name in document:
        if name not in sections | {"observers"}:
            raise ConfigError(
                f"{source}: unknown section [{name}] (known: {', '.join(sorted(sections))}, "
                "observers.NAME)"
            )
    observers = document.get("observers", {})
    if not all(isinstance(table, dict) for table in observers.values()):
        raise ConfigError(f"{source}: [observers] holds only tables [observers.NAME]")
    config = Config(
        **{name: _section(hints[name], document.get(name, {}), name, source) for name in sections},
        observers=observers,
        source=source,
    )
    _validate(config, source)
    return config


def _validate(config: Config, source: str) -> None:
    from tachyflow.solvers import base as solvers

    def require(condition: bool, key: str, expectation: str, value) -> None:
        if not condition:
            raise ConfigError(f"{source}: '{key}' must be {expectation}, got {value!r}")

    require(config.case.solver in solvers.names(), "case.solver",
            f"one of {solvers.names()}", config.case.solver)
    _validate_pressure(config.pressure, require)
    if config.case.solver == "compressible":
        _validate_compressible(config.compressible, require)
        require(not config.compressible.time_stepping.startswith("dual-") or config.time.dt > 0,
                "time.dt", "> 0, the physical time step, with compressible.time_stepping = "
                f"{config.compressible.time_stepping!r}", config.time.dt)

    grid, flow, time, output = config.grid, config.flow, config.time, config.output
    require(all(n >= 1 for n in grid.cells), "grid.cells", "3 positive integers", grid.cells)
    require(
        all(length > 0 for length in grid.lengths),
        "grid.lengths",
        "3 positive lengths",
        grid.lengths,
    )
    require(grid.stretching >= 0, "grid.stretching", ">= 0", grid.stretching)
    require(
        grid.walls or grid.stretching == 0,
        "grid.stretching",
        "0 without walls (a periodic y is uniform)",
        grid.stretching,
    )
    if grid.core_cells:
        require(grid.walls and grid.stretching == 0 and config.case.solver == "incompressible",
                "grid.core_cells", "0 unless walls = true and stretching = 0 with the "
                "incompressible solver", grid.core_cells)
        require(0 < grid.core_width < grid.lengths[1], "grid.core_width",
                f"in (0, lengths[1] = {grid.lengths[1]})", grid.core_width)
        outer = grid.cells[1] - grid.core_cells
        require(grid.core_cells > 0 and outer > 0 and outer % 2 == 0, "grid.core_cells",
                f"positive, leaving an even positive number of the {grid.cells[1]} cells "
                "in y outside the core", grid.core_cells)
        spacing = grid.core_width / grid.core_cells
        require(outer // 2 * spacing <= 0.5 * (grid.lengths[1] - grid.core_width),
                "grid.core_cells", "enough for the core to be finer than the cells outside "
                "it (their widths grow from the core's spacing)", grid.core_cells)
    require(
        grid.cells[1] >= (2 if grid.walls else 3),
        "grid.cells",
        "at least 2 cells in y with walls, 3 with a periodic y",
        grid.cells,
    )
    require(flow.viscosity > 0, "flow.viscosity", "positive", flow.viscosity)
    require(flow.forcing in FORCINGS, "flow.forcing", f"one of {FORCINGS}", flow.forcing)
    require(
        flow.initial in INITIAL_CONDITIONS,
        "flow.initial",
        f"one of {INITIAL_CONDITIONS}",
        flow.initial,
    )
    require(flow.perturbation >= 0, "flow.perturbation", ">= 0", flow.perturbation)
    require(time.steps >= 1, "time.steps", "a positive integer", time.steps)
    require(time.dt >= 0, "time.dt", ">= 0 (0: adaptive)", time.dt)
    require(
        0 < time.cfl <= time.max_cfl, "time.cfl", f"in (0, max_cfl = {time.max_cfl}]", time.cfl
    )
    for key in ("statistics_every", "checkpoint_every", "images_every", "fields_every"):
        value = getattr(output, key)
        require(value >= 0, f"output.{key}", ">= 0", value)
    require(
        output.checkpoints_kept >= 1, "output.checkpoints_kept", ">= 1", output.checkpoints_kept
    )
    _validate_acoustics(config.acoustics, config.time, require)
    statistics = config.statistics
    for key in ("every", "start_step", "output_every"):
        require(getattr(statistics, key) >= 0, f"statistics.{key}", ">= 0",
                getattr(statistics, key))
    require(statistics.start_time >= 0, "statistics.start_time", ">= 0", statistics.start_time)
    homogeneous = sorted(statistics.homogeneous)
    require(
        homogeneous in ([], ["x", "z"], ["theta", "x"]),
        "statistics.homogeneous",
        '["x", "z"] (or ["x", "theta"]: profiles across the walls) or [] (mean fields)',
        list(statistics.homogeneous),
    )
    cylinder = config.cylinder
    require(cylinder.length > 0, "cylinder.length", "> 0", cylinder.length)
    require(
        0 <= cylinder.inner_radius < cylinder.radius,
        "cylinder.inner_radius",
        f"in [0, radius = {cylinder.radius})",
        cylinder.inner_radius,
    )
    require(cylinder.sectors >= 1, "cylinder.sectors", "a positive integer", cylinder.sectors)
    require(cylinder.stretching >= 0, "cylinder.stretching", ">= 0", cylinder.stretching)
    require(cylinder.clustering == "walls" or (cylinder.clustering == "axis"
            and cylinder.inner_radius == 0), "cylinder.clustering", "'walls', or 'axis' with "
            "inner_radius = 0", cylinder.clustering)
    require(cylinder.outer_wall in ("no-slip", "slip"), "cylinder.outer_wall",
            "'no-slip' or 'slip'", cylinder.outer_wall)
    require(cylinder.theta_core_radius >= 0, "cylinder.theta_core_radius", ">= 0 (0: θ "
            "implicit everywhere)", cylinder.theta_core_radius)
    require(grid.x_boundaries in X_BOUNDARIES, "grid.x_boundaries",
            f"one of {X_BOUNDARIES}", grid.x_boundaries)
    require(grid.wall_condition in ("no-slip", "slip"), "grid.wall_condition",
            "'no-slip' or 'slip'", grid.wall_condition)
    if grid.wall_condition == "slip":
        require(grid.walls and config.case.solver == "incompressible", "grid.wall_condition",
                "'no-slip' unless walls = true with the incompressible solver (the "
                "cylindrical solver's outer wall is [cylinder] outer_wall)",
                grid.wall_condition)
    require(grid.inflow_profile in INFLOW_PROFILES, "grid.inflow_profile",
            f"one of {INFLOW_PROFILES}", grid.inflow_profile)
    require(math.isfinite(grid.inflow_velocity) and grid.inflow_velocity > 0,
            "grid.inflow_velocity", "a positive number", grid.inflow_velocity)
    if grid.x_boundaries == "inflow-outflow":
        require(config.case.solver in ("incompressible", "cylindrical"), "grid.x_boundaries",
                "'periodic' with this solver", grid.x_boundaries)
        require(flow.forcing == "none", "flow.forcing",
                '"none" with an inflow (the inflow sets the flow rate)', flow.forcing)
        require(statistics.every == 0 or "x" not in statistics.homogeneous,
                "statistics.homogeneous",
                "[] or without x when x has an inflow and an outflow",
                list(statistics.homogeneous))
    _validate_insitu(config.insitu, require)
    _validate_immersed(config, require)
    require(
        all(p >= 0 for p in config.parallel.proc_grid),
        "parallel.proc_grid",
        "two integers >= 0",
        config.parallel.proc_grid,
    )
    require(
        set(config.parallel.overlap) <= set(OVERLAP_PLACES),
        "parallel.overlap",
        f"a list of {' and '.join(map(repr, OVERLAP_PLACES))} (where transposes overlap)",
        list(config.parallel.overlap),
    )


def _validate_immersed(config: Config, require) -> None:
    immersed = config.immersed
    require(immersed.forces_every >= 0, "immersed.forces_every", ">= 0", immersed.forces_every)
    if not immersed.body:
        return
    from tachyflow.solvers.pencil import bodies  # the registered shapes

    names = [body.name for body in immersed.body]
    require(len(set(names)) == len(names), "immersed.body", "bodies with distinct names",
            names)
    require(config.case.solver in ("incompressible", "cylindrical"), "case.solver",
            "'incompressible' or 'cylindrical' with [[immersed.body]]",
            config.case.solver)
    for body in immersed.body:
        key = f"immersed.body '{body.name}'"
        require(body.shape in bodies.shapes(), f"{key} shape", f"one of {bodies.shapes()}",
                body.shape)
        require(body.radius > 0, f"{key} radius", "> 0", body.radius)
        require(body.scale > 0, f"{key} scale", "> 0", body.scale)
        require(body.thickness > 0, f"{key} thickness", "> 0", body.thickness)
        for vector in ("axis", "rotation_axis", "pitch_axis"):
            value = getattr(body, vector)
            require(any(value), f"{key} {vector}", "a nonzero vector", value)
        require(body.motion in bodies.motions(), f"{key} motion",
                f"one of {bodies.motions()}", body.motion)
        if body.motion == "oscillation":
            require(config.case.solver == "incompressible", f"{key} motion",
                    "'rigid' with the cylindrical solver (bodies oscillate on the Cartesian "
                    "one)", body.motion)
            require(math.isfinite(body.frequency) and body.frequency > 0,
                    f"{key} frequency", "> 0 with an oscillation", body.frequency)
            require(body.angular_velocity == 0, f"{key} angular_velocity",
                    "0 with an oscillation (pitch instead)", body.angular_velocity)
        if body.shape == "fan-rotor":
            _validate_fan(config, require)


def _validate_fan(config: Config, require) -> None:
    from tachyflow.numerics.blades import SECTIONS

    fan, cylinder = config.fan, config.cylinder
    require(fan.section in SECTIONS, "fan.section", f"one of {sorted(SECTIONS)}", fan.section)
    require(all(0 <= lift <= 3 for lift in fan.design_lift), "fan.design_lift",
            "two design lift coefficients (root, tip) in [0, 3]", fan.design_lift)
    require(config.case.solver == "cylindrical", "case.solver", "'cylindrical' with a fan",
            config.case.solver)
    require(cylinder.inner_radius > 0, "cylinder.inner_radius", "> 0 (the fan's hub)",
            cylinder.inner_radius)
    require(fan.blades >= 1 and fan.blades % cylinder.sectors == 0, "fan.blades",
            f"a positive multiple of cylinder.sectors = {cylinder.sectors}",
            fan.blades)
    require(0 <= fan.tip_clearance < cylinder.radius - cylinder.inner_radius,
            "fan.tip_clearance", "in [0, radius - inner_radius)", fan.tip_clearance)
    require(config.grid.x_boundaries == "inflow-outflow", "grid.x_boundaries",
            '"inflow-outflow" with a fan', config.grid.x_boundaries)
    for key in ("position", "pressure_planes"):
        values = getattr(fan, key)
        values = values if isinstance(values, tuple) else (values,)
        require(all(0 < value < cylinder.length for value in values), f"fan.{key}",
                f"inside (0, cylinder.length = {cylinder.length})", getattr(fan, key))
    require(fan.pressure_planes[0] < fan.position < fan.pressure_planes[1],
            "fan.pressure_planes", f"one plane up- and one downstream of fan.position = "
            f"{fan.position}", fan.pressure_planes)


def _validate_pressure(pressure: PressureSection, require) -> None:
    for key in ("source", "shift"):
        value = getattr(pressure, key)
        require(math.isfinite(value), f"pressure.{key}", "a finite number", value)
    require(pressure.method in ("cg", "bicgstab"), "pressure.method", "'cg' or 'bicgstab'",
            pressure.method)
    require(math.isfinite(pressure.tol) and 0 < pressure.tol < 1, "pressure.tol",
            "a number between 0 and 1", pressure.tol)
    require(pressure.max_iterations >= 1, "pressure.max_iterations", ">= 1",
            pressure.max_iterations)
    require(pressure.halo in ("p2p", "neighborhood"), "pressure.halo",
            "'p2p' or 'neighborhood'", pressure.halo)


def _validate_scheme(table, prefix: str, require) -> None:
    """The FW-H scheme's keys of ``[acoustics]`` or an observers file."""
    require(table.time_order in TIME_ORDERS, f"{prefix}time_order", f"one of {TIME_ORDERS}",
            table.time_order)
    require(table.interpolation in INTERPOLATIONS, f"{prefix}interpolation",
            f"one of {INTERPOLATIONS}", table.interpolation)


def _validate_compressible(section: CompressibleSection, require) -> None:
    from tachyflow.solvers.compressible.grids import grid_names

    require(section.grid in grid_names(), "compressible.grid", f"one of {grid_names()}",
            section.grid)
    _validate_grid_file(section, require)
    require(all(n >= 4 for n in section.cells), "compressible.cells", "[ni, nj], each >= 4",
            section.cells)
    require(0 <= 2 * section.wake_cells < section.cells[0], "compressible.wake_cells",
            f"in [0, ni/2 = {section.cells[0] / 2})", section.wake_cells)
    for key in ("wall_spacing", "far_field", "upstream", "mach", "temperature", "cfl",
                "cfl_start", "nu_tilde_ratio"):
        value = getattr(section, key)
        require(value > 0, f"compressible.{key}", "positive", value)
    require(section.reynolds >= 0, "compressible.reynolds", ">= 0 (0: inviscid)",
            section.reynolds)
    require(-90 < section.alpha < 90, "compressible.alpha", "in (-90, 90) degrees",
            section.alpha)
    require(section.scheme in COMPRESSIBLE_SCHEMES, "compressible.scheme",
            f"one of {COMPRESSIBLE_SCHEMES}", section.scheme)
    require(section.limiter in COMPRESSIBLE_LIMITERS, "compressible.limiter",
            f"one of {COMPRESSIBLE_LIMITERS}", section.limiter)
    require(0 <= section.entropy_fix < 1, "compressible.entropy_fix", "in [0, 1)",
            section.entropy_fix)
    require(section.turbulence in TURBULENCE_MODELS, "compressible.turbulence",
            f"one of {TURBULENCE_MODELS}", section.turbulence)
    require(section.turbulence == "laminar" or section.reynolds > 0, "compressible.reynolds",
            "> 0 with turbulence = 'sa'", section.reynolds)
    require(section.time_stepping in COMPRESSIBLE_TIME_STEPPING, "compressible.time_stepping",
            f"one of {COMPRESSIBLE_TIME_STEPPING}", section.time_stepping)
    require(section.sweeps >= 1, "compressible.sweeps", ">= 1", section.sweeps)
    require(section.inner_iterations >= 1, "compressible.inner_iterations", ">= 1",
            section.inner_iterations)
    require(0 < section.inner_tolerance < 1, "compressible.inner_tolerance",
            "in (0, 1), the relative drop of the inner residual",
            section.inner_tolerance)
    require(section.cfl_start <= section.cfl, "compressible.cfl_start",
            f"<= cfl = {section.cfl}", section.cfl_start)
    require(section.cfl_ramp >= 0, "compressible.cfl_ramp", ">= 0", section.cfl_ramp)
    require(0 < section.target_residual < 1, "compressible.target_residual", "in (0, 1)",
            section.target_residual)
    require(not section.vortex_correction or section.mach < 1,
            "compressible.vortex_correction", "false with a supersonic free stream",
            section.vortex_correction)


def _validate_grid_file(section: CompressibleSection, require) -> None:
    from tachyflow.io.grid_files import GRID_FILE_SUFFIXES, grid_file_format

    if section.grid != "file":
        require(not section.grid_file, "compressible.grid_file",
                "empty unless grid = 'file'", section.grid_file)
        return
    require(bool(section.grid_file), "compressible.grid_file",
            "the path of a Plot3D or CGNS grid file with grid = 'file'",
            section.grid_file)
    try:
        grid_file_format(section.grid_file)
    except ValueError:
        suffixes = list(GRID_FILE_SUFFIXES)
        require(False, "compressible.grid_file", f"a path ending in one of {suffixes}",
                section.grid_file)


def _with_paths_from(config: Config, folder: Path) -> Config:
    """``config`` with its relative file paths taken from ``folder`` (the case file's)."""
    grid_file = config.compressible.grid_file
    if not grid_file or Path(grid_file).is_absolute():
        return config
    return config.replace("compressible", grid_file=str((folder / grid_file).absolute()))


def _validate_acoustics(acoustics: AcousticsSection, time: TimeSection, require) -> None:
    require(acoustics.surface in SURFACES, "acoustics.surface", f"one of {SURFACES}",
            acoustics.surface)
    require(acoustics.start_step >= 0, "acoustics.start_step", ">= 0", acoustics.start_step)
    _validate_scheme(acoustics, "acoustics.", require)
    if acoustics.surface == "none":
        return
    for key in ("radius", "length", "spacing", "c0", "rho0"):
        value = getattr(acoustics, key)
        require(value > 0, f"acoustics.{key}", "positive", value)
    require(acoustics.panels >= 8, "acoustics.panels", ">= 8", acoustics.panels)
    require(acoustics.every >= 1, "acoustics.every", ">= 1", acoustics.every)
    require(acoustics.samples >= 8, "acoustics.samples", ">= 8", acoustics.samples)
    require(acoustics.exchange in EXCHANGES, "acoustics.exchange", f"one of {EXCHANGES}",
            acoustics.exchange)
    require(acoustics.sync in SYNCS, "acoustics.sync", f"one of {SYNCS}", acoustics.sync)
    require(acoustics.arc_plane in PLANES, "acoustics.arc_plane", f"one of {PLANES}",
            acoustics.arc_plane)
    require(acoustics.arc_radius >= 0, "acoustics.arc_radius", ">= 0", acoustics.arc_radius)
    require(acoustics.arc_count >= 1, "acoustics.arc_count", ">= 1", acoustics.arc_count)
    require(
        bool(acoustics.observers) or acoustics.arc_radius > 0,
        "acoustics.observers",
        "at least one observer (or an arc with arc_radius > 0)",
        acoustics.observers,
    )
    require(acoustics.surface != "mesh" or bool(acoustics.mesh), "acoustics.mesh",
            "a surface mesh file with surface = 'mesh'", acoustics.mesh)
    require(
        all(lo < hi for lo, hi in zip(acoustics.lower, acoustics.upper, strict=True))
        or acoustics.surface != "box",
        "acoustics.upper",
        "above acoustics.lower in every direction",
        acoustics.upper,
    )
    require(acoustics.duration >= 0, "acoustics.duration", ">= 0", acoustics.duration)
    require(
        acoustics.duration > 0 or time.dt > 0,
        "acoustics.duration",
        "> 0 with an adaptive time step (time.dt = 0): the observer window needs the "
        "simulated time the record will cover",
        acoustics.duration,
    )


def _validate_insitu(insitu: InsituSection, require) -> None:
    require(insitu.width >= 16 and insitu.height >= 16, "insitu.width",
            "an image of at least 16 x 16 pixels", (insitu.width, insitu.height))
    require(insitu.aggregators >= 1, "insitu.aggregators", ">= 1", insitu.aggregators)
    require(
        insitu.queue_limit >= insitu.reserve_queue_limit + 2,
        "insitu.queue_limit",
        f"at least reserve_queue_limit + 2 = {insitu.reserve_queue_limit + 2} (SST stalls "
        "when the reserve fills the queue)",
        insitu.queue_limit,
    )
    require(insitu.reserve_queue_limit >= 0, "insitu.reserve_queue_limit", ">= 0",
            insitu.reserve_queue_limit)
    require(insitu.queue_full_policy in QUEUE_FULL_POLICIES, "insitu.queue_full_policy",
            f"one of {QUEUE_FULL_POLICIES}", insitu.queue_full_policy)
    require(insitu.transit_precision in TRANSIT_PRECISIONS, "insitu.transit_precision",
            f"one of {tuple(TRANSIT_PRECISIONS)}", insitu.transit_precision)
    require(insitu.transit_threads in TRANSIT_THREADS, "insitu.transit_threads",
            f"one of {TRANSIT_THREADS}", insitu.transit_threads)
    on, off = insitu.duty_cycle
    require(on >= 0 and off >= 0 and (on > 0) == (off > 0), "insitu.duty_cycle",
            "[steps on, steps off], both > 0 (or both 0: always)", insitu.duty_cycle)
    names = [pipeline.name for pipeline in insitu.pipeline]
    require(len(set(names)) == len(names), "insitu.pipeline", "pipelines with distinct names",
            names)
    if insitu.pipeline:
        # The kinds are the pipelines registered (insitu.pipelines keeps VTK and numba out
        # of its import).
        from tachyflow.insitu.pipelines import kinds

        known = kinds()
    for pipeline in insitu.pipeline:
        key = f"insitu.pipeline '{pipeline.name}'"
        require(pipeline.kind in known, f"{key} kind", f"one of {known}", pipeline.kind)
        require(pipeline.mode in MODES, f"{key} mode", f"one of {MODES}", pipeline.mode)
        require(pipeline.field in FIELDS, f"{key} field", f"one of {FIELDS}", pipeline.field)
        require(pipeline.colour_by in ("", *FIELDS), f"{key} colour_by", f"one of {FIELDS}",
                pipeline.colour_by)
        require(pipeline.plane in PLANES, f"{key} plane", f"one of {PLANES}", pipeline.plane)
        require(pipeline.every >= 0 and pipeline.every_time >= 0, f"{key} every",
                ">= 0", (pipeline.every, pipeline.every_time))
        require((pipeline.every > 0) != (pipeline.every_time > 0), f"{key} every",
                "either every (steps) or every_time (simulated time), not both",
                (pipeline.every, pipeline.every_time))
        require(pipeline.kind != "probes" or bool(pipeline.points), f"{key} points",
                "at least one probe point", pipeline.points)
        low, high = pipeline.range
        require(low < high or low == high == 0, f"{key} range", "(low, high) with low < high, "
                "or (0, 0) for the data's range", pipeline.range)


def builtin_cases() -> list[str]:
    """Names of the cases shipped with tachyflow."""
    folder = resources.files("tachyflow") / "cases"
    return sorted(
        p.name.removesuffix(".toml") for p in folder.iterdir() if p.name.endswith(".toml")
    )


def load(name_or_path: str) -> Config:
    """Load a built-in case by name, or a case file by path."""
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.exists():
        if path.is_dir():
            raise ConfigError(f"case file {str(path)!r} is a folder, not a TOML file")
        if not path.is_file():
            raise ConfigError(f"case file {str(path)!r} does not exist")
        return _with_paths_from(parse(path.read_text(), str(path)), path.parent)
    resource = resources.files("tachyflow") / "cases" / f"{name_or_path}.toml"
    if not resource.is_file():
        raise ConfigError(
            f"no case named {name_or_path!r}: built-in cases are "
            f"{', '.join(builtin_cases())}, or give a path to a .toml file"
        )
    return parse(resource.read_text(), f"{name_or_path} (built-in)")
