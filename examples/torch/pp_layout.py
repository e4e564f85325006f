"""pp_layout.py - torch_layout.py's pipeline: torch.distributed.pipelining as TorchTitan's
pipeline_llama does it.

The model is split by blocks into P*V stages, hp's split (src/dims/pp_layout.c): stage s holds a
contiguous run of blocks, L // (P*V) each and one more for the first L % (P*V) stages; the first
stage keeps tok_embeddings, the last the final norm and output. Each stage is its own copy of the
full model with the other blocks deleted (so named_parameters() keep the dump's names), with tp and
FSDP applied to it as in the SPMD path, and its own PipelineStage. The stages go to the pp ranks
the way the schedule expects them (and hp places them):

- gpipe, 1f1b: one stage per rank (V = 1), ScheduleGPipe / Schedule1F1B;
- interleaved-1f1b: V stages per rank in loop order (rank r holds stages r, r+P, ..., TorchTitan's
  and torch's generate_stage_to_rank_mapping(style="loop")), ScheduleInterleaved1F1B;
- zbv: two stages per rank in V order (rank r holds stages r and 2P-1-r, style="v"),
  ScheduleZBVZeroBubble (its split backward: input gradients first, weight gradients later).

--pp-virtual 1 (torch_layout.py's default) means hp's default under interleaved-1f1b and zbv: 2.

FSDP2 (dp, or bf16's MixedPrecisionPolicy on a 1-rank mesh when there is no dp) goes on each stage
module, per block and on the stage root, with reshard_after_forward=False, TorchTitan's default
under pp. With the blocks resharded after forward, ScheduleZBVZeroBubble's split backward loses
weight gradients silently (docs/torch.md); HP_TORCH_PP_RESHARD=1 reshards, to show it.

The loss of a microbatch is its CE sum divided by the global token count, so the schedule must not
scale the gradients again: scale_grads=False (TorchTitan passes the same). The faults:
--bug pp-microbatch keeps the default scale_grads=True (every gradient divided by M once more);
--bug pp-stage-order (interleaved) builds rank r's chunk c from the blocks of stage r*V+c (the
contiguous split) while declaring it stage c*P+r, the schedule's loop order: the blocks run out of
order, silently.
"""
import copy
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F

SCHEDULES = {"gpipe": "ScheduleGPipe", "1f1b": "Schedule1F1B", "interleaved-1f1b": "ScheduleInterleaved1F1B",
             "zbv": "ScheduleZBVZeroBubble"}
MULTI = ("interleaved-1f1b", "zbv")
PP_BUGS = ("pp-microbatch", "pp-stage-order")


def stage_rank(schedule, s, P):
    """hp's placement (src/dims/pp_layout.c), the same as torch's loop / v mappings."""
    if schedule == "zbv":
        return s if s < P else 2 * P - 1 - s
    return s % P


def stage_blocks(s, L, S):
    """hp's split: contiguous blocks, the first L % S stages one more."""
    base, extra = L // S, L % S
    first = s * base + min(s, extra)
    return range(first, first + base + (s < extra))


