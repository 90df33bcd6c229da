"""The plan file: one JSON object saying how a training run is laid out and what it costs.

``hlopipe plan --json`` prints it and ``hlopipe plan -o plan.json`` writes it; ``hlopipe train
--plan plan.json`` and ``Pipeline.from_plan`` read it. This module is the one reader and writer
(ground floor: it imports the standard library and :mod:`hlopipe.errors` only), so the planner
and the runtime cannot drift apart on its fields.

The object::

    {"format": "hlopipe-plan", "version": 1,
     "program": {"path": "model.hlo", "sha256": "..." | null},
     "cluster": {"device": "h100", "devices": 64, "devices_per_node": 8,
                 "intra_node_gbps": 900.0, "inter_node_gbps": 400.0},
     "global_batch": 512,
     "plan": {"tp": 8, "pp": 4, "dp": 2, "cp": 1, "zero": 1, "recompute": "selective",
              "schedule": "1f1b", "virtual_stages": 1, "microbatch_size": 1,
              "microbatches": 64, "stage_layers": [8, 8, 8, 8],
              "stage_mesh_axes": ["data", "model"], "param_specs": ["*q*=None,model"]},
     "step_time_s": 1.23, "tokens_per_s": ..., "model_flops_per_step": ...,
     "model_flops_per_device_s": ..., "mfu": 0.41, "bubble": 0.05,
     "memory_per_device_bytes": ...,
     "memory": {"params": ..., "grads": ..., "optimizer": ..., "activations": ...,
                "temporary": ..., "allocator": ...},
     "fits": true, "notes": ["..."],
     "alternatives": [{"plan": {...}, "step_time_s": ..., "memory_per_device_bytes": ...,
                       "fits": ...}]}

Example:
  >>> plan = load_plan("plan.json")
  >>> plan.layout.tp, plan.layout.devices_needed
  (8, 64)
"""

from __future__ import annotations

import enum
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hlopipe.errors import PlanFileError

FORMAT = "hlopipe-plan"
VERSION = 1
ZERO_LEVELS = (0, 1, 2, 3)


class Recompute(enum.StrEnum):
    """What a stage's backward recomputes instead of keeping from its forward."""

    NONE = "none"
    # keep the weight matmuls' outputs (no batch dimensions: dots_with_no_batch_dims_saveable),
    # recompute the rest, attention's batched products included (Korthikanti et al. 2022)
    SELECTIVE = "selective"
    FULL = "full"  # keep each layer's input only, recompute the whole layer
    # keep every weight matmul's inputs and outputs, recompute the rest (attention's core, the
    # norms, the activations): Korthikanti et al. 2022's "selective activation recomputation"
    ATTENTION = "attention"


@dataclass(frozen=True)
class Cluster:
    """The devices a plan is for: their kind (a name of ``stages.device_names()``), how many,
    how many share a node, and the bandwidth per device inside a node and across nodes (GB/s,
    one direction)."""

    device: str
    devices: int
    devices_per_node: int
    intra_node_gbps: float
    inter_node_gbps: float


@dataclass(frozen=True)
class Layout:
    """The ``plan`` object: the degrees, policies and cuts of one layout.

    ``global_batch == dp * microbatches * microbatch_size``; each of the ``pp`` ranks holds a
    ``(dp, tp)`` mesh named by ``stage_mesh_axes`` (``cp`` > 1 is priced by the planner and
    refused by the runtime, which does not run context parallelism yet), and its
    ``virtual_stages`` stages share that mesh. ``stage_layers`` counts the repeated layers of
    each of the ``pp * virtual_stages`` stages in order, or is empty (cut at the program's
    markers, or cost-balanced). ``param_specs`` are ``PATTERN=SPEC`` rules in the syntax of
    ``--param-spec``.
    """

    tp: int
    pp: int
    dp: int
    cp: int
    zero: int
    recompute: Recompute
    schedule: str
    virtual_stages: int
    microbatch_size: int
    microbatches: int
    stage_layers: tuple[int, ...] = ()
    stage_mesh_axes: tuple[str, str] = ("data", "model")
    param_specs: tuple[str, ...] = ()

    @property
    def devices_needed(self) -> int:
        """Devices the layout occupies: ``pp * dp * tp * cp`` (virtual stages share their
        rank's devices)."""
        return self.pp * self.dp * self.tp * self.cp

    @property
    def num_stages(self) -> int:
        """Stages the program is cut into: ``pp * virtual_stages``."""
        return self.pp * self.virtual_stages


