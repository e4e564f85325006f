// config.h - the model's shape and a run's settings (spec: docs/model.md).
// defines: hp_model_config, hp_model_config_by_name, hp_model_config_from_hf_json/_file,
//          hp_run_config, hp_run_config_default
//
//   hp_model_config m;
//   hp_model_config_by_name("llama3-8b", &m);            // 8,030,261,248 parameters
//   char err[512];
//   if (hp_model_config_from_hf_file("Llama-3.1-70B/config.json", &m, err, sizeof err) != 0)
//       fprintf(stderr, "hp: %s\n", err);   // e.g. "...: 'tie_word_embeddings' is true: ..."
#ifndef HYPERPAR_CONFIG_H
#define HYPERPAR_CONFIG_H
#include <stddef.h>
#include <stdint.h>

typedef enum { HP_SCORE_SOFTMAX = 0, HP_SCORE_SIGMOID = 1 } hp_score_func;

typedef struct hp_model_config {
    char  name[32];
    int   vocab_size;      // V
    int   dim;             // D
    int   n_layers;        // L
    int   n_heads;         // H
    int   n_kv_heads;      // Hkv  (H % Hkv == 0; head_dim = D / H, even)
    int   ffn_hidden;      // F    (dense FFN width)
    float norm_eps;
    float rope_theta;
    int   num_experts;     // E (0 = dense model)
    int   top_k;           // K
    int   moe_hidden;      // Fe (width of one expert)
    int   n_shared_experts;// 0 or 1 (shared FFN width Fe * n_shared)
    int   n_dense_layers;  // the first n blocks stay dense
    hp_score_func score_func;
    int   route_norm;      // renormalise the K top scores to sum 1
    float route_scale;
    // Llama 3.1's rescale of the RoPE frequencies (HF rope_scaling, rope_type "llama3");
    // rope_factor 0 = none, plain RoPE at rope_theta (hp_rope_table_llama3 has the rule)
    float rope_factor, rope_low_freq_factor, rope_high_freq_factor;
    int   rope_original_max_positions;
} hp_model_config;

// Fills *out with a named config: one of hp_model_config_names (the test models "tiny",
// "tiny-moe" and "tiny-moe-alt", "small", "bench", "bench-moe"; and the published shapes, for
// planning: "llama3-8b", "llama3-70b", "llama3-405b", "mixtral-8x7b", which hp run's memory
// check refuses here). Returns 0, or -1 for an unknown name.
int hp_model_config_by_name(const char *name, hp_model_config *out);
// The names hp_model_config_by_name knows, NULL-terminated.
extern const char *const hp_model_config_names[];

// Reads a Hugging Face config.json held in text[0..len) (no NUL needed) into *out, named
// `name`: hidden_size, num_hidden_layers, num_attention_heads, num_key_value_heads,
// intermediate_size, vocab_size, rope_theta, rms_norm_eps, and for MoE num_local_experts (or
// n_routed_experts), num_experts_per_tok, moe_intermediate_size, n_shared_experts,
// first_k_dense_replace, scoring_func, norm_topk_prob, routed_scaling_factor. A field our
// model cannot express (tied embeddings, biases, MLA, sliding window, ...) is refused by name.
// Returns 0, or -1 with one line in err (*out untouched).
int hp_model_config_from_hf_json(const char *text, size_t len, const char *name,
                                 hp_model_config *out, char *err, size_t errlen);
// The same for a file; the model is named after its folder (".../Llama-3.1-8B/config.json")
// or the file name without ".json". The error line starts with the path.
int hp_model_config_from_hf_file(const char *path, hp_model_config *out, char *err, size_t errlen);

static inline int hp_model_head_dim(const hp_model_config *m) { return m->dim / m->n_heads; }
static inline int hp_model_is_moe_layer(const hp_model_config *m, int l) {
    return m->num_experts > 0 && l >= m->n_dense_layers;
}

typedef enum { HP_OPT_SGD = 0, HP_OPT_ADAMW = 1 } hp_optimizer;
typedef enum { HP_ROTATE_ALLGATHER = 0, HP_ROTATE_RING = 1 } hp_cp_rotate;
typedef enum { HP_DISPATCH_ALLTOALL = 0, HP_DISPATCH_ALLGATHER = 1 } hp_dispatcher;
// --reshard-after-forward: TorchTitan's fsdp_reshard_after_forward policy (see hp_run_unit_keep)
typedef enum { HP_RESHARD_DEFAULT = 0, HP_RESHARD_ALWAYS = 1, HP_RESHARD_NEVER = 2 } hp_reshard_policy;

// --mixed-precision-param / --mixed-precision-reduce: TorchTitan's training.mixed_precision_*
// (precision.md §1-2); float32 is the default for both
typedef enum { HP_DTYPE_FLOAT32 = 0, HP_DTYPE_BFLOAT16 = 1 } hp_mp_dtype;

