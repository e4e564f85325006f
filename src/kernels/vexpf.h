// vexpf.h - expf over arrays, the very same bits as the C library's expf (internal).
// defines: hp_expf_n
#ifndef HP_KERNELS_VEXPF_H
#define HP_KERNELS_VEXPF_H

// y[i] = expf(x[i]) for i < n, bit for bit as glibc's expf (y may be x). Vectorised with
// AVX-512 or AVX2 + FMA where the CPU has them (that is when glibc runs its FMA expf, whose every
// operation it repeats); elsewhere, and for |x| >= 88 or NaN, it calls expf itself.
void hp_expf_n(float *y, const float *x, int n);

#endif