@dataclass(frozen=True)
class Memory:
    """Bytes per device by kind (the device holding the most)."""

    params: int = 0
    grads: int = 0
    optimizer: int = 0
    activations: int = 0
    temporary: int = 0
    allocator: int = 0

    @property
    def total(self) -> int:
        """The sum of every kind."""
        return (
            self.params
            + self.grads
            + self.optimizer
            + self.activations
            + self.temporary
            + self.allocator
        )


@dataclass(frozen=True)
class Alternative:
    """Another layout the planner weighed, with its predicted step time and memory."""

    layout: Layout
    step_time_s: float
    memory_per_device_bytes: int
    fits: bool


@dataclass(frozen=True)
class PlanFile:
    """A whole plan file. Build it whole; :meth:`to_json` and :meth:`from_json` are inverses."""

    cluster: Cluster
    global_batch: int
    layout: Layout
    program_path: str | None = None
    program_sha256: str | None = None
    step_time_s: float = 0.0
    tokens_per_s: float = 0.0
    model_flops_per_step: float = 0.0
    model_flops_per_device_s: float = 0.0
    mfu: float = 0.0
    bubble: float = 0.0
    memory_per_device_bytes: int = 0
    memory: Memory = field(default_factory=Memory)
    fits: bool = True
    notes: tuple[str, ...] = ()
    alternatives: tuple[Alternative, ...] = ()

    def __post_init__(self) -> None:
        _check_across(self.layout, self.global_batch, self.cluster, "<PlanFile>")

    def to_dict(self) -> dict[str, Any]:
        """The plan file's JSON object as Python values."""
        return {
            "format": FORMAT,
            "version": VERSION,
            "program": {"path": self.program_path, "sha256": self.program_sha256},
            "cluster": {
                "device": self.cluster.device,
                "devices": self.cluster.devices,
                "devices_per_node": self.cluster.devices_per_node,
                "intra_node_gbps": self.cluster.intra_node_gbps,
                "inter_node_gbps": self.cluster.inter_node_gbps,
            },
            "global_batch": self.global_batch,
            "plan": _layout_dict(self.layout),
            "step_time_s": self.step_time_s,
            "tokens_per_s": self.tokens_per_s,
            "model_flops_per_step": self.model_flops_per_step,
            "model_flops_per_device_s": self.model_flops_per_device_s,
            "mfu": self.mfu,
            "bubble": self.bubble,
            "memory_per_device_bytes": self.memory_per_device_bytes,
            "memory": {k: getattr(self.memory, k) for k in _MEMORY_KEYS},
            "fits": self.fits,
            "notes": list(self.notes),
            "alternatives": [
                {
                    "plan": _layout_dict(a.layout),
                    "step_time_s": a.step_time_s,
                    "memory_per_device_bytes": a.memory_per_device_bytes,
                    "fits": a.fits,
                }
                for a in self.alternatives
            ],
        }

    def to_json(self, indent: int | None = 2) -> str:
        """The plan file's text."""
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_json(cls, text: str, source: str = "<plan>") -> PlanFile:
        """Read a plan file's text.

        Args:
          text: the JSON text.
          source: the file's name, for error messages.

        Returns:
          The :class:`PlanFile`.

        Raises:
          PlanFileError: the text is not JSON, or a field is missing, of the wrong type or out
            of range (the error names ``source``, the field and what is allowed).
        """
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            raise PlanFileError(f"{source}: not a JSON plan file ({e})") from e
        return cls.from_dict(obj, source=source)

    @classmethod
    def from_dict(cls, obj: object, source: str = "<plan>") -> PlanFile:
        """Read a plan file's JSON object (see :meth:`from_json`)."""
        r = _Reader(source)
        top = r.mapping(obj, "")
        r.keys(
            top, "", _TOP_KEYS, required=("format", "version", "cluster", "global_batch", "plan")
        )
        if top["format"] != FORMAT:
            raise r.error("format", f"is {top['format']!r}; a plan file says {FORMAT!r}")
        if top["version"] != VERSION:
            raise r.error("version", f"is {top['version']!r}; this hlopipe reads version {VERSION}")
        program = r.mapping(top.get("program", {}), "program")
        r.keys(program, "program", ("path", "sha256"), required=())
        path = r.optional_str(program.get("path"), "program.path")
        sha = r.optional_str(program.get("sha256"), "program.sha256")
        if sha is not None and (
            len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha.lower())
        ):
            raise r.error("program.sha256", f"is {sha!r}; expected 64 hex digits or null")
        c = r.mapping(top["cluster"], "cluster")
        r.keys(c, "cluster", _CLUSTER_KEYS, required=_CLUSTER_KEYS)
        cluster = Cluster(
            device=r.string(c["device"], "cluster.device"),
            devices=r.positive_int(c["devices"], "cluster.devices"),
            devices_per_node=r.positive_int(c["devices_per_node"], "cluster.devices_per_node"),
            intra_node_gbps=r.positive_float(c["intra_node_gbps"], "cluster.intra_node_gbps"),
            inter_node_gbps=r.positive_float(c["inter_node_gbps"], "cluster.inter_node_gbps"),
        )
        mem = r.mapping(top.get("memory", {}), "memory")
        r.keys(mem, "memory", _MEMORY_KEYS, required=())
        memory = Memory(
            **{k: r.nonnegative_int(mem.get(k, 0), f"memory.{k}") for k in _MEMORY_KEYS}
        )
        notes_raw = r.sequence(top.get("notes", []), "notes")
        notes = tuple(r.string(n, f"notes[{i}]") for i, n in enumerate(notes_raw))
        alternatives = []
        for i, a in enumerate(r.sequence(top.get("alternatives", []), "alternatives")):
            where = f"alternatives[{i}]"
            am = r.mapping(a, where)
            # An alternative is kept whole; keys it holds beyond these are ignored.
            for k in ("plan", "step_time_s", "memory_per_device_bytes", "fits"):
                if k not in am:
                    raise r.error(f"{where}.{k}", "is missing")
            alternatives.append(
                Alternative(
                    layout=_read_layout(r, am["plan"], f"{where}.plan"),
                    step_time_s=r.nonnegative_float(am["step_time_s"], f"{where}.step_time_s"),
                    memory_per_device_bytes=r.nonnegative_int(
                        am["memory_per_device_bytes"], f"{where}.memory_per_device_bytes"
                    ),
                    fits=r.boolean(am["fits"], f"{where}.fits"),
                )
            )
        global_batch = r.positive_int(top["global_batch"], "global_batch")
        layout = _read_layout(r, top["plan"], "plan")
        _check_across(layout, global_batch, cluster, source)
        return cls(
            cluster=cluster,
            global_batch=global_batch,
            layout=layout,
            program_path=path,
            program_sha256=sha,
            step_time_s=r.nonnegative_float(top.get("step_time_s", 0.0), "step_time_s"),
            tokens_per_s=r.nonnegative_float(top.get("tokens_per_s", 0.0), "tokens_per_s"),
            model_flops_per_step=r.nonnegative_float(
                top.get("model_flops_per_step", 0.0), "model_flops_per_step"
            ),
            model_flops_per_device_s=r.nonnegative_float(
                top.get("model_flops_per_device_s", 0.0), "model_flops_per_device_s"
            ),
            mfu=r.nonnegative_float(top.get("mfu", 0.0), "mfu"),
            bubble=r.nonnegative_float(top.get("bubble", 0.0), "bubble"),
            memory_per_device_bytes=r.nonnegative_int(
                top.get("memory_per_device_bytes", 0), "memory_per_device_bytes"
            ),
            memory=memory,
            fits=r.boolean(top.get("fits", True), "fits"),
            notes=notes,
            alternatives=tuple(alternatives),
        )

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write the plan file to ``path``."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_json() + "\n")


