#!/usr/bin/env bash
# Build the compiled peers of the benchmarks OUTSIDE the project's tree (`make install-bench`).
#
#   build.sh SOURCES BUILD
#
# SOURCES holds the release archives (../shared/peers here; elsewhere the folder named by
# $TACHYFLOW_PEER_SOURCES): 2decomp-fft-2.1.0.tar.gz and findFFTW.tar.gz, CaNS-*.tar.gz,
# NPB3.4-MPI.tar.gz, and (when a user has one) an SU2 source archive SU2-*.tar.gz or
# v*.tar.gz of github.com/su2code/SU2. BUILD (default ~/.cache/tachyflow/peers,
# $TACHYFLOW_PEERS_BUILD) gets:
#
#   bin/decomp_poisson        tachyflow's driver (decomp_poisson.f90) on 2DECOMP&FFT v2.1.0
#   CaNS/build/cans           CaNS with its pinned 2decomp-fft
#   NPB3.4-MPI/bin/K.C.x      NPB kernels K in $NPB_KERNELS, classes C in $NPB_CLASSES
#   SU2/install/bin/SU2_CFD   SU2 (MPI, no automatic differentiation), the peer of
#                             `bench mpins2d`
#   logs/<peer>.log           the full output of each build
#
# Idempotent: a peer whose program exists is skipped (delete BUILD to rebuild). A missing
# SOURCES folder, while a peer is still to be built, fails at once in one line naming the
# folder and those peers. A missing archive skips its peer with a message and the others are
# built; the script then exits non-zero naming every peer skipped (their benchmarks would
# record `peers_missing`), except SU2, which is built only when a user has its archive. A
# failing build stops with the log's tail and a non-zero exit. Compilers: Debian's MPICH
# (mpif90.mpich, mpicc.mpich; ABI-compatible with the mpich wheel that runs tachyflow).
set -euo pipefail

SOURCES=${1:?usage: build.sh SOURCES BUILD}
BUILD=${2:?usage: build.sh SOURCES BUILD}
NPB_KERNELS=${NPB_KERNELS:-cg mg ft is ep}
NPB_CLASSES=${NPB_CLASSES:-S W A B}
FC=${MPIFC:-mpif90.mpich}
CC=${MPICC:-mpicc.mpich}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
JOBS=${JOBS:-$(nproc)}

mkdir -p "$BUILD/logs" "$BUILD/bin"
BUILD=$(cd "$BUILD" && pwd)
# Peers skipped for want of their archive: any of them makes the exit non-zero.
SKIPPED=()

# npb_missing: the NPB programs (kernel.class) not built yet, one a line.
npb_missing() {
  local kernel class
  for kernel in $NPB_KERNELS; do for class in $NPB_CLASSES; do
    [[ -x $BUILD/NPB3.4-MPI/bin/$kernel.$class.x ]] || echo "$kernel.$class"
  done; done
}

# joined WORD...: the words separated by ", ".
joined() { local IFS=,; echo "${*}" | sed 's/,/, /g'; }

