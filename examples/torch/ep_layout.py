"""ep_layout.py - the MoE blocks under PyTorch's tensor parallel and expert parallel, the way
TorchTitan 0.2.2's apply_moe_ep_tp and apply_fsdp lay them out (docs/torch.md), for
torch_layout.py. Written from TorchTitan's design, not its code:

- the meshes: the dense mesh is torch_layout.py's (dp_replicate, dp_shard, cp, tp); the experts
  get TorchTitan's sparse mesh, the same world unflattened as (dp_replicate, efsdp, ep, etp) with
  efsdp = dp_shard * cp * tp / (ep * etp). So ep borrows ranks and never multiplies the world:
  with etp = 1 an ep group is a contiguous block of the dp_shard * cp * tp ranks (it takes in the
  tp ranks), with etp = tp it is that block strided by tp (hp's --ep/--etp, docs/moe.md). Under
  cp an ep group spans cp ranks too: the MoE is token-wise, so each rank dispatches the rows of
  its own sequence shard, and the experts' FSDP unit (efsdp) takes in cp as the dense one does;
- under tp the MoE block's boundary is TorchTitan's PrepareModuleInputOutput: the input Shard(1)
  (SP) all-gathered to Replicate and handed over as a local tensor, the output a Partial sum over
  tp reduce-scattered back to Shard(1) (all-reduced to Replicate without SP), local as the
  dense blocks' outputs are. The router's gate
  is replicated (NoParallel), the shared experts are Colwise / Rowwise(Partial) over tp;
- the routed experts: TensorParallel with ep = 1 (w1/w3 Shard(1), w2 Shard(2) on tp: each rank
  runs Fe/tp hidden units of every expert), ExpertParallel with etp = 1 (Shard(0) on ep: E/ep
  experts a rank; the rows go to the experts' owners with an all-to-all of the per-expert counts
  and an all_to_all_single_autograd of the rows, are permuted local-expert-major, and the inverse
  all-to-all brings each entry's output home), and ExpertTensorParallel with etp = tp (Shard(0)
  on ep and Shard(1)/(2) on etp). With ep > 1, etp = 1 under tp the rows are split over the tp
  ranks before the dispatch (ReordererSequenceParallel: tp rank t routes rows [t*n, (t+1)*n) of
  the flattened B*S rows, the entries' indices offset back to global rows);
- FSDP: the routed experts are their own fully_shard unit over (dp_replicate, efsdp), the rest of
  the block (router, shared experts) shards with the block over the dense dp mesh. Every unit's
  divide factor is 1 (TorchTitan's token-sum loss: the gradients are sums).

Where the gradient crosses a tp boundary as a partial sum, it is declared Partial, so DTensor
sums it over tp: the routed experts' input (each tp rank holds a hidden shard, or its own rows,
of the experts' backward) and the router's logits (the gate gradient dout . y_k, with y_k a
partial sum over tp or rows of one tp rank only). TorchTitan 0.2.2 declares the first under
TensorParallel / ExpertTensorParallel only and the second nowhere (its default scores the
experts' input, score_before_experts, where model.md weights their output): its pytorch/torchtitan
#2387, fixed after 0.2.2 by #2416, which marks the router's output grad Partial as done here.
"""
import os
import sys

import torch
import torch.distributed as dist
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spec_model import not_expressible  # noqa: E402

BUGS = {
    "ep-combine-twice": "ep: the dispatch scales each routed row by its gate before the all-to-all (DeepEP's "
                        "score_before_experts) while the combine weights the experts' outputs by the gates "
                        "again, so every routed output is g * Expert(g * x)",
    "router-replicate": "MoE under tp: the router's logits handed back local with their gradient taken as "
                        "Replicate (to_local() without grad_placements, TorchTitan 0.2.2's NoParallel), while "
                        "each tp rank holds a partial sum of it (pytorch/torchtitan #2387)",
    "expert-divide": "ep: the routed experts' own fully_shard given the data-parallel degree as its divide "
                     "factor (VeOmni's set_gradient_divide_factor for experts, TorchTitan's "
                     "ParallelDims.fsdp_gradient_divide_factor = dp_replicate*dp_shard*cp) while the dense units "
                     "sum (factor 1) under the token-sum loss: the experts' gradients come out divided by dp",
}


