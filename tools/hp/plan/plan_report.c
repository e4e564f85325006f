// plan_report.c - `hp plan --memory [--hw NAME] [--json FILE]`: a rank's bytes by category,
// its traffic per (group, op), its FLOPs and, on named hardware, a step-time model; and the
// stride summary of the groups of a big world.
// defines: tool_plan_check_flags, tool_plan_parse_size, tool_plan_ac_name, tool_plan_memory_cmd,
//          tool_plan_print_group_strides
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "hyperpar/float8.h"
#include "hyperpar/mesh.h"
#include "hyperpar/plan.h"
#include "hyperpar/traffic.h"
#include "plan_tool.h"
#include "util/file_io.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

int tool_plan_parse_size(const char *s, double *bytes) {
    char *end;
    const double v = strtod(s, &end);
    if (end == s || !(v > 0) || v > 1e18) return -1;
    static const struct { const char *unit; double scale; } units[] = {
        { "", 1 }, { "B", 1 }, { "KiB", 1024.0 }, { "MiB", 1048576.0 }, { "GiB", GIB },
        { "TiB", GIB * 1024 }, { "KB", 1e3 }, { "MB", 1e6 }, { "GB", 1e9 }, { "TB", 1e12 },
    };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(end, units[i].unit)) { *bytes = v * units[i].scale; return 0; }
    return -1;
}

int tool_plan_check_flags(tool_cli *cli) {
    hp_plan_hw hw;
    if (cli->hw && hp_plan_hw_by_name(cli->hw, &hw) != 0) {
        fprintf(stderr, "hp: --hw expects h100, h200, mi300x or cpu, got '%s'\n", cli->hw);
        return HP_EXIT_CONFIG;
    }
    double b;
    if (cli->mem_per_rank && tool_plan_parse_size(cli->mem_per_rank, &b) != 0) {
        fprintf(stderr, "hp: --mem-per-rank expects a size > 0 such as 80GiB or 141GB, got '%s'\n",
                cli->mem_per_rank);
        return HP_EXIT_CONFIG;
    }
    if (cli->plan_world && cli->nproc && cli->plan_world != cli->nproc) {
        fprintf(stderr, "hp: --world (%d) and --nproc (%d) name two world sizes; give one\n",
                cli->plan_world, cli->nproc);
        return HP_EXIT_CONFIG;
    }
    if (cli->plan_world) cli->nproc = cli->plan_world;
    return 0;
}

// ---------------------------------------------------------------------------------------
// --memory

void tool_plan_ac_name(char *buf, size_t n, int ac_every) {
    if (ac_every == 0) snprintf(buf, n, "none");
    else if (ac_every == 1) snprintf(buf, n, "full");
    else snprintf(buf, n, "every:%d", ac_every);
}

static void commas(char *buf, size_t n, long long v) {
    char digits[32];
    snprintf(digits, sizeof digits, "%lld", v);
    const size_t len = strlen(digits);
    size_t o = 0;
    for (size_t i = 0; i < len && o + 2 < n; i++) {
        if (i && (len - i) % 3 == 0) buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
}

static void row(const char *what, double bytes, const char *note) {
    printf("  %-26s %14.0f B  %10.3f GiB  %s\n", what, bytes, bytes / GIB, note);
}

static cJSON *memory_json(const hp_plan_memory *mem) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "persistent_bytes", mem->persistent);
    cJSON_AddNumberToObject(j, "peak_bytes", mem->peak);
    cJSON_AddNumberToObject(j, "params_bytes", mem->params);
    cJSON_AddNumberToObject(j, "grads_bytes", mem->grads);
    cJSON_AddNumberToObject(j, "optimizer_bytes", mem->optimizer);
    cJSON_AddNumberToObject(j, "fsdp_working_bytes", mem->fsdp_working);
    cJSON_AddNumberToObject(j, "comm_scratch_bytes", mem->comm_scratch);
    cJSON_AddNumberToObject(j, "accumulation_bytes", mem->accumulation);
    cJSON_AddNumberToObject(j, "activation_bytes", mem->activations);
    cJSON_AddNumberToObject(j, "activation_uniform_bytes", mem->activations_uniform);
    if (mem->pp_in_flight) cJSON_AddNumberToObject(j, "pp_in_flight", mem->pp_in_flight);
    cJSON_AddNumberToObject(j, "activation_recompute_bytes", mem->activations_recompute);
    cJSON_AddNumberToObject(j, "activation_full_ac_bytes", mem->activations_full_ac);
    cJSON_AddNumberToObject(j, "scratch_bytes", mem->scratch);
    return j;
}

