# pytest for the unittest checks here (test_atax.py, test_tiff_*.py, ...): each TestCase method is
# one pytest test, so a failing case no longer hides the others behind one ctest failure. The
# tools' folder comes from --bin-dir DIR (as the scripts take it) or $OOC_BIN_DIR; cli_args.py
# hands it to the modules, which read sys.argv only when run as scripts.
#   python3 -m pytest -v -rs tests/cli/test_equalize.py --bin-dir build/cpu
import os

import pytest

# Set when a module skipped itself at import (cli_cases.skip_module: no tifffile, no zarr).
_module_skipped = []


def pytest_addoption(parser):
    parser.addoption("--bin-dir", default=None,
                     help="directory holding the tools (oocconv, oocgen, ...); "
                          "default $OOC_BIN_DIR")


def pytest_configure(config):
    """--bin-dir into $OOC_BIN_DIR, where cli_args.py reads it when the modules are imported
    (without either, each module fails to import, saying so)."""
    d = config.getoption("--bin-dir", default=None) or os.environ.get("OOC_BIN_DIR")
    if not d:
        return
    if not os.path.isdir(d):
        raise pytest.UsageError(f"tests/cli: --bin-dir / OOC_BIN_DIR {d!r} is not a directory")
    os.environ["OOC_BIN_DIR"] = os.path.abspath(d)


def pytest_collectreport(report):
    if report.skipped:
        _module_skipped.append(report.nodeid)


def pytest_sessionfinish(session, exitstatus):
    """A run whose only modules skipped themselves collects no test (pytest's exit 5); it exits 77
    instead, which ctest reports as skipped (SKIP_RETURN_CODE 77), as the scripts' own exit did."""
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and _module_skipped:
        session.exitstatus = 77
