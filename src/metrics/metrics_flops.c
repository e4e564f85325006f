// metrics_flops.c - the FLOPs of a trained token, for the step line's tflops and mfu
// (docs/metrics.md; the peak mfu divides by: metrics_peak.c).
// defines: hp_metrics_flops, hp_fmt_thousands
//
// F follows TorchTitan (torchtitan/models/utils.py get_dense_model_nparams_and_flops, llama3's
// head_dims = 2 hd): 6 per parameter a token multiplies, forward and backward (2 + 4), without
// the embedding (a lookup), plus the attention scores and their weighted sum, 12 L H hd S (the
// full S x S product, causal mask or not). Unlike hp plan's count (plan.h), it is the formula
// every TorchTitan log uses, so mfu figures compare.
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "hyperpar/metrics.h"

void hp_metrics_flops(hp_flops *out, const hp_model_config *m, const hp_param_table *t, int seq_len) {
    memset(out, 0, sizeof *out);
    // a routed expert's weights are multiplied by K of every E tokens' worth (the shared
    // expert's, by all): TorchTitan counts the experts' parameters at K/E
    const double routed = m->num_experts > 0 ? (double)m->top_k / m->num_experts : 1.0;
    for (int i = 0; i < t->n; i++) {
        const hp_param *p = &t->p[i];
        out->params += p->full_numel;
        if (!strcmp(p->name, "tok_embeddings.weight")) { out->embedding += p->full_numel; continue; }
        if (p->stack == HP_STACK_EXPERT) out->routed += p->full_numel;
        out->active += p->stack == HP_STACK_EXPERT ? (double)p->full_numel * routed : (double)p->full_numel;
    }
    const double L = m->n_layers, H = m->n_heads, hd = hp_model_head_dim(m);
    out->F = 6.0 * out->active + 12.0 * L * H * hd * (double)seq_len;
}

char *hp_fmt_thousands(char *buf, size_t cap, double n) {
    char digits[32];
    if (!isfinite(n)) { snprintf(buf, cap, "%g", n); return buf; }
    snprintf(digits, sizeof digits, "%.0f", fabs(n) < 9e18 ? n : (n < 0 ? -9e18 : 9e18));
    const char *d = digits[0] == '-' ? digits + 1 : digits;
    const size_t nd = strlen(d);
    size_t o = 0;
    if (digits[0] == '-' && o + 1 < cap) buf[o++] = '-';
    for (size_t i = 0; i < nd && o + 1 < cap; i++) {
        if (i > 0 && (nd - i) % 3 == 0 && o + 2 < cap) buf[o++] = ',';
        buf[o++] = d[i];
    }
    if (cap) buf[o < cap ? o : cap - 1] = '\0';
    return buf;
}
