"""What the GPU tests may ask of the GPU they run on, as pure functions of its properties.

The `flops` GPU tests time 16-bit matmuls on the tensor cores: faster than fp32, a fraction of the
datasheet peak, in agreement with CUDA events.  Not every GPU a student is handed (Colab: T4, L4,
A100) does that the same way, and a correct student must pass on each:

* bfloat16 tensor cores came with Ampere (compute capability 8.0: A100, then L4, H100, H200).
  Colab's T4 (Turing, 7.5) has float16 tensor cores only: it runs a bfloat16 matmul without them,
  slower than fp32, and its datasheet has no bfloat16 figure.  The tests time
  ``tensor_core_dtype(torch.cuda.get_device_capability())`` instead of bfloat16.
* The T4 (70 W) and the L4 (72 W) are low-power boards: under a sustained matmul they lower their
  clocks to stay within the power limit, far below the clock their datasheet peak assumes (NVIDIA's
  forum: about 24 of the T4's 65 TFLOP/s for a 4096² fp16 matmul with cuBLAS, MFU 0.37; a
  published PyTorch run on an L4: 54 to 59 of its 121 for 8192², MFU 0.44 to 0.49).  The MFU a
  correct `time_matmul` must show there is `mfu_floor(name)`, a quarter instead of a half.

Pure functions of the capability and the device name, so the kit's own tests check them without a
GPU (tests/kit/test_test_helpers.py).
"""

from __future__ import annotations

#: The first compute capability with bfloat16 tensor cores (Ampere, sm_80).
BF16_TENSOR_CORES = (8, 0)
#: The model words (as `flops.get_promised_flop_per_sec` matches them) of the power-capped boards.
POWER_CAPPED = frozenset({"T4", "L4"})


def tensor_core_dtype(capability: tuple[int, int]) -> str:
    """The 16-bit dtype, by name, whose matmuls run on the tensor cores of a GPU of compute
    capability `capability` (``torch.cuda.get_device_capability()``): "bfloat16" from 8.0 (A100,
    L4, H100, H200), "float16" below (Volta, Turing: V100, T4)."""
    major, minor = capability
    return "bfloat16" if (major, minor) >= BF16_TENSOR_CORES else "float16"


def mfu_floor(device_name: str) -> float:
    """The MFU a large 16-bit matmul, timed correctly, reaches at least on the GPU `device_name`
    (``torch.cuda.get_device_name()``): 0.5 of the dense datasheet peak, 0.25 on the power-capped
    T4 and L4 ("Tesla T4", "NVIDIA L4"; a word of the name, so not an "NVIDIA L40S")."""
    words = set(device_name.replace("-", " ").split())
    return 0.25 if words & POWER_CAPPED else 0.5