def fail2(msg):
    not_expressible("torch_layout", msg)


def moe_blocks(model):
    return [b for b in model.layers.values() if getattr(b, "is_moe", False)]


def check(a, cfg):
    """Refuse (exit 2, one line) what is not written here; called before the process group."""
    moe = cfg.get("num_experts", 0) > 0
    ep, etp, tp = a.ep, a.etp, a.tp
    if a.dispatcher != "alltoall" and ep > 1:
        fail2(f"--dispatcher {a.dispatcher}: TorchTitan's ExpertParallel dispatches with all-to-all only "
              "(hp's allgather dispatcher all-gathers every row to every ep member; no PyTorch style does that)")
    if a.bug == "router-replicate" and not (moe and tp > 1):
        fail2("--bug router-replicate needs an MoE model under --tp > 1")
    if a.bug in BUGS and a.bug != "router-replicate" and ep == 1:
        fail2(f"--bug {a.bug} needs --ep > 1")
    if ep == 1 and etp == 1:
        if moe and tp > 1 and a.mixed_precision_param == "bfloat16":
            fail2("bf16 MoE under tp is not written here (layout_model.py's bf16 MoE is spec_model.moe, one piece)")
        if moe and a.pp > 1 and tp > 1:
            fail2("MoE under tp with pp is not written here")
        return
    if not moe:
        fail2(f"--ep {ep} --etp {etp} on a dense model (no experts)")
    if etp > 1 and ep == 1:
        fail2("--etp > 1 needs --ep > 1")
    if etp not in (1, tp):
        fail2(f"--etp {etp}: TorchTitan (and hp) take etp = 1 or etp = tp ({tp})")
    if a.pp > 1:
        fail2("ep with pp is not written here (pp_layout.py splits the blocks, not the experts)")
    region = a.dp_shard * a.cp * tp
    if region % (ep * etp):
        fail2(f"ep {ep} * etp {etp} does not divide dp_shard * cp * tp = {region}")
    if etp == 1 and tp > 1 and ep % tp:
        fail2(f"ep {ep} with etp 1 must take in every tp rank (TorchTitan borrows all of tp): tp {tp} "
              "does not divide it")
    if cfg["num_experts"] % ep:
        fail2(f"ep {ep} does not divide the {cfg['num_experts']} experts")
    if a.mixed_precision_param == "bfloat16":
        fail2("bf16 under ep is not written here (layout_model.py's bf16 MoE is spec_model.moe, one piece)")


# ---- the styles ------------------------------------------------------------------------------------
def _partial_grad(x, mesh):
    """x as it is, its gradient declared a partial sum over mesh (summed there in backward)."""
    from torch.distributed.tensor import DTensor, Partial, Replicate
    return DTensor.from_local(x, mesh, (Replicate(),), run_check=False).to_local(grad_placements=(Partial(),))


def _style_base():
    from torch.distributed.tensor.parallel import ParallelStyle
    return ParallelStyle


class RouterNoParallel(_style_base()):
    """moe.router.gate under tp: the weight Replicate on tp (TorchTitan's NoParallel), the input the
    block's replicated local rows, the logits handed back local with their gradient Partial
    (replicate=True: the fault router-replicate, TorchTitan 0.2.2's to_local())."""

    def __init__(self, replicate=False):
        super().__init__()
        self.replicate = replicate

    def _apply(self, module, mesh):
        from torch.distributed.tensor import DTensor, Replicate, distribute_module, distribute_tensor

        def part(name, mod, m):
            for n, p in list(mod.named_parameters(recurse=False)):
                mod.register_parameter(n, nn.Parameter(distribute_tensor(p, m, [Replicate()])))

        def inp(mod, inputs, m):
            return (DTensor.from_local(inputs[0], m, (Replicate(),), run_check=False),) + tuple(inputs[1:])

        def out(mod, o, m):
            from torch.distributed.tensor import Partial
            return o.to_local() if self.replicate else o.to_local(grad_placements=(Partial(),))
        return distribute_module(module, mesh, part, inp, out)


