"""Parallel checkpoints: written by each rank's piece, read on any rank count, verified."""

import numpy as np
import pytest
from mpi4py import MPI

from tachyflow import config
from tachyflow.errors import ConfigError
from tachyflow.io.bp_reading import bp_reader
from tachyflow.io.checkpoint import (
    PieceLayout,
    _checksum_share,
    checkpoint_path,
    read_checkpoint,
    write_checkpoint,
)
from tachyflow.parallel import PencilDecomposition
from tachyflow.simulation import Simulation
from tests.cli.test_cli import tachyflow
from tests.parallel.helpers import SMALL_CHANNEL, shared_folder

SHAPE = (7, 5, 6)

CASE = SMALL_CHANNEL


def global_fields():
    generator = np.random.default_rng(7)
    return {name: generator.standard_normal(SHAPE) for name in ("a", "b")}


def layout_of(decomposition):
    pencil = decomposition.pencils["y"]
    return PieceLayout(decomposition.global_shape, pencil.start, pencil.shape)


def sub_communicator(size):
    world = MPI.COMM_WORLD
    return world.Split(0 if world.rank < size else MPI.UNDEFINED, world.rank)


@pytest.mark.parallel([3])
def test_written_on_two_ranks_read_on_one_two_and_three(tmp_path_factory):
    world = MPI.COMM_WORLD
    folder = shared_folder(tmp_path_factory, world)
    fields = global_fields()
    writers = sub_communicator(2)
    if writers != MPI.COMM_NULL:
        with PencilDecomposition(SHAPE, comm=writers, periodic=(True, False, True)) as pencils:
            layout = layout_of(pencils)
            pieces = {k: np.ascontiguousarray(v[pencils.pencils["y"].slices]) for k, v in
                      fields.items()}
            write_checkpoint(
                writers, folder, 12, 0.25, pieces, layout, {"gradient": 1.5},
                {"observer/x/profile": np.arange(4.0)},
            )
        writers.Free()
    world.Barrier()
    for size, proc_grid in ((1, None), (2, (2, 1)), (3, None)):
        readers = sub_communicator(size)
        if readers == MPI.COMM_NULL:
            continue
        with PencilDecomposition(SHAPE, proc_grid, readers, (True, False, True)) as pencils:
            checkpoint, pieces = read_checkpoint(
                readers, checkpoint_path(folder, 12), layout_of(pencils)
            )
            for name, whole in fields.items():
                assert np.array_equal(pieces[name], whole[pencils.pencils["y"].slices])
        assert (checkpoint.step, checkpoint.time) == (12, 0.25)
        assert checkpoint.scalars == {"gradient": 1.5}
        assert np.array_equal(checkpoint.replicated["observer/x/profile"], np.arange(4.0))
        readers.Free()


def test_checksum_sees_every_single_bit_flip_and_swaps():
    field = np.random.default_rng(3).standard_normal((3, 4, 5))
    layout = PieceLayout(field.shape, (0, 0, 0), field.shape)
    reference = _checksum_share(field, layout)
    words = field.view(np.uint64)
    for index in [(0, 0, 0), (1, 2, 3), (2, 3, 4)]:
        for bit in (0, 31, 52, 63):
            flipped = words.copy()
            flipped[index] ^= np.uint64(1 << bit)
            assert _checksum_share(flipped.view(np.float64), layout) != reference
    swapped = field.copy()
    swapped[0, 0, 0], swapped[2, 1, 0] = field[2, 1, 0], field[0, 0, 0]
    assert _checksum_share(swapped, layout) != reference
    # Shares of pieces add up to the whole array's checksum.
    halves = [
        _checksum_share(field[:, :2], PieceLayout(field.shape, (0, 0, 0), (3, 2, 5))),
        _checksum_share(field[:, 2:], PieceLayout(field.shape, (0, 2, 0), (3, 2, 5))),
    ]
    assert sum(halves) % 2**64 == reference


def gathered(simulation):
    solver = simulation.solver
    return [solver.decomposition.gather_global(solver.cell_field(n), "y") for n in "uvwp"]


@pytest.mark.parallel([3])
def test_run_written_on_two_ranks_continues_on_one_two_and_three(tmp_path_factory):
    world = MPI.COMM_WORLD
    case = config.parse(CASE, "small.toml")
    folder = shared_folder(tmp_path_factory, world)
    writers = sub_communicator(2)
    expected = None
    if writers != MPI.COMM_NULL:
        straight = Simulation(case, folder / "straight", writers, planning="estimate")
        straight.run(6)
        expected = gathered(straight)
        straight.free()
        first = Simulation(case, folder / "first", writers, planning="estimate")
        first.run(3)
        first.free()
        writers.Free()
    expected = world.bcast(expected, root=0)
    checkpoint = checkpoint_path(folder / "first" / "checkpoints", 3)
    for size in (1, 2, 3):
        ranks = sub_communicator(size)
        if ranks == MPI.COMM_NULL:
            continue
        again = Simulation(
            case, folder / f"again{size}", ranks, restart=checkpoint, planning="estimate"
        )
        assert again.solver.steps == 3
        again.run()  # to the case's last step
        result = gathered(again)
        again.free()
        if ranks.rank == 0:
            for name, a, b in zip("uvwp", result, expected, strict=True):
                if size == 2:
                    assert np.array_equal(a, b), name
                else:
                    scale = np.abs(b).max()
                    assert np.abs(a - b).max() <= 1e-12 * scale, (name, size)
        ranks.Free()