// The element sizes the memory prediction used, as plan_memory.c and plan_activations.c count
// them: a label that says the dtype it predicted, not fp32 whatever the policy.
static void print_memory_dtypes(const hp_dims *d, const hp_run_config *rc, int rank) {
    if (rc->mp_param != HP_DTYPE_BFLOAT16) {
        printf("\nmemory on rank %d (predicted; fp32, 4 bytes an element; docs/planner.md)\n", rank);
        return;
    }
    const int f8ag = rc->float8_fsdp_all_gather && rc->float8 == HP_FLOAT8_TENSORWISE;
    const int kept_2 = hp_run_units_kept_apart(rc->reshard_after_forward, d->pp) && !f8ag;
    printf("\nmemory on rank %d (predicted; the bf16 policy; docs/planner.md, \"bf16 mixed precision\")\n", rank);
    if (hp_run_bf16_stored(rc))
        printf("  2 bytes an element: the activations the blocks keep (block inputs, the stored fields, the\n"
               "    head's input, gf and logits, a MoE block's bf16 fields, Ulysses' q, k, v)%s;\n"
               "  4 bytes (fp32): the master parameters, gradients, optimizer state, FSDP working buffers,\n"
               "    communication and backward scratch, the shared set the blocks run in, the statistics\n",
               kept_2 ? " and the units kept gathered apart" : "");
    else if (kept_2 || d->pp > 1)   // float8 keeps fp32 activations: the kept units, the pp sends
        printf("  2 bytes an element: %s%s%s;\n  4 bytes (fp32): everything else, the activations the blocks "
               "keep included (float8 keeps them in fp32)\n", kept_2 ? "the units kept gathered apart" : "",
               kept_2 && d->pp > 1 ? " and " : "", d->pp > 1 ? "the send copies of the pp stream" : "");
    else
        printf("  4 bytes (fp32) an element, the activations included: float8 keeps them in fp32, and\n"
               "    the bf16 policy's 2-byte buffers (kept units, pp sends) do not occur in this layout\n");
}

// What the wire bytes are made of, for the time model's assumptions (docs/precision.md's table).
static const char *wire_dtypes(const hp_run_config *rc) {
    const int f8ag = rc->float8_fsdp_all_gather && rc->float8 == HP_FLOAT8_TENSORWISE;
    if (rc->mp_param != HP_DTYPE_BFLOAT16)
        return f8ag ? "fp32, 4 bytes an element, but the parameter all-gather in 1 (fp8)"
                    : "fp32 everywhere, 4 bytes an element";
    if (rc->mp_reduce == HP_DTYPE_BFLOAT16)
        return f8ag ? "the bf16 policy: the parameter all-gather in 1 byte an element (fp8), other gathered "
                      "values and the FSDP / dp reductions in 2, the TP, CP and MoE sums in 4"
                    : "the bf16 policy: gathered values and the FSDP / dp reductions in 2 bytes an element, "
                      "the TP, CP and MoE sums in 4";
    return f8ag ? "the bf16 policy: the parameter all-gather in 1 byte an element (fp8), other gathered values "
                  "(SP, CP K/V, MoE dispatch, Ulysses, pp sends) in 2, reductions in 4"
                : "the bf16 policy: gathered values (FSDP and SP all-gathers, CP K/V, MoE dispatch, Ulysses, "
                  "pp sends) in 2 bytes an element, reductions in 4";
}

