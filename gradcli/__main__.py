# `python -m gradcli`: Ctrl-C is quiet from this first line on (one line, exit 130), also while
# gradcli.cli is imported; gradcli.cli's start-up takes over from there.
import _signal
import os


def _interrupted(signum, frame):
    try:
        os.write(2, b"gradcli: interrupted\n")
    finally:
        os._exit(128 + signum)


if _signal.getsignal(_signal.SIGINT) is not _signal.SIG_IGN:
    _signal.signal(_signal.SIGINT, _interrupted)

from gradcli.cli import main  # noqa: E402

main()