@pytest.mark.parallel([2])
def test_damaged_checkpoints_are_skipped_naming_them(tmp_path_factory, capfd):
    comm = MPI.COMM_WORLD
    case = config.parse(CASE, "small.toml").replace("output", checkpoint_every=2,
                                                    checkpoints_kept=3)
    folder = shared_folder(tmp_path_factory, comm)
    first = Simulation(case, folder, comm, planning="estimate")
    first.run(6)  # checkpoints at 2, 4, 6
    first.free()
    if comm.rank == 0:
        newest = checkpoint_path(folder / "checkpoints", 6)
        data = bytearray(newest.read_bytes())
        data[4096 + 100] ^= 0x10  # one bit of the first array
        newest.write_bytes(bytes(data))
        middle = checkpoint_path(folder / "checkpoints", 4)
        middle.write_bytes(middle.read_bytes()[: middle.stat().st_size // 2])
    comm.Barrier()
    with pytest.raises(ConfigError, match=r"step_00000006.ckpt is damaged: array 'p'"):
        Simulation(case, folder, comm, restart=checkpoint_path(folder / "checkpoints", 6))
    again = Simulation(case, folder, comm, restart="latest", planning="estimate")
    assert again.solver.steps == 2
    again.free()
    if comm.rank == 0:
        err = capfd.readouterr().err
        assert "skipping checkpoint step_00000006.ckpt" in err
        assert "skipping checkpoint step_00000004.ckpt" in err
        assert "truncated or damaged" in err
        assert "restarting from step_00000002.ckpt" in err


def test_killed_then_restarted_with_the_same_command_gives_the_uninterrupted_files(tmp_path):
    """Killed while writing its second checkpoint, then the same command with --restart
    latest: the same statistics, checkpoints, fields and images as a run never killed."""
    case = tmp_path / "case.toml"
    case.write_text(CASE.replace("checkpoint_every = 3", "checkpoint_every = 3\n"
                                 "fields_every = 2\nimages_every = 3"))

    def run(folder, *extra, fault=None):
        hook = {"TACHYFLOW_FAULT_CHECKPOINT_AFTER": fault} if fault else None
        # FFTW plans chosen by timing differ between processes in their round-off.
        command = ("run", str(case), "-n", "2", "-o", str(folder), "--fft-planning", "estimate")
        return tachyflow(*command, *extra, env=hook)

    assert run(tmp_path / "straight").returncode == 0
    killed = tmp_path / "killed"
    assert run(killed, fault="2@6").returncode != 0  # killed inside the step-6 checkpoint
    folder = killed / "checkpoints"
    assert sorted(p.name for p in folder.iterdir()) == [
        ".step_00000006.ckpt.partial",
        "step_00000003.ckpt",
    ]
    finished = run(killed, "--restart", "latest")
    assert finished.returncode == 0, finished.stderr
    straight = tmp_path / "straight"
    for name in (
        "stats.csv",
        "checkpoints/step_00000003.ckpt",
        "checkpoints/step_00000006.ckpt",
        "images/u_step_00000003.png",
        "images/u_step_00000006.png",
        "fields.pvd",
    ):
        assert (killed / name).read_bytes() == (straight / name).read_bytes(), name
    assert sorted(p.name for p in folder.iterdir()) == ["step_00000003.ckpt", "step_00000006.ckpt"]
    series = []
    for run_folder in (straight, killed):
        with bp_reader(run_folder / "fields.bp") as reader:
            steps = reader.num_steps()
            series.append([reader.read(n, step_selection=[0, steps]) for n in ("step", "u", "p")])
    assert list(series[1][0]) == [2, 4, 6]
    assert all(np.array_equal(a, b) for a, b in zip(*series, strict=True))


def test_a_checkpoint_of_another_grid_is_refused(tmp_path):
    pieces = {"u": np.zeros((2, 3, 4))}
    layout = PieceLayout((2, 3, 4), (0, 0, 0), (2, 3, 4))
    path = write_checkpoint(MPI.COMM_SELF, tmp_path, 1, 0.0, pieces, layout)
    other = PieceLayout((2, 3, 5), (0, 0, 0), (2, 3, 5))
    with pytest.raises(ConfigError, match=r"holds a \(2, 3, 4\) grid, the case's grid is"):
        read_checkpoint(MPI.COMM_SELF, path, other)
    with pytest.raises(ValueError, match="has shape"):
        write_checkpoint(MPI.COMM_SELF, tmp_path, 2, 0.0, pieces, other)


def test_a_restart_from_what_is_no_checkpoint_file_says_what_it_is(tmp_path):
    import os

    layout = PieceLayout((2, 3, 4), (0, 0, 0), (2, 3, 4))
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for path, what in ((tmp_path / "missing.ckpt", "does not exist"),
                       (tmp_path, "is a directory"),
                       (fifo, r"is not a regular file \(a pipe, a device or a socket\)")):
        with pytest.raises(ConfigError, match=f"checkpoint '.*' {what}"):
            read_checkpoint(MPI.COMM_SELF, path, layout)
