// cp_internal.h - what cp_layout.c and cp_attention.c share (private to src/parallel).
// defines: hp_cp_fail
#ifndef HYPERPAR_CP_INTERNAL_H
#define HYPERPAR_CP_INTERNAL_H

// Prints "hp_cp: <message>" (one line, with the rank when MPI runs) and takes the whole
// job down with exit code HP_EXIT_CONFIG: MPI_Abort under MPI, so no peer is left waiting
// in the ring; exit() without MPI (the single-process layout test).
_Noreturn void hp_cp_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
