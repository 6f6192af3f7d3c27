"""`magneton replay` runs here, in a Python with torch: the CLI hands over its
arguments; the planning, replay loop and storage are C++ (magneton._torch_hook).

The CLI starts this file by path under `python -I` (src/cli/cmd_replay.cc):
the directory a downloaded trace sits in, PYTHONPATH and the user site never
shape sys.path, so an argparse.py beside the trace is never imported. The
package this file belongs to is found from the file's own location."""

import sys

if __name__ == "__main__" and not __package__:
    import os.path

    # The folder holding this copy of the package (site-packages, or a
    # `pip install --target` folder), first: this file's own package is the
    # one that runs, never another copy on the path.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.realpath(__file__))))

import argparse  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="magneton replay")
    ap.add_argument("trace")
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--ops", default="", help="comma-separated op ids")
    ap.add_argument("--min-round-s", type=float, default=0.0,
                    help="seconds per round (default: 0.2 for host ops, 2 for GPU ops)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-store", action="store_true")
    ap.add_argument("--allow-untrusted", action="store_true",
                    help="replay a trace that is not this user's own signed recording")
    args = ap.parse_args(argv)

    import torch  # noqa: F401  (loads libtorch before the hook)

    from magneton.recorders.torch_recorder import _load_hook

    hook = _load_hook()
    op_ids = [int(x) for x in args.ops.split(",") if x.strip()]
    try:
        _, table = hook.replay_trace(args.trace, args.top, op_ids, args.min_round_s, args.rounds, not args.no_store,
                                       args.allow_untrusted)
    except (OSError, ValueError, RuntimeError) as e:  # src/bindings/status_exception.h
        print(f"magneton: {e}", file=sys.stderr)
        return 1
    print(table, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
