# tachyflow: every target sets up what it needs, from nothing but Python >= 3.11, gcc, make.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
RANKS ?= 2
COLLECTIVES ?= bcast reduce allreduce scan gather alltoall
# apt-get needs root; use sudo when not root.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: demo test test-slow bench lint install install-bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Runtime, MPI (the mpich wheel) and test tools; redone when pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[mpich,test]"
	touch $@

# Offscreen rendering (VTK through EGL on Mesa's software renderer when there is no GPU).
$(VENV)/.installed-graphics: | $(BIN)/python
	dpkg -s libegl1 libegl-mesa0 libgl1-mesa-dri >/dev/null 2>&1 || \
	  ($(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install \
	    -y -qq --no-install-recommends libegl1 libegl-mesa0 libgl1-mesa-dri)
	touch $@

install: $(VENV)/.installed $(VENV)/.installed-graphics

# mpi4py-fft, the peer of the transpose benchmark, compiles against FFTW.
# PETSc (Debian's petsc4py on Open MPI), the peer of the unstructured solver, runs as a
# separate process with the system Python. HPL inside Debian's hpcc (Open MPI, serial
# OpenBLAS) is the peer of `bench hpl`.
$(VENV)/.installed-bench: $(VENV)/.installed $(VENV)/.installed-graphics
	dpkg -s libfftw3-dev python3-petsc4py openmpi-bin hpcc libopenblas0-serial >/dev/null 2>&1 || \
	  ($(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq --no-install-recommends \
	    libfftw3-dev python3-petsc4py python3-numpy openmpi-bin hpcc libopenblas0-serial)
	$(BIN)/python -m pip install --quiet -e ".[mpich,test,bench]"
	touch $@

# Peers no registry carries (2DECOMP&FFT with tachyflow's Poisson driver, CaNS, NPB 3.4 MPI),
# built from their release archives in TACHYFLOW_PEER_SOURCES into TACHYFLOW_PEERS_BUILD,
# outside this tree; the benchmarks find them there (exported so `make bench` sees them).
# Without that folder, or without a peer's archive, the target fails, naming the peers not
# built (SU2, built only from a user's own archive, excepted).
TACHYFLOW_PEER_SOURCES ?= ../shared/peers
TACHYFLOW_PEERS_BUILD ?= $(HOME)/.cache/tachyflow/peers
export TACHYFLOW_PEER_SOURCES TACHYFLOW_PEERS_BUILD

# Their compilers: Debian's MPICH (ABI-compatible with the mpich wheel), gfortran, CMake.
$(VENV)/.installed-peer-tools: | $(BIN)/python
	dpkg -s gfortran mpich libmpich-dev libfftw3-dev cmake git meson ninja-build g++ >/dev/null 2>&1 || \
	  ($(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install \
	    -y -qq --no-install-recommends gfortran mpich libmpich-dev libfftw3-dev cmake git \
	    meson ninja-build g++)
	touch $@

install-bench: $(VENV)/.installed-bench $(VENV)/.installed-peer-tools
	bash src/tachyflow/bench/peers/build.sh "$(TACHYFLOW_PEER_SOURCES)" "$(TACHYFLOW_PEERS_BUILD)"

# Debian's Chromium and its WebDriver: the live viewer is tested in a headless browser
# (tests/cli/test_viewer.py; Selenium comes with the test extra).
$(VENV)/.installed-browser: | $(BIN)/python
	dpkg -s chromium chromium-driver >/dev/null 2>&1 || \
	  ($(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install \
	    -y -qq --no-install-recommends chromium chromium-driver)
	touch $@

# Debian's Open MPI: the emulated cluster is tested with it as well as with the mpich wheel
# (tests/cli/test_cluster.py; mpi4py loads it through MPI4PY_LIBMPI).
$(VENV)/.installed-openmpi: | $(BIN)/python
	dpkg -s openmpi-bin >/dev/null 2>&1 || \
	  ($(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install \
	    -y -qq --no-install-recommends openmpi-bin)
	touch $@

# Debian's CGNS tools: `cgnscheck` validates the CGNS grids tachyflow writes and
# `plot3d_to_cgns` converts a grid independently of it (tests/unit/test_grid_files.py).
$(VENV)/.installed-cgns: | $(BIN)/python
	dpkg -s cgns-convert >/dev/null 2>&1 || \
	  ($(SUDO) apt-get update -qq && $(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install \
	    -y -qq --no-install-recommends cgns-convert)
	touch $@

demo: install
	$(BIN)/tachyflow info
	$(BIN)/tachyflow run channel -n $(RANKS) -o demo-results/channel

# The serial tests and 1-rank variants in one pytest, then the 2- and 3-rank variants each
# under one mpiexec (tests/run_suite.sh says why); PYTEST_ARGS narrows or extends every part.
test: install $(VENV)/.installed-browser $(VENV)/.installed-openmpi $(VENV)/.installed-cgns
	bash tests/run_suite.sh $(BIN)/python $(PYTEST_ARGS)

# Checks too long for `make test` (and those needing peers such as PETSc).
# Long validations: an hour each at most unless a test says otherwise (its timeout mark).
test-slow: install
	$(BIN)/python -m pytest -m slow -o timeout=3600

bench: install-bench
	$(BIN)/tachyflow info
	for n in 128 256; do \
	  for grid in 2x1 1x2; do \
	    $(BIN)/tachyflow bench transpose -n 2 --grid $$n $$n $$n --proc-grid $$grid \
	      --repeats 30 -o bench-results || exit 1; \
	  done; \
	  $(BIN)/tachyflow bench poisson -n 2 --grid $$n $$n $$n --repeats 15 \
	    -o bench-results || exit 1; \
	done
	$(BIN)/tachyflow bench step -n 2 --grid 128 128 128 -o bench-results
	for ranks in 1 2; do \
	  $(BIN)/tachyflow bench npb -n $$ranks --kernel cg --class A -o bench-results || exit 1; \
	done
	$(BIN)/tachyflow bench pingpong -n 2 -o bench-results
	$(BIN)/tachyflow model fit bench-results/pingpong_2ranks.json \
	  -o bench-results/machine.profile.json
	# A first, shorter run of the collectives calibrates the model of the library's own
	# calls; the second run, with MPICH's algorithms forced one by one, is the measurement.
	for ranks in 2 3; do for op in $(COLLECTIVES); do \
	  $(BIN)/tachyflow bench collectives --op $$op -n $$ranks --repeats 5 --no-mpich-algorithms \
	    --profile bench-results/machine.profile.json -o bench-calibration || exit 1; \
	done; done
	$(BIN)/tachyflow model calibrate bench-results/machine.profile.json \
	  bench-calibration/collectives_*.json
	for ranks in 2 3; do for op in $(COLLECTIVES); do \
	  $(BIN)/tachyflow bench collectives --op $$op -n $$ranks \
	    --profile bench-results/machine.profile.json -o bench-results || exit 1; \
	done; done
	$(BIN)/tachyflow bench unstructured -o bench-results
	for ranks in 2 3; do \
	  $(BIN)/tachyflow bench noise-exchange -n $$ranks --points 20000 -o bench-results || exit 1; \
	done
	$(BIN)/tachyflow bench fwh -o bench-results
	$(BIN)/tachyflow bench insitu -n 2 -o bench-results
	$(BIN)/tachyflow bench hpl -n 2 --size 1000,2000,3000,5000 --block 192 --bcast all \
	  -o bench-results
	$(BIN)/tachyflow report bench-results

# ruff's linter only: the code is formatted by hand (compact argument checks, aligned
# tables), so ruff format's layout is not enforced.
lint: install
	$(BIN)/ruff check src tests

clean:
	rm -rf $(VENV) demo-results bench-results bench-calibration results .pytest_cache .ruff_cache