def load_plan(path: str | os.PathLike[str]) -> PlanFile:
    """Read the plan file at ``path``.

    Raises:
      PlanFileError: the file cannot be read, or a field is malformed (named).
    """
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise PlanFileError(f"cannot read plan file {os.fspath(path)}: {e.strerror}") from e
    return PlanFile.from_json(text, source=os.fspath(path))


_TOP_KEYS = (
    "format",
    "version",
    "program",
    "cluster",
    "global_batch",
    "plan",
    "step_time_s",
    "tokens_per_s",
    "model_flops_per_step",
    "model_flops_per_device_s",
    "mfu",
    "bubble",
    "memory_per_device_bytes",
    "memory",
    "fits",
    "notes",
    "alternatives",
)
_CLUSTER_KEYS = ("device", "devices", "devices_per_node", "intra_node_gbps", "inter_node_gbps")
_MEMORY_KEYS = ("params", "grads", "optimizer", "activations", "temporary", "allocator")
_LAYOUT_KEYS = (
    "tp",
    "pp",
    "dp",
    "cp",
    "zero",
    "recompute",
    "schedule",
    "virtual_stages",
    "microbatch_size",
    "microbatches",
    "stage_layers",
    "stage_mesh_axes",
    "param_specs",
)
_LAYOUT_REQUIRED = _LAYOUT_KEYS[:10]


