// local_shapes.c - one rank's local shapes from dims + model + run + coordinates (shapes.h).
// Pure: the trainer, the model, the styles and the estimates all read the same numbers.
#include <string.h>
#include "hyperpar/shapes.h"

int hp_dims_sp_on(const hp_dims *d) { return d->sp > 0 && d->tp > 1; }

void hp_local_shapes_init(hp_local_shapes *s, const hp_model_config *m, const hp_dims *d,
                          const hp_run_config *rc, const hp_coords *co) {
    memset(s, 0, sizeof *s);
    const int T = d->tp;
    s->T = T;
    s->sp = hp_dims_sp_on(d);
    s->M = rc ? hp_run_microbatches(rc) : 1;
    if (rc) {
        s->Bl_step = rc->batch / hp_dims_batch(d);
        s->Bl = s->Bl_step / s->M;
        s->Sc_cp = rc->seq_len / d->cp;
        s->Sc = s->Sc_cp / d->ulysses;
    }
    s->Ss = s->sp ? s->Sc / T : s->Sc;
    s->Nres = s->Bl * s->Ss;
    s->Nreg = s->Bl * s->Sc;
    s->D = m->dim;
    s->hd = hp_model_head_dim(m);
    s->Hl = m->n_heads / T;
    s->Hkvl = m->n_kv_heads / T;
    s->Fl = m->ffn_hidden / T;
    s->Vl = m->vocab_size / T;
    s->v0 = co->t * s->Vl;
    s->token_split = hp_dims_token_split(d);
    s->token_rank = s->token_split > 1 ? co->t : 0;
    if (m->num_experts > 0) {
        s->El = m->num_experts / d->ep;
        s->e0 = (d->ep > 1 ? co->ep : 0) * s->El;
        s->Fel = m->moe_hidden / hp_dims_expert_tp(d);
        s->Fsl = m->moe_hidden * m->n_shared_experts / T;
    }
}
