"""The tools' folder for the unittest checks here, run as scripts or under pytest.

As a script (`python3 X.py --bin-dir DIR [unittest options]`), --bin-dir is read from sys.argv and
the other arguments go to unittest.main. Imported by pytest (conftest.py, which takes its own
--bin-dir option into $OOC_BIN_DIR), the folder is $OOC_BIN_DIR and sys.argv, pytest's, is not
read."""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def bin_dir_and_rest(module_name, description=None, bin_help=None):
    """(absolute tools folder, arguments left for unittest.main) of the module `module_name`:
    from the command line where it runs as __main__, else from $OOC_BIN_DIR."""
    if module_name == "__main__":
        ap = argparse.ArgumentParser(description=description, add_help=description is not None)
        ap.add_argument("--bin-dir", required=True, help=bin_help)
        args, rest = ap.parse_known_args()
        return os.path.abspath(args.bin_dir), rest
    d = os.environ.get("OOC_BIN_DIR")
    if not d:
        raise RuntimeError(f"{module_name}: no tools folder: run it as a script with --bin-dir "
                           "DIR, or under pytest with --bin-dir DIR or OOC_BIN_DIR set")
    return os.path.abspath(d), []


def take_flag(rest, flag):
    """Whether `flag` is among the script's leftover arguments `rest`; removes it (unittest.main
    would refuse it)."""
    if flag in rest:
        rest.remove(flag)
        return True
    return False


def entry(module_name):
    """`module_name` for bin_dir_and_rest and cli_cases.skip_module, as a support module shared by
    several checks passes it: "__main__" where a check in this folder runs as a script (the
    support module reads that script's command line), else the module's own name."""
    f = getattr(sys.modules.get("__main__"), "__file__", None)
    if f and os.path.dirname(os.path.abspath(f)) == HERE:
        return "__main__"
    return module_name
