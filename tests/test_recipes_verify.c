// test_recipes_verify.c - the verify API of verify_record.h, without running a job:
//   1. a record written as JSON reads back bit for bit (every field, odd doubles included), and
//      a plain run's record (no verification) keeps the verification keys out;
//   2. the reader takes any JSON: mistyped keys read as unknown, ints saturate, arrays are cut;
//   3. the rerun check fails on one ulp of one loss and on one byte of the gradient dump;
//   4. the same_as and resume checks fail beyond their tolerance, and the resume check on one
//      ulp when the layout is the same;
//   5. hp_verify_opts_default takes its tolerances from hp_verify_tol.
// Usage: test_recipes_verify DIR   (a scratch folder, created)
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "hyperpar/train.h"
#include "hyperpar/verify.h"
#include "test_check.h"


static char dir[1024];

// A record with every field set to something a lossy writer would change.
static void fill(hp_verify_record *r) {
    hp_verify_record_init(r);
    r->pass = 0;
    r->world = 8;
    r->first_step = 4;
    r->steps = 5;
    for (int s = 0; s < r->steps; s++) r->losses[s] = 6.0567020416259766 + (s + 1) * 0.1 / 3.0;
    r->losses[2] = nextafter(r->losses[2], 0.0);   // one ulp off a round number
    r->exact = 1;                                  // the reader sets it: the exact strings were read
    r->pp_stats = 2;
    for (int p = 0; p < 2; p++) {
        r->pp_idle[p] = 0.125 + p / 7.0;
        r->pp_in_flight[p] = 2 + p;
        r->pp_activation_bytes[p] = 123456789.0 * (p + 1);
    }
    r->verified = 1;
    r->loss = 6.05670166015625;
    r->loss_ref = nextafter(r->loss, 10.0);
    r->loss_rel_err = (r->loss_ref - r->loss) / r->loss_ref;
    r->grad_norm = 0.52440118789672852;
    r->grad_norm_ref = 0.5244011878967285 * (1 + 1e-16);
    r->steps_ref = 5;
    for (int s = 0; s < 5; s++) r->losses_ref[s] = r->losses[s] * (1 + 3e-8);
    r->traj_worst = 3e-8;
    r->tol_grad = 1e-5;
    r->tol_param = 1e-4;
    snprintf(r->worst_grad, sizeof r->worst_grad, "layers.1.attention.wq.weight");
    snprintf(r->worst_param, sizeof r->worst_param, "tok_embeddings.weight");
    r->worst_grad_rel = 1.2345678901234567e-7;
    r->worst_param_rel = 4.9406564584124654e-324;   // the smallest subnormal
    r->init_equal = 1;
    r->traffic_ok = 1;
    r->replica_diff = 0x1.fffffffffffffp-30;
    r->bytes_counted = 9007199254740993.0;          // 2^53 + 1 rounds: any double
    r->bytes_predicted = 1234567.0;
    r->n_moe_layers = 2;
    r->route_flips[0] = 3;
    r->route_flips[1] = INT_MAX;
    r->seconds = 1.0 / 3.0;
    snprintf(r->failure, sizeof r->failure, "gradient layers.1 \"quoted\" \\ and a tab\t(1e-3 > 1e-5)");
    r->pp_ranks = 2;
    r->pp_n[0] = 3;
    r->pp_n[1] = 1;
    for (int a = 0; a < 3; a++) {
        const float row[5] = { (float)(a % 4), 0, (float)a, 0.1f * (float)a, 0.1f * (float)a + 1.0f / 3.0f };
        memcpy(r->pp_timeline[0][a], row, sizeof row);
    }
    const float row1[5] = { 3, 1, 0, 2.5f, 7.25f };
    memcpy(r->pp_timeline[1][0], row1, sizeof row1);
}

