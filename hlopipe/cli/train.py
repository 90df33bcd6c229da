"""`hlopipe train`: pipeline-train a loss program (over `training` and `runtime`)."""

from __future__ import annotations

import argparse
import contextlib
import math
from typing import Any

from hlopipe.cli._common import (
    CPU_DEVICES,
    PLOT_SUFFIXES,
    Command,
    add_stage_mesh_flags,
    ask_cpu_devices,
    check_output_dir,
    check_output_file,
    did_you_mean,
    load,
    x64_if_needed,
)
from hlopipe.cli._train_run import run_steps


def _add_train(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "file",
        help="an XLA program of a loss: arguments params..., then one microbatch; its first "
        "output a scalar loss, a mean over the batch",
    )
    p.add_argument("--module", help="in a dump folder, the module to pick")
    p.add_argument(
        "--params",
        metavar="NPZ",
        help="initial values of every argument that is not the batch (the parameters and "
        "the frozen constants), arrays in argument order (default: parameters initialised by "
        "role; a program with frozen constants needs this)",
    )
    p.add_argument(
        "--data",
        metavar="PATH",
        help="an .npz of one full batch (arrays in argument order; full batch = microbatches x "
        "the program's batch), used every step; or a dataset: a folder or glob of .npy/.npz "
        "shards whose arrays are samples along axis 0 (matched to the batch arguments by name "
        "or position), or a token file (.bin, a 1-D .npy) cut into windows of --seq-len; "
        "default: one fixed synthetic batch",
    )
    p.add_argument(
        "--batch-args",
        metavar="I,J|I-J|last:N",
        help="which arguments are the (micro)batch, by position from 0: '0' (one), '0,1' "
        "(a program taking x, labels, then parameters), '2-4' (a range, both ends included), "
        "'last:2' (the last two); default: the arguments named outside params/variables/"
        "state/weights, else the trailing integer ones, else the last one",
    )
    p.add_argument("--schedule", help="schedule name (see 'hlopipe schedule'; 1f1b)")
    p.add_argument("--microbatches", type=int, help="microbatches per step (4)")
    p.add_argument(
        "--plan",
        metavar="PLAN.json",
        help="lay the run out as a plan file says (hlopipe plan -o plan.json): stages, each "
        "stage's (dp, tp) mesh, param specs, ZeRO level, recompute, schedule, microbatches; "
        "the flags it sets cannot be given with it",
    )
    add_stage_mesh_flags(p)
    p.add_argument(
        "--zero",
        type=int,
        choices=(0, 1, 2, 3),
        help="ZeRO over each stage mesh's data axis: 1 shards the optimizer state, 2 the "
        "gradients too, 3 the parameters too (FSDP) (0)",
    )
    p.add_argument(
        "--recompute",
        metavar="POLICY[,POLICY...]",
        help="what each stage's backward recomputes: none, selective (matmul outputs kept), "
        "attention (matmul inputs and outputs kept) or full (the stage's input kept); one "
        "policy, or one per stage comma-separated (none)",
    )
    p.add_argument("--virtual-stages", type=int, help="stages per rank (schedule default)")
    p.add_argument(
        "--stages",
        type=int,
        help="stages to cut into when the program has no markers (default: one per device)",
    )
    p.add_argument(
        "--stage-devices",
        type=int,
        help="devices per stage, data parallel (default: the most that the devices allow and "
        "that divide the program's batch)",
    )
    p.add_argument(
        "--cpu-devices", type=int, metavar="N", help=f"on CPU, simulate N devices ({CPU_DEVICES})"
    )
    p.add_argument(
        "--steps",
        type=int,
        help="the run's total training steps; a resumed run continues to it (10)",
    )
    p.add_argument("--epochs", type=int, help="train this many passes over the --data dataset")
    p.add_argument(
        "--seq-len",
        type=int,
        metavar="S",
        help="a token file's window: sample j is tokens[j*S : j*S+S], its labels the same "
        "shifted by one (default: the program's sequence length, which S must equal)",
    )
    p.add_argument(
        "--token-dtype",
        default="uint16",
        choices=("uint16", "uint32", "int32"),
        help="the tokens of a .bin file (uint16, as nanoGPT and Megatron write them)",
    )
    p.add_argument(
        "--no-shuffle",
        action="store_true",
        help="read the dataset in file order (default: each epoch shuffled by --seed)",
    )
    p.add_argument("--eval-data", metavar="PATH", help="a dataset to report an evaluation loss on")
    p.add_argument(
        "--per-example",
        metavar="I,J",
        help="the program's outputs (by position from 0; the loss is 0) that are per example, "
        "their leading axis the batch; the others are statistics over the batch. Needed for "
        "--eval-data when an output besides the loss has the batch's size on its leading "
        "axis: a file's fixed shapes cannot tell",
    )
    p.add_argument(
        "--eval-every", type=int, metavar="N", help="evaluate every N steps (default: at the end)"
    )
    p.add_argument(
        "--log-dir",
        metavar="DIR",
        help="write metrics.jsonl (a JSON object per step, appended on resume) and "
        "TensorBoard event files there",
    )
    p.add_argument("-v", "--verbose", action="count", default=0, help="log more (-vv: debug)")
    p.add_argument("--optimizer", choices=("adam", "adamw", "sgd"), default="adam")
    p.add_argument(
        "--device",
        metavar="NAME",
        help="print each stage's memory on NAME (cpu, a100-40gb, a100-80gb, h100, h200) under "
        "this run's schedule and microbatches before training",
    )
    p.add_argument("--lr", type=float, default=1e-2, help="(peak) learning rate (0.01)")
    p.add_argument(
        "--lr-schedule",
        choices=("constant", "cosine", "linear"),
        default="constant",
        help="the learning rate over the run after warm-up: constant, cosine decay to 0 "
        "(optax.cosine_decay_schedule), linear decay to 0 (optax.linear_schedule) by the "
        "run's last step",
    )
    p.add_argument(
        "--warmup-steps",
        type=int,
        default=0,
        metavar="N",
        help="raise the learning rate linearly from 0 to --lr over the first N steps (0)",
    )
    p.add_argument(
        "--clip-norm",
        type=float,
        metavar="C",
        help="clip the gradients to global norm C before the optimizer "
        "(optax.clip_by_global_norm, summed over every stage)",
    )
    p.add_argument(
        "--log-every",
        type=int,
        default=1,
        metavar="N",
        help="print a step line every N steps and at the last (1); metrics.jsonl keeps every step",
    )
    p.add_argument("--int-high", type=int, default=2, help="synthetic integer data in [0, N) (2)")
    p.add_argument("--seed", type=int, default=0, help="seed of parameters and synthetic data")
    p.add_argument(
        "--check", action="store_true", help="also train on one device and compare the losses"
    )
    p.add_argument(
        "--save", metavar="DIR", help="checkpoint into DIR (at the end, and every --save-every)"
    )
    p.add_argument(
        "--save-every",
        type=int,
        metavar="N",
        help="also checkpoint every N steps, with the data position (into --save, else --resume)",
    )
    p.add_argument("--keep", type=int, default=2, help="checkpoints kept in DIR (2)")
    p.add_argument(
        "--resume",
        metavar="DIR",
        help="continue from the newest checkpoint in DIR, and its data position, to --steps "
        "(saving into DIR unless --save says otherwise)",
    )
    p.add_argument("--plot", metavar="PNG", help="write the measured timeline of the last step")


