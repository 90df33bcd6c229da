"""Every import inside hlopipe/ keeps to the room table of docs/architecture.md.

The table is read from the document itself, so the two cannot drift: a new import between
rooms either follows a row's "may import" cell or the test names the file, the line, the
import and the rule it breaks. Also read from the document and checked: the private names a
room reaches for in another (another room's ``_module`` or ``_name``, each listed with its
reason), the packages outside hlopipe each room imports, and the cycles the known exceptions
make.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
PACKAGE = "hlopipe"


@dataclass(frozen=True)
class Room:
    name: str  # "io", "marker", "cli", "hlopipe" (the package's __init__.py)
    path: str  # "hlopipe/io/" (a package) or "hlopipe/marker.py" (one module)
    may_import: frozenset[str] | None  # None: everything
    ground: bool  # ground floor: every room may import it
    planned: bool  # may not exist yet
    no_jax: bool  # "no JAX" in its outside column

    @property
    def dotted(self) -> str:
        if self.path == f"{PACKAGE}/__init__.py":
            return PACKAGE
        return self.path.rstrip("/").removesuffix(".py").replace("/", ".")

    def holds(self, module: str) -> bool:
        """Whether the dotted module name belongs to this room."""
        if self.name == PACKAGE:
            return module == PACKAGE
        return module == self.dotted or module.startswith(self.dotted + ".")


@dataclass(frozen=True)
class Exception_:
    file: str
    room: str


@dataclass(frozen=True)
class Import:
    file: str  # relative to ROOT
    line: int
    target: str  # absolute dotted module name
    text: str  # the statement as written
    name: str | None = None  # `from target import name`, when name is not a module


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _table(text: str, heading: str) -> list[list[str]]:
    """The rows (cells) of the first table after ``heading``."""
    at = text.find(heading)
    assert at >= 0, f"{DOC.name} has no section {heading!r}"
    lines = text[at:].splitlines()[1:]
    rows: list[list[str]] = []
    for line in lines:
        if line.startswith("|"):
            rows.append(_cells(line))
        elif rows:
            break
    assert len(rows) > 2, f"{DOC.name}: no table under {heading!r}"
    return rows[2:]  # header and --- rule


def _ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def _room_name(path: str) -> str:
    if path == f"{PACKAGE}/__init__.py":
        return PACKAGE
    return path.removeprefix(f"{PACKAGE}/").rstrip("/").removesuffix(".py")


def parse_doc(text: str) -> tuple[dict[str, Room], list[Exception_]]:
    rooms: dict[str, Room] = {}
    for cells in _table(text, "## Rooms and what each may import"):
        assert len(cells) == 4, f"{DOC.name}: a room row needs 4 cells: {cells}"
        (path,) = _ticked(cells[0])
        may = None if cells[2].strip() == "everything" else frozenset(_ticked(cells[2]))
        name = _room_name(path)
        rooms[name] = Room(
            name=name,
            path=path,
            may_import=may,
            ground="**ground floor**" in cells[1],
            planned="(planned" in cells[1],
            no_jax="no JAX" in cells[3],
        )
    exceptions = []
    for cells in _table(text, "### Known exceptions"):
        (file,) = _ticked(cells[0])
        (room,) = _ticked(cells[1])
        exceptions.append(Exception_(file, room))
    return rooms, exceptions


def _module_name(path: Path, root: Path) -> tuple[str, str]:
    """(module, package it resolves relative imports against) of a file under ``root``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        name = ".".join(parts[:-1])
        return name, name
    return ".".join(parts), ".".join(parts[:-1])


def _exists(module: str, root: Path) -> bool:
    base = root / module.replace(".", "/")
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def imports_of(path: Path, root: Path) -> list[Import]:
    """Every import of a hlopipe module in ``path``, at any depth, as absolute names."""
    source = path.read_text()
    _, package = _module_name(path, root)
    rel = str(path.relative_to(root))
    found = []
    for node in ast.walk(ast.parse(source, rel)):
        targets: list[str] = []
        names: list[str | None] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                assert base, f"{rel}:{node.lineno}: relative import above the package"
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            # `from hlopipe import io` imports the submodule hlopipe.io
            for a in node.names:
                sub = f"{mod}.{a.name}"
                targets.append(sub if _exists(sub, root) else mod)
                names.append(None if _exists(sub, root) else a.name)
        else:
            continue
        names += [None] * (len(targets) - len(names))
        text = ast.unparse(node)  # (get_source_segment re-splits the file on every call)
        for t, n in zip(targets, names, strict=True):
            if t.split(".")[0] in (PACKAGE, "jax", "jaxlib"):
                found.append(Import(rel, node.lineno, t, text, n))
    return found


