"""Hypothesis replays: the default run is derandomized (a failure in CI replays on any machine);
a long run (GRADCLI_FUZZ_EXAMPLES set) explores new cases and prints the seed of a failure.

The tests live in folders that mirror gradcli's packages; the helpers here (gradcheck,
cli_helpers) and the generators some test modules share (test_fuzz's programs, test_values'
hostile files, the op tables' CASES) are imported by module name from any folder."""
import compileall
import os
import sys

from hypothesis import settings

_HERE = os.path.dirname(os.path.abspath(__file__))
for _folder in sorted(os.listdir(_HERE)):
    if os.path.isfile(os.path.join(_HERE, _folder, "__init__.py")) or _folder.startswith(("_", ".")):
        continue
    if os.path.isdir(os.path.join(_HERE, _folder)) and not _folder.startswith("snippets"):
        sys.path.insert(0, os.path.join(_HERE, _folder))

# The tests start gradcli as a process hundreds of times; where PYTHONDONTWRITEBYTECODE is set
# (as on some CI images), each start would compile the whole package from source again (a
# fifth of the suite's time): it is compiled once here (compileall writes whatever that says).
compileall.compile_dir(os.path.join(os.path.dirname(_HERE), "gradcli"), quiet=1)

settings.register_profile("replay", derandomize=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile("explore" if os.environ.get("GRADCLI_FUZZ_EXAMPLES") else "replay")