def _cmd_train(args: argparse.Namespace) -> int:
    """pipeline-train the loss program in a file on the local devices"""

    # 1. everything that can be wrong with the command line, before any compiling.
    _apply_plan(args)
    _check_args(args)
    if args.device is not None:
        from hlopipe.stages import device

        device(args.device)  # an unknown name is refused now, not after the plan
    _setup_logging(args.verbose)
    devices = _join_job(args)
    if args.log_dir:
        _log_to_file(args.log_dir)

    # 2. the plan: roles of the arguments, values, stages and devices; printed by process 0,
    # which speaks for a job's processes (the others' stdout is dropped; errors stay on stderr)
    with _quiet_unless_first():
        return _plan_and_train(args, devices)


@contextlib.contextmanager
def _quiet_unless_first() -> Any:
    import os

    import jax

    if jax.process_index() == 0:
        yield
        return
    with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
        yield


_PLAN_SETS = ("schedule", "microbatches", "virtual_stages", "stage_mesh", "stage_mesh_axes",
              "zero", "recompute", "stage_devices", "stages")  # fmt: skip


def _apply_plan(args: argparse.Namespace) -> None:
    """``--plan``: the layout's choices become the flags' values (none of which may be given
    beside it); without it, the flags' defaults."""
    args.plan_file = None
    if args.plan is None:
        args.schedule = args.schedule or "1f1b"
        args.microbatches = args.microbatches if args.microbatches is not None else 4
        args.zero = args.zero or 0
        return
    from hlopipe.errors import RuntimeConfigError
    from hlopipe.planfile import load_plan

    given = [f"--{k.replace('_', '-')}" for k in _PLAN_SETS if getattr(args, k) is not None]
    if args.param_spec:
        given.append("--param-spec")
    if given:
        raise RuntimeConfigError(
            f"--plan {args.plan} lays out the run; leave out {', '.join(given)} (or edit the "
            "plan file)"
        )
    plan = load_plan(args.plan)
    lay = plan.layout
    args.plan_file = plan
    args.schedule, args.microbatches = lay.schedule, lay.microbatches
    args.virtual_stages = lay.virtual_stages
    args.stage_mesh = f"{lay.dp}x{lay.tp}"
    args.stage_mesh_axes = ",".join(lay.stage_mesh_axes)
    args.param_spec = list(lay.param_specs)
    args.zero, args.recompute = lay.zero, str(lay.recompute)


