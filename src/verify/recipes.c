// recipes.c - the completeness matrix of docs/recipes.md as a table, variant by variant,
// its negative cases and the recipes hp bench measures (recipes.h).
// defines: hp_recipes, hp_negatives, hp_bench_recipes, hp_recipe_flags,
//          hp_negative_args, lookups
//
// A recipes.md row with "2 and 4" becomes one variant per value (M2-tp2, M2-tp4); every CP
// recipe runs with both rotate methods (-ag all-gather K/V, -ring send/recv ring) and the ring
// variant must also match the all-gather one; S3 is S1 and S1b again with the all-gather
// expert dispatch, which must match S1 / S1b as well as the reference.
#include <stdarg.h>
#include <string.h>
#include "hyperpar/recipes.h"

#define L0 HP_LEVEL_L0
#define L1 HP_LEVEL_L1
#define L2 HP_LEVEL_L2
#define EX1 "01_mlp_tensor_parallel"
#define EX2 "02_mlp_seq_parallel"
#define EX3 "03_mini_transformer_fsdp_tp"
#define EX4 "04_transformer_fsdp_cp"
#define EX5 "05_moe_ep_fsdp"
#define EX6 "06_moe_ep_tp_etp"
#define EX7 "08_pipeline"
#define EX8 "07_ulysses_cp"
#define EX0 "00_train"

#define ADAMW "--optimizer adamw --lr 0.001"
#define CLIP  "--max-norm 0.1"
#define NOLB  "--cp-no-balance"
#define TEXT  "--data /usr/share/common-licenses/GPL-3"
#define BF16  "--mixed-precision-param bfloat16"
#define BF16R BF16 " --mixed-precision-reduce bfloat16"
#define F8T   "--float8 tensorwise"
#define F8R   "--float8 rowwise"
#define F8G   "--float8 rowwise-gw-hp"
#define F8AG  "--float8-fsdp-all-gather"
#define PP4   "--layers 4 --pp-schedule"

