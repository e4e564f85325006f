// run_json.c - reads the JSON result of one `hp run --verify --json F` (see run_json.h).
// defines: hp_run_json_read
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include "run_json.h"

static double num(const cJSON *j, const char *k, double dflt) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, k);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

// A JSON number as an int: converting a double outside int's range is undefined behaviour (the
// fuzzer's first find: "world": 1e300), so it saturates; NaN reads as 0.
static int saturate_int(double v) {
    if (v != v) return 0;
    if (v >= (double)INT_MAX) return INT_MAX;
    if (v <= (double)INT_MIN) return INT_MIN;
    return (int)v;
}

static int boolean(const cJSON *j, const char *k) {
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, k));
}

static void str(const cJSON *j, const char *k, char *out, int cap) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, k);
    snprintf(out, (size_t)cap, "%s", cJSON_IsString(v) ? v->valuestring : "");
}

// "pp_timeline": [[[op, stage, mb, t0, t1], ...] per pp rank]: only well-formed rows count.
static void read_timeline(const cJSON *j, hp_recipe_result *x) {
    x->pp_ranks = 0;
    const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(j, "pp_timeline"), *rk;
    cJSON_ArrayForEach(rk, ranks) {
        if (x->pp_ranks >= HP_REPORT_PP_RANKS) break;
        const int p = x->pp_ranks++;
        x->pp_n[p] = 0;
        const cJSON *a;
        cJSON_ArrayForEach(a, rk) {
            if (x->pp_n[p] >= HP_REPORT_PP_ACTIONS || cJSON_GetArraySize(a) != 5) continue;
            double v[5];
            int ok = 1;
            for (int k = 0; k < 5; k++) {
                const cJSON *e = cJSON_GetArrayItem(a, k);
                ok &= cJSON_IsNumber(e) && isfinite(e->valuedouble);
                v[k] = ok ? e->valuedouble : 0;
            }
            if (!ok || v[0] < 0 || v[0] > 3 || v[3] < 0 || v[4] < v[3] || v[4] > 1e9) continue;
            const int n = x->pp_n[p]++;
            x->pp_op[p][n] = (unsigned char)v[0];
            x->pp_t0[p][n] = (float)v[3];
            x->pp_t1[p][n] = (float)v[4];
        }
    }
}

void hp_run_json_read(const cJSON *j, hp_recipe_result *x, hp_run_numbers *rn) {
    const cJSON *l = cJSON_GetObjectItemCaseSensitive(j, "losses");
    rn->pass = boolean(j, "pass");
    rn->steps = 0;
    rn->exact = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, l) if (rn->steps < HP_MATRIX_MAX_STEPS && cJSON_IsNumber(e)) rn->losses[rn->steps++] = e->valuedouble;
    // exact text of the same losses, when the run writes it: strtod reads "%.17g" and "%a"
    const cJSON *lx = cJSON_GetObjectItemCaseSensitive(j, "losses_exact");
    if (cJSON_GetArraySize(lx) == rn->steps) {
        int k = 0;
        cJSON_ArrayForEach(e, lx) {
            if (cJSON_IsString(e)) rn->losses[k] = strtod(e->valuestring, NULL);
            k++;
        }
        rn->exact = 1;
    }
    if (x) {
        x->have_json = 1;
        x->world = saturate_int(num(j, "world", x->world));
        x->steps = rn->steps;
        memcpy(x->losses, rn->losses, sizeof x->losses);
        int k = 0;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(j, "losses_ref"))
            if (k < HP_MATRIX_MAX_STEPS && cJSON_IsNumber(e)) x->losses_ref[k++] = e->valuedouble;
        if (k < x->steps) x->steps = k;
        x->loss_rel_err = num(j, "loss_rel_err", -1);
        x->traj_worst = num(j, "traj_worst", -1);
        x->worst_grad_rel = num(j, "worst_grad_rel", -1);
        x->worst_param_rel = num(j, "worst_param_rel", -1);
        x->tol_grad = num(j, "tol_grad", 0);
        x->tol_param = num(j, "tol_param", 0);
        str(j, "worst_grad", x->worst_grad, sizeof x->worst_grad);
        str(j, "worst_param", x->worst_param, sizeof x->worst_param);
        x->bytes_counted = num(j, "bytes_counted", 0);
        x->bytes_predicted = num(j, "bytes_predicted", 0);
        x->traffic_ok = boolean(j, "traffic_ok");
        x->init_equal = boolean(j, "init_equal");
        x->replica_diff = num(j, "replica_diff", 0);
        double flips = 0.0;   // summed in double: an int sum of large counts would overflow
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(j, "route_flips"))
            if (cJSON_IsNumber(e)) flips += e->valuedouble;
        x->route_flips = saturate_int(flips);
        str(j, "failure", x->failure, sizeof x->failure);
        read_timeline(j, x);
        if (!cJSON_GetObjectItemCaseSensitive(j, "losses_ref")) x->have_json = 0;   // not a --verify result
    }
}
