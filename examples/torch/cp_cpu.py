"""cp_cpu.py - PyTorch's own context parallel on CPU: its ring attention given the CPU kernel.

torch.distributed.tensor.experimental.context_parallel shards q, k and v along the sequence and
sends scaled_dot_product_attention's kernel op to its ring attention (_templated_ring_attention
and its backward: the kv rotation, the head-tail load balancing, the (output, logsumexp) merge).
It knows CUDA's three kernels only (flash, efficient, cudnn). On CPU the dispatcher picks
aten._scaled_dot_product_flash_attention_for_cpu, which has no sharding strategy, and the first
call raises NotImplementedError.

enable() registers that CPU kernel the way PyTorch registers the CUDA ones:
- a sharding strategy: q, k, v, the output and the logsumexp all sharded along the sequence
  (dim 2), the grads the same;
- an op handler in context parallel's own table (custom_ops), which runs PyTorch's ring
  attention with the CPU kernel in place of the CUDA one.
Every other line of context parallel is PyTorch's; options() sets its rotate method and load
balancing from hp's flags. Nothing here changes the math of attention: a bug in these lines would
show as wrong gradients in hp compare like any other.
"""
import torch

aten = torch.ops.aten


def _cp():
    from torch.distributed.tensor.experimental._context_parallel import _attention
    return _attention


def _forward_strategy(op, args_schema, kwargs_schema):
    from torch.distributed.tensor.experimental._context_parallel._sharding_rules import _cp_sharding
    return [[_cp_sharding(), _cp_sharding(),                      # output, logsumexp
             _cp_sharding(), _cp_sharding(), _cp_sharding()]]     # q, k, v


def _backward_strategy(op, args_schema, kwargs_schema):
    from torch.distributed.tensor.experimental._context_parallel._sharding_rules import _cp_sharding
    return [[_cp_sharding()] * 3 +                                 # grad q, k, v
            [_cp_sharding()] * 6]                                  # grad_out, q, k, v, out, logsumexp


def _ring_forward(mesh, query, key, value, dropout_p=0.0, is_causal=False, *, attn_mask=None, scale=None):
    if attn_mask is not None:
        raise NotImplementedError("context parallel on CPU: attn_mask is not supported")
    return _cp()._templated_ring_attention(mesh.get_group(), 2, aten._scaled_dot_product_flash_attention_for_cpu,
                                           query=query, key=key, value=value, is_causal=is_causal,
                                           dropout_p=dropout_p, scale=scale)


def _ring_backward(mesh, grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, *, attn_mask=None,
                   scale=None):
    if attn_mask is not None:
        raise NotImplementedError("context parallel on CPU: attn_mask is not supported")
    return _cp()._templated_ring_attention_backward(
        mesh.get_group(), 2, aten._scaled_dot_product_flash_attention_for_cpu_backward.default,
        grad_out=grad_out, grad_out_name="grad_out", query=query, key=key, value=value, out=out,
        logsumexp=logsumexp, is_causal=is_causal, dropout_p=dropout_p, scale=scale)


_RING = {
    aten._scaled_dot_product_flash_attention_for_cpu.default: _ring_forward,
    aten._scaled_dot_product_flash_attention_for_cpu_backward.default: _ring_backward,
}


def _handler(op_call, args, kwargs):
    # as context parallel's _sdpa_handler: the sharding from the strategy above, the local
    # tensors through the ring, the results wrapped as sequence-sharded DTensors
    from torch.distributed.tensor import DTensor
    dispatcher = DTensor._op_dispatcher
    info = dispatcher.unwrap_to_op_info(op_call, args, kwargs)
    dispatcher.sharding_propagator.propagate(info)
    sharding = info.output_sharding
    if sharding is None or sharding.needs_redistribute:
        raise AssertionError("context parallel on CPU: q, k and v must all be sharded along the sequence")
    local = _RING[op_call](info.compute_mesh, *info.local_args, **info.local_kwargs)
    return dispatcher.wrap(local, sharding.output_spec)


_enabled = False
_held = []


def enable():
    global _enabled
    if _enabled:
        return
    from torch.distributed.tensor._op_schema import RuntimeSchemaInfo
    from torch.distributed.tensor.experimental._context_parallel._sharding_rules import _single_dim_strategy_context
    fwd, bwd = (aten._scaled_dot_product_flash_attention_for_cpu.default,
                aten._scaled_dot_product_flash_attention_for_cpu_backward.default)
    # kept for the process's life (a context dropped would unregister its strategy on collection):
    # the strategies apply only to sequence-sharded DTensors, i.e. under CP
    for op, strategy, schema in ((fwd, _forward_strategy, RuntimeSchemaInfo(3)), (bwd, _backward_strategy, None)):
        ctx = _single_dim_strategy_context(op, strategy, schema)
        ctx.__enter__()
        _held.append(ctx)
    _cp().custom_ops.update({fwd: _handler, bwd: _handler})
    _enabled = True


def options(rotate, balance):
    """hp's --cp-rotate (allgather | ring) and --cp-no-balance as context parallel's options."""
    cp = _cp()
    from torch.distributed.tensor.experimental._context_parallel._attention import _RotateMethod
    cp._cp_options.rotate_method = _RotateMethod.ALL_GATHER if rotate == "allgather" else _RotateMethod.ALL_TO_ALL
    cp._cp_options.enable_load_balance = bool(balance)
