// hf_config.c - a Hugging Face config.json read into hp_model_config (`--model-config FILE`).
// defines: hp_model_config_from_hf_json, hp_model_config_from_hf_file
//
// Only what our model is: pre-norm RMSNorm blocks, GQA attention with RoPE and no biases,
// SwiGLU FFNs or routed SwiGLU experts (+ an optional shared expert, + dense first blocks),
// untied embedding and output. Anything else in the file that would change the computation
// is refused by the name of its field, so that a plan never silently describes another model:
//   tie_word_embeddings true, attention_bias / mlp_bias true, q_lora_rank / kv_lora_rank (MLA),
//   an active sliding_window, head_dim != hidden_size / num_attention_heads, hidden_act other
//   than silu, group-limited routing (n_group / topk_group > 1), moe_layer_freq != 1, and
//   model_type other than llama, mistral, mixtral, deepseek (qwen2 has q/k/v biases without a
//   field saying so, gemma ties and scales, ...).
// rope_scaling: Llama 3.1's rescale of the RoPE frequencies (rope_type "llama3": factor,
// low_freq_factor, high_freq_factor, original_max_position_embeddings) is read into the config
// and applied (hp_rope_table_llama3); any other rope_type (linear, dynamic, yarn, longrope) is
// refused by name. It changes no shape, count, memory or traffic.
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "hyperpar/config.h"
#include "util/file_io.h"

#define MAX_DIM (1 << 24)   // any one size: keeps every derived product inside int64 and int

static int fail(char *err, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (err && n) vsnprintf(err, n, fmt, ap);
    va_end(ap);
    return -1;
}

// A field that is absent or JSON null counts as not given.
static const cJSON *field(const cJSON *root, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

// An integer field in [lo, hi]; *out keeps its default when the field is absent, unless required.
static int get_int(const cJSON *root, const char *key, int required, long lo, long hi, int *out,
                   char *err, size_t n) {
    const cJSON *v = field(root, key);
    if (!v) return required ? fail(err, n, "config.json: required field '%s' is missing", key) : 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble != floor(v->valuedouble))
        return fail(err, n, "config.json: field '%s' must be an integer", key);
    if (v->valuedouble < (double)lo || v->valuedouble > (double)hi)
        return fail(err, n, "config.json: field '%s' must be in [%ld, %ld], got %.17g", key, lo, hi,
                    v->valuedouble);
    *out = (int)v->valuedouble;
    return 0;
}

// A positive finite number below `hi` that a float holds.
static int get_float(const cJSON *root, const char *key, double hi, float *out, char *err, size_t n) {
    const cJSON *v = field(root, key);
    if (!v) return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || !(v->valuedouble > 0) || !(v->valuedouble < hi))
        return fail(err, n, "config.json: field '%s' must be a number in (0, %g)", key, hi);
    *out = (float)v->valuedouble;
    return 0;
}

static int is_true(const cJSON *root, const char *key) { return cJSON_IsTrue(field(root, key)); }

// A string value of the file, cut to 40 bytes with control bytes as '?', so that the error
// stays one line (tests/fuzz found "hidden_act": "s\nlu" printed across two).
static const char *shown(const cJSON *v, char buf[48]) {
    return hp_json_shown(cJSON_IsString(v) ? v->valuestring : "?", buf, 48, 40);
}

// Fields whose mere presence (not null) means a computation our model does not have.
static const char *const unsupported_present[][2] = {
    { "q_lora_rank", "multi-head latent attention (MLA)" },
    { "kv_lora_rank", "multi-head latent attention (MLA)" },
    { "shared_expert_intermediate_size", "a gated shared expert" },
};
// Boolean fields that must not be true.
static const char *const unsupported_true[][2] = {
    { "tie_word_embeddings", "an output layer tied to the embedding" },
    { "attention_bias", "biases in the attention projections" },
    { "mlp_bias", "biases in the FFN" },
};
static const char *const known_types[] = { "llama", "mistral", "mixtral", "deepseek", NULL };

