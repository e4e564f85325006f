// test_dims.c - hp_dims_validate: every negative case of recipes.md fails with exit code 2 and
// one line naming the rule and its numbers; the recipes' configurations pass; dp_shard and
// sp are resolved as §1 says; the rules fire in their fixed order. No MPI.
#include <stdio.h>
#include <string.h>
#include "hyperpar/dims.h"
#include "hyperpar/pipeline.h"
#include "test_check.h"



// R S C T EP ET world (pp 1, sp default) - world 0 = the product
static hp_dims mk(int R, int S, int C, int T, int EP, int ET, int world) {
    hp_dims d = hp_dims_default();
    d.dp_replicate = R; d.dp_shard = S; d.cp = C; d.tp = T; d.ep = EP; d.etp = ET; d.world = world;
    return d;
}

static hp_model_config model(const char *name) {
    hp_model_config m;
    if (hp_model_config_by_name(name, &m) != 0) {
        fprintf(stderr, "no model %s\n", name);
        check_failed++;
    }
    return m;
}

static hp_run_config run(int seq_len, int batch) {
    hp_run_config rc;
    hp_run_config_default(&rc);
    rc.seq_len = seq_len;
    rc.batch = batch;
    return rc;
}

// Expects rc 2 and every '|'-separated piece of `want` inside the one-line message.
static void expect_fail(const char *what, hp_dims d, const hp_model_config *m, const hp_run_config *r,
                        const char *want) {
    char err[512];
    int rc = hp_dims_validate(&d, m, r, err, sizeof err);
    CHECK(rc == HP_EXIT_CONFIG, "%s: rc %d, want 2 (message '%s')", what, rc, err);
    CHECK(err[0] != '\0' && !strchr(err, '\n'), "%s: message must be one non-empty line: '%s'", what, err);
    char buf[512];
    snprintf(buf, sizeof buf, "%s", want);
    for (char *piece = strtok(buf, "|"); piece; piece = strtok(NULL, "|"))
        CHECK(strstr(err, piece) != NULL, "%s: message '%s' lacks '%s'", what, err, piece);
}

static hp_dims expect_ok(const char *what, hp_dims d, const hp_model_config *m, const hp_run_config *r) {
    char err[512];
    int rc = hp_dims_validate(&d, m, r, err, sizeof err);
    CHECK(rc == 0, "%s: rc %d, message '%s'", what, rc, err);
    return d;
}

static void test_defaults(void) {
    hp_dims d = hp_dims_default();
    CHECK(d.dp_replicate == 1 && d.dp_shard == -1 && d.cp == 1 && d.tp == 1 && d.pp == 1 &&
          d.ep == 1 && d.etp == 1 && d.sp == -1 && d.world == 0, "hp_dims_default");
    hp_run_config rc;
    hp_run_config_default(&rc);
    CHECK(rc.seq_len == 32 && rc.batch == 8 && rc.seed == 1234 && rc.steps == 1 &&
          rc.optimizer == HP_OPT_SGD && rc.lr == 1e-2f && rc.max_norm == 0.0f && rc.data_path == NULL &&
          rc.cp_rotate == HP_ROTATE_ALLGATHER && rc.cp_load_balance == 1 &&
          rc.dispatcher == HP_DISPATCH_ALLTOALL, "hp_run_config_default");
    hp_model_config t = model("tiny"), tm = model("tiny-moe");
    CHECK(t.vocab_size == 256 && t.dim == 64 && t.n_layers == 2 && t.n_heads == 8 && t.n_kv_heads == 4 &&
          t.ffn_hidden == 128 && t.num_experts == 0 && t.norm_eps == 1e-5f && t.rope_theta == 10000.0f &&
          !strcmp(t.name, "tiny"), "tiny config");
    CHECK(tm.vocab_size == 256 && tm.dim == 64 && tm.n_layers == 2 && tm.n_heads == 8 && tm.n_kv_heads == 4 &&
          tm.num_experts == 8 && tm.top_k == 2 && tm.moe_hidden == 64 && tm.n_shared_experts == 1 &&
          tm.n_dense_layers == 0 && tm.score_func == HP_SCORE_SOFTMAX && tm.route_norm == 0 &&
          tm.route_scale == 1.0f && !strcmp(tm.name, "tiny-moe"), "tiny-moe config");
    int n = 0;
    for (int i = 0; hp_model_config_names[i]; i++, n++) {
        hp_model_config m;
        CHECK(hp_model_config_by_name(hp_model_config_names[i], &m) == 0 && m.dim % m.n_heads == 0 &&
              (m.dim / m.n_heads) % 2 == 0 && m.n_heads % m.n_kv_heads == 0 && m.norm_eps == 1e-5f,
              "config %s is well formed", hp_model_config_names[i]);
    }
    hp_model_config m;
    CHECK(n == 10 && hp_model_config_by_name("huge", &m) == -1 && hp_model_config_by_name(NULL, &m) == -1,
          "config names");
}