def _plan_and_train(args: argparse.Namespace, devices: list[Any] | None) -> int:
    import jax

    from hlopipe import training
    from hlopipe.cli._common import param_rules, stage_mesh
    from hlopipe.errors import RuntimeConfigError

    mesh_shape, mesh_axes = stage_mesh(args)
    param_rules(args, mesh_shape, mesh_axes)  # the rules' syntax and axes, before any work
    if mesh_shape is not None:
        group = math.prod(mesh_shape)
        if args.stage_devices is not None and args.stage_devices != group:
            raise RuntimeConfigError(
                f"--stage-devices {args.stage_devices} and --stage-mesh {args.stage_mesh} "
                f"({group} devices) disagree: give one"
            )
        args.stage_devices = group
    if args.plan_file is not None:
        from hlopipe.runtime import check_plan_devices

        check_plan_devices(args.plan_file.layout, devices or jax.local_devices())
    program = load(args.file, args.module)
    with x64_if_needed(program):
        plan = training.plan_training(
            program,
            batch_args=args.batch_args,
            params=args.params,
            data=args.data,
            num_microbatches=args.microbatches,
            int_high=args.int_high,
            seed=args.seed,
            seq_len=args.seq_len,
            token_dtype=args.token_dtype,
        )
        layout = training.plan_stages(
            program,
            plan.microbatch,
            schedule=args.schedule,
            stages=args.stages,
            stage_devices=args.stage_devices,
            virtual_stages=args.virtual_stages,
            num_microbatches=args.microbatches,
            devices=devices,
            stage_layers=args.plan_file.layout.stage_layers if args.plan_file else None,
        )
        _print_plan(args, plan, layout)
        # 3. train, and with --check the same on one device
        return _train(args, plan, layout)


def _check_args(args: argparse.Namespace) -> None:
    from hlopipe.errors import RuntimeConfigError

    flags = ("microbatches", "steps", "stages", "stage_devices", "cpu_devices", "log_every")
    for flag in (*flags, "epochs", "seq_len", "save_every", "keep", "eval_every"):
        value = getattr(args, flag)
        if value is not None and value < 1:
            raise RuntimeConfigError(f"--{flag.replace('_', '-')} must be at least 1, not {value}")
    if args.plot:
        check_output_file(args.plot, "--plot", PLOT_SUFFIXES)
    if args.save:
        check_output_dir(args.save, "--save")
    if args.log_dir:
        check_output_dir(args.log_dir, "--log-dir")
    if args.epochs is not None and args.steps is not None:
        raise RuntimeConfigError("give --steps or --epochs, not both")
    if args.epochs is not None and not args.data:
        raise RuntimeConfigError("--epochs counts passes over a dataset: give it with --data")
    if args.save_every and not (args.save or args.resume):
        raise RuntimeConfigError("--save-every N needs a folder to save into: --save DIR")
    if args.eval_every and not args.eval_data:
        raise RuntimeConfigError("--eval-every N evaluates on --eval-data PATH: give it")
    if args.warmup_steps < 0:
        raise RuntimeConfigError(f"--warmup-steps must be 0 or more, not {args.warmup_steps}")
    if args.clip_norm is not None and not args.clip_norm > 0:
        raise RuntimeConfigError(f"--clip-norm must be above 0, not {args.clip_norm}")
    if args.resume:
        from hlopipe.runtime import latest_checkpoint_step

        if latest_checkpoint_step(args.resume) is None:
            raise RuntimeConfigError(
                f"--resume {args.resume}: no checkpoint there (train with --save DIR first)"
            )
    _check_schedule_name(args.schedule)


