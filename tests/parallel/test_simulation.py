import numpy as np
import pytest
from mpi4py import MPI
from pytest_mpi import parallel_assert

from tachyflow import config
from tachyflow.errors import ConfigError, SimulationDiverged
from tachyflow.io.bp_reading import bp_reader
from tachyflow.simulation import Simulation
from tests.parallel.helpers import SMALL_CHANNEL, shared_folder

CASE = SMALL_CHANNEL


def final_fields(simulation):
    solver = simulation.solver
    return [solver.decomposition.gather_global(solver.cell_field(n), "y") for n in "uvw"]


def newest_checkpoint(folder):
    return sorted((folder / "checkpoints").glob("step_*.ckpt"))[-1]


@pytest.mark.parallel([1, 2, 3])
def test_restart_continues_bit_identically(tmp_path_factory):
    comm = MPI.COMM_WORLD
    case = config.parse(CASE, "small.toml")
    folder = shared_folder(tmp_path_factory, comm)
    straight = Simulation(case, folder / "straight", comm, planning="estimate")
    straight.run(6)
    expected = final_fields(straight)
    straight.free()
    first = Simulation(case, folder / "first", comm, planning="estimate")
    first.run(3)
    first.free()
    checkpoint = comm.bcast(str(newest_checkpoint(folder / "first")) if comm.rank == 0 else None)
    second = Simulation(case, folder / "second", comm, restart=checkpoint, planning="estimate")
    second.run(3)
    result = final_fields(second)
    steps = second.solver.steps
    second.free()
    if comm.rank == 0:
        identical = all(np.array_equal(a, b) for a, b in zip(result, expected, strict=True))
        written = sorted(p.name for p in (folder / "straight").iterdir() if p.name[0] != ".")
    else:
        identical, written = True, []
    parallel_assert(identical and steps == 6, "restart diverged from the straight run")
    if comm.rank == 0:
        assert written == [
            "checkpoints",
            "config.toml",
            "images",
            "log.txt",
            "stats.csv",
            "timings.json",
        ]
        stats = (folder / "straight" / "stats.csv").read_text().splitlines()
        assert stats[0].startswith("step,time,dt,cfl,kinetic_energy")
        assert [line.split(",")[0] for line in stats[1:]] == ["2", "4", "6"]


@pytest.mark.parallel([1, 2])
def test_non_finite_field_stops_the_run_and_keeps_the_last_good_checkpoint(tmp_path_factory):
    comm = MPI.COMM_WORLD
    case = config.parse(CASE, "small.toml").replace("output", checkpoint_every=1)
    folder = shared_folder(tmp_path_factory, comm)
    simulation = Simulation(case, folder, comm, planning="estimate")
    simulation.run(3)
    if comm.rank == comm.size - 1:  # poison one rank only: every rank must still stop
        simulation.solver.halo.interior(simulation.solver.u)[0, 0, 0] = np.nan
    with pytest.raises(
        # Step 3 if the NaN reaches the adaptive time step, else step 4 after it spread.
        SimulationDiverged,
        match=r"not finite \(step [34], t = [\d.e-]+, field 'u'\)",
    ):
        simulation.run(2)
    assert newest_checkpoint(folder).name == "step_00000003.ckpt"
    simulation.free()


@pytest.mark.parallel([2])
def test_cfl_beyond_the_limit_stops_the_run(tmp_path_factory):
    comm = MPI.COMM_WORLD
    case = config.parse(CASE, "small.toml").replace("time", dt=0.8, cfl=0.6)
    simulation = Simulation(case, shared_folder(tmp_path_factory, comm), comm, planning="estimate")
    with pytest.raises(
        SimulationDiverged,
        match=r"CFL number [\d.]+ exceeds max_cfl = 2.0 "
        r"\(step 1, t = 0.8, field 'u'\)",
    ):
        simulation.run(3)
    simulation.free()


@pytest.mark.parallel([2])
def test_corrupt_or_missing_checkpoint_is_a_clear_error_on_every_rank(tmp_path_factory):
    comm = MPI.COMM_WORLD
    case = config.parse(CASE, "small.toml")
    folder = shared_folder(tmp_path_factory, comm)
    if comm.rank == 0:
        (folder / "bad.npz").write_bytes(b"not a zip file")
    comm.Barrier()
    with pytest.raises(ConfigError, match="corrupt or not a tachyflow checkpoint"):
        Simulation(case, folder / "out", comm, restart=folder / "bad.npz", planning="estimate")
    with pytest.raises(ConfigError, match="does not exist"):
        Simulation(case, folder / "out", comm, restart=folder / "none.npz", planning="estimate")


