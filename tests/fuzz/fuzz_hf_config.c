// fuzz_hf_config.c - the Hugging Face config.json reader (src/model/hf_config.c) on any bytes,
// given as a length-delimited buffer with no NUL after it, as a file read leaves it.
// Invariants (abort when broken): a refusal is one non-empty line; an accepted config has the
// shapes the model code divides by: heads divide the width, an even head dim, kv heads divide
// heads, 1 <= top_k <= experts.
#include <stdlib.h>
#include <string.h>
#include "hyperpar/config.h"
#include "fuzz_target.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size ? size : 1);   // exactly size bytes: an over-read is an ASan report
    if (!text) return 0;
    if (size) memcpy(text, data, size);
    hp_model_config m;
    char err[512] = "";
    const int rc = hp_model_config_from_hf_json(text, size, "fuzz", &m, err, sizeof err);
    free(text);
    if (rc != 0) {
        if (!err[0] || strchr(err, '\n')) abort();
        return 0;
    }
    if (m.dim < 1 || m.n_heads < 1 || m.n_kv_heads < 1 || m.n_layers < 1 || m.vocab_size < 1 ||
        m.dim % m.n_heads || (m.dim / m.n_heads) % 2 || m.n_heads % m.n_kv_heads)
        abort();
    if (m.num_experts && (m.top_k < 1 || m.top_k > m.num_experts)) abort();
    if (!memchr(m.name, '\0', sizeof m.name)) abort();
    return 0;
}
