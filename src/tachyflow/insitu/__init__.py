"""In situ and in transit visualisation of running simulations (Tsutsumi et al.).

``options``
    ``[insitu]`` and its pipeline entries, each kind's keys its own.
``pipelines``
    Pipeline kinds by name (slice, isosurface, probes, statistics; plug-ins'): extract on
    a piece, gather, draw.
``adaptor``
    :class:`VisualisationAdaptor`, the per-step hook the visualisation observer calls.
``extract``, ``boxes``, ``raster``
    MPI-free extraction of slices and isosurfaces, the cells a pipeline reads, a block's
    quads sampled at a window's pixels.
``render``
    VTK offscreen rendering (EGL or OSMesa).
``transit/``
    In transit over ADIOS2 SST: the writer in the run, the readers of
    ``tachyflow transit-render``.
``monitor``, ``viewer``, ``transit_render``
    The live metrics and image stream, the web viewer (``tachyflow view``), the in
    transit renderer.
"""