def _setup_logging(verbosity: int) -> None:
    """The package's one logger, ``hlopipe``, to this command's stderr: warnings, -v info,
    -vv debug (the handler is replaced on every run, so an in-process caller's stderr is it)."""
    import logging
    import sys

    logger = logging.getLogger("hlopipe")
    level = logging.DEBUG if verbosity > 1 else logging.INFO if verbosity else logging.WARNING
    logger.setLevel(level)
    for old in [h for h in logger.handlers if getattr(h, "hlopipe_cli", False)]:
        logger.removeHandler(old)
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(level)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.hlopipe_cli = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    # this command's handlers are the logger's outputs: a root handler that a library set up
    # (logging.basicConfig) would print every message a second time, at any level
    logger.propagate = False


def _join_job(args: argparse.Namespace) -> list[Any] | None:
    """Under ``hlopipe launch``: join the job and train over every process's devices (their
    list); else ask for the CPU devices and train on this process's (None)."""
    import os

    import jax

    from hlopipe.errors import RuntimeConfigError
    from hlopipe.runtime import distributed

    if not os.environ.get(distributed.ENV_COORDINATOR):
        ask_cpu_devices(args.cpu_devices or CPU_DEVICES)
        return None
    distributed.initialize(cpu_devices=args.cpu_devices)
    if args.check and jax.process_count() > 1:
        raise RuntimeConfigError(
            "--check trains the program on one device of one process; run it without hlopipe launch"
        )
    return list(jax.devices())


def _log_to_file(directory: str) -> None:
    """Every message of the ``hlopipe`` logger, debug included, into
    ``directory/hlopipe.process<i>.log`` (one file per process of a job): what a run did,
    such as the samples each step read, kept whatever ``-v`` the console has."""
    import logging
    import os

    import jax

    logger = logging.getLogger("hlopipe")
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"hlopipe.process{jax.process_index()}.log")
    for old in [h for h in logger.handlers if getattr(h, "hlopipe_file", False)]:
        logger.removeHandler(old)
        old.close()
    handler = logging.FileHandler(path, mode="a")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.setLevel(logging.DEBUG)
    handler.hlopipe_file = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)  # the console handler keeps -v's level


def _check_schedule_name(name: str) -> None:
    from hlopipe import schedules
    from hlopipe.errors import ScheduleError

    try:
        schedules.canonical_name(name)  # the name alone: the ranks are not known yet
    except ScheduleError:
        raise ScheduleError(
            f"--schedule {name!r} is not a schedule{did_you_mean(name, schedules.GENERATORS)}; "
            f"valid names: {', '.join(schedules.GENERATORS)}"
        ) from None