def room_of(module: str, rooms: dict[str, Room]) -> Room | None:
    best = None
    for r in rooms.values():
        if r.holds(module) and (best is None or len(r.dotted) > len(best.dotted)):
            best = r
    return best


def violations(root: Path, rooms: dict[str, Room], exceptions: list[Exception_]) -> list[str]:
    """Every import under ``root/hlopipe`` the table does not allow, as messages; and every
    known exception that no longer happens."""
    problems: list[str] = []
    ground = {r.name for r in rooms.values() if r.ground}
    used: set[Exception_] = set()
    for path in sorted((root / PACKAGE).rglob("*.py")):
        module, _ = _module_name(path, root)
        own = room_of(module, rooms)
        rel = str(path.relative_to(root))
        if own is None:
            problems.append(
                f"{rel}: no row of the room table in docs/architecture.md covers {module}; "
                "add one (or move the module into a room)"
            )
            continue
        for imp in imports_of(path, root):
            if imp.target.split(".")[0] != PACKAGE:
                if own.no_jax:
                    problems.append(
                        f"{imp.file}:{imp.line}: `{imp.text}`: {own.name} imports "
                        f"{imp.target}, but its row says no JAX"
                    )
                continue
            target = room_of(imp.target, rooms)
            if target is None:
                problems.append(
                    f"{imp.file}:{imp.line}: `{imp.text}`: {imp.target} is in no room of the table"
                )
                continue
            if target is own or target.name in ground or own.may_import is None:
                continue
            if target.name in own.may_import:
                continue
            exc = Exception_(imp.file, target.name)
            if exc in exceptions:
                used.add(exc)
                continue
            allowed = ", ".join(sorted(own.may_import | ground)) or "nothing"
            problems.append(
                f"{imp.file}:{imp.line}: `{imp.text}`: {own.name} imports {target.name}, "
                f"which its row does not name ({own.name} may import: {allowed})"
            )
    for exc in exceptions:
        if exc not in used:
            problems.append(
                f"{exc.file} no longer imports {exc.room}: remove it from the known "
                "exceptions in docs/architecture.md"
            )
    return problems


def table_problems(root: Path, rooms: dict[str, Room]) -> list[str]:
    problems = []
    for r in rooms.values():
        for name in sorted(r.may_import or ()):
            if name not in rooms:
                problems.append(f"row {r.path}: may import {name!r}, which is no room")
            elif r.may_import is not None and r.name in (rooms[name].may_import or ()):
                problems.append(f"rows {r.path} and {rooms[name].path} name each other")
        if r.ground and r.may_import:
            problems.append(f"row {r.path}: the ground floor imports nothing of hlopipe")
        if not (root / r.path).exists() and not r.planned:
            problems.append(f"row {r.path}: no such file or package (mark it planned?)")
    return problems


@pytest.fixture(scope="module")
def table() -> tuple[dict[str, Room], list[Exception_]]:
    return parse_doc(DOC.read_text())


def test_table_reads_and_is_consistent(table) -> None:
    rooms, exceptions = table
    for name in ("errors", "_jax_compat", "marker", "io", "rehydrate", "conformance"):
        assert name in rooms, f"docs/architecture.md lost the row of {name}"
    assert rooms["_jax_compat"].ground and rooms["errors"].ground
    assert rooms["cli"].may_import is None and rooms[PACKAGE].may_import is None
    assert rooms["schedules"].no_jax
    for exc in exceptions:
        assert exc.room in rooms, f"known exception {exc}: no such room"
    assert table_problems(ROOT, rooms) == []


def test_every_import_keeps_to_the_table(table) -> None:
    rooms, exceptions = table
    problems = violations(ROOT, rooms, exceptions)
    assert not problems, "imports that break docs/architecture.md:\n" + "\n".join(problems)