if ! SOURCES=$(cd "$SOURCES" 2>/dev/null && pwd); then
  wanted=()
  [[ -x $BUILD/bin/decomp_poisson ]] || wanted+=("2DECOMP&FFT (its Poisson driver)")
  [[ -x $BUILD/CaNS/build/cans ]] || wanted+=("CaNS")
  [[ -z $(npb_missing) ]] || wanted+=("NPB 3.4 (kernel.class programs: $(npb_missing | wc -l))")
  if ((${#wanted[@]} == 0)); then
    echo "peers: every peer already built in $BUILD (no archives needed from $1)"
    exit 0
  fi
  echo "peers: no folder $1 with the peers' archives: cannot build $(joined "${wanted[@]}")" \
    "into $BUILD (set TACHYFLOW_PEER_SOURCES to the folder holding them)" >&2
  exit 1
fi
for tool in "$FC" "$CC" cmake git; do
  command -v "$tool" >/dev/null || { echo "peers: $tool not found (apt-get install" \
    "gfortran mpich libmpich-dev libfftw3-dev cmake git)" >&2; exit 1; }
done

# archive PATTERN: the one archive in SOURCES matching PATTERN, or nothing.
archive() { compgen -G "$SOURCES/$1" | head -n 1 || true; }

# step PEER COMMAND...: run COMMAND with its output appended to the peer's log; on failure
# show the log's tail and stop.
step() {
  local peer=$1 log="$BUILD/logs/$1.log"
  shift
  echo "+ $*" >>"$log"
  if ! "$@" >>"$log" 2>&1; then
    tail -n 30 "$log" >&2
    echo "peers: building $peer failed; full log: $log" >&2
    exit 1
  fi
}

unpack() {  # unpack PEER ARCHIVE: into BUILD/src (fresh)
  mkdir -p "$BUILD/src"
  step "$1" tar -xzf "$2" -C "$BUILD/src"
}

build_decomp() {
  local tarball findfftw src="$BUILD/src/2decomp-fft-2.1.0" log="$BUILD/logs/2decomp-fft.log"
  if [[ -x $BUILD/bin/decomp_poisson ]]; then
    echo "peers: 2DECOMP&FFT driver already built ($BUILD/bin/decomp_poisson)"; return
  fi
  tarball=$(archive "2decomp-fft-2.1.0.tar.gz")
  findfftw=$(archive "findFFTW.tar.gz")
  if [[ -z $tarball || -z $findfftw ]]; then
    echo "peers: skipping 2DECOMP&FFT: 2decomp-fft-2.1.0.tar.gz and findFFTW.tar.gz" \
      "are needed in $SOURCES"
    SKIPPED+=("2DECOMP&FFT"); return
  fi
  echo "peers: building 2DECOMP&FFT v2.1.0 (FFTW backend) and its Poisson driver ..."
  : >"$log"
  rm -rf "$src" "$BUILD/src/findFFTW" "$BUILD/2decomp-fft"
  unpack 2decomp-fft "$tarball"
  unpack 2decomp-fft "$findfftw"
  # 2DECOMP&FFT's CMake clones findFFTW from GitHub at configure time; a local repository
  # made from the archive answers instead (git's url.insteadOf), sources untouched.
  local mirror="$BUILD/2decomp-fft/findfftw.git"
  mkdir -p "$mirror"
  cp -r "$BUILD/src/findFFTW/." "$mirror"
  step 2decomp-fft git -C "$mirror" init -q -b master
  step 2decomp-fft git -C "$mirror" add -A
  step 2decomp-fft git -C "$mirror" -c user.name=peers -c user.email=peers@localhost \
    commit -q -m "findFFTW from $(basename "$findfftw")"
  export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0="url.file://$mirror.insteadOf"
  export GIT_CONFIG_VALUE_0="https://github.com/egpbos/findfftw.git"
  step 2decomp-fft cmake -S "$src" -B "$BUILD/2decomp-fft/build" -DFFT_Choice=fftw \
    -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF -DCMAKE_Fortran_COMPILER="$FC" \
    -DMPI_Fortran_COMPILER="$FC" -DCMAKE_INSTALL_PREFIX="$BUILD/2decomp-fft/install"
  step 2decomp-fft cmake --build "$BUILD/2decomp-fft/build" -j "$JOBS"
  step 2decomp-fft cmake --install "$BUILD/2decomp-fft/build"
  unset GIT_CONFIG_COUNT GIT_CONFIG_KEY_0 GIT_CONFIG_VALUE_0
  local prefix="$BUILD/2decomp-fft/install"
  step 2decomp-fft "$FC" -O3 -cpp -DDOUBLE_PREC -fallow-argument-mismatch \
    -I"$prefix/include" "$HERE/decomp_poisson.f90" -o "$BUILD/2decomp-fft/decomp_poisson" \
    -L"$prefix/lib" -ldecomp2d -lfftw3
  mv "$BUILD/2decomp-fft/decomp_poisson" "$BUILD/bin/decomp_poisson"
  echo "peers: built $BUILD/bin/decomp_poisson"
}

build_cans() {
  local tarball
  if [[ -x $BUILD/CaNS/build/cans ]]; then
    echo "peers: CaNS already built ($BUILD/CaNS/build/cans)"; return
  fi
  tarball=$(archive "CaNS-*.tar.gz")
  if [[ -z $tarball ]]; then
    echo "peers: skipping CaNS: no CaNS-*.tar.gz in $SOURCES"; SKIPPED+=("CaNS"); return
  fi
  echo "peers: building CaNS ($(basename "$tarball")) with its pinned 2decomp-fft ..."
  : >"$BUILD/logs/cans.log"
  rm -rf "$BUILD/src/CaNS" "$BUILD/CaNS"
  unpack cans "$tarball"
  mv "$BUILD/src/CaNS" "$BUILD/CaNS"
  # Its 2decomp-fft is built first and serially (its Makefile has no module dependencies).
  step cans make -C "$BUILD/CaNS" libs FC="$FC"
  step cans make -C "$BUILD/CaNS" -j "$JOBS" FC="$FC"
  echo "peers: built $BUILD/CaNS/build/cans"
}

build_npb() {
  local tarball npb="$BUILD/NPB3.4-MPI" name missing
  mapfile -t missing < <(npb_missing)
  if ((${#missing[@]} == 0)); then echo "peers: NPB already built ($npb/bin)"; return; fi
  tarball=$(archive "NPB3.4-MPI.tar.gz")
  if [[ -z $tarball ]]; then
    echo "peers: skipping NPB: no NPB3.4-MPI.tar.gz in $SOURCES"; SKIPPED+=("NPB 3.4"); return
  fi
  if [[ ! -d $npb ]]; then
    : >"$BUILD/logs/npb.log"
    unpack npb "$tarball"
    mv "$BUILD/src/NPB3.4-MPI" "$npb"
  fi
  mkdir -p "$npb/bin"
  # NPB 3.4 takes the rank count at run time: one program per kernel and class.
  echo "peers: building NPB 3.4 MPI ${missing[*]} ..."
  for name in "${missing[@]}"; do
    step npb make -C "$npb" "${name%.*}" CLASS="${name#*.}" MPIFC="$FC" MPICC="$CC" \
      FFLAGS="-O3 -march=native -fallow-argument-mismatch" CFLAGS="-O3 -march=native"
  done
  echo "peers: built NPB programs in $npb/bin"
}

build_su2() {
  local tarball src
  if [[ -x $BUILD/SU2/install/bin/SU2_CFD ]]; then
    echo "peers: SU2 already built ($BUILD/SU2/install/bin/SU2_CFD)"; return
  fi
  tarball=$(archive "SU2-*.tar.gz")
  [[ -n $tarball ]] || tarball=$(archive "v[0-9]*.tar.gz")
  if [[ -z $tarball ]]; then  # optional: not counted as skipped
    echo "peers: no SU2 archive (SU2-*.tar.gz) in $SOURCES: SU2 not built (optional)"; return
  fi
  for tool in meson ninja; do
    command -v "$tool" >/dev/null || { echo "peers: $tool not found (apt-get install" \
      "meson ninja-build)" >&2; exit 1; }
  done
  echo "peers: building SU2 ($(basename "$tarball")) with MPI, without AD ..."
  : >"$BUILD/logs/su2.log"
  rm -rf "$BUILD/SU2"
  mkdir -p "$BUILD/SU2"
  step su2 tar -xzf "$tarball" -C "$BUILD/SU2"
  src=$(find "$BUILD/SU2" -mindepth 2 -maxdepth 2 -name meson_options.txt -printf '%h\n' | head -n 1)
  [[ -n $src ]] || { echo "peers: $tarball holds no SU2 source tree (meson_options.txt)" >&2; exit 1; }
  # A plain source archive of SU2 (git archive, a release's "Source code") lacks its git
  # submodules: of those, a build without AD needs MEL (COutput.hpp includes mel.hpp).
  [[ -f $src/externals/mel/mel.hpp ]] || { echo "peers: $tarball lacks SU2's submodule MEL" \
    "(externals/mel/mel.hpp): add it at the commit SU2's .gitmodules pins" \
    "(docs/compressible.md)" >&2; exit 1; }
  # SU2's meson.build refuses to configure before its meson.py preconfigure has run (which
  # fetches submodules itself): this stamp says it has.
  touch "$src/su2preconfig.timestamp"
  # Debian's meson and ninja instead of SU2's meson.py, which fetches its own from GitHub;
  # without the adjoint (CoDiPack) no other download is needed.
  # MPI through the compiler wrappers (SU2's custom-mpi): Debian 12's Meson (1.0) finds MPI
  # only as Open MPI (ompi-c.pc or `mpicc --showme`), so it misses MPICH, or links Open MPI's
  # libraries into MPICH's wrappers where openmpi-bin is installed too.
  step su2 env CC="$CC" CXX="${MPICXX:-mpicxx.mpich}" meson setup "$BUILD/SU2/build" "$src" \
    --prefix="$BUILD/SU2/install" --buildtype=release -Dcustom-mpi=true \
    -Denable-autodiff=false -Denable-directdiff=false -Denable-pywrapper=false
  step su2 ninja -C "$BUILD/SU2/build" -j "$JOBS" install
  echo "peers: built $BUILD/SU2/install/bin/SU2_CFD"
}

build_decomp
build_cans
build_npb
build_su2
if ((${#SKIPPED[@]})); then
  echo "peers: not built for want of their archives in $SOURCES: $(joined "${SKIPPED[@]}")" \
    "(their benchmarks will record peers_missing)" >&2
  exit 1
fi