def run_pp(a, model, mesh, names, tok, lab, n_global, n_local):
    import torch_layout as tl
    from torch.distributed import pipelining
    from torch.distributed.pipelining import PipelineStage
    if a.pp_schedule not in SCHEDULES:
        tl.fail2(f"--pp-schedule {a.pp_schedule}: not one of {', '.join(SCHEDULES)}")
    if a.cp > 1:
        tl.fail2("cp with pp is not written here")
    if a.bug not in ("none",) + PP_BUGS:
        tl.fail2(f"--bug {a.bug} is not written for pp")
    L, P, M = len(model.layers), a.pp, a.pp_microbatches
    V = a.pp_virtual
    if a.pp_schedule in MULTI and V == 1:
        V = 2                                   # hp's default (hp_pp_virtual)
    if a.pp_schedule not in MULTI and V != 1:
        tl.fail2(f"--pp-virtual {V} with {a.pp_schedule}: a single-stage schedule (one stage per rank)")
    if a.pp_schedule == "zbv" and V != 2:
        tl.fail2(f"zbv with --pp-virtual {V}: ScheduleZBVZeroBubble takes exactly 2 stages per rank")
    if a.bug == "pp-stage-order" and a.pp_schedule != "interleaved-1f1b":
        tl.fail2("--bug pp-stage-order needs --pp-schedule interleaved-1f1b")
    S = P * V
    if L < S:
        tl.fail2(f"{S} stages (pp {P} x virtual {V}) for the model's {L} blocks: a stage without blocks")
    if tok.shape[0] % M:
        tl.fail2(f"--pp-microbatches {M} does not divide the rank's {tok.shape[0]} sequences")
    r = mesh.get_local_rank("pp")
    mine = [s for s in range(S) if stage_rank(a.pp_schedule, s, P) == r]
    pp_group = mesh["pp"].get_group()
    dp_dims = [n for n in ("dp_replicate", "dp_shard") if n in names]
    dp_mesh = tl.submesh(mesh, names, ("dp_replicate", "dp_shard")) if dp_dims else None
    if a.mixed_precision_param == "bfloat16" and not dp_dims:
        # bf16 without dp: FSDP2 on a 1-rank mesh carries each stage's MixedPrecisionPolicy, as in
        # the SPMD path; every rank builds the (world, 1) mesh, so its groups are made collectively
        if a.tp > 1:
            tl.fail2("bf16 with tp and no dp: MixedPrecisionPolicy needs fully_shard over a dp mesh")
        from torch.distributed.device_mesh import init_device_mesh
        dp_mesh = init_device_mesh("cpu", (dist.get_world_size(), 1), mesh_dim_names=("all", "one"))["one"]

    modules, stages = [], []
    for c, s in enumerate(mine):
        blocks_of = s
        if a.bug == "pp-stage-order":
            blocks_of = r * V + c               # the contiguous split, under loop-order stage ids
        keep = set(stage_blocks(blocks_of, L, S))
        m = copy.deepcopy(model)
        for k in list(m.layers.keys()):
            if int(k) not in keep:
                del m.layers[k]
        if s != 0:
            m.tok_embeddings = None
        if s != S - 1:
            m.norm = None
            m.output = None
        if a.tp > 1:
            tl.apply_tp(m, tl.submesh(mesh, names, ("tp",)), a.sp, a.bug)
        if dp_mesh is not None:   # FSDP2 per block and on the stage module (MixedPrecisionPolicy)
            for fm in tl.apply_fsdp(m, dp_mesh, a):
                # TorchTitan's default under pp: no reshard after forward (the blocks stay unsharded
                # until the stage's backward). Resharding the blocks loses weight gradients under
                # ZBV's split backward (docs/torch.md); HP_TORCH_PP_RESHARD=1 keeps it, to show that
                fm.set_reshard_after_forward(os.environ.get("HP_TORCH_PP_RESHARD") == "1")
        modules.append(m)
        stages.append(PipelineStage(m, stage_index=s, num_stages=S, device=torch.device("cpu"), group=pp_group))
    del model
    print(f"pp_layout: pp rank {r}: " + ", ".join(
        f"stage {st.stage_index} blocks {sorted(int(k) for k in m.layers.keys())}" for st, m in zip(stages, modules))
        + f" ({S} stages, {a.pp_schedule}, M {M})", flush=True)

    def loss_fn(logits, target):
        from torch.distributed.tensor import DTensor
        if isinstance(logits, DTensor):   # loss parallel is not used under pp: the full logits
            logits = logits.full_tensor()
        return F.cross_entropy(logits.flatten(0, 1).float(), target.flatten(0, 1), ignore_index=-100,
                               reduction="sum") / n_global

    cls = getattr(pipelining, SCHEDULES[a.pp_schedule])
    try:
        sched = cls(stages if a.pp_schedule in MULTI else stages[0], n_microbatches=M, loss_fn=loss_fn,
                    scale_grads=a.bug == "pp-microbatch")
    except ValueError as e:   # the schedule's own limits (e.g. 1F1B: M >= stages)
        tl.fail2(f"torch {torch.__version__} {cls.__name__}: {e}")
    losses = []
    first = any(st.is_first for st in stages)
    last = any(st.is_last for st in stages)
    args = (tok,) if first else ()
    kw = {"target": lab, "losses": losses} if last else {}
    sched.step(*args, return_outputs=False, **kw)
    lv = torch.zeros(1, dtype=torch.float64)
    if losses:
        lv += sum(x.detach().double() for x in losses)
    dist.all_reduce(lv, group=pp_group)          # the last stage's microbatch losses, to every stage
    for d in ("dp_replicate", "dp_shard"):
        if d in names:
            dist.all_reduce(lv, group=mesh[d].get_group())
    grads, after = {}, {}
    for m in modules:
        grads.update({tl.clean_name(n): tl.full(p.grad) if p.grad is not None else torch.zeros(p.shape)
                      for n, p in m.named_parameters()})
    for m in modules:
        opt = tl.make_opt(a, m)
        opt.step()
        after.update({tl.clean_name(n): tl.full(p) for n, p in m.named_parameters()})
    # every stage's tensors to rank 0 (the tiny models of the checks: a pickled dict is cheap)
    parts = [None] * dist.get_world_size() if dist.get_rank() == 0 else None
    dist.gather_object({"grads": grads, "params": after}, parts, dst=0)
    merged = {"grads": {}, "params": {}, "collectives": {}}
    if parts:
        for p in parts:
            merged["grads"].update(p["grads"])
            merged["params"].update(p["params"])
    return lv.item(), merged
