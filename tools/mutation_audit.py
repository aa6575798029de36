"""Which rules of a module no test would notice breaking: one small change (a mutant) at a time.

Each mutant flips one comparison or boolean operator, negates one ``if``, drops one ``raise`` or
``not``, makes one ``return`` give None, or adds 1 to one integer literal. It is judged either by the
conformance suite on a store factory (``--factory memory``, ``--factory dynamodb_moto``, with
``--area`` to narrow it) or by a pytest run (``--pytest ARGS...``, run without xdist: the mutant lives
in this process only). A mutant the judge does not fail is printed with its line: a rule no case
pins, dead code, or a change with no visible effect (an equivalent mutant). Read each one.

    .venv/bin/python tools/mutation_audit.py genkit_sessions.stores.write_rules
    .venv/bin/python tools/mutation_audit.py genkit_sessions.dynamodb._records --factory dynamodb_moto \\
        --area store --area records --area service --jobs 2
    .venv/bin/python tools/mutation_audit.py genkit_sessions.dynamodb._head --only 41 \\
        --pytest tests/dynamodb/test_write_races.py -k expecting_a_version

Nothing here is part of the test suite: a sweep of one module takes minutes.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import importlib.abc
import importlib.machinery
import importlib.util
import subprocess
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_SWAP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.GtE,
    ast.GtE: ast.Lt,
    ast.Gt: ast.LtE,
    ast.LtE: ast.Gt,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}


def _sites(tree: ast.AST) -> list[tuple[ast.AST, str]]:
    """Every place one mutant can be made, in a stable order (``ast.walk``'s)."""
    found: list[tuple[ast.AST, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            found.append((node, "compare"))
        elif isinstance(node, ast.BoolOp):
            found.append((node, "boolop"))
        elif isinstance(node, ast.If):
            found.append((node, "if-not"))
        elif isinstance(node, ast.Raise):
            found.append((node, "raise-pass"))
        elif isinstance(node, ast.Return) and node.value is not None:
            if not (isinstance(node.value, ast.Constant) and node.value.value is None):
                found.append((node, "return-none"))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            found.append((node, "drop-not"))
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            found.append((node, "int+1"))
    return found


class _DropNot(ast.NodeTransformer):
    def __init__(self, target: ast.AST) -> None:
        self.target = target

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        if node is self.target:
            return ast.Call(func=ast.Name(id="bool", ctx=ast.Load()), args=[node.operand], keywords=[])
        return self.generic_visit(node)


class _RaiseToPass(ast.NodeTransformer):
    def __init__(self, target: ast.AST) -> None:
        self.target = target

    def visit_Raise(self, node: ast.Raise) -> ast.AST:
        return ast.Pass() if node is self.target else node


def mutant(source: str, index: int) -> tuple[str, str]:
    """The source with mutant ``index`` applied, and what it is (``kind@line``)."""
    tree = ast.parse(source)
    node, kind = _sites(tree)[index]
    line = getattr(node, "lineno", 0)
    if isinstance(node, ast.Compare):
        node.ops[0] = _SWAP.get(type(node.ops[0]), ast.Eq)()
    elif isinstance(node, ast.BoolOp):
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    elif isinstance(node, ast.If):
        node.test = ast.UnaryOp(op=ast.Not(), operand=node.test)
    elif isinstance(node, ast.Raise):
        tree = _RaiseToPass(node).visit(tree)
    elif isinstance(node, ast.Return):
        node.value = ast.Constant(value=None)
    elif isinstance(node, ast.UnaryOp):
        tree = _DropNot(node).visit(tree)
    elif isinstance(node, ast.Constant) and isinstance(node.value, int):
        node.value += 1
    ast.fix_missing_locations(tree)
    return ast.unparse(tree), f"{kind}@{line}"


class _MutantLoader(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the mutated source for one module name; every other import is left alone."""

    def __init__(self, name: str, path: Path, code: str) -> None:
        self.name, self.path, self.code = name, path, code

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        return importlib.util.spec_from_loader(fullname, self, origin=str(self.path))

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        module.__file__ = str(self.path)
        exec(compile(self.code, str(self.path), "exec"), module.__dict__)


def _source_of(module: str) -> Path:
    return ROOT / (module.replace(".", "/") + ".py")


def _install(module: str, index: int) -> str:
    path = _source_of(module)
    code, what = mutant(path.read_text(encoding="utf-8"), index)
    sys.meta_path.insert(0, _MutantLoader(module, path, code))
    return what


def _judge_by_suite(module: str, index: int, factory_name: str, areas: list[str]) -> str:
    what = _install(module, index)
    import genkit_sessions_conformance as conformance
    from genkit_sessions_conformance import factories

    report = conformance.run_suite(getattr(factories, factory_name), areas=areas or None, case_timeout=60)
    failed = [r.case.id for r in report.results if r.outcome == "failed"]
    first = f": {failed[0]}" if failed else ""
    return f"{'KILLED' if failed else 'SURVIVED'} {what} ({len(failed)} cases failed{first})"


def _judge_by_pytest(module: str, index: int, args: list[str]) -> str:
    what = _install(module, index)
    import pytest

    code = pytest.main(["-q", "-x", "-p", "no:cacheprovider", *args])
    return f"{'KILLED' if code else 'SURVIVED'} {what} (pytest exit {code})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("module", help="a module of this repository, dotted (genkit_sessions.stores.memory)")
    parser.add_argument("--factory", default="memory", help="a factory of genkit_sessions_conformance.factories")
    parser.add_argument("--area", action="append", default=[], help="conformance areas to run (default: all)")
    parser.add_argument("--jobs", type=int, default=1, help="mutants judged at once, each in its own process")
    parser.add_argument("--only", type=int, action="append", help="judge only these mutant numbers")
    parser.add_argument("--pytest", nargs=argparse.REMAINDER, help="judge by this pytest run instead of the suite")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a worker: judge one mutant here
    options = parser.parse_args(argv)
    if options.one is not None:
        if options.pytest is not None:
            print(_judge_by_pytest(options.module, options.one, options.pytest))
        else:
            print(_judge_by_suite(options.module, options.one, options.factory, options.area))
        return 0
    count = len(_sites(ast.parse(_source_of(options.module).read_text(encoding="utf-8"))))
    chosen = options.only or list(range(count))
    base = [sys.executable, __file__, options.module, "--factory", options.factory]
    base += [f"--area={a}" for a in options.area]

    def judge(index: int) -> str:
        command = [*base, "--one", str(index), *(["--pytest", *options.pytest] if options.pytest is not None else [])]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=ROOT)
        except subprocess.TimeoutExpired:
            return "KILLED (timed out)"
        lines = done.stdout.strip().splitlines()
        verdict = [line for line in lines if line.startswith(("KILLED", "SURVIVED"))]
        if verdict:
            return verdict[-1]
        return f"KILLED (the mutant does not run: {(done.stderr.strip().splitlines() or ['?'])[-1]})"

    survived = 0
    with concurrent.futures.ThreadPoolExecutor(max(1, options.jobs)) as pool:
        for index, verdict in zip(chosen, pool.map(judge, chosen), strict=True):
            if not verdict.startswith("KILLED"):
                survived += 1
                print(f"{index:4d} {verdict}", flush=True)
    print(f"{options.module}: {len(chosen)} mutants, {survived} survived")
    return 0


if __name__ == "__main__":
    sys.exit(main())
