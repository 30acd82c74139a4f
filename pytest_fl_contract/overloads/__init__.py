"""The generic overload family: every overload the installed FlagGems registers
(``table``), inputs for each drawn from PyTorch's OpInfo database (``samples``), re-drawn at
tile edges and in other layouts (``boundary``), and a per-case verdict against float64 torch
on the CPU (``oracle``).

The deep families (reductions, layers, tensor ops) hold a few dozen ops to exact contracts; a
vendor lane ships hundreds more.  This family gives each of those a verdict too, with inputs
nobody wrote by hand, so an op without a row is not an op without a test.  Nothing here
imports torch at module import: the plugin loads without it.
"""
