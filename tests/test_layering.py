"""The package's layering, enforced by reading every module of cuzk/ (nothing is imported).

Layers, low to high; a module may import its own layer's package and anything lower, never higher:

    0  cuzk.errors, cuzk.util          4  cuzk.r1cs        8  cuzk.engine
    1  cuzk.ff                         5  cuzk.gadgets     9  cuzk.api, cuzk.service, cuzk.cluster, cuzk.selftest, cuzk (the facade)
    2  cuzk.ec, cuzk.hashes            6  cuzk.groth16    10  cuzk.cli, cuzk.__main__
    3  cuzk.backend                    7  cuzk.interop, cuzk.porep

Every import counts: top-level and inside functions, `import x` and `from x import y` (y resolved to
the module x.y when there is one), relative imports resolved, `importlib.import_module("...")` with
a constant name. The rules, each named in a failure:

- layer: a lower layer never imports a higher one.
- sibling: two packages of one layer do not import each other (ALLOWED_SIBLINGS lists exceptions).
- backend-split: cuzk.backend.cpu and cuzk.backend.cuda never import each other (both may use
  cuzk.backend.base).
- backend-facade: outside cuzk.backend only cuzk.backend (get_backend, Backend) and
  cuzk.backend.base are imported, except the places in BACKEND_ALLOWED.
- facade-init: cuzk/__init__.py imports at module level only layer 0; anything above only lazily.
- prover-getattr: groth16/prover.py reaches the backend through the interface: no getattr/hasattr
  on it.
- private: a private module (a name starting with _) is imported only from its own package.
- private-name: no module imports or reaches a private name (`_x`, not a module) of another cuzk
  module: `from cuzk.a import _x`, or `m._x` where m names an imported cuzk module (PRIVATE_ALLOWED
  lists exceptions).
- alias: no one-letter alias of a module (`import x as L`, `from x import y as S` with y a module).
- device-seam: outside cuzk.backend no module imports cupy or compares a backend's name with "cuda":
  the upper layers reach devices through the Backend's device members (SEAM_ALLOWED lists exceptions).
"""
from __future__ import annotations

import ast
import importlib.util
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "cuzk"

LAYERS: dict[str, int] = {
    "cuzk.errors": 0, "cuzk.util": 0,
    "cuzk.ff": 1,
    "cuzk.ec": 2, "cuzk.hashes": 2,
    "cuzk.backend": 3,
    "cuzk.r1cs": 4,
    "cuzk.gadgets": 5,
    "cuzk.groth16": 6,
    "cuzk.interop": 7, "cuzk.porep": 7, "cuzk.post": 7, "cuzk.snap": 7,
    "cuzk.engine": 8,
    "cuzk.api": 9, "cuzk.service": 9, "cuzk.cluster": 9, "cuzk.selftest": 9, "cuzk": 9,  # built on the engine
    "cuzk.cli": 10, "cuzk.__main__": 10,
}
# (importer package, imported package) of one layer that may meet: util's helpers raise typed errors;
# PoSt proves over the trees, gadgets and commitments of sealed sectors; the daemon runs on a cluster's
# engine under --cluster.
ALLOWED_SIBLINGS = {("cuzk.util", "cuzk.errors"), ("cuzk.post", "cuzk.porep"), ("cuzk.snap", "cuzk.porep"),
                    ("cuzk.service", "cuzk.cluster")}
# (importer module, imported module) outside cuzk.backend that may reach inside it:
# `cuzk gpu build` and the selftest compile the kernels ahead through the loader; `cuzk gpu info`
# reads the CUDA devices.
BACKEND_ALLOWED = {("cuzk.selftest", "cuzk.backend.cuda.loader"), ("cuzk.cli.gpu", "cuzk.backend.cuda.loader"),
                   ("cuzk.cli.gpu", "cuzk.backend.cuda.device")}
BACKEND_PUBLIC = {"cuzk.backend", "cuzk.backend.base"}
# (importer module, private name as module.name) that may be reached.
PRIVATE_ALLOWED: set[tuple[str, str]] = set()
# modules outside cuzk.backend that may use cupy: the plain-integer reference the GPU kernels' tests
# compare against sums CuPy arrays.
SEAM_ALLOWED = {"cuzk.ec.reference"}
PROVER = "cuzk.groth16.prover"


@dataclass(frozen=True)
class Import:
    path: str          # file, relative to the repository
    line: int
    importer: str      # module name
    imported: str      # module name (a cuzk module resolved as far as the tree has it, or external)
    alias: str | None  # the local name when `as` binds a module
    lazy: bool         # inside a function or class body


