// generate.h - text from a trained model: a decoder with a KV cache, run on one process or on
// the ranks of a tensor- and pipeline-parallel layout (src/generate/), and the sampler.
// defines: hp_decoder (opaque), hp_decoder_init/_free, hp_decoder_forward, hp_sampling,
//          hp_sample_token, hp_generate
//
//   hp_dims d = hp_dims_default();  d.tp = 2;  d.world = 2;      // under mpirun -np 2
//   hp_dims_validate(&d, &m, NULL, err, sizeof err);
//   hp_decoder *dec = hp_decoder_init(MPI_COMM_WORLD, &m, &d, full, 256, err, sizeof err);
//   hp_sampling s = { .temperature = 0.8f, .top_k = 40, .top_p = 0.95f, .seed = 1 };
//   int out[64];
//   int n = hp_generate(dec, prompt, n_prompt, 64, &s, eos, out, print_token, NULL, &stats);
//   hp_decoder_free(dec);
//
// The prompt runs in one forward (every position at once, causal), then one token a step: each
// block keeps the keys and values of every position so far (the KV cache), so a step costs one
// row's products and an attention over the cache. Under tp every rank holds its slice of each
// parameter as training places it (hp_params_build's placements: heads, the FFN's and experts'
// hidden dim, the vocab), the attention and FFN outputs are summed over the tp group (fixed
// order) and the logits gathered; under pp each stage holds its blocks and passes the rows on.
// Every rank ends a step with the same logits (the last stage's, broadcast), so every rank
// draws the same token from the same seeded stream and no token needs sending.
#ifndef HYPERPAR_GENERATE_H
#define HYPERPAR_GENERATE_H
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include "hyperpar/config.h"
#include "hyperpar/dims.h"

typedef struct hp_decoder hp_decoder;

// A decoder for world's ranks under the validated dims d (only tp and pp may exceed 1), its
// weights taken from full (every parameter of m, full tensors in the one-process table's
// order: what `hp run --load` reads), room for max_tokens positions. Collective over world.
// NULL with one line in err (a degree it cannot use, memory).
hp_decoder *hp_decoder_init(MPI_Comm world, const hp_model_config *m, const hp_dims *d,
                            const float *full, int max_tokens, char *err, size_t errlen);
void hp_decoder_free(hp_decoder *dec);
// Runs ids[0..n) at the next n positions (the cache grows by n) and writes the logits of the
// last one into logits (vocab_size floats) on every rank. Collective. 0, or -1 when the cache
// has no room for n more positions.
int hp_decoder_forward(hp_decoder *dec, const int *ids, int n, float *logits);
int hp_decoder_position(const hp_decoder *dec);   // positions in the cache
int hp_decoder_room(const hp_decoder *dec);       // max_tokens: the positions it has room for
int hp_decoder_vocab(const hp_decoder *dec);      // the logits' length
void hp_decoder_reset(hp_decoder *dec);           // an empty cache, the weights kept

// How the next token is drawn (nanoGPT's sample.py order): logits / temperature, then the
// top_k highest (0: all), then the smallest set whose probability reaches top_p (1: all),
// then a draw keyed by (seed, draw index), so a seed gives the same text on every layout.
// temperature 0: the highest logit (greedy; a tie goes to the lower id).
typedef struct hp_sampling {
    float    temperature;
    int      top_k;
    float    top_p;
    uint64_t seed;
} hp_sampling;

// The token drawn from logits (V) for draw number `draw`; scratch holds 2 V floats.
int hp_sample_token(const float *logits, int V, const hp_sampling *s, uint64_t draw, float *scratch);

// What hp_generate measured: the prompt's forward and the steps after it.
typedef struct hp_generate_stats {
    int    prompt_tokens, new_tokens;
    double prompt_seconds, new_seconds;
} hp_generate_stats;

// Called on every rank with each new token as it is drawn; nonzero stops the generation (every
// rank must answer the same: the ranks step together).
typedef int (*hp_token_fn)(void *ctx, int id);

// From an empty cache: the prompt (n_prompt >= 1 ids), then up to max_new tokens into out,
// stopping after eos (>= 0; -1 none) or when on_token says so. Returns the tokens written
// (the eos included), or -1 when prompt + max_new passes the decoder's max_tokens.
int hp_generate(hp_decoder *dec, const int *prompt, int n_prompt, int max_new, const hp_sampling *s,
                int eos, int *out, hp_token_fn on_token, void *ctx, hp_generate_stats *stats);

#endif