// --lr_scheduler.decay_type: TorchTitan's decay after warmup and the stable phase (optim.h)
typedef enum { HP_DECAY_LINEAR = 0, HP_DECAY_SQRT = 1, HP_DECAY_COSINE = 2 } hp_decay_type;

// training.dataset_format (docs/data.md): how hp_data_open (data.h) reads a
// dataset. AUTO detects the header (llm.c shard, Megatron .idx) and refuses a headerless file;
// AUTO_BYTES, what the old `--data FILE` means, detects the same but reads a headerless file as
// bytes. LLMC .. BYTES force one format.
typedef enum {
    HP_DATA_AUTO = 0, HP_DATA_LLMC, HP_DATA_MEGATRON, HP_DATA_UINT16, HP_DATA_UINT32, HP_DATA_BYTES,
    HP_DATA_AUTO_BYTES,
} hp_data_format;

typedef struct hp_run_config {
    int          seq_len;       // S
    int          batch;         // global batch, in sequences
    uint64_t     seed;
    int          steps;
    hp_optimizer optimizer;
    float        lr;
    float        max_norm;      // <= 0: no clipping
    const char  *data_path;     // NULL: synthetic data; else a file, Megatron prefix or glob (data.h)
    hp_data_format data_format; // training.dataset_format (default auto)
    hp_cp_rotate cp_rotate;
    int          cp_load_balance; // 1: head-tail chunks (default), 0: contiguous split
    hp_dispatcher dispatcher;
    int          microbatches;  // M: gradient accumulation steps per optimiser step (>= 1);
                                //    M divides the local batch batch/(dp_replicate*dp_shard)
    int          ac_every;      // activation checkpointing (--ac): 0 none, 1 full (every
                                //    block), N: every N-th block (see hp_run_ac_block)
    hp_reshard_policy reshard_after_forward;   // FSDP units after their forward (hp_run_unit_keep)
    // AdamW as torch.optim.AdamW (decoupled weight decay, bias-corrected, eps outside the sqrt);
    // TorchTitan's defaults 0.9, 0.95, 1e-8, 0.1
    float        beta1, beta2, eps, weight_decay;
    // the LR schedule, TorchTitan's formula (include/hyperpar/optim.h): warmup, stable, decay
    int          warmup_steps;    // >= 0 (default 0)
    double       decay_ratio;     // [0, 1]; -1 = unset: decay from the end of warmup (default 0:
                                  //    no decay, a constant lr)
    hp_decay_type decay_type;     // default linear
    double       min_lr_factor;   // [0, 1]: the lr decays to lr * min_lr_factor (default 0)
    int          total_steps;     // the schedule's length T; -1 = steps (default -1)
    // mixed precision, FSDP2's MixedPrecisionPolicy on every layout (precision.md §2): with
    // param bfloat16 the fp32 master shards are cast to bf16 before the all-gather, every op
    // reads bf16 and rounds its output once, local weight gradients are bf16; reduce is the
    // dtype of the gradient reduction and the accumulation over microbatches
    hp_mp_dtype  mp_param;        // default float32
    hp_mp_dtype  mp_reduce;       // default float32; bfloat16 needs mp_param bfloat16
    // float8 linears (precision.md §5, docs/float8.md): torchao's recipe (hp_float8_recipe of
    // hyperpar/float8.h: 0 off, 1 tensorwise, 2 rowwise, 3 rowwise-gw-hp); filter: a comma
    // list, a linear whose name contains one of them stays in the param dtype (TorchTitan's
    // filter_fqns; `output` and `router.gate` always stay); fsdp_all_gather: torchao's
    // enable_fsdp_float8_all_gather (tensorwise only: weight shards cast to e4m3 before a
    // 1-byte all-gather, parallel/fsdp.c)
    int          float8;               // default 0 (off)
    char         float8_filter[256];   // default ""
    int          float8_fsdp_all_gather;   // default 0
    // async TP (TorchTitan parallelism.enable_async_tensor_parallel, docs/async_tp.md): the SP
    // all-gather overlapped with the GEMMs it feeds, the reduce-scatter with the GEMM producing
    // it; bitwise the plain path. Needs tp > 1 and SP on.
    int          async_tp;        // default 0
} hp_run_config;

void hp_run_config_default(hp_run_config *rc);
// "none" -> 0, "full" -> 1, "every:N" (N >= 1) -> N into *ac_every. Returns 0, or -1 with
// one line in err ("every:0" names the rule N >= 1; anything else lists the accepted forms).
// hp_dims_validate refuses a config with ac_every < 0.
int hp_run_config_parse_ac(const char *s, int *ac_every, char *err, size_t errlen);