@dataclass(frozen=True)
class Violation:
    path: str
    line: int
    importer: str
    imported: str
    rule: str
    why: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.importer} -> {self.imported} [{self.rule}] {self.why}"


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def discover(root: Path) -> dict[str, Path]:
    """Module name -> file, for every .py file of the package under root (root holds `cuzk/`)."""
    return {module_name(p, root): p for p in sorted((root / "cuzk").rglob("*.py")) if "__pycache__" not in p.parts}


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def _resolve_relative(importer: str, is_package: bool, level: int, module: str | None) -> str:
    base = importer.split(".")
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, module] if module else base)


def _external_is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError, AttributeError):
        return False


def imports_of(source: str, path: str, importer: str, is_package: bool, modules: set[str]) -> list[Import]:
    """Every import in one module's source, with the names resolved to modules."""
    tree = ast.parse(source, filename=path)
    out: list[Import] = []

    def is_module(name: str) -> bool:
        if name == "cuzk" or name.startswith("cuzk."):
            return name in modules
        return _external_is_module(name)

    def visit(node: ast.AST, lazy: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))
            if isinstance(child, ast.Import):
                for a in child.names:
                    out.append(Import(path, child.lineno, importer, a.name, a.asname, lazy))
            elif isinstance(child, ast.ImportFrom):
                base = (_resolve_relative(importer, is_package, child.level, child.module) if child.level
                        else child.module or "")
                for a in child.names:
                    sub = f"{base}.{a.name}"
                    if a.name != "*" and is_module(sub):
                        out.append(Import(path, child.lineno, importer, sub, a.asname, lazy))
                    else:
                        out.append(Import(path, child.lineno, importer, base, None, lazy))
            elif (isinstance(child, ast.Call) and child.args and isinstance(child.args[0], ast.Constant)
                  and isinstance(child.args[0].value, str)
                  and ast.unparse(child.func) in ("importlib.import_module", "import_module", "__import__")):
                out.append(Import(path, child.lineno, importer, child.args[0].value, None, lazy))
            visit(child, inner)

    visit(tree, False)
    return out


def layer_of(name: str) -> tuple[str, int] | None:
    """(the layer map's entry, layer) for a cuzk module: its longest prefix in LAYERS."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        key = ".".join(parts[:i])
        if key in LAYERS:
            return key, LAYERS[key]
    return None


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _package_of(name: str, modules: dict[str, Path]) -> str:
    return name if name in modules and _is_package(modules[name]) else name.rpartition(".")[0]


def check_import(imp: Import, modules: dict[str, Path]) -> list[Violation]:
    found: list[Violation] = []

    def bad(rule: str, why: str) -> None:
        found.append(Violation(imp.path, imp.line, imp.importer, imp.imported, rule, why))

    if imp.alias is not None and len(imp.alias) == 1:
        bad("alias", f"one-letter alias {imp.alias!r} for a module: name it for what it is")
    if not _within(imp.imported, "cuzk"):
        return found
    src, dst = layer_of(imp.importer), layer_of(imp.imported)
    if dst is None:
        bad("layer", "imported module is in no layer: add its package to LAYERS in tests/test_layering.py")
        return found
    if src is None:
        return found  # reported once per module by test_every_module_has_a_layer
    (src_key, src_layer), (dst_key, dst_layer) = src, dst
    if imp.importer == "cuzk":
        if not imp.lazy and dst_layer > 0:
            bad("facade-init", "cuzk/__init__ imports layer >= 1 at module level; import it inside a function")
    elif src_layer < dst_layer:
        bad("layer", f"layer {src_layer} ({src_key}) imports layer {dst_layer} ({dst_key})")
    elif src_layer == dst_layer and src_key != dst_key and (src_key, dst_key) not in ALLOWED_SIBLINGS:
        bad("sibling", f"{src_key} and {dst_key} share layer {src_layer} and must not import each other")
    for a, b in (("cuzk.backend.cpu", "cuzk.backend.cuda"), ("cuzk.backend.cuda", "cuzk.backend.cpu")):
        if _within(imp.importer, a) and _within(imp.imported, b):
            bad("backend-split", f"{a} must not import {b}; share code through cuzk.backend.base")
    if (_within(imp.imported, "cuzk.backend") and not _within(imp.importer, "cuzk.backend")
            and imp.imported not in BACKEND_PUBLIC and (imp.importer, imp.imported) not in BACKEND_ALLOWED):
        bad("backend-facade", "outside cuzk.backend use cuzk.backend (get_backend, Backend) or cuzk.backend.base")
    private = [p for p in imp.imported.split(".") if p.startswith("_") and not p.startswith("__")]
    if private:
        home = imp.imported.rpartition(".")[0]
        if _package_of(imp.importer, modules) != home:
            bad("private", f"private module {imp.imported} is imported from outside its package {home}")
    return found


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and name != "_"


def private_names(source: str, path: str, importer: str, is_package: bool, modules: set[str]) -> list[Violation]:
    """The private names of other cuzk modules that one module imports (`from cuzk.a import _x`) or
    reaches as an attribute of a name bound to an imported cuzk module (`m._x`, `cuzk.a._x`)."""
    tree = ast.parse(source, filename=path)
    bound: dict[str, str] = {}  # local (dotted) name -> the cuzk module it names
    found: list[Violation] = []

    def bad(line: int, module: str, name: str, how: str) -> None:
        if module != importer and (importer, f"{module}.{name}") not in PRIVATE_ALLOWED:
            found.append(Violation(path, line, importer, f"{module}.{name}", "private-name",
                                   f"{how} a private name of another module: make it public where it is shared"))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    bound[a.asname] = a.name
                else:
                    parts = a.name.split(".")
                    bound.update({".".join(parts[:i]): ".".join(parts[:i]) for i in range(1, len(parts) + 1)})
        elif isinstance(node, ast.ImportFrom):
            base = _resolve_relative(importer, is_package, node.level, node.module) if node.level else node.module or ""
            for a in node.names:
                if f"{base}.{a.name}" in modules:
                    bound[a.asname or a.name] = f"{base}.{a.name}"
                elif base in modules and _is_private(a.name):
                    bad(node.lineno, base, a.name, "imports")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            module = bound.get(ast.unparse(node.value))
            if module in modules:
                bad(node.lineno, module, node.attr, "reaches")
    return found


def _backend_names(tree: ast.AST) -> set[str]:
    """Names in a module that hold a backend: any name with 'backend' in it, and arguments typed Backend."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.annotation is not None and "Backend" in ast.unparse(node.annotation):
            names.add(node.arg)
    return names


