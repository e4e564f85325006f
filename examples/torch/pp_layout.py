"""pp_layout.py - torch_layout.py's pipeline: torch.distributed.pipelining as TorchTitan's
pipeline_llama does it (the model split by blocks into one stage per pp rank, the first stage
keeping tok_embeddings, the last the final norm and output; a PipelineStage each; ScheduleGPipe or
Schedule1F1B over --pp-microbatches microbatches of the rank's sequences), then tp and FSDP on each
stage module as in the SPMD path.

The loss of a microbatch is its CE sum divided by the global token count, so the schedule must not
scale the gradients again: scale_grads=False (TorchTitan passes the same). The --bug pp-microbatch
keeps the default scale_grads=True: every gradient divided by M once more.
"""
import torch
import torch.distributed as dist
import torch.nn.functional as F

SCHEDULES = {"gpipe": "ScheduleGPipe", "1f1b": "Schedule1F1B"}


def run_pp(a, model, mesh, names, tok, lab, n_global, n_local):
    import torch_layout as tl
    from torch.distributed import pipelining
    from torch.distributed.pipelining import PipelineStage
    if a.pp_schedule not in SCHEDULES:
        tl.fail2(f"--pp-schedule {a.pp_schedule}: only gpipe and 1f1b are written here (Interleaved1F1B and "
                 "ZBVZeroBubble need --pp-virtual 2 stages per rank)")
    if a.pp_virtual != 1:
        tl.fail2("--pp-virtual > 1 is not written here")
    if a.cp > 1:
        tl.fail2("cp with pp is not written here")
    if a.bug not in ("none", "pp-microbatch"):
        tl.fail2(f"--bug {a.bug} is not written for pp")
    L, P, M = len(model.layers), a.pp, a.pp_microbatches
    if L % P:
        tl.fail2(f"pp {P} does not divide the model's {L} blocks (one equal share of blocks per stage here)")
    if tok.shape[0] % M:
        tl.fail2(f"--pp-microbatches {M} does not divide the rank's {tok.shape[0]} sequences")
    s = mesh.get_local_rank("pp")
    keep = set(range(s * L // P, (s + 1) * L // P))
    for k in list(model.layers.keys()):
        if int(k) not in keep:
            del model.layers[k]
    if s != 0:
        model.tok_embeddings = None
    if s != P - 1:
        model.norm = None
        model.output = None
    if a.tp > 1:
        tl.apply_tp(model, tl.submesh(mesh, names, ("tp",)), a.sp, a.bug)
    dp_dims = [n for n in ("dp_replicate", "dp_shard") if n in names]
    if dp_dims:
        tl.apply_fsdp(model, tl.submesh(mesh, names, ("dp_replicate", "dp_shard")), a)

    def loss_fn(logits, target):
        from torch.distributed.tensor import DTensor
        if isinstance(logits, DTensor):   # loss parallel is not used under pp: the full logits
            logits = logits.full_tensor()
        return F.cross_entropy(logits.flatten(0, 1).float(), target.flatten(0, 1), ignore_index=-100,
                               reduction="sum") / n_global

    pp_group = mesh["pp"].get_group()
    stage = PipelineStage(model, stage_index=s, num_stages=P, device=torch.device("cpu"), group=pp_group)
    sched = getattr(pipelining, SCHEDULES[a.pp_schedule])(stage, n_microbatches=M, loss_fn=loss_fn,
                                                          scale_grads=a.bug == "pp-microbatch")
    losses = []
    if s == 0:
        sched.step(tok)
    elif s == P - 1:
        sched.step(target=lab, losses=losses)
    else:
        sched.step()
    lv = torch.zeros(1, dtype=torch.float64)
    if losses:
        lv += sum(x.detach().double() for x in losses)
    dist.all_reduce(lv, group=pp_group)          # the last stage's microbatch losses, to every stage
    for d in ("dp_replicate", "dp_shard"):
        if d in names:
            dist.all_reduce(lv, group=mesh[d].get_group())
    grads = {tl.clean_name(n): tl.full(p.grad) if p.grad is not None else torch.zeros(p.shape)
             for n, p in model.named_parameters()}
    opt = tl.make_opt(a, model)
    opt.step()
    after = {tl.clean_name(n): tl.full(p) for n, p in model.named_parameters()}
    # every stage's tensors to rank 0 (the tiny models of the checks: a pickled dict is cheap)
    parts = [None] * dist.get_world_size() if dist.get_rank() == 0 else None
    dist.gather_object({"grads": grads, "params": after}, parts, dst=0)
    merged = {"grads": {}, "params": {}, "collectives": {}}
    if parts:
        for p in parts:
            merged["grads"].update(p["grads"])
            merged["params"].update(p["params"])
    return lv.item(), merged
