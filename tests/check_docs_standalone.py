#!/usr/bin/env python3
"""check_docs_standalone.py SRC - the documents a user reads stand alone (issue 38, item 5).

Fails, naming FILE:LINE, when
  - a file of the repository outside tests/ (README.md, docs/, include/, src/, tools/, examples/,
    bench/, scripts/, ...) mentions ../shared, shared/spec or shared/seed: those files are not in
    the repository, so a person who clones it cannot follow them (tests may read them);
  - a relative markdown link of README.md or docs/*.md points to a file that is not in the
    repository.
The files are git's (tracked, and untracked ones that are not ignored); without git, the
folders above are walked.
"""
import os
import re
import subprocess
import sys

FORBIDDEN = re.compile(r"\.\./shared|shared/spec|shared/seed")
# [text](target) and [text]: target; images too. The target stops at a space or ')'.
LINK = re.compile(r"\[[^\]]*\]\(\s*<?([^()\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)|^\s*\[[^\]]+\]:\s*(\S+)")
SKIP_DIRS = {".git", "build", "tests"}
WALK = ["README.md", "docs", "include", "src", "tools", "examples", "bench", "scripts", "cmake",
        "CMakeLists.txt", "Makefile", ".ci"]


def repo_files(src):
    try:
        out = subprocess.run(["git", "-C", src, "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], check=True, capture_output=True).stdout
        files = [f for f in out.decode("utf-8", "replace").split("\0") if f]
        return sorted(f for f in files if os.path.isfile(os.path.join(src, f)))
    except (OSError, subprocess.CalledProcessError):
        files = []
        for top in WALK:
            p = os.path.join(src, top)
            if os.path.isfile(p):
                files.append(top)
            for root, dirs, names in os.walk(p):
                dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
                for n in names:
                    files.append(os.path.relpath(os.path.join(root, n), src))
        return sorted(files)


def read_lines(path):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None   # binary (images)
    return data.decode("utf-8", "replace").splitlines()


def main():
    if len(sys.argv) != 2:
        print("usage: check_docs_standalone.py SRC", file=sys.stderr)
        return 2
    src = os.path.abspath(sys.argv[1])
    files = repo_files(src)
    problems = []
    for rel in files:
        if rel.split("/")[0] == "tests":
            continue
        lines = read_lines(os.path.join(src, rel))
        if lines is None:
            continue
        for n, line in enumerate(lines, 1):
            m = FORBIDDEN.search(line)
            if m:
                problems.append("%s:%d: points outside the repository (%s): %s"
                                % (rel, n, m.group(0), line.strip()[:120]))
        if rel == "README.md" or (rel.startswith("docs/") and rel.endswith(".md")
                                  and rel.count("/") == 1):
            in_code = False
            for n, line in enumerate(lines, 1):
                if line.lstrip().startswith("```"):
                    in_code = not in_code
                    continue
                if in_code:
                    continue
                text = re.sub(r"`[^`]*`", "", line)   # inline code is not a link
                for m in LINK.finditer(text):
                    target = m.group(1) or m.group(2)
                    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("#"):
                        continue   # http:, mailto:, an anchor of the same page
                    path = target.split("#", 1)[0].split("?", 1)[0]
                    if not path:
                        continue
                    full = os.path.normpath(os.path.join(src, os.path.dirname(rel), path))
                    inside = full == src or full.startswith(src + os.sep)
                    if not inside or not os.path.exists(full):
                        problems.append("%s:%d: link to %s: no such file in the repository"
                                        % (rel, n, target))
    for p in problems:
        print(p)
    if problems:
        print("check_docs_standalone: %d problem(s)" % len(problems))
        return 1
    print("check_docs_standalone: %d files, nothing points outside the repository" % len(files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
