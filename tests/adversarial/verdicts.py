"""Submissions that try to pass by patching what a probe measures, graded in the sandbox.

A probe returns observations and the trusted test judges them; these submissions patch the
instruments next to them (torch's gradcheck, storage pointers, the clock, the process's own
peak-memory mark) or return the constant a test once compared with.  Each has an honest twin:
the same wrong code without the trick.  Graded by `tests/kit/test_verdicts.py` with
`grader grade` (bubblewrap), the trick must not score above its twin.
"""

from __future__ import annotations

import shutil
import textwrap
from dataclasses import dataclass
from pathlib import Path

from grader import KIT_ROOT

MODULES = ("views", "gradients", "flops", "data")


@dataclass(frozen=True)
class VerdictCase:
    name: str
    module: str
    trick: str  # appended to the solution module
    twin: str  # the same wrong code, honestly
    why: str


def build(name: str, module: str, code: str, root: Path) -> Path:
    """A release-style folder `root/name/assignment/` holding the solutions with `code` appended to `module`."""
    dest = root / name / "assignment"
    dest.mkdir(parents=True)
    for path in (KIT_ROOT / "solutions").glob("*.py"):
        shutil.copy2(path, dest / path.name)
    text = (dest / f"{module}.py").read_text().rstrip() + "\n\n\n" + textwrap.dedent(code).strip() + "\n"
    (dest / f"{module}.py").write_text(text)
    return root / name


_WRONG_BACKWARD = """
    _Honest = MatmulFunction

    class MatmulFunction(_Honest):
        @staticmethod
        def backward(ctx, grad_out):
            a, b = ctx.saved_tensors
            return grad_out @ b, a @ grad_out   # wrong: no transposes (right only for square inputs)
"""

_COPY_TRANSPOSE = """
    def transpose_view(x, dim0, dim1):
        size, stride = list(x.shape), list(x.stride())
        size[dim0], size[dim1] = size[dim1], size[dim0]
        stride[dim0], stride[dim1] = stride[dim1], stride[dim0]
        return x.as_strided(size, stride, x.storage_offset()).clone()   # a copy, not a view
"""

_WHOLE_FILE = """
    def get_batch(data, batch_size, context_length, device):
        import numpy as _np
        whole = _np.array(data[: 2**28])   # copies (up to) 512 MiB of the memmap into memory
        starts = torch.randint(0, len(whole) - context_length, (batch_size,))
        x = torch.stack([torch.from_numpy(whole[s:s + context_length].astype(_np.int64)) for s in starts.tolist()])
        y = torch.stack([torch.from_numpy(whole[s + 1:s + 1 + context_length].astype(_np.int64)) for s in starts.tolist()])
        {reset}
        return x.to(device), y.to(device)
"""

CASES = [
    VerdictCase("patched_gradcheck", "gradients", _WRONG_BACKWARD + """
    import torch.autograd as _ag
    _ag.gradcheck = lambda *args, **kwargs: True
    _ag.gradgradcheck = lambda *args, **kwargs: True
    torch.autograd.gradcheck = _ag.gradcheck
    """, _WRONG_BACKWARD, "wrong backward, torch.autograd.gradcheck patched to say True"),
    VerdictCase("patched_storage_pointer", "views", _COPY_TRANSPOSE + """
    _real_ptr = torch.Tensor.data_ptr
    torch.Tensor.data_ptr = lambda self: 4096
    torch.UntypedStorage.data_ptr = lambda self: 4096
    """, _COPY_TRANSPOSE, "returns a copy and patches data_ptr so every tensor seems to share storage"),
    VerdictCase("constant_clock", "flops", """
    def time_matmul(a, b, trials=10):
        return 1.0   # the constant the fake-clock test once compared with
    """, """
    def time_matmul(a, b, trials=10):
        raise RuntimeError("broken on purpose")
    """, "time_matmul returns the public constant"),
    VerdictCase("reset_peak_memory", "data", _WHOLE_FILE.replace("{reset}", """
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")   # hide the peak from a self-measurement
        except OSError:
            pass
        del whole
        import gc as _gc
        _gc.collect()"""), _WHOLE_FILE.replace("{reset}", "del whole"),
        "reads the whole token file, then resets its own peak-memory mark"),
]