//  id               row    model       R  S  C  T  sp  EP ET rotate       dispatcher   level same_as          example
const hp_recipe hp_recipes[] = {
    { "M1a",          "M1",  "tiny",     1, 1, 1, 1, -1, 1, 1, NULL,        NULL,        L0, NULL,          EX3, "baseline: one process is its own reference (checks the verifier)", NULL, 0, 0, NULL },
    { "M1b",          "M1",  "tiny",     2, 1, 1, 1, -1, 1, 1, NULL,        NULL,        L0, NULL,          EX3, "pure DDP: gradients all-reduced over dp_replicate", NULL, 0, 0, NULL },
    { "M2-tp2",       "M2",  "tiny",     1, 1, 1, 2,  0, 1, 1, NULL,        NULL,        L0, NULL,          EX1, "A-TP: colwise/rowwise TP, no sequence parallel", NULL, 0, 0, NULL },
    { "M2-tp4",       "M2",  "tiny",     1, 1, 1, 4,  0, 1, 1, NULL,        NULL,        L0, NULL,          EX1, "A-TP at tp 4 (kv heads split 4 ways)", NULL, 0, 0, NULL },
    { "M3-tp2",       "M3",  "tiny",     1, 1, 1, 2,  1, 1, 1, NULL,        NULL,        L1, NULL,          EX2, "TP + SP: all-gather in, reduce-scatter out", NULL, 0, 0, NULL },
    { "M3-tp4",       "M3",  "tiny",     1, 1, 1, 4,  1, 1, 1, NULL,        NULL,        L1, NULL,          EX2, "TP + SP at tp 4", NULL, 0, 0, NULL },
    { "M4-s2",        "M4",  "tiny",     1, 2, 1, 1, -1, 1, 1, NULL,        NULL,        L0, NULL,          EX3, "A-FSDP2: parameters sharded over dp_shard 2", NULL, 0, 0, NULL },
    { "M4-s4",        "M4",  "tiny",     1, 4, 1, 1, -1, 1, 1, NULL,        NULL,        L0, NULL,          EX3, "FSDP2 over dp_shard 4 (uneven shards padded)", NULL, 0, 0, NULL },
    { "M5-s1-ag",     "M5",  "tiny",     1, 1, 2, 1, -1, 1, 1, "allgather", NULL,        L1, NULL,          EX4, "A-CP: cp 2 with FSDP over cp only (dp_shard 1), all-gather K/V", NULL, 0, 0, NULL },
    { "M5-s1-ring",   "M5",  "tiny",     1, 1, 2, 1, -1, 1, 1, "ring",      NULL,        L1, "M5-s1-ag",    EX4, "A-CP, ring rotation of K/V", NULL, 0, 0, NULL },
    { "M5-s2-ag",     "M5",  "tiny",     1, 2, 2, 1, -1, 1, 1, "allgather", NULL,        L1, NULL,          EX4, "B-3 CP + FSDP2: fsdp = dp_shard*cp = 4, all-gather K/V", NULL, 0, 0, NULL },
    { "M5-s2-ring",   "M5",  "tiny",     1, 2, 2, 1, -1, 1, 1, "ring",      NULL,        L1, "M5-s2-ag",    EX4, "B-3 CP + FSDP2, ring rotation", NULL, 0, 0, NULL },
    { "B1",           "B1",  "tiny",     1, 2, 1, 2,  0, 1, 1, NULL,        NULL,        L1, NULL,          EX3, "TP + FSDP2 (fsdp_tp_example without SP)", NULL, 0, 0, NULL },
    { "B2",           "B2",  "tiny",     1, 2, 1, 2,  1, 1, 1, NULL,        NULL,        L1, NULL,          EX3, "TP + SP + FSDP2", NULL, 0, 0, NULL },
    { "B4-ag",        "B4",  "tiny",     1, 1, 2, 2,  1, 1, 1, "allgather", NULL,        L1, NULL,          EX3, "TP + SP + CP + FSDP2 over cp, all-gather K/V", NULL, 0, 0, NULL },
    { "B4-ring",      "B4",  "tiny",     1, 1, 2, 2,  1, 1, 1, "ring",      NULL,        L1, "B4-ag",       EX3, "TP + SP + CP + FSDP2 over cp, ring rotation", NULL, 0, 0, NULL },
    { "M6-ag",        "M6",  "tiny",     1, 2, 2, 2,  1, 1, 1, "allgather", NULL,        L1, NULL,          EX3, "C-level Titan grid (1,2,2,2) on 8 ranks, all-gather K/V", NULL, 0, 0, NULL },
    { "M6-ring",      "M6",  "tiny",     1, 2, 2, 2,  1, 1, 1, "ring",      NULL,        L1, "M6-ag",       EX3, "C-level Titan grid (1,2,2,2), ring rotation", NULL, 0, 0, NULL },
    { "M7-tp1",       "M7",  "tiny",     2, 2, 1, 1, -1, 1, 1, NULL,        NULL,        L1, NULL,          EX3, "B-5 HSDP: replicate 2 x shard 2", NULL, 0, 0, NULL },
    { "M7-tp2",       "M7",  "tiny",     2, 2, 1, 2,  1, 1, 1, NULL,        NULL,        L1, NULL,          EX3, "HSDP x TP + SP on 8 ranks", NULL, 0, 0, NULL },
    { "A-EP",         "A-EP","tiny-moe", 1, 2, 1, 1, -1, 2, 1, NULL,        NULL,        L1, NULL,          EX5, "A-EP: experts split over ep 2, all-to-all dispatch", NULL, 0, 0, NULL },
    { "S1",           "S1",  "tiny-moe", 1, 4, 1, 1, -1, 4, 1, NULL,        NULL,        L2, NULL,          EX5, "B-6 EP 4 + dual-stack FSDP2 (efsdp 1)", NULL, 0, 0, NULL },
    { "S1b",          "S1",  "tiny-moe", 1, 2, 1, 2,  1, 4, 1, NULL,        NULL,        L2, NULL,          EX6, "EP 4 borrows the TP ranks (etp 1), efsdp 1", NULL, 0, 0, NULL },
    { "S2",           "S2",  "tiny-moe", 1, 2, 1, 2,  1, 2, 2, NULL,        NULL,        L2, NULL,          EX6, "B-7 ETP = TP: experts split over ep 2 x etp 2", NULL, 0, 0, NULL },
    { "S3-S1",        "S3",  "tiny-moe", 1, 4, 1, 1, -1, 4, 1, NULL,        "allgather", L2, "S1",          EX5, "S1 through the all-gather dispatcher", NULL, 0, 0, NULL },
    { "S3-S1b",       "S3",  "tiny-moe", 1, 2, 1, 2,  1, 4, 1, NULL,        "allgather", L2, "S1b",         EX5, "S1b through the all-gather dispatcher", NULL, 0, 0, NULL },
    { "C2-ep4-ag",    "C2",  "tiny-moe", 1, 2, 2, 2,  1, 4, 1, "allgather", NULL,        L2, NULL,          EX6, "C-level MoE grid, ep 4 etp 1 (efsdp 2), all-gather K/V", NULL, 0, 0, NULL },
    { "C2-ep4-ring",  "C2",  "tiny-moe", 1, 2, 2, 2,  1, 4, 1, "ring",      NULL,        L2, "C2-ep4-ag",   EX6, "C-level MoE grid, ep 4 etp 1, ring rotation", NULL, 0, 0, NULL },
    { "C2-etp2-ag",   "C2",  "tiny-moe", 1, 2, 2, 2,  1, 2, 2, "allgather", NULL,        L2, NULL,          EX6, "C-level MoE grid, ep 2 etp 2 (efsdp 2), all-gather K/V", NULL, 0, 0, NULL },
    { "C2-etp2-ring", "C2",  "tiny-moe", 1, 2, 2, 2,  1, 2, 2, "ring",      NULL,        L2, "C2-etp2-ag",  EX6, "C-level MoE grid, ep 2 etp 2, ring rotation", NULL, 0, 0, NULL },
    { "C3-ag",        "C3",  "tiny-moe", 2, 1, 2, 2,  1, 2, 1, "allgather", NULL,        L2, NULL,          EX6, "HSDP + CP + TP + EP on 8 ranks, all-gather K/V", NULL, 0, 0, NULL },
    { "C3-ring",      "C3",  "tiny-moe", 2, 1, 2, 2,  1, 2, 1, "ring",      NULL,        L2, "C3-ag",       EX6, "HSDP + CP + TP + EP, ring rotation", NULL, 0, 0, NULL },
    // the run options the rows above leave at their defaults: AdamW, clipping that clips (the
    // tiny models' grad norm is ~0.52), and the contiguous (unbalanced) CP layout
    // --reshard-after-forward: how long a gathered unit is kept (config.h hp_run_unit_keep);
    // the same values as the default policy, fewer (or more) all-gathers
    { "M4-s2-never",  "M4",  "tiny",     1, 2, 1, 1, -1, 1, 1, NULL,        NULL,        L0, "M4-s2",       EX3, "FSDP2, reshard_after_forward never: each unit gathered once, kept to its backward", "--reshard-after-forward never", 0, 0, NULL },
    { "M7-tp1-always","M7",  "tiny",     2, 2, 1, 1, -1, 1, 1, NULL,        NULL,        L1, "M7-tp1",      EX3, "HSDP, reshard_after_forward always: [norm, output] too gathered again for its backward", "--reshard-after-forward always", 0, 0, NULL },
    { "GA-never",     "GA",  "tiny",     1, 2, 2, 2,  1, 1, 1, "allgather", NULL,        L1, "GA",          EX3, "accumulation with reshard_after_forward never: units gathered once per microbatch", "--microbatches 4 --reshard-after-forward never", 0, 0, NULL },
    { "M4-s2-adamw",  "M4",  "tiny",     1, 2, 1, 1, -1, 1, 1, NULL,        NULL,        L0, NULL,          EX3, "FSDP2 with AdamW (m and v sharded like the parameters)", ADAMW, 0, 0, NULL },
    { "B2-adamw-clip","B2",  "tiny",     1, 2, 1, 2,  1, 1, 1, NULL,        NULL,        L1, NULL,          EX3, "TP + SP + FSDP2, AdamW, grad norm clipped to 0.1", ADAMW " " CLIP, 0, 0, NULL },
    { "M7-tp2-clip",  "M7",  "tiny",     2, 2, 1, 2,  1, 1, 1, NULL,        NULL,        L1, NULL,          EX3, "HSDP x TP + SP, SGD, clipped: the norm counts each element once", CLIP, 0, 0, NULL },
    { "S1b-adamw-clip","S1", "tiny-moe", 1, 2, 1, 2,  1, 4, 1, NULL,        NULL,        L2, NULL,          EX6, "EP borrowing TP, AdamW and clipping on both stacks", ADAMW " " CLIP, 0, 0, NULL },
    { "M5-s1-nolb-ag","M5",  "tiny",     1, 1, 2, 1, -1, 1, 1, "allgather", NULL,        L1, NULL,          EX4, "cp 2, contiguous split (--cp-no-balance), all-gather K/V", NOLB, 0, 0, NULL },
    { "M5-s1-nolb-ring","M5","tiny",     1, 1, 2, 1, -1, 1, 1, "ring",      NULL,        L1, "M5-s1-nolb-ag", EX4, "cp 2, contiguous split, ring rotation", NOLB, 0, 0, NULL },
    { "M5-cp4-nolb-ag","M5", "tiny",     1, 1, 4, 1, -1, 1, 1, "allgather", NULL,        L1, NULL,          EX4, "cp 4, contiguous split: rank i computes i+1 blocks", NOLB, 0, 0, NULL },
    { "M5-cp4-nolb-ring","M5","tiny",    1, 1, 4, 1, -1, 1, 1, "ring",      NULL,        L1, "M5-cp4-nolb-ag", EX4, "cp 4, contiguous split, ring rotation", NOLB, 0, 0, NULL },
    // the second matrix (recipes.md): gradient accumulation, reduced once per step
    { "GA",           "GA",  "tiny",     1, 2, 2, 2,  1, 1, 1, "allgather", NULL,        L1, NULL,          EX3, "gradient accumulation: 4 microbatches, grads summed in order, reduced once", "--microbatches 4", 0, 0, NULL },
    { "GA-moe",       "GA",  "tiny-moe", 1, 2, 1, 2,  1, 4, 1, NULL,        NULL,        L2, NULL,          EX6, "gradient accumulation under EP borrowing TP: routing of every microbatch", "--microbatches 2", 0, 0, NULL },
    // pipeline parallel (pipeline.md; tests/run_pp_bitwise.sh checks the schedules byte for
    // byte against accumulation): tiny and tiny-moe deepened to 4 blocks
    { "P1-gpipe",     "P1",  "tiny",     1, 1, 1, 1, -1, 1, 1, NULL,        NULL,        L1, NULL,          EX7, "PP alone, GPipe: all forwards, then all backwards", "--layers 4 --pp-schedule gpipe --pp-microbatches 4", 2, 0, NULL },
    { "P1-1f1b",      "P1",  "tiny",     1, 1, 1, 1, -1, 1, 1, NULL,        NULL,        L1, "P1-gpipe",    EX7, "PP alone, 1F1B", "--layers 4 --pp-schedule 1f1b --pp-microbatches 4", 2, 0, NULL },
    { "P2",           "P2",  "tiny",     1, 1, 1, 1, -1, 1, 1, NULL,        NULL,        L2, NULL,          EX7, "a deeper pipe: pp 4, 1F1B, 8 microbatches", "--layers 4 --pp-schedule 1f1b --pp-microbatches 8 --batch 8", 4, 0, NULL },
    { "P3",           "P3",  "tiny",     1, 1, 1, 1, -1, 1, 1, NULL,        NULL,        L1, "P1-gpipe",    EX7, "virtual stages: interleaved 1F1B, V 2", "--layers 4 --pp-schedule interleaved-1f1b --pp-virtual 2 --pp-microbatches 4", 2, 0, NULL },
    { "P4",           "P4",  "tiny",     1, 1, 1, 1, -1, 1, 1, NULL,        NULL,        L2, "P1-gpipe",    EX7, "zero bubble V: the backward split into I and W", "--layers 4 --pp-schedule zbv --pp-microbatches 4", 2, 0, NULL },
    { "P5",           "P5",  "tiny",     1, 2, 1, 1, -1, 1, 1, NULL,        NULL,        L2, NULL,          EX7, "PP + FSDP2: units gathered once per step", "--layers 4 --pp-schedule 1f1b --pp-microbatches 4", 2, 0, NULL },
    { "P6",           "P6",  "tiny",     1, 1, 1, 2,  1, 1, 1, NULL,        NULL,        L2, NULL,          EX7, "PP + TP + SP: the stream crosses stages sequence-sharded", "--layers 4 --pp-schedule 1f1b --pp-microbatches 4", 2, 0, NULL },
    { "P7-ag",        "P7",  "tiny",     1, 1, 2, 1, -1, 1, 1, "allgather", NULL,        L2, NULL,          EX7, "PP + CP, all-gather K/V", "--layers 4 --pp-schedule 1f1b --pp-microbatches 4", 2, 0, NULL },
    { "P7-ring",      "P7",  "tiny",     1, 1, 2, 1, -1, 1, 1, "ring",      NULL,        L2, "P7-ag",       EX7, "PP + CP, ring rotation", "--layers 4 --pp-schedule 1f1b --pp-microbatches 4", 2, 0, NULL },
    { "P8",           "P8",  "tiny",     2, 1, 1, 2,  1, 1, 1, NULL,        NULL,        L2, NULL,          EX7, "PP (interleaved) + DDP + TP", "--layers 4 --pp-schedule interleaved-1f1b --pp-virtual 2 --pp-microbatches 4", 2, 0, NULL },
    { "P9",           "P9",  "tiny-moe", 1, 2, 1, 1, -1, 2, 1, NULL,        NULL,        L2, NULL,          EX7, "PP + EP + dual-stack FSDP", "--layers 4 --pp-schedule 1f1b --pp-microbatches 4", 2, 0, NULL },
    { "P10",          "P10", "tiny-moe", 1, 2, 1, 2,  1, 2, 2, NULL,        NULL,        L2, NULL,          EX7, "PP + EP + ETP", "--layers 4 --pp-schedule 1f1b --pp-microbatches 2", 2, 0, NULL },
    { "C4",           "C4",  "tiny",     1, 2, 2, 2,  1, 1, 1, "allgather", NULL,        L2, NULL,          EX7, "the 5-D Titan grid on 16 ranks (interleaved PP)", "--layers 4 --pp-schedule interleaved-1f1b --pp-virtual 2 --pp-microbatches 4", 2, 0, NULL },
    { "C5",           "C5",  "tiny-moe", 1, 2, 2, 2,  1, 4, 1, "allgather", NULL,        L2, NULL,          EX7, "the 5-D MoE grid on 16 ranks", "--layers 4 --pp-schedule 1f1b --pp-microbatches 2", 2, 0, NULL },
    // Ulysses (ulysses.md): alone, 2-D with ring CP, with TP/SP/FSDP and with EP
    { "U1",           "U1",  "tiny",     1, 1, 1, 1, -1, 1, 1, NULL,        NULL,        L1, NULL,          EX8, "Ulysses alone: heads scattered, tokens gathered around attention", NULL, 0, 2, NULL },
    { "U2",           "U2",  "tiny",     1, 1, 1, 1, -1, 1, 1, NULL,        NULL,        L2, NULL,          EX8, "Ulysses 4: the 4 kv heads split one per rank", NULL, 0, 4, NULL },
    { "U3",           "U3",  "tiny",     1, 1, 1, 1, -1, 1, 1, NULL,        NULL,        L2, NULL,          EX8, "Ulysses 8 > 4 kv heads: each kv head repeated twice, its grads summed", NULL, 0, 8, NULL },
    { "U4-ag",        "U4",  "tiny",     1, 1, 2, 1, -1, 1, 1, "allgather", NULL,        L1, NULL,          EX8, "2-D: Ulysses 2 x ring 2, all-gather K/V", NULL, 0, 2, NULL },
    { "U4-ring",      "U4",  "tiny",     1, 1, 2, 1, -1, 1, 1, "ring",      NULL,        L2, "U4-ag",       EX8, "2-D: Ulysses 2 x ring 2, ring rotation", NULL, 0, 2, NULL },
    { "U5",           "U5",  "tiny",     1, 2, 1, 2,  1, 1, 1, NULL,        NULL,        L2, NULL,          EX8, "Ulysses + TP + SP + FSDP2 (fsdp = dp_shard*ulysses)", NULL, 0, 2, NULL },
    { "U6",           "U6",  "tiny",     1, 1, 2, 2,  1, 1, 1, "allgather", NULL,        L2, NULL,          EX8, "Ulysses x ring x TP", NULL, 0, 2, NULL },
    { "U7",           "U7",  "tiny-moe", 1, 2, 1, 1, -1, 4, 1, NULL,        NULL,        L2, NULL,          EX8, "Ulysses + EP: ep 4 borrows the ulysses ranks", NULL, 0, 2, NULL },
    // distributed checkpoints (issue 14): save under layout A at step 3, resume under B; the
    // losses of steps 4-6 match the uninterrupted run (bitwise when B is A), AdamW
    { "K1",           "K",   "tiny",     1, 4, 1, 1, -1, 1, 1, NULL,        NULL,        L1, NULL,          EX0, "resume under the same layout: bit-identical", ADAMW, 0, 0,
      "--model tiny --dp-replicate 1 --dp-shard 4 --cp 1 --tp 1 " ADAMW },
    { "K2",           "K",   "tiny",     1, 4, 1, 1, -1, 1, 1, NULL,        NULL,        L1, NULL,          EX0, "FSDP4 -> TP2 x FSDP2", ADAMW, 0, 0,
      "--model tiny --dp-replicate 1 --dp-shard 2 --cp 1 --tp 2 " ADAMW },
    { "K3",           "K",   "tiny",     1, 2, 2, 2,  1, 1, 1, "allgather", NULL,        L1, NULL,          EX0, "the (1,2,2,2) grid -> HSDP (2,2,1,1)", ADAMW, 0, 0,
      "--model tiny --dp-replicate 2 --dp-shard 2 --cp 1 --tp 1 " ADAMW },
    { "K4",           "K",   "tiny-moe", 1, 4, 1, 1, -1, 4, 1, NULL,        NULL,        L1, NULL,          EX0, "MoE EP4/ETP1 -> EP2/ETP2: experts resharded", ADAMW, 0, 0,
      "--model tiny-moe --dp-replicate 1 --dp-shard 2 --cp 1 --tp 2 --ep 2 --etp 2 " ADAMW },
    { "K5",           "K",   "tiny",     1, 2, 1, 1, -1, 1, 1, NULL,        NULL,        L2, NULL,          EX0, "PP2 x FSDP2 -> pp 1 x FSDP4", "--layers 4 --pp-microbatches 2 " ADAMW, 2, 0,
      "--model tiny --dp-replicate 1 --dp-shard 4 --cp 1 --tp 1 --layers 4 " ADAMW },
    { "K6",           "K",   "tiny",     1, 8, 1, 1, -1, 1, 1, NULL,        NULL,        L2, NULL,          EX0, "world 8 -> world 1 on text data: the window position resumes", TEXT " " ADAMW, 0, 0,
      "--model tiny --dp-replicate 1 --dp-shard 1 --cp 1 --tp 1 " TEXT " " ADAMW },
    // activation checkpointing: the recomputed forwards (their collectives again) must match
    // the all-gather twin's trajectory (and the same layout without AC bit for bit: ac.cmake)
    { "M6-ac-full",   "M6",  "tiny",     1, 2, 2, 2,  1, 1, 1, "ring",      NULL,        L1, "M6-ag",       EX3, "M6 ring, every block recomputed in its backward (SP gathers and the ring again)", "--ac full", 0, 0, NULL },
    { "M6-ac-every2", "M6",  "tiny",     1, 2, 2, 2,  1, 1, 1, "allgather", NULL,        L1, "M6-ag",       EX3, "M6 all-gather K/V, every 2nd block recomputed (TorchTitan's ac_freq 2)", "--ac every:2", 0, 0, NULL },
    { "C2-ac-full",   "C2",  "tiny-moe", 1, 2, 2, 2,  1, 4, 1, "ring",      NULL,        L2, "C2-ep4-ag",   EX6, "C2 ep 4, every block recomputed: the EP dispatch again, the same routing", "--ac full", 0, 0, NULL },
    // bf16 mixed precision (precision.md): FSDP2's policy on every layout, checked for closeness
    // against one bf16 process over the bf16 noise, and for structure bit for bit
    { "M1b-bf16",     "M1",  "tiny",     2, 1, 1, 1, -1, 1, 1, NULL,        NULL,        L1, NULL,          EX3, "bf16 DDP: each replica rounds its local grads, summed in fp32", BF16, 0, 0, NULL },
    { "M2-tp4-bf16",  "M2",  "tiny",     1, 1, 1, 4,  0, 1, 1, NULL,        NULL,        L1, NULL,          EX1, "bf16 TP 4: row-parallel partials summed in fp32, rounded once", BF16, 0, 0, NULL },
    { "M3-tp4-bf16",  "M3",  "tiny",     1, 1, 1, 4,  1, 1, 1, NULL,        NULL,        L1, NULL,          EX2, "bf16 TP + SP 4: the reduce-scatter sums fp32 partials", BF16, 0, 0, NULL },
    { "M4-s4-bf16",   "M4",  "tiny",     1, 4, 1, 1, -1, 1, 1, NULL,        NULL,        L1, NULL,          EX3, "bf16 FSDP2 4: shards cast before a 2-byte all-gather", BF16, 0, 0, NULL },
    { "M5-s2-ag-bf16","M5",  "tiny",     1, 2, 2, 1, -1, 1, 1, "allgather", NULL,        L1, NULL,          EX4, "bf16 CP + FSDP2, all-gather K/V (fp32 partial outputs inside)", BF16, 0, 0, NULL },
    { "M5-s2-ring-bf16","M5","tiny",     1, 2, 2, 1, -1, 1, 1, "ring",      NULL,        L1, "M5-s2-ag-bf16", EX4, "bf16 CP + FSDP2, ring rotation", BF16, 0, 0, NULL },
    { "B2-bf16",      "B2",  "tiny",     1, 2, 1, 2,  1, 1, 1, NULL,        NULL,        L1, NULL,          EX3, "bf16 TP + SP + FSDP2", BF16, 0, 0, NULL },
    { "M6-ag-bf16",   "M6",  "tiny",     1, 2, 2, 2,  1, 1, 1, "allgather", NULL,        L1, NULL,          EX3, "bf16 on the Titan grid (1,2,2,2)", BF16, 0, 0, NULL },
    { "M7-tp2-bf16",  "M7",  "tiny",     2, 2, 1, 2,  1, 1, 1, NULL,        NULL,        L2, NULL,          EX3, "bf16 HSDP x TP + SP", BF16, 0, 0, NULL },
    { "S1-bf16",      "S1",  "tiny-moe", 1, 4, 1, 1, -1, 4, 1, NULL,        NULL,        L2, NULL,          EX5, "bf16 EP 4 (router in fp32, experts' outputs rounded once)", BF16, 0, 0, NULL },
    { "S3-S1-bf16",   "S3",  "tiny-moe", 1, 4, 1, 1, -1, 4, 1, NULL,        "allgather", L2, "S1-bf16",     EX5, "bf16 EP 4 through the all-gather dispatcher (2-byte token rows gathered)", BF16, 0, 0, NULL },
    { "S1b-bf16",     "S1",  "tiny-moe", 1, 2, 1, 2,  1, 4, 1, NULL,        NULL,        L2, NULL,          EX6, "bf16 EP borrowing TP", BF16, 0, 0, NULL },
    { "S2-bf16",      "S2",  "tiny-moe", 1, 2, 1, 2,  1, 2, 2, NULL,        NULL,        L2, NULL,          EX6, "bf16 ETP: expert partials summed in fp32 over tp", BF16, 0, 0, NULL },
    { "C2-ep4-ag-bf16","C2", "tiny-moe", 1, 2, 2, 2,  1, 4, 1, "allgather", NULL,        L2, NULL,          EX6, "bf16 on the C-level MoE grid", BF16, 0, 0, NULL },
    { "C3-ag-bf16",   "C3",  "tiny-moe", 2, 1, 2, 2,  1, 2, 1, "allgather", NULL,        L2, NULL,          EX6, "bf16 HSDP + CP + TP + EP", BF16, 0, 0, NULL },
    { "P1-1f1b-bf16", "P1",  "tiny",     1, 1, 1, 1, -1, 1, 1, NULL,        NULL,        L1, NULL,          EX7, "bf16 PP 1F1B: microbatch grads rounded, summed in fp32", PP4 " 1f1b --pp-microbatches 4 " BF16, 2, 0, NULL },
    { "P3-bf16",      "P3",  "tiny",     1, 1, 1, 1, -1, 1, 1, NULL,        NULL,        L2, "P1-1f1b-bf16", EX7, "bf16 interleaved 1F1B", PP4 " interleaved-1f1b --pp-virtual 2 --pp-microbatches 4 " BF16, 2, 0, NULL },
    { "P4-bf16",      "P4",  "tiny",     1, 1, 1, 1, -1, 1, 1, NULL,        NULL,        L2, "P1-1f1b-bf16", EX7, "bf16 zero bubble V (I and W apart)", PP4 " zbv --pp-microbatches 4 " BF16, 2, 0, NULL },
    { "P5-bf16",      "P5",  "tiny",     1, 2, 1, 1, -1, 1, 1, NULL,        NULL,        L2, NULL,          EX7, "bf16 PP + FSDP2: kept units checked against the master each use", PP4 " 1f1b --pp-microbatches 4 " BF16, 2, 0, NULL },
    { "C4-bf16",      "C4",  "tiny",     1, 2, 2, 2,  1, 1, 1, "allgather", NULL,        L2, NULL,          EX7, "bf16 on the 5-D Titan grid", PP4 " interleaved-1f1b --pp-virtual 2 --pp-microbatches 4 " BF16, 2, 0, NULL },
    { "C5-bf16",      "C5",  "tiny-moe", 1, 2, 2, 2,  1, 4, 1, "allgather", NULL,        L2, NULL,          EX7, "bf16 on the 5-D MoE grid", PP4 " 1f1b --pp-microbatches 2 " BF16, 2, 0, NULL },
    { "U3-bf16",      "U3",  "tiny",     1, 1, 1, 1, -1, 1, 1, NULL,        NULL,        L2, NULL,          EX8, "bf16 Ulysses 8: repeated kv heads' grads summed", BF16, 0, 8, NULL },
    { "U6-bf16",      "U6",  "tiny",     1, 1, 2, 2,  1, 1, 1, "allgather", NULL,        L2, NULL,          EX8, "bf16 Ulysses x ring x TP", BF16, 0, 2, NULL },
    { "U7-bf16",      "U7",  "tiny-moe", 1, 2, 1, 1, -1, 4, 1, NULL,        NULL,        L2, NULL,          EX8, "bf16 Ulysses + EP", BF16, 0, 2, NULL },
    { "GA-bf16",      "GA",  "tiny",     1, 2, 2, 2,  1, 1, 1, "allgather", NULL,        L1, NULL,          EX3, "bf16 accumulation: each microbatch's grads rounded, summed in fp32", "--microbatches 4 " BF16, 0, 0, NULL },
    { "M6-ac-full-bf16","M6","tiny",     1, 2, 2, 2,  1, 1, 1, "ring",      NULL,        L1, "M6-ag-bf16",  EX3, "bf16 with every block recomputed: the recompute equals its forward bit for bit", "--ac full " BF16, 0, 0, NULL },
    // --mixed-precision-reduce bfloat16 (Megatron-LM's --grad-reduce-in-bf16): the DP
    // reductions and the microbatch sum in bf16, each add rounded; closeness shows the larger error
    { "M4-s4-bf16r",  "M4",  "tiny",     1, 4, 1, 1, -1, 1, 1, NULL,        NULL,        L1, NULL,          EX3, "bf16 reduce: a 2-byte reduce-scatter, each add rounded (error beside M4-s4-bf16's)", BF16R, 0, 0, NULL },
    { "M7-tp2-bf16r", "M7",  "tiny",     2, 2, 1, 2,  1, 1, 1, NULL,        NULL,        L2, NULL,          EX3, "bf16 reduce over HSDP x TP: reduce-scatter then all-reduce in bf16", BF16R, 0, 0, NULL },
    { "GA-bf16r",     "GA",  "tiny",     1, 2, 2, 2,  1, 1, 1, "allgather", NULL,        L2, NULL,          EX3, "bf16 reduce with accumulation: the microbatch sum kept in bf16", "--microbatches 4 " BF16R, 0, 0, NULL },
    // float8 linears (precision.md §5, docs/float8.md): torchao's recipes inside the bf16 policy,
    // amax MAX-reduced over tp (structure: every scale the whole tensor's, every dgrad the
    // product of the prescribed casts), closeness against one process with the same recipe
    { "M3-tp2-f8t",   "M3",  "tiny",     1, 1, 1, 2,  1, 1, 1, NULL,        NULL,        L1, NULL,          EX2, "float8 tensorwise, TP + SP 2: amax MAX-reduced over tp", BF16 " " F8T, 0, 0, NULL },
    { "M3-tp2-ac-f8t","M3",  "tiny",     1, 1, 1, 2,  1, 1, 1, NULL,        NULL,        L1, NULL,          EX2, "float8 tensorwise with every block recomputed: the recompute casts with the forward's scales", "--ac full " BF16 " " F8T, 0, 0, NULL },
    { "M3-tp4-f8t",   "M3",  "tiny",     1, 1, 1, 4,  1, 1, 1, NULL,        NULL,        L2, NULL,          EX2, "float8 tensorwise, TP + SP 4", BF16 " " F8T, 0, 0, NULL },
    { "M3-tp4-f8r",   "M3",  "tiny",     1, 1, 1, 4,  1, 1, 1, NULL,        NULL,        L2, NULL,          EX2, "float8 rowwise, TP + SP 4: K-split rows (wo, w2) take their amax over tp", BF16 " " F8R, 0, 0, NULL },
    { "M3-tp4-f8g",   "M3",  "tiny",     1, 1, 1, 4,  1, 1, 1, NULL,        NULL,        L2, NULL,          EX2, "float8 rowwise-gw-hp, TP + SP 4: weight per tensor for dgrad, wgrad in bf16", BF16 " " F8G, 0, 0, NULL },
    { "B2-f8t",       "B2",  "tiny",     1, 2, 1, 2,  1, 1, 1, NULL,        NULL,        L2, NULL,          EX3, "float8 tensorwise, TP + SP + FSDP2 (activation amax per local batch)", BF16 " " F8T, 0, 0, NULL },
    { "B2-f8r",       "B2",  "tiny",     1, 2, 1, 2,  1, 1, 1, NULL,        NULL,        L2, NULL,          EX3, "float8 rowwise, TP + SP + FSDP2", BF16 " " F8R, 0, 0, NULL },
    { "M4-s4-f8ag",   "M4",  "tiny",     1, 4, 1, 1, -1, 1, 1, NULL,        NULL,        L2, NULL,          EX3, "float8 tensorwise FSDP2 4 with the fp8 all-gather: weight shards cast to e4m3 with the fsdp-wide amax, 1 byte gathered", BF16 " " F8T " " F8AG, 0, 0, NULL },
    { "B2-f8ag",      "B2",  "tiny",     1, 2, 1, 2,  1, 1, 1, NULL,        NULL,        L2, NULL,          EX3, "float8 tensorwise TP + SP + FSDP2 with the fp8 all-gather: weight amax over fsdp and tp", BF16 " " F8T " " F8AG, 0, 0, NULL },
    { "M6-ag-f8t",    "M6",  "tiny",     1, 2, 2, 2,  1, 1, 1, "allgather", NULL,        L2, NULL,          EX3, "float8 tensorwise on the Titan grid (1,2,2,2)", BF16 " " F8T, 0, 0, NULL },
    { "M6-ag-f8r",    "M6",  "tiny",     1, 2, 2, 2,  1, 1, 1, "allgather", NULL,        L2, NULL,          EX3, "float8 rowwise on the Titan grid (1,2,2,2)", BF16 " " F8R, 0, 0, NULL },
    { "M7-tp2-f8t",   "M7",  "tiny",     2, 2, 1, 2,  1, 1, 1, NULL,        NULL,        L2, NULL,          EX3, "float8 tensorwise, HSDP x TP + SP", BF16 " " F8T, 0, 0, NULL },
    { "M7-tp2-f8r",   "M7",  "tiny",     2, 2, 1, 2,  1, 1, 1, NULL,        NULL,        L2, NULL,          EX3, "float8 rowwise, HSDP x TP + SP", BF16 " " F8R, 0, 0, NULL },
    { "S2-f8t",       "S2",  "tiny-moe", 1, 2, 1, 2,  1, 2, 2, NULL,        NULL,        L2, NULL,          EX6, "float8 tensorwise on ETP = TP: routed experts too, one scale per expert weight (amax MAX-reduced over etp)", BF16 " " F8T, 0, 0, NULL },
    { "S2-f8r",       "S2",  "tiny-moe", 1, 2, 1, 2,  1, 2, 2, NULL,        NULL,        L2, NULL,          EX6, "float8 rowwise on ETP = TP: routed experts too, the rows of w2 (K = the etp-split hidden) take their amax over etp in a size the routing sets", BF16 " " F8R, 0, 0, NULL },
    { "P6-f8t",       "P6",  "tiny",     1, 1, 1, 2,  1, 1, 1, NULL,        NULL,        L2, NULL,          EX7, "float8 tensorwise, PP + TP + SP: each stage's linears scale over tp", "--layers 4 --pp-schedule 1f1b --pp-microbatches 4 " BF16 " " F8T, 2, 0, NULL },
    { "P6-f8r",       "P6",  "tiny",     1, 1, 1, 2,  1, 1, 1, NULL,        NULL,        L2, NULL,          EX7, "float8 rowwise, PP + TP + SP", "--layers 4 --pp-schedule 1f1b --pp-microbatches 4 " BF16 " " F8R, 2, 0, NULL },
    { "U5-f8t",       "U5",  "tiny",     1, 2, 1, 2,  1, 1, 1, NULL,        NULL,        L2, NULL,          EX8, "float8 tensorwise, Ulysses + TP + SP + FSDP2 (activation amax per rank's heads' batch)", BF16 " " F8T, 0, 2, NULL },
    { "U5-f8r",       "U5",  "tiny",     1, 2, 1, 2,  1, 1, 1, NULL,        NULL,        L2, NULL,          EX8, "float8 rowwise, Ulysses + TP + SP + FSDP2", BF16 " " F8R, 0, 2, NULL },
    { "S1b-f8t",      "S1",  "tiny-moe", 1, 2, 1, 2,  1, 4, 1, NULL,        NULL,        L2, NULL,          EX6, "float8 tensorwise, EP 4 borrowing TP: each routed expert's amax over the rows routed to it", BF16 " " F8T, 0, 0, NULL },
    { "S1b-f8r",      "S1",  "tiny-moe", 1, 2, 1, 2,  1, 4, 1, NULL,        NULL,        L2, NULL,          EX6, "float8 rowwise, EP 4 borrowing TP: routed experts per row", BF16 " " F8R, 0, 0, NULL },
    { "S2-ac-f8t",    "S2",  "tiny-moe", 1, 2, 1, 2,  1, 2, 2, NULL,        NULL,        L2, NULL,          EX6, "float8 tensorwise ETP, every block recomputed: the routed experts' recompute casts with the forward's scales", "--ac full " BF16 " " F8T, 0, 0, NULL },
    { "C2-ep4-ag-f8t","C2",  "tiny-moe", 1, 2, 2, 2,  1, 4, 1, "allgather", NULL,        L2, NULL,          EX6, "float8 tensorwise on the C-level MoE grid (cp 2, tp 2, ep 4): activation amax per cp shard's local batch", BF16 " " F8T, 0, 0, NULL },
    { "C2-ep4-ag-f8r","C2",  "tiny-moe", 1, 2, 2, 2,  1, 4, 1, "allgather", NULL,        L2, NULL,          EX6, "float8 rowwise on the C-level MoE grid (cp 2, tp 2, ep 4)", BF16 " " F8R, 0, 0, NULL },
    { "P4m-f8t",      "P4",  "tiny-moe", 1, 1, 1, 2,  1, 2, 1, NULL,        NULL,        L2, NULL,          EX7, "float8 tensorwise, zero bubble V + TP + EP: a MoE block makes its weight grads in its I (no W), a dense one in its W", "--layers 4 --pp-schedule zbv --pp-microbatches 4 " BF16 " " F8T, 2, 0, NULL },
    { "P4m-f8r",      "P4",  "tiny-moe", 1, 1, 1, 2,  1, 2, 1, NULL,        NULL,        L2, NULL,          EX7, "float8 rowwise, zero bubble V + TP + EP", "--layers 4 --pp-schedule zbv --pp-microbatches 4 " BF16 " " F8R, 2, 0, NULL },
    // async TP (docs/async_tp.md): each plain TP + SP recipe again with --async-tp; bitwise the
    // plain one (the CTest async_tp_equals_tp compares their dumps), and its trajectory here
    { "M3-tp2-async", "M3",  "tiny",     1, 1, 1, 2,  1, 1, 1, NULL,        NULL,        L1, "M3-tp2",      EX2, "async TP 2: each SP all-gather and reduce-scatter overlapped with its GEMMs, forward and backward", "--async-tp", 0, 0, NULL },
    { "M3-tp4-async", "M3",  "tiny",     1, 1, 1, 4,  1, 1, 1, NULL,        NULL,        L1, "M3-tp4",      EX2, "async TP 4: peers consumed in the order r+1, r+2, r+3", "--async-tp", 0, 0, NULL },
    { "M3-tp4-bf16-async","M3","tiny",   1, 1, 1, 4,  1, 1, 1, NULL,        NULL,        L1, "M3-tp4-bf16", EX2, "bf16 async TP 4: fp32 partials sent, summed in rank order", BF16 " --async-tp", 0, 0, NULL },
    { "B2-async",     "B2",  "tiny",     1, 2, 1, 2,  1, 1, 1, NULL,        NULL,        L1, "B2",          EX3, "async TP + SP + FSDP2", "--async-tp", 0, 0, NULL },
    { "B2-bf16-async","B2",  "tiny",     1, 2, 1, 2,  1, 1, 1, NULL,        NULL,        L1, "B2-bf16",     EX3, "bf16 async TP + SP + FSDP2", BF16 " --async-tp", 0, 0, NULL },
    { "M3-tp2-f8t-async","M3","tiny",    1, 1, 1, 2,  1, 1, 1, NULL,        NULL,        L2, "M3-tp2-f8t",  EX2, "float8 tensorwise async TP: the 1-byte SP all-gathers overlapped with their GEMMs (every row block cast with the tensor's scale)", BF16 " " F8T " --async-tp", 0, 0, NULL },
    { "B2-f8ag-async","B2",  "tiny",     1, 2, 1, 2,  1, 1, 1, NULL,        NULL,        L2, "B2-f8ag",     EX3, "float8 tensorwise async TP + FSDP2 with the fp8 parameter all-gather", BF16 " " F8T " --float8-fsdp-all-gather --async-tp", 0, 0, NULL },
    { "M6-ag-async",  "M6",  "tiny",     1, 2, 2, 2,  1, 1, 1, "allgather", NULL,        L1, "M6-ag",       EX3, "async TP on the Titan grid (1,2,2,2)", "--async-tp", 0, 0, NULL },
    { "M6-ag-bf16-async","M6","tiny",    1, 2, 2, 2,  1, 1, 1, "allgather", NULL,        L1, "M6-ag-bf16",  EX3, "bf16 async TP on the Titan grid (1,2,2,2)", BF16 " --async-tp", 0, 0, NULL },
    { "M7-tp2-async", "M7",  "tiny",     2, 2, 1, 2,  1, 1, 1, NULL,        NULL,        L2, "M7-tp2",      EX3, "async TP under HSDP", "--async-tp", 0, 0, NULL },
    { "M7-tp2-bf16-async","M7","tiny",   2, 2, 1, 2,  1, 1, 1, NULL,        NULL,        L2, "M7-tp2-bf16", EX3, "bf16 async TP under HSDP", BF16 " --async-tp", 0, 0, NULL },
    { "S2-async",     "S2",  "tiny-moe", 1, 2, 1, 2,  1, 2, 2, NULL,        NULL,        L2, "S2",          EX6, "async TP with ETP experts (MoE FFNs stay plain)", "--async-tp", 0, 0, NULL },
    { "S2-bf16-async","S2",  "tiny-moe", 1, 2, 1, 2,  1, 2, 2, NULL,        NULL,        L2, "S2-bf16",     EX6, "bf16 async TP with ETP experts", BF16 " --async-tp", 0, 0, NULL },
    { "C4-async",     "C4",  "tiny",     1, 2, 2, 2,  1, 1, 1, "allgather", NULL,        L2, "C4",          EX7, "async TP on the 5-D Titan grid", "--layers 4 --pp-schedule interleaved-1f1b --pp-virtual 2 --pp-microbatches 4 --async-tp", 2, 0, NULL },
    { "C4-bf16-async","C4",  "tiny",     1, 2, 2, 2,  1, 1, 1, "allgather", NULL,        L2, "C4-bf16",     EX7, "bf16 async TP on the 5-D Titan grid", PP4 " interleaved-1f1b --pp-virtual 2 --pp-microbatches 4 " BF16 " --async-tp", 2, 0, NULL },
    { "C5-async",     "C5",  "tiny-moe", 1, 2, 2, 2,  1, 4, 1, "allgather", NULL,        L2, "C5",          EX7, "async TP on the 5-D MoE grid", "--layers 4 --pp-schedule 1f1b --pp-microbatches 2 --async-tp", 2, 0, NULL },
    { "C5-bf16-async","C5",  "tiny-moe", 1, 2, 2, 2,  1, 4, 1, "allgather", NULL,        L2, "C5-bf16",     EX7, "bf16 async TP on the 5-D MoE grid", PP4 " 1f1b --pp-microbatches 2 " BF16 " --async-tp", 2, 0, NULL },
    { "K2-bf16",      "K",   "tiny",     1, 4, 1, 1, -1, 1, 1, NULL,        NULL,        L1, NULL,          EX0, "bf16 FSDP4 -> TP2 x FSDP2: the fp32 master saved and resharded", ADAMW " " BF16, 0, 0,
      "--model tiny --dp-replicate 1 --dp-shard 2 --cp 1 --tp 2 " ADAMW " " BF16 },
};
const int hp_n_recipes = (int)(sizeof hp_recipes / sizeof hp_recipes[0]);

