#!/usr/bin/env bash
# Bloom filter encryption (crates/tlslab-bfe) in release: key generation per key part (one
# thread, then the whole key on every core), encapsulation, decapsulation with the
# Fujisaki-Okamoto check and CPA-only, puncturing, and the secret key's memory; then, when
# a build of bfe-bf (the C library of the paper's group, on relic) is given, the same
# operations of bfe-bf at the same n and p, timed the same way (bench/bfe-bf-driver.c).
# The issue's goal: decapsulation with the FO check no slower than bfe-bf's, and a key for
# n = 50,000 at p = 10⁻³ in at most 200 MB.
#
#   bench/bfe.sh [N [P [ITERATIONS]]]          (default 50000 0.001 200)
#   BFE_BF_PREFIX=DIR bench/bfe.sh ...         also bfe-bf, installed under DIR (include/, lib/)
#
# Building bfe-bf (what docs/benchmarks.md used): relic at commit 358e66a6 (September 2023,
# the month of bfe-bf's last commit 26f58aa) configured with its preset
# preset/x64-pbc-bls12-381.sh, then `cmake .. -DCMAKE_INSTALL_PREFIX=DIR -DSHLIB=ON
# -DALLOC=AUTO -DSTBIN=OFF` (bfe-bf needs AUTO; STBIN=OFF links the shared libgmp),
# `make relic relic_s` and `cmake --install .`; bfe-bf with `cmake .. -DCMAKE_BUILD_TYPE=Release
# -DCMAKE_PREFIX_PATH=DIR -DCMAKE_C_FLAGS=-IDIR/include` and `make bfe`, its libbfe.so*
# copied to DIR/lib and include/*.h to DIR/include. It needs libsodium-dev and libgmp-dev.
# Both print CPU time (what a server pays) and wall time; bfe-bf spreads the k pairings of an
# encapsulation over OpenMP threads, so the driver times its operations twice: with OpenMP's
# default threads, then on one thread.
set -euo pipefail
cd "$(dirname "$0")/.."
capacity=${1:-50000}
rate=${2:-0.001}
iterations=${3:-200}
cargo build --release -q -p tlslab-bfe --example bfe-bench
target=${CARGO_TARGET_DIR:-target}
echo "== tlslab-bfe (blstrs) =="
"$target/release/examples/bfe-bench" "$capacity" "$rate" "$iterations"

if [ -n "${BFE_BF_PREFIX:-}" ]; then
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    prefix=$BFE_BF_PREFIX
    cc -O2 -fopenmp -o "$work/bfe-bf-driver" bench/bfe-bf-driver.c -I"$prefix/include" \
        -L"$prefix/lib" -Wl,-rpath,"$prefix/lib" -lbfe -lrelic -lsodium -lgmp
    echo "== bfe-bf (relic) =="
    "$work/bfe-bf-driver" "$capacity" "$rate" "$iterations"
else
    echo "(bfe-bf not run: set BFE_BF_PREFIX to a build of it, see the comment at the top)"
fi
