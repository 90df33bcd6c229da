"""Pipelined generation: a decode step (and its prefill) split into stages, each stage keeping
the state of its own layers (its KV cache), many groups of sequences in flight.

Public API: :class:`Generator` (``hlopipe.Generator``), its :class:`Session` (and
:class:`Issued`, the handle of steps issued and not yet read), and
:func:`generate_unsplit`, the one-device oracle; :func:`sample` and :class:`Sampling`, how
a step returning logits has its tokens chosen (:func:`penalize` first), and
:func:`token_logprobs` (up to :data:`TOP_LOGPROBS`) what it gives beside them;
:func:`param_specs_from_rules` (with :func:`parse_param_rule`), ``param_specs`` from
partitioning rules (``--param-spec``);
:func:`read_export_folder`, a folder of ``hlopipe.torch.export_generation``;
:func:`widen` (with :class:`Widened`), a batch-1 step vmapped over sequences. See
``docs/generation.md``.
"""

from hlopipe.generate._command import _params as load_params
from hlopipe.generate._command import _tokenizer as load_tokenizer
from hlopipe.generate._command import run_command
from hlopipe.generate._exported import ExportFolder, is_export_folder, read_export_folder
from hlopipe.generate._generator import Generator
from hlopipe.generate._oracle import generate_unsplit
from hlopipe.generate._rules import ParamRule, param_specs_from_rules, parse_param_rule
from hlopipe.generate._sampling import TOP_LOGPROBS, Sampling, penalize, sample, token_logprobs
from hlopipe.generate._session import Issued, Session
from hlopipe.generate._widen import Widened, widen

__all__ = [
    "TOP_LOGPROBS",
    "ExportFolder",
    "Generator",
    "Issued",
    "ParamRule",
    "Sampling",
    "Session",
    "generate_unsplit",
    "is_export_folder",
    "load_params",
    "load_tokenizer",
    "param_specs_from_rules",
    "parse_param_rule",
    "penalize",
    "read_export_folder",
    "run_command",
    "sample",
    "token_logprobs",
    "widen",
    "Widened",
]
