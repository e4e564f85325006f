#!/bin/sh
# second_config.sh - the determinism tests (CTest label `determinism`) under a second BLAS
# configuration: another OpenBLAS core that this CPU runs, and 2 BLAS threads per rank instead
# of the environment's count (1 per rank unless set). Every bitwise promise of hyperpar holds
# for the same binary, BLAS core and threads per rank (docs/verification.md); a test that
# compares runs under unequal conditions, or expects one machine's bytes, passes under one
# configuration by chance and fails under the other. `make determinism` and .ci/run call this.
#   BUILD_DIR=build sh scripts/second_config.sh
# The core is asked of hp (`hp --version`), never assumed:
#   the core a run gets here is an AVX-512 one (SkylakeX, Cooperlake, SapphireRapids) -> Haswell
#   else the CPU's best core is an AVX-512 one                                        -> that one
#   else an AVX2 core (Haswell, Zen)                                                   -> Sandybridge
#   else                                                                               -> Haswell if
#   the CPU's best is AVX2, otherwise Prescott (SSE3, which every x86-64 CPU runs)
set -eu
BUILD_DIR=${BUILD_DIR:-build}
hp=$BUILD_DIR/hp
[ -x "$hp" ] || { echo "second_config: $hp is not built (make build first)" >&2; exit 2; }
core_of() { sed -n 's/^blas core: //p'; }
now=$("$hp" --version | core_of)
best=$("$hp" --version | sed -n 's/^blas best core for this cpu: //p')
is_avx512() { case $1 in SkylakeX|Cooperlake|SapphireRapids) return 0 ;; *) return 1 ;; esac; }
is_avx2() { case $1 in Haswell|Zen) return 0 ;; *) return 1 ;; esac; }
if is_avx512 "$now"; then alt=Haswell
elif is_avx512 "$best"; then alt=$best
elif is_avx2 "$now"; then alt=Sandybridge
elif is_avx2 "$best"; then alt=Haswell
else alt=Prescott
fi
got=$(OPENBLAS_CORETYPE=$alt "$hp" --version | core_of)
[ "$got" = "$alt" ] || { echo "second_config: OPENBLAS_CORETYPE=$alt gave core '$got'" >&2; exit 1; }
echo "second_config: first configuration core $now, ${OPENBLAS_NUM_THREADS:-1 (unset)} BLAS thread(s) per rank;" \
     "second: core $alt, 2 BLAS threads per rank"
OPENBLAS_CORETYPE=$alt OPENBLAS_NUM_THREADS=2 OMP_NUM_THREADS=2 \
  ctest --test-dir "$BUILD_DIR" --output-on-failure -L determinism
