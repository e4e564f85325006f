// 01_mlp_tensor_parallel - recipe M2 / A-TP on a toy MLP, the C twin of PyTorch's
// tensor_parallel_example.py: in_proj (10 -> 32) column-wise, ReLU, out_proj (32 -> 5) row-wise,
// one all-reduce at the end of the forward (and one for the input gradient in the backward).
// Every rank also runs the whole MLP in one piece and checks its shards against it, every step.
//
//   mpirun -np 2 example_01_mlp_tensor_parallel [--tp 2]      (world = tp)
//
//   column-wise: rank t owns rows [t*H/T, (t+1)*H/T) of in_proj.weight (H, IN): h_t = relu(x w1_t^T)
//   row-wise:    rank t owns the same columns of out_proj.weight (OUT, H):  y = sum_t h_t w2_t^T
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include <hyperpar/comm.h>
#include <hyperpar/dims.h>
#include <hyperpar/inspect.h>
#include <hyperpar/kernels.h>
#include <hyperpar/rng.h>

enum { N = 20, IN = 10, H = 32, OUT = 5, STEPS = 3 };
static const float LR = 0.25f;
static const double TOL = 1e-5;

// The same numbers on every rank, keyed by (seed 7, tensor name, index).
static void fill(float *x, int n, const char *name, float scale) {
    for (int i = 0; i < n; i++) x[i] = scale * hp_rng_normal(7, hp_name_id(name), (uint64_t)i);
}
static void relu(float *h, const float *a, int n) {
    for (int i = 0; i < n; i++) h[i] = a[i] > 0 ? a[i] : 0;
}
static void relu_backward(float *da, const float *dh, const float *a, int n) {
    for (int i = 0; i < n; i++) da[i] = a[i] > 0 ? dh[i] : 0;
}
// loss = 0.5 * sum((y - target)^2) / N, dy = (y - target) / N
static float mse(float *dy, const float *y, const float *target, int n) {
    double l = 0;
    for (int i = 0; i < n; i++) {
        dy[i] = (y[i] - target[i]) / (float)N;
        l += 0.5 * (double)(y[i] - target[i]) * (y[i] - target[i]);
    }
    return (float)(l / N);
}
// a shard against the slice of the reference it stands for: one line on rank 0
static int check(const char *name, const float *a, const float *ref, int n, int print) {
    const double e = hp_rel_error(a, ref, (size_t)n);
    if (print) printf("  %-28s rel err %.3e  %s\n", name, e, e <= TOL ? "ok" : "FAIL");
    return e <= TOL;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, world;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    // the mesh: a 1-D tp mesh over every rank (--tp T says it; the default is tp = world)
    const int usage_ok = argc == 1 || (argc == 3 && !strcmp(argv[1], "--tp"));
    hp_dims dims = hp_dims_default();
    dims.tp = argc == 3 ? atoi(argv[2]) : world;
    dims.dp_shard = 1;
    dims.world = world;
    char err[256] = "usage: example_01_mlp_tensor_parallel [--tp T]";
    if (usage_ok && hp_dims_validate(&dims, NULL, NULL, err, sizeof err) == 0 && H % dims.tp)
        snprintf(err, sizeof err, "tp (%d) must divide the %d hidden units", dims.tp, H);
    if (*err) {
        if (rank == 0) fprintf(stderr, "01_mlp_tensor_parallel: %s\n", err);
        MPI_Finalize();
        return HP_EXIT_CONFIG;
    }
    hp_comm *comm = hp_comm_init(MPI_COMM_WORLD, &dims, 1);   // every group of the mesh; fixed sum order
    const int T = dims.tp, t = hp_comm_rank(comm, HP_G_TP), Hl = H / T;
    if (rank == 0) printf("toy MLP %d -> %d -> %d, batch %d, tensor parallel over %d ranks (%d hidden units each)\n",
                          IN, H, OUT, N, T, Hl);

    // full weights (the reference) and this rank's shards
    float w1[H * IN], w2[OUT * H], w1_t[H * IN], w2_t[OUT * H];
    fill(w1, H * IN, "in_proj.weight", 0.3f);
    fill(w2, OUT * H, "out_proj.weight", 0.2f);
    memcpy(w1_t, w1 + t * Hl * IN, sizeof(float) * Hl * IN);                     // rows of w1
    for (int o = 0; o < OUT; o++) memcpy(w2_t + o * Hl, w2 + o * H + t * Hl, sizeof(float) * Hl);  // columns of w2

    int ok = 1;
    for (int step = 0; step < STEPS; step++) {
        float x[N * IN], target[N * OUT];   // same batch on every rank (like torch.manual_seed(i))
        char key[32];
        snprintf(key, sizeof key, "x.%d", step);
        fill(x, N * IN, key, 1.0f);
        snprintf(key, sizeof key, "target.%d", step);
        fill(target, N * OUT, key, 1.0f);

        // --- reference: the whole MLP in one process ---
        float a_r[N * H], h_r[N * H], y_r[N * OUT], dy_r[N * OUT], dh_r[N * H], da_r[N * H];
        float dw1_r[H * IN] = { 0 }, dw2_r[OUT * H] = { 0 }, dx_r[N * IN] = { 0 };
        hp_linear_forward(a_r, x, w1, N, IN, H);
        relu(h_r, a_r, N * H);
        hp_linear_forward(y_r, h_r, w2, N, H, OUT);
        float loss_r = mse(dy_r, y_r, target, N * OUT);
        memset(dh_r, 0, sizeof dh_r);
        hp_linear_backward(dh_r, dw2_r, dy_r, h_r, w2, N, H, OUT);
        relu_backward(da_r, dh_r, a_r, N * H);
        hp_linear_backward(dx_r, dw1_r, da_r, x, w1, N, IN, H);

        // --- tensor parallel: colwise in_proj, rowwise out_proj ---
        hp_comm_reset_stats(comm);
        float a_t[N * H], h_t[N * H], y[N * OUT], dy[N * OUT], dh_t[N * H] = { 0 }, da_t[N * H];
        float dw1_t[H * IN] = { 0 }, dw2_t[OUT * H] = { 0 }, dx[N * IN] = { 0 };
        hp_linear_forward(a_t, x, w1_t, N, IN, Hl);          // (N, H/T): no communication
        relu(h_t, a_t, N * Hl);
        hp_linear_forward(y, h_t, w2_t, N, Hl, OUT);         // (N, OUT) partial sums
        hp_allreduce_sum(comm, HP_G_TP, y, N * OUT);         // RowwiseParallel's output: Replicate
        float loss = mse(dy, y, target, N * OUT);        // every rank has the full y
        hp_linear_backward(dh_t, dw2_t, dy, h_t, w2_t, N, Hl, OUT);
        relu_backward(da_t, dh_t, a_t, N * Hl);
        hp_linear_backward(dx, dw1_t, da_t, x, w1_t, N, IN, Hl);
        hp_allreduce_sum(comm, HP_G_TP, dx, N * IN);         // ColwiseParallel's input grad: partial

        // --- compare every shard with the slice of the reference it stands for ---
        float ref_dw2_t[OUT * H];
        for (int o = 0; o < OUT; o++) memcpy(ref_dw2_t + o * Hl, dw2_r + o * H + t * Hl, sizeof(float) * Hl);
        const int print = rank == 0;
        if (print) printf("step %d: loss %.7f, single process %.7f\n", step + 1, loss, loss_r);
        ok &= check("output y", y, y_r, N * OUT, print);
        ok &= check("in_proj.weight grad (shard)", dw1_t, dw1_r + t * Hl * IN, Hl * IN, print);
        ok &= check("out_proj.weight grad (shard)", dw2_t, ref_dw2_t, OUT * Hl, print);
        ok &= check("input grad dx", dx, dx_r, N * IN, print);
        ok &= check("loss", &loss, &loss_r, 1, 0);

        // bytes moved: two all-reduces of the buffer handed in (comm.h counting rules)
        const uint64_t want = T > 1 ? (uint64_t)(N * OUT + N * IN) * sizeof(float) : 0;
        const uint64_t got = hp_comm_bytes(comm, HP_G_TP, HP_OP_ALLREDUCE);
        if (print) printf("  tp all-reduce bytes %llu, formula (N*OUT + N*IN)*4 = %llu  %s\n",
                          (unsigned long long)got, (unsigned long long)want, got == want ? "ok" : "FAIL");
        ok &= got == want;

        // SGD on the shards and on the reference
        hp_sgd_update(w1_t, dw1_t, Hl * IN, LR);
        hp_sgd_update(w2_t, dw2_t, OUT * Hl, LR);
        hp_sgd_update(w1, dw1_r, H * IN, LR);
        hp_sgd_update(w2, dw2_r, OUT * H, LR);
        ok &= check("in_proj.weight after SGD", w1_t, w1 + t * Hl * IN, Hl * IN, print);
    }
    // every rank checked its own shards: all must agree
    int all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (rank == 0) printf("%s: tensor-parallel MLP on %d ranks equals the single-process MLP for %d steps\n",
                          all_ok ? "PASS" : "FAIL", T, STEPS);
    hp_comm_free(comm);
    MPI_Finalize();
    return all_ok ? 0 : HP_EXIT_FAIL;
}
