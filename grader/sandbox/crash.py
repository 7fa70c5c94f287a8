"""What a sandbox's end means, in plain words for the student (never a verdict).

`death_words` turns the exit status of a sandbox that died during a call into a sentence (a
signal named, the memory/CPU/process limits for a SIGKILL) and, from the faulthandler dump of
its worker, the innermost frame of the submission (`student_frame`: "memory.py:7 in boom").
"""

from __future__ import annotations

import os
import signal

from grader import MODULES

SIGNAL_WORDS = {
    signal.SIGSEGV: "segmentation fault",
    signal.SIGBUS: "bus error",
    signal.SIGILL: "illegal instruction",
    signal.SIGFPE: "floating-point exception",
    signal.SIGABRT: "abort",
    signal.SIGKILL: "killed",
    signal.SIGXCPU: "CPU-time limit exceeded",
    signal.SIGXFSZ: "file-size limit exceeded",
    signal.SIGSYS: "a forbidden system call",
}


def death_words(rc: int | None, killed_why: str, init_reports: bool, fault_text: str) -> str:
    """Why the sandbox died: `killed_why` when the grader killed it, else from `rc`, its exit status
    (`init_reports`: a signal arrives as 128 + its number, from the pid-1 init of bubblewrap or from
    the supervisor), and where in the submission (`fault_text`: this call's faulthandler output)."""
    if killed_why:
        return killed_why
    words = "your code ended the sandbox process"
    if rc is not None:
        sig = -rc if rc < 0 else (rc - 128 if rc > 128 and init_reports else 0)
        if sig > 0:
            try:
                name = SIGNAL_WORDS.get(signal.Signals(sig), signal.Signals(sig).name)
            except ValueError:
                name = f"signal {sig}"
            words = f"your code crashed the sandbox ({name})"
            if sig == signal.SIGKILL:
                words = "the sandbox was killed (memory, CPU-time or process limit)"
        else:
            words = f"your code ended the sandbox process (exit status {rc})"
    where = student_frame(fault_text)
    return words + (f" at {where}" if where else "")


def student_frame(fault_text: str) -> str:
    """The innermost frame in the submission from a faulthandler dump ("memory.py:7 in boom")."""
    import re

    frames = re.findall(r'File "([^"]+)", line (\d+) in (\S+)', fault_text)
    for filename, line, func in frames:  # faulthandler lists the innermost frame first
        name = os.path.basename(filename)
        if name.removesuffix(".py") in MODULES and "/tests/" not in filename and "/grader/" not in filename:
            return f"{name}:{line} in {func}"
    return ""
