"""What the parallel tests of runs share: a small walled channel and a folder every rank
sees."""

SMALL_CHANNEL = """
[case]
name = "small-channel"
[grid]
cells = [8, 10, 6]
lengths = [6.0, 2.0, 3.0]
walls = true
stretching = 1.2
[flow]
viscosity = 0.01
forcing = "flow-rate"
forcing_value = 1.0
initial = "perturbed-channel"
perturbation = 0.2
[time]
steps = 6
cfl = 0.6
[output]
statistics_every = 2
checkpoint_every = 3
"""


def shared_folder(tmp_path_factory, comm):
    """A fresh folder made on rank 0, the same path on every rank."""
    folder = tmp_path_factory.mktemp("run") if comm.rank == 0 else None
    return comm.bcast(folder, root=0)
