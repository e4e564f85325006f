// 02_mlp_seq_parallel - recipe M3 (TP + SP) on the toy MLP of 01, the C twin of PyTorch's
// sequence_parallel_example.py: the activations outside the MLP are sharded by rows (tokens):
//   in:  all-gather the row shards (N/T, IN) -> (N, IN)       ColwiseParallel(input_layouts=Shard(0))
//   out: reduce-scatter the partial (N, OUT) -> (N/T, OUT)    RowwiseParallel(output_layouts=Shard(0))
// and the backward is the transpose: all-gather dy, reduce-scatter dx. Every rank also runs the
// whole MLP in one piece and checks its rows and shards against it, every step.
//
//   mpirun -np 2 example_02_mlp_seq_parallel [--tp 2]      (world = tp; tp divides N = 24)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include <hyperpar/comm.h>
#include <hyperpar/dims.h>
#include <hyperpar/inspect.h>
#include <hyperpar/kernels.h>
#include <hyperpar/rng.h>

enum { N = 24, IN = 10, H = 32, OUT = 5, STEPS = 3 };
static const float LR = 0.25f;
static const double TOL = 1e-5;

// Tensor `name` of 01's MLP: the same numbers on every rank (seed 7, the name, the index).
static void fill(float *x, int n, const char *name, float scale) {
    const uint64_t stream = hp_name_id(name);
    for (int i = 0; i < n; i++) x[i] = scale * hp_rng_normal(7, stream, (uint64_t)i);
}
// h = max(a, 0); its backward passes dh where h > 0 (exactly where a > 0)
static void relu(float *h, const float *a, int n) {
    for (int i = 0; i < n; i++) h[i] = a[i] < 0 ? 0 : a[i];
}
static void relu_backward(float *da, const float *dh, const float *h, int n) {
    for (int i = 0; i < n; i++) da[i] = h[i] > 0 ? dh[i] : 0;
}
// This rank's part of loss = 0.5 * sum over ALL N rows of (y - target)^2 / N; dy of its rows.
static float mse_rows(float *dy, const float *y, const float *target, int rows) {
    double l = 0;
    for (int i = 0; i < rows * OUT; i++) {
        float d = y[i] - target[i];
        l += 0.5 * (double)d * d;
        dy[i] = d / (float)N;
    }
    return (float)(l / N);
}
static int check(const char *name, const float *a, const float *ref, int n, int print) {
    const double e = hp_rel_error(a, ref, (size_t)n);   // relative Frobenius error
    if (print) printf("  %-28s rel err %.3e  %s\n", name, e, e <= TOL ? "ok" : "FAIL");
    return e <= TOL;
}

