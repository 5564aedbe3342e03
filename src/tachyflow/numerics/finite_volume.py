"""Cell-centred finite volumes with two-point fluxes for ``-∇·∇p = f`` (Jeon & Choi's
pressure equation), written without MPI.

The flux through a face between cells i and j is ``a_f (p_i - p_j)`` with the
transmissibility ``a_f = A_f / d_f``, ``d_f`` the distance between the cell centres
measured along the face normal. On a boundary face with a Dirichlet value g,
``a_b (p_i - g)`` with ``a_b = A_b / d_b``, ``d_b`` from the cell centre to the face
along the normal; a Neumann face adds its given outward flux density. The two-point flux
is exact for linear fields on meshes whose centre-to-centre lines cross faces at right
angles (boxes of hexahedra: second order); on skewed meshes (perturbed tetrahedra) it is
not consistent, and the error decreases more slowly or stalls as the mesh is refined —
the price of Jeon & Choi's simple, symmetric, diagonally dominant matrix.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sparse


def face_transmissibilities(
    centroids: np.ndarray, face_cells: np.ndarray, areas: np.ndarray, normals: np.ndarray
) -> np.ndarray:
    """``A_f / d_f`` of internal faces, ``d_f = |(c_j - c_i)·n_f|``."""
    distance = np.abs(
        np.einsum("ij,ij->i", centroids[face_cells[:, 1]] - centroids[face_cells[:, 0]], normals)
    )
    return areas / distance


def boundary_transmissibilities(
    centroids: np.ndarray,
    cells: np.ndarray,
    areas: np.ndarray,
    normals: np.ndarray,
    face_centroids: np.ndarray,
) -> np.ndarray:
    """``A_b / d_b`` of boundary faces, ``d_b = |(c_b - c_i)·n_b|``."""
    distance = np.abs(np.einsum("ij,ij->i", face_centroids - centroids[cells], normals))
    return areas / distance


def assemble_rows(
    rows: int,
    columns: int,
    face_cells: np.ndarray,
    face_coefficients: np.ndarray,
    boundary_cells: np.ndarray,
    boundary_coefficients: np.ndarray,
    diagonal_shift=0.0,
) -> sparse.csr_matrix:
    """The matrix rows ``0 .. rows-1`` of the two-point-flux operator over cells
    ``0 .. columns-1`` (local numbering: rows are the owned cells; faces may reach cells
    beyond ``rows``, whose rows are left out). ``boundary_coefficients`` are the
    Dirichlet faces' ``a_b`` (0 for Neumann faces); ``diagonal_shift`` (a scalar or one
    value per row) is added to the diagonal: Jeon & Choi's form ``1 + Σ a`` is a shift of 1.
    """
    i, j = face_cells[:, 0], face_cells[:, 1]
    row = np.concatenate((i, j, i, j, boundary_cells))
    column = np.concatenate((i, j, j, i, boundary_cells))
    value = np.concatenate(
        (face_coefficients, face_coefficients, -face_coefficients, -face_coefficients,
         boundary_coefficients)
    )
    keep = row < rows
    matrix = sparse.coo_matrix((value[keep], (row[keep], column[keep])), shape=(rows, columns))
    matrix = matrix.tocsr()
    matrix.sum_duplicates()
    if np.any(diagonal_shift):
        matrix = matrix + sparse.diags(
            np.broadcast_to(diagonal_shift, (rows,)), 0, shape=(rows, columns)
        )
    return matrix.tocsr()


def right_hand_side(
    rows: int,
    volumes: np.ndarray,
    source: np.ndarray,
    boundary_cells: np.ndarray,
    boundary_coefficients: np.ndarray,
    boundary_values: np.ndarray,
    neumann_areas: np.ndarray | None = None,
    neumann_fluxes: np.ndarray | None = None,
) -> np.ndarray:
    """``f_i V_i`` plus the Dirichlet faces' ``a_b g`` and the Neumann faces' ``A_b q``
    (``q``: outward normal derivative) for the cells ``0 .. rows-1``."""
    rhs = source[:rows] * volumes[:rows]
    keep = boundary_cells < rows
    np.add.at(rhs, boundary_cells[keep], (boundary_coefficients * boundary_values)[keep])
    if neumann_fluxes is not None:
        np.add.at(rhs, boundary_cells[keep], (neumann_areas * neumann_fluxes)[keep])
    return rhs
