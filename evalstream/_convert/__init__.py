"""``evalstream convert``: other formats in, evalstream cases out, nothing lost on the way.

Sources are one module a format (``formats/``: the registry and its modules) and read rows
in bounded memory (``tables``); a row becomes a case through the user's ``--map``
(``mapping``), the OpenAI chat rules (``chat``) or an inspect_ai sample
(``formats.inspect_log``); ``run`` checks every case with the case decoder that ``validate``
uses, rejects what it refuses with the row, the column and a sentence, and writes atomically.
"""

from evalstream._convert.run import Options, run

__all__ = ["Options", "run"]
