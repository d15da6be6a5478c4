"""The one per-key pipeline under every way of tuning: the decorator, ``tritune tune``, the ranks of a group and a
searched space only configure it.

* ``key.py``: :func:`~tritune.engine.key.tune_key`, the one place where a key goes from its legal candidates to a
  recorded winner (plan, start, batches, pick, record);
* ``options.py``: :class:`~tritune.engine.options.TuneOptions`, how a key is tuned, one meaning per field;
* ``plan.py``: race every legal config, or search a large space, with what budget, from what start;
* ``loop.py``: the batch loop (propose, compile, load and check, race with the earlier batches' survivors, tell),
  in this process or over the ranks (a ``Field``);
* ``pipeline.py``: compile, load, check and race one batch, the race starting while the last compiles finish;
* ``finals.py``: the opening's budget, the check race and the final race;
* ``race.py``: racing (and the sweep) over a ``ConfigMeasure``;
* ``precompile.py``: compiling a batch on the worker service, slowest first;
* ``timing.py``: the race's measure from a timer, built at the first timing;
* ``sticky.py`` and ``isolate.py``: a sticky CUDA error costs its candidate only; timing in a fresh process.

Layering (import-linter in ``.ci/run``): ``engine`` sits below ``ranks``, the decorator, serving and the CLI, above
``verify``, ``store``, ``search``, ``bench``, ``screen`` and ``workers``.
"""