static void test_round_trip(void) {
    hp_verify_record a, b;
    fill(&a);
    char path[1100];
    snprintf(path, sizeof path, "%s/record.json", dir);
    CHECK(hp_verify_record_write(&a, path) == 0, "write %s: %s", path, strerror(errno));
    CHECK(hp_verify_record_load(&b, path) == 0, "load %s", path);
    CHECK(memcmp(&a, &b, sizeof a) == 0, "written and read records differ (loss %.17g / %.17g, bytes %.17g / %.17g, "
          "failure '%s')", a.loss, b.loss, a.bytes_counted, b.bytes_counted, b.failure);
    // print + parse is the same reader
    char *text = hp_verify_record_print(&a);
    CHECK(text != NULL, "print");
    if (text) {
        hp_verify_record c;
        CHECK(hp_verify_record_parse(&c, text, strlen(text)) == 0 && memcmp(&a, &c, sizeof a) == 0, "print/parse");
        free(text);
    }
    // a changed value is seen: the comparison above can fail
    b.losses[4] = nextafter(b.losses[4], 100.0);
    CHECK(memcmp(&a, &b, sizeof a) != 0, "one ulp of a loss goes unnoticed");

    // a plain run: its losses only, no verification keys
    hp_verify_record p, q;
    hp_verify_record_init(&p);
    p.pass = 1;
    p.world = 2;
    p.steps = 2;
    p.losses[0] = 1.5;
    p.losses[1] = 0.1;
    p.exact = 1;
    text = hp_verify_record_print(&p);
    CHECK(text && !strstr(text, "losses_ref") && !strstr(text, "worst_grad") && strstr(text, "losses_exact"),
          "a plain run's record: %s", text ? text : "(null)");
    CHECK(text && hp_verify_record_parse(&q, text, strlen(text)) == 0 && memcmp(&p, &q, sizeof p) == 0 && !q.verified,
          "a plain run's record reads back");
    free(text);
    // a non-finite number is written as null and reads back as unknown
    fill(&a);
    a.loss_rel_err = NAN;
    text = hp_verify_record_print(&a);
    CHECK(text && hp_verify_record_parse(&b, text, strlen(text)) == 0 && b.loss_rel_err == -1, "NaN -> unknown");
    free(text);
}

static void test_any_json(void) {
    hp_verify_record r;
    CHECK(hp_verify_record_parse(&r, "not json", 8) == -1, "garbage parses");
    const char *j = "{\"world\": 1e300, \"pass\": 1, \"losses\": [1, 2, \"x\", 3], \"losses_exact\": [\"0x1p-1\"],"
                    " \"losses_ref\": {}, \"worst_grad\": 7, \"route_flips\": [-1e300, 2],"
                    " \"pp_timeline\": [[[0, 0, 0, 1, 2], [9, 0, 0, 1, 2], [1, 0, 0]]]}";
    CHECK(hp_verify_record_parse(&r, j, strlen(j)) == 0, "parse");
    CHECK(r.world == INT_MAX && r.pass == 0 && r.steps == 3 && r.losses[2] == 3 && !r.exact,
          "world %d pass %d steps %d exact %d", r.world, r.pass, r.steps, r.exact);
    CHECK(r.verified && r.steps_ref == 0 && r.worst_grad[0] == '\0' && r.loss_rel_err == -1, "verification keys");
    CHECK(r.n_moe_layers == 2 && r.route_flips[0] == INT_MIN, "route flips saturate: %d", r.route_flips[0]);
    CHECK(r.pp_ranks == 1 && r.pp_n[0] == 1, "only well-formed timeline rows: %d", r.pp_n[0]);
    char big[4096];
    int n = snprintf(big, sizeof big, "{\"losses\": [");
    for (int i = 0; i < 200; i++) n += snprintf(big + n, sizeof big - (size_t)n, "%s%d", i ? "," : "", i);
    snprintf(big + n, sizeof big - (size_t)n, "]}");
    CHECK(hp_verify_record_parse(&r, big, strlen(big)) == 0 && r.steps == HP_VERIFY_MAX_STEPS, "cut at %d: %d",
          HP_VERIFY_MAX_STEPS, r.steps);
}

static int write_bytes(const char *path, const char *bytes, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    fwrite(bytes, 1, n, f);
    return fclose(f);
}

