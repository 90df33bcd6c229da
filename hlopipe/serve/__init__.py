"""``hlopipe serve``: an OpenAI-compatible HTTP server over the pipelined generator.

Public API: :func:`build_server` and :class:`Server` (what the command builds and runs;
:func:`serve` is both), :class:`Engine` (continuous batching of
requests into groups), :func:`make_app` and :class:`Model` (the Starlette application). See
``docs/serving.md``. Needs the ``serve`` extra (``pip install 'hlopipe[serve]'``).
"""

from hlopipe.serve._app import make_app
from hlopipe.serve._builtin import builtin_model
from hlopipe.serve._engine import Engine
from hlopipe.serve._output import FinishReason
from hlopipe.serve._request import Model
from hlopipe.serve._scheduler import Request, Sequence
from hlopipe.serve._server import Server, build_server, serve

__all__ = [
    "Engine",
    "FinishReason",
    "Model",
    "Request",
    "Sequence",
    "Server",
    "build_server",
    "builtin_model",
    "make_app",
    "serve",
]
