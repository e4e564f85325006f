// test_plan.c - the planner's library half, no MPI: the published parameter counts of the
// named models from the parameter table; the table at 405B shapes and 16384 ranks describes
// without allocating (small and quick); the config.json reader's fields and refusals; the
// persistent bytes against fsdp.c's allocation rule; the traffic equal to the verifier's
// formulas wherever those are not data-dependent; FLOPs of a known case by hand.
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "hyperpar/params.h"
#include "hyperpar/pipeline.h"
#include "hyperpar/comm.h"
#include "hyperpar/float8.h"
#include "hyperpar/plan.h"
#include "hyperpar/traffic_ac.h"
#include "hyperpar/train.h"
#include "hyperpar/verify.h"
#include "test_check.h"



static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static hp_dims layout(int R, int S, int C, int T, int EP, int ET, const hp_model_config *m,
                      const hp_run_config *rc) {
    hp_dims d = hp_dims_default();
    d.dp_replicate = R; d.dp_shard = S; d.cp = C; d.tp = T; d.ep = EP; d.etp = ET;
    d.world = R * S * C * T;
    char err[512];
    if (hp_dims_validate(&d, m, rc, err, sizeof err) != 0) {
        fprintf(stderr, "FAIL layout: %s\n", err);
        check_failed++;
    }
    return d;
}

// The counts their authors publish (Llama 3 paper / model cards; Mixtral's safetensors index).
static void test_param_counts(void) {
    static const struct { const char *name; int64_t params; } want[] = {
        { "llama3-8b", 8030261248LL }, { "llama3-70b", 70553706496LL },
        { "llama3-405b", 405853388800LL }, { "mixtral-8x7b", 46702792704LL },
    };
    hp_run_config rc;
    hp_run_config_default(&rc);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        hp_model_config m;
        CHECK(hp_model_config_by_name(want[i].name, &m) == 0, "named config %s", want[i].name);
        hp_dims d = layout(1, 1, 1, 1, 1, 1, &m, &rc);
        hp_param_table t;
        CHECK(hp_params_build(&t, &m, &d, 0) == 0, "table of %s", want[i].name);
        CHECK(t.full_numel == want[i].params, "%s: %lld parameters, published %lld", want[i].name,
              (long long)t.full_numel, (long long)want[i].params);
        hp_params_free(&t);
        hp_plan_memory mem;
        CHECK(hp_plan_memory_predict(&m, &d, &rc, 0, &mem) == 0 && mem.params_total == want[i].params,
              "%s: the plan reports the table's count", want[i].name);
    }
    hp_model_config mx;
    hp_model_config_by_name("mixtral-8x7b", &mx);
    CHECK(mx.num_experts == 8 && mx.top_k == 2 && mx.n_shared_experts == 0 && mx.route_norm == 1 &&
          mx.score_func == HP_SCORE_SOFTMAX && mx.rope_theta == 1e6f && mx.vocab_size == 32000,
          "mixtral-8x7b: 8 experts, top 2 renormalised softmax, no shared expert, theta 1e6");
    hp_model_config l3;
    hp_model_config_by_name("llama3-405b", &l3);
    CHECK(l3.rope_theta == 500000.0f && l3.norm_eps == 1e-5f && l3.n_kv_heads == 8, "llama3-405b: theta, eps, kv heads");
}

// A named model and the default run config at this sequence length and global batch.
static void model_and_run(const char *name, int seq_len, int batch, hp_model_config *m,
                          hp_run_config *rc) {
    hp_model_config_by_name(name, m);
    hp_run_config_default(rc);
    rc->seq_len = seq_len;
    rc->batch = batch;
}

// The table only describes tensors: at 405B and 16384 ranks it is ~1k small rows.
static void test_table_is_small(void) {
    hp_model_config m;
    hp_run_config rc;
    model_and_run("llama3-405b", 8192, 2048, &m, &rc);
    hp_dims d = layout(1, 2048, 1, 8, 1, 1, &m, &rc);
    const double t0 = now_s();
    hp_param_table t;
    CHECK(hp_params_build(&t, &m, &d, 16383) == 0, "405B table at 16384 ranks");
    const double dt = now_s() - t0;
    const size_t bytes = (size_t)t.n * sizeof(hp_param) + 2 * (size_t)(t.n_units + 1) * sizeof(int64_t);
    CHECK(t.n == 1 + 9 * 126 + 2 && bytes < (1u << 20), "405B table: %d rows, %zu bytes", t.n, bytes);
    printf("405B parameter table at 16384 ranks: %d rows, %zu bytes, %.3f ms (not asserted)\n", t.n,
           bytes, 1e3 * dt);
    // rank 16383: the last tp rank of the last fsdp shard; its shard is the same padded size
    hp_param_table t0b;
    CHECK(hp_params_build(&t0b, &m, &d, 0) == 0 && t0b.shard_numel == t.shard_numel,
          "every rank's shard buffer has the same padded size");
    hp_params_free(&t0b);
    hp_params_free(&t);
}

static int reads(const char *json, hp_model_config *m, char *err, size_t n) {
    return hp_model_config_from_hf_json(json, strlen(json), "t", m, err, n);
}

