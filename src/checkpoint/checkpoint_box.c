// checkpoint_box.c - boxes of a full tensor: a rank's shard as a box (from the parameter
// table alone), intersections, names, the copy between two box-shaped arrays that both
// save (padded shard -> contiguous piece) and load (piece -> padded shard) use, and zlib's
// CRC32 of a buffer.
#include <string.h>
#include <zlib.h>
#include "checkpoint/checkpoint_internal.h"

const char *const hp_ck_kind_name[HP_CK_KINDS] = { "param", "exp_avg", "exp_avg_sq" };
const char *const hp_ck_decay_name[3] = { "linear", "sqrt", "cosine" };

int64_t hp_box_numel(const hp_box *b) {
    int64_t n = 1;
    for (int i = 0; i < b->ndim; i++) n *= b->hi[i] > b->lo[i] ? b->hi[i] - b->lo[i] : 0;
    return n;
}

int hp_box_intersect(const hp_box *a, const hp_box *b, hp_box *out) {
    if (a->ndim != b->ndim) return 0;
    out->ndim = a->ndim;
    for (int i = 0; i < a->ndim; i++) {
        out->lo[i] = a->lo[i] > b->lo[i] ? a->lo[i] : b->lo[i];
        out->hi[i] = a->hi[i] < b->hi[i] ? a->hi[i] : b->hi[i];
        if (out->hi[i] <= out->lo[i]) return 0;
    }
    return 1;
}

int hp_box_equal(const hp_box *a, const hp_box *b) {
    if (a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->lo[i] != b->lo[i] || a->hi[i] != b->hi[i]) return 0;
    return 1;
}

void hp_box_str(const hp_box *b, char *buf, size_t n) {
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < b->ndim && o < n; i++)
        o += (size_t)snprintf(buf + o, n - o, "%s%lld:%lld", i ? "," : "", (long long)b->lo[i],
                              (long long)b->hi[i]);
}

void hp_ck_piece_key(char *buf, size_t n, hp_ck_kind kind, const char *tensor, const hp_box *b) {
    char bs[96];
    hp_box_str(b, bs, sizeof bs);
    if (kind == HP_CK_PARAM) snprintf(buf, n, "%s@%s", tensor, bs);
    else snprintf(buf, n, "%s:%s@%s", hp_ck_kind_name[kind], tensor, bs);
}

// The padded shard is [outer dims][fsdp_chunk rows][inner dims] of the tp/ep-local tensor
// (hp_param_shard_to_local), i.e. the local shape with fsdp_chunk rows on fsdp_dim, starting
// at this rank's first row; only its first shard_rows rows hold data.
void hp_ck_shard_box(const hp_param *p, hp_box *box, int64_t origin[HP_CKPT_MAXDIM],
                     int64_t dims[HP_CKPT_MAXDIM]) {
    box->ndim = p->ndim;
    for (int i = 0; i < p->ndim; i++) {
        origin[i] = p->local_start[i];
        dims[i] = p->local_shape[i];
        if (i == p->fsdp_dim) {
            origin[i] += (int64_t)p->fsdp_rank * p->fsdp_chunk;
            dims[i] = p->fsdp_chunk;
        }
        box->lo[i] = origin[i];
        box->hi[i] = origin[i] + (i == p->fsdp_dim ? p->shard_rows : p->local_shape[i]);
    }
}

void hp_box_copy(const hp_box *region, const float *src, const int64_t *src_origin,
                 const int64_t *src_dims, float *dst, const int64_t *dst_origin,
                 const int64_t *dst_dims) {
    // pad to 3 dims with leading [0, 1) so that one triple loop covers 1-D..3-D
    const int nd = region->ndim, pad = HP_CKPT_MAXDIM - nd;
    int64_t lo[3], hi[3], so[3], sd[3], doo[3], dd[3];
    for (int i = 0; i < 3; i++) {
        const int k = i - pad;
        lo[i] = k < 0 ? 0 : region->lo[k];
        hi[i] = k < 0 ? 1 : region->hi[k];
        so[i] = k < 0 ? 0 : src_origin[k];
        sd[i] = k < 0 ? 1 : src_dims[k];
        doo[i] = k < 0 ? 0 : dst_origin[k];
        dd[i] = k < 0 ? 1 : dst_dims[k];
    }
    const size_t run = (size_t)(hi[2] - lo[2]) * sizeof(float);
    for (int64_t a = lo[0]; a < hi[0]; a++)
        for (int64_t b = lo[1]; b < hi[1]; b++) {
            const int64_t s = ((a - so[0]) * sd[1] + (b - so[1])) * sd[2] + (lo[2] - so[2]);
            const int64_t d = ((a - doo[0]) * dd[1] + (b - doo[1])) * dd[2] + (lo[2] - doo[2]);
            memcpy(dst + d, src + s, run);
        }
}

uint32_t hp_ck_crc32(const void *p, size_t n) {
    uLong c = crc32(0L, Z_NULL, 0);
    const unsigned char *b = p;
    while (n > 0) {   // zlib takes uInt lengths
        const uInt k = n > (1u << 30) ? (1u << 30) : (uInt)n;
        c = crc32(c, b, k);
        b += k;
        n -= k;
    }
    return (uint32_t)c;
}

uint32_t hp_ck_crc32_combine(uint32_t crc_a, uint32_t crc_b, int64_t len_b) {
    return (uint32_t)crc32_combine((uLong)crc_a, (uLong)crc_b, (z_off_t)len_b);
}

void hp_ck_owned(const hp_model_config *m, const hp_dims *d, int rank, const hp_param_table *t,
                 int *owned) {
    for (int i = 0; i < t->n; i++) {
        hp_box b;
        int64_t o[3], dm[3];
        hp_ck_shard_box(&t->p[i], &b, o, dm);
        owned[i] = hp_box_numel(&b) > 0;
    }
    for (int r = 0; r < rank; r++) {
        hp_param_table lower;
        if (hp_params_build(&lower, m, d, r) != 0) continue;
        for (int i = 0; i < t->n; i++) {
            if (!owned[i]) continue;
            hp_box mine, theirs;
            int64_t o[3], dm[3];
            hp_ck_shard_box(&t->p[i], &mine, o, dm);
            hp_ck_shard_box(&lower.p[i], &theirs, o, dm);
            if (hp_box_equal(&mine, &theirs)) owned[i] = 0;
        }
        hp_params_free(&lower);
    }
}
