# `python -m gradcli`: a Ctrl-C from this first line on is held while gradcli.cli is imported, and
# delivered once gradcli.cli has installed its quiet handler (gradcli/cli/streams.py: one line on
# stderr, exit 130), which takes over from there.
import _signal

_held_mask = None
if hasattr(_signal, "pthread_sigmask"):
    _held_mask = _signal.pthread_sigmask(_signal.SIG_BLOCK, (_signal.SIGINT,))
try:
    from gradcli.cli import main
finally:
    if _held_mask is not None:
        _signal.pthread_sigmask(_signal.SIG_SETMASK, _held_mask)

main()
