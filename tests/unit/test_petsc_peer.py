"""The PETSc peer's launcher: the file it reads, its errors, and (slow) a real solve."""

import numpy as np
import pytest
import scipy.sparse

from tachyflow.bench.peers import petsc as petsc_peer


def laplacian_1d(n: int) -> scipy.sparse.csr_array:
    """The n×n Dirichlet second difference [-1, 2, -1]: symmetric positive definite."""
    return scipy.sparse.diags_array(
        [-np.ones(n - 1), 2.0 * np.ones(n), -np.ones(n - 1)], offsets=[-1, 0, 1]
    ).tocsr()


def test_save_system_writes_the_arrays_the_script_reads(tmp_path):
    matrix = laplacian_1d(7)
    rhs = np.arange(7.0)
    path = petsc_peer.save_system(tmp_path / "sub" / "system.npz", matrix, rhs)
    assert path == tmp_path / "sub" / "system.npz"
    # Only the file itself: the temporary name was renamed, not left behind.
    assert [p.name for p in path.parent.iterdir()] == ["system.npz"]
    with np.load(path) as archive:
        assert set(archive.files) == {"data", "indices", "indptr", "shape", "rhs"}
        loaded = scipy.sparse.csr_array(
            (archive["data"], archive["indices"], archive["indptr"]),
            shape=tuple(archive["shape"]),
        )
        np.testing.assert_array_equal(archive["rhs"], rhs)
    assert (loaded != matrix).nnz == 0


def test_save_system_replaces_an_existing_file(tmp_path):
    path = tmp_path / "system.npz"
    petsc_peer.save_system(path, laplacian_1d(3), np.ones(3))
    petsc_peer.save_system(path, laplacian_1d(5), np.ones(5))
    with np.load(path) as archive:
        assert tuple(archive["shape"]) == (5, 5)


@pytest.mark.parametrize(
    ("matrix", "rhs", "message"),
    [
        (scipy.sparse.csr_array(np.ones((2, 3))), np.ones(2), "square"),
        (scipy.sparse.csr_array(np.array([[2.0, 1.0], [0.0, 2.0]])), np.ones(2), "symmetric"),
        (laplacian_1d(4), np.ones(3), "rhs has 3 entries"),
    ],
)
def test_save_system_rejects_what_cg_cannot_solve(tmp_path, matrix, rhs, message):
    with pytest.raises(ValueError, match=message):
        petsc_peer.save_system(tmp_path / "bad.npz", matrix, rhs)
    assert not list(tmp_path.iterdir())


def test_run_petsc_peer_without_petsc_raises_oserror_with_the_install_hint(tmp_path, monkeypatch):
    path = petsc_peer.save_system(tmp_path / "system.npz", laplacian_1d(4), np.ones(4))
    monkeypatch.setattr(petsc_peer, "find_petsc", lambda: None)
    with pytest.raises(OSError, match="apt-get install python3-petsc4py"):
        petsc_peer.run_petsc_peer(path, 1)


def test_clean_environment_drops_the_virtual_environment_and_launcher_variables(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/somewhere")
    monkeypatch.setenv("PMI_RANK", "0")
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "0")
    monkeypatch.setenv("OMPI_MCA_btl", "self,vader")
    monkeypatch.setenv("VIRTUAL_ENV", "/opt/venv")
    monkeypatch.setenv("PATH", "/opt/venv/bin:/usr/bin")
    environment = petsc_peer.clean_environment()
    for name in ("PYTHONPATH", "PMI_RANK", "OMPI_COMM_WORLD_RANK", "VIRTUAL_ENV"):
        assert name not in environment
    assert environment["OMPI_MCA_btl"] == "self,vader"
    assert "/opt/venv/bin" not in environment["PATH"].split(":")
    assert "/usr/bin" in environment["PATH"].split(":")


@pytest.mark.slow
def test_petsc_cg_solves_a_1d_laplacian_in_n_iterations(tmp_path):
    if petsc_peer.find_petsc() is None:
        pytest.skip(petsc_peer.INSTALL_HINT)
    n = 24
    matrix = laplacian_1d(n)
    # e₁ has a component along every eigenvector of the 1D Laplacian, whose n eigenvalues
    # are distinct, so CG's Krylov space only reaches the solution at iteration n.
    rhs = np.zeros(n)
    rhs[0] = 1.0
    path = petsc_peer.save_system(tmp_path / "laplacian.npz", matrix, rhs)
    result = petsc_peer.run_petsc_peer(path, 1, rtol=1e-10, repeats=2, timeout=120)
    assert result["peer"] == petsc_peer.PEER_NAME
    assert result["converged"]
    assert result["rows"] == n
    assert result["nonzeros"] == matrix.nnz
    assert result["iterations"] == n
    assert result["residual"] <= 1e-10
    assert len(result["times"]) == 2
    assert result["per_iteration"] == pytest.approx(result["median"] / n)
