import os

import pytest
from hypothesis import HealthCheck, settings

# Hypothesis profiles for tests/test_properties.py. `ci` is loaded always and keeps the property
# module within about a minute; `thorough` is for a run that looks much harder:
#     pytest --hypothesis-profile=thorough    (or HYPOTHESIS_PROFILE=thorough)
# Failing examples are remembered in the local .hypothesis/ directory (git-ignored) and replayed first.
settings.register_profile("ci", max_examples=40, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=1000, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_configure(config):
    """One cache directory for the run (policylang/cache.py), shared by the xdist workers, which
    inherit it from the controller: the stdlib is parsed and compiled once per run, not once
    per test that loads the default profile, and nothing is read from or left in the user's
    own cache."""
    # pytest-xdist's mark (make test runs --dist loadgroup), known also when xdist is not loaded.
    config.addinivalue_line("markers", "xdist_group(name): run these tests in one worker")
    if os.environ.get("POLICYLANG_CACHE_DIR") or hasattr(config, "workerinput"):
        return
    import tempfile
    config._policylang_cache = tempfile.TemporaryDirectory(prefix="policylang-test-cache-")
    os.environ["POLICYLANG_CACHE_DIR"] = config._policylang_cache.name


def pytest_unconfigure(config):
    held = getattr(config, "_policylang_cache", None)
    if held is not None:
        os.environ.pop("POLICYLANG_CACHE_DIR", None)
        held.cleanup()


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true",
                     help="rewrite golden files from the current output (review the diff before committing)")


@pytest.fixture
def golden(request):
    """golden(path, text): compare text with a golden file, or rewrite it with --update-golden."""
    update = request.config.getoption("--update-golden")

    def check(path, text):
        if update or not path.exists():
            if not update:
                pytest.fail(f"golden file {path} is missing; run pytest --update-golden and review it")
            path.write_text(text)
            return
        assert text == path.read_text(), f"output differs from {path} (pytest --update-golden to accept)"
    return check


def _start_oracle(version: str):
    """The oracle of kube-scheduler ``version``, started: skipped with a one-line reason where it
    cannot be had, a failure where POLICYLANG_REQUIRE_ORACLE is set (CI)."""
    from kube_oracle import Oracle, OracleUnavailable, oracle_binary, required
    try:
        binary = oracle_binary(version)
    except OracleUnavailable as err:
        if required():
            pytest.fail(f"POLICYLANG_REQUIRE_ORACLE is set, but: {err}")
        pytest.skip(str(err).splitlines()[0])
    return Oracle(binary)


@pytest.fixture(scope="module")
def oracle():
    """kube-scheduler's framework of the default Kubernetes version (oracle/, built by make
    test), for the differential tests."""
    from policylang.target import DEFAULT_VERSION
    o = _start_oracle(DEFAULT_VERSION)
    yield o
    o.close()


@pytest.fixture(scope="module")
def oracles():
    """``oracles(version)``: the oracle of that Kubernetes version (oracle/k8s-1.3X.mod), started
    on first use and stopped with the module, for tests/test_oracle_versions.py and the gate and
    conformance tests that name a version."""
    started = {}

    def get(version: str):
        if version not in started:
            started[version] = _start_oracle(version)
        return started[version]
    yield get
    for o in started.values():
        o.close()


@pytest.fixture(scope="session")
def apiserver(tmp_path_factory):
    """etcd and kube-apiserver on loopback (tests/kube_apiserver.py; built by make test): skipped
    with a one-line reason where they cannot be had, a failure where POLICYLANG_REQUIRE_APISERVER
    is set (CI)."""
    from kube_apiserver import ApiServer, ApiServerUnavailable, binaries, required
    try:
        server = ApiServer(binaries(), tmp_path_factory.mktemp("apiserver"))
    except ApiServerUnavailable as err:
        if required():
            pytest.fail(f"POLICYLANG_REQUIRE_APISERVER is set, but: {err}")
        pytest.skip(str(err).splitlines()[0])
    yield server
    server.stop()
