"""The block-image observer: pictures (Mach number, pressure) of a solver on a 2D
curvilinear grid of blocks, composited from every rank's block without gathering it."""

from __future__ import annotations

from tachyflow.errors import ConfigError
from tachyflow.insitu.raster import composite, pixel_centres, rasterise_block
from tachyflow.observers import Observer, register
from tachyflow.solvers.base import BLOCK_FIELDS

#: What the pictures show by default: the chord of an airfoil at 0 <= x <= 1 with half a
#: chord round it.
DEFAULT_WINDOW = (-0.5, 1.5, -0.5, 0.5)


@register
class BlockImages(Observer):
    """Draws ``images/<field>_XXXXXXXX.png`` of each of ``fields`` in ``window`` every
    ``[output] images_every`` steps (on when that is > 0 or the case has a table
    ``[observers.block-images]``) and after the last step.

    Each rank samples its own block at the picture's pixel centres
    (:mod:`tachyflow.insitu.raster`: the fields at the block's nodes, interpolated
    linearly over its quads), the picture-sized pieces are summed on rank 0 (one
    reduction; no rank holds more of the grid than its block) and rank 0 draws them with
    the in situ pipelines' :class:`~tachyflow.insitu.render.SceneRenderer`, as a slice
    seen along z: grey where no cell is (the body).

    Parameters
    ----------
    every : int
        Cadence in steps (0: only after the last step).
    fields : list of str
        Fields of the solver to draw (default Mach number and pressure).
    window : (x_min, x_max, y_min, y_max)
        The region drawn.
    size : (int, int)
        Width and height of the pictures in pixels.
    colour_map : str
        A matplotlib colour map name.
    """

    name = "block-images"
    needs = frozenset({BLOCK_FIELDS})

    def __init__(self, every: int = 0, fields=("mach", "p"), window=DEFAULT_WINDOW,
                 size=(800, 450), colour_map: str = "viridis"):
        from tachyflow.insitu.raster import check_shape, check_window
        from tachyflow.insitu.render import SCENE_WIDTH, colour_map_table

        if not isinstance(every, int) or isinstance(every, bool) or every < 0:
            raise ValueError(f"every must be an integer >= 0, got {every!r}")
        if isinstance(fields, str) or not fields:
            raise ValueError(f"fields must be a list of field names, got {fields!r}")
        colour_map_table(colour_map)  # checks the name
        self.every = every
        self.fields = tuple(fields)
        self.window = check_window(window)
        self.size = check_shape(size)
        self.colour_map = colour_map
        # As many samples as the scene shows pixels of the window (the slice fills the
        # scene's width or its height, whichever the window's aspect ratio reaches first).
        x_min, x_max, y_min, y_max = self.window
        aspect = (y_max - y_min) / (x_max - x_min)
        columns = int(SCENE_WIDTH * self.size[0])
        scale = min(1.0, self.size[1] / (columns * aspect))
        self.shape = (max(2, int(columns * scale)), max(2, int(columns * aspect * scale)))
        self._renderer = None
        self._last = None

    @classmethod
    def from_case(cls, config, options):
        if not cls.applies(config):
            return None
        every = config.output.images_every
        if not every and options is None:
            return None
        try:
            return cls(every, **(options or {}))
        except (TypeError, ValueError) as error:
            raise ConfigError(f"{config.source}: [observers.{cls.name}]: {error}") from None

    def start(self, run) -> None:
        unknown = sorted(set(self.fields) - set(run.solver.fields))
        if unknown:
            raise ConfigError(
                f"[observers.{self.name}] fields: {unknown} are not fields of solver "
                f"{run.config.case.solver!r}, which has {list(run.solver.fields)}"
            )

    def pictures(self, run) -> dict:
        """The composited pictures ``(nx, ny)`` of every field on rank 0, None elsewhere
        (collective)."""
        from tachyflow import collectives

        solver = run.solver
        x, y = solver.node_coordinates()
        pictures = {}
        for name in self.fields:
            piece = rasterise_block(x, y, solver.node_field(name), self.window, self.shape)
            whole = collectives.reduce(run.comm, piece.ravel(), "sum", 0, "native")
            pictures[name] = None if whole is None else composite(whole.reshape(piece.shape))
        return pictures if run.root else None

    def observe(self, run) -> None:
        solver = run.solver
        pictures = self.pictures(run)
        self._last = solver.steps
        if pictures is None:
            return
        from tachyflow.insitu.extract import PlaneSlice
        from tachyflow.insitu.render import SceneRenderer

        if self._renderer is None:
            self._renderer = SceneRenderer(self.size, self.colour_map)
        centres = pixel_centres(self.window, self.shape)
        for name, picture in pictures.items():
            self._renderer.render_slice(
                PlaneSlice(2, 0.0, picture, (0, 0), centres),
                run.output / "images" / f"{name}_{solver.steps:08d}.png",
                field=name, title=f"{run.config.case.name}: {name}", step=solver.steps,
                time=solver.time,
            )

    def finish(self, run) -> None:
        if self._last != run.solver.steps:
            self.observe(run)
        self.close(run)

    def close(self, run) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