class TokenSplit(_style_base()):
    """moe.reorderer with ep > 1, etp = 1 under tp (TorchTitan's ReordererSequenceParallel): tp rank
    t routes rows [t*n, (t+1)*n) of the flattened rows; the entries' indices are offset back to
    the global (row, k) entries."""

    def _apply(self, module, mesh):
        from torch.distributed.tensor import distribute_module

        def inp(mod, inputs, m):
            g, idx = inputs
            N, t = g.shape[0], m.get_local_rank()
            if N % m.size():
                raise SystemExit(f"ep_layout: {N} rows do not split over tp {m.size()}")
            n = N // m.size()
            return g[t * n:(t + 1) * n], idx[t * n:(t + 1) * n]

        def out(mod, outputs, m):
            g_sorted, order, counts = outputs
            return g_sorted, order + g_sorted.shape[0] * m.get_local_rank(), counts
        return distribute_module(module, mesh, None, inp, out)


class PartialGrad(_style_base()):
    """moe.routed_rows with ep > 1, etp = 1 under tp: the rows' gradient declared a partial sum over
    tp (each tp rank's routed entries cover its own rows only; TorchTitan #2387, case 1)."""

    def _apply(self, module, mesh):
        from torch.distributed.tensor import distribute_module
        return distribute_module(module, mesh, None, lambda mod, inputs, m: (_partial_grad(inputs[0], m),))


class ExpertsTP(_style_base()):
    """moe.experts under tp with ep = 1 (TorchTitan's TensorParallel for GroupedExperts): w1/w3
    Shard(1), w2 Shard(2); every rank runs every row on its hidden shard, so the output is a partial
    sum over tp and so is the input's gradient (declared Partial)."""

    def _apply(self, module, mesh):
        from torch.distributed.tensor import Shard, distribute_module, distribute_tensor

        def part(name, mod, m):
            for n, d in (("w1", 1), ("w2", 2), ("w3", 1)):
                mod.register_parameter(n, nn.Parameter(distribute_tensor(getattr(mod, n), m, [Shard(d)])))

        def inp(mod, inputs, m):
            x, counts = inputs
            return _partial_grad(x, m), counts
        return distribute_module(module, mesh, part, inp)


class ExpertParallel(_style_base()):
    """moe.experts with ep > 1: the experts Shard(0) on ep (with etp = tp also Shard(1)/(2) on etp:
    TorchTitan's ExpertTensorParallel). Dispatch: the per-expert counts go round with an all-to-all,
    the rows with all_to_all_single_autograd (rows for ep member j are the entries of its experts,
    contiguous since sorted by expert), then they are permuted from source-major to
    local-expert-major. Combine: unpermute, and the inverse all-to-all brings each entry's output
    (unweighted) home. partial_mesh: where the input's gradient is a partial sum (etp: each etp
    rank runs its hidden shard of the same rows; with etp = 1 under tp the split rows are declared
    before their gather, moe.routed_rows)."""

    def __init__(self, ep_mesh, etp_mesh, partial_mesh, bug):
        super().__init__()
        self.ep_mesh, self.etp_mesh, self.partial_mesh, self.bug = ep_mesh, etp_mesh, partial_mesh, bug

    def _apply(self, module, mesh):
        from torch.distributed._functional_collectives import all_to_all_single_autograd
        from torch.distributed.tensor import Shard, distribute_module, distribute_tensor
        ep = self.ep_mesh.size()
        group = self.ep_mesh.get_group()
        st = {}

        def part(name, mod, m):
            for n, d in (("w1", 1), ("w2", 2), ("w3", 1)):
                pl = [Shard(0), Shard(d)] if self.etp_mesh is not None else [Shard(0)]
                mod.register_parameter(n, nn.Parameter(distribute_tensor(getattr(mod, n), m, pl)))

        def dispatch(mod, inputs, kwargs):
            x, counts = inputs
            scores = kwargs.get("scores")
            if self.partial_mesh is not None:
                x = _partial_grad(x, self.partial_mesh)
            if self.bug == "ep-combine-twice":
                x = x * scores[:, None]       # the gate applied on dispatch, and again in the combine
            El = counts.numel() // ep
            with torch.no_grad():
                recv = torch.empty_like(counts)
                dist.all_to_all_single(recv, counts.contiguous(), group=group)
                send_splits = counts.view(ep, El).sum(1).tolist()
                recv_splits = recv.view(ep, El).sum(1).tolist()
            xr = all_to_all_single_autograd(x.contiguous(), recv_splits, send_splits, group)
            # received: source-major, local-expert-minor; the experts want local-expert-major
            rc = recv.view(ep, El).tolist()
            start, off = [[0] * El for _ in range(ep)], 0
            for s in range(ep):
                for e in range(El):
                    start[s][e] = off
                    off += rc[s][e]
            perm = [i for e in range(El) for s in range(ep) for i in range(start[s][e], start[s][e] + rc[s][e])]
            perm = torch.tensor(perm, dtype=torch.long)
            st.update(perm=perm, send=send_splits, recv=recv_splits)
            return (xr[perm], recv.view(ep, El).sum(0)), {}

        def combine(mod, inputs, y):
            back = y.new_zeros(y.shape).index_copy(0, st["perm"], y)
            return all_to_all_single_autograd(back, st["send"], st["recv"], group)
        distribute_module(module, mesh, part)
        module.register_forward_pre_hook(dispatch, with_kwargs=True)   # the scores ride as a keyword
        module.register_forward_hook(combine)
        return module


