"""A Python job for test/bench/compare.sh: parses every .py file of some standard-library packages
with ast (keeping each package's trees alive until it is counted, as a linter would), counts the
node types per package, and prints the counts as JSON. Deterministic for a given Python
installation.

Usage: python3 ast_census.py PACKAGE_DIR...
"""
import ast
import collections
import json
import pathlib
import sys


def census(package_dir):
    trees = [ast.parse(path.read_bytes(), filename=str(path))
             for path in sorted(pathlib.Path(package_dir).rglob("*.py"))]
    return collections.Counter(type(node).__name__ for tree in trees for node in ast.walk(tree))


def main(package_dirs):
    result = {pathlib.Path(d).name: census(d) for d in package_dirs}
    print(json.dumps(result, sort_keys=True, indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
