"""The loads on an immersed body from its surface: the pressure and the viscous stress
sampled near each surface triangle and integrated.

The solver's ``body_loads`` are the momentum its direct forcing removes from the fluid.
This is the other path the issue of the axial fan asks for, and the usual one of
body-fitted codes: each triangle's traction from the flow at two probe points, a cell and
a half and three cells out along its normal (:func:`tachyflow.numerics.immersed.
wall_traction`: the wall pressure extrapolated, the wall shear from the parabola through
the wall's velocity and the probes', both second order in the distance), times its area,
summed over the ranks. The flow at the probe
points is interpolated where it lives and sent to the rank that integrates each triangle
by the noise-source exchange (:class:`tachyflow.parallel.NoiseSourceExchange`, which
serves the FW-H surfaces the same way), so no rank holds more than its own triangles' data.
"""

from __future__ import annotations

import math

import numpy as np

from tachyflow.numerics.immersed import wall_traction
from tachyflow.numerics.interpolation import FlowValues
from tachyflow.parallel import NoiseSourceExchange
from tachyflow.parallel.pieces import panel_share

PROBE_CELLS = 1.5  # how far out the first probe is, in cells: beyond the forced layer


def cylinder_side(centre, radius: float, span: float, sections: int = 128):
    """The side of a circular cylinder along z (no end caps: for a cylinder spanning a
    periodic z, whose caps would face each other), centred on ``centre``, as a
    ``trimesh.Trimesh`` with outward normals."""
    import trimesh

    tube = trimesh.creation.cylinder(radius=radius, height=span, sections=int(sections))
    side = np.abs(tube.face_normals[:, 2]) < 0.5
    mesh = trimesh.Trimesh(tube.vertices, tube.faces[side], process=False)
    mesh.apply_translation(np.asarray(centre, dtype=float))
    return mesh


class SurfaceLoads:
    """Force and moment (about the origin) of the fluid on a triangulated body surface of
    the Cartesian incompressible solver, from the surface's traction.

    Parameters
    ----------
    solver : IncompressibleSolver
        The flow (its ghosts current after a step).
    body : tachyflow.numerics.immersed.Body
        The body, at rest or rotating in place: its rigid velocity field is subtracted
        from the flow's before the wall shear is taken.
    mesh : trimesh.Trimesh
        Its surface, triangle normals pointing into the fluid; the same on every rank.
    probe_cells : float
        The first probe point's distance from the triangles, in cells of the grid round
        the body (the second is twice as far).

    Notes
    -----
    Construction, :meth:`loads` and :meth:`free` are collective over the solver's
    communicator.
    """

    def __init__(self, solver, body, mesh, probe_cells: float = PROBE_CELLS):
        if not (isinstance(probe_cells, int | float) and math.isfinite(probe_cells)
                and probe_cells > 0):
            raise ValueError(f"probe_cells must be a positive number, got {probe_cells!r}")
        self.solver = solver
        decomposition, grid = solver.decomposition, solver.grid
        centres = np.asarray(mesh.triangles_center, dtype=float)
        normals = np.asarray(mesh.face_normals, dtype=float)
        areas = np.asarray(mesh.area_faces, dtype=float)
        low, high = mesh.bounds[0][1], mesh.bounds[1][1]
        rows = (grid.centres_y >= low) & (grid.centres_y <= high)
        columns = (grid.centres_x >= mesh.bounds[0][0]) & (grid.centres_x <= mesh.bounds[1][0])
        spacings = [float(np.max(grid.widths_x[columns], initial=0.0)),
                    float(np.max(grid.widths_y[rows], initial=0.0))]
        if grid.shape[2] > 1:  # a one-cell z is a 2D flow: its span is no spacing
            spacings.append(grid.spacing_z)
        self.distance = float(probe_cells) * max(spacings)
        count, size, rank = len(centres), decomposition.size, decomposition.rank
        destination = np.empty(count, dtype=np.int64)
        for owner in range(size):
            destination[panel_share(count, owner, size)] = owner
        # Both probes of a triangle go to the rank that integrates it: its rows come back
        # as the near probes, then the far ones.
        probes = np.concatenate([centres + k * self.distance * normals for k in (1, 2)])
        self.exchange = NoiseSourceExchange(
            decomposition, grid, solver.halo, probes, np.concatenate([normals, normals]),
            np.tile(destination, 2), method="two-sided", sources=FlowValues(),
        )
        mine = panel_share(count, rank, size)
        self.centres, self.normals, self.areas = centres[mine], normals[mine], areas[mine]
        # The body's rigid velocity field at the probes (its strain-free part of the flow).
        self.rigid = [np.asarray(body.velocity(self.centres + k * self.distance * self.normals),
                                 dtype=float) for k in (1, 2)]

    def loads(self) -> np.ndarray:
        """``[Fx, Fy, Fz, Mx, My, Mz]`` of the fluid on the surface, on every rank
        (collective)."""
        solver = self.solver
        flow = self.exchange.exchange(solver.u, solver.v, solver.w, solver.p)
        near, far = np.split(flow, 2)
        traction = wall_traction(near, far, self.normals, *self.rigid, solver.viscosity,
                                 self.distance) * self.areas[:, None]
        moment = np.cross(self.centres, traction)
        return solver.decomposition.sum_arrays(
            np.concatenate([traction.sum(axis=0), moment.sum(axis=0)])
        )

    def free(self) -> None:
        """Release the exchange (collective)."""
        self.exchange.free()