static void test_checks(void) {
    hp_verify_record a, b;
    fill(&a);
    fill(&b);
    char why[256], g1[1100], g2[1100];
    snprintf(g1, sizeof g1, "%s/g1.bin", dir);
    snprintf(g2, sizeof g2, "%s/g2.bin", dir);
    char bytes[100000];
    for (size_t i = 0; i < sizeof bytes; i++) bytes[i] = (char)(i * 7);
    CHECK(write_bytes(g1, bytes, sizeof bytes) == 0 && write_bytes(g2, bytes, sizeof bytes) == 0, "grads files");
    CHECK(hp_verify_rerun_check(&a, &b, g1, g2, why, sizeof why) == 0, "identical runs: %s", why);
    b.losses[3] = nextafter(b.losses[3], 0.0);
    CHECK(hp_verify_rerun_check(&a, &b, g1, g2, why, sizeof why) == 1 && strstr(why, "step 4"),
          "one ulp at step 4: '%s'", why);
    fill(&b);
    bytes[70000] ^= 1;
    CHECK(write_bytes(g2, bytes, sizeof bytes) == 0, "grads file");
    CHECK(hp_verify_rerun_check(&a, &b, g1, g2, why, sizeof why) == 1 && strstr(why, "gradients"),
          "one bit of the gradients: '%s'", why);
    CHECK(hp_verify_rerun_check(&a, &b, NULL, NULL, why, sizeof why) == 0, "losses only");
    b.steps = 4;
    CHECK(hp_verify_rerun_check(&a, &b, NULL, NULL, why, sizeof why) == 1, "a run with fewer losses");

    // same_as: within hp_verify_tol.traj, not beyond
    double worst = -1;
    fill(&b);
    for (int s = 0; s < b.steps; s++) b.losses[s] *= 1 + 0.5 * hp_verify_tol.traj;
    CHECK(hp_verify_same_as_check(&b, &a, &worst, why, sizeof why) == 0 && worst > 0, "twin within: %s", why);
    b.losses[1] = a.losses[1] * (1 + 2 * hp_verify_tol.traj);
    CHECK(hp_verify_same_as_check(&b, &a, &worst, why, sizeof why) == 1 && worst > hp_verify_tol.traj,
          "twin beyond the tolerance: %.3g '%s'", worst, why);
    b.losses[1] = NAN;
    CHECK(hp_verify_same_as_check(&b, &a, &worst, why, sizeof why) == 1, "a NaN loss passes same_as");

    // resume: the resumed run's 3 losses against the last 3 of the straight run's 6
    hp_verify_record full, res;
    hp_verify_record_init(&full);
    hp_verify_record_init(&res);
    full.steps = 6;
    res.steps = 3;
    for (int s = 0; s < 6; s++) full.losses[s] = 6.0 - 0.01 * s;
    for (int s = 0; s < 3; s++) res.losses[s] = full.losses[3 + s];
    CHECK(hp_verify_resume_check(&full, &res, 1, &worst, why, sizeof why) == 0 && worst == 0, "bitwise resume: %s", why);
    res.losses[2] = nextafter(res.losses[2], 0.0);
    CHECK(hp_verify_resume_check(&full, &res, 1, &worst, why, sizeof why) == 1, "one ulp, same layout");
    CHECK(hp_verify_resume_check(&full, &res, 0, &worst, why, sizeof why) == 0, "one ulp, other layout: %s", why);
    res.losses[0] *= 1 + 2 * hp_verify_tol.resume;
    CHECK(hp_verify_resume_check(&full, &res, 0, &worst, why, sizeof why) == 1 && strstr(why, "steps 4-6"),
          "beyond the resume tolerance: '%s'", why);
}

static void test_tolerances(void) {
    hp_run_config rc;
    hp_run_config_default(&rc);
    hp_verify_opts o = hp_verify_opts_default(&rc);
    CHECK(o.tol_loss == hp_verify_tol.loss && o.tol_grad == hp_verify_tol.grad && o.tol_param == hp_verify_tol.param &&
          o.tol_traj == hp_verify_tol.traj, "SGD options from the table");
    rc.optimizer = HP_OPT_ADAMW;
    o = hp_verify_opts_default(&rc);
    CHECK(o.tol_param == hp_verify_tol.param_adamw && hp_verify_tol.param_adamw > hp_verify_tol.param,
          "AdamW parameter tolerance %g", o.tol_param);
}

int main(int argc, char **argv) {
    snprintf(dir, sizeof dir, "%s", argc > 1 ? argv[1] : "test_recipes_verify.tmp");
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        printf("FAIL: cannot create %s: %s\n", dir, strerror(errno));
        return 1;
    }
    test_round_trip();
    test_any_json();
    test_checks();
    test_tolerances();
    return test_summary("test_recipes_verify");
}
