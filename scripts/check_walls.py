#!/usr/bin/env python3
"""The walls between the layers of src/, checked on every #include.

Each folder src/X is one library, cpuft_X; its CMakeLists.txt says which cpuft_* libraries it links
(target_link_libraries). A file of src/X may include headers of X and of the libraries X links,
directly or through them, and nothing else. Test files (names containing "test") may also include
the test helpers in tests/. Each quoted #include is resolved the way the compiler resolves it
(the including file's folder first, then the include roots), so a relative path such as
"../train/trainer.h" is seen for what it is.

usage: scripts/check_walls.py [--graph]    (exit 1 and one line per violation; --graph prints the
                                            dependency graph as the build states it)
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")
TESTS = os.path.join(ROOT, "tests")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
LINK = re.compile(r"target_link_libraries\(\s*cpuft_(\w+)([^)]*)\)", re.S)


def declared_links():
    """{folder: set of folders it links directly}, from src/*/CMakeLists.txt."""
    links = {}
    for folder in sorted(os.listdir(SRC)):
        cmake = os.path.join(SRC, folder, "CMakeLists.txt")
        if not os.path.isfile(cmake):
            continue
        text = re.sub(r"#.*", "", open(cmake).read())
        links.setdefault(folder, set())
        for lib, args in LINK.findall(text):
            if lib != folder:
                continue  # a test or tool target of this folder
            for dep in re.findall(r"\bcpuft_(\w+)", args):
                if os.path.isdir(os.path.join(SRC, dep)):
                    links[folder].add(dep)
    return links


def closure(links, folder):
    seen, todo = {folder}, [folder]
    while todo:
        for dep in links.get(todo.pop(), ()):
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return seen


def resolve(including, name, roots):
    for base in [os.path.dirname(including)] + roots:
        path = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(path):
            return path
    return None


def layer_of(path):
    rel = os.path.relpath(path, ROOT).split(os.sep)
    if rel[0] == "src" and len(rel) > 2:
        return "src/" + rel[1]
    return rel[0]


def main():
    links = declared_links()
    if "--graph" in sys.argv:
        for folder in sorted(links):
            print(f"{folder} -> {', '.join(sorted(links[folder])) or '(nothing)'}")
        return 0
    violations = []
    for dirpath, _, files in os.walk(SRC):
        for f in sorted(files):
            if not f.endswith((".h", ".cc")):
                continue
            path = os.path.join(dirpath, f)
            folder = os.path.relpath(path, SRC).split(os.sep)[0]
            is_test = "test" in f
            allowed = {"src/" + x for x in closure(links, folder)}
            roots = [SRC] + ([TESTS] if is_test else [])
            if is_test:
                allowed.add("tests")
            for name in INCLUDE.findall(open(path, encoding="utf-8").read()):
                target = resolve(path, name, roots)
                if target is None:
                    violations.append(f"{os.path.relpath(path, ROOT)}: #include \"{name}\" "
                                      "is not a file of the project")
                    continue
                if layer_of(target) not in allowed:
                    violations.append(
                        f"{os.path.relpath(path, ROOT)}: #include \"{name}\" reaches "
                        f"{os.path.relpath(target, ROOT)}, but cpuft_{folder} does not link "
                        f"cpuft_{layer_of(target).removeprefix('src/')}")
    for v in violations:
        print("wall:", v)
    if violations:
        print(f"check_walls: {len(violations)} include(s) across a wall")
        return 1
    print(f"check_walls: every #include in src/ stays inside its library's dependencies")
    return 0


if __name__ == "__main__":
    sys.exit(main())
