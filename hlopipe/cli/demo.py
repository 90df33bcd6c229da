"""`hlopipe demo`: the README's main job (over `hlopipe.demo`)."""

from __future__ import annotations

import argparse

from hlopipe.cli._common import Command


def _add_demo(p: argparse.ArgumentParser) -> None:
    del p


def _cmd_demo(args: argparse.Namespace) -> int:
    """the main job: rehydrate a tiny GPT loss from HLO, then pipeline-train it on 8 CPUs"""
    from hlopipe.demo import main as demo_main

    return demo_main()


COMMAND = Command("demo", _add_demo, _cmd_demo)
