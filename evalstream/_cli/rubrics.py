"""``evalstream rubrics``: check rubric files and show what they hold, or print the built-in set."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from evalstream._cli.common import path

EXAMPLES = """examples:
  evalstream rubrics --list                               # the built-in rubrics: id, version,
                                                          # what each reads, na, its question
  evalstream rubrics --list --json my-rubrics.toml        # the same as JSON, for scripts
  evalstream rubrics --show-builtin > my-rubrics.toml     # the built-in set, to start from
  evalstream rubrics my-rubrics.toml                      # check a file: what each rubric does
  evalstream rubrics builtin my-rubrics.toml              # the built-in set and mine, as
                                                          # build --rubrics builtin --rubrics
                                                          # my-rubrics.toml uses them

exit codes: 0 the rubrics are valid, 2 a rubric file cannot be used (the error names the file,
the rubric and the key)."""


def register(sub: Any) -> None:
    """Add the ``rubrics`` subcommand."""
    p = sub.add_parser(
        "rubrics",
        description="Load rubric files as build does (every key checked) and list each rubric: "
                    "its kind, the judge-state names it shows, when it applies, its hash. With "
                    "no file, the built-in set.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="*", type=path, metavar="FILE",
                   help="TOML rubric files, in order; `builtin` names the built-in set")
    p.add_argument("--show-builtin", action="store_true",
                   help="print the built-in rubric file as shipped, to start a file of your own")
    p.add_argument("--list", action="store_true",
                   help="list each rubric: id, version (its hash, which verdicts carry), the "
                        "fields it reads, whether its judge may answer na, and the first line "
                        "of its question")
    p.add_argument("--json", action="store_true",
                   help="with --list: one JSON array of every field of each rubric, for scripts")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import evalstream
    from evalstream._render.rubrics import rubric_blocks
    from evalstream._render.tables import print_blocks

    if args.show_builtin:
        from evalstream._checks.rubrics import builtin_text  # the built-in file, as shipped

        sys.stdout.write(builtin_text())
        return 0
    if args.json and not args.list:
        from evalstream.errors import UsageError

        raise UsageError("--json prints the list of --list; give both: "
                         "`evalstream rubrics --list --json`.")
    if args.list:
        entries = evalstream.rubrics(args.paths or None)
        if args.json:
            import msgspec

            sys.stdout.write(msgspec.json.format(msgspec.json.encode(entries)).decode() + "\n")
        else:
            from evalstream._render.rubrics import entry_blocks

            print_blocks(entry_blocks(entries), sys.stdout)
        return 0
    print_blocks(rubric_blocks(evalstream.load_rubrics(args.paths or None)), sys.stdout)
    return 0
