#!/usr/bin/env python3
"""check_sgd_step.py A T LR [MAX_NORM] - the step itself, for check_layout.sh and check_torchtitan.sh:
another framework's parameters after its SGD step (T/params.safetensors) against hp's step-1
dump A: A's model - LR * A's gradient, tensor by tensor (with MAX_NORM > 0, the gradient clipped
first as torch's clip_grad_norm_ and hp clip: times min(1, MAX_NORM / (norm + 1e-6))). The room for each tensor is 1% of its
update plus the rounding an fp32 parameter takes (one ulp per element); rounding gives ~0.3 of
it, an update off by 1% of itself >= ~1. Prints one line; exit 0 ok, 1 off, 3 unreadable."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spec_model import read_safetensors  # noqa: E402

a, t, lr = sys.argv[1], sys.argv[2], float(sys.argv[3])
max_norm = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
try:
    m0, ga = read_safetensors(f"{a}/model.safetensors"), read_safetensors(f"{a}/grads.safetensors")
    after = read_safetensors(f"{t}/params.safetensors")
except Exception as e:   # noqa: BLE001 - not a verdict: exit 3
    print(f"params after the step: cannot read: {e}")
    sys.exit(3)
coef = 1.0
if max_norm > 0:
    norm = sum(g.double().pow(2).sum().item() for g in ga.values()) ** 0.5
    coef = min(1.0, max_norm / (norm + 1e-6))
worst, wn = 0.0, None
for n, p0 in m0.items():
    step = lr * coef * ga[n].double()
    ref = p0.double() - step
    room = 1e-2 * step.norm().item() + 2.0 ** -23 * ref.norm().item()
    err = (after[n].double() - ref).norm().item() / max(room, 1e-30)
    if err > worst:
        worst, wn = err, n
tol = 1.0
ok = worst <= tol
print(f"params after the step: worst {wn}, {worst:.3e} of (1% of its update + 1 ulp) (tolerance {tol:g}): {'ok' if ok else 'FAIL'}")
sys.exit(0 if ok else 1)
