"""Files: atomic writes and figures, checkpoints, field series (ADIOS2 BP5, VTK XML), FW-H
surface series, unstructured meshes (meshio), structured grid files (Plot3D, CGNS), locks."""