def torchtitan_styles():
    """HP_TORCH_EP_STYLES=torchtitan: TorchTitan 0.2.2's own styles (NoParallel, TensorParallel,
    ExpertParallel, ExpertTensorParallel, ReordererSequenceParallel) on layout_model's modules, in
    place of the ones above. One CPU patch, outside TorchTitan's math: its _permute asks
    generate_permute_indices for the Triton kernel; on CPU it gets the same function's own CPU
    path (use_cpu=True)."""
    try:
        import functools
        import torchtitan.models.moe.utils as tt_utils
        from torchtitan.distributed import NoParallel
        from torchtitan.distributed import expert_parallel as tt_ep
        from torchtitan.models.moe.kernels import generate_permute_indices
    except Exception as e:   # noqa: BLE001 - any import failure means: not installed here
        fail2(f"HP_TORCH_EP_STYLES=torchtitan: torchtitan does not import ({type(e).__name__}: {e})")
    tt_utils.generate_permute_indices = functools.partial(generate_permute_indices, use_cpu=True)
    return NoParallel, tt_ep


# ---- applying them -----------------------------------------------------------------------------------
class MoELayout:
    """What parallelize_moe did: the sparse mesh's parts, for shard_experts (FSDP)."""

    def __init__(self, a, edp_mesh, n_experts, ep):
        self.a, self.edp_mesh, self.n_experts, self.ep = a, edp_mesh, n_experts, ep

    def shard_experts(self, block, mp, reshard):
        """The routed experts as their own FSDP unit over (dp_replicate, efsdp), before the block's."""
        if self.edp_mesh is None or not getattr(block, "is_moe", False):
            return None
        from torch.distributed.fsdp import fully_shard
        from torch.distributed.tensor import Shard
        efsdp = self.edp_mesh.size(self.edp_mesh.ndim - 1)
        place = (lambda p: Shard(1)) if efsdp * self.ep > self.n_experts else None
        m = fully_shard(block.moe.experts, mesh=self.edp_mesh, mp_policy=mp, reshard_after_forward=reshard,
                        shard_placement_fn=place)
        m.set_force_sum_reduction_for_comms(True)   # gloo: no PREMUL_SUM
        if self.a.bug == "expert-divide":   # the experts' mesh is smaller, so "divide by the whole dp"
            m.set_gradient_divide_factor(float(self.a.dp_replicate * self.a.dp_shard * self.a.cp))
        else:
            m.set_gradient_divide_factor(1.0)
        return m


