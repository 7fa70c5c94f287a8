"""PyTorch primitives and resource accounting: the assignment's modules.

Each module is a file of functions (and a few classes) to implement.  Modules may use one
another with relative imports, e.g. ``from .memory import bytes_per_parameter``.
"""