@pytest.mark.parallel([1, 2, 3])
@pytest.mark.parametrize("stretching", [0.0, 1.2])
def test_fields_are_written_as_an_adios2_series_paraview_can_read(tmp_path_factory, stretching):
    import xml.etree.ElementTree as ElementTree

    comm = MPI.COMM_WORLD
    case = config.parse(CASE, "small.toml").replace("output", fields_every=3)
    case = case.replace("grid", stretching=stretching)
    folder = shared_folder(tmp_path_factory, comm)
    simulation = Simulation(case, folder, comm, planning="estimate")
    simulation.run(6)
    u = final_fields(simulation)[0]
    simulation.free()
    if comm.rank != 0:
        return
    with bp_reader(folder / "fields.bp") as reader:
        variables = reader.available_variables()
        attributes = reader.available_attributes()
        assert variables["u"]["AvailableStepsCount"] == "2"
        assert list(reader.read("step", step_selection=[0, 2])) == [3, 6]
        last = reader.read("u", step_selection=[1, 1])
        assert reader.read_attribute("Fides_Data_Model") == "rectilinear"
        assert list(reader.read("y", step_selection=[0, 1]).ravel()[:1]) == [0.0]
    nx, ny, nz = case.grid.cells
    assert last.shape == (nz, ny, nx)
    assert np.array_equal(last.transpose(2, 1, 0), u)  # cell-centred fields
    assert ("vtk.xml" in attributes) == (stretching == 0.0)
    if stretching == 0.0:
        ElementTree.fromstring(attributes["vtk.xml"]["Value"].strip('"'))

    # The plain-VTK fallback: fields.pvd lists both steps, each a .pvtr of one piece per
    # rank; VTK's parallel reader assembles the same u.
    from vtkmodules.util.numpy_support import vtk_to_numpy
    from vtkmodules.vtkIOXML import vtkXMLPRectilinearGridReader

    entries = ElementTree.parse(folder / "fields.pvd").getroot().iter("DataSet")
    files = [entry.get("file") for entry in entries]
    assert files == [f"fields_vtk/step_{step:08d}.pvtr" for step in (3, 6)]
    assert len(list((folder / "fields_vtk" / "step_00000006").glob("piece_*.vtr"))) == comm.size
    reader = vtkXMLPRectilinearGridReader()
    reader.SetFileName(str(folder / files[-1]))
    reader.Update()
    dataset = reader.GetOutput()
    assert dataset.GetNumberOfCells() == nx * ny * nz
    values = vtk_to_numpy(dataset.GetCellData().GetArray("u")).reshape(nz, ny, nx)
    assert np.array_equal(values, last)
    assert np.allclose(vtk_to_numpy(dataset.GetXCoordinates()), np.linspace(0, 6.0, nx + 1))
    if stretching:
        assert np.allclose(vtk_to_numpy(dataset.GetYCoordinates()), case_faces_y(case))


@pytest.mark.parallel([1, 2])
def test_a_restart_drops_the_field_steps_written_after_its_checkpoint(tmp_path_factory):
    import xml.etree.ElementTree as ElementTree

    comm = MPI.COMM_WORLD
    case = config.parse(CASE, "small.toml").replace("output", fields_every=2)
    folder = shared_folder(tmp_path_factory, comm)
    first = Simulation(case, folder, comm, planning="estimate")
    first.run(6)  # fields at 2, 4, 6; checkpoints at 3, 6
    expected = final_fields(first)[0]
    first.free()
    if comm.rank == 0:  # as if killed after the fields of step 6, before its checkpoint
        (folder / "checkpoints" / "step_00000006.ckpt").unlink()
    comm.Barrier()
    again = Simulation(case, folder, comm, restart="latest", planning="estimate")
    again.run()
    again.free()
    if comm.rank != 0:
        return
    with bp_reader(folder / "fields.bp") as reader:
        assert reader.num_steps() == 3
        assert list(reader.read("step", step_selection=[0, 3])) == [2, 4, 6]
        assert reader.read_attribute("Fides_Data_Model") == "rectilinear"
        last = reader.read("u", step_selection=[2, 1])
    assert np.array_equal(last.transpose(2, 1, 0), expected)
    entries = ElementTree.parse(folder / "fields.pvd").getroot().iter("DataSet")
    assert [e.get("file")[-13:-5] for e in entries] == ["00000002", "00000004", "00000006"]


def case_faces_y(case):
    from tachyflow.numerics.grid import tanh_faces

    return tanh_faces(case.grid.cells[1], case.grid.lengths[1], case.grid.stretching)


@pytest.mark.parallel([1, 2])
def test_a_second_run_into_a_live_runs_folder_is_refused_before_touching_it(tmp_path_factory):
    from tachyflow.io.locks import FolderInUseError

    comm = MPI.COMM_WORLD
    case = config.parse(CASE, "small.toml")
    folder = shared_folder(tmp_path_factory, comm)
    live = Simulation(case, folder, comm, planning="estimate")
    written = (folder / "config.toml").read_text() if comm.rank == 0 else None
    other = case.replace("case", name="intruder")
    with pytest.raises(FolderInUseError, match="in use by a live run"):
        Simulation(other, folder, comm, planning="estimate")
    if comm.rank == 0:
        assert (folder / "config.toml").read_text() == written
    live.free()
    Simulation(other, folder, comm, planning="estimate").free()  # free once the run ends


@pytest.mark.parallel([1, 2])
def test_restart_latest_falls_back_to_the_newest_whole_checkpoint(tmp_path_factory, capfd):
    comm = MPI.COMM_WORLD
    case = config.parse(CASE, "small.toml")
    folder = shared_folder(tmp_path_factory, comm)
    first = Simulation(case, folder, comm, planning="estimate")
    first.run(6)  # checkpoints at steps 3 and 6
    first.free()
    if comm.rank == 0:
        (folder / "checkpoints" / "step_00000006.ckpt").write_bytes(b"torn by a crash")
        (folder / "checkpoints" / ".step_00000009.ckpt.partial").write_bytes(b"left by a kill")
    comm.Barrier()
    again = Simulation(case, folder, comm, restart="latest", planning="estimate")
    assert again.solver.steps == 3
    again.free()
    if comm.rank == 0:
        assert not (folder / "checkpoints" / ".step_00000009.ckpt.partial").exists()
        assert "skipping checkpoint step_00000006.ckpt" in capfd.readouterr().err
