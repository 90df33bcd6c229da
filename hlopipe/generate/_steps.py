"""One step of one group (a decode step, or a prefill) as an instruction list over registers.

A session keeps, per group, one flat list of values (its *registers*): the placed parameters,
the state arguments, the feedback arguments, the step's input (the position, or the prompt) on
each stage that reads it, and the values a stage hands to later stages. Everything that does
not change from one step to the next is decided once, when the program is built: which
register each stage's executable reads (one ``operator.itemgetter``), where each result goes,
which values move between stages (the state never does; a move whose value already lies as its
reader takes it is dropped) and how many bytes a step moves, by kind. A step is then
``regs[outs] = fn(*regs[ins])`` per instruction, all asynchronous dispatches; nothing waits on
a device and nothing is read back (the docs' "the driver").

Where a feedback value lies changes: ``start`` puts the first token on the stage that reads
it, a step leaves the next one on the stage that made it, a prefill on its own last stage. A
program is built for each such :class:`Home` of the feedback (at most three per generator) and
kept.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from hlopipe.generate._placement import CompiledStage, StagePlacement, input_sharding, nbytes
from hlopipe.generate._plan import InputKind, StagePlan

if TYPE_CHECKING:
    from hlopipe.stages import Stage


class Home(NamedTuple):
    """Where a register's value lies: its stage and its sharding (``None``: not known here,
    a stage another process computes)."""

    stage: int
    sharding: Any


class Layout(NamedTuple):
    """The registers every program of a generator shares: each state argument's and each
    feedback argument's, first in every group's register list, then the sampling parameters'
    (the fields of ``_sampling.Sampling``, for a step returning logits; else none)."""

    state: dict[int, int]
    feedback: dict[int, int]
    sampling: tuple[int, ...] = ()


class PlannedStages(Protocol):
    """What a step program is built from, the decode step's (``Generator``) or its prefill's:
    per stage its :class:`StagePlan`, its staged function (``jaxpr.in_avals``, ``outputs``,
    ``fn``) and its executable (``None``: a stage another process computes)."""

    @property
    def plans(self) -> Sequence[StagePlan]: ...

    @property
    def stages(self) -> Sequence[Stage]: ...

    @property
    def compiled(self) -> Sequence[CompiledStage | None]: ...


class Registers:
    """A generator's register template: the registers of ``layout`` first (empty), then each
    step program's placed parameters, appended (:meth:`add_params`) as the program is built
    (the decode step's, its prefill's); a session copies :attr:`template` for each group."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        n = len(layout.state) + len(layout.feedback) + len(layout.sampling)
        self._template: list[Any] = [None] * n

    @property
    def template(self) -> list[Any]:
        """A new list of the registers' first values (a group's own)."""
        return list(self._template)

    @property
    def size(self) -> int:
        """How many registers are taken: a program's own start from there."""
        return len(self._template)

    def add_params(
        self, plans: Sequence[StagePlan], placed: Sequence[dict[int, Any]]
    ) -> dict[tuple[int, int], int]:
        """Registers for each stage's placed parameters (``placed[stage]``: ``{argument:
        array}``), appended: ``{(stage, argument): register}``."""
        slots: dict[tuple[int, int], int] = {}
        for p in plans:
            for k, a in p.inputs:
                if k is InputKind.PARAM:
                    slots[(p.stage, a)] = len(self._template)
                    self._template.append(placed[p.stage].get(a))
        return slots


class StatePlace(NamedTuple):
    """What ``Generator.start`` puts for a state argument ``arg``: its ``register``, the
    ``sharding`` its stage takes (``None``: a stage of another process) and its ``zeros``
    (the default state)."""

    arg: int
    register: int
    sharding: Any
    zeros: Any


class FeedbackPlace(NamedTuple):
    """The stage ``reader`` reading a feedback argument first, and the ``sharding`` it takes."""

    reader: int
    sharding: Any


