#!/usr/bin/env python3
"""check_docs_true.py HP ROOT - what the documents say about hp's flags and features is true.

  flags     every --flag of an `hp CMD ...` command written in README.md, docs/*.md and
            examples/**/README.md is one of hp CMD's (its --help, the job keys of
            `hp run --help-config` and their alias flags); every --flag named alone in backticks
            is one of hp's, or another tool's (OTHER_TOOLS says whose);
  features  examples/README.md's "features" block (`hp matrix --features-markdown`): every
            implemented row's recipes are recipes of `hp matrix --list`; every row of what is
            not implemented is refused (exit 2, one stderr line holding the answer the row
            gives) and no recipe's flags hold it;
  prose     no sentence of the documents that calls something "not implemented" (or
            "unimplemented", "does not implement") names a feature that recipes prove (ALIASES:
            the words the documents use for each, checked to be rows of the implemented table);
  job files docs/job_file.md's words on each examples/*.toml (on N ranks, FSDP, TP, EP N) are
            what `hp plan --config` lays out.
Exits 1 on any failure, naming the file and what it says.
"""
import glob
import os
import re
import subprocess
import sys

FLAG = re.compile(r"--[A-Za-z][A-Za-z0-9_.*-]*")
COMMANDS = ("plan", "run", "generate", "eval", "matrix", "bench", "export", "import", "compare", "tokenize")
# flags of other programs that the documents name in backticks (not hp's)
OTHER_TOOLS = {
    "--allow-run-as-root": "mpirun", "--oversubscribe": "mpirun", "--bind-to": "mpirun",
    "--hostfile": "mpirun", "--map-by": "mpirun",
    "--deterministic": "Megatron-LM (docs/precision.md)", "--grad-reduce-in-bf16": "Megatron-LM",
    "--ddp": "examples/torch/torch_dump.py", "--bug": "examples/torch/torch_layout.py",
    "--list-bugs": "examples/torch/torch_layout.py", "--export": "srun", "--mpi": "srun", "--ntasks-per-node": "sbatch", "--cpus-per-task": "sbatch",
}
# a span holding one of these is another program's command line (its flags are its own)
OTHER_COMMANDS = re.compile(r"\b(mpirun|mpiexec|srun|cmake|ctest|pkg-config|mpicc|python3?|pip)\b|scripts/|examples/torch/|"
                            r"torch_dump\.py|torch_layout\.py|pp_layout\.py|check_layout\.sh")
# the words the documents use for a feature -> a part of its row's name in the implemented table
ALIASES = {
    "async TP": "async TP", "Float8": "Float8 linears", "Ulysses": "Ulysses",
    "pipeline parallel": "pipeline parallel", "context parallel": "context parallel",
    "expert parallel": "expert parallel", "expert tensor parallel": "expert tensor parallel",
    "ETP": "expert tensor parallel", "HSDP": "HSDP", "FSDP2": "FSDP2",
    "gradient accumulation": "gradient accumulation", "activation checkpointing": "activation checkpointing",
    "bf16 mixed precision": "bf16 mixed precision", "zero bubble": "zero bubble",
    "interleaved 1F1B": "interleaved 1F1B", "GPipe": "GPipe", "sequence parallel": "sequence parallel",
    "tensor parallel": "tensor parallel", "AdamW": "AdamW", "gradient clipping": "gradient clipping",
}
NOT_IMPLEMENTED = re.compile(r"not implemented|unimplemented|does not implement|not supported", re.I)

failures = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        failures.append(what)
    return cond