def getattr_on_backend(source: str, path: str) -> list[Violation]:
    tree = ast.parse(source, filename=path)
    typed = _backend_names(tree)
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")
                and node.args):
            target = ast.unparse(node.args[0])
            if "backend" in target.lower() or target in typed:
                found.append(Violation(path, node.lineno, PROVER, ast.unparse(node), "prover-getattr",
                                       "the prover reaches the backend only through the Backend interface"))
    return found


def device_seam(source: str, path: str, importer: str) -> list[Violation]:
    """The device-seam rule for one module outside cuzk.backend: cupy imports, `x.name == "cuda"`."""
    if _within(importer, "cuzk.backend") or importer in SEAM_ALLOWED:
        return []
    found = []
    for node in ast.walk(ast.parse(source, filename=path)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if any(n == "cupy" or n.startswith("cupy.") for n in names):
                found.append(Violation(path, node.lineno, importer, "cupy", "device-seam",
                                       "only cuzk.backend imports cupy"))
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Attribute) and node.left.attr == "name" \
                and any(isinstance(c, ast.Constant) and c.value == "cuda" for c in node.comparators):
            found.append(Violation(path, node.lineno, importer, ast.unparse(node), "device-seam",
                                   "use the backend's device members, not its name"))
    return found


def scan(root: Path = ROOT) -> tuple[list[Violation], dict[str, Path]]:
    modules = discover(root)
    names = set(modules)
    violations: list[Violation] = []
    for name, path in modules.items():
        rel = str(path.relative_to(root))
        source = path.read_text()
        for imp in imports_of(source, rel, name, _is_package(path), names):
            violations.extend(check_import(imp, modules))
        violations.extend(private_names(source, rel, name, _is_package(path), names))
        violations.extend(device_seam(source, rel, name))
        if name == PROVER:
            violations.extend(getattr_on_backend(source, rel))
    return list(dict.fromkeys(violations)), modules  # one line per (place, import, rule)


def _report(violations: list[Violation]) -> str:
    by_rule: dict[str, int] = {}
    for v in violations:
        by_rule[v.rule] = by_rule.get(v.rule, 0) + 1
    summary = ", ".join(f"{rule} {n}" for rule, n in sorted(by_rule.items()))
    return f"{len(violations)} layering violation(s) ({summary}):\n" + "\n".join(map(str, violations))


def test_every_module_has_a_layer():
    missing = [f"{p.relative_to(ROOT)}: {name}" for name, p in discover(ROOT).items() if layer_of(name) is None]
    assert not missing, "modules in no layer (add their package to LAYERS):\n" + "\n".join(missing)


def test_layering():
    violations, modules = scan()
    assert len(modules) > 20, f"found only {len(modules)} modules under {PACKAGE}"
    if violations:
        pytest.fail(_report(violations), pytrace=False)


# The checker itself: it must see what it claims to see.

def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp_path


