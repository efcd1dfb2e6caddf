#!/usr/bin/env python3
"""Structural gates the compiler does not check: no source file over 500 lines and no import
cycle between the modules of one crate.

A reader should be able to hold a file in mind, and a module should be readable without the
ones that read it; both erode one commit at a time unless a gate holds them. Test modules
(files named `tests.rs` or ending in `_tests.rs`, and anything under a `tests/` directory of
`src/`) are not counted for size. A module may use its ancestors and descendants (`super::`,
`mod child`); any other use is a dependency between the two siblings that contain the user and
the used (the children of their nearest common ancestor), and a cycle among siblings is refused.

Usage: scripts/check-structure.py SRC_DIR...   (exit 1 naming every file and cycle refused)
"""

import re
import sys
from pathlib import Path

MAX_LINES = 500
PATH = re.compile(r"\b((?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)+)")
GROUP = re.compile(r"\b((?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)*)::\{([^{}]*)\}")


def is_test_file(src: Path, file: Path) -> bool:
    rel = file.relative_to(src)
    return file.name == "tests.rs" or file.name.endswith("_tests.rs") or "tests" in rel.parts[:-1]


def module_of(src: Path, file: Path) -> tuple:
    """The module path of `file`: () for the crate root, ("a", "b") for src/a/b.rs."""
    parts = list(file.relative_to(src).with_suffix("").parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts.pop()
    return tuple(parts)


def paths_in(text: str) -> list:
    """Every `crate::`, `super::` or `self::` path in `text`, groups `a::{b, c}` expanded."""
    text = re.sub(r"//[^\n]*", "", text)
    found = [m.group(1) for m in PATH.finditer(text)]
    for group in GROUP.finditer(text):
        for item in group.group(2).split(","):
            item = item.strip().split(" as ")[0].strip()
            if item and re.match(r"^[A-Za-z_]", item):
                found.append(group.group(1) + "::" + item.split("::")[0])
    return found


def resolve(path: str, here: tuple, modules: set) -> tuple:
    """The module `path`, written in module `here`, refers to: its longest module prefix."""
    segments = path.split("::")
    base = list(here)
    if segments[0] == "crate":
        base = []
        segments = segments[1:]
    while segments and segments[0] in ("self", "super"):
        if segments[0] == "super" and base:
            base.pop()
        segments = segments[1:]
    target = tuple(base)
    for segment in segments:
        if target + (segment,) in modules:
            target = target + (segment,)
        else:
            break
    return target


def related(a: tuple, b: tuple) -> bool:
    return a[: len(b)] == b or b[: len(a)] == a


def cycles(src: Path) -> list:
    files = {module_of(src, f): f for f in src.rglob("*.rs")}
    modules = set(files)
    edges = {m: set() for m in modules}
    for module in modules:
        for depth in range(1, len(module)):
            edges.setdefault(module[:depth], set())
    for module, file in files.items():
        for path in paths_in(file.read_text()):
            target = resolve(path, module, modules)
            if target in modules and not related(module, target):
                user, used = siblings(module, target)
                edges[user].add(used)
    return strongly_connected(edges)


def siblings(a: tuple, b: tuple) -> tuple:
    """`a` and `b` lifted to the children of their nearest common ancestor."""
    common = 0
    while common < min(len(a), len(b)) and a[common] == b[common]:
        common += 1
    return a[: common + 1], b[: common + 1]


def strongly_connected(edges: dict) -> list:
    """Tarjan's components of more than one module."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10000)
    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def main(dirs: list) -> int:
    refused = 0
    for name in dirs:
        src = Path(name)
        for file in sorted(src.rglob("*.rs")):
            lines = sum(1 for _ in file.open())
            if lines > MAX_LINES and not is_test_file(src, file):
                print(f"{file}: {lines} lines (at most {MAX_LINES}: split it by job)")
                refused += 1
        for component in cycles(src):
            names = " <-> ".join("::".join(m) or "crate" for m in component)
            print(f"{src}: import cycle between modules {names}")
            refused += 1
    if refused:
        sys.stdout.flush()
        print(f"check-structure: {refused} refused", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["."]))
