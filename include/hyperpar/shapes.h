// shapes.h - one rank's local shapes: what every layer above sizes its buffers and loops by,
// computed once from the degrees, the model, the run and the rank's mesh coordinates.
// defines: hp_local_shapes, hp_local_shapes_init, hp_dims_sp_on
//
//   hp_coords co;  hp_mesh_coords(&dims, rank, &co);
//   hp_local_shapes sh;  hp_local_shapes_init(&sh, &model, &dims, &run, &co);
//   // sh.Nres rows of the residual stream, sh.Nreg rows inside a tp region, sh.Hl heads ...
#ifndef HYPERPAR_SHAPES_H
#define HYPERPAR_SHAPES_H
#include "config.h"
#include "dims.h"
#include "mesh.h"

typedef struct hp_local_shapes {
    int M;              // microbatches per step
    int Bl_step, Bl;    // sequences of this rank's data shard per step, per microbatch (Bl_step / M)
    int Sc_cp;          // the cp-local tokens S/C of a sequence (what the attention core sees)
    int Sc;             // this rank's tokens of a sequence S/(C*U): cp, then ulysses
    int T, sp;          // tp degree; sequence parallel on (hp_dims_sp_on)
    int Ss;             // residual-stream tokens of a sequence: Sc/T under sp, else Sc
    int Nres, Nreg;     // rows of the residual stream (Bl*Ss), rows inside a tp region (Bl*Sc)
    int D, hd;          // model dim, head dim
    int Hl, Hkvl;       // query and kv heads of this tp rank
    int Fl;             // dense FFN hidden of this tp rank
    int Vl, v0;         // vocab slice of this tp rank: ids [v0, v0+Vl)
    // MoE (0 without experts): local experts [e0, e0+El), their hidden width Fel (Fe/expert_tp),
    // the shared experts' width Fsl (tp slice), and the token split of the dispatch
    int El, e0, Fel, Fsl;
    int token_split;    // tp ranks splitting the routed rows (hp_dims_token_split)
    int token_rank;     // this rank's slice (its tp coordinate; 0 without split)
} hp_local_shapes;

// Sequence parallel is on: asked for (sp > 0) and there is a tp group to split over. The one
// definition every layer uses (hp_dims_validate leaves d->sp equal to it).
int hp_dims_sp_on(const hp_dims *d);

// Fills s for the rank at coordinates co (d validated; rc may be NULL: then M = 1 and the
// batch and sequence sizes are 0).
void hp_local_shapes_init(hp_local_shapes *s, const hp_model_config *m, const hp_dims *d,
                          const hp_run_config *rc, const hp_coords *co);

#endif
