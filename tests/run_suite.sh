#!/usr/bin/env bash
# `make test`: every test of the suite, with as few MPI launches as the 1/2/3-rank checks allow.
#
#   1. One pytest: the serial tests and the 1-rank variants of @pytest.mark.parallel tests,
#      spread over $TACHYFLOW_TEST_WORKERS processes (pytest-xdist, default one per core) a
#      file at a time (a file's tests share module fixtures: one worker runs them all).
#   2. The 2-rank variants all under one `mpiexec -n 2`, then the 3-rank ones under one
#      `mpiexec -n 3` (mpi-pytest's outer-mpiexec mode: each rank runs the same tests in the
#      same order; rank 0 reports, the others print failures only).
#   3. The 2- and 3-rank variants of tests marked `isolated`, each under its own mpiexec.
#
# Launching every parallel variant on its own (mpi-pytest's default) costs about 2 s of
# interpreters and MPI start-up per variant, more than half of the suite on 2 cores. A hang
# is still caught: pytest-timeout ends the rank it holds (its stacks are printed) and the
# launcher then ends the batch; MPIEXEC_TIMEOUT bounds each batch as a whole.
#
# Usage: tests/run_suite.sh PYTHON [PYTEST ARGUMENTS...]; exits non-zero if any part failed,
# after running every part.
set -uo pipefail
python=$1
shift
launcher_folder=$(dirname "$python")
export PATH="$launcher_folder:$PATH"  # the environment's mpiexec: the MPI mpi4py loads
# The suite starts hundreds of Python processes; with PYTHONDONTWRITEBYTECODE (set by some
# CI images) each compiles the package's and the tests' sources again (pytest's collection
# 10 s instead of 6.6 s). Bytecode is kept, in the environment's folder, not the sources'.
unset PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX="${PYTHONPYCACHEPREFIX:-$(dirname "$launcher_folder")/pycache}"

status=0
note() {  # pytest's 5 (no test selected, e.g. by -k) is no failure here
  local code=$1
  if [[ $code -ne 0 && $code -ne 5 ]]; then status=$code; fi
}
"$python" -m pytest --numprocesses "${TACHYFLOW_TEST_WORKERS:-auto}" --dist loadfile \
  -m "not slow and not parallel[2] and not parallel[3]" "$@"
note $?

others=(-q --no-header -rfE --tb=short --disable-warnings -p no:cacheprovider
        -o addopts="--strict-markers")
cores=$(nproc)
for ranks in 2 3; do
  selection="not slow and not isolated and parallel[match]"
  echo "== the ${ranks}-rank variants under one mpiexec -n ${ranks} =="
  # More ranks than cores: MPICH's waiting ranks sleep briefly every 10 polls instead of
  # spinning, so a rank that computes alone (a serial reference) keeps its core; the
  # 3-rank batch took 3 min 6 s against 3 min 25 s on 2 cores (2026-11-28).
  polite=()
  if (( ranks > cores )); then
    polite=(MPIR_CVAR_POLLS_BEFORE_YIELD=10 MPIR_CVAR_ENABLE_HEAVY_YIELD=1)
  fi
  env "${polite[@]}" MPIEXEC_TIMEOUT="${TACHYFLOW_BATCH_TIMEOUT:-1500}" mpiexec \
    -n 1 "$python" -m pytest -m "$selection" "$@" : \
    -n $((ranks - 1)) "$python" -m pytest -m "$selection" "${others[@]}" "$@"
  note $?
done
# Tests marked isolated (they fail after others in the same processes, or need MPICH's
# default waiting) launched one by one.
"$python" -m pytest -m "not slow and isolated and (parallel[2] or parallel[3])" "$@"
note $?
exit "$status"
