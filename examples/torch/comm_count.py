"""comm_count.py - the collectives a PyTorch layout issued, per op and per mesh dim.

CommDebugMode counts collectives per op (all_gather_into_tensor, reduce_scatter_tensor, ...), the
DTensor ones and c10d's own (FSDP2's _allgather_base_ and _reduce_scatter_base_). Comms() is
CommDebugMode itself, and also reads each collective's process group: a functional collective
names its group (group_name), a c10d op carries the ProcessGroup. The group is mapped to the name
of the mesh dim it spans (TorchTitan's names: dp_replicate, dp_shard, cp, tp, and the flattened
ones such as dp_shard_cp), so result.json can say where the bytes went.
"""
from collections import defaultdict


def _group_name(x):
    import torch.distributed as dist
    if isinstance(x, str):
        return x
    if isinstance(x, dist.ProcessGroup):
        return x.group_name
    try:   # a c10d op's ProcessGroup arrives boxed as a ScriptObject
        return dist.ProcessGroup.unbox(x).group_name
    except Exception:   # noqa: BLE001 - not a process group
        return None


def mesh_groups(mesh, names, extra=()):
    """{group_name: dim name} for every dim of mesh, and each (name, submesh) of extra."""
    out = {}
    for n in names:
        out[mesh[n].get_group().group_name] = n
    for n, sub in extra:
        for k, g in enumerate(sub.get_all_groups()):
            out.setdefault(g.group_name, n if sub.ndim == 1 else f"{n}[{sub.mesh_dim_names[k]}]")
    return out


def Comms(groups):
    from torch.distributed.tensor.debug import CommDebugMode
    from torch.distributed.tensor.debug import _comm_mode

    class _Comms(CommDebugMode):
        def __init__(self):
            super().__init__()
            self.by_dim = defaultdict(int)

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = super().__torch_dispatch__(func, types, args, kwargs)
            if out is NotImplemented or not hasattr(func, "_overloadpacket"):
                return out
            packet = func._overloadpacket
            if packet in self.comm_registry or packet in _comm_mode.c10d_collective_ops:
                packet = _comm_mode.NATIVE_TO_PY_MAPPING.get(packet, packet)
                dim = "?"
                for x in list(args) + list((kwargs or {}).values()):
                    g = _group_name(x)
                    if g is not None and g in groups:
                        dim = groups[g]
                        break
                self.by_dim[(str(packet).split(".")[-1], dim)] += 1
            return out

        def counts(self):
            """({op: count}, {op: {dim: count}})"""
            per_op = {str(k).split(".")[-1]: v for k, v in self.get_comm_counts().items()}
            per_dim = defaultdict(dict)
            for (op, dim), v in sorted(self.by_dim.items()):
                per_dim[op][dim] = v
            return per_op, dict(per_dim)

    return _Comms()