def _print_plan(args: argparse.Namespace, plan: Any, layout: Any) -> None:
    """The plan, one topic a line: each choice with the words that explain it."""
    from hlopipe.errors import render

    flags = COMMAND.flags
    words = plan.describe(flags)
    m, mb = plan.num_microbatches, plan.microbatch
    lines = {
        "program": f"{args.file}: {words.pop('program')}",
        **{k: words.pop(k) for k in ("batch", "frozen") if k in words},
        "stages": render(layout.stage_note, flags),
        "devices": render(layout.device_note, flags),
        "schedule": f"{args.schedule}, {m} microbatches of {mb} = a batch of {m * mb} per "
        "step (full batch = microbatches x the program's batch)",
        **({"bubble": render(layout.bubble_note, flags)} if layout.bubble_note else {}),
        **words,
        **({"reading": _reading(args)} if plan.dataset is not None else {}),
        "optimizer": f"{_optimizer_words(args)}, "
        + (f"{args.epochs} epochs" if args.epochs else f"{args.steps or 10} steps")
        + (f", resuming from {args.resume}" if args.resume else ""),
    }
    layout_words = _layout_words(args, plan)
    if layout_words:
        lines = {
            **dict(list(lines.items())[:4]),
            "layout": layout_words,
            **dict(list(lines.items())[4:]),
        }
    if args.resume:  # the values come from the checkpoint, whatever the plan would start from
        from hlopipe.runtime import latest_checkpoint_step

        step = latest_checkpoint_step(args.resume)
        lines["params"] = (
            f"from the checkpoint of step {step} in {args.resume} (with the optimizer state); "
            f"the run resumes at step {step}"
        )
    for key, text in lines.items():
        print(f"{key:<10}{text}")
    if args.verbose and not args.resume:  # -v: each parameter's initial value and why
        for arg, role in zip(plan.roles.parameters, plan.param_roles, strict=True):
            print(f"{'':<10}  {arg.describe()}: {role}")


def _layout_words(args: argparse.Namespace, plan: Any) -> str:
    """The stage mesh, the parameters' layout, ZeRO and recompute, when any is asked for."""
    from hlopipe.cli._common import param_rules, stage_mesh
    from hlopipe.runtime import specs_from_rules

    shape, axes = stage_mesh(args)
    words = []
    if args.plan_file is not None:
        words.append(f"from {args.plan}")
    if shape is not None:
        names = ", ".join(axes or ("data",))
        words.append(f"each stage on a {'x'.join(map(str, shape))} mesh ({names})")
    rules = param_rules(args, shape, axes)
    if rules:
        roles = plan.roles.parameters
        found = specs_from_rules(rules, [a.label for a in roles], [a.aval.shape for a in roles])
        split = [f"{a.label} {s}" for a, s in zip(roles, found, strict=True) if s is not None]
        words.append(f"{len(split)} parameters laid out by --param-spec ({'; '.join(split)})")
    if args.zero:
        what = {
            1: "optimizer state",
            2: "gradients, optimizer state",
            3: "parameters, gradients, optimizer state",
        }[args.zero]
        words.append(f"ZeRO-{args.zero} (the {what} split over the data axis)")
    if args.recompute:
        words.append(f"recompute {args.recompute}")
    return "; ".join(words)


def _optimizer_words(args: argparse.Namespace) -> str:
    words = f"{args.optimizer}(lr={args.lr:g}"
    if args.lr_schedule != "constant":
        words += f", {args.lr_schedule} decay to 0 by the last step"
    if args.warmup_steps:
        words += f", {args.warmup_steps} warm-up steps"
    words += ")"
    if args.clip_norm is not None:
        words = f"gradients clipped to global norm {args.clip_norm:g}, then " + words
    return words


def make_optimizer(args: argparse.Namespace, total: int) -> Any:
    """The optax optimizer the flags ask for, over a run of ``total`` steps."""
    import optax

    lr: Any = args.lr
    w = args.warmup_steps
    if args.lr_schedule != "constant" or w:
        decay_steps = max(total - w, 1)
        after = {
            "constant": optax.constant_schedule(args.lr),
            "cosine": optax.cosine_decay_schedule(args.lr, decay_steps),
            "linear": optax.linear_schedule(args.lr, 0.0, decay_steps),
        }[args.lr_schedule]
        lr = (
            after
            if not w
            else optax.join_schedules([optax.linear_schedule(0.0, args.lr, w), after], [w])
        )
    opt = {"adam": optax.adam, "adamw": optax.adamw, "sgd": optax.sgd}[args.optimizer](lr)
    if args.clip_norm is not None:
        opt = optax.chain(optax.clip_by_global_norm(args.clip_norm), opt)
    return opt


def _reading(args: argparse.Namespace) -> str:
    order = "in file order" if args.no_shuffle else f"each epoch shuffled by --seed {args.seed}"
    return f"a full batch a step, {order}; the remainder of an epoch dropped"