int tool_plan_memory_cmd(const tool_cli *cli, const hp_dims *d) {
    const hp_model_config *m = &cli->model;
    const hp_run_config *rc = &cli->run;
    const int rank = cli->rank;
    hp_plan_memory mem;
    if (hp_plan_memory_predict(m, d, rc, rank, &mem) != 0 || hp_plan_memory_full_ac(m, d, rc, rank, &mem) != 0) {
        fprintf(stderr, "hp: out of memory predicting the memory of rank %d\n", rank);
        return HP_EXIT_FAIL;
    }
    char n[32];
    commas(n, sizeof n, (long long)mem.params_total);
    printf("\nparams_total %s (%lld)\n", n, (long long)mem.params_total);
    print_memory_dtypes(d, rc, rank);
    row("parameters", mem.params, "this rank's padded FSDP shard");
    row("gradients", mem.grads, "the same shard");
    row("optimizer state", mem.optimizer, "AdamW m and v shards (allocated for sgd too)");
    row("FSDP working buffers", mem.fsdp_working, "the largest unit gathered, and its grads");
    row("communication scratch", mem.comm_scratch, "gather / reduce-scatter staging");
    if (mem.accumulation > 0)
        row("accumulation buffers", mem.accumulation,
            "every unit's grads over the microbatches, params kept (pp; reshard never)");
    char acts_note[200], ac[32];
    tool_plan_ac_name(ac, sizeof ac, rc->ac_every);
    if (d->pp > 1)
        snprintf(acts_note, sizeof acts_note, "kept for the backward, AC %s: %d microbatches in flight "
                 "x this rank's stages%s", ac, mem.pp_in_flight, rc->ac_every ? " + one recompute set" : "");
    else
        snprintf(acts_note, sizeof acts_note, "kept for the backward, 1 microbatch, AC %s%s", ac,
                 rc->ac_every ? " (block inputs + one recompute set)" : "");
    const int stored = hp_run_bf16_stored(rc);
    if (stored) {   // (bf16 storage: the note says where the 2 bytes are)
        const size_t used = strlen(acts_note);
        snprintf(acts_note + used, sizeof acts_note - used, "; bf16 ones in 2 bytes");
    }
    row("activations", mem.activations, acts_note);
    if (mem.activations_recompute > 0)
        row(stored ? "  of which shared set" : "  of which recompute set", mem.activations_recompute,
            stored ? "one block's fp32 buffers (and two stream buffers), the checkpointed and stored blocks run in"
                   : "one block's buffers, shared by the checkpointed blocks");
    if (mem.activations_uniform != mem.activations)
        row("  if routing were uniform", mem.activations_uniform,
            "expert rows sized n*K, not for the worst rank's ep*n*K (what hyperpar allocates)");
    row("backward scratch", mem.scratch, "block backward, ring K/V, token ids");
    row("persistent", mem.persistent, "parameters + gradients + optimizer state");
    row("peak", mem.peak, "all of the above");
    if (mem.activations_full_ac > 0 && rc->ac_every != 1)
        row("activations with --ac full", mem.activations_full_ac,
            "each block keeps its input, one recompute set (not in the peak)");

    // under pp the stages differ: the peak of every pp rank with this rank's inner coordinates
    int worst_rank = rank;
    hp_plan_memory busiest;
    double worst_peak = hp_plan_memory_busiest(m, d, rc, rank, &busiest, &worst_rank) == 0 ? busiest.peak : mem.peak;
    if (d->pp > 1)
        printf("  %-26s %14.0f B  %10.3f GiB  rank %d, of the %d pp ranks with rank %d's inner coordinates\n",
               "worst pp rank's peak", worst_peak, worst_peak / GIB, worst_rank, d->pp, rank);

    uint64_t bytes[HP_G_COUNT][HP_OP_COUNT], ep_worst = 0, formula[HP_G_COUNT][HP_OP_COUNT];
    hp_plan_traffic_predict(m, d, rc, rank, bytes, &ep_worst);
    hp_traffic_predict(m, d, rc, rank, formula);   // (UINT64_MAX: routing-dependent)
    printf("\ntraffic per step on rank %d (bytes as comm.h counts them; docs/traffic.md)\n", rank);
    cJSON *traffic = cJSON_CreateObject();
    for (int g = 0; g < HP_G_COUNT; g++) {
        cJSON *ops = NULL;
        for (int op = 0; op < HP_OP_COUNT; op++) {
            if (!bytes[g][op]) continue;
            const int size = hp_mesh_group_size(d, (hp_group_kind)g);
            const int ep_a2a = g == HP_G_EP && op == HP_OP_ALLTOALL;
            printf("  %-13s %-15s %20llu  (wire %.0f, group of %d)%s\n", hp_group_name((hp_group_kind)g),
                   hp_op_name((hp_op_kind)op), (unsigned long long)bytes[g][op],
                   hp_plan_wire_bytes((hp_op_kind)op, bytes[g][op], size), size,
                   formula[g][op] == UINT64_MAX ? "  expected under uniform routing" : "");
            if (ep_a2a) printf("  %-13s %-15s %20llu  the worst rank (every entry of the ep group)\n",
                               "", "", (unsigned long long)ep_worst);
            if (!ops) ops = cJSON_AddObjectToObject(traffic, hp_group_name((hp_group_kind)g));
            cJSON_AddNumberToObject(ops, hp_op_name((hp_op_kind)op), (double)bytes[g][op]);
        }
    }

    hp_plan_flops f;
    hp_plan_flops_predict(m, d, rc, &f);
    printf("\nFLOPs per step: %.4g in all, %.4g per rank (%.4g a token forward; %lld active "
           "parameters a token multiplies)\n", f.step_total, f.per_rank, f.per_token_fwd,
           (long long)f.params_active);
    if (f.recompute_per_rank > 0)
        printf("  AC %s recomputes %.4g FLOPs per rank more (forwards of the checkpointed blocks; "
               "not in the MFU)\n", ac, f.recompute_per_rank);

    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "model", m->name);
    cJSON_AddNumberToObject(root, "world", d->world);
    cJSON_AddNumberToObject(root, "rank", rank);
    cJSON_AddNumberToObject(root, "params_total", (double)mem.params_total);
    cJSON_AddStringToObject(root, "ac", ac);
    cJSON_AddStringToObject(root, "reshard_after_forward", hp_run_reshard_name(rc->reshard_after_forward));
    cJSON_AddStringToObject(root, "mixed_precision_param",   // the policy the bytes were predicted for
                            rc->mp_param == HP_DTYPE_BFLOAT16 ? "bfloat16" : "float32");
    cJSON_AddItemToObject(root, "memory", memory_json(&mem));
    cJSON *jw = cJSON_AddObjectToObject(root, "worst_rank");
    cJSON_AddNumberToObject(jw, "rank", worst_rank);
    cJSON_AddNumberToObject(jw, "peak_bytes", worst_peak);
    cJSON_AddItemToObject(root, "traffic", traffic);
    cJSON_AddNumberToObject(root, "flops_per_rank", f.per_rank);

    hp_plan_hw hw;
    if (cli->hw && hp_plan_hw_by_name(cli->hw, &hw) == 0) {
        hw.ranks_per_node = tool_plan_ranks_per_node(cli);
        hp_plan_time t;
        hp_plan_time_predict(m, d, rc, rank, &hw, &t);
        printf("\nstep time on %s: a MODEL, not a measurement; its assumptions:\n", hw.name);
        printf("  assume: %s\n", hw.source);
        printf("  assume: compute at %.2f of the %.4g FLOP/s peak, on every rank alike\n", hw.matmul_eff, hw.peak_flops);
        printf("  assume: nodes of %d consecutive ranks; a group inside one node moves %.4g B/s per rank, "
               "one across nodes %.4g B/s\n", hw.ranks_per_node, hw.intra_bw, hw.inter_bw);
        printf("  assume: wire bytes by comm.h's rules, as hyperpar moves them (%s), no latency\n",
               wire_dtypes(rc));
        printf("  assume: MoE routing uniform; activation checkpointing %s\n", ac);
        if (d->pp > 1)
            printf("  assume: pp %d: compute idles for the schedule's ideal bubble, %.1f%% of the step "
                   "(%d microbatches); stage sends at the inter-node rate\n", d->pp, 100 * t.pp_bubble,
                   hp_run_microbatches(rc));
        printf("  compute %.4g s, communication %.4g s (%.4g s of it between nodes, %.4g B)\n",
               t.compute_s, t.comm_s, t.comm_inter_s, t.inter_bytes);
        printf("  step %.4g s without overlap (MFU %.1f%%), %.4g s with perfect overlap (MFU %.1f%%)\n",
               t.step_serial_s, 100 * t.mfu_serial, t.step_overlap_s, 100 * t.mfu_overlap);
        if (hw.mem_bytes > 0)
            printf("  fits: peak %.1f GiB of %.1f GiB per rank: %s\n", mem.peak / GIB, hw.mem_bytes / GIB,
                   mem.peak <= hw.mem_bytes ? "yes" : "NO");
        cJSON *jt = cJSON_AddObjectToObject(root, "time_model");
        cJSON_AddStringToObject(jt, "hw", hw.name);
        cJSON_AddNumberToObject(jt, "compute_s", t.compute_s);
        cJSON_AddNumberToObject(jt, "pp_bubble", t.pp_bubble);
        cJSON_AddNumberToObject(jt, "comm_s", t.comm_s);
        cJSON_AddNumberToObject(jt, "step_serial_s", t.step_serial_s);
        cJSON_AddNumberToObject(jt, "step_overlap_s", t.step_overlap_s);
        cJSON_AddNumberToObject(jt, "mfu_serial", t.mfu_serial);
        cJSON_AddNumberToObject(jt, "mfu_overlap", t.mfu_overlap);
    }
    int rc_out = HP_EXIT_OK;
    if (cli->json_out && !strcmp(cli->json_out, "-")) {
        char *s = cJSON_Print(root);
        if (s) printf("%s\n", s);
        free(s);
    } else if (cli->json_out && hp_json_save(root, cli->json_out) != 0) {
        fprintf(stderr, "hp: --json: cannot write '%s'\n", cli->json_out);
        rc_out = HP_EXIT_CONFIG;
    }
    cJSON_Delete(root);
    return rc_out;
}