// Regexes: POSIX ERE; brackets instead of backslashes ("[(]", "[*]") so the same text works in
// C, in CMake strings and in shell scripts.
#define T_  "--model tiny-moe"
const hp_negative hp_negatives[] = {
    { "neg-world", "product of degrees != world launched",
      "run --nproc 6 --tp 2 --cp 2 --dp-shard 2", 2,
      "world size: dp_replicate[(]1[)][*]dp_shard[(]2[)][*]cp[(]2[)][*]tp[(]2[)][*]pp[(]1[)] = 8 != 6 ranks launched", HP_BADFILE_NONE },
    { "neg-infer", "dp_shard -1 cannot be inferred from the world",
      "run --tp 4 --nproc 6", 2,
      "dp_shard inference: world size 6 is not a multiple of dp_replicate[*]cp[*]tp[*]pp = 1[*]1[*]4[*]1 = 4", HP_BADFILE_NONE },
    { "neg-degree-tp", "a degree < 1",
      "run --tp 0", 2, "degree must be >= 1 [(]except dp_shard[)]: tp = 0", HP_BADFILE_NONE },
    { "neg-degree-cp", "a degree < 1",
      "run --cp -1", 2, "degree must be >= 1 [(]except dp_shard[)]: cp = -1", HP_BADFILE_NONE },
    { "neg-dp-shard-0", "dp_shard 0",
      "run --dp-shard 0", 2, "dp_shard must be -1 [(]infer[)] or >= 1: dp_shard = 0", HP_BADFILE_NONE },
    { "neg-dp-shard-m2", "dp_shard < -1",
      "run --dp-shard=-2", 2, "dp_shard must be -1 [(]infer[)] or >= 1: dp_shard = -2", HP_BADFILE_NONE },
    { "neg-etp-no-ep", "etp > 1 while ep == 1",
      "run " T_ " --tp 2 --dp-shard 2 --etp 2", 2, "etp [(]2[)] > 1 needs ep > 1: ep = 1", HP_BADFILE_NONE },
    { "neg-etp-not-tp", "ep > 1 with etp not in {1, tp}",
      "run " T_ " --tp 2 --dp-shard 4 --ep 2 --etp 4", 2, "etp must be 1 or tp when ep > 1: etp = 4, tp = 2", HP_BADFILE_NONE },
    { "neg-ep-sct", "ep does not divide S*C*T",
      "run " T_ " --dp-shard 2 --ep 4", 2, "ep [(]4[)] must divide dp_shard[*]cp[*]tp = 2[*]1[*]1 = 2", HP_BADFILE_NONE },
    { "neg-ep-sc", "ep does not divide S*C when etp = tp",
      "run " T_ " --dp-shard 2 --tp 2 --ep 4 --etp 2", 2,
      "ep [(]4[)] must divide dp_shard[*]cp = 2[*]1 = 2 when etp = tp [(]2[)]", HP_BADFILE_NONE },
    { "neg-experts", "num_experts % ep != 0",
      "run " T_ " --dp-shard 3 --ep 3 --batch 9", 2, "ep [(]3[)] must divide num_experts [(]8[)]", HP_BADFILE_NONE },
    { "neg-ep-dense", "ep > 1 on a dense model",
      "run --dp-shard 2 --ep 2", 2, "ep [(]2[)] > 1 needs a MoE model: 'tiny' is dense", HP_BADFILE_NONE },
    { "neg-seq-cp", "seq_len % (2*C*T) != 0 with cp > 1",
      "run --cp 2 --tp 2 --seq-len 30", 2,
      "context parallel: 2[*]cp[*]tp = 2[*]2[*]2 = 8 must divide seq_len [(]30[)]", HP_BADFILE_NONE },
    { "neg-seq-sp", "seq_len % T != 0 with sequence parallel",
      "run --tp 2 --seq-len 33", 2, "sequence parallel: tp [(]2[)] must divide seq_len [(]33[)]", HP_BADFILE_NONE },
    { "neg-token-split", "tokens of a rank not divisible by tp when EP borrows TP ranks",
      "run " T_ " --dp-shard 2 --tp 2 --ep 4 --no-sp --seq-len 31 --batch 2", 2,
      "expert dispatch over tp: tp [(]2[)] must divide the tokens of one rank", HP_BADFILE_NONE },
    { "neg-heads", "n_heads not divisible by tp",
      "run --tp 3", 2, "tp [(]3[)] must divide n_heads [(]8[)]", HP_BADFILE_NONE },
    { "neg-kv-heads", "n_kv_heads not divisible by tp",
      "run --tp 8", 2, "tp [(]8[)] must divide n_kv_heads [(]4[)]", HP_BADFILE_NONE },
    { "neg-batch", "global batch % (R*S) != 0",
      "run --dp-shard 3", 2, "dp_replicate[*]dp_shard = 1[*]3 = 3 must divide the global batch [(]8[)]", HP_BADFILE_NONE },
    { "neg-pp-layers", "L < P*V (pipeline.md)",
      "run --pp 4", 2, "pipeline: n_layers [(]2[)] must be >= pp[*]pp_virtual = 4[*]1 = 4 stages", HP_BADFILE_NONE },
    { "neg-dispatcher", "not implemented: a dispatcher not built here",
      "run " T_ " --dp-shard 2 --ep 2 --dispatcher deepep", 2,
      "--dispatcher expects alltoall or allgather, got 'deepep'", HP_BADFILE_NONE },
    { "neg-rotate", "not a CP rotate method (TorchTitan's alltoall is accepted: hp's ring)",
      "run --cp 2 --cp-rotate p2p", 2, "--cp-rotate expects allgather or ring, got 'p2p'", HP_BADFILE_NONE },
    { "neg-load-missing", "bad input file: does not exist",
      "run --load {DIR}/absent.safetensors", 2, "--load: .*absent[.]safetensors: cannot open", HP_BADFILE_NONE },
    { "neg-load-truncated", "bad input file: truncated safetensors",
      "run --load {DIR}/truncated.safetensors", 2, "--load: .*truncated[.]safetensors: .*(truncated|exceeds|outside|short)",
      HP_BADFILE_TRUNCATED },
    { "neg-load-shape", "bad input file: wrong shapes",
      "run --load {DIR}/wrong_shape.safetensors", 2,
      "--load: .*wrong_shape[.]safetensors: tensor 'tok_embeddings[.]weight' has shape [[]64,256[]], the model needs [[]256,64[]]",
      HP_BADFILE_SHAPE },
    { "neg-load-names", "bad input file: wrong names",
      "run --load {DIR}/wrong_names.safetensors", 2,
      "--load: .*wrong_names[.]safetensors: tensor 'output[.]weight' is missing", HP_BADFILE_NAMES },
    { "neg-load-text", "bad input file: not a safetensors file",
      "run --load {DIR}/not_safetensors.txt", 2, "--load: .*not_safetensors[.]txt: .*not a safetensors file",
      HP_BADFILE_TEXT },
};
const int hp_n_negatives = (int)(sizeof hp_negatives / sizeof hp_negatives[0]);


