"""The command table: every ``cli/<name>.py`` is a command, listed once, with its help line."""

from __future__ import annotations

import pkgutil
import re

import hlopipe.cli
from hlopipe.cli import build_parser
from hlopipe.cli._common import COMMANDS


def test_every_command_module_is_in_the_table_in_order():
    modules = {m.name for m in pkgutil.iter_modules(hlopipe.cli.__path__) if m.name[0] != "_"}
    assert {name.replace("-", "_") for name in COMMANDS} == modules  # export-params: export_params
    order = ["schedule", "inspect", "run", "decompile", "demo", "split", "plan", "conformance"]
    assert list(COMMANDS) == [*order, "train", "export-params", "generate", "serve", "launch"]
    for name, command in COMMANDS.items():
        assert command.name == name
        assert command.help and "\n" not in command.help  # the handler's docstring
        assert command.flags["module"] == "--module"


def test_help_lists_each_command_with_its_line():
    text = " ".join(build_parser().format_help().split())
    for name, command in COMMANDS.items():
        assert f"{name} {command.help}" in text


def test_version_is_the_installed_distributions():
    """`hlopipe --version` prints the version pip installed (pyproject.toml takes it from
    hlopipe.__version__), as `hlopipe X.Y.Z`, and exits 0."""
    import importlib.metadata
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "hlopipe", "--version"], capture_output=True, text=True, check=True
    )
    assert out.stdout == f"hlopipe {importlib.metadata.version('hlopipe')}\n"
    assert re.fullmatch(r"hlopipe \d+\.\d+\.\d+\n", out.stdout)


def test_train_checks_a_schedules_name_not_whether_one_rank_can_run_it():
    """`train --schedule` is checked by name before the ranks are known: dualpipev (which
    needs 2 microbatches per rank, so `schedules.get(name, 1, 1)` refuses it) is a schedule;
    a misspelt name is refused with a suggestion."""
    import pytest

    from hlopipe.cli.train import _check_schedule_name
    from hlopipe.errors import ScheduleError

    for name in ("dualpipev", "ZB-V", "interleaved_1f1b"):
        _check_schedule_name(name)
    with pytest.raises(ScheduleError, match=r"--schedule 'gpipe2' is not a schedule.*'gpipe'"):
        _check_schedule_name("gpipe2")
