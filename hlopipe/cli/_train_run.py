"""`hlopipe train`'s run: the steps from the state it starts at to ``--steps`` (or
``--epochs``), batch after batch of the dataset, checkpoints every ``--save-every`` steps
with the data position, the log folder, an evaluation loss, and a line per step with its ETA."""

from __future__ import annotations

import argparse
import logging
import time
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("hlopipe")


@dataclass
class RunResult:
    """The losses of the steps this process ran, and the state after them."""

    state: Any
    losses: list[float] = field(default_factory=list)
    start: int = 0


def total_steps(args: argparse.Namespace, steps_per_epoch: int | None) -> int:
    """The run's last step (global): ``--steps``, else ``--epochs`` x steps an epoch, else 10."""
    if args.epochs is not None:
        if steps_per_epoch is None:
            from hlopipe.errors import RuntimeConfigError

            raise RuntimeConfigError(
                f"--epochs counts passes over a dataset; --data {args.data} is one batch, "
                "used every step: give --steps N"
            )
        return args.epochs * steps_per_epoch
    return args.steps if args.steps is not None else 10


def _batches(args: argparse.Namespace, plan: Any, pipe: Any, state: Any) -> Any:
    """The dataset's batch stream, moved to where the resumed checkpoint left it."""
    from hlopipe import training
    from hlopipe.runtime import read_checkpoint_extra

    if plan.dataset is None:
        return None
    size = plan.num_microbatches * plan.microbatch
    rows = pipe.process_rows  # this process's share when replicas span processes
    data = training.Batches(
        plan.dataset, size, shuffle=not args.no_shuffle, seed=args.seed, rows=rows
    )
    if len(rows) != size:
        log.info("this process reads rows %s of every batch of %d", _ranges(rows), size)
    if args.resume:
        extra = read_checkpoint_extra(args.resume, state.step) or {}
        if extra.get("data"):
            data.seek(extra["data"])
            log.info("data position restored from %s: %s", args.resume, extra["data"])
        else:
            log.warning(
                "%s holds no data position (saved without a dataset): reading from the start",
                args.resume,
            )
    return data


def _ranges(rows: tuple[int, ...]) -> str:
    """Ascending ``rows`` as ranges: ``0:2, 4:6``."""
    runs: list[list[int]] = []
    for r in rows:
        if runs and runs[-1][1] == r:
            runs[-1][1] = r + 1
        else:
            runs.append([r, r + 1])
    return ", ".join(f"{lo}:{hi}" for lo, hi in runs)


def _evaluate(pipe: Any, state: Any, dataset: Any, size: int) -> float:
    """The mean of the program's loss over every full batch of ``dataset``."""
    from hlopipe import training

    total, n = 0.0, 0
    for batch in training.eval_batches(dataset, size):
        out = pipe.infer(state, batch)
        total += float(out[0] if isinstance(out, tuple | list) else out)
        n += 1
    return total / n