def hp_out(hp, args):
    p = subprocess.run([hp] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def documents(root):
    files = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
    files += sorted(glob.glob(os.path.join(root, "examples", "README.md")))
    files += sorted(glob.glob(os.path.join(root, "examples", "*", "README.md")))
    return [f for f in files if os.path.exists(f)]


def norm(flag):
    return flag.replace("_", "-")


class Flags:
    """hp's flags per command: its --help, and the job keys (with their alias flags)."""

    def __init__(self, hp):
        _, config, _ = hp_out(hp, ["run", "--help-config"])
        keys = set(FLAG.findall(config))   # the alias flags column
        for line in config.splitlines():
            m = re.match(r"\| ([a-z_]+\.[a-z_.*]+) \| (\w+) \|", line)
            if m:
                keys.add("--" + m.group(1))
                if m.group(2) == "bool":
                    section, _, key = m.group(1).rpartition(".")
                    keys.add(f"--{section}.no_{key}")
        # the TorchTitan keys hp refuses or ignores by name, listed under the table
        for word in re.findall(r"\b[a-z_]+\.[a-z_.*]+\b", config.split("TorchTitan keys", 1)[-1]):
            keys.add("--" + word)
        self.by_cmd = {c: set(FLAG.findall(hp_out(hp, [c, "--help"])[1])) | keys for c in COMMANDS}
        self.every = set().union(*self.by_cmd.values()) | set(FLAG.findall(hp_out(hp, ["--help"])[1]))

    @staticmethod
    def known_in(flag, known):
        n = norm(flag)
        for k in known:
            nk = norm(k)
            if nk == n or (nk.endswith("*") and n.startswith(nk[:-1])) or (n.endswith("*") and nk.startswith(n[:-1])):
                return True
        return False

    def known(self, flag, cmd=None):
        return self.known_in(flag, self.by_cmd[cmd] if cmd else self.every)


def bare(flag):
    """--tp=2 -> --tp; a trailing full stop, comma or bracket off."""
    return flag.split("=")[0].rstrip(".,:;)")


HP_COMMAND = re.compile(r"(?:^|[\s`/$(])hp (" + "|".join(COMMANDS) + r")\b([^`|;&#>\n]*)")
SPAN = re.compile(r"`([^`\n]+)`")


def check_flags(hp, root, flags):
    n_cmd = n_bad = 0
    for path in documents(root):
        rel = os.path.relpath(path, root)
        text = open(path, encoding="utf-8").read().replace("\\\n", " ")   # continued lines
        for m in HP_COMMAND.finditer(text):
            n_cmd += 1
            cmd = m.group(1)
            for f in FLAG.findall(m.group(2)):
                f = bare(f)
                if not flags.known(f, cmd):
                    n_bad += 1
                    check(False, f"{rel}: `hp {cmd} ... {f}`: hp {cmd} has no flag {f}")
        for m in SPAN.finditer(text):
            span = m.group(1)
            if HP_COMMAND.search(" " + span) or OTHER_COMMANDS.search(span):
                continue
            for f in FLAG.findall(span):
                f = bare(f)
                if f in OTHER_TOOLS or f.startswith("--s."):   # ("--s.key": the job_file.md pattern)
                    continue
                if not flags.known(f):
                    n_bad += 1
                    check(False, f"{rel}: `{span}` names {f}, a flag of no hp command (nor of OTHER_TOOLS)")
    check(n_cmd > 100 and n_bad == 0,
          f"flags: {n_cmd} hp command lines in the documents, every --flag of them hp's ({n_bad} not)")


def feature_block(root):
    text = open(os.path.join(root, "examples", "README.md"), encoding="utf-8").read()
    m = re.search(r"<!-- features:begin -->\n(.*?)<!-- features:end -->", text, re.S)
    return m.group(1) if m else ""


def table_rows(block, header):
    """The rows of the Markdown table after the line starting with `header`, as cell lists."""
    rows, inside = [], False
    for line in block.splitlines():
        if line.startswith("| " + header):
            inside = True
            continue
        if inside and line.startswith("|---"):
            continue
        if inside and line.startswith("|"):
            rows.append([c.strip() for c in line.strip().strip("|").split(" | ")])
        elif inside and line.strip():
            break
    return rows


def check_features(hp, root):
    block = feature_block(root)
    if not check(block != "", "examples/README.md has its features:begin/end block"):
        return [], []
    _, listing, _ = hp_out(hp, ["matrix", "--list"])
    recipes = {}
    for line in listing.splitlines():
        cells = line.split("\t")
        if cells[0] in ("recipe", "resume"):
            recipes[cells[1]] = " ".join(cells[4:])
    implemented = table_rows(block, "feature | flag |")
    not_impl = table_rows(block, "feature | `hp run` ...")
    check(len(implemented) >= 20, f"{len(implemented)} implemented features listed")
    for name, flag, proof in implemented:
        ids = [i.strip() for i in proof.split(":", 1)[1].split(",") if i.strip() not in ("", "...")]
        check(all(i in recipes for i in ids), f"implemented: {name} ({flag}): its recipes {ids} are recipes")
    for name, args, answer in not_impl:
        args = args.strip("`")
        rc, _, err = hp_out(hp, ["run"] + args.split() + ["--steps", "1", "--quiet"])
        lines = err.strip().splitlines()
        check(rc == 2 and len(lines) == 1 and answer in lines[0],
              f"not implemented: {name}: `hp run {args}` exits {rc} with {lines!r} (want 2 and one line "
              f"holding {answer!r})")
        words = args.split()
        users = [i for i, f in recipes.items() if all(re.search(r"(^|\s)" + re.escape(w) + r"(\s|$)", f) for w in words)]
        check(not users, f"not implemented: {name}: no recipe runs `{args}` ({users})")
    return implemented, not_impl


def sentences(text):
    """Paragraphs joined, cut at full stops, list items and table rows."""
    out = []
    for para in re.split(r"\n\s*\n", text):
        for item in re.split(r"\n(?=\s*(?:[-*] |\d+\. |\|))", para):
            out += re.split(r"(?<=[.!?])\s+", " ".join(item.split()))
    return out


def check_prose(root, implemented, not_impl):
    names = [row[0] for row in implemented]
    refused = [row[0] for row in not_impl]   # their names may hold an alias ("per-op selective AC")
    for alias, part in ALIASES.items():
        check(any(part in n for n in names), f"prose: '{alias}' names an implemented feature ({part})")
    n_claims = 0
    for path in documents(root):
        rel = os.path.relpath(path, root)
        for s in sentences(open(path, encoding="utf-8").read()):
            if not NOT_IMPLEMENTED.search(s):
                continue
            n_claims += 1
            for name in refused:
                s = s.replace(name, "")
            named = [a for a in ALIASES if re.search(r"(?<![\w-])" + re.escape(a) + r"(?![\w-])", s)]
            if named:
                check(False, f"{rel}: says {named} not implemented, but recipes prove them: {s[:160]!r}")
    check(n_claims > 0, f"prose: {n_claims} sentences saying what is not implemented, none naming an implemented feature")


def degrees(hp, root, toml):
    rc, out, err = hp_out(hp, ["plan", "--config", os.path.join(root, toml)])
    m = re.search(r"world (\d+)", out)
    d = dict((k, int(v)) for k, v in re.findall(r"\b(dp_replicate|dp_shard|cp|tp|pp|ep|etp) (\d+)", out))
    if m:
        d["world"] = int(m.group(1))
    return rc, d


def check_job_files(hp, root):
    text = " ".join(open(os.path.join(root, "docs", "job_file.md"), encoding="utf-8").read().split())
    n = 0
    for toml, words in re.findall(r"`(examples/[a-z0-9_]+\.toml)` \(([^)]*)\)", text):
        rc, d = degrees(hp, root, toml)
        if not check(rc == 0 and "world" in d, f"job files: hp plan --config {toml} plans ({d})"):
            continue
        n += 1
        m = re.search(r"on (\d+) ranks", words)
        if m:
            check(d["world"] == int(m.group(1)), f"job files: {toml} '{words}': world {d['world']}")
        if re.search(r"\bTP\b", words):
            check(d["tp"] > 1, f"job files: {toml} '{words}' says TP: tp {d['tp']}")
        if re.search(r"\bFSDP\b", words):
            check(d["dp_shard"] > 1, f"job files: {toml} '{words}' says FSDP: dp_shard {d['dp_shard']}")
        m = re.search(r"\bEP (\d+)", words)
        if m:
            check(d["ep"] == int(m.group(1)), f"job files: {toml} '{words}': ep {d['ep']}")
    check(n >= 3, f"job files: {n} example job files described and checked")


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    hp, root = sys.argv[1:]
    flags = Flags(hp)
    check_flags(hp, root, flags)
    implemented, not_impl = check_features(hp, root)
    check_prose(root, implemented, not_impl)
    check_job_files(hp, root)
    print(f"docs true: {'FAIL' if failures else 'PASS'} ({len(failures)} failed)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