def test_checker_finds_each_rule(tmp_path):
    root = _tree(tmp_path, {
        "cuzk/__init__.py": "from cuzk.errors import E\nfrom cuzk import ff\n"
                            "def __getattr__(name):\n    from cuzk import api\n",
        "cuzk/errors.py": "",
        "cuzk/api.py": "",
        "cuzk/ff/__init__.py": "",
        "cuzk/ff/_wide.py": "",
        "cuzk/ff/fields.py": "from . import _wide\ndef f():\n    from ..groth16 import prover\n",
        "cuzk/ec/__init__.py": "",
        "cuzk/ec/curves.py": "from cuzk.ff import _wide\nimport cuzk.hashes.sha256 as S\n",
        "cuzk/ec/points.py": "from cuzk.ff.fields import _helper, public\nfrom cuzk.ff import fields\n"
                             "import cuzk.ff.fields\nfrom . import curves\nimport cuzk.ff.fields as ff_fields\n"
                             "def f(m):\n"
                             "    return (fields._other, cuzk.ff.fields._third, ff_fields._fourth, curves._x,\n"
                             "            fields.__name__, fields.public, m._not_a_module, _own)\n",
        "cuzk/hashes/__init__.py": "",
        "cuzk/hashes/sha256.py": "",
        "cuzk/backend/__init__.py": "",
        "cuzk/backend/base.py": "",
        "cuzk/backend/cpu/__init__.py": "from cuzk.backend.cuda import loader\n",
        "cuzk/backend/cuda/__init__.py": "",
        "cuzk/backend/cuda/msm.py": "",
        "cuzk/backend/cuda/loader.py": "import importlib\nm = importlib.import_module('cuzk.backend.cpu')\n",
        "cuzk/groth16/__init__.py": "",
        "cuzk/groth16/prover.py": "from cuzk.backend.base import Backend\nfrom cuzk.backend import cpu\n"
                                  "def prove(backend: Backend, be: Backend):\n"
                                  "    getattr(backend, 'msm_g1_sparse')\n    hasattr(be, 'x')\n"
                                  "    getattr(object(), 'y')\n",
        "cuzk/selftest.py": "from cuzk.backend.cuda import loader\n",
        "cuzk/cli.py": "from cuzk.backend.cuda import msm\nfrom cuzk import api\n",
        "cuzk/engine/__init__.py": "import cupy\ndef f(be):\n    return be.name == 'cuda' or be.name != 'cpu'\n",
    })
    violations, _ = scan(root)
    got = {(v.importer, v.imported, v.rule) for v in violations}
    want = {
        ("cuzk", "cuzk.ff", "facade-init"),
        ("cuzk.ff.fields", "cuzk.groth16.prover", "layer"),        # relative, inside a function
        ("cuzk.ec.curves", "cuzk.ff._wide", "private"),
        ("cuzk.ec.curves", "cuzk.hashes.sha256", "sibling"),
        ("cuzk.ec.curves", "cuzk.hashes.sha256", "alias"),
        ("cuzk.backend.cpu", "cuzk.backend.cuda.loader", "backend-split"),
        ("cuzk.backend.cuda.loader", "cuzk.backend.cpu", "backend-split"),  # importlib with a constant
        ("cuzk.groth16.prover", "cuzk.backend.cpu", "backend-facade"),
        ("cuzk.groth16.prover", "getattr(backend, 'msm_g1_sparse')", "prover-getattr"),
        ("cuzk.groth16.prover", "hasattr(be, 'x')", "prover-getattr"),
        ("cuzk.cli", "cuzk.backend.cuda.msm", "backend-facade"),
        ("cuzk.ec.points", "cuzk.ff.fields._helper", "private-name"),  # from-import
        ("cuzk.ec.points", "cuzk.ff.fields._other", "private-name"),   # attribute of an imported module
        ("cuzk.ec.points", "cuzk.ff.fields._third", "private-name"),   # through its dotted name
        ("cuzk.ec.points", "cuzk.ff.fields._fourth", "private-name"),  # through an alias
        ("cuzk.ec.points", "cuzk.ec.curves._x", "private-name"),       # a module of the same package
        ("cuzk.engine", "cupy", "device-seam"),
        ("cuzk.engine", "be.name == 'cuda'", "device-seam"),
    }
    assert got == want, f"missing: {want - got}\nunexpected: {got - want}"


@pytest.mark.parametrize("source, importer, is_package, want", [
    ("from . import x", "cuzk.ff.fields", False, "cuzk.ff.x"),
    ("from . import x", "cuzk.ff", True, "cuzk.ff.x"),
    ("from .. import x", "cuzk.ff.fields", False, "cuzk.x"),
    ("from ..ec.curves import G1", "cuzk.ff.fields", False, "cuzk.ec.curves"),
    ("from .curves import G1", "cuzk.ec", True, "cuzk.ec.curves"),
])
def test_relative_imports_resolve(source, importer, is_package, want):
    modules = {"cuzk.ff.x", "cuzk.x", "cuzk.ec.curves"}
    [imp] = imports_of(source, "f.py", importer, is_package, modules)
    assert imp.imported == want