static void test_negative(void) {
    hp_model_config tiny = model("tiny"), moe = model("tiny-moe");
    hp_run_config r = run(32, 8);

    // world, degrees, dp_shard, pp
    expect_fail("product != world", mk(1, 2, 2, 2, 1, 1, 6), NULL, NULL,
                "world size: dp_replicate(1)*dp_shard(2)*cp(2)*tp(2)*pp(1) = 8 != 6 ranks launched");
    expect_fail("tp 0", mk(1, 1, 1, 0, 1, 1, 0), NULL, NULL, "degree must be >= 1|tp = 0");
    expect_fail("cp -1", mk(1, 1, -1, 1, 1, 1, 0), NULL, NULL, "degree must be >= 1|cp = -1");
    expect_fail("dp_replicate 0", mk(0, 1, 1, 1, 1, 1, 0), NULL, NULL, "degree must be >= 1|dp_replicate = 0");
    expect_fail("ep 0", mk(1, 1, 1, 1, 0, 1, 0), NULL, NULL, "degree must be >= 1|ep = 0");
    expect_fail("etp 0", mk(1, 1, 1, 1, 1, 0, 0), NULL, NULL, "degree must be >= 1|etp = 0");
    hp_dims d = mk(1, 1, 1, 1, 1, 1, 0);
    d.pp = 0;
    expect_fail("pp 0", d, NULL, NULL, "degree must be >= 1|pp = 0");
    expect_fail("dp_shard 0", mk(1, 0, 1, 1, 1, 1, 0), NULL, NULL, "dp_shard must be -1 (infer) or >= 1|dp_shard = 0");
    expect_fail("dp_shard -2", mk(1, -2, 1, 1, 1, 1, 0), NULL, NULL, "dp_shard must be -1 (infer) or >= 1|dp_shard = -2");
    d = mk(1, 1, 1, 1, 1, 1, 2);
    d.pp = 2;
    d.pp_schedule = HP_PP_ZBV;
    d.pp_virtual = 1;
    expect_fail("pp 2 zbv V 1", d, NULL, NULL, "pipeline schedule zbv needs pp_virtual = 2: pp_virtual = 1");
    expect_fail("dp_shard inference", mk(1, -1, 1, 4, 1, 1, 6), NULL, NULL,
                "dp_shard inference|world size 6|dp_replicate*cp*tp*pp = 1*1*4*1 = 4");
    expect_fail("dp_shard inference < 1", mk(2, -1, 2, 2, 1, 1, 4), NULL, NULL, "dp_shard inference|world size 4|= 8");
    d = mk(1, 1, 1, 1, 1, 1, 0);
    d.sp = 2;
    expect_fail("sp 2", d, NULL, NULL, "sp must be -1 (default), 0 or 1|sp = 2");

    // ep / etp
    expect_fail("etp > 1 with ep 1", mk(1, 2, 1, 2, 1, 2, 0), NULL, NULL, "etp (2) > 1 needs ep > 1|ep = 1");
    expect_fail("etp not in {1,tp}", mk(1, 4, 1, 2, 2, 4, 0), NULL, NULL, "etp must be 1 or tp when ep > 1|etp = 4, tp = 2");
    expect_fail("ep !| S*C*T", mk(1, 2, 1, 1, 4, 1, 0), NULL, NULL, "ep (4) must divide dp_shard*cp*tp = 2*1*1 = 2");
    expect_fail("ep !| S*C*T (3)", mk(1, 2, 2, 2, 3, 1, 0), NULL, NULL, "ep (3) must divide dp_shard*cp*tp = 2*2*2 = 8");
    expect_fail("ep !| S*C with etp = tp", mk(1, 2, 1, 2, 4, 2, 0), NULL, NULL,
                "ep (4) must divide dp_shard*cp = 2*1 = 2 when etp = tp (2)");
    expect_fail("ep on a dense model", mk(1, 2, 1, 1, 2, 1, 0), &tiny, &r,
                "ep (2) > 1 needs a MoE model|'tiny'|num_experts = 0");
    expect_fail("num_experts % ep", mk(1, 3, 1, 1, 3, 1, 0), &moe, &r, "ep (3) must divide num_experts (8)");

    // sizes tp must divide
    expect_fail("tp !| n_heads", mk(1, 1, 1, 3, 1, 1, 0), &tiny, &r, "tp (3) must divide n_heads (8)");
    expect_fail("tp !| n_kv_heads", mk(1, 1, 1, 8, 1, 1, 0), &tiny, &r, "tp (8) must divide n_kv_heads (4)");
    hp_model_config m = tiny;
    m.ffn_hidden = 130;
    expect_fail("tp !| ffn_hidden", mk(1, 1, 1, 4, 1, 1, 0), &m, &r, "tp (4) must divide ffn_hidden (130)");
    m = tiny;
    m.vocab_size = 255;
    expect_fail("tp !| vocab_size", mk(1, 1, 1, 2, 1, 1, 0), &m, &r, "tp (2) must divide vocab_size (255)");
    m = moe;
    m.moe_hidden = 66;
    expect_fail("tp !| moe_hidden (ep 1)", mk(1, 1, 1, 4, 1, 1, 0), &m, &r,
                "expert tp (4, tp when ep = 1) must divide moe_hidden (66)");
    m = moe;
    m.moe_hidden = 63;
    expect_fail("etp !| moe_hidden (ETP)", mk(1, 2, 1, 2, 2, 2, 0), &m, &r, "expert tp (2, etp) must divide moe_hidden (63)");
    expect_fail("tp !| shared expert width", mk(1, 2, 1, 2, 2, 1, 0), &m, &r,
                "tp (2) must divide the shared-expert width moe_hidden*n_shared = 63*1 = 63");
    m.n_shared_experts = 0;   // no shared expert, experts not tp-split (ep > 1, etp 1): legal
    expect_ok("odd moe_hidden, etp 1, no shared expert", mk(1, 2, 1, 2, 2, 1, 0), &m, &r);

    // the run's sizes
    hp_run_config bad = run(30, 8);
    expect_fail("seq_len % 2CT", mk(1, 2, 2, 2, 1, 1, 0), &tiny, &bad, "context parallel: 2*cp*tp = 2*2*2 = 8 must divide seq_len (30)");
    bad = run(36, 8);
    expect_fail("seq_len % 2C (tp 1)", mk(1, 1, 4, 1, 1, 1, 0), &tiny, &bad, "2*cp*tp = 2*4*1 = 8 must divide seq_len (36)");
    bad = run(33, 8);
    expect_fail("seq_len % T with SP", mk(1, 1, 1, 2, 1, 1, 0), &tiny, &bad, "sequence parallel: tp (2) must divide seq_len (33)");
    d = mk(1, 1, 1, 2, 1, 1, 0);
    d.sp = 0;
    d = expect_ok("seq_len % T without SP", d, &tiny, &bad);
    CHECK(d.sp == 0, "--no-sp keeps sp 0");
    expect_fail("batch % (R*S)", mk(1, 3, 1, 1, 1, 1, 0), &tiny, &r, "dp_replicate*dp_shard = 1*3 = 3 must divide the global batch (8)");
    expect_fail("batch % (R*S) hsdp", mk(2, 2, 1, 1, 1, 1, 0), &tiny, &(hp_run_config){ .seq_len = 32, .batch = 6 },
                "dp_replicate*dp_shard = 2*2 = 4 must divide the global batch (6)");
    d = mk(1, 2, 1, 2, 4, 1, 0);
    d.sp = 0;
    bad = run(31, 2);
    expect_fail("token split", d, &moe, &bad, "expert dispatch over tp: tp (2) must divide|= 1*31 = 31");
    bad = run(0, 8);
    expect_fail("seq_len 0", mk(1, 1, 1, 1, 1, 1, 0), &tiny, &bad, "seq_len must be >= 1");
    bad = run(32, 0);
    expect_fail("batch 0", mk(1, 1, 1, 1, 1, 1, 0), &tiny, &bad, "global batch must be >= 1");

    // the order is fixed: the first violated rule is reported
    expect_fail("degree before world", mk(1, 2, 1, 0, 1, 1, 6), NULL, NULL, "degree must be >= 1");
    // Ulysses: heads over tp*ulysses, and the kv-head rule (ulysses.md step 2)
    {
        hp_model_config kv6 = tiny;
        kv6.n_heads = 12; kv6.n_kv_heads = 6;
        hp_dims u = mk(1, 1, 1, 1, 1, 1, 0);
        u.ulysses = 4;
        expect_fail("ulysses 4, 6 kv heads", u, &kv6, NULL,
                    "ulysses: the kv heads per tp rank n_kv_heads/tp = 6/1 = 6 and ulysses (4) must divide one another");
        u.ulysses = 3;
        expect_fail("ulysses 3, 8 heads", u, &tiny, NULL, "ulysses: tp*ulysses = 1*3 = 3 must divide n_heads (8)");
    }
    d = mk(1, 2, 1, 2, 1, 2, 6);
    d.pp = 2;
    d.pp_schedule = HP_PP_ZBV;
    d.pp_virtual = 1;
    expect_fail("pp before world", d, NULL, NULL, "pipeline schedule zbv needs pp_virtual = 2");
    expect_fail("world before etp", mk(1, 2, 1, 2, 1, 2, 6), NULL, NULL, "world size:");
    expect_fail("mesh before model", mk(1, 2, 1, 1, 4, 1, 0), &tiny, &r, "ep (4) must divide dp_shard*cp*tp");
    bad = run(30, 7);
    expect_fail("model before run", mk(1, 1, 1, 3, 1, 1, 0), &tiny, &bad, "tp (3) must divide n_heads");

    // err may be NULL or tiny: still rc 2, no crash
    d = mk(1, 0, 1, 1, 1, 1, 0);
    CHECK(hp_dims_validate(&d, NULL, NULL, NULL, 0) == HP_EXIT_CONFIG, "NULL err");
    char small[8];
    d = mk(1, 0, 1, 1, 1, 1, 0);
    CHECK(hp_dims_validate(&d, NULL, NULL, small, sizeof small) == HP_EXIT_CONFIG && strlen(small) == 7, "short err");
}

