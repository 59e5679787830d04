"""Hypothesis replays: the default run is derandomized (a failure in CI replays on any machine);
a long run (GRADCLI_FUZZ_EXAMPLES set) explores new cases and prints the seed of a failure."""
import os

from hypothesis import settings

settings.register_profile("replay", derandomize=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile("explore" if os.environ.get("GRADCLI_FUZZ_EXAMPLES") else "replay")