def _named(plan: Any) -> tuple[Any, Any]:
    """The parameters as a tree whose paths are the arguments' names, in argument order (an
    ``OrderedDict``: JAX keeps its order), and the loss over it; a checkpoint then stores each
    parameter by its name. Unnamed or repeated names: a list (paths ``[0]``, ``[1]``, ...)."""
    from collections import OrderedDict

    names = [a.label for a in plan.roles.parameters]
    if len(set(names)) != len(names):
        return list(plan.params), plan.loss
    tree = OrderedDict(zip(names, plan.params, strict=True))
    inner = plan.loss
    if not callable(inner):  # the program itself (flat arguments, the tree only names them)
        return tree, inner

    def loss(params: Any, batch: Any) -> Any:
        return inner(list(params.values()), batch)

    return tree, loss


def _train(args: argparse.Namespace, plan: Any, layout: Any) -> int:
    from hlopipe import schedules
    from hlopipe.cli._train_run import total_steps
    from hlopipe.runtime import Pipeline

    size = plan.num_microbatches * plan.microbatch
    total = total_steps(args, plan.dataset.num_samples // size if plan.dataset else None)
    opt = make_optimizer(args, total)
    params, loss = _named(plan)
    batch = list(plan.batch)
    if args.plan_file is not None:  # the plan's layout, read by the runtime's one reader
        pipe = Pipeline.from_plan(
            loss, params, batch, args.plan_file, optimizer=opt,
            devices=list(layout.devices), check_finite=True,
            per_example=_per_example(args, plan),
        )  # fmt: skip
    else:
        pipe = Pipeline(
            loss,
            params,
            batch,
            num_stages=layout.num_stages,
            schedule=args.schedule,
            num_microbatches=args.microbatches,
            virtual_stages=args.virtual_stages,
            devices=list(layout.devices),
            optimizer=opt,
            check_finite=True,  # a NaN/inf loss or gradient stops the run, naming where
            zero=args.zero,
            recompute=_recompute(args.recompute),
            per_example=_per_example(args, plan),
            **_mesh_keywords(args, plan, params, layout.group),
        )
    if args.eval_data:  # evaluation infers: every output must be known before the run
        unknown = [
            k for k, v in enumerate(pipe.plan.per_example) if v is None or isinstance(v, str)
        ]
        if unknown:
            from hlopipe.errors import RuntimeConfigError

            raise RuntimeConfigError(
                f"--eval-data runs the program forward; its outputs {unknown} have the "
                "microbatch's rows on their leading axis and a file cannot tell whether they "
                "are per example: say which are with --per-example I,J"
            )
    state = pipe.restore(args.resume) if args.resume else pipe.init(params)
    if args.resume:
        print(f"resumed from step {state.step} of {args.resume} (parameters, optimizer state, "
              "data position)")  # fmt: skip
    if args.device is not None:
        report = pipe.staged.memory_report(
            args.device,
            schedule=pipe.schedule,
            optimizer=args.optimizer,
            param_args=range(len(pipe.plan.param_avals)),  # the parameters come first
        )
        print(report.render(), end="")
    print(f"compiling {pipe.staged.num_stages} stages' forward and backward (in step 1)...")
    run = run_steps(args, plan, pipe, state)
    losses = run.losses
    if not losses:
        return 0
    tl = pipe.timeline()
    fell = losses[-1] < losses[0]
    print(
        f"ran {pipe!r}: {len(losses)} steps, loss {losses[0]:.4f} -> {losses[-1]:.4f}"
        + (
            ""
            if fell or len(losses) < 2 or plan.dataset
            else " (it did not fall: check the data and --lr)"
        )
        + f"; measured bubble of the last step {tl.bubble_fraction:.1%}"
    )
    code = _check(args, plan, opt, losses, run.start) if args.check else 0
    if args.plot:
        schedules.plot(tl, args.plot)
        print(f"timeline written to {args.plot}")
    return code


def _per_example(args: argparse.Namespace, plan: Any) -> tuple[bool, ...] | None:
    """``--per-example I,J``: one flag per program output."""
    if args.per_example is None:
        return None
    from hlopipe.errors import RuntimeConfigError

    n = len(plan.program.out_avals)
    try:
        chosen = {int(t) for t in args.per_example.split(",") if t.strip()}
    except ValueError:
        chosen = {-1}
    if not chosen <= set(range(1, n)):
        raise RuntimeConfigError(
            f"--per-example {args.per_example}: give output positions from 1 to {n - 1}, "
            "comma-separated (output 0 is the loss)"
        )
    return tuple(k in chosen for k in range(n))


def _recompute(text: str | None) -> Any:
    """``--recompute``: one policy, or a list of one per stage."""
    if text is None:
        return None
    policies = [t.strip() for t in text.split(",")]
    return policies[0] if len(policies) == 1 else policies


def _mesh_keywords(args: argparse.Namespace, plan: Any, params: Any, group: int) -> dict:
    """The stage mesh and the parameters' layout on it: ``--stage-mesh``/``--stage-mesh-axes``
    and ``--param-spec``'s rules matched against the training roles' names (the first rule
    found in a parameter's name gives its spec; a parameter none matches is replicated);
    else a data-parallel mesh of ``group`` devices and the program's own layout."""
    import jax
    from jax.sharding import PartitionSpec

    from hlopipe.cli._common import param_rules, stage_mesh
    from hlopipe.runtime import specs_from_rules

    shape, axes = stage_mesh(args)
    if shape is None:
        return {"stage_mesh_shape": (group,)}
    out: dict[str, Any] = {"stage_mesh_shape": shape, "stage_mesh_axes": axes}
    rules = param_rules(args, shape, axes)
    if rules:
        names = [a.label for a in plan.roles.parameters]
        shapes = [a.aval.shape for a in plan.roles.parameters]
        found = specs_from_rules(rules, names, shapes)
        specs = [PartitionSpec() if s is None else s for s in found]
        out["param_specs"] = jax.tree_util.tree_unflatten(
            jax.tree_util.tree_structure(params), specs
        )
    return out


def _check(args: argparse.Namespace, plan: Any, opt: Any, losses: list[float], start: int) -> int:
    """--check: the program called directly on one device, with the roles its own tree or
    names give (never the plan's); 0 when the losses match, else 1. A program with neither
    has its roles unchecked: the pipeline is compared with one device on the plan's roles."""
    from hlopipe import training
    from hlopipe.errors import HlopipeError

    if start:
        raise HlopipeError("--check compares from initial values; leave out --resume with it")
    from hlopipe.runtime import compare_losses

    batches = None
    if plan.dataset is not None:  # the same batches again, from the start
        size = plan.num_microbatches * plan.microbatch
        data = training.Batches(plan.dataset, size, shuffle=not args.no_shuffle, seed=args.seed)
        batches = [next(data) for _ in losses]
    ref = training.train_reference(plan, opt, len(losses), batches)
    said = f"the roles by {ref.roles.evidence.value}"
    if ref.differences:
        print(
            f"check: NO MATCH: the plan's roles are not the program's ({said}): "
            + "; ".join(ref.differences)
        )
        return 1
    if ref.losses is None:  # nothing in the program to check the roles against
        unchecked = training.train_one_device(plan, opt, len(losses), batches)
        ok, verdict = compare_losses(losses, unchecked)
        print(
            f"check: the same {len(losses)} steps on one device with the plan's roles: "
            f"{verdict.replace('(match)', '(the pipeline agrees)')}; the roles are UNCHECKED: "
            f"the program carries {ref.roles.evidence.value}"
        )
        return 0 if ok else 1
    ok, verdict = compare_losses(losses, ref.losses)  # NaN/inf in either run never matches
    print(
        f"check: the same {len(losses)} steps on one device, the program called directly with "
        f"{said}: loss {ref.losses[0]:.4f} -> {ref.losses[-1]:.4f}; {verdict}"
    )
    return 0 if ok else 1


COMMAND = Command(
    "train",
    _add_train,
    _cmd_train,
    num_microbatches="--microbatches",
    stage_mesh_shape="--stage-devices",
    virtual_stages="--virtual-stages",
    num_stages="--stages",
    device="--device",
    batch_args="--batch-args",
    params="--params",
    data="--data",
    jax_num_cpu_devices="--cpu-devices",
    seq_len="--seq-len",
    token_dtype="--token-dtype",
    eval_data="--eval-data",
    param_rules="--param-spec",
    stage_mesh_axes="--stage-mesh-axes",
    zero="--zero",
    recompute="--recompute",
    per_example="--per-example",
)
