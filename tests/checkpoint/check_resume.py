#!/usr/bin/env python3
"""check_resume.py - resume equivalence of a checkpoint (tests/checkpoint/run_resume.sh).

usage: check_resume.py FULL.json FIRST.json RESUMED.json FULL.safetensors RESUMED.safetensors MODE
  FULL      the uninterrupted 6-step run; FIRST its first 3 steps run alone (saved at step 3);
  RESUMED   steps 4-6 after --resume, maybe under another layout; the .safetensors files are
            `hp export --optimizer` of both runs' step-6 checkpoints (read with read_safetensors.py).
  MODE      bitwise (layout B = layout A) or tolerance (losses 1e-5 relative per step,
            parameters 1e-4 relative Frobenius per tensor: the AdamW tolerance).
Prints one line per check; exits 1 on any failure.
"""
import json
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import read_safetensors  # noqa: E402

LOSS_TOL, PARAM_TOL = 1e-5, 1e-4


def main(argv):
    if len(argv) != 7 or argv[6] not in ("bitwise", "tolerance"):
        print(__doc__)
        return 2
    full, first, res = (json.load(open(p)) for p in argv[1:4])
    bitwise = argv[6] == "bitwise"
    ok = True

    def check(good, what):
        nonlocal ok
        print(("ok    " if good else "FAIL  ") + what)
        ok &= bool(good)

    lf = [float(x) for x in full["losses_exact"]]
    l3 = [float(x) for x in first["losses_exact"]]
    lr = [float(x) for x in res["losses_exact"]]
    check(len(lf) == 6 and full.get("first_step") == 1, f"uninterrupted run: 6 steps from 1 (got {len(lf)})")
    check(l3 == lf[:3], "steps 1-3 run alone equal the uninterrupted run bitwise")
    check(res.get("first_step") == 4 and len(lr) == 3,
          f"resumed run trained steps 4-6 (first_step {res.get('first_step')}, {len(lr)} steps)")
    for k, (a, b) in enumerate(zip(lf[3:], lr)):
        rel = abs(a - b) / abs(a)
        good = a == b if bitwise else rel <= LOSS_TOL
        check(good, f"loss of step {k + 4}: {b!r} vs uninterrupted {a!r} (rel {rel:.3g}, "
                    f"{'bitwise' if bitwise else 'tol %g' % LOSS_TOL})")
    _, _, tf, vf = read_safetensors.read(argv[4])
    _, _, tr, vr = read_safetensors.read(argv[5])
    check(sorted(tf) == sorted(tr), f"same {len(tf)} tensors in both exports")
    worst, worst_name = 0.0, ""
    for name in tf:
        if name not in vr:
            continue
        a, b = vf[name], vr[name]
        if bitwise:
            if a != b:
                check(False, f"{name}: differs bitwise")
            continue
        if name.startswith("optimizer."):
            continue   # the moments follow the parameters; the parameters are the contract
        num = math.sqrt(math.fsum((x - y) ** 2 for x, y in zip(a, b)))
        den = math.sqrt(math.fsum(x * x for x in a)) or 1.0
        if num / den > worst:
            worst, worst_name = num / den, name
    if bitwise:
        check(all(vf[n] == vr.get(n) for n in tf), "final parameters and AdamW moments bit-identical")
    else:
        check(worst <= PARAM_TOL, f"final parameters: worst relative error {worst:.3g} ({worst_name}), tol {PARAM_TOL}")
    print("resume check: " + ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
