"""``swgpu plan DBDIR``: the inter/intra-task threshold the GPU search would use, and why."""

from __future__ import annotations

import argparse
import json
import sys

from ..atomic import atomic_output, check_output_path
from ..database import Database
from ..engine import get_engine
from ..errors import InputError
from ..fasta import read_sequences
from ..plan import LengthProfile, choose_threshold, evaluate, plot_sweep, sweep
from ._options import start_gpu

NAME = "plan"
HELP = "choose the inter/intra-task length threshold for a database and query length; plot predicted speed"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("db", help="database directory built by 'swgpu makedb'")
    parser.add_argument("--query", help="query FASTA: plan for its longest query (default: --query-length)")
    parser.add_argument("--query-length", type=int, default=1000, help="query length to plan for (default 1000)")
    parser.add_argument("--threshold", type=int, help="evaluate this threshold instead of choosing one")
    parser.add_argument("--json", metavar="PATH", help="write the plan as JSON")
    parser.add_argument("--png", metavar="PATH", help="plot predicted GCUPS against threshold")
    parser.add_argument(
        "--no-gpu", dest="backend", action="store_const", const="cpu", default="auto",
        help="use the built-in H100 model even if a GPU is present",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    start_gpu(args)  # GPU 0's model (commands.DEFAULT_DEVICES): CUDA is shown only that GPU
    check_output_path(args.json, args.png)
    db = Database(args.db)
    qlen = max(len(q) for q in read_sequences(args.query)) if args.query else args.query_length
    if qlen < 1:
        raise InputError(f"--query-length must be at least 1 (got {qlen})")
    engine = get_engine(args.backend)
    model = engine.device_model()
    if not model.measured:
        why = f" ({engine.choice.reason})" if engine.choice.reason else ""
        print(f"swgpu plan: no calibrated GPU here{why}; using {model.name}", file=sys.stderr)
    # The CUDA backend scans the chunks that fit on a GPU as one batch: plan the whole database.
    whole = LengthProfile(db.lengths)
    chosen = evaluate(whole, qlen, args.threshold, model) if args.threshold else choose_threshold(whole, qlen, model)
    print(chosen.describe())
    if args.json:
        with atomic_output(args.json) as fh:
            json.dump({"database": str(db.path), "version": db.version_tag, "model": model.to_json(),
                       "plan": _plan_json(chosen)}, fh, indent=1)  # fmt: skip
            fh.write("\n")
    if args.png:
        plot_sweep(sweep(whole, qlen, model), chosen, args.png)
    return 0


def _plan_json(plan) -> dict:
    return {
        "threshold": plan.threshold, "query_length": plan.query_length, "predicted_seconds": plan.predicted_seconds,
        "predicted_gcups": plan.predicted_gcups, "bound": plan.bound,
        "inter": plan.inter.__dict__, "intra": plan.intra.__dict__,
    }  # fmt: skip
