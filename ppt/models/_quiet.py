"""Keep library chatter off stdout while models load (stdout carries JSONL only)."""

from __future__ import annotations

import contextlib
import io
import sys


def _stderr_is_tty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


@contextlib.contextmanager
def quiet_loading(progress: bool | None = None):
    """Redirect stdout to stderr, set transformers' logging to errors only, and, when stderr is not
    a terminal (or ``progress`` is False), hold back progress bars: what libraries write to stderr is
    buffered and replayed only if loading fails."""
    from ppt.progress import run_quiet

    if run_quiet():  # --quiet: no "Loading weights" bar, even on a terminal
        progress = False
    try:
        import transformers

        transformers.logging.set_verbosity_error()
        if progress is False or (progress is None and not _stderr_is_tty()):
            transformers.utils.logging.disable_progress_bar()
    except ImportError:  # pragma: no cover - transformers is a dependency
        pass
    show = _stderr_is_tty() if progress is None else progress
    real_err = sys.stderr
    with contextlib.ExitStack() as stack:
        stack.enter_context(contextlib.redirect_stdout(real_err))
        buf = None
        if not show:
            buf = io.StringIO()
            stack.enter_context(contextlib.redirect_stderr(buf))
        try:
            yield
        except BaseException:
            if buf is not None and buf.getvalue():
                real_err.write(buf.getvalue()[-4000:])
            raise