def test_the_checker_sees_every_kind_of_import(tmp_path, table) -> None:
    """A package laid out like hlopipe with one bad import of each form: every one is named."""
    rooms, _ = table
    pkg = tmp_path / PACKAGE
    for sub in ("schedules", "io", "rehydrate", "rehydrate/ops", "stages"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "errors.py").write_text("")
    (pkg / "marker.py").write_text("")
    (pkg / "schedules" / "_a.py").write_text(
        "from hlopipe.errors import HlopipeError\n"  # ground floor: fine
        "from . import _b\n"  # own room: fine
        "def f():\n"
        "    from hlopipe import stages\n"  # function-local, `from hlopipe import`
        "    import jax\n"  # schedules: no JAX
    )
    (pkg / "schedules" / "_b.py").write_text("")
    (pkg / "io" / "_c.py").write_text("from ..rehydrate import ops\n")  # relative, upward
    (pkg / "rehydrate" / "ops" / "x.py").write_text(
        "from ... import marker\n"  # allowed: rehydrate may import marker
        "from ...stages import _d\n"  # relative, level 3, upward
        "import hlopipe.stages._d as d\n"
    )
    (pkg / "stages" / "_d.py").write_text("from hlopipe.io import _c\n")  # allowed
    (pkg / "stray.py").write_text("")
    found = violations(tmp_path, rooms, [Exception_("hlopipe/io/_x.py", "rehydrate")])
    expect = [
        "hlopipe/io/_c.py:1: `from ..rehydrate import ops`: io imports rehydrate",
        "hlopipe/rehydrate/ops/x.py:2: `from ...stages import _d`: rehydrate imports stages",
        "hlopipe/rehydrate/ops/x.py:3: `import hlopipe.stages._d as d`: rehydrate imports stages",
        "hlopipe/schedules/_a.py:4: `from hlopipe import stages`: schedules imports stages",
        "hlopipe/schedules/_a.py:5: `import jax`: schedules imports jax, but its row says no JAX",
        "hlopipe/stray.py: no row of the room table",
        "hlopipe/io/_x.py no longer imports rehydrate",
    ]
    for e in expect:
        assert sum(p.startswith(e) for p in found) == 1, (e, found)
    assert len(found) == len(expect), found


def test_a_cycle_in_the_table_is_refused(table) -> None:
    rooms, _ = table
    m = rooms["marker"]
    cyclic = {**rooms, "marker": Room(m.name, m.path, frozenset({"io"}), False, False, False)}
    assert any("name each other" in p for p in table_problems(ROOT, cyclic))


# -- private reach-ins -------------------------------------------------------------------------


def reach_of(imp: Import, own: Room, rooms: dict[str, Room]) -> str | None:
    """What ``imp`` reaches for that is private to another room, as the doc's table writes it
    (``rehydrate._spmd``: a private module; ``rehydrate.ops.collectives._channel``: a private
    name); None for a public name, or a name of the importer's own room."""
    target = room_of(imp.target, rooms)
    if target is None or target is own or target.name == PACKAGE:
        return None
    rest = imp.target[len(target.dotted) :].lstrip(".").split(".") if imp.target else []
    parts = [target.name]
    for part in filter(None, rest):
        parts.append(part)
        if part.startswith("_"):
            return ".".join(parts)  # a private module: what it imports from there is private
    if imp.name and imp.name.startswith("_") and not imp.name.startswith("__"):
        return ".".join([*parts, imp.name])
    return None


def parse_reach_ins(text: str) -> dict[tuple[str, str], str]:
    """The doc's table of known private reach-ins: (room, what it reaches) -> why."""
    found = {}
    for cells in _table(text, "### Private reach-ins"):
        assert len(cells) == 4, f"{DOC.name}: a reach-in row needs 4 cells: {cells}"
        (room,) = _ticked(cells[0])
        for reach in _ticked(cells[1]):
            assert cells[2].strip(), f"{DOC.name}: reach-in {room} -> {reach} gives no reason"
            found[(room, reach)] = cells[2]
    return found