static int refuse_unsupported(const cJSON *root, char *err, size_t n) {
    for (size_t i = 0; i < sizeof unsupported_present / sizeof unsupported_present[0]; i++)
        if (field(root, unsupported_present[i][0]))
            return fail(err, n, "config.json: '%s' is set: %s is not part of hyperpar's model",
                        unsupported_present[i][0], unsupported_present[i][1]);
    for (size_t i = 0; i < sizeof unsupported_true / sizeof unsupported_true[0]; i++)
        if (is_true(root, unsupported_true[i][0]))
            return fail(err, n, "config.json: '%s' is true: %s is not part of hyperpar's model",
                        unsupported_true[i][0], unsupported_true[i][1]);
    const cJSON *t = field(root, "model_type");
    if (t) {
        int known = 0;
        for (int i = 0; cJSON_IsString(t) && known_types[i]; i++) known |= !strcmp(t->valuestring, known_types[i]);
        char b[48];
        if (!known)
            return fail(err, n, "config.json: model_type '%s' is not one hyperpar can express "
                        "(known: llama, mistral, mixtral, deepseek)", shown(t, b));
    }
    const cJSON *act = field(root, "hidden_act");
    char b[48];
    if (act && !(cJSON_IsString(act) && !strcmp(act->valuestring, "silu")))
        return fail(err, n, "config.json: hidden_act '%s' is not silu (hyperpar's FFN is SwiGLU)", shown(act, b));
    // Qwen-style configs carry a window they do not use (use_sliding_window false)
    const cJSON *use_sw = field(root, "use_sliding_window");
    if (field(root, "sliding_window") && !(use_sw && cJSON_IsFalse(use_sw)))
        return fail(err, n, "config.json: 'sliding_window' is set: sliding-window attention is not "
                    "part of hyperpar's model (it attends causally over the whole sequence)");
    int v = 1;
    if (get_int(root, "moe_layer_freq", 0, 1, MAX_DIM, &v, err, n) != 0) return -1;
    if (v != 1) return fail(err, n, "config.json: moe_layer_freq %d: hyperpar's MoE blocks are every block after the dense ones", v);
    const char *grouped[] = { "n_group", "topk_group" };
    for (int i = 0; i < 2; i++) {
        v = 1;
        if (get_int(root, grouped[i], 0, 0, MAX_DIM, &v, err, n) != 0) return -1;
        if (v > 1) return fail(err, n, "config.json: %s %d: group-limited routing is not part of hyperpar's router", grouped[i], v);
    }
    return 0;
}

static int read_moe(const cJSON *root, hp_model_config *m, int model_is_mixtral, char *err, size_t n) {
    int E = 0;
    if (get_int(root, "num_local_experts", 0, 0, MAX_DIM, &E, err, n) != 0) return -1;
    if (!E && get_int(root, "n_routed_experts", 0, 0, MAX_DIM, &E, err, n) != 0) return -1;
    if (E == 0) return 0;
    m->num_experts = E;
    m->moe_hidden = m->ffn_hidden;   // Mixtral: every expert is intermediate_size wide
    if (get_int(root, "num_experts_per_tok", 1, 1, E, &m->top_k, err, n) != 0 ||
        get_int(root, "moe_intermediate_size", 0, 1, MAX_DIM, &m->moe_hidden, err, n) != 0 ||
        get_int(root, "n_shared_experts", 0, 0, 64, &m->n_shared_experts, err, n) != 0 ||
        get_int(root, "first_k_dense_replace", 0, 0, m->n_layers, &m->n_dense_layers, err, n) != 0)
        return -1;
    const cJSON *sf = field(root, "scoring_func");
    if (sf) {
        if (cJSON_IsString(sf) && !strcmp(sf->valuestring, "softmax")) m->score_func = HP_SCORE_SOFTMAX;
        else if (cJSON_IsString(sf) && !strcmp(sf->valuestring, "sigmoid")) m->score_func = HP_SCORE_SIGMOID;
        else {
            char b[48];
            return fail(err, n, "config.json: scoring_func '%s' is neither softmax nor sigmoid", shown(sf, b));
        }
    }
    // Mixtral renormalises its top-k softmax weights; DeepSeek says so in norm_topk_prob
    m->route_norm = model_is_mixtral || is_true(root, "norm_topk_prob");
    return get_float(root, "routed_scaling_factor", 1e6, &m->route_scale, err, n);
}

// rope_scaling: absent or null = plain RoPE; rope_type (or the older "type") "llama3" with its
// four numbers; anything else is refused by name.
static int read_rope_scaling(const cJSON *root, hp_model_config *m, char *err, size_t n) {
    const cJSON *rs = field(root, "rope_scaling");
    if (!rs) return 0;
    if (!cJSON_IsObject(rs)) return fail(err, n, "config.json: field 'rope_scaling' must be an object or null");
    const cJSON *type = field(rs, "rope_type");
    if (!type) type = field(rs, "type");
    const char *name = cJSON_IsString(type) ? type->valuestring : NULL;
    if (!name) return fail(err, n, "config.json: rope_scaling has no rope_type");
    if (!strcmp(name, "default")) return 0;
    char buf[48];   // (the name shown with control bytes as '?': the line stays one line)
    if (strcmp(name, "llama3"))
        return fail(err, n, "config.json: rope_scaling rope_type '%s' is not one hyperpar implements (llama3 is)",
                    shown(type, buf));
    int rc = get_float(rs, "factor", 1e6, &m->rope_factor, err, n);
    if (!rc) rc = get_float(rs, "low_freq_factor", 1e6, &m->rope_low_freq_factor, err, n);
    if (!rc) rc = get_float(rs, "high_freq_factor", 1e6, &m->rope_high_freq_factor, err, n);
    if (!rc) rc = get_int(rs, "original_max_position_embeddings", 1, 1, MAX_DIM, &m->rope_original_max_positions, err, n);
    if (rc) {   // "config.json: rope_scaling: field 'factor' ..."
        char inner[256];
        snprintf(inner, sizeof inner, "%s", strncmp(err, "config.json: ", 13) ? err : err + 13);
        return fail(err, n, "config.json: rope_scaling: %s", inner);
    }
    if (!(m->rope_factor >= 1.0f) || !(m->rope_low_freq_factor > 0.0f) ||
        !(m->rope_high_freq_factor > m->rope_low_freq_factor))
        return fail(err, n, "config.json: rope_scaling llama3 needs factor >= 1 and 0 < low_freq_factor < "
                    "high_freq_factor, got %g, %g, %g", (double)m->rope_factor, (double)m->rope_low_freq_factor,
                    (double)m->rope_high_freq_factor);
    return 0;
}

