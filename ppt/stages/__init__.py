"""Stages: the library behind every stream subcommand, one module each, all driven by ``run_stream``.

A stage loads what it needs once (``prepare()``), then maps batches of records to output dicts or
RecordErrors (``__call__``); the CLI, a notebook or a Ray backend call the same object.

    base.py        Stage: prepare / __call__ / summary / signature
    sanitize.py    `ppt sanitize`      extract.py   `ppt extract`      query.py   `ppt query`
    attack.py      `ppt attack *`      eval.py      `ppt eval *`       precompute.py  `ppt precompute`
"""