def sparse_mesh(a, world):
    """TorchTitan's sparse mesh: the world unflattened as (dp_replicate, efsdp, ep, etp)."""
    from torch.distributed.device_mesh import init_device_mesh
    efsdp = a.dp_shard * a.cp * a.tp // (a.ep * a.etp)
    return init_device_mesh("cpu", (a.dp_replicate, efsdp, a.ep, a.etp),
                            mesh_dim_names=("dp_replicate", "efsdp", "ep", "etp"))


def parallelize_moe(a, model, mesh, names, world, dense_fsdp):
    """TorchTitan's apply_moe_ep_tp on layout_model's MoE blocks (after torch_layout.apply_tp has
    laid out their attention and norms). Returns a MoELayout for apply_fsdp, or None."""
    blocks = moe_blocks(model)
    if not blocks or (a.tp == 1 and a.ep == 1):
        return None
    from torch.distributed.tensor import Partial, Replicate, Shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, PrepareModuleInputOutput, RowwiseParallel,
                                                   parallelize_module)
    tp_mesh = mesh["tp"] if "tp" in names else None
    ep_mesh = etp_mesh = ep_etp_mesh = edp_mesh = None
    if a.ep > 1:
        sm = sparse_mesh(a, world)
        ep_mesh = sm["ep"]
        if a.etp > 1:
            etp_mesh, ep_etp_mesh = sm["etp"], sm[("ep", "etp")]
        edp_mesh = sm[("dp_replicate", "efsdp")] if a.dp_replicate > 1 else sm["efsdp"]
    seq = Shard(1) if a.sp else Replicate()
    titan = os.environ.get("HP_TORCH_EP_STYLES") == "torchtitan"
    if titan:
        if a.bug in BUGS:
            fail2(f"--bug {a.bug} is written in ep_layout.py's styles, not under HP_TORCH_EP_STYLES=torchtitan")
        NoParallel, tt = torchtitan_styles()
    for block in blocks:
        if tp_mesh is not None:
            plan = {
                "moe": PrepareModuleInputOutput(input_layouts=(seq,), desired_input_layouts=(Replicate(),),
                                                use_local_input=True, output_layouts=(Partial(),),
                                                desired_output_layouts=(seq,)),
                "moe.router.gate": RouterNoParallel(replicate=a.bug == "router-replicate"),
            }
            if a.ep > 1 and a.etp == 1:
                plan["moe.reorderer"] = TokenSplit()
                plan["moe.routed_rows"] = PartialGrad()
            if block.moe.shared_experts is not None:
                plan.update({"moe.shared_experts.w1": ColwiseParallel(),
                             "moe.shared_experts.w2": RowwiseParallel(output_layouts=Partial()),
                             "moe.shared_experts.w3": ColwiseParallel()})
            if titan:
                plan["moe.router.gate"] = NoParallel()
                plan.pop("moe.routed_rows", None)
                if "moe.reorderer" in plan:
                    plan["moe.reorderer"] = tt.ReordererSequenceParallel()
            parallelize_module(block, tp_mesh, plan)
        if titan:
            style = (tt.TensorParallel() if a.ep == 1 else tt.ExpertParallel() if etp_mesh is None
                     else tt.ExpertTensorParallel())
            parallelize_module(block.moe.experts, tp_mesh if a.ep == 1 else ep_etp_mesh or ep_mesh, style)
        elif a.ep == 1:
            parallelize_module(block.moe.experts, tp_mesh, ExpertsTP())
        elif etp_mesh is None:
            parallelize_module(block.moe.experts, ep_mesh, ExpertParallel(ep_mesh, None, None, a.bug))
        else:
            parallelize_module(block.moe.experts, ep_etp_mesh, ExpertParallel(ep_mesh, etp_mesh, etp_mesh, a.bug))
    if a.bug == "expert-divide" and not dense_fsdp:
        fail2("--bug expert-divide needs FSDP (dp_shard or dp_replicate > 1)")
    return MoELayout(a, edp_mesh if dense_fsdp else None, model.cfg["num_experts"], a.ep)