static void test_hf_reader(void) {
    hp_model_config m;
    char err[512];
    const char *mixtral =
        "{\"model_type\":\"mixtral\",\"hidden_size\":4096,\"intermediate_size\":14336,"
        "\"num_hidden_layers\":32,\"num_attention_heads\":32,\"num_key_value_heads\":8,"
        "\"vocab_size\":32000,\"num_local_experts\":8,\"num_experts_per_tok\":2,"
        "\"rms_norm_eps\":1e-05,\"rope_theta\":1000000.0,\"sliding_window\":null}";
    CHECK(reads(mixtral, &m, err, sizeof err) == 0, "mixtral config.json: %s", err);
    hp_model_config named;
    hp_model_config_by_name("mixtral-8x7b", &named);
    CHECK(m.dim == named.dim && m.n_layers == named.n_layers && m.num_experts == 8 && m.top_k == 2 &&
          m.moe_hidden == 14336 && m.route_norm == 1 && m.rope_theta == 1e6f && m.norm_eps == 1e-5f &&
          m.n_kv_heads == 8, "mixtral config.json = the named mixtral-8x7b");
    const char *deepseek =
        "{\"model_type\":\"deepseek\",\"hidden_size\":2048,\"intermediate_size\":10944,"
        "\"moe_intermediate_size\":1408,\"num_hidden_layers\":28,\"num_attention_heads\":16,"
        "\"n_routed_experts\":64,\"n_shared_experts\":2,\"num_experts_per_tok\":6,"
        "\"first_k_dense_replace\":1,\"norm_topk_prob\":false,\"scoring_func\":\"softmax\","
        "\"vocab_size\":102400}";
    CHECK(reads(deepseek, &m, err, sizeof err) == 0 && m.num_experts == 64 && m.top_k == 6 &&
          m.moe_hidden == 1408 && m.n_shared_experts == 2 && m.n_dense_layers == 1 &&
          m.ffn_hidden == 10944 && m.n_kv_heads == 16 && m.route_norm == 0 && m.norm_eps == 1e-6f &&
          m.rope_theta == 10000.0f, "deepseek-moe fields and HF defaults (%s)", err);
    // Llama 3.1's rope_scaling is read (and a null one, or rope_type default, is plain RoPE)
    const char *llama31 =
        "{\"model_type\":\"llama\",\"hidden_size\":4096,\"intermediate_size\":14336,\"num_hidden_layers\":32,"
        "\"num_attention_heads\":32,\"num_key_value_heads\":8,\"vocab_size\":128256,\"rope_theta\":500000.0,"
        "\"rope_scaling\":{\"factor\":8.0,\"low_freq_factor\":1.0,\"high_freq_factor\":4.0,"
        "\"original_max_position_embeddings\":8192,\"rope_type\":\"llama3\"}}";
    CHECK(reads(llama31, &m, err, sizeof err) == 0 && m.rope_factor == 8.0f && m.rope_low_freq_factor == 1.0f &&
          m.rope_high_freq_factor == 4.0f && m.rope_original_max_positions == 8192 && m.rope_theta == 5e5f,
          "Llama 3.1's rope_scaling is read (%s)", err);
    const char *plain = "{\"hidden_size\":64,\"num_hidden_layers\":1,\"num_attention_heads\":8,"
                        "\"intermediate_size\":128,\"vocab_size\":256,\"rope_scaling\":null}";
    CHECK(reads(plain, &m, err, sizeof err) == 0 && m.rope_factor == 0.0f, "rope_scaling null: plain RoPE (%s)", err);
    // refusals name the field
    static const struct { const char *json, *names; } bad[] = {
        { "{\"hidden_size\":64,\"num_hidden_layers\":1,\"num_attention_heads\":8,\"intermediate_size\":128,"
          "\"vocab_size\":256,\"tie_word_embeddings\":true}", "'tie_word_embeddings' is true" },
        { "{\"hidden_size\":64,\"num_hidden_layers\":1,\"num_attention_heads\":8,\"intermediate_size\":128,"
          "\"vocab_size\":256,\"mlp_bias\":true}", "'mlp_bias' is true" },
        { "{\"hidden_size\":64,\"num_hidden_layers\":1,\"num_attention_heads\":8,\"intermediate_size\":128,"
          "\"vocab_size\":256,\"kv_lora_rank\":512}", "'kv_lora_rank' is set" },
        { "{\"hidden_size\":64,\"num_hidden_layers\":1,\"num_attention_heads\":8,\"intermediate_size\":128,"
          "\"vocab_size\":256,\"sliding_window\":4096}", "'sliding_window' is set" },
        { "{\"hidden_size\":64,\"num_hidden_layers\":1,\"num_attention_heads\":8,\"intermediate_size\":128,"
          "\"vocab_size\":256,\"hidden_act\":\"gelu\"}", "hidden_act 'gelu' is not silu" },
        { "{\"hidden_size\":64,\"num_hidden_layers\":1,\"num_attention_heads\":8,\"intermediate_size\":128,"
          "\"vocab_size\":256,\"num_key_value_heads\":3}", "num_key_value_heads (3) must divide num_attention_heads (8)" },
        { "{\"hidden_size\":64,\"num_hidden_layers\":1,\"num_attention_heads\":8,\"intermediate_size\":128,"
          "\"vocab_size\":2.5}", "field 'vocab_size' must be an integer" },
        { "{\"hidden_size\":64,\"num_hidden_layers\":1,\"num_attention_heads\":8,\"intermediate_size\":128,"
          "\"vocab_size\":256,\"num_local_experts\":4,\"num_experts_per_tok\":5}", "'num_experts_per_tok' must be in [1, 4]" },
        { "[1, 2]", "not a JSON object" },
        { "{\"hidden_size\":64,\"num_hidden_layers\":1,\"num_attention_heads\":8,\"intermediate_size\":128,"
          "\"vocab_size\":256,\"rope_scaling\":{\"rope_type\":\"yarn\",\"factor\":4}}",
          "rope_scaling rope_type 'yarn' is not one hyperpar implements (llama3 is)" },
        { "{\"hidden_size\":64,\"num_hidden_layers\":1,\"num_attention_heads\":8,\"intermediate_size\":128,"
          "\"vocab_size\":256,\"rope_scaling\":{\"rope_type\":\"llama3\",\"factor\":8,\"low_freq_factor\":4,"
          "\"high_freq_factor\":1,\"original_max_position_embeddings\":8192}}",
          "rope_scaling llama3 needs factor >= 1 and 0 < low_freq_factor < high_freq_factor, got 8, 4, 1" },
        { "{\"hidden_size\":64,\"num_hidden_layers\":1,\"num_attention_heads\":8,\"intermediate_size\":128,"
          "\"vocab_size\":256,\"rope_scaling\":{\"rope_type\":\"llama3\",\"factor\":8,\"low_freq_factor\":1,"
          "\"high_freq_factor\":4}}", "rope_scaling: required field 'original_max_position_embeddings' is missing" },
        { "{\"hidden_size\":64,\"num_hidden_layers\":1,\"num_attention_heads\":8,\"intermediate_size\":128,"
          "\"vocab_size\":256,\"rope_scaling\":3}", "field 'rope_scaling' must be an object or null" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        const int rc = reads(bad[i].json, &m, err, sizeof err);
        CHECK(rc == -1 && strstr(err, bad[i].names) && !strchr(err, '\n'),
              "refusal %zu names '%s': got '%s'", i, bad[i].names, err);
    }
}

// Which units are their shards (params.h): every unit under a shard group of one, none under
// FSDP, and under EP with fsdp 1 only the units without routed experts sharded over efsdp.
static int units_in_shards(const hp_model_config *m, const hp_dims *d, int rank, int64_t *gathered) {
    hp_param_table t;
    if (hp_params_build(&t, m, d, rank) != 0) return -1;
    int n = 0;
    for (int u = 0; u < t.n_units; u++) n += t.unit_in_shards[u] >= 0;
    *gathered = t.max_gathered_work;
    hp_params_free(&t);
    return n;
}

// How many nonblocking reductions may be in flight: 4 while their slots fit the budget.
static void test_async_slots(void) {
    const size_t at_budget = HP_COMM_ASYNC_BUDGET / (HP_COMM_ASYNC_MAX * sizeof(float));
    CHECK(hp_comm_async_slots(1000, 1000) == HP_COMM_ASYNC_MAX, "small reductions: %d slots", HP_COMM_ASYNC_MAX);
    CHECK(hp_comm_async_slots(at_budget / 2, at_budget - at_budget / 2) == HP_COMM_ASYNC_MAX,
          "slots of exactly the budget: %d", HP_COMM_ASYNC_MAX);
    CHECK(hp_comm_async_slots(at_budget / 2, at_budget - at_budget / 2 + 1) == 2, "one float beyond: 2");
    // llama3-8b under FSDP 8 is beyond it: its plan holds 2 slots
    hp_model_config m;
    hp_run_config rc;
    model_and_run("llama3-8b", 8192, 16, &m, &rc);
    hp_dims d = layout(1, 8, 1, 1, 1, 1, &m, &rc);
    hp_plan_memory mem;
    CHECK(hp_plan_memory_table(&m, &d, 0, &mem) == 0, "llama3-8b table");
    hp_param_table t;
    hp_params_build(&t, &m, &d, 0);
    // a slot: the send copy and the rows of the largest unit's span, about 2 x its floats
    const double slot = 2.0 * 4.0 * (double)t.max_unit_work;
    hp_params_free(&t);
    CHECK(mem.comm_layer > 1.5 * slot && mem.comm_layer < 2.5 * slot,
          "llama3-8b FSDP 8: comm-layer bytes %.3g hold 2 slots of ~%.3g, not 4", mem.comm_layer, slot);
}

static void test_units_in_shards(void) {
    hp_model_config m, moe;
    hp_model_config_by_name("tiny", &m);
    hp_model_config_by_name("tiny-moe", &moe);
    hp_run_config rc;
    hp_run_config_default(&rc);
    int64_t g = -1;
    const int units = m.n_layers + 2;
    hp_dims one = layout(1, 1, 1, 1, 1, 1, &m, &rc), ddp = layout(2, 1, 1, 1, 1, 1, &m, &rc);
    hp_dims tp = layout(1, 1, 1, 2, 1, 1, &m, &rc), fsdp = layout(1, 2, 1, 1, 1, 1, &m, &rc);
    hp_dims hsdp = layout(2, 2, 1, 1, 1, 1, &m, &rc), cp = layout(1, 1, 2, 1, 1, 1, &m, &rc);
    CHECK(units_in_shards(&m, &one, 0, &g) == units && g == 0, "1 rank: every unit is its shards");
    CHECK(units_in_shards(&m, &ddp, 1, &g) == units && g == 0, "DDP: every unit is its shards");
    CHECK(units_in_shards(&m, &tp, 1, &g) == units && g == 0, "tp 2: every unit is its shards");
    CHECK(units_in_shards(&m, &fsdp, 1, &g) == 0 && g > 0, "dp_shard 2: no unit is its shards");
    CHECK(units_in_shards(&m, &hsdp, 3, &g) == 0 && g > 0, "HSDP 2 x 2: no unit is its shards");
    CHECK(units_in_shards(&m, &cp, 1, &g) == 0 && g > 0, "cp 2 (sharded over dp_shard x cp): none");
    // ep 2 over dp_shard 2: the dense params shard over fsdp 2, so no unit qualifies
    hp_dims ep = layout(1, 2, 1, 1, 2, 1, &moe, &rc);
    CHECK(units_in_shards(&moe, &ep, 0, &g) == 0, "ep 2 with dp_shard 2: no unit is its shards");
}

// fsdp.c allocates p, g, m, v shards, two unit buffers and the staging buffer.
static void test_memory_rules(void) {
    hp_model_config m;
    hp_model_config_by_name("tiny-moe", &m);
    hp_run_config rc;
    hp_run_config_default(&rc);
    hp_dims d = layout(1, 2, 1, 2, 4, 1, &m, &rc);
    hp_param_table t;
    hp_params_build(&t, &m, &d, 3);
    hp_plan_memory mem;
    CHECK(hp_plan_memory_predict(&m, &d, &rc, 3, &mem) == 0, "predict tiny-moe S1b");
    CHECK(mem.persistent == 16.0 * (double)t.shard_numel && mem.params == 4.0 * (double)t.shard_numel &&
          mem.fsdp_working == 8.0 * ((double)t.max_gathered_work + 1), "persistent = 16 bytes per shard float");
    CHECK(mem.peak > mem.persistent + mem.fsdp_working + mem.comm_scratch && mem.activations > 0 &&
          mem.activations_uniform < mem.activations, "peak adds activations; uniform routing needs less");
    hp_params_free(&t);
    hp_memory_estimate_t e;
    hp_memory_estimate(&m, &d, &rc, 3, &e);
    CHECK(mem.persistent == e.persistent_bytes, "the planner's persistent bytes = hp_memory_estimate's");
    // full AC: the block inputs (Nres x D each) plus one block and the head, less than no AC
    CHECK(hp_plan_memory_full_ac(&m, &d, &rc, 3, &mem) == 0 && mem.activations_full_ac < mem.activations &&
          mem.activations_full_ac > 2.0 * (2 * 32 / 2) * 64 * 4, "full AC between the inputs and no AC");
    hp_run_config rc4 = rc;
    rc4.microbatches = 4;
    hp_plan_memory mem4;
    hp_dims d4 = layout(1, 2, 1, 2, 4, 1, &m, &rc4);
    CHECK(hp_plan_memory_predict(&m, &d4, &rc4, 3, &mem4) == 0 && mem4.activations < mem.activations &&
          mem4.accumulation > 0 && mem.accumulation == 0, "microbatches: fewer activations, accumulation buffers");
}

// The rowwise float8 amax per row over a routed expert's etp-split hidden (docs/float8.md):
// with ep x etp the tp all-reduce depends on the routing (marked, then the planner's
// expectation), without ep or under tensorwise it does not.
static void test_float8_expert_traffic(void) {
    hp_model_config m;
    hp_model_config_by_name("tiny-moe", &m);
    hp_run_config rc;
    hp_run_config_default(&rc);
    rc.float8 = HP_FLOAT8_ROWWISE;
    hp_dims d = layout(1, 2, 1, 2, 2, 2, &m, &rc);
    uint64_t a[HP_G_COUNT][HP_OP_COUNT], b[HP_G_COUNT][HP_OP_COUNT], per[2] = { 7, 7 }, fixed = 0;
    hp_traffic_predict(&m, &d, &rc, 0, a);
    hp_plan_traffic_predict(&m, &d, &rc, 0, b, NULL);
    CHECK(a[HP_G_TP][HP_OP_ALLREDUCE] == UINT64_MAX, "rowwise, ep 2 x etp 2: tp all-reduce routing-dependent");
    // per routed entry: w2's x row (forward), w1's and w3's dy rows (backward), 4 bytes each
    CHECK(hp_traffic_tp_routed(&m, &d, &rc, 0, &fixed, per) == 1 && per[0] == 12 && per[1] == 12,
          "bytes per routed entry %llu %llu, want 12", (unsigned long long)per[0], (unsigned long long)per[1]);
    // 4 sequences of 32 tokens, K = 2: n K = 256 entries a block expected here
    CHECK(b[HP_G_TP][HP_OP_ALLREDUCE] == fixed + 2 * 256 * 12, "planner: %llu, want %llu",
          (unsigned long long)b[HP_G_TP][HP_OP_ALLREDUCE], (unsigned long long)(fixed + 2 * 256 * 12));
    rc.float8 = HP_FLOAT8_TENSORWISE;
    hp_traffic_predict(&m, &d, &rc, 0, a);
    CHECK(a[HP_G_TP][HP_OP_ALLREDUCE] != UINT64_MAX && hp_traffic_tp_routed(&m, &d, &rc, 0, &fixed, per) == 0,
          "tensorwise: one amax per expert, whatever the routing");
    rc.float8 = HP_FLOAT8_ROWWISE;
    hp_dims t = layout(1, 1, 1, 2, 1, 1, &m, &rc);
    hp_traffic_predict(&m, &t, &rc, 0, a);
    CHECK(a[HP_G_TP][HP_OP_ALLREDUCE] != UINT64_MAX, "rowwise without ep: every expert is local, N K entries");
}

static void test_traffic_and_flops(void) {
    hp_model_config m;
    hp_model_config_by_name("tiny", &m);
    hp_run_config rc;
    hp_run_config_default(&rc);
    hp_dims d = layout(2, 2, 2, 2, 1, 1, &m, &rc);
    uint64_t a[HP_G_COUNT][HP_OP_COUNT], b[HP_G_COUNT][HP_OP_COUNT], worst = 1;
    hp_traffic_predict(&m, &d, &rc, 5, a);
    hp_plan_traffic_predict(&m, &d, &rc, 5, b, &worst);
    CHECK(!memcmp(a, b, sizeof a) && worst == 0, "dense: the planner's traffic is the verifier's formula");
    // MoE with the all-to-all: expectation replaces the data-dependent marker, the rest agrees
    hp_model_config mm;
    hp_model_config_by_name("tiny-moe", &mm);
    hp_dims de = layout(1, 4, 1, 1, 4, 1, &mm, &rc);
    hp_traffic_predict(&mm, &de, &rc, 0, a);
    hp_plan_traffic_predict(&mm, &de, &rc, 0, b, &worst);
    // n = 2 sequences * 32 tokens, K = 2, ep 4: 96 of the 128 entries leave, 96 arrive;
    // El = 2 counts for each of 3 peers
    const uint64_t layer = 3 * 2 * 4 + 2 * (96 + 96) * 64 * 4;
    CHECK(a[HP_G_EP][HP_OP_ALLTOALL] == UINT64_MAX && b[HP_G_EP][HP_OP_ALLTOALL] == 2 * layer,
          "EP all-to-all expectation %llu, want %llu", (unsigned long long)b[HP_G_EP][HP_OP_ALLTOALL],
          (unsigned long long)(2 * layer));
    CHECK(worst == 2 * (3 * 2 * 4 + 2 * (4 * 64 * 2) * 64 * 4), "EP worst rank");
    a[HP_G_EP][HP_OP_ALLTOALL] = b[HP_G_EP][HP_OP_ALLTOALL];
    CHECK(!memcmp(a, b, sizeof a), "MoE: every other (group, op) is the verifier's");
    CHECK(hp_plan_wire_bytes(HP_OP_ALLGATHER, 100, 4) == 300 && hp_plan_wire_bytes(HP_OP_REDUCE_SCATTER, 400, 4) == 300 &&
          hp_plan_wire_bytes(HP_OP_ALLREDUCE, 400, 4) == 600 && hp_plan_wire_bytes(HP_OP_ALLREDUCE, 400, 1) == 0,
          "wire bytes by comm.h's rules");

    // tiny by hand: V 256, D 64, L 2, H 8 (hd 8), Hkv 4, F 128, S 32, batch 8
    hp_plan_flops f;
    hp_plan_flops_predict(&m, &d, &rc, &f);
    const int64_t active = 256 * 64 + 2 * (2 * 64 * 64 + 2 * 64 * 32 + 3 * 64 * 128);
    const double fwd = 2.0 * active + 2 * 2.0 * 33 * 64;
    CHECK(f.params_active == active && f.per_token_fwd == fwd && f.step_total == 3 * fwd * 8 * 32 &&
          f.per_rank == f.step_total / 16, "FLOPs of tiny by hand");
    // bench/README.md counts model bench at B 4 x S 512 by hand: P = 27.39 M active,
    // 336.6 GFLOP of matmuls + 25.8 GFLOP of attention = 362.4 GFLOP a step
    hp_model_config mb;
    hp_model_config_by_name("bench", &mb);
    hp_run_config rb = rc;
    rb.seq_len = 512;
    rb.batch = 4;
    hp_dims d1 = layout(1, 1, 1, 1, 1, 1, &mb, &rb);
    hp_plan_flops fb;
    hp_plan_flops_predict(&mb, &d1, &rb, &fb);
    CHECK(fb.params_active == 27394048 && fb.step_total > 362.35e9 && fb.step_total < 362.45e9,
          "bench B4 x S512: %.4g FLOP a step, bench/README.md says 362.4 G", fb.step_total);
    hp_plan_hw hw;
    CHECK(hp_plan_hw_by_name("h100", &hw) == 0 && hw.ranks_per_node == 8 && hp_plan_hw_by_name("tpu", &hw) == -1,
          "hardware names");
    hp_plan_time tm;
    hp_plan_hw_by_name("h100", &hw);
    hp_plan_time_predict(&m, &d, &rc, 0, &hw, &tm);
    CHECK(tm.compute_s > 0 && tm.comm_s > 0 && tm.step_serial_s == tm.compute_s + tm.comm_s &&
          tm.mfu_serial > 0 && tm.mfu_serial < tm.mfu_overlap && tm.mfu_overlap <= 1.0 && tm.comm_inter_s > 0,
          "time model: serial = compute + comm, MFU in (0, 1]");
    // world 16: tp groups {0,1} sit in a node of 8; the dp_replicate group {0, 8} does not
    CHECK(hp_plan_group_in_node(&d, HP_G_TP, 0, 8) == 1 && hp_plan_group_in_node(&d, HP_G_DP_REPLICATE, 0, 8) == 0,
          "groups inside and across nodes");
}

// tiny with 8 layers over pp 4 x dp_shard S, M microbatches of a batch of B, schedule sched;
// 0, or -1 (a failed CHECK) when the dims are refused.
static int pp_setup(hp_model_config *m, hp_run_config *rc, hp_dims *d, int S, int M, int B, int sched) {
    hp_model_config_by_name("tiny", m);
    m->n_layers = 8;
    hp_run_config_default(rc);
    rc->microbatches = M;
    if (B > 0) rc->batch = B;
    *d = hp_dims_default();
    d->pp = 4; d->dp_shard = S; d->world = 4 * S; d->pp_schedule = sched;
    char err[512];
    if (hp_dims_validate(d, m, rc, err, sizeof err) == 0) return 0;
    CHECK(0, "pp layout: %s", err);
    return -1;
}

// Under pp the activation slots in use follow the schedule: M under gpipe, P - p under 1f1b.
static void test_pp_in_flight(void) {
    hp_model_config m;
    hp_run_config rc;
    for (int sched = HP_PP_GPIPE; sched <= HP_PP_1F1B; sched++) {
        hp_dims d;
        if (pp_setup(&m, &rc, &d, 1, 8, 0, sched) != 0) return;
        double slot = 0;
        for (int p = 0; p < 4; p++) {
            hp_plan_memory mem;
            CHECK(hp_plan_memory_predict(&m, &d, &rc, p, &mem) == 0, "predict pp rank %d", p);
            const int want = sched == HP_PP_GPIPE ? 8 : 4 - p;
            CHECK(mem.pp_in_flight == want, "%s pp rank %d: %d microbatches in flight, want %d",
                  hp_pp_schedule_name(sched), p, mem.pp_in_flight, want);
            // (the rank's shared buffers, the norms' outputs among them, are not a slot's)
            const double slots = mem.activations - mem.activations_recompute;
            if (p == 1) slot = slots / mem.pp_in_flight;   // two blocks, no head
            if (p == 2) CHECK(slots == slot * mem.pp_in_flight, "equal stages, equal slots");
        }
    }
}

// Activation checkpointing, by hand from transformer.c's alloc_block / hp_transformer_alloc:
// tiny deepened to 4 blocks, one rank, batch 8 x seq 32: Nreg = Nres = 256 rows, D 64,
// q 64 and kv 32 wide, 8 heads, F 128, V 256 (floats; 4 bytes each).
static void test_ac_memory(void) {
    hp_model_config m;
    hp_model_config_by_name("tiny", &m);
    m.n_layers = 4;
    hp_run_config rc;
    hp_run_config_default(&rc);
    hp_dims d = layout(1, 1, 1, 1, 1, 1, &m, &rc);
    const double N = 256, D = 64, q = 64, kv = 32, H = 8, F = 128, V = 256;
    const double h_in = N * D * 4;
    // (a dense FFN keeps a1 and a3; its SwiGLU output is made again in the backward; the norms'
    //  outputs are made in the rank's one (N, D) buffer, norms)
    const double rest = (N * D + 2 * N + 2 * N * D + 2 * N * q + 2 * N * kv + N * H + 2 * N * F) * 4;
    const double norms = N * D * 4;
    // the head: h_final, rstdf, gf, logits, ce_m and ce_se (its norm's output is made in scratch)
    const double head = (N * D + N + N * D + N * V + 2 * N) * 4;
    const struct { int every; double want; } cases[] = {
        { 0, head + 4 * (h_in + rest) + norms },            // no AC: every block keeps everything
        { 1, head + 4 * h_in + rest + norms },              // full: the inputs + one recompute set
        { 2, head + 4 * h_in + 2 * rest + rest + norms },   // blocks 1 and 3: two kept, one shared set
        { 4, head + 4 * h_in + 3 * rest + rest + norms },   // block 3 only
        { 5, head + 4 * (h_in + rest) + norms },            // (l+1) % 5 never 0 for 4 blocks: none
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rc.ac_every = cases[i].every;
        hp_plan_activations a;
        hp_plan_memory mem;
        CHECK(hp_plan_activations_predict(&m, &d, &rc, 0, 0, &a) == 0 && a.total == cases[i].want &&
              a.block_input == h_in && a.dense_block == rest,
              "ac_every %d: %.0f activation bytes, by hand %.0f", cases[i].every, a.total, cases[i].want);
        CHECK(hp_plan_memory_predict(&m, &d, &rc, 0, &mem) == 0 && mem.activations == a.total &&
              mem.activations_recompute == (cases[i].every && cases[i].every <= 4 ? rest : 0) + norms,
              "ac_every %d: the memory report carries the activations and the recompute set", cases[i].every);
    }
    CHECK(hp_run_ac_block(&(hp_run_config){ .ac_every = 3 }, 2) && !hp_run_ac_block(&(hp_run_config){ .ac_every = 3 }, 3) &&
          !hp_run_ac_block(&(hp_run_config){ .ac_every = 0 }, 0), "block l checkpointed when (l+1) %% N == 0");
    int every = -1;
    char err[160];
    CHECK(hp_run_config_parse_ac("every:7", &every, err, sizeof err) == 0 && every == 7 &&
          hp_run_config_parse_ac("full", &every, err, sizeof err) == 0 && every == 1 &&
          hp_run_config_parse_ac("none", &every, err, sizeof err) == 0 && every == 0 &&
          hp_run_config_parse_ac("every:0", &every, err, sizeof err) == -1 && strstr(err, "got N = 0") &&
          hp_run_config_parse_ac("every:2x", &every, err, sizeof err) == -1 && strstr(err, "'every:2x'"),
          "--ac spellings");
    rc.ac_every = -1;
    hp_dims dbad = hp_dims_default();
    CHECK(hp_dims_validate(&dbad, &m, &rc, err, sizeof err) != 0 && strstr(err, "ac_every = -1"),
          "validation refuses ac_every < 0: %s", err);

    // pp 4 of 8 blocks, 1f1b, 8 microbatches (one sequence each: 32 rows): pp rank 0 holds 4
    // slots, each with the h_in of its two blocks and of block 2 (its stage's output lands
    // there; no h_final: the head is not its); its two blocks are checkpointed, so they add
    // only the one recompute set; and a boundary gradient a slot
    hp_model_config m8 = m;
    m8.n_layers = 8;
    hp_run_config rp;
    hp_run_config_default(&rp);
    rp.microbatches = 8;
    rp.ac_every = 1;
    hp_dims dp = hp_dims_default();
    dp.pp = 4; dp.dp_shard = 1; dp.world = 4; dp.pp_schedule = HP_PP_1F1B;
    CHECK(hp_dims_validate(&dp, &m8, &rp, err, sizeof err) == 0, "pp layout: %s", err);
    const double n = 32, rest32 = (n * D + 2 * n + 2 * n * D + 2 * n * q + 2 * n * kv + n * H + 2 * n * F) * 4;
    hp_plan_memory mp;
    CHECK(hp_plan_memory_predict(&m8, &dp, &rp, 0, &mp) == 0 && mp.pp_in_flight == 4 &&
          mp.activations == 4 * (3 * n * D * 4) + rest32 + n * D * 4 + 4 * n * D * 4,
          "pp rank 0 under full AC: %.0f bytes, by hand %.0f", mp.activations,
          4 * (3 * n * D * 4) + rest32 + n * D * 4 + 4 * n * D * 4);
    dp.pp_schedule = HP_PP_ZBV;
    dp.pp_virtual = 2;
    CHECK(hp_dims_validate(&dp, &m8, &rp, err, sizeof err) != 0 && strstr(err, "not defined for --pp-schedule zbv") &&
          hp_plan_memory_predict(&m8, &dp, &rp, 0, &mp) == -1,
          "AC under zbv is refused (not defined) by the dims rules and the planner");
}

// The recomputed forwards' collectives: tiny (2 blocks) at dp_shard 2, cp 2 (all-gather), tp 2
// with SP, world 8, batch 8 x seq 32: Bl 4 sequences, Sc 16 tokens, Nreg 64, Nres 32 rows.
static void test_ac_traffic(void) {
    hp_model_config m;
    hp_model_config_by_name("tiny", &m);
    hp_run_config rc;
    hp_run_config_default(&rc);
    hp_dims d = layout(1, 2, 2, 2, 1, 1, &m, &rc);
    uint64_t none[HP_G_COUNT][HP_OP_COUNT], full[HP_G_COUNT][HP_OP_COUNT], extra[HP_G_COUNT][HP_OP_COUNT];
    hp_plan_traffic_predict(&m, &d, &rc, 0, none, NULL);
    rc.ac_every = 1;
    hp_plan_traffic_predict(&m, &d, &rc, 0, full, NULL);
    hp_traffic_ac_predict(&m, &d, &rc, 0, extra);
    const uint64_t L = 2, D = 64, Nres = 32, T = 2, kv_n = 4 * 16 * (4 / 2) * 8;   // K rows x kv heads x hd
    CHECK(full[HP_G_TP][HP_OP_ALLGATHER] - none[HP_G_TP][HP_OP_ALLGATHER] == L * 2 * Nres * D * 4 &&
          full[HP_G_TP][HP_OP_REDUCE_SCATTER] - none[HP_G_TP][HP_OP_REDUCE_SCATTER] == L * 2 * T * Nres * D * 4,
          "tp regions' forward again: all-gather and reduce-scatter of each block");
    CHECK(full[HP_G_CP][HP_OP_ALLGATHER] - none[HP_G_CP][HP_OP_ALLGATHER] == L * 2 * kv_n * 4 &&
          full[HP_G_CP][HP_OP_REDUCE_SCATTER] == none[HP_G_CP][HP_OP_REDUCE_SCATTER],
          "cp: the forward's K/V all-gather again, no backward reduce-scatter more");
    int fsdp_same = 1;
    for (int g = 0; g < HP_G_COUNT; g++)
        for (int op = 0; op < HP_OP_COUNT; op++) {
            fsdp_same &= full[g][op] - none[g][op] == extra[g][op];
            if (g == HP_G_FSDP || g == HP_G_BATCH || g == HP_G_WORLD) fsdp_same &= extra[g][op] == 0;
        }
    CHECK(fsdp_same, "the planner adds hp_traffic_ac_predict; FSDP and the scalars move nothing more");
    // ring: (C-1) K/V sends of the forward; Ulysses: the forward's four all-to-alls
    rc.cp_rotate = HP_ROTATE_RING;
    hp_traffic_ac_predict(&m, &d, &rc, 0, extra);
    CHECK(extra[HP_G_CP][HP_OP_SENDRECV] == L * 1 * 2 * kv_n * 4, "ring: the forward's sends again");
    rc.cp_rotate = HP_ROTATE_ALLGATHER;
    hp_dims du = hp_dims_default();
    du.ulysses = 2; du.world = 2;
    CHECK(hp_dims_validate(&du, &m, &rc, NULL, 0) == 0, "ulysses 2 layout");
    hp_traffic_ac_predict(&m, &du, &rc, 0, extra);
    const uint64_t q_n = 8 * 16 * 8 * 8, kvu = 8 * 16 * 4 * 8;   // Bl x Sc x heads x hd
    CHECK(extra[HP_G_ULYSSES][HP_OP_ALLTOALL] == L * (2 * q_n + 2 * kvu) / 2 * 4,
          "ulysses: q, k, v in and the output back, half of each sent");
    rc.ac_every = 2;   // block 1 only
    hp_traffic_ac_predict(&m, &d, &rc, 0, extra);
    CHECK(hp_traffic_ac_blocks(&m, &d, &rc, 0, NULL) == 1 && extra[HP_G_TP][HP_OP_ALLGATHER] == 2 * Nres * D * 4,
          "every:2 of 2 blocks recomputes one");
}

// --reshard-after-forward (config.h hp_run_unit_keep): which unit stays gathered, the
// all-gathers it costs, and the memory of units kept apart. tiny at dp_shard 2, batch 8.
static void test_reshard_policy(void) {
    CHECK(hp_run_unit_keep(HP_RESHARD_DEFAULT, 1, 0) == HP_KEEP_NONE &&
          hp_run_unit_keep(HP_RESHARD_DEFAULT, 1, 1) == HP_KEEP_BACKWARD &&
          hp_run_unit_keep(HP_RESHARD_DEFAULT, 2, 0) == HP_KEEP_STEP &&
          hp_run_unit_keep(HP_RESHARD_ALWAYS, 1, 1) == HP_KEEP_NONE &&
          hp_run_unit_keep(HP_RESHARD_NEVER, 1, 0) == HP_KEEP_BACKWARD &&
          hp_run_unit_keep(HP_RESHARD_NEVER, 4, 1) == HP_KEEP_STEP,
          "default keeps [norm, output] to its backward (every unit under pp); always none; never all");
    CHECK(hp_run_unit_gathers(HP_KEEP_NONE, 3) == 6 && hp_run_unit_gathers(HP_KEEP_BACKWARD, 3) == 3 &&
          hp_run_unit_gathers(HP_KEEP_STEP, 3) == 1, "all-gathers a step: 2M, M, 1");
    hp_model_config m;
    hp_model_config_by_name("tiny", &m);
    hp_run_config rc;
    hp_run_config_default(&rc);
    rc.batch = 8;
    hp_dims d = layout(1, 2, 1, 1, 1, 1, &m, &rc);
    hp_param_table t;
    if (hp_params_build(&t, &m, &d, 0) != 0) { CHECK(0, "table"); return; }
    uint64_t shard = 0, head = 0, ag[3], bytes[HP_G_COUNT][HP_OP_COUNT];
    for (int i = 0; i < t.n; i++) {
        shard += (uint64_t)t.p[i].shard_numel * 4;
        if (t.p[i].unit == t.n_units - 1) head += (uint64_t)t.p[i].shard_numel * 4;
    }
    const double places = ((double)t.gathered_work + 1) * 4;
    hp_params_free(&t);
    double accumulation[3];
    for (int policy = 0; policy < 3; policy++) {
        rc.reshard_after_forward = (hp_reshard_policy)policy;
        hp_plan_traffic_predict(&m, &d, &rc, 0, bytes, NULL);
        ag[policy] = bytes[HP_G_FSDP][HP_OP_ALLGATHER];
        hp_plan_memory mem;
        CHECK(hp_plan_memory_predict(&m, &d, &rc, 0, &mem) == 0, "predict, policy %d", policy);
        accumulation[policy] = mem.accumulation;
        CHECK(bytes[HP_G_FSDP][HP_OP_REDUCE_SCATTER] == 2 * shard, "policy %d: one reduce-scatter a unit", policy);
    }
    CHECK(ag[HP_RESHARD_ALWAYS] == 2 * shard && ag[HP_RESHARD_DEFAULT] == 2 * shard - head &&
          ag[HP_RESHARD_NEVER] == shard && head > 0,
          "all-gather bytes: always %llu = 2 x %llu, default less the head's %llu, never once",
          (unsigned long long)ag[HP_RESHARD_ALWAYS], (unsigned long long)shard, (unsigned long long)head);
    CHECK(accumulation[HP_RESHARD_DEFAULT] == 0 && accumulation[HP_RESHARD_ALWAYS] == 0 &&
          accumulation[HP_RESHARD_NEVER] == places,
          "never keeps every unit apart: %.0f bytes (one place each), the others nothing", accumulation[HP_RESHARD_NEVER]);
    rc.microbatches = 2;   // accumulation: grads of every unit, and under never their params
    rc.reshard_after_forward = HP_RESHARD_NEVER;
    d = layout(1, 2, 1, 1, 1, 1, &m, &rc);
    hp_plan_traffic_predict(&m, &d, &rc, 0, bytes, NULL);
    hp_plan_memory mem;
    CHECK(hp_plan_memory_predict(&m, &d, &rc, 0, &mem) == 0 && mem.accumulation == 2 * places &&
          bytes[HP_G_FSDP][HP_OP_ALLGATHER] == 2 * shard,
          "never, 2 microbatches: gathered once each (%llu bytes), grads and params kept (%.0f)",
          (unsigned long long)bytes[HP_G_FSDP][HP_OP_ALLGATHER], mem.accumulation);
    // bf16 params (every unit gathered): the kept params in 2 bytes, and a unit's local grads in
    // the work buffer's grads (fsdp.c) - the fp32 sums alone keep 4 bytes a place
    rc.mp_param = HP_DTYPE_BFLOAT16;
    double places16 = -1;
    if (hp_params_build(&t, &m, &d, 0) == 0) {
        hp_params_gather_every_unit(&t);
        places16 = ((double)t.gathered_work + 1) * 4;
        hp_params_free(&t);
    }
    CHECK(hp_plan_memory_predict(&m, &d, &rc, 0, &mem) == 0 && places16 >= places &&
          mem.accumulation == places16 + places16 / 2,
          "never, 2 microbatches, bf16: grads %.0f and params in 2 bytes, %.0f in all", places16, mem.accumulation);
    rc.mp_param = HP_DTYPE_FLOAT32;
    char err[256];
    hp_dims dp = hp_dims_default();
    dp.pp = 2; dp.dp_shard = 1; dp.world = 2;
    hp_model_config m4 = m;
    m4.n_layers = 4;
    rc.reshard_after_forward = HP_RESHARD_ALWAYS;
    CHECK(hp_dims_validate(&dp, &m4, &rc, err, sizeof err) != 0 && strstr(err, "needs pp 1") && strstr(err, "pp = 2"),
          "always under pp is refused: %s", err);
    const char *bad = "sometimes";
    hp_reshard_policy got = HP_RESHARD_DEFAULT;
    CHECK(hp_run_config_parse_reshard("never", &got, err, sizeof err) == 0 && got == HP_RESHARD_NEVER &&
          hp_run_config_parse_reshard(bad, &got, err, sizeof err) == -1 && strstr(err, "'sometimes'") &&
          got == HP_RESHARD_NEVER, "--reshard-after-forward spellings");
}

// hp_plan_memory_busiest: the pp rank of the largest predicted peak (its prediction whole),
// the largest buffer over every pp rank, and hp_plan_memory_predict itself at pp 1.
static void test_busiest(void) {
    hp_model_config m;
    hp_run_config rc;
    hp_dims d;
    if (pp_setup(&m, &rc, &d, 2, 4, 8, HP_PP_1F1B) != 0) return;
    char err[512];
    double peak[4], largest = 0;
    int want = 0;
    for (int p = 0; p < 4; p++) {
        hp_plan_memory mem;
        CHECK(hp_plan_memory_predict(&m, &d, &rc, p * 2 + 1, &mem) == 0, "predict pp rank %d", p);
        peak[p] = mem.peak;
        if (mem.peak > peak[want]) want = p;
        if (mem.largest_elems > largest) largest = mem.largest_elems;
    }
    CHECK(peak[0] != peak[3], "the stages' peaks differ (1f1b: stage 0 keeps 4 in flight, the last the head)");
    hp_plan_memory b;
    int rank = -1;
    CHECK(hp_plan_memory_busiest(&m, &d, &rc, 1, &b, &rank) == 0, "busiest of rank 1's pp ranks");
    CHECK(rank == want * 2 + 1 && b.peak == peak[want], "busiest: world rank %d (peak %.0f), want %d (%.0f)",
          rank, b.peak, want * 2 + 1, peak[want]);
    CHECK(b.largest_elems == largest, "busiest: the largest buffer over every pp rank");
    hp_dims one = hp_dims_default();
    one.dp_shard = 2; one.world = 2;
    if (hp_dims_validate(&one, &m, &rc, err, sizeof err) != 0) { CHECK(0, "layout: %s", err); return; }
    hp_plan_memory p1, q1;
    CHECK(hp_plan_memory_busiest(&m, &one, &rc, 1, &p1, &rank) == 0 &&
          hp_plan_memory_predict(&m, &one, &rc, 1, &q1) == 0, "pp 1: busiest and predict");
    CHECK(rank == 1 && p1.peak == q1.peak && p1.persistent == q1.persistent &&
          p1.largest_elems == q1.largest_elems, "pp 1: busiest == predict of the rank itself");
}

int main(void) {
    test_async_slots();
    test_busiest();
    test_units_in_shards();
    test_param_counts();
    test_table_is_small();
    test_hf_reader();
    test_memory_rules();
    test_traffic_and_flops();
    test_float8_expert_traffic();
    test_pp_in_flight();
    test_ac_memory();
    test_ac_traffic();
    test_reshard_policy();
    return test_summary("test_plan");
}
