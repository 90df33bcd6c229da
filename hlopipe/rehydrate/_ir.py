"""A light Python copy of a StableHLO module, made once per program.

Walking MLIR's Python bindings costs far more per op than a Python list, and some of their
attribute casts abort the process on element types they do not know (complex dense elements),
so the module is read once into these plain records: values become integers, attributes
become Python values (ints, tuples, numpy arrays, small dataclasses for the structured
StableHLO attributes), and types become ``jax.ShapeDtypeStruct``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as shlo

from hlopipe.errors import LoadError, UnsupportedOpError
from hlopipe.io import TokenType, aval_of_type, dtype_of, parse_tensor_type

_COMMUTATIVE = {
    "stablehlo.add",
    "stablehlo.multiply",
    "stablehlo.maximum",
    "stablehlo.minimum",
    "stablehlo.and",
    "stablehlo.or",
    "stablehlo.xor",
}


@dataclass(slots=True)
class Op:
    name: str
    operands: tuple[int, ...]
    results: tuple[int, ...]
    attrs: dict[str, Any]
    regions: tuple[Block, ...]
    loc: str
    result_avals: tuple[Any, ...]
    operand_avals: tuple[Any, ...]
    # values defined outside this op that its regions use (for liveness)
    captures: tuple[int, ...] = ()
    # analyses rules make once per op (e.g. a loop's control state)
    cache: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Block:
    args: tuple[int, ...]
    arg_avals: tuple[Any, ...]
    ops: list[Op]
    returns: tuple[int, ...]
    terminator: str
    # values to drop from the environment after op i (their last use)
    drop_after: list[tuple[int, ...]] = field(default_factory=list)
    _binary: Any = None
    # this block as the interpreter runs it (rehydrate/_safe_grad.py), made on first run
    prepared: Block | None = None

    def binary_op(self) -> str | None:
        if self._binary is None:
            self._binary = _binary_op(self) or ""
        return self._binary or None

    def only_compare(self) -> Op | None:
        """The block's one op when it is a ``stablehlo.compare`` whose result the block
        returns (a sort's or a select's plain comparator); None otherwise."""
        if len(self.ops) != 1 or len(self.returns) != 1:
            return None
        op = self.ops[0]
        return op if op.name == "stablehlo.compare" and op.results == self.returns else None


@dataclass(slots=True)
class Func:
    name: str
    block: Block
    loc: str
    arg_attrs: list[dict[str, Any]]
    result_attrs: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class DotDims:
    lhs_batch: tuple[int, ...]
    rhs_batch: tuple[int, ...]
    lhs_contract: tuple[int, ...]
    rhs_contract: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class IndexDims:
    """The dimension numbers of a gather or a scatter, which name the same six things (the
    spec's gather name / scatter name):

    * ``window_dims`` (``offset_dims`` / ``update_window_dims``): the dimensions of the result
      (of the updates) that run over a window of the operand;
    * ``collapsed_dims`` (``collapsed_slice_dims`` / ``inserted_window_dims``): the operand's
      dimensions of window size 1 that the window leaves out;
    * ``operand_batching_dims`` (the same / ``input_batching_dims``) and
      ``indices_batching_dims`` (``start_indices_batching_dims`` /
      ``scatter_indices_batching_dims``): batch dimensions the operand and the indices share;
    * ``index_map`` (``start_index_map`` / ``scatter_dims_to_operand_dims``): the operand
      dimension each entry of an index vector indexes;
    * ``index_vector_dim``: the dimension of the indices that holds the index vectors.
    """

    window_dims: tuple[int, ...]
    collapsed_dims: tuple[int, ...]
    operand_batching_dims: tuple[int, ...]
    indices_batching_dims: tuple[int, ...]
    index_map: tuple[int, ...]
    index_vector_dim: int


@dataclass(frozen=True, slots=True)
class ConvDims:
    input_batch: int
    input_feature: int
    input_spatial: tuple[int, ...]
    kernel_in: int
    kernel_out: int
    kernel_spatial: tuple[int, ...]
    output_batch: int
    output_feature: int
    output_spatial: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class OpaqueAttr:
    """An attribute hlopipe does not interpret; ``text`` is its MLIR form."""

    text: str


# Physical layouts XLA's HLO -> StableHLO conversion attaches to ops (``result_layout``,
# ``xla_shape``): no meaning for values, so rules never see them -- except a layout bitcast's,
# whose logical effect (reshape or transpose) depends on its operand and result layouts.
_LAYOUT_ATTRS = frozenset({"result_layout", "xla_shape"})
_LAYOUT_OPS = frozenset({"mhlo.bitcast"})


class ModuleIR:
    """Every function of a module, read into Python records."""

    def __init__(self, module: ir.Module, context: ir.Context, source: str = "<module>"):
        self.source = source
        self.funcs: dict[str, Func] = {}
        self._ids: dict[Any, int] = {}
        self._ctx = context
        from hlopipe.rehydrate._interpreter import gc_paused

        with context, gc_paused():
            for top in module.body.operations:
                op = top.operation
                if op.name == "func.func":
                    try:
                        f = self._func(op)
                    except UnsupportedOpError as e:
                        f = self._unreadable(op, e)
                    self.funcs[f.name] = f
        self._ids = {}

    # ---- values ---------------------------------------------------------------------------
    def _vid(self, value: Any) -> int:
        try:
            return self._ids[value]
        except KeyError:
            i = self._ids[value] = len(self._ids)
            return i

    # ---- functions and blocks -------------------------------------------------------------
    def _unreadable(self, op: Any, error: UnsupportedOpError) -> Func:
        """A function hlopipe cannot read (e.g. bounded dynamic shapes) as one
        ``hlopipe.unreadable`` op carrying why: refused when the entry reaches it (the scan
        before running raises), so dead code does not make a whole program unrunnable."""
        name = ir.StringAttr(op.attributes["sym_name"]).value
        args: tuple[int, ...] = ()
        avals: tuple[Any, ...] = ()
        blocks = list(op.regions[0].blocks)
        if blocks:
            args = tuple(self._vid(a) for a in blocks[0].arguments)
            avals = tuple(OpaqueAttr(str(a.type)) for a in blocks[0].arguments)
        loc = self._loc(op)
        stub = Op(
            "hlopipe.unreadable", (), (), {"message": f"in @{name}: {error}"}, (), loc, (), ()
        )
        block = Block(args, avals, [stub], (), "func.return")
        _liveness(block)
        return Func(name, block, loc, [{} for _ in args], [])

    def _func(self, op: Any) -> Func:
        name = ir.StringAttr(op.attributes["sym_name"]).value
        region = op.regions[0]
        blocks = list(region.blocks)
        if len(blocks) != 1:
            raise UnsupportedOpError(
                f"function @{name} has {len(blocks)} blocks; only single-block functions "
                "(structured control flow) are supported"
            )
        block = self._block(blocks[0])
        arg_attrs = _dict_array(op, "arg_attrs", len(block.args))
        ftype = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
        result_attrs = _dict_array(op, "res_attrs", len(ftype.results))
        return Func(name, block, self._loc(op), arg_attrs, result_attrs)

    def _block(self, block: Any) -> Block:
        args = tuple(self._vid(a) for a in block.arguments)
        arg_avals = tuple(_aval(a.type) for a in block.arguments)
        ops: list[Op] = []
        returns: tuple[int, ...] = ()
        terminator = ""
        for mop in block.operations:
            mop = mop.operation
            name = mop.name
            if name in ("func.return", "stablehlo.return", "mhlo.return", "sdy.return"):
                returns = tuple(self._vid(v) for v in mop.operands)
                terminator = name
                continue
            ops.append(self._op(mop))
        b = Block(args, arg_avals, ops, returns, terminator)
        _liveness(b)
        return b

    def _op(self, mop: Any) -> Op:
        name = mop.name
        operands = tuple(self._vid(v) for v in mop.operands)
        results = tuple(self._vid(r) for r in mop.results)
        try:
            result_avals = tuple(_aval(r.type) for r in mop.results)
            operand_avals = tuple(_aval(v.type) for v in mop.operands)
        except UnsupportedOpError as e:
            # e.g. bounded dynamic shapes (set_dimension_size, dynamic_reshape)
            raise UnsupportedOpError(f"{name} at {self._loc(mop)}: {e}") from e
        regions = []
        for region in mop.regions:
            blocks = list(region.blocks)
            if len(blocks) > 1:
                raise UnsupportedOpError(
                    f"{name} at {self._loc(mop)} has a region with {len(blocks)} blocks; only "
                    "single-block regions are supported"
                )
            if blocks:
                regions.append(self._block(blocks[0]))
        attrs = self._attrs(mop, name, result_avals, operand_avals)
        op = Op(
            name,
            operands,
            results,
            attrs,
            tuple(regions),
            self._loc(mop),
            result_avals,
            operand_avals,
        )
        if regions:
            op.captures = tuple(sorted(_free_values(regions)))
        return op

    def _loc(self, mop: Any) -> str:
        text = str(mop.location)
        m = re.search(r'"([^"]*)":(\d+):(\d+)', text)
        if m:
            file = m.group(1)
            if file in ("-", "", "<stdin>"):
                file = self.source
            return f"{file}:{m.group(2)}"
        m = re.match(r'loc\("([^"]*)"', text)
        if m:
            return f"{self.source} ({m.group(1)})"
        return self.source

    # ---- attributes -----------------------------------------------------------------------
    def _attrs(self, mop: Any, name: str, result_avals: tuple, operand_avals: tuple) -> dict:
        risky = any(
            not isinstance(a, TokenType | OpaqueAttr) and np.dtype(a.dtype).kind == "c"
            for a in (*result_avals, *operand_avals)
        ) or not name.startswith(("stablehlo.", "chlo.", "mhlo.", "func.", "sdy."))
        if name == "stablehlo.constant" or risky:
            return attrs_from_text(mop, name, self)
        out: dict[str, Any] = {}
        attributes = mop.attributes
        for i in range(len(attributes)):
            na = attributes[i]
            if na.name in _LAYOUT_ATTRS and name not in _LAYOUT_OPS:
                continue
            out[na.name] = convert_attr(na.attr)
        return out


def _dict_array(op: Any, key: str, n: int) -> list[dict[str, Any]]:
    if key not in op.attributes:
        return [{} for _ in range(n)]
    arr = ir.ArrayAttr(op.attributes[key])
    out = []
    for a in arr:
        d = ir.DictAttr(a)
        out.append({d[i].name: convert_attr(d[i].attr) for i in range(len(d))})
    return out


def _aval(t: Any) -> Any:
    return _aval_of_text(str(t))


# Programs repeat a handful of types thousands of times; parsing each once made reading the
# records 2x faster (benchmarks/rehydrate.py).
@functools.lru_cache(maxsize=8192)
def _aval_of_text(text: str) -> Any:
    if text.startswith("tuple<"):
        return OpaqueAttr(text)
    if text.startswith("!") and text != "!stablehlo.token":
        return OpaqueAttr(text)
    return aval_of_type(text, dynamic=True)


_ENUM = re.compile(r"^#(?:stablehlo|mhlo|chlo)<(\w+)\s+([\w ,]+)>$")


def convert_attr(attr: Any) -> Any:
    """An MLIR attribute -> a Python value (see the module docstring)."""
    if isinstance(attr, ir.BoolAttr):
        return bool(attr.value)
    if isinstance(attr, ir.IntegerAttr):
        return int(attr.value)
    if isinstance(attr, ir.FloatAttr):
        return float(attr.value)
    if isinstance(attr, ir.StringAttr):
        return attr.value
    if isinstance(attr, ir.UnitAttr):
        return True
    if isinstance(attr, ir.DenseBoolArrayAttr | ir.DenseI64ArrayAttr | ir.DenseI32ArrayAttr):
        return tuple(attr)
    if isinstance(attr, ir.DenseI8ArrayAttr | ir.DenseI16ArrayAttr):
        return tuple(attr)
    if isinstance(attr, ir.DenseF32ArrayAttr | ir.DenseF64ArrayAttr):
        return tuple(attr)
    if isinstance(attr, ir.DenseElementsAttr):
        t = ir.RankedTensorType(attr.type)
        return parse_dense(_dense_body(str(attr)), *parse_tensor_type(str(t)))
    if isinstance(attr, ir.FlatSymbolRefAttr):
        return attr.value
    if isinstance(attr, ir.ArrayAttr):
        return [convert_attr(a) for a in attr]
    if isinstance(attr, ir.DictAttr):
        return {attr[i].name: convert_attr(attr[i].attr) for i in range(len(attr))}
    if isinstance(attr, ir.TypeAttr):
        return str(attr.value)
    text = str(attr)
    for prefix, binding, record, names in _DIMENSION_ATTRS:
        if text.startswith(prefix):
            d = getattr(shlo, binding)(attr)
            return record(*(_int_or_tuple(getattr(d, name)) for name in names))
    m = _ENUM.match(text)
    if m:
        return m.group(2).strip()
    if text.startswith("#stablehlo.channel_handle<"):
        h = shlo.ChannelHandle(attr)
        return {"handle": int(h.handle), "type": int(h.channel_type)}
    return OpaqueAttr(text)


# StableHLO's structured dimension attributes: the text they start with, their binding in
# ``jaxlib.mlir.dialects.stablehlo``, the record they become and the binding's properties in
# the record's field order.
_DIMENSION_ATTRS: tuple[tuple[str, str, Callable[..., Any], tuple[str, ...]], ...] = (
    (
        "#stablehlo.dot<",
        "DotDimensionNumbers",
        DotDims,
        (
            "lhs_batching_dimensions",
            "rhs_batching_dimensions",
            "lhs_contracting_dimensions",
            "rhs_contracting_dimensions",
        ),
    ),
    (
        "#stablehlo.gather<",
        "GatherDimensionNumbers",
        IndexDims,
        (
            "offset_dims",
            "collapsed_slice_dims",
            "operand_batching_dims",
            "start_indices_batching_dims",
            "start_index_map",
            "index_vector_dim",
        ),
    ),
    (
        "#stablehlo.scatter<",
        "ScatterDimensionNumbers",
        IndexDims,
        (
            "update_window_dims",
            "inserted_window_dims",
            "input_batching_dims",
            "scatter_indices_batching_dims",
            "scattered_dims_to_operand_dims",
            "index_vector_dim",
        ),
    ),
    (
        "#stablehlo.conv<",
        "ConvDimensionNumbers",
        ConvDims,
        (
            "input_batch_dimension",
            "input_feature_dimension",
            "input_spatial_dimensions",
            "kernel_input_feature_dimension",
            "kernel_output_feature_dimension",
            "kernel_spatial_dimensions",
            "output_batch_dimension",
            "output_feature_dimension",
            "output_spatial_dimensions",
        ),
    ),
)


def _int_or_tuple(value: Any) -> int | tuple[int, ...]:
    return int(value) if isinstance(value, int) else tuple(value)


# ---- dense elements from text ---------------------------------------------------------------


def _dense_body(text: str) -> str:
    """'dense<[1, 2]> : tensor<2xi32>' -> '[1, 2]'."""
    start = text.index("dense<") + len("dense<")
    depth = 1
    i = start
    in_str = False
    while i < len(text):
        ch = text[i]
        if ch == '"':
            in_str = not in_str
        elif not in_str:
            if ch == "<":
                depth += 1
            elif ch == ">":
                depth -= 1
                if depth == 0:
                    return text[start:i]
        i += 1
    raise LoadError(f"cannot read the dense attribute {text[:80]}")


_TOKEN = re.compile(
    r"\(\s*([^,()]+)\s*,\s*([^,()]+)\s*\)|true|false|[-+]?0x[0-9A-Fa-f]+|"
    r"[-+]?(?:inf|nan)|[-+]?[0-9][0-9.eE+\-]*"
)


def parse_dense(body: str, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """The body of an MLIR ``dense<...>`` literal as a numpy array of ``shape`` and ``dtype``.

    Handles splats, nested lists, the hex-blob form ``"0x..."`` (raw little-endian bytes),
    hex bit patterns of floats (``0x7FC00000``), booleans and complex ``(re, im)`` pairs.
    """
    body = body.strip()
    size = int(np.prod(shape, dtype=np.int64))
    if body.startswith('"0x') or body.startswith('"0X'):
        raw = bytes.fromhex(body[3:-1])
        itemsize = 1 if dtype == np.dtype(bool) else max(dtype.itemsize, 1)
        if dtype.itemsize == 0 or dtype.kind == "V":
            itemsize = 1
        flat = np.frombuffer(raw, dtype=_storage_dtype(dtype, itemsize))
        if dtype == np.dtype(bool):
            flat = flat != 0
        else:
            flat = flat.view(dtype) if flat.dtype != dtype else flat
        if flat.size == 1 and size != 1:
            return np.full(shape, flat[0], dtype=dtype)
        return flat.reshape(shape).copy()
    if "dense_resource" in body or body == "__elided__":
        raise LoadError("the program's constants are elided: load the file that carries them")
    tokens = _TOKEN.findall(body) if "(" in body else None
    if dtype.kind == "c":
        pairs = re.findall(r"\(\s*([^,()]+)\s*,\s*([^,()]+)\s*\)", body)
        re_part = _scalars([p[0] for p in pairs], _real_of(dtype))
        im_part = _scalars([p[1] for p in pairs], _real_of(dtype))
        flat = re_part.astype(dtype) + 1j * im_part.astype(dtype)
        flat = flat.astype(dtype)
    else:
        del tokens
        words = re.findall(
            r"true|false|[-+]?0x[0-9A-Fa-f]+|[-+]?(?:inf|nan)|"
            r"[-+]?[0-9][0-9.eE+\-]*",
            body,
        )
        flat = _scalars(words, dtype)
    if flat.size == 1 and size != 1:
        return np.full(shape, flat[0], dtype=dtype)
    if flat.size != size:
        raise LoadError(f"dense literal has {flat.size} elements, its type {shape} needs {size}")
    return flat.reshape(shape)


def _real_of(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dtype == np.complex64 else np.dtype(np.float64)


def _storage_dtype(dtype: np.dtype, itemsize: int) -> np.dtype:
    if dtype == np.dtype(bool):
        return np.dtype(np.uint8)
    return dtype


def _scalars(words: list[str], dtype: np.dtype) -> np.ndarray:
    if dtype == np.dtype(bool):
        return np.array(
            [w == "true" or (w not in ("false",) and int(w, 0) != 0) for w in words], dtype=bool
        )
    if not is_float(dtype):
        vals = [int(w, 16) if w.lower().startswith(("0x", "-0x", "+0x")) else int(w) for w in words]
        unsigned = jnp_unsigned(dtype)
        return np.array(vals, dtype=np.uint64 if unsigned else np.int64).astype(dtype)
    # floating point: hex words are bit patterns of the element type
    if all(not w.lower().lstrip("+-").startswith("0x") for w in words):
        return np.array([float(w) for w in words], dtype=np.float64).astype(dtype)
    out = np.empty(len(words), dtype=dtype)
    bits_dtype = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[dtype.itemsize]
    for i, w in enumerate(words):
        if w.lower().lstrip("+-").startswith("0x"):
            out[i] = np.array(int(w, 16), dtype=bits_dtype).view(dtype)
        else:
            out[i] = np.array(float(w)).astype(dtype)
    return out


def jnp_unsigned(dtype: np.dtype) -> bool:
    import jax.numpy as jnp

    return bool(jnp.issubdtype(dtype, jnp.unsignedinteger))


def is_float(dtype: np.dtype) -> bool:
    """Whether ``dtype`` is a floating type (ml_dtypes' narrow floats included)."""
    import jax.numpy as jnp

    return bool(jnp.issubdtype(dtype, jnp.floating))


_ATTR_ITEM = re.compile(r"([\w.$]+)\s*=\s*")


def attrs_from_text(mop: Any, name: str, mir: ModuleIR) -> dict[str, Any]:
    """Attributes read from the op's generic text: for constants (any element type) and for
    ops whose attributes the bindings cannot cast."""
    text = mop.get_asm(
        print_generic_op_form=True, large_elements_limit=None, enable_debug_info=False
    )
    if len(mop.regions):
        text = text.split("({", 1)[0]
    out: dict[str, Any] = {}
    # properties <{...}> and attribute dict {...}
    # (the attribute dict follows the operands or, when there are properties, their "}>")
    for m in re.finditer(r"<\{(.*?)\}>|(?:(?<=\))|(?<=\}>))\s*\{(.*)\}\s*:", text, re.S):
        chunk = m.group(1) if m.group(1) is not None else m.group(2)
        for key, val in _split_attr_dict(chunk):
            if key in _LAYOUT_ATTRS and name not in _LAYOUT_OPS:
                continue
            if val.startswith("dense<"):
                tm = re.search(r">\s*:\s*(tensor<.*>)\s*$", val, re.S)
                if tm is None:
                    raise LoadError(f"cannot read attribute {key} of {name}")
                shape, dtype = parse_tensor_type(tm.group(1))
                out[key] = parse_dense(_dense_body(val), shape, dtype)
            else:
                try:
                    out[key] = convert_attr(ir.Attribute.parse(val))
                except ir.MLIRError:  # a dialect's attribute this context does not know
                    out[key] = OpaqueAttr(val)
    return out


def _split_attr_dict(chunk: str) -> list[tuple[str, str]]:
    items, depth, start, in_str = [], 0, 0, False
    for i, ch in enumerate(chunk):
        if ch == '"' and (i == 0 or chunk[i - 1] != "\\"):
            in_str = not in_str
        elif not in_str:
            if ch in "<([{":
                depth += 1
            elif ch in ">)]}" and not (ch == ">" and i and chunk[i - 1] == "-"):  # not `->`
                depth -= 1
            elif ch == "," and depth == 0:
                items.append(chunk[start:i])
                start = i + 1
    items.append(chunk[start:])
    out = []
    for item in items:
        item = item.strip()
        if not item:
            continue
        m = _ATTR_ITEM.match(item)
        if m:
            out.append((m.group(1), item[m.end() :].strip()))
        else:
            out.append((item, "unit"))
    return out


# ---- analyses ------------------------------------------------------------------------------


def _free_values(blocks: list[Block]) -> set[int]:
    """Values used inside these blocks (recursively) but defined outside them."""
    used: set[int] = set()
    defined: set[int] = set()
    for b in blocks:
        defined.update(b.args)
        for op in b.ops:
            used.update(op.operands)
            used.update(op.captures)
            defined.update(op.results)
        used.update(b.returns)
    return used - defined


def _liveness(block: Block) -> None:
    last: dict[int, int] = {}
    for i, op in enumerate(block.ops):
        for v in op.operands:
            last[v] = i
        for v in op.captures:
            last[v] = i
    keep = set(block.returns)
    drops: list[list[int]] = [[] for _ in block.ops]
    for v, i in last.items():
        if v not in keep:
            drops[i].append(v)
    # results never used are dropped right away
    for i, op in enumerate(block.ops):
        for r in op.results:
            if r not in last and r not in keep:
                drops[i].append(r)
    block.drop_after = [tuple(d) for d in drops]


def _binary_op(block: Block) -> str | None:
    if len(block.ops) != 1 or len(block.args) != 2 or len(block.returns) != 1:
        return None
    op = block.ops[0]
    if op.results != block.returns or len(op.operands) != 2:
        return None
    if op.operands == block.args:
        return op.name
    if op.operands == block.args[::-1] and op.name in _COMMUTATIVE:
        return op.name
    return None


__all__ = [
    "Block",
    "ConvDims",
    "DotDims",
    "Func",
    "IndexDims",
    "ModuleIR",
    "Op",
    "OpaqueAttr",
    "convert_attr",
    "dtype_of",
    "parse_dense",
]