// ---------------------------------------------------------------------------------------
// groups by stride

int tool_plan_ranks_per_node(const tool_cli *cli) {
    hp_plan_hw hw;
    if (cli->ranks_per_node > 0) return cli->ranks_per_node;
    if (cli->hw && hp_plan_hw_by_name(cli->hw, &hw) == 0) return hw.ranks_per_node;
    return 8;
}

void tool_plan_print_group_strides(FILE *out, const hp_dims *d, int ranks_per_node) {
    int *members = malloc((size_t)d->world * sizeof *members);
    if (!members) { fprintf(stderr, "hp: out of memory\n"); return; }
    fprintf(out, "groups (%d ranks: rank 0's group of each kind, by stride; --ranks lists every group)\n", d->world);
    for (int g = 0; g < HP_G_COUNT; g++) {
        const int n = hp_mesh_group(d, (hp_group_kind)g, 0, members, NULL);
        int stride = n > 1 ? members[1] - members[0] : 0, regular = 1;
        for (int i = 2; i < n; i++) regular &= members[i] - members[i - 1] == stride;
        char shape[96];
        if (n == 1) snprintf(shape, sizeof shape, "{0}");
        else if (regular) snprintf(shape, sizeof shape, "{0, %d, ..., %d} stride %d", members[1], members[n - 1], stride);
        else snprintf(shape, sizeof shape, "{%d, %d, ..., %d} (blocks)", members[0], members[1], members[n - 1]);
        char where[48] = "";
        if (n > 1)
            snprintf(where, sizeof where, "%s %d", hp_plan_group_in_node(d, (hp_group_kind)g, 0, ranks_per_node)
                                                       ? "inside a node of" : "across nodes of", ranks_per_node);
        fprintf(out, "  %-13s %6d x %-6d %-40s %s\n", hp_group_name((hp_group_kind)g), d->world / n, n, shape, where);
    }
    free(members);
}