int hp_model_config_from_hf_json(const char *text, size_t len, const char *name, hp_model_config *out,
                                 char *err, size_t errlen) {
    cJSON *root = cJSON_ParseWithLength(text, len);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return fail(err, errlen, "config.json: not a JSON object");
    }
    hp_model_config m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "%s", name && *name ? name : "config.json");
    // HF's defaults (LlamaConfig) where a field may be left out
    m.norm_eps = 1e-6f;
    m.rope_theta = 10000.0f;
    m.score_func = HP_SCORE_SOFTMAX;
    m.route_scale = 1.0f;
    const cJSON *t = field(root, "model_type");
    const int mixtral = cJSON_IsString(t) && !strcmp(t->valuestring, "mixtral");
    int rc = refuse_unsupported(root, err, errlen);
    if (!rc) rc = get_int(root, "hidden_size", 1, 1, MAX_DIM, &m.dim, err, errlen);
    if (!rc) rc = get_int(root, "num_hidden_layers", 1, 1, MAX_DIM, &m.n_layers, err, errlen);
    if (!rc) rc = get_int(root, "num_attention_heads", 1, 1, MAX_DIM, &m.n_heads, err, errlen);
    m.n_kv_heads = m.n_heads;
    if (!rc) rc = get_int(root, "num_key_value_heads", 0, 1, MAX_DIM, &m.n_kv_heads, err, errlen);
    if (!rc) rc = get_int(root, "intermediate_size", 1, 1, MAX_DIM, &m.ffn_hidden, err, errlen);
    if (!rc) rc = get_int(root, "vocab_size", 1, 1, MAX_DIM, &m.vocab_size, err, errlen);
    if (!rc) rc = get_float(root, "rope_theta", 1e30, &m.rope_theta, err, errlen);
    if (!rc) rc = get_float(root, "rms_norm_eps", 1.0, &m.norm_eps, err, errlen);
    if (!rc) rc = read_moe(root, &m, mixtral, err, errlen);
    if (!rc) rc = read_rope_scaling(root, &m, err, errlen);
    int hd = 0;
    if (!rc && m.dim % m.n_heads != 0)
        rc = fail(err, errlen, "config.json: num_attention_heads (%d) must divide hidden_size (%d)", m.n_heads, m.dim);
    if (!rc && (m.dim / m.n_heads) % 2 != 0)
        rc = fail(err, errlen, "config.json: the head dim hidden_size/num_attention_heads = %d/%d = %d must be even (RoPE rotates pairs)",
                  m.dim, m.n_heads, m.dim / m.n_heads);
    if (!rc && m.n_heads % m.n_kv_heads != 0)
        rc = fail(err, errlen, "config.json: num_key_value_heads (%d) must divide num_attention_heads (%d)", m.n_kv_heads, m.n_heads);
    if (!rc) rc = get_int(root, "head_dim", 0, 1, MAX_DIM, &hd, err, errlen);
    if (!rc && hd && hd != m.dim / m.n_heads)
        rc = fail(err, errlen, "config.json: head_dim %d != hidden_size/num_attention_heads = %d: a separate head dim is not part of hyperpar's model",
                  hd, m.dim / m.n_heads);
    cJSON_Delete(root);
    if (rc) return -1;
    *out = m;
    return 0;
}

// The model's name: the file's folder for ".../Llama-3.1-8B/config.json", else the file name
// without ".json".
static void name_of(const char *path, char *name, size_t n) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t len = strlen(base);
    if (!strcmp(base, "config.json") && base > path + 1) {
        const char *end = base - 1, *start = end;
        while (start > path && start[-1] != '/') start--;
        base = start;
        len = (size_t)(end - start);
    } else if (len > 5 && !strcmp(base + len - 5, ".json")) {
        len -= 5;
    }
    if (len >= n) len = n - 1;
    memcpy(name, base, len);
    name[len] = '\0';
}

int hp_model_config_from_hf_file(const char *path, hp_model_config *out, char *err, size_t errlen) {
    unsigned char *buf = NULL;
    size_t len = 0;
    const char *why = NULL;
    if (hp_file_read(path, &buf, &len, &why) != 0)
        return fail(err, errlen, "cannot read '%s': %s", path, why ? why : "read error");
    char name[32];
    name_of(path, name, sizeof name);
    char inner[400];
    int rc = hp_model_config_from_hf_json((const char *)buf, len, name, out, inner, sizeof inner);
    free(buf);
    // "PATH: 'x' is true: ..." rather than "PATH: config.json: 'x' ..."
    const char *why_line = strncmp(inner, "config.json: ", 13) ? inner : inner + 13;
    if (rc) return fail(err, errlen, "%s: %s", path, why_line);
    return 0;
}