def _eta(seconds: float) -> str:
    s = round(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


class _Progress:
    """On a terminal, a progress bar with the ETA under the step lines; else the lines alone."""

    def __init__(self, start: int, total: int) -> None:
        import sys

        self._bar: Any = None
        if sys.stdout.isatty():
            from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

            self._bar = Progress(
                TextColumn("step {task.completed}/{task.total}"),
                BarColumn(),
                TimeRemainingColumn(),
                transient=True,
            )
            self._task = self._bar.add_task("train", total=total, completed=start)
            self._bar.start()

    def line(self, printed: bool, text: str) -> None:
        """A step done: its line ``text`` printed when ``printed`` (``--log-every``)."""
        if self._bar is None:
            if printed:
                print(text, flush=True)
            return
        if printed:
            self._bar.console.print(text, highlight=False)
        self._bar.advance(self._task)

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()


def run_steps(args: argparse.Namespace, plan: Any, pipe: Any, state: Any) -> RunResult:
    """Train from ``state`` to the run's total steps; see the module docstring."""
    import jax

    from hlopipe import schedules, training

    data = _batches(args, plan, pipe, state)
    size = plan.num_microbatches * plan.microbatch
    total = total_steps(args, data.steps_per_epoch if data else None)
    result = RunResult(state=state, start=state.step)
    if state.step >= total:
        print(f"already at step {state.step} of {total}: nothing to train")
        return result
    save_dir = args.save or args.resume
    eval_set = None
    if args.eval_data:
        eval_set = training.open_dataset(
            args.eval_data,
            plan.roles.batch,
            seq_len=args.seq_len,
            token_dtype=args.token_dtype,
            keyword="eval_data",
        )
    first = jax.process_index() == 0
    run_log = None
    if args.log_dir and first:
        run_log = training.RunLog(args.log_dir, resumed_at=state.step if args.resume else None)
        if run_log.dropped:
            log.info(
                "%s: %d records of steps after %d dropped (a killed run's, trained again)",
                run_log.metrics_path, run_log.dropped, state.step,
            )  # fmt: skip
    tokens = plan.dataset.tokens_per_sample if plan.dataset else 0
    profiled = {min(state.step + 1, total - 1), total - 1}  # costs for the bubble; the plot
    bubble: float | None = None
    progress = _Progress(state.step, total)
    times: list[float] = []
    saved_at = -1
    at = state.step
    try:
        for k in range(state.step, total):
            at = k  # the step being trained, for the message if the run stops here
            batch = next(data) if data is not None else list(plan.batch)
            t0 = time.perf_counter()
            if data is not None:
                log.debug("step %d reads samples %s", k + 1, data.last_samples.tolist())
            state, metrics = pipe.step(
                state, batch, profile=k in profiled, process_local=data is not None
            )
            loss, grad_norm = float(metrics.loss), float(metrics.grad_norm)
            dt = time.perf_counter() - t0
            result.losses.append(loss)
            if k in profiled:
                bubble = schedules.simulate(pipe.schedule, pipe.timeline().costs).bubble_fraction
            elif k > result.start:  # not the first (it compiles) nor a profiled one (it waits)
                times.append(dt)
            step = state.step
            eval_loss = None
            if eval_set is not None and (
                (args.eval_every and step % args.eval_every == 0) or step == total
            ):
                eval_loss = _evaluate(pipe, state, eval_set, size)
            rate = size * (tokens or 1) / dt
            eta = _eta(sum(times) / len(times) * (total - step)) if times else "-:--:--"
            printed = step % args.log_every == 0 or step == total or eval_loss is not None
            progress.line(
                printed,
                f"step {step:4d}  loss {loss:.6f}  grad norm {grad_norm:.4f}  "
                f"{dt * 1e3:8.1f} ms"
                + (f"  eval loss {eval_loss:.6f}" if eval_loss is not None else "")
                + f"  ETA {eta if step < total else _eta(0)}",
            )
            if run_log is not None:
                run_log.write(
                    training.StepRecord(
                        step=step,
                        loss=loss,
                        grad_norm=grad_norm,
                        step_time_s=dt,
                        tokens_per_s=rate if tokens else None,
                        samples_per_s=None if tokens else rate,
                        bubble=bubble,
                        eval_loss=eval_loss,
                    )
                )
            if save_dir and args.save_every and step % args.save_every == 0:
                _save(args, pipe, state, save_dir, data)
                saved_at = step
    except KeyboardInterrupt:
        progress.stop()
        print(f"interrupted in step {at + 1}: {_resume_hint(args, save_dir)}", flush=True)
        raise
    except BaseException:
        # not handled here (the error is printed by the command as ever): the way back in
        progress.stop()
        print(f"stopped in step {at + 1}: {_resume_hint(args, save_dir)}", flush=True)
        raise
    finally:
        progress.stop()
        if run_log is not None:
            run_log.close()
    if save_dir and saved_at != state.step:
        _save(args, pipe, state, save_dir, data)
    result.state = state
    return result


def _resume_hint(args: argparse.Namespace, save_dir: str | None) -> str:
    """Where a stopped run can go on from: the last checkpoint and the flag that resumes it."""
    import os

    from hlopipe.runtime import latest_checkpoint_step

    step = latest_checkpoint_step(save_dir) if save_dir else None
    if step is None:
        return (
            "no checkpoint was saved (--save DIR --save-every N keeps one); "
            "a new run starts from the beginning"
        )
    folder = os.path.join(save_dir or "", f"step_{step:08d}")
    return (
        f"the last checkpoint is {folder} (step {step}); go on from it with the same command "
        f"and --resume {save_dir} (--steps is the run's total)"
    )


def _save(args: argparse.Namespace, pipe: Any, state: Any, directory: str, data: Any) -> None:
    extra = {"data": data.position().to_json()} if data is not None else None
    folder = pipe.save(state, directory, keep=args.keep, extra=extra)
    print(f"checkpoint written to {folder}", flush=True)
