"""The measurements of tachyflow behind every ``tachyflow bench`` command.

One module per benchmark (``transpose``, ``poisson``, ``slabs``, ``overlap``, ``step``,
``cylindrical_step``, ``fan``, ``pingpong``, ``loggp``, ``collectives``, ``io_bandwidth``,
``fwh``, ``insitu``, ``noise_exchange``, ``unstructured``, ``mpins2d``, ``networks``,
``npb``, ``hpl``; ``scaling`` merges ``bench step`` runs into strong scaling; ``fan_model``
predicts the fan's step at other rank counts from a ``bench fan`` run), what they share
(``harness``: interleaved timing; ``results``: the results JSON; ``plots`` and ``report``:
figures and the HTML page from results files), and :mod:`tachyflow.bench.peers`: the other
programs measured beside ours. The benchmark programs themselves (NPB's kernels, HPL) are
in :mod:`tachyflow.programs`.
"""