class Sampler(NamedTuple):
    """A step returning logits: the program ``output`` they are, sampled by ``compiled(stage)``
    (``_sampling.sample`` for that stage's devices) on the stage making them, from them, the
    step's ``position`` (its aval: the sampler reads it like a stage) and the sampling
    ``registers``; the token it makes is the feedback of ``output`` (its log-probabilities,
    its second result, stay on that stage)."""

    output: int
    registers: tuple[int, ...]
    position: Any
    compiled: Callable[[int], Callable[..., Any]]


class StepBytes(NamedTuple):
    """Bytes one step moves between stages, by kind (counted alike in every process)."""

    activations: int
    feedback: int
    state: int


# One instruction: what to call; its argument registers gathered in one C call; where its
# results go; the registers free after it (activations whose last reader it is).
_Instr = tuple[Callable[..., Any], Callable[[list[Any]], tuple[Any, ...]], tuple[int, ...],
               tuple[int, ...]]  # fmt: skip


def _gather(slots: Sequence[int]) -> Callable[[list[Any]], tuple[Any, ...]]:
    """``regs -> tuple(regs[k] for k in slots)`` in one C call (``itemgetter`` of one item
    returns the item itself, not a tuple)."""
    if len(slots) == 1:
        k = slots[0]
        return lambda regs: (regs[k],)
    if not slots:
        return lambda regs: ()
    return operator.itemgetter(*slots)


class StepProgram:
    """A step of one group: every stage's executable in order, each with the moves of its
    inputs just before it (where its reader needs them: between processes, collectives every
    process issues in this one order).

    Attributes:
      inputs: ``(stage, register, sharding)`` for each stage reading the step's input.
      input_args: the program's argument each of ``inputs`` takes (``None``: the sampler's
        position).
      sampler_inputs: the registers of ``inputs`` the sampler reads (the position its key is
        folded with; a prefill's other inputs are its prompt).
      logprobs: the register of the sampled token's log-probabilities after the step
        (``_sampling.token_logprobs``; ``None``: a step returning tokens).
      feedback_out: ``{feedback register: the register of the new value}``, copied when the
        step ends (a stage later in the step must still read this step's value).
      feedback_home: where each feedback argument lies after the step.
      bytes: what one step moves between stages, by kind.
      size: how many registers it uses (its own come after the layout's).
      moved: the registers a move between or within stages reads (a value there must be a
        placed array; every other input register is read by an executable or a jitted
        function alone, which takes a host array as well and transfers it with its call).
    """

    def __init__(
        self,
        instrs: list[_Instr],
        inputs: list[tuple[int, int, Any]],
        feedback_out: dict[int, int],
        feedback_home: dict[int, Home],
        step_bytes: StepBytes,
        size: int,
        sampler_inputs: frozenset[int] = frozenset(),
        logprobs: int | None = None,
        input_args: tuple[Any, ...] = (),
        moved: frozenset[int] = frozenset(),
    ) -> None:
        self._instrs = instrs
        self.moved = moved
        self.inputs = inputs
        self.input_args = input_args
        self.sampler_inputs = sampler_inputs
        self.logprobs = logprobs
        self._copies = tuple(feedback_out.items())
        self.feedback_home = feedback_home
        self.bytes = step_bytes
        self.size = size
        self.successor: StepProgram | None = None  # the next step's (the generator sets it)

    def run(self, regs: list[Any]) -> None:
        """Issue the step on ``regs`` (its inputs already in their registers)."""
        for fn, get, outs, frees in self._instrs:
            got = fn(*get(regs))
            for k, v in zip(outs, got):  # noqa: B905 (the executable's outputs, by build)
                regs[k] = v
            for k in frees:
                regs[k] = None
        for dst, src in self._copies:
            regs[dst] = regs[src]
        for _, src in self._copies:
            regs[src] = None