// `hp bench --recipes`: the bytes each moves in a step against the formula, one per style
const char *const hp_bench_recipes[] = {
    "M1b", "M4-s2", "M7-tp1", "M3-tp2", "M2-tp2", "M5-s1-ag", "B2", "M5-s2-ag", "A-EP", "S1b",
};
const int hp_n_bench_recipes = (int)(sizeof hp_bench_recipes / sizeof hp_bench_recipes[0]);

const char *hp_level_name(hp_level l) {
    static const char *const names[] = { "L0", "L1", "L2" };
    return (l >= 0 && l < HP_LEVEL_COUNT) ? names[l] : "L?";
}

int hp_level_parse(const char *s) {
    for (int l = 0; l < HP_LEVEL_COUNT; l++)
        if (!strcmp(s, hp_level_name((hp_level)l))) return l;
    return -1;
}

const hp_recipe *hp_recipe_find(const char *id) {
    for (int i = 0; i < hp_n_recipes; i++)
        if (!strcmp(hp_recipes[i].id, id)) return &hp_recipes[i];
    return NULL;
}

const hp_negative *hp_negative_find(const char *id) {
    for (int i = 0; i < hp_n_negatives; i++)
        if (!strcmp(hp_negatives[i].id, id)) return &hp_negatives[i];
    return NULL;
}

