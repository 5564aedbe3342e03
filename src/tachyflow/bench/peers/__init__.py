"""The peers: other programs that the benchmarks run beside tachyflow, and their builds.

``builds``
    Where ``make install-bench`` built the compiled peers (``build.sh`` here), or why they
    are not there (``PeerMissing``); the launcher they run under.
``cans``
    CaNS beside ``bench step``: its ``input.nml`` from the channel case, its step times.
``decomp``
    2DECOMP&FFT beside ``bench poisson``: ``decomp_poisson.f90``'s driver as an MPI job of
    its own, sampled over named pipes interleaved with ours.
``petsc``
    PETSc's CG beside ``bench unstructured``: ``petsc_cg.py``, run as a file by the system
    Python under the system MPI, on a saved matrix.
``hpcc``
    HPL inside Debian's ``hpcc`` beside ``bench hpl``.
``npb``
    NPB 3.4's own programs beside ``bench npb``: found, run, their summary read.

``pingpong.c`` is the C ping-pong that ``bench pingpong`` builds and runs beside its own.
"""