def build(
    step: PlannedStages,
    sp: StagePlacement,
    layout: Layout,
    feedback_home: dict[int, Home],
    feedback_of_output: dict[int, tuple[int, ...]],
    param_slots: dict[tuple[int, int], int],
    first_free: int,
    sampler: Sampler | None = None,
) -> StepProgram:
    """The step program of ``step``'s stages (a decode step's, or a prefill's).

    Args:
      step: each stage's plan, its staged function and its executable.
      sp: the placement (moves between stages, and which process holds each stage).
      layout: the shared registers (state and feedback).
      feedback_home: where each feedback argument lies before the step.
      feedback_of_output: ``{program output: feedback arguments}``, the outputs fed back.
      param_slots: ``{(stage, parameter argument): register}`` of this program.
      first_free: the first register no one holds: this program's inputs and activations
        take the registers from there on.
      sampler: for a step returning logits, how its token is sampled from them.

    Returns:
      the :class:`StepProgram`.
    """
    plans, stages, compiled = step.plans, step.stages, step.compiled
    free = first_free  # the next unused register
    instrs: list[_Instr] = []
    inputs: list[tuple[int, int, Any]] = []
    input_args: list[Any] = []  # the argument each of ``inputs`` takes
    sampler_inputs: set[int] = set()
    logprobs: int | None = None  # the register of the sampled token's log-probabilities
    fb_new: dict[int, int] = {}
    fb_after = dict(feedback_home)
    moved = dict.fromkeys(StepBytes._fields, 0)
    move_reads: set[int] = set()  # the registers the moves read
    feedback_regs = set(layout.feedback.values())
    last_use: dict[int, int] = {}  # a temporary register -> the instruction reading it last
    made: dict[tuple[int, int], int] = {}  # (stage, output) -> its register
    for p, st in zip(plans, stages, strict=True):
        s, comp = p.stage, compiled[p.stage]
        reads: list[int] = []
        temps: list[int] = []
        sources: dict[int, list[tuple[int, int, Any, Any, Any]]] = {}  # stage -> what it sends
        for i, ((kind, key), aval) in enumerate(zip(p.inputs, st.jaxpr.in_avals, strict=True)):
            if kind is InputKind.PARAM:
                reads.append(param_slots[(s, key)])
                continue
            if (
                kind is InputKind.STATE
            ):  # on its stage, in the layout its executable takes and gives
                reads.append(layout.state[key])
                continue
            want = comp.in_shardings[i] if comp is not None else input_sharding(sp, s, kind, aval)
            if kind is InputKind.INPUT:
                inputs.append((s, free, want))
                input_args.append(key)
                reads.append(free)
                free += 1
                continue
            if kind is InputKind.RECV:
                src, what = made[key], p.recv_kind(key)
                home = Home(key[0], _out_sharding(sp, stages, compiled, key))
                temps.append(src)
            else:
                src, what, home = layout.feedback[key], "feedback", feedback_home[key]
            if home.stage == s and _same(home.sharding, want, aval):
                reads.append(src)  # already where and as the executable takes it
                continue
            if home.stage != s:
                moved[what] += nbytes(aval)
            sources.setdefault(home.stage, []).append((src, free, aval, want, home.sharding))
            temps.append(free)
            reads.append(free)
            free += 1
        for src_stage, group in sources.items():  # one move per sending stage
            regs_in, regs_out, avals, wants, haves = zip(*group, strict=True)
            move = _mover(sp, src_stage, s, avals, wants, haves)
            instrs.append((move, _gather(regs_in), regs_out, ()))
            move_reads.update(regs_in)
            for k in regs_in:  # (a feedback register is not freed: a later stage may read it)
                if k not in feedback_regs:
                    last_use[k] = len(instrs) - 1
        instrs.append(
            (comp.fn if comp is not None else _absent(len(st.outputs)), _gather(reads), (), ())
        )
        for k in temps:
            last_use[k] = max(last_use.get(k, -1), len(instrs) - 1)
        outs: list[int] = []
        logits = None  # the register of the logits this stage makes, to sample from
        for j in range(len(st.outputs)):
            if j in p.state_out:
                outs.append(layout.state[p.state_out[j]])
                continue
            made[(s, j)] = free
            last_use.setdefault(free, len(instrs) - 1)  # read by no one: freed at once
            out = p.program_out.get(j, -1)
            if sampler is not None and out == sampler.output:
                logits = free
            else:
                for fed in feedback_of_output.get(out, ()):
                    fb_new[layout.feedback[fed]] = free
                    fb_after[fed] = Home(s, _out_sharding(sp, stages, compiled, (s, j)))
            outs.append(free)
            free += 1
        fn, get, _, _ = instrs[-1]
        instrs[-1] = (fn, get, tuple(outs), ())
        if sampler is not None and logits is not None:  # the token, sampled on this stage
            # (and its log-probabilities, kept in their register until the next step)
            position, token, logprobs = free, free + 1, free + 2
            free += 3
            inputs.append((s, position, input_sharding(sp, s, InputKind.INPUT, sampler.position)))
            input_args.append(None)
            sampler_inputs.add(position)
            draw = sampler.compiled(s) if comp is not None else _absent(2)
            instrs.append(
                (draw, _gather((logits, position, *sampler.registers)), (token, logprobs), ())
            )
            last_use[logits] = last_use[position] = len(instrs) - 1
            for fed in feedback_of_output.get(sampler.output, ()):
                fb_new[layout.feedback[fed]] = token
                fb_after[fed] = Home(s, sp.replicated(s))
    kept = set(fb_new.values())  # copied into the feedback registers when the step ends
    frees: dict[int, list[int]] = {}
    for k, n in last_use.items():
        if k not in kept:
            frees.setdefault(n, []).append(k)
    instrs = [(f, g, o, tuple(frees.get(n, ()))) for n, (f, g, o, _) in enumerate(instrs)]
    return StepProgram(
        instrs, inputs, fb_new, fb_after, StepBytes(**moved), free, frozenset(sampler_inputs),
        logprobs, tuple(input_args), frozenset(move_reads),
    )  # fmt: skip