def private_reach_ins(
    root: Path, rooms: dict[str, Room], known: dict[tuple[str, str], str]
) -> list[str]:
    """Every import of another room's ``_module`` or ``_name`` that the table of known
    reach-ins does not list, and every listed one that no longer happens."""
    problems, used = [], set()
    for path in sorted((root / PACKAGE).rglob("*.py")):
        own = room_of(_module_name(path, root)[0], rooms)
        if own is None:
            continue  # violations() names it
        for imp in imports_of(path, root):
            reach = reach_of(imp, own, rooms)
            if reach is None:
                continue
            if (own.name, reach) in known:
                used.add((own.name, reach))
                continue
            room = reach.split(".")[0]
            problems.append(
                f"{imp.file}:{imp.line}: `{imp.text}`: {own.name} reaches for {reach}, private "
                f"to {room}: import a public name of hlopipe.{room} (make one), or list it "
                "under 'Private reach-ins' in docs/architecture.md with its reason"
            )
    for room, reach in sorted(set(known) - used):
        problems.append(
            f"{room} no longer reaches for {reach}: remove it from 'Private reach-ins' in "
            "docs/architecture.md"
        )
    return problems


def test_private_names_stay_in_their_room(table) -> None:
    rooms, _ = table
    known = parse_reach_ins(DOC.read_text())
    for room, reach in known:
        assert room in rooms and reach.split(".")[0] in rooms, (room, reach)
    problems = private_reach_ins(ROOT, rooms, known)
    assert not problems, "private reach-ins docs/architecture.md does not list:\n" + "\n".join(
        problems
    )


def test_the_reach_in_checker_sees_each_form(tmp_path, table) -> None:
    rooms, _ = table
    pkg = tmp_path / PACKAGE
    for sub in ("io", "rehydrate", "rehydrate/ops", "conformance"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "io" / "_types.py").write_text("")
    (pkg / "rehydrate" / "_ir.py").write_text(
        "from hlopipe.io import aval_of_type\n"  # public: fine
        "from hlopipe.io._types import TokenType\n"  # a private module
        "from ._quant import q\n"  # its own room: fine
    )
    (pkg / "rehydrate" / "ops" / "c.py").write_text("")
    (pkg / "conformance" / "r.py").write_text(
        "from hlopipe.rehydrate.ops.c import _channel\n"  # a private name
        "import hlopipe.rehydrate._ir as ir\n"  # a private module by `import`
        "def f():\n"
        "    from ..io import _types\n"  # a private module, relative, function-local
    )
    known = {("stages", "rehydrate._spmd"): "gone"}
    found = private_reach_ins(tmp_path, rooms, known)
    expect = [
        "hlopipe/rehydrate/_ir.py:2: `from hlopipe.io._types import TokenType`: rehydrate "
        "reaches for io._types",
        "hlopipe/conformance/r.py:1: `from hlopipe.rehydrate.ops.c import _channel`: "
        "conformance reaches for rehydrate.ops.c._channel",
        "hlopipe/conformance/r.py:2: `import hlopipe.rehydrate._ir as ir`: conformance reaches "
        "for rehydrate._ir",
        "hlopipe/conformance/r.py:4: `from ..io import _types`: conformance reaches for io._types",
        "stages no longer reaches for rehydrate._spmd",
    ]
    for e in expect:
        assert sum(p.startswith(e) for p in found) == 1, (e, found)
    assert len(found) == len(expect), found


# -- what each room imports from outside hlopipe -----------------------------------------------