// Appends printf-style text, never past cap; returns the new length (capped).
static int put(char *out, int cap, int len, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int put(char *out, int cap, int len, const char *fmt, ...) {
    if (len >= cap - 1) return len;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out + len, (size_t)(cap - len), fmt, ap);
    va_end(ap);
    if (n < 0) return len;
    return len + n < cap - 1 ? len + n : cap - 1;
}

int hp_recipe_flags(const hp_recipe *r, char *out, int cap) {
    int n = 0;
    out[0] = '\0';
    // every degree explicit: the child launches exactly R*S*C*T ranks and infers nothing
    n = put(out, cap, n, "--model %s --dp-replicate %d --dp-shard %d --cp %d --tp %d", r->model,
            r->R, r->S, r->C, r->T);
    if (r->U > 1) n = put(out, cap, n, " --ulysses %d", r->U);
    if (r->P > 1) n = put(out, cap, n, " --pp %d", r->P);
    if (r->sp == 0) n = put(out, cap, n, " --no-sp");
    if (r->sp == 1) n = put(out, cap, n, " --sp");
    if (r->EP > 1 || r->ET > 1) n = put(out, cap, n, " --ep %d --etp %d", r->EP, r->ET);
    if (r->rotate) n = put(out, cap, n, " --cp-rotate %s", r->rotate);
    if (r->dispatcher) n = put(out, cap, n, " --dispatcher %s", r->dispatcher);
    if (r->extra) n = put(out, cap, n, " %s", r->extra);
    return n;
}

int hp_negative_args(const hp_negative *neg, const char *dir, char *out, int cap) {
    int n = 0;
    out[0] = '\0';
    for (const char *s = neg->args; *s;) {
        if (!strncmp(s, "{DIR}", 5)) {
            n = put(out, cap, n, "%s", dir);
            s += 5;
        } else {
            n = put(out, cap, n, "%c", *s);
            s++;
        }
    }
    return n;
}

