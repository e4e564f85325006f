// test_rng.c - the counter-based generator: fixed formulas (golden values an outside tool
// reproduces, computed independently in Python), determinism, independence of call order,
// open-interval uniforms, and standard-normal moments.
#include "hyperpar/rng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "test_check.h"


int main(void) {
    // golden values: the formulas are part of the interchange (see src/util/rng.c)
    CHECK(hp_hash64(0, 0, 0, 0) == 0x1957a7604e215178ULL, "hash(0,0,0,0) = %llx", (unsigned long long)hp_hash64(0, 0, 0, 0));
    CHECK(hp_hash64(1, 2, 3, 4) == 0xde59611246bc83f8ULL, "hash(1,2,3,4)");
    CHECK(hp_hash64(UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX) == 0xbbb5199cadc44646ULL, "hash(max)");
    CHECK(hp_hash64(42, hp_name_id("norm.weight"), 12345, 0) == 0x6024fc5ffbceab55ULL, "hash(42,name,12345,0)");
    // FNV-1a 64 reference vectors
    CHECK(hp_name_id("") == 0xcbf29ce484222325ULL, "fnv('')");
    CHECK(hp_name_id("a") == 0xaf63dc4c8601ec8cULL, "fnv('a')");
    CHECK(hp_name_id("foobar") == 0x85944171f73967e8ULL, "fnv('foobar')");
    CHECK(hp_name_id("layers.0.attention.wq.weight") == 0x2c403a3125427ab5ULL, "fnv(wq)");
    CHECK(hp_rng_uniform(42, 7, 5) == 0.6931336077293735, "uniform(42,7,5) = %.17g", hp_rng_uniform(42, 7, 5));
    const float want_normal[4] = {2.634580612182617f, 0.4545031487941742f, 0.8726188540458679f, -0.1655198633670807f};
    uint64_t emb = hp_name_id("tok_embeddings.weight");
    for (int i = 0; i < 4; i++)
        CHECK(fabsf(hp_rng_normal(42, emb, (uint64_t)i) - want_normal[i]) <= 1e-6f * fabsf(want_normal[i]) + 1e-7f,
              "normal(42,emb,%d) = %.9g want %.9g", i, hp_rng_normal(42, emb, (uint64_t)i), want_normal[i]);

    // every word of the key matters
    uint64_t base = hp_hash64(5, 6, 7, 8);
    CHECK(base != hp_hash64(6, 6, 7, 8) && base != hp_hash64(5, 7, 7, 8) && base != hp_hash64(5, 6, 8, 8) &&
          base != hp_hash64(5, 6, 7, 9), "a changed key word must change the hash");
    CHECK(hp_hash64(1, 0, 0, 0) != hp_hash64(0, 1, 0, 0), "words are not interchangeable");

    // determinism and order independence: fill forwards, then backwards, then a strided shard
    enum { N = 4096 };
    static float fwd[N], bwd[N];
    for (int i = 0; i < N; i++) fwd[i] = hp_rng_normal(7, 99, (uint64_t)i);
    for (int i = N - 1; i >= 0; i--) bwd[i] = hp_rng_normal(7, 99, (uint64_t)i);
    int same = 1;
    for (int i = 0; i < N; i++) same &= fwd[i] == bwd[i];
    CHECK(same, "normal values depend on call order");
    same = 1;
    for (int i = 3; i < N; i += 5) same &= hp_rng_normal(7, 99, (uint64_t)i) == fwd[i]; // a "shard" fills alone
    CHECK(same, "a shard's values differ from the full tensor's");
    int differ = 0;
    for (int i = 0; i < 64; i++) differ += hp_rng_normal(8, 99, (uint64_t)i) != fwd[i];
    CHECK(differ >= 63, "another seed gives the same values (%d of 64 differ)", differ);

    // uniform: inside (0,1), mean 1/2, variance 1/12
    double s = 0, s2 = 0, lo = 1, hi = 0;
    const int M = 100000;
    for (int i = 0; i < M; i++) {
        double u = hp_rng_uniform(3, 11, (uint64_t)i);
        s += u; s2 += u * u;
        if (u < lo) lo = u;
        if (u > hi) hi = u;
    }
    CHECK(lo > 0.0 && hi < 1.0, "uniform outside (0,1): [%g, %g]", lo, hi);
    CHECK(fabs(s / M - 0.5) < 0.005, "uniform mean %g", s / M);
    CHECK(fabs(s2 / M - s * s / M / M - 1.0 / 12) < 0.002, "uniform variance %g", s2 / M - s * s / M / M);

    // normal: mean 0, std 1, tails sensible, all finite
    double n1 = 0, n2 = 0, n4 = 0;
    int finite = 1, beyond3 = 0;
    for (int i = 0; i < M; i++) {
        double x = hp_rng_normal(1234, hp_name_id("layers.1.feed_forward.w1.weight"), (uint64_t)i);
        finite &= isfinite(x) != 0;
        n1 += x; n2 += x * x; n4 += x * x * x * x;
        beyond3 += fabs(x) > 3;
    }
    double mean = n1 / M, var = n2 / M - mean * mean;
    printf("normal over %d samples: mean %.5f std %.5f kurtosis %.4f, |x|>3: %d\n", M, mean, sqrt(var),
           n4 / M / (var * var), beyond3);
    CHECK(finite, "normal produced a non-finite value");
    CHECK(fabs(mean) < 0.015, "normal mean %g", mean);       // 0 +- ~5 sigma (sigma = 0.0032)
    CHECK(fabs(sqrt(var) - 1) < 0.015, "normal std %g", sqrt(var));
    CHECK(fabs(n4 / M / (var * var) - 3) < 0.1, "normal kurtosis %g", n4 / M / (var * var));
    CHECK(beyond3 > 200 && beyond3 < 350, "normal tail count %d (expect ~270)", beyond3);

    // adjacent indices are uncorrelated (the counter must not leak into the value)
    double c = 0;
    for (int i = 0; i + 1 < M; i++)
        c += (double)hp_rng_normal(5, 5, (uint64_t)i) * hp_rng_normal(5, 5, (uint64_t)i + 1);
    CHECK(fabs(c / M) < 0.015, "lag-1 correlation %g", c / M);

    return test_summary("test_rng");
}