def _out_sharding(
    sp: StagePlacement,
    stages: Sequence[Stage],
    compiled: Sequence[CompiledStage | None],
    key: tuple[int, int],
) -> Any:
    """The sharding of output ``key = (stage, output)``: the executable's own where it is
    compiled here, else what the placement pins it to (a stage of another process)."""
    s, j = key
    comp = compiled[s]
    return comp.out_shardings[j] if comp is not None else sp.data(s, stages[s].outputs[j])


def _same(have: Any, want: Any, aval: Any) -> bool:
    return have is not None and want is not None and have.is_equivalent_to(want, len(aval.shape))


def _mover(
    sp: StagePlacement, src: int, dst: int, avals: Any, shardings: Any, sources: Any
) -> Callable:
    """The move of values (laid out as ``sources``) from stage ``src`` to ``shardings`` on
    stage ``dst``, all at once: one batched copy in one process, else the placement's move
    (one collective between two processes, nothing for a bystander).

    In one process, values from one device each to one device each (stages of one device)
    are copied by jaxlib's batched copy, the copy ``device_put`` makes for them without its
    checks, laid out as the reading executable was compiled for; others go through one
    ``device_put``, a value bound for one device put on the device itself (a third of the
    host time of a put to a one-device ``NamedSharding``; the executable takes either)."""
    import jax

    from hlopipe._jax_compat import device_to_device

    if not sp.multi and all(
        h is not None and len(h.device_set) == 1 and len(w.device_set) == 1
        for h, w in zip(sources, shardings, strict=True)
    ):
        return device_to_device([next(iter(w.device_set)) for w in shardings], shardings)
    if not sp.multi:
        where = tuple(next(iter(sh.device_set)) if len(sh.device_set) == 1 else sh
                      for sh in shardings)  # fmt: skip
        return lambda *values: jax.device_put(values, where)
    shardings = tuple(shardings)
    return lambda *values: sp.move_all(values, src, dst, avals, shardings)


def _absent(n: int) -> Callable[..., tuple[None, ...]]:
    """A stage another process computes: no values here."""
    nones = (None,) * n
    return lambda *args: nones
