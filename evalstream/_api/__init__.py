"""The public API's functions, one module per family of commands; ``evalstream/__init__.py``
re-exports them (``evalstream.build``, ``evalstream.judge``, ...).

Each function takes explicit, typed keyword parameters, one per option of its command, and
is the one home of each default: the command line passes only the options a user gave and
reads the defaults it shows from these signatures. Nothing heavy is imported at the top of
these modules (the standard library, and ``_files.lines`` for a default: ``import
evalstream`` stays cheap); the work is imported when a function runs. This package sits
above every other but ``_cli/``, which calls it.
"""
