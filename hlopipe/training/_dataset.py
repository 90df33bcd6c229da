"""A dataset for ``--data``: samples along axis 0 of .npy/.npz shards, or windows of a flat
token file, read through grain (its random-access data source protocol, ``MapDataset``'s
shuffle, batch and repeat, and its checkpointable, prefetching iterator).

A sample is one row of every batch argument (the program's microbatch without its leading
axis); step *k* takes the next full batch (``microbatches x`` the program's batch) of samples,
microbatches in order within it. Samples are read in file order, or shuffled by a seed (grain
shuffles each epoch differently); the remainder of an epoch is dropped. The position in the
stream is grain's iterator state, saved with a checkpoint so a resumed run reads on from the
next batch.
"""

from __future__ import annotations

import enum
import functools
import glob
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hlopipe.errors import HlopipeError, Keyword, RuntimeConfigError
from hlopipe.io import format_aval
from hlopipe.training._roles import Argument

TOKEN_DTYPES = ("uint16", "uint32", "int32")


class DataKind(enum.StrEnum):
    SHARDS = "shards"  # .npy/.npz files whose arrays are samples along axis 0
    TOKENS = "tokens"  # a flat token file cut into windows of seq_len


@dataclass(frozen=True)
class Dataset:
    """Samples for the batch arguments: ``source[i]`` is sample ``i`` (a tuple, one array per
    batch argument, in the program's dtypes); ``tokens_per_sample`` is the window length of a
    token file (0 for shards); ``note`` says where the samples come from."""

    kind: DataKind
    path: str
    source: Any
    num_samples: int
    tokens_per_sample: int
    note: str


class _Samples:
    """grain's random-access data source over arrays whose axis 0 is samples: one list of
    shards per batch argument (memory-mapped where the format allows), cast to the program's
    dtypes on read."""

    def __init__(self, shards: list[list[Any]], dtypes: list[Any]) -> None:
        self._shards = shards
        self._dtypes = dtypes
        self._starts = np.cumsum([0] + [len(s) for s in shards[0]])

    def __len__(self) -> int:
        return int(self._starts[-1])

    def __getitem__(self, i: int) -> tuple[Any, ...]:
        k = int(np.searchsorted(self._starts, i, side="right")) - 1
        j = i - int(self._starts[k])
        return tuple(
            np.asarray(s[k][j], dtype=d) for s, d in zip(self._shards, self._dtypes, strict=True)
        )