// Activation checkpointing (TorchTitan's apply_ac / _apply_ac_to_transformer_block with
// ac_freq N): block l (0-based, the model's global block index) is checkpointed when
// (l+1) % N == 0; N = 1 (full) checkpoints every block; the head never is. A checkpointed
// block keeps only its input h_in (the residual stream, Nres x D rows) between its forward
// and its backward; in the backward it first reruns its forward (every collective included:
// tp region gathers and reductions, the CP ring / all-gather, the Ulysses all-to-alls, the EP
// dispatch and combine with its counts exchange; the FSDP unit is already gathered for the
// backward, so FSDP moves nothing more) into ONE block-sized set of activation buffers
// shared by every checkpointed block of the rank (not one per pipeline slot), then runs its
// backward from them. Other blocks keep all their activations, as without AC.
// (TorchTitan counts the wrapped blocks per process; at pp 1 the two agree, and the global
// index keeps the set of checkpointed blocks the same under every layout.)
static inline int hp_run_ac_block(const hp_run_config *rc, int l) {
    return rc->ac_every > 0 && (l + 1) % rc->ac_every == 0;
}
// bf16 activation storage (precision.md §2.2): under --mixed-precision-param bfloat16 a block
// that keeps its activations keeps the bf16 ones in 2 bytes each (its input among them; its
// fp32 statistics and the router's scores stay 4), and every such block runs in ONE fp32 set,
// as a checkpointed block does. Float8 runs keep fp32 buffers (their dequantised operands are
// not all bf16 values); the Ulysses state's gathered q, k, v are 2 bytes under the bf16 policy
// either way (they arrive in 2 bytes).
static inline int hp_run_bf16_stored(const hp_run_config *rc) {
    return rc->mp_param == HP_DTYPE_BFLOAT16 && rc->float8 == 0;
}
// "default", "always", "never" -> *policy; 0, or -1 with one line in err naming the choices.
// hp_dims_validate refuses "always" under pp.
int hp_run_config_parse_reshard(const char *s, hp_reshard_policy *policy, char *err, size_t errlen);
const char *hp_run_reshard_name(hp_reshard_policy policy);   // --reshard-after-forward's word
// "float32" | "bfloat16" -> *dtype (flag names the flag in err); 0, or -1 with one line in err
int hp_mp_dtype_parse(const char *flag, const char *s, hp_mp_dtype *dtype, char *err, size_t errlen);
const char *hp_mp_dtype_name(hp_mp_dtype dtype);   // "float32", "bfloat16"
// "auto" | "llmc" | "megatron" | "uint16" | "uint32" | "bytes" | "auto_bytes" -> *format; 0, or
// -1 with one line in err naming the choices (flag names the key). "auto_bytes" is what `--data`
// means, so that a job file written back (config.toml) reads the data as the run did.
int hp_data_format_parse(const char *flag, const char *s, hp_data_format *format, char *err, size_t errlen);
const char *hp_data_format_name(hp_data_format format);

// How long FSDP keeps a unit gathered after its forward (docs/torchtitan.md §4.4-5, the
// policy TorchTitan's apply_fsdp applies):
//   HP_KEEP_NONE      freed after its forward, all-gathered again for its backward
//   HP_KEEP_BACKWARD  kept until its backward of the same microbatch ends, then freed
//   HP_KEEP_STEP      gathered once per step and kept until its last backward (pp: the
//                     schedule runs many microbatches' forwards before their backwards)
// default: under pp every unit HP_KEEP_STEP (reshard_after_forward = not pp_enabled); else the
//   [norm, output] unit (is_head) HP_KEEP_BACKWARD - it ends the forward and starts the
//   backward, so freeing it would only gather it again at once - and the others HP_KEEP_NONE.
// always: every unit HP_KEEP_NONE (pp 1 only). never: HP_KEEP_STEP under pp, else every unit
//   HP_KEEP_BACKWARD.
typedef enum { HP_KEEP_NONE = 0, HP_KEEP_BACKWARD = 1, HP_KEEP_STEP = 2 } hp_unit_keep;
static inline hp_unit_keep hp_run_unit_keep(hp_reshard_policy policy, int pp, int is_head) {
    if (policy == HP_RESHARD_ALWAYS) return HP_KEEP_NONE;
    if (pp > 1) return HP_KEEP_STEP;
    return policy == HP_RESHARD_NEVER || is_head ? HP_KEEP_BACKWARD : HP_KEEP_NONE;
}
// 1 when units other than the head stay gathered beside each other (each needs its own place).
static inline int hp_run_units_kept_apart(hp_reshard_policy policy, int pp) {
    return hp_run_unit_keep(policy, pp, 0) != HP_KEEP_NONE;
}
// The all-gathers of one unit per step (M microbatches), by hp_run_unit_keep.
static inline int hp_run_unit_gathers(hp_unit_keep keep, int M) {
    return keep == HP_KEEP_STEP ? 1 : keep == HP_KEEP_BACKWARD ? M : 2 * M;
}

// The number of microbatches a step runs (a config left zeroed means 1).
static inline int hp_run_microbatches(const hp_run_config *rc) {
    return rc->microbatches > 0 ? rc->microbatches : 1;
}

#endif