def dependencies() -> set[str]:
    """The import names of hlopipe's dependencies (pyproject.toml, with its extras but not the
    test tools)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    specs = list(project["dependencies"])
    for name, extra in project.get("optional-dependencies", {}).items():
        specs += extra if name != "test" else []
    return {re.split(r"[<>=!\[ ;]", s, maxsplit=1)[0].replace("-", "_") for s in specs}


def outside_imports(root: Path, rooms: dict[str, Room]) -> dict[str, dict[str, str]]:
    """room -> {top-level package outside hlopipe and the standard library: first place}."""
    found: dict[str, dict[str, str]] = {name: {} for name in rooms}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        own = room_of(_module_name(path, root)[0], rooms)
        rel = str(path.relative_to(root))
        for node in ast.walk(ast.parse(path.read_text(), rel)):
            if isinstance(node, ast.Import):
                tops = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                tops = [node.module.split(".")[0]]
            else:
                continue
            for top in tops:
                if (
                    own
                    and top not in sys.stdlib_module_names
                    and top not in (PACKAGE, "__future__")
                ):
                    found[own.name].setdefault(top, f"{rel}:{node.lineno}")
    return found


def outside_problems(root: Path, rooms: dict[str, Room], cells: dict[str, str]) -> list[str]:
    """Packages a room imports that its "outside hlopipe" cell does not name, and dependencies
    the cell names that the room does not import."""
    deps, problems = dependencies(), []
    for name, used in outside_imports(root, rooms).items():
        words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", cells.get(name, "")))
        for top, where in sorted(used.items()):
            if top not in words:
                problems.append(f"{where}: {name} imports {top}, which its row does not name")
        for top in sorted((words & deps) - used.keys()):
            problems.append(f"row of {name}: names {top}, which it does not import")
    return problems


def outside_cells(text: str) -> dict[str, str]:
    cells = {}
    for row in _table(text, "## Rooms and what each may import"):
        (path,) = _ticked(row[0])
        cells[_room_name(path)] = row[3]
    return cells


def test_outside_column_names_what_each_room_imports(table) -> None:
    rooms, _ = table
    problems = outside_problems(ROOT, rooms, outside_cells(DOC.read_text()))
    assert not problems, "docs/architecture.md's outside-hlopipe column:\n" + "\n".join(problems)


def test_the_outside_checker_sees_both_ways(tmp_path, table) -> None:
    rooms, _ = table
    (tmp_path / PACKAGE / "schedules").mkdir(parents=True)
    (tmp_path / PACKAGE / "schedules" / "_a.py").write_text("import os\nimport rich.console\n")
    cells = {"schedules": "no JAX; numpy"}
    found = outside_problems(tmp_path, rooms, cells)
    assert found == [
        "hlopipe/schedules/_a.py:2: schedules imports rich, which its row does not name",
        "row of schedules: names numpy, which it does not import",
    ]


# -- cycles ------------------------------------------------------------------------------------


def room_graph(root: Path, rooms: dict[str, Room]) -> dict[str, set[str]]:
    """room -> the rooms its modules import (ground floor left out: it imports nothing)."""
    graph: dict[str, set[str]] = {name: set() for name in rooms}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        own = room_of(_module_name(path, root)[0], rooms)
        for imp in imports_of(path, root) if own else []:
            target = room_of(imp.target, rooms)
            if target is not None and target is not own and not target.ground:
                graph[own.name].add(target.name)
    return graph


def cycles(graph: dict[str, set[str]], order: list[str]) -> set[str]:
    """Every simple cycle, written from its room highest in the table: ``io → rehydrate → io``."""
    found = set()
    rank = {name: i for i, name in enumerate(order)}

    def walk(start: str, node: str, path: list[str]) -> None:
        for nxt in graph[node]:
            if nxt == start:
                found.add(" → ".join([*path, start]))
            elif nxt not in path and rank[nxt] > rank[start]:
                walk(start, nxt, [*path, nxt])

    for start in order:
        walk(start, start, [start])
    return found


def named_cycles(text: str) -> set[str]:
    at = text.find("**Cycles**")
    assert at >= 0, f"{DOC.name}: no **Cycles** paragraph"
    para = text[at:].split("\n\n")[0]
    return set(re.findall(r"`([^`]*→[^`]*)`", para))


def test_the_cycles_are_named(table) -> None:
    rooms, _ = table
    got = cycles(room_graph(ROOT, rooms), list(rooms))
    named = named_cycles(DOC.read_text())
    assert got == named, f"cycles in the imports: {sorted(got)}; the doc names {sorted(named)}"
    for cycle in got:  # each is made by a known exception (the table itself has none)
        assert table_problems(ROOT, rooms) == [], cycle


def test_cycles_are_found() -> None:
    graph = {"a": {"b", "c"}, "b": {"a"}, "c": {"b"}, "d": set()}
    assert cycles(graph, ["a", "b", "c", "d"]) == {"a → b → a", "a → c → b → a"}
