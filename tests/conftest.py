import pytest


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
