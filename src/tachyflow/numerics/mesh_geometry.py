"""Geometry of linear cells for cell-centred finite volumes (numba, MPI-free).

:func:`cell_geometry` makes, in one compiled pass over one block of cells of a type, the
face vector areas and centroids, the cell volumes and centroids and the sorted vertex keys
that pair faces across cells; :mod:`tachyflow.io.mesh` calls it per block.
"""

from __future__ import annotations

import numpy as np

from tachyflow.numerics.compiled import kernel


@kernel
def half_cross(a, b, c, out):
    """Vector area of triangle ``a, b, c``: half the cross product of two of its edges."""
    ux, uy, uz = b[0] - a[0], b[1] - a[1], b[2] - a[2]
    vx, vy, vz = c[0] - a[0], c[1] - a[1], c[2] - a[2]
    out[0] = 0.5 * (uy * vz - uz * vy)
    out[1] = 0.5 * (uz * vx - ux * vz)
    out[2] = 0.5 * (ux * vy - uy * vx)


@kernel(error_model="numpy")
def cell_geometry(points, connectivity, faces, face_sizes):
    """Face vector areas and centroids, volumes, centroids and face keys of one block.

    ``faces`` holds the local vertex cycles of the cell type, padded to 4 columns, and
    ``face_sizes`` their lengths. Returns per cell and local face the outward vector area
    and the centroid ``(n, n_faces, 3)``, per cell the volume, centroid and extent (largest
    side of its bounding box), and per face occurrence, cell-major, two int64 keys that
    pack the sorted point ids (+1, a triangle padded with 0) two by two.
    """
    n_cells, n_vertices = connectivity.shape
    n_faces = faces.shape[0]
    base = points.shape[0] + 1
    areas = np.empty((n_cells, n_faces, 3))
    centres = np.empty((n_cells, n_faces, 3))
    volumes = np.empty(n_cells)
    centroids = np.empty((n_cells, 3))
    extents = np.empty(n_cells)
    high = np.empty(n_cells * n_faces, dtype=np.int64)
    low = np.empty(n_cells * n_faces, dtype=np.int64)
    # Scalars and fixed scratch arrays only: temporaries per face would dominate the cost.
    corner = np.empty((4, 3))
    ids = np.empty(4, dtype=np.int64)
    triangle_areas = np.empty((4, 3))
    area = np.empty(3)
    centre = np.empty(3)
    for c in range(n_cells):
        # Work relative to the vertex average, for accuracy far from the origin.
        ax = ay = az = 0.0
        extent = 0.0
        for k in range(3):
            lower = upper = points[connectivity[c, 0], k]
            total = 0.0
            for v in range(n_vertices):
                x = points[connectivity[c, v], k]
                total += x
                lower = min(lower, x)
                upper = max(upper, x)
            extent = max(extent, upper - lower)
            if k == 0:
                ax = total / n_vertices
            elif k == 1:
                ay = total / n_vertices
            else:
                az = total / n_vertices
        extents[c] = extent
        signed_volume = 0.0
        mx = my = mz = 0.0
        for f in range(n_faces):
            size = face_sizes[f]
            for v in range(size):
                point = connectivity[c, faces[f, v]]
                ids[v] = point
                corner[v, 0] = points[point, 0] - ax
                corner[v, 1] = points[point, 1] - ay
                corner[v, 2] = points[point, 2] - az
            if size == 3:
                half_cross(corner[0], corner[1], corner[2], area)
                for k in range(3):
                    centre[k] = (corner[0, k] + corner[1, k] + corner[2, k]) / 3.0
            else:
                # A quad, planar or warped, as four triangles around its vertex average:
                # their vector areas sum to the quad's whatever the diagonal, and their
                # centroids weighted by their area along the face normal give the face
                # centroid (exact when planar). A collapsed quad keeps its vertex average,
                # so that build_mesh can report the zero area itself.
                for k in range(3):
                    centre[k] = 0.25 * (corner[0, k] + corner[1, k] + corner[2, k] + corner[3, k])
                    area[k] = 0.0
                for t in range(4):
                    half_cross(corner[t], corner[(t + 1) % 4], centre, triangle_areas[t])
                    for k in range(3):
                        area[k] += triangle_areas[t, k]
                norm = np.sqrt(area[0] ** 2 + area[1] ** 2 + area[2] ** 2)
                if norm > 0.0:
                    wx = wy = wz = total = 0.0
                    for t in range(4):
                        weight = (
                            triangle_areas[t, 0] * area[0]
                            + triangle_areas[t, 1] * area[1]
                            + triangle_areas[t, 2] * area[2]
                        ) / norm
                        u = (t + 1) % 4
                        wx += weight * (corner[t, 0] + corner[u, 0] + centre[0])
                        wy += weight * (corner[t, 1] + corner[u, 1] + centre[1])
                        wz += weight * (corner[t, 2] + corner[u, 2] + centre[2])
                        total += weight
                    if total > 0.0:
                        centre[0] = wx / (3.0 * total)
                        centre[1] = wy / (3.0 * total)
                        centre[2] = wz / (3.0 * total)
            # The pyramid from the anchor to the face: its signed volume (divergence
            # theorem) and its centroid, 3/4 of the way from apex to base centroid.
            pyramid = (centre[0] * area[0] + centre[1] * area[1] + centre[2] * area[2]) / 3.0
            signed_volume += pyramid
            mx += 0.75 * pyramid * centre[0]
            my += 0.75 * pyramid * centre[1]
            mz += 0.75 * pyramid * centre[2]
            for k in range(3):
                areas[c, f, k] = area[k]
            centres[c, f, 0] = centre[0] + ax
            centres[c, f, 1] = centre[1] + ay
            centres[c, f, 2] = centre[2] + az
            # Sorted point ids of the face (insertion sort of at most 4).
            for v in range(1, size):
                value = ids[v]
                w = v - 1
                while w >= 0 and ids[w] > value:
                    ids[w + 1] = ids[w]
                    w -= 1
                ids[w + 1] = value
            occurrence = c * n_faces + f
            if size == 3:
                high[occurrence] = ids[0] + 1
                low[occurrence] = (ids[1] + 1) * base + ids[2] + 1
            else:
                high[occurrence] = (ids[0] + 1) * base + ids[1] + 1
                low[occurrence] = (ids[2] + 1) * base + ids[3] + 1
        # All faces outward together: a cell listed in mirrored order has negative volume.
        if signed_volume < 0.0:
            for f in range(n_faces):
                for k in range(3):
                    areas[c, f, k] = -areas[c, f, k]
        volumes[c] = abs(signed_volume)
        centroids[c, 0] = ax + mx / signed_volume
        centroids[c, 1] = ay + my / signed_volume
        centroids[c, 2] = az + mz / signed_volume
    return areas, centres, volumes, centroids, extents, high, low