def _layout_dict(layout: Layout) -> dict[str, Any]:
    return {
        "tp": layout.tp,
        "pp": layout.pp,
        "dp": layout.dp,
        "cp": layout.cp,
        "zero": layout.zero,
        "recompute": layout.recompute.value,
        "schedule": layout.schedule,
        "virtual_stages": layout.virtual_stages,
        "microbatch_size": layout.microbatch_size,
        "microbatches": layout.microbatches,
        "stage_layers": list(layout.stage_layers),
        "stage_mesh_axes": list(layout.stage_mesh_axes),
        "param_specs": list(layout.param_specs),
    }


class _Reader:
    """Typed reads of JSON values, each error naming the file and the field."""

    def __init__(self, source: str) -> None:
        self.source = source

    def error(self, where: str, what: str) -> PlanFileError:
        return PlanFileError(f"{self.source}: field {where or '(top level)'} {what}")

    def mapping(self, v: object, where: str) -> Mapping[str, Any]:
        if not isinstance(v, dict):
            raise self.error(where, f"is {_kind(v)}; expected an object")
        return v

    def sequence(self, v: object, where: str) -> Sequence[Any]:
        if not isinstance(v, list):
            raise self.error(where, f"is {_kind(v)}; expected a list")
        return v

    def keys(
        self, m: Mapping[str, Any], where: str, allowed: Sequence[str], required: Sequence[str]
    ) -> None:
        prefix = f"{where}." if where else ""
        for k in m:
            if k not in allowed:
                raise self.error(
                    f"{prefix}{k}", f"is not known; the fields are {', '.join(allowed)}"
                )
        for k in required:
            if k not in m:
                raise self.error(f"{prefix}{k}", "is missing")

    def string(self, v: object, where: str) -> str:
        if not isinstance(v, str) or not v:
            raise self.error(where, f"is {_kind(v)}; expected a non-empty string")
        return v

    def optional_str(self, v: object, where: str) -> str | None:
        return None if v is None else self.string(v, where)

    def boolean(self, v: object, where: str) -> bool:
        if not isinstance(v, bool):
            raise self.error(where, f"is {_kind(v)}; expected true or false")
        return v

    def positive_int(self, v: object, where: str) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise self.error(where, f"is {_kind(v)}; expected an integer >= 1")
        return v

    def nonnegative_int(self, v: object, where: str) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise self.error(where, f"is {_kind(v)}; expected an integer >= 0")
        return v

    def positive_float(self, v: object, where: str) -> float:
        if isinstance(v, bool) or not isinstance(v, int | float) or not v > 0:
            raise self.error(where, f"is {_kind(v)}; expected a number > 0")
        return float(v)

    def nonnegative_float(self, v: object, where: str) -> float:
        if isinstance(v, bool) or not isinstance(v, int | float) or not v >= 0:
            raise self.error(where, f"is {_kind(v)}; expected a number >= 0")
        return float(v)


