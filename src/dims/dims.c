// dims.c - parallel degrees: defaults, inference of dp_shard, and every validation rule.
// spec: docs/torchtitan.md §1, §3; docs/recipes.md (negative cases).
// defines: hp_dims_default, hp_dims_validate
//
// The rules run in a fixed order so that one configuration always fails the same way:
// mesh rules (degrees, pp, dp_shard inference, world, ep/etp) first, then the model's sizes,
// then the run's sizes. Each failure is one line that starts with the rule and gives the numbers.
#include <stdarg.h>
#include <stdio.h>
#include "hyperpar/dims.h"
#include "hyperpar/pipeline.h"
#include "hyperpar/shapes.h"

hp_dims hp_dims_default(void) {
    hp_dims d = { .dp_replicate = 1, .dp_shard = -1, .ulysses = 1, .cp = 1, .tp = 1, .pp = 1,
                  .pp_schedule = 1 /* 1f1b */, .pp_virtual = 0,
                  .ep = 1, .etp = 1, .sp = -1, .world = 0 };
    return d;
}

// Writes one line into err (when there is room) and returns HP_EXIT_CONFIG.
static int fail(char *err, size_t errlen, const char *fmt, ...) {
    if (err && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return HP_EXIT_CONFIG;
}

// ---------------------------------------------------------------------------------------------
// mesh rules (§1 steps 1-6, ETP era)

static int check_mesh(hp_dims *d, char *err, size_t n) {
    const struct { const char *name; int v; } deg[] = {
        { "dp_replicate", d->dp_replicate }, { "ulysses", d->ulysses }, { "cp", d->cp }, { "tp", d->tp },
        { "pp", d->pp }, { "ep", d->ep }, { "etp", d->etp },
    };
    for (size_t i = 0; i < sizeof deg / sizeof deg[0]; i++)
        if (deg[i].v < 1)
            return fail(err, n, "degree must be >= 1 (except dp_shard): %s = %d", deg[i].name, deg[i].v);
    if (d->dp_shard == 0 || d->dp_shard < -1)
        return fail(err, n, "dp_shard must be -1 (infer) or >= 1: dp_shard = %d", d->dp_shard);
    // bounded first, so that no product of degrees below can overflow
    for (size_t i = 0; i < sizeof deg / sizeof deg[0]; i++)
        if (deg[i].v > HP_DIMS_MAX_DEGREE)
            return fail(err, n, "degree must be <= %d: %s = %d", HP_DIMS_MAX_DEGREE, deg[i].name, deg[i].v);
    if (d->dp_shard > HP_DIMS_MAX_DEGREE)
        return fail(err, n, "degree must be <= %d: dp_shard = %d", HP_DIMS_MAX_DEGREE, d->dp_shard);
    if (d->sp < -1 || d->sp > 1)
        return fail(err, n, "sp must be -1 (default), 0 or 1: sp = %d", d->sp);
    if (d->world < 0)
        return fail(err, n, "world size must be >= 1 (0 = the product of the degrees): world = %d", d->world);
    if (d->pp_schedule < 0 || d->pp_schedule >= HP_PP_SCHEDULES)
        return fail(err, n, "pp schedule must be gpipe, 1f1b, interleaved-1f1b or zbv: schedule = %d",
                    d->pp_schedule);
    if (d->pp_virtual < 0 || d->pp_virtual > 64)
        return fail(err, n, "pp_virtual (stages per pp rank) must be in [1, 64]: pp_virtual = %d", d->pp_virtual);
    if (d->pp > 1) {
        const int V = hp_pp_virtual(d), sch = d->pp_schedule;
        if ((sch == HP_PP_GPIPE || sch == HP_PP_1F1B) && V != 1)
            return fail(err, n, "pipeline schedule %s runs one stage per pp rank: pp_virtual = %d",
                        hp_pp_schedule_name(sch), V);
        if (sch == HP_PP_INTERLEAVED_1F1B && V < 2)
            return fail(err, n, "pipeline schedule interleaved-1f1b needs pp_virtual >= 2: pp_virtual = %d", V);
        if (sch == HP_PP_ZBV && V != 2)
            return fail(err, n, "pipeline schedule zbv needs pp_virtual = 2: pp_virtual = %d", V);
        if ((long long)d->pp * V > HP_PP_MAX_STAGES)
            return fail(err, n, "pipeline stages pp*pp_virtual = %d*%d exceed %d", d->pp, V, HP_PP_MAX_STAGES);
    }

    const int R = d->dp_replicate, C = d->cp, T = d->tp, P = d->pp, U = d->ulysses;
    // Guard the products against int overflow on absurd input (every degree is >= 1 here;
    // each is at most 2^24, so two of them fit a long long, and each step is checked).
    long long rctp = (long long)R * C;
    rctp = rctp > (1 << 24) ? rctp : rctp * T;
    rctp = rctp > (1 << 24) ? rctp : rctp * P;
    rctp = rctp > (1 << 24) ? rctp : rctp * U;
    if (rctp > (1 << 24) || (d->dp_shard > 0 && rctp * d->dp_shard > (1 << 24)))
        return fail(err, n, "world size: product of the degrees is too large (dp_replicate*dp_shard*cp*tp*pp > %d)",
                    1 << 24);

    if (d->dp_shard == -1) {
        if (d->world == 0) {
            d->dp_shard = 1;   // no world given: nothing to infer from, the product decides
        } else {
            long long s = d->world / rctp;
            if (s < 1 || d->world % rctp != 0)
                return U > 1 ? fail(err, n, "dp_shard inference: world size %d is not a multiple of "
                                    "dp_replicate*ulysses*cp*tp*pp = %d*%d*%d*%d*%d = %lld",
                                    d->world, R, U, C, T, P, rctp)
                             : fail(err, n, "dp_shard inference: world size %d is not a multiple of "
                                    "dp_replicate*cp*tp*pp = %d*%d*%d*%d = %lld",
                                    d->world, R, C, T, P, rctp);
            d->dp_shard = (int)s;
        }
    }
    const int S = d->dp_shard;
    int prod = hp_dims_product(d);
    if (d->world == 0) d->world = prod;
    if (prod != d->world && U > 1)
        return fail(err, n, "world size: dp_replicate(%d)*dp_shard(%d)*ulysses(%d)*cp(%d)*tp(%d)*pp(%d) = %d != %d ranks launched",
                    R, S, U, C, T, P, prod, d->world);
    if (prod != d->world)
        return fail(err, n, "world size: dp_replicate(%d)*dp_shard(%d)*cp(%d)*tp(%d)*pp(%d) = %d != %d ranks launched",
                    R, S, C, T, P, prod, d->world);

    const int EP = d->ep, ET = d->etp;
    if (ET > 1 && EP == 1)
        return fail(err, n, "etp (%d) > 1 needs ep > 1: ep = %d", ET, EP);
    if (EP > 1 && ET != 1 && ET != T)
        return fail(err, n, "etp must be 1 or tp when ep > 1: etp = %d, tp = %d", ET, T);
    // EP borrows ranks of the dp_shard*ulysses*cp*tp block (ulysses.md)
    const int SC = S * U * C;
    if ((SC * T) % EP != 0 && U > 1)
        return fail(err, n, "ep (%d) must divide dp_shard*ulysses*cp*tp = %d*%d*%d*%d = %d", EP, S, U, C, T, SC * T);
    if ((SC * T) % EP != 0)
        return fail(err, n, "ep (%d) must divide dp_shard*cp*tp = %d*%d*%d = %d", EP, S, C, T, S * C * T);
    // etp == tp: the tp coordinate is the etp coordinate, so ep must fit in the dp_shard*cp part.
    if (EP > 1 && ET == T && T > 1 && SC % EP != 0)
        return fail(err, n, "ep (%d) must divide dp_shard*%scp = %d*%d = %d when etp = tp (%d)",
                    EP, U > 1 ? "ulysses*" : "", S, SC / S, SC, T);

    // sequence parallel: default on iff tp > 1; asking for it at tp == 1 is a no-op.
    if (d->sp == -1) d->sp = T > 1;
    if (d->sp == 1 && T == 1) d->sp = 0;
    return 0;
}

// ---------------------------------------------------------------------------------------------
// model rules: sizes that a degree must divide (model.md "Config")

static int check_model(const hp_dims *d, const hp_model_config *m, char *err, size_t n) {
    const int T = d->tp, EP = d->ep;
    if (d->pp > 1 && m->n_layers < d->pp * hp_pp_virtual(d))
        return fail(err, n, "pipeline: n_layers (%d) must be >= pp*pp_virtual = %d*%d = %d stages "
                    "(--layers N deepens the model)", m->n_layers, d->pp, hp_pp_virtual(d),
                    d->pp * hp_pp_virtual(d));
    const int moe = m->num_experts > 0;
    if (EP > 1 && !moe)
        return fail(err, n, "ep (%d) > 1 needs a MoE model: '%s' is dense (num_experts = 0)", EP, m->name);
    if (moe && m->num_experts % EP != 0)
        return fail(err, n, "ep (%d) must divide num_experts (%d)", EP, m->num_experts);
    const struct { const char *name; int v; } tp_sizes[] = {
        { "n_heads", m->n_heads }, { "n_kv_heads", m->n_kv_heads },
        { "ffn_hidden", m->ffn_hidden }, { "vocab_size", m->vocab_size },
    };
    for (size_t i = 0; i < sizeof tp_sizes / sizeof tp_sizes[0]; i++)
        if (tp_sizes[i].v % T != 0)
            return fail(err, n, "tp (%d) must divide %s (%d)", T, tp_sizes[i].name, tp_sizes[i].v);
    // Ulysses scatters the tp-local heads over its ranks (ulysses.md, step 2)
    const int U = d->ulysses;
    if (U > 1 && m->n_heads % (T * U) != 0)
        return fail(err, n, "ulysses: tp*ulysses = %d*%d = %d must divide n_heads (%d)", T, U, T * U, m->n_heads);
    const int kv_t = m->n_kv_heads / T;
    if (U > 1 && !(kv_t >= U ? kv_t % U == 0 : U % kv_t == 0))
        return fail(err, n, "ulysses: the kv heads per tp rank n_kv_heads/tp = %d/%d = %d and ulysses (%d) "
                    "must divide one another", m->n_kv_heads, T, kv_t, U);
    if (moe) {
        int etp = hp_dims_expert_tp(d);
        if (etp > 1 && m->moe_hidden % etp != 0)
            return fail(err, n, "expert tp (%d, %s) must divide moe_hidden (%d)", etp,
                        EP > 1 ? "etp" : "tp when ep = 1", m->moe_hidden);
        int shared = m->moe_hidden * m->n_shared_experts;
        if (T > 1 && shared % T != 0)
            return fail(err, n, "tp (%d) must divide the shared-expert width moe_hidden*n_shared = %d*%d = %d",
                        T, m->moe_hidden, m->n_shared_experts, shared);
    }
    return 0;
}

// ---------------------------------------------------------------------------------------------
// run rules: how one global batch of seq_len tokens splits over the mesh (§3 seq_len_divisor)

static int check_run(const hp_dims *d, const hp_run_config *rc, char *err, size_t n) {
    const int R = d->dp_replicate, S = d->dp_shard, C = d->cp, T = d->tp;
    if (rc->seq_len < 1)
        return fail(err, n, "seq_len must be >= 1: seq_len = %d", rc->seq_len);
    if (rc->batch < 1)
        return fail(err, n, "global batch must be >= 1: batch = %d", rc->batch);
    // load-balanced CP cuts each sequence into 2*cp chunks; with SP each chunk splits over tp.
    if (C > 1 && rc->seq_len % (2 * C * T) != 0)
        return fail(err, n, "context parallel: 2*cp*tp = 2*%d*%d = %d must divide seq_len (%d)",
                    C, T, 2 * C * T, rc->seq_len);
    // Ulysses cuts the cp-local tokens into U contiguous parts, then SP each part over tp
    const int U = d->ulysses, div = (C > 1 ? 2 * C : 1) * U * T;
    if (U > 1 && rc->seq_len % div != 0)
        return fail(err, n, "ulysses: %sulysses*tp = %d must divide seq_len (%d)",
                    C > 1 ? "2*cp*" : "", div, rc->seq_len);
    if (d->sp == 1 && rc->seq_len % T != 0)
        return fail(err, n, "sequence parallel: tp (%d) must divide seq_len (%d)", T, rc->seq_len);
    if (rc->batch % (R * S) != 0)
        return fail(err, n, "dp_replicate*dp_shard = %d*%d = %d must divide the global batch (%d)",
                    R, S, R * S, rc->batch);
    if (rc->ac_every < 0)
        return fail(err, n, "activation checkpointing: every N-th block needs N >= 1 (0 = none): "
                    "ac_every = %d", rc->ac_every);
    if (rc->ac_every > 0 && d->pp > 1 && d->pp_schedule == HP_PP_ZBV)
        return fail(err, n, "--ac is not defined for --pp-schedule zbv: its W half would need the "
                    "recomputed activations after the I half (ac_every = %d)", rc->ac_every);
    if (rc->reshard_after_forward == HP_RESHARD_ALWAYS && d->pp > 1)
        return fail(err, n, "--reshard-after-forward always needs pp 1: under pp a unit is gathered "
                    "once per step and kept until its last backward (pipeline.md), pp = %d", d->pp);
    if ((unsigned)rc->mp_param > HP_DTYPE_BFLOAT16 || (unsigned)rc->mp_reduce > HP_DTYPE_BFLOAT16)
        return fail(err, n, "mixed precision dtypes are float32 (0) or bfloat16 (1): param %d, reduce %d",
                    (int)rc->mp_param, (int)rc->mp_reduce);
    if (rc->mp_reduce == HP_DTYPE_BFLOAT16 && rc->mp_param != HP_DTYPE_BFLOAT16)
        return fail(err, n, "--mixed-precision-reduce bfloat16 needs --mixed-precision-param bfloat16 "
                    "(a float32 policy has nothing in bf16 to reduce)");
    if ((unsigned)rc->float8 > 3)
        return fail(err, n, "float8 recipes are off (0), tensorwise (1), rowwise (2) or rowwise-gw-hp (3): %d",
                    rc->float8);
    if (rc->float8_fsdp_all_gather && rc->float8 != 1)
        return fail(err, n, "--float8-fsdp-all-gather (torchao's enable_fsdp_float8_all_gather) needs "
                    "--float8 tensorwise (rowwise scales need the whole row, the 1-byte all-gather casts shards): float8 = %d", rc->float8);
    if (rc->async_tp && rc->float8 > 1)
        return fail(err, n, "--async-tp composes with --float8 tensorwise only (its one scale a tensor is "
                    "known before the row blocks; rowwise casts need every row and column of a tensor at "
                    "once): float8 = %d", rc->float8);
    if (rc->async_tp && T == 1)
        return fail(err, n, "--async-tp needs tp > 1: it overlaps the sequence-parallel all-gather and "
                    "reduce-scatter of the tp regions, and tp = 1 has none");
    if (rc->async_tp && !hp_dims_sp_on(d))
        return fail(err, n, "--async-tp needs sequence parallel: it overlaps the SP all-gather and "
                    "reduce-scatter, and --no-sp at tp %d has none", T);
    if ((unsigned)rc->reshard_after_forward > HP_RESHARD_NEVER)
        return fail(err, n, "reshard_after_forward is default (0), always (1) or never (2): %d",
                    (int)rc->reshard_after_forward);
    const int M = hp_run_microbatches(rc);
    if (rc->microbatches < 0)
        return fail(err, n, "microbatches must be >= 1: microbatches = %d", rc->microbatches);
    if ((rc->batch / (R * S)) % M != 0)
        return fail(err, n, "microbatches (%d) must divide the local batch batch/(dp_replicate*dp_shard) "
                    "= %d/(%d*%d) = %d", M, rc->batch, R, S, rc->batch / (R * S));
    if (d->pp > 1) {
        const int P = d->pp, V = hp_pp_virtual(d);
        if (d->pp_schedule == HP_PP_INTERLEAVED_1F1B && M % P != 0)
            return fail(err, n, "pipeline schedule interleaved-1f1b needs pp (%d) to divide the "
                        "microbatches (%d)", P, M);
        if (d->pp_schedule == HP_PP_ZBV && M < P)
            return fail(err, n, "pipeline schedule zbv needs microbatches (%d) >= pp (%d)", M, P);
        if (2LL * P * V * M > 32000)
            return fail(err, n, "pipeline: 2*pp*pp_virtual*microbatches = 2*%d*%d*%d exceeds the "
                        "32000 message tags of a step", P, V, M);
    }
    int split = hp_dims_token_split(d);
    if (split > 1) {
        int local_b = rc->batch / (R * S) / M, local_s = rc->seq_len / (C * U);
        if (((long long)local_b * local_s) % split != 0)
            return fail(err, n, "expert dispatch over tp: tp (%d) must divide the tokens of one rank's "
                        "microbatch (batch/(dp_replicate*dp_shard*microbatches))*(seq_len/cp) = %d*%d = %d",
                        split, local_b, local_s, local_b * local_s);
    }
    return 0;
}

int hp_dims_validate(hp_dims *d, const hp_model_config *model, const hp_run_config *run,
                     char *err, size_t errlen) {
    if (err && errlen > 0) err[0] = '\0';
    int rc = check_mesh(d, err, errlen);
    if (rc == 0 && model) rc = check_model(d, model, err, errlen);
    if (rc == 0 && run) rc = check_run(d, run, err, errlen);
    return rc;
}
