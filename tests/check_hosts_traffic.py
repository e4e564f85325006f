#!/usr/bin/env python3
"""check_hosts_traffic.py - the bytes a step puts on each namespace host's links, against what
`hp plan --ranks-per-node N` says stays inside a node and what crosses (tests/run_hosts_layout.sh).

usage: check_hosts_traffic.py PLAN.txt RUN.json COUNTERS.txt RANKS_PER_HOST STEPS_A STEPS_B

  PLAN.txt      `hp plan <layout> --ranks-per-node RANKS_PER_HOST`: its groups (members) and its
                line "nodes of N consecutive ranks ...: inside a node: ...; across nodes: ..."
  RUN.json      `hp run --json` of the layout: rank 0's bytes per group and op in step 1
  COUNTERS.txt  one line per host: "I eth0_a0 lo_a0 eth0_a1 lo_a1 eth0_b0 lo_b0 eth0_b1 lo_b1",
                the tx byte counters of host I's eth0 (to the other hosts) and lo (between its
                own ranks) before (0) and after (1) a run of STEPS_A steps (a) and of STEPS_B (b)

A step's bytes on a link are the difference of the two runs divided by STEPS_B - STEPS_A, so
start-up and the result's gathers cancel. The prediction: every rank moves rank 0's wire bytes
(comm.h's rules: all-reduce 2(N-1)/N, all-gather N-1 times, reduce-scatter (N-1)/N of the
counted bytes, all-to-all as counted; hp's exchanges are direct, so a group's bytes split over
its peers evenly), the share to peers on another host (rank // RANKS_PER_HOST) goes out on
eth0, the rest on lo. Checks: the plan's inside/across line agrees with its member lists; per
host, eth0 within [0.9, 1.2] of the across prediction (TCP/IP headers, the ranks' small
uncounted agreements), lo within [0.9, 1.2] of the inside prediction, or under 2% of eth0 when
nothing stays inside. Exits 1 on any failure.
"""
import json
import re
import sys

WIRE = {  # wire bytes a member hands to others, per counted byte, in a group of N
    "all_reduce": lambda n: 2.0 * (n - 1) / n,
    "all_gather": lambda n: float(n - 1),
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: 1.0,
    "send_recv": lambda n: 1.0,
}
LO, HI = 0.9, 1.2


def parse_plan(text):
    groups = {}   # name -> list of member lists
    for m in re.finditer(r"^  (\w+)\s+\d+ x \d+(?:\s+\(size \d+\))?\s+((?:\{[0-9,]+\}\s*)+)$", text, re.M):
        groups[m.group(1)] = [[int(x) for x in g.split(",")] for g in re.findall(r"\{([0-9,]+)\}", m.group(2))]
    line = re.search(r"^nodes of (\d+) consecutive ranks.*: inside a node: (.*); across nodes: (.*)$", text, re.M)
    if not line:
        sys.exit("check_hosts_traffic: the plan has no 'nodes of N consecutive ranks' line")
    split = lambda s: set() if s.strip() == "none" else {x.strip() for x in s.split(",")}
    return groups, int(line.group(1)), split(line.group(2)), split(line.group(3))


def main(argv):
    if len(argv) != 7:
        print(__doc__)
        return 2
    plan = open(argv[1]).read()
    run = json.load(open(argv[2]))
    rph, sa, sb = int(argv[4]), int(argv[5]), int(argv[6])
    groups, node, inside, across = parse_plan(plan)
    ok = True

    def check(good, what):
        nonlocal ok
        print(("ok    " if good else "FAIL  ") + what)
        ok &= bool(good)

    check(node == rph, f"the plan's nodes are {node} ranks, the hosts hold {rph}")
    pred_in = pred_out = 0.0
    print(f"rank 0's traffic of a step (plan: inside a node: {', '.join(sorted(inside)) or 'none'}; "
          f"across nodes: {', '.join(sorted(across)) or 'none'}):")
    for g, ops in sorted(run["traffic"].items()):
        mine = next((m for m in groups.get(g, []) if 0 in m), None)
        if mine is None:
            check(False, f"group {g}: not in the plan's groups")
            continue
        n = len(mine)
        peers = [r for r in mine if r != 0]
        off = sum(1 for r in peers if r // rph != 0) / len(peers) if peers else 0.0
        where = "across" if off > 0 else "inside"
        said = "across" if g in across else "inside" if g in inside else None
        check(said == where, f"group {g} {mine}: {where} by its members, the plan says {said}")
        wire = 0.0
        for op, b in ops.items():
            if op not in WIRE:
                check(False, f"group {g}: op {op} has no wire rule here")
                continue
            wire += WIRE[op](n) * b
        pred_out += wire * off
        pred_in += wire * (1 - off)
        print(f"      {g:<8} N={n} wire {wire:>10.0f} B, {off * 100:5.1f}% to other hosts")
    per_host_out, per_host_in = pred_out * rph, pred_in * rph
    print(f"predicted per host and step: {per_host_out:.0f} B out on eth0, {per_host_in:.0f} B on lo "
          f"({rph} ranks a host)")
    for line in open(argv[3]):
        f = line.split()
        if len(f) != 9:
            continue
        host = f[0]
        c = [int(x) for x in f[1:]]
        eth = ((c[6] - c[4]) - (c[2] - c[0])) / (sb - sa)
        lo = ((c[7] - c[5]) - (c[3] - c[1])) / (sb - sa)
        r_eth = eth / per_host_out if per_host_out else float("inf")
        check(LO <= r_eth <= HI, f"host {host}: eth0 {eth:.0f} B a step, {r_eth:.3f} of the prediction (bounds {LO}-{HI})")
        if per_host_in > 0:
            r_lo = lo / per_host_in
            check(LO <= r_lo <= HI, f"host {host}: lo {lo:.0f} B a step, {r_lo:.3f} of the prediction (bounds {LO}-{HI})")
        else:
            check(abs(lo) < 0.02 * eth, f"host {host}: lo {lo:.0f} B a step, under 2% of eth0 (nothing stays inside)")
    print("traffic check: " + ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