class _Tokens:
    """grain's random-access data source over a flat token array: sample ``j`` is
    ``tokens[j*S : j*S+S]``, with labels (``labels=True``) the same window shifted by one."""

    def __init__(self, tokens: Any, seq_len: int, labels: bool, dtypes: list[Any]) -> None:
        self._tokens, self._S, self._labels, self._dtypes = tokens, seq_len, labels, dtypes

    def __len__(self) -> int:
        n = len(self._tokens) - (1 if self._labels else 0)
        return max(n // self._S, 0)

    def __getitem__(self, j: int) -> tuple[Any, ...]:
        S = self._S
        window = np.asarray(self._tokens[j * S : j * S + S + (1 if self._labels else 0)])
        out = [window[:S].astype(self._dtypes[0])]
        if self._labels:
            out.append(window[1:].astype(self._dtypes[1]))
        return tuple(out)


def is_one_batch(path: str, batch: Sequence[Argument], microbatches: int) -> bool:
    """Whether ``path`` is today's one-batch .npz: a single .npz file whose arrays hold exactly
    one full batch (``microbatches`` x the program's batch), used the same every step."""
    if not (os.path.isfile(path) and path.endswith(".npz")):
        return False
    try:
        with np.load(path, allow_pickle=False) as f:
            rows = [f[k].shape[:1] for k in f.files]
    except (OSError, ValueError):
        return True  # the one-batch reader names what is wrong with it
    want = (batch[0].aval.shape[0] * microbatches,) if batch[0].aval.shape else ()
    return len(rows) == len(batch) and all(r == want for r in rows)


def open_dataset(
    path: str,
    batch: Sequence[Argument],
    *,
    seq_len: int | None = None,
    token_dtype: str = "uint16",
    keyword: str = "data",
) -> Dataset:
    """The samples at ``path`` for the batch arguments ``batch`` (their avals one microbatch).

    Args:
      path: a folder or glob of .npy/.npz shards (arrays matched to the batch arguments by
        name, else by position), a single .npz/.npy shard, or a token file: ``.bin`` (raw
        ``token_dtype``, as nanoGPT and Megatron write them) or a 1-D ``.npy``.
      seq_len: a token file's window; it must equal the program's sequence length (default:
        that length).
      token_dtype: the dtype of a ``.bin`` token file (``uint16``, ``uint32``, ``int32``).

    Raises:
      RuntimeConfigError: nothing readable there, arrays that do not fit the batch arguments,
        a window that is not the program's sequence length.
    """
    kw = Keyword(keyword, path)
    if any(c in path for c in "*?["):
        files = sorted(glob.glob(path))
    elif os.path.isdir(path):
        files = sorted(
            os.path.join(path, n) for n in os.listdir(path) if n.endswith((".npy", ".npz"))
        )
    elif os.path.isfile(path):
        files = [path]
    else:
        raise RuntimeConfigError(kw, ": no such file or folder")
    files = [f for f in files if f.endswith((".npy", ".npz", ".bin"))]
    if not files:
        raise RuntimeConfigError(kw, ": no .npy, .npz or .bin files there")
    if len(files) == 1 and (files[0].endswith(".bin") or _is_flat_npy(files[0])):
        return _token_dataset(files[0], batch, seq_len, token_dtype, kw)
    if seq_len is not None:
        raise RuntimeConfigError(
            Keyword("seq_len", seq_len), f" is for a token file; {path} holds arrays of samples"
        )
    return _shard_dataset(path, files, batch, kw)


def _is_flat_npy(path: str) -> bool:
    return path.endswith(".npy") and len(np.load(path, mmap_mode="r").shape) == 1


def _token_dataset(
    path: str, batch: Sequence[Argument], seq_len: int | None, token_dtype: str, kw: Keyword
) -> Dataset:
    if len(batch) not in (1, 2):
        raise RuntimeConfigError(
            kw, f": a token file gives (tokens, labels); the program has {len(batch)} batch "
            "arguments (",
            Keyword("batch_args", "I,J"),
            " to say which are the tokens and labels)",
        )  # fmt: skip
    for a in batch:
        if len(a.aval.shape) != 2 or not np.issubdtype(np.dtype(a.aval.dtype), np.integer):
            raise RuntimeConfigError(
                kw, f": a token file needs integer [batch, sequence] arguments; {a.label} is "
                f"{format_aval(a.aval)}",
            )  # fmt: skip
    S = int(batch[0].aval.shape[1])
    if seq_len is not None and seq_len != S:
        raise RuntimeConfigError(
            Keyword("seq_len", seq_len),
            f": the program's sequence length is {S} ({batch[0].label} is "
            f"{format_aval(batch[0].aval)}); give {S} or leave it out",
        )
    if path.endswith(".bin"):
        if token_dtype not in TOKEN_DTYPES:
            raise RuntimeConfigError(
                Keyword("token_dtype", token_dtype), f": one of {', '.join(TOKEN_DTYPES)}"
            )
        size = os.path.getsize(path)
        width = np.dtype(token_dtype).itemsize
        if size % width:
            raise RuntimeConfigError(
                kw, f": {size} bytes is not a whole number of {token_dtype} tokens (",
                Keyword("token_dtype"), ")",
            )  # fmt: skip
        tokens: Any = np.memmap(path, dtype=token_dtype, mode="r") if size else np.zeros(0)
    else:
        tokens = np.load(path, mmap_mode="r")
        if not np.issubdtype(tokens.dtype, np.integer):
            raise RuntimeConfigError(kw, f": a 1-D array of {tokens.dtype}, not integer tokens")
    labels = len(batch) == 2
    source = _Tokens(tokens, S, labels, [np.dtype(a.aval.dtype) for a in batch])
    what = "(tokens, labels) windows" if labels else "token windows"
    return Dataset(
        kind=DataKind.TOKENS,
        path=path,
        source=source,
        num_samples=len(source),
        tokens_per_sample=S,
        note=f"{len(tokens):,} tokens from {path}: {len(source):,} {what} of {S}",
    )


def _shard_arrays(path: str, kw: Keyword) -> tuple[list[str], list[Any]]:
    try:
        if path.endswith(".npy"):
            return [_stem(path)], [np.load(path, mmap_mode="r")]
        with np.load(path, allow_pickle=False) as f:
            return list(f.files), [f[k] for k in f.files]
    except (OSError, ValueError, EOFError) as e:
        raise RuntimeConfigError(kw, f": cannot read {path} ({e})") from None


def _match(names: list[str], arrays: list[Any], batch: Sequence[Argument], where: str) -> list:
    """The arrays of one shard in the batch arguments' order: by name when every argument has
    its name there, else by position."""
    by_name = dict(zip(names, arrays, strict=True))
    if all(a.name in by_name for a in batch):
        return [by_name[a.name] for a in batch if a.name]
    if len(arrays) != len(batch):
        raise RuntimeConfigError(
            f"{where}: {len(arrays)} arrays ({', '.join(names)}), the program has {len(batch)} "
            f"batch arguments ({', '.join(a.label for a in batch)}); name them as the arguments "
            "or give them in argument order"
        )
    return list(arrays)


def _stem(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


def _shard_dataset(path: str, files: list[str], batch: Sequence[Argument], kw: Keyword) -> Dataset:
    per_arg: list[list[Any]] = [[] for _ in batch]
    shards = [_shard_arrays(f, kw) for f in files]
    if len(batch) > 1 and {_stem(f) for f in files} == {a.name for a in batch}:
        # one .npy per batch argument, named as it: one shard (x.npy, y.npy)
        shards = [([n for ns, _ in shards for n in ns], [x for _, xs in shards for x in xs])]
        files = [path]
    for f, (names, arrays) in zip(files, shards, strict=True):
        matched = _match(names, arrays, batch, f)
        rows = {int(x.shape[0]) if x.ndim else -1 for x in matched}
        if len(rows) != 1 or -1 in rows:
            raise RuntimeConfigError(
                f"{f}: its arrays must hold the same number of samples along axis 0 (found "
                f"{', '.join(str(tuple(x.shape)) for x in matched)})"
            )
        for k, (x, a) in enumerate(zip(matched, batch, strict=True)):
            same_kind = np.issubdtype(x.dtype, np.integer) == np.issubdtype(
                np.dtype(a.aval.dtype), np.integer
            )
            if tuple(x.shape[1:]) != tuple(a.aval.shape[1:]) or not same_kind:
                sample = format_aval(_sds(a.aval.shape[1:], a.aval.dtype))
                raise RuntimeConfigError(
                    f"{f}: array {k} is {x.dtype}{list(x.shape)}; samples of {a.label} are "
                    f"{sample} (one row of {format_aval(a.aval)}), stacked along axis 0"
                )
            per_arg[k].append(x)
    source = _Samples(per_arg, [np.dtype(a.aval.dtype) for a in batch])
    return Dataset(
        kind=DataKind.SHARDS,
        path=path,
        source=source,
        num_samples=len(source),
        tokens_per_sample=0,
        note=f"{len(source):,} samples in {len(files)} shard(s) at {path}",
    )


def _sds(shape: Any, dtype: Any) -> Any:
    import jax

    return jax.ShapeDtypeStruct(tuple(shape), dtype)


def _grain() -> Any:
    try:
        import grain
    except ImportError:
        raise HlopipeError(
            "a dataset is read with grain, which is not installed: pip install 'hlopipe[data]' "
            "(or grain)"
        ) from None
    return grain


@dataclass(frozen=True)
class Position:
    """Where a run is in its data: grain's iterator state (JSON-able) and what must be the
    same for it to mean the same samples on resume."""

    iterator: Mapping[str, Any]
    num_samples: int
    batch_size: int
    shuffle: bool
    seed: int

    def to_json(self) -> dict[str, Any]:
        return {
            "iterator": dict(self.iterator),
            "num_samples": self.num_samples,
            "batch_size": self.batch_size,
            "shuffle": self.shuffle,
            "seed": self.seed,
        }


class Batches:
    """Full batches of ``dataset`` without end (epoch after epoch), each a list with one array
    per batch argument; prefetched on grain's reader threads.

    Args:
      batch_size: samples a step takes (microbatches x the program's batch).
      shuffle, seed: each epoch in an order drawn from ``seed`` (grain reseeds per epoch);
        ``shuffle=False``: file order.
      prefetch: batches read ahead.
      rows: read only these rows (positions in a full batch, in this order) of every full
        batch (this process's share when data-parallel replicas span processes,
        ``Pipeline.process_rows``: each process reads its own samples, and the processes
        together read every full batch); default: all of them.

    ``last_samples`` holds the indices (in the dataset) of the samples the last batch read.
    """

    def __init__(
        self,
        dataset: Dataset,
        batch_size: int,
        *,
        shuffle: bool,
        seed: int,
        prefetch: int = 2,
        rows: Sequence[int] | None = None,
    ) -> None:
        grain = _grain()
        n = dataset.num_samples
        if n < batch_size:
            raise RuntimeConfigError(
                f"{dataset.path}: {n} samples, a step takes {batch_size} (microbatches x the "
                "program's batch); give more data or fewer ",
                Keyword("num_microbatches"),
            )
        mine = np.arange(batch_size) if rows is None else np.asarray(rows, dtype=np.int64)
        if (
            mine.ndim != 1
            or not 0 < len(mine) == len(set(mine.tolist()))
            or not (mine.min() >= 0 and mine.max() < batch_size)
        ):
            raise RuntimeConfigError(
                f"rows {mine.tolist()} are not distinct rows of a batch of {batch_size}"
            )
        # the order is drawn over sample indices (grain shuffles indices, so it is the order a
        # shuffle of the samples themselves would give); a batch reads its rows' samples only
        ds = grain.MapDataset.range(n)
        if shuffle:
            ds = ds.shuffle(seed=seed)
        indices = ds.batch(batch_size, drop_remainder=True)
        self._batched = indices.map(functools.partial(_read_rows, dataset.source, mine))
        self.steps_per_epoch = len(indices)
        self.last_samples: Any = None
        reads = grain.ReadOptions(num_threads=1, prefetch_buffer_size=prefetch)
        self._iter = iter(self._batched.repeat(None).to_iter_dataset(reads))
        self._key = (n, batch_size, shuffle, seed)

    def first(self) -> list[Any]:
        """The first batch of the stream (for shapes), without moving it."""
        return list(self._batched[0][1])

    def __iter__(self) -> Iterator[list[Any]]:
        return self

    def __next__(self) -> list[Any]:
        self.last_samples, arrays = next(self._iter)
        return list(arrays)

    def position(self) -> Position:
        """Where the stream is: the next batch it gives is the one after those taken."""
        n, b, shuffle, seed = self._key
        return Position(dict(self._iter.get_state()), n, b, shuffle, seed)

    def seek(self, position: Mapping[str, Any]) -> None:
        """Continue from a saved :meth:`position` (``Position.to_json()``); the data must be
        the same (samples, batch size, order) or it is refused."""
        n, b, shuffle, seed = self._key
        saved = (position["num_samples"], position["batch_size"], position["shuffle"])
        if saved != (n, b, shuffle) or (shuffle and position["seed"] != seed):
            raise RuntimeConfigError(
                f"the checkpoint's data position is for {position['num_samples']} samples in "
                f"batches of {position['batch_size']}, "
                + (f"shuffled by seed {position['seed']}" if position["shuffle"] else "in order")
                + f"; this run has {n} in batches of {b}, "
                + (f"shuffled by seed {seed}" if shuffle else "in order")
                + ": resume with the same data, microbatches, --seed and shuffling"
            )
        self._iter.set_state(dict(position["iterator"]))


def _read_rows(source: Any, rows: Any, indices: Any) -> tuple[Any, tuple[Any, ...]]:
    """Rows ``rows`` of a batch of sample ``indices``: (their indices, one stacked array per
    batch argument)."""
    mine = np.asarray(indices)[rows]
    samples = [source[int(i)] for i in mine]
    return mine, tuple(np.stack(column) for column in zip(*samples, strict=True))


def eval_batches(dataset: Dataset, batch_size: int) -> Iterator[list[Any]]:
    """Every full batch of ``dataset`` once, in file order (an evaluation pass)."""
    grain = _grain()
    if dataset.num_samples < batch_size:
        raise RuntimeConfigError(
            f"{dataset.path}: {dataset.num_samples} samples, an evaluation batch takes {batch_size}"
        )
    batched = grain.MapDataset.source(dataset.source).batch(batch_size, drop_remainder=True)
    for k in range(len(batched)):
        yield list(batched[k])
