"""The engine under every way of tuning: the decorator, ``tritune tune`` and each rank of a farm only
configure it.

* ``race.py``: racing (and the exhaustive sweep) over a ``ConfigMeasure``;
* ``precompile.py``: compiling a kernel's candidates on the worker service, slowest first;
* ``pipeline.py``: compile, load, check and race one list of configs, the race starting while the last
  compiles finish;
* ``job.py``: the one typed tuning job (candidates, preparation, measurement, compiler, group);
* ``isolate.py``: timing in a worker process, so a crash costs one candidate.

Layering (enforced by import-linter in ``.ci/run``): ``engine`` sits below ``dist`` and ``tune``, above
``verify``, ``bench``, ``screen`` and ``workers``.
"""