void tool_plan_print_node_groups(FILE *out, const hp_dims *d, int ranks_per_node) {
    char inside[256] = "", across[256] = "";
    int *members = malloc((size_t)d->world * sizeof *members);
    char *seen = malloc((size_t)d->world);
    if (!members || !seen) { free(members); free(seen); fprintf(stderr, "hp: out of memory\n"); return; }
    for (int g = 0; g < HP_G_COUNT; g++) {
        if (hp_mesh_group_size(d, (hp_group_kind)g) <= 1) continue;
        int in = 1;   // every group of the kind, each once
        memset(seen, 0, (size_t)d->world);
        for (int r = 0; r < d->world && in; r++) {
            if (seen[r]) continue;
            const int n = hp_mesh_group(d, (hp_group_kind)g, r, members, NULL);
            for (int i = 0; i < n; i++) {
                seen[members[i]] = 1;
                in &= members[i] / ranks_per_node == r / ranks_per_node;
            }
        }
        char *list = in ? inside : across;
        snprintf(list + strlen(list), sizeof inside - strlen(list), "%s%s", *list ? ", " : "",
                 hp_group_name((hp_group_kind)g));
    }
    free(members);
    free(seen);
    fprintf(out, "nodes of %d consecutive ranks (%d node%s): inside a node: %s; across nodes: %s\n", ranks_per_node,
            (d->world + ranks_per_node - 1) / ranks_per_node, d->world > ranks_per_node ? "s" : "",
            *inside ? inside : "none", *across ? across : "none");
}