int main(int argc, char **argv) {
    int rank, world;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    hp_dims dims = hp_dims_default();   // tp = world (or --tp T), sequence parallel on
    const int usage_ok = argc == 1 || (argc == 3 && !strcmp(argv[1], "--tp"));
    dims.tp = argc == 3 ? atoi(argv[2]) : world;
    dims.dp_shard = 1;
    dims.sp = 1;
    dims.world = world;
    char err[256] = "usage: example_02_mlp_seq_parallel [--tp T]";
    if (usage_ok && !hp_dims_validate(&dims, NULL, NULL, err, sizeof err) && (H % dims.tp || N % dims.tp))
        snprintf(err, sizeof err, "tp (%d) must divide %d (hidden) and %d (rows)", dims.tp, H, N);
    if (*err) {
        if (rank == 0) fprintf(stderr, "02_mlp_seq_parallel: %s\n", err);
        MPI_Finalize();
        return HP_EXIT_CONFIG;
    }
    hp_comm *comm = hp_comm_init(MPI_COMM_WORLD, &dims, 1);
    const int T = dims.tp, t = hp_comm_rank(comm, HP_G_TP), Hl = H / T, Nl = N / T;
    if (rank == 0) printf("toy MLP %d -> %d -> %d, %d rows, tensor + sequence parallel over %d ranks "
                          "(%d rows and %d hidden units each)\n", IN, H, OUT, N, T, Nl, Hl);

    float w1[H * IN], w2[OUT * H], w1_t[H * IN], w2_t[OUT * H];
    fill(w1, H * IN, "in_proj.weight", 0.3f);
    fill(w2, OUT * H, "out_proj.weight", 0.2f);
    memcpy(w1_t, w1 + t * Hl * IN, sizeof(float) * Hl * IN);
    for (int o = 0; o < OUT; o++) memcpy(w2_t + o * Hl, w2 + o * H + t * Hl, sizeof(float) * Hl);

    int ok = 1;
    for (int step = 0; step < STEPS; step++) {
        float x[N * IN], target[N * OUT];   // the global batch; rank t holds rows [t*N/T, (t+1)*N/T)
        char key[32];
        snprintf(key, sizeof key, "x.%d", step);
        fill(x, N * IN, key, 1.0f);
        snprintf(key, sizeof key, "target.%d", step);
        fill(target, N * OUT, key, 1.0f);
        const float *x_t = x + t * Nl * IN, *target_t = target + t * Nl * OUT;

        // --- reference ---
        float a_r[N * H], h_r[N * H], y_r[N * OUT], dy_r[N * OUT], dh_r[N * H] = { 0 }, da_r[N * H];
        float dw1_r[H * IN] = { 0 }, dw2_r[OUT * H] = { 0 }, dx_r[N * IN] = { 0 };
        hp_linear_forward(a_r, x, w1, N, IN, H);
        relu(h_r, a_r, N * H);
        hp_linear_forward(y_r, h_r, w2, N, H, OUT);
        float loss_r = mse_rows(dy_r, y_r, target, N);
        hp_linear_backward(dh_r, dw2_r, dy_r, h_r, w2, N, H, OUT);
        relu_backward(da_r, dh_r, h_r, N * H);
        hp_linear_backward(dx_r, dw1_r, da_r, x, w1, N, IN, H);

        // --- sequence + tensor parallel ---
        hp_comm_reset_stats(comm);
        float x_full[N * IN], a_t[N * H], h_t[N * H], y_part[N * OUT], y_t[N * OUT], dy_t[N * OUT];
        float dy_full[N * OUT], dh_t[N * H] = { 0 }, da_t[N * H], dx_part[N * IN] = { 0 }, dx_t[N * IN];
        float dw1_t[H * IN] = { 0 }, dw2_t[OUT * H] = { 0 };
        hp_allgather(comm, HP_G_TP, x_full, x_t, Nl * IN);           // rows -> all rows
        hp_linear_forward(a_t, x_full, w1_t, N, IN, Hl);
        relu(h_t, a_t, N * Hl);
        hp_linear_forward(y_part, h_t, w2_t, N, Hl, OUT);
        hp_reduce_scatter(comm, HP_G_TP, y_t, y_part, Nl * OUT);     // sum, keep my rows
        float loss = mse_rows(dy_t, y_t, target_t, Nl);
        hp_allreduce_sum(comm, HP_G_TP, &loss, 1);                            // the loss of all rows
        hp_allgather(comm, HP_G_TP, dy_full, dy_t, Nl * OUT);         // transpose of reduce-scatter
        hp_linear_backward(dh_t, dw2_t, dy_full, h_t, w2_t, N, Hl, OUT);
        relu_backward(da_t, dh_t, h_t, N * Hl);
        hp_linear_backward(dx_part, dw1_t, da_t, x_full, w1_t, N, IN, Hl);
        hp_reduce_scatter(comm, HP_G_TP, dx_t, dx_part, Nl * IN);     // transpose of all-gather

        float ref_dw2_t[OUT * H];
        for (int o = 0; o < OUT; o++) memcpy(ref_dw2_t + o * Hl, dw2_r + o * H + t * Hl, sizeof(float) * Hl);
        const int print = rank == 0;
        if (print) printf("step %d: loss %.7f, single process %.7f\n", step + 1, loss, loss_r);
        ok &= check("output rows y (shard)", y_t, y_r + t * Nl * OUT, Nl * OUT, print);
        ok &= check("in_proj.weight grad (shard)", dw1_t, dw1_r + t * Hl * IN, Hl * IN, print);
        ok &= check("out_proj.weight grad (shard)", dw2_t, ref_dw2_t, OUT * Hl, print);
        ok &= check("input grad rows dx (shard)", dx_t, dx_r + t * Nl * IN, Nl * IN, print);
        ok &= check("loss", &loss, &loss_r, 1, 0);

        // bytes by comm.h's rules: all-gather counts my chunk, reduce-scatter the full input
        const int sh = T > 1;
        const uint64_t ag = sh * (uint64_t)Nl * (IN + OUT) * 4, rs = sh * (uint64_t)N * (OUT + IN) * 4;
        const uint64_t got_ag = hp_comm_bytes(comm, HP_G_TP, HP_OP_ALLGATHER);
        const uint64_t got_rs = hp_comm_bytes(comm, HP_G_TP, HP_OP_REDUCE_SCATTER);
        if (print) printf("  tp all-gather bytes %llu, formula N/T*(IN+OUT)*4 = %llu; reduce-scatter %llu, "
                          "formula N*(OUT+IN)*4 = %llu  %s\n", (unsigned long long)got_ag, (unsigned long long)ag,
                          (unsigned long long)got_rs, (unsigned long long)rs, got_ag == ag && got_rs == rs ? "ok" : "FAIL");
        ok &= got_ag == ag && got_rs == rs;

        hp_sgd_update(w1_t, dw1_t, Hl * IN, LR);
        hp_sgd_update(w2_t, dw2_t, OUT * Hl, LR);
        hp_sgd_update(w1, dw1_r, H * IN, LR);
        hp_sgd_update(w2, dw2_r, OUT * H, LR);
    }
    int all_ok = 0;   // every rank checked its own rows and shards: all must agree
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    hp_comm_free(comm);
    if (rank == 0) printf("%s: sequence-parallel MLP on %d ranks equals the single-process MLP for %d steps\n",
                          all_ok ? "PASS" : "FAIL", T, STEPS);
    MPI_Finalize();
    return all_ok ? 0 : HP_EXIT_FAIL;
}