static void test_legal(void) {
    hp_model_config tiny = model("tiny"), moe = model("tiny-moe");
    hp_run_config r = run(32, 8);
    // recipes.md: R S C T SP EP ET on tiny / tiny-moe
    static const struct { const char *id; int moe, R, S, C, T, sp, EP, ET; } rec[] = {
        { "M1a", 0, 1, 1, 1, 1, -1, 1, 1 }, { "M1b", 0, 2, 1, 1, 1, -1, 1, 1 },
        { "M2 tp2", 0, 1, 1, 1, 2, 0, 1, 1 }, { "M2 tp4", 0, 1, 1, 1, 4, 0, 1, 1 },
        { "M3 tp2", 0, 1, 1, 1, 2, 1, 1, 1 }, { "M3 tp4", 0, 1, 1, 1, 4, 1, 1, 1 },
        { "M4 S2", 0, 1, 2, 1, 1, -1, 1, 1 }, { "M4 S4", 0, 1, 4, 1, 1, -1, 1, 1 },
        { "M5 C2", 0, 1, 1, 2, 1, -1, 1, 1 }, { "M5 S2C2", 0, 1, 2, 2, 1, -1, 1, 1 },
        { "B1", 0, 1, 2, 1, 2, 0, 1, 1 }, { "B2", 0, 1, 2, 1, 2, 1, 1, 1 }, { "B4", 0, 1, 1, 2, 2, 1, 1, 1 },
        { "M6", 0, 1, 2, 2, 2, 1, 1, 1 }, { "M7 T1", 0, 2, 2, 1, 1, 1, 1, 1 }, { "M7 T2", 0, 2, 2, 1, 2, 1, 1, 1 },
        { "A-EP", 1, 1, 2, 1, 1, -1, 2, 1 }, { "S1", 1, 1, 4, 1, 1, -1, 4, 1 },
        { "S1b", 1, 1, 2, 1, 2, 1, 4, 1 }, { "S2", 1, 1, 2, 1, 2, 1, 2, 2 },
        { "C2 ep4 etp1", 1, 1, 2, 2, 2, 1, 4, 1 }, { "C2 ep2 etp2", 1, 1, 2, 2, 2, 1, 2, 2 },
        { "C3", 1, 2, 1, 2, 2, 1, 2, 1 },
        { "tiny-moe ep1 tp2", 1, 1, 1, 1, 2, 1, 1, 1 },
    };
    for (size_t i = 0; i < sizeof rec / sizeof rec[0]; i++) {
        int W = rec[i].R * rec[i].S * rec[i].C * rec[i].T;
        hp_dims d = mk(rec[i].R, -1, rec[i].C, rec[i].T, rec[i].EP, rec[i].ET, W);   // dp_shard inferred
        d.sp = rec[i].sp;
        d = expect_ok(rec[i].id, d, rec[i].moe ? &moe : &tiny, &r);
        CHECK(d.dp_shard == rec[i].S && d.world == W, "%s: inferred dp_shard %d, want %d", rec[i].id, d.dp_shard, rec[i].S);
        int want_sp = rec[i].sp == -1 ? rec[i].T > 1 : (rec[i].T > 1 && rec[i].sp);
        CHECK(d.sp == want_sp, "%s: sp %d, want %d", rec[i].id, d.sp, want_sp);
    }
    // world 0 = the product; dp_shard -1 without a world = 1
    hp_dims d = expect_ok("world 0", mk(1, 2, 2, 2, 1, 1, 0), NULL, NULL);
    CHECK(d.world == 8, "world 0 -> product, got %d", d.world);
    d = expect_ok("world 0, dp_shard -1", mk(2, -1, 1, 2, 1, 1, 0), NULL, NULL);
    CHECK(d.dp_shard == 1 && d.world == 4, "dp_shard -1 without world: S %d W %d", d.dp_shard, d.world);
    d = expect_ok("infer S=3", mk(1, -1, 1, 2, 1, 1, 6), NULL, NULL);
    CHECK(d.dp_shard == 3, "infer S: %d", d.dp_shard);
    // sp: -1 -> tp > 1; 1 at tp 1 -> 0 (no-op)
    d = mk(1, 1, 1, 1, 1, 1, 0);
    d.sp = 1;
    d = expect_ok("sp 1 tp 1", d, NULL, NULL);
    CHECK(d.sp == 0, "sp at tp 1 must resolve to 0, got %d", d.sp);
    d = expect_ok("sp default tp 2", mk(1, 1, 1, 2, 1, 1, 0), NULL, NULL);
    CHECK(d.sp == 1, "sp default at tp 2 must be 1, got %d", d.sp);
    // HEAD relaxation: ep need not be a multiple of cp*tp (EP=2 borrows tp ranks)
    expect_ok("ep 2 on S2 C2 T2 etp 1", mk(1, 2, 2, 2, 2, 1, 0), &moe, &r);
    // derived sizes of §2.2 row 1
    d = expect_ok("derived", mk(1, 2, 2, 2, 4, 1, 0), &moe, &r);
    CHECK(hp_dims_fsdp(&d) == 4 && hp_dims_batch(&d) == 2 && hp_dims_loss(&d) == 4 && hp_dims_efsdp(&d) == 2 &&
          hp_dims_seq_len_divisor(&d) == 8 && hp_dims_expert_tp(&d) == 1 && hp_dims_token_split(&d) == 2 &&
          hp_dims_fsdp_enabled(&d) && hp_dims_dp_enabled(&d), "derived sizes");
    d = expect_ok("derived etp", mk(1, 2, 1, 2, 2, 2, 0), &moe, &r);
    CHECK(hp_dims_expert_tp(&d) == 2 && hp_dims_token_split(&d) == 1 && hp_dims_efsdp(&d) == 1, "derived etp");
}

int main(void) {
    test_defaults();
    test_negative();
    test_legal();
    return test_summary("test_dims");
}