def _kind(v: object) -> str:
    text = json.dumps(v) if isinstance(v, str | int | float | bool | type(None)) else None
    if text is not None and len(text) <= 40:
        return text
    if isinstance(v, dict):
        return "an object"
    if isinstance(v, list):
        return "a list"
    return type(v).__name__


def _read_layout(r: _Reader, v: object, where: str) -> Layout:
    m = r.mapping(v, where)
    r.keys(m, where, _LAYOUT_KEYS, required=_LAYOUT_REQUIRED)
    zero = m["zero"]
    if isinstance(zero, bool) or zero not in ZERO_LEVELS:
        raise r.error(f"{where}.zero", f"is {_kind(zero)}; expected 0, 1, 2 or 3")
    try:
        recompute = Recompute(m["recompute"])
    except ValueError:
        raise r.error(
            f"{where}.recompute",
            f"is {_kind(m['recompute'])}; expected one of {', '.join(x.value for x in Recompute)}",
        ) from None
    pp = r.positive_int(m["pp"], f"{where}.pp")
    virtual = r.positive_int(m["virtual_stages"], f"{where}.virtual_stages")
    layers = r.sequence(m.get("stage_layers", []), f"{where}.stage_layers")
    stage_layers = tuple(
        r.positive_int(x, f"{where}.stage_layers[{i}]") for i, x in enumerate(layers)
    )
    if stage_layers and len(stage_layers) != pp * virtual:
        raise r.error(
            f"{where}.stage_layers",
            f"has {len(stage_layers)} entries; expected pp * virtual_stages = {pp * virtual} "
            "(or [] to cut at markers or by cost)",
        )
    axes_raw = r.sequence(m.get("stage_mesh_axes", ["data", "model"]), f"{where}.stage_mesh_axes")
    axes = tuple(r.string(a, f"{where}.stage_mesh_axes[{i}]") for i, a in enumerate(axes_raw))
    if len(axes) != 2 or axes[0] == axes[1]:
        raise r.error(
            f"{where}.stage_mesh_axes",
            f"is {list(axes)}; expected two different axis names (data, then tensor)",
        )
    specs_raw = r.sequence(m.get("param_specs", []), f"{where}.param_specs")
    specs = tuple(r.string(s, f"{where}.param_specs[{i}]") for i, s in enumerate(specs_raw))
    for i, s in enumerate(specs):
        if "=" not in s or not s.split("=", 1)[0]:
            raise r.error(f"{where}.param_specs[{i}]", f"is {s!r}; expected PATTERN=SPEC")
    return Layout(
        tp=r.positive_int(m["tp"], f"{where}.tp"),
        pp=pp,
        dp=r.positive_int(m["dp"], f"{where}.dp"),
        cp=r.positive_int(m["cp"], f"{where}.cp"),
        zero=zero,
        recompute=recompute,
        schedule=r.string(m["schedule"], f"{where}.schedule"),
        virtual_stages=virtual,
        microbatch_size=r.positive_int(m["microbatch_size"], f"{where}.microbatch_size"),
        microbatches=r.positive_int(m["microbatches"], f"{where}.microbatches"),
        stage_layers=stage_layers,
        stage_mesh_axes=(axes[0], axes[1]),
        param_specs=specs,
    )


def _check_across(layout: Layout, global_batch: int, cluster: Cluster, source: str) -> None:
    """The checks that read several fields."""
    if not isinstance(layout.recompute, Recompute):
        raise PlanFileError(f"{source}: field plan.recompute is not a Recompute")
    if layout.zero not in ZERO_LEVELS:
        raise PlanFileError(f"{source}: field plan.zero is {layout.zero}; expected 0, 1, 2 or 3")
    batch = layout.dp * layout.microbatches * layout.microbatch_size
    if batch != global_batch:
        raise PlanFileError(
            f"{source}: field global_batch is {global_batch}, but plan.dp * "
            f"plan.microbatches * plan.microbatch_size = {layout.dp} * {layout.microbatches} "
            f"* {layout.microbatch_size} = {batch}; they must be equal"
        )
    if layout.devices_needed > cluster.devices:
        raise PlanFileError(
            f"{source}: field plan needs pp * dp * tp * cp = {layout.devices_needed} devices "
            f"but cluster.devices is {cluster.devices}"
        )
