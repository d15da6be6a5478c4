import tritune


def test_all_is_exactly_the_public_surface():
    public = {n for n in dir(tritune) if not n.startswith("_") and not isinstance(getattr(tritune, n), type(tritune))}
    modules = {"bench", "bucket", "verify"}  # public sub-modules on purpose (tritune.bench and tritune.verify are callable)
    assert set(tritune.__all__) == public | {"__version__"} | modules
    for name in tritune.__all__:
        assert hasattr(tritune, name), name
    assert "annotations" not in dir(tritune)  # no __future__ feature leaks into the package's namespace


def test_error_tree():
    for name in ("ConfigError", "WorkloadError", "TimingUnavailableError", "NoLegalConfigError", "KernelSpecError"):
        assert issubclass(getattr(tritune, name), tritune.TrituneError)
    assert issubclass(tritune.TimingUnavailableError, RuntimeError)
