"""Reading BP files back leaves nothing in /tmp (ADIOS2's BP5 reader writes a profile
there on every close)."""

import adios2
import numpy as np

from tachyflow.io.bp_reading import bp_reader, bp_stream, reader_profile


def test_reading_a_bp_file_leaves_no_reader_profile_in_tmp(tmp_path):
    path = tmp_path / "probe.bp"
    with adios2.Stream(str(path), "w") as stream:
        for step in stream.steps(2):
            stream.write("a", np.full(4, float(step.current_step())), [4], [0], [4])
    profile = reader_profile(path)
    with adios2.FileReader(str(path)) as reader:
        reader.read("a")
    assert profile.is_file()  # what ADIOS2's reader does: the reason for bp_reader
    profile.unlink()
    with bp_reader(path) as reader:
        values = reader.read("a", step_selection=[0, 2])
    assert np.array_equal(values, [0, 0, 0, 0, 1, 1, 1, 1])
    assert not profile.exists()
    with bp_stream(path) as stream:
        steps = [float(stream.read("a")[0]) for _ in stream.steps()]
    assert steps == [0.0, 1.0]
    assert not profile.exists()
