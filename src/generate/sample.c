// sample.c - the next token from the logits, and the generation loop (generate.h).
// defines: hp_sample_token, hp_generate
//
// The draw is keyed, never a running generator: draw k of seed s is hp_rng_uniform(s, stream,
// k), so every rank of a layout (each holding the same logits) draws the same token without
// sending it, and a seed gives the same text again.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "hyperpar/generate.h"
#include "hyperpar/rng.h"

static int argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;   // strictly greater: a tie keeps the lower id
    return best;
}

static int by_value_desc(const void *a, const void *b) {
    const float x = *(const float *)a, y = *(const float *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

int hp_sample_token(const float *logits, int V, const hp_sampling *s, uint64_t draw, float *scratch) {
    if (s->temperature <= 0.0f) return argmax(logits, V);
    float *p = scratch, *sorted = scratch + V;
    const float inv_t = 1.0f / s->temperature;
    for (int i = 0; i < V; i++) p[i] = logits[i] * inv_t;
    if (s->top_k > 0 && s->top_k < V) {   // keep the top_k highest (ties at the cut all stay)
        memcpy(sorted, p, (size_t)V * sizeof(float));
        qsort(sorted, (size_t)V, sizeof(float), by_value_desc);
        const float cut = sorted[s->top_k - 1];
        for (int i = 0; i < V; i++)
            if (p[i] < cut) p[i] = -INFINITY;
    }
    const float mx = p[argmax(p, V)];
    double total = 0.0;
    for (int i = 0; i < V; i++) { p[i] = p[i] == -INFINITY ? 0.0f : expf(p[i] - mx); total += p[i]; }
    if (s->top_p < 1.0f) {   // the smallest set of the highest probabilities reaching top_p
        memcpy(sorted, p, (size_t)V * sizeof(float));
        qsort(sorted, (size_t)V, sizeof(float), by_value_desc);
        double mass = 0.0;
        float cut = sorted[0];
        for (int i = 0; i < V && sorted[i] > 0.0f; i++) {
            cut = sorted[i];
            mass += sorted[i];
            if (mass >= (double)s->top_p * total) break;
        }
        total = 0.0;
        for (int i = 0; i < V; i++) { if (p[i] < cut) p[i] = 0.0f; total += p[i]; }
    }
    const double u = hp_rng_uniform(s->seed, hp_name_id("hp_generate.sample"), draw) * total;
    double acc = 0.0;
    int last = 0;
    for (int i = 0; i < V; i++) {
        if (p[i] <= 0.0f) continue;
        acc += p[i];
        last = i;
        if (u < acc) return i;
    }
    return last;   // u within rounding of the total: the last kept token
}

static double now_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int hp_generate(hp_decoder *dec, const int *prompt, int n_prompt, int max_new, const hp_sampling *s,
                int eos, int *out, hp_token_fn on_token, void *ctx, hp_generate_stats *stats) {
    hp_generate_stats st = { n_prompt, 0, 0.0, 0.0 };
    if (n_prompt < 1 || max_new < 0) return -1;
    hp_decoder_reset(dec);
    const int V = hp_decoder_vocab(dec);
    float *logits = malloc((size_t)V * sizeof(float)), *scratch = malloc(2 * (size_t)V * sizeof(float));
    if (!logits || !scratch || n_prompt + max_new > hp_decoder_room(dec)) {
        free(logits);
        free(scratch);
        return -1;
    }
    double t0 = now_seconds();
    int n = 0;
    int rc = max_new > 0 ? hp_decoder_forward(dec, prompt, n_prompt, logits) : 0;
    st.prompt_seconds = now_seconds() - t0;
    t0 = now_seconds();
    while (rc == 0 && n < max_new) {
        const int id = hp_sample_token(logits, V, s, (uint64_t)n, scratch);
        out[n++] = id;
        if ((on_token && on_token(ctx, id)) || id == eos || n == max_new) break;
        rc = hp_decoder_forward(dec, &id, 1, logits);
    }
    st.new_tokens = n;
    st.new_seconds = now_seconds() - t0;
    if (stats) *stats = st;
    free(logits);
    free(scratch);
    return rc == 0 ? n : -1;
}
