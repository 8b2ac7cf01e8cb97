"""Convolution and GEMM problems: benchdnn descriptors, data types, post-ops, batch files.

The public API, one concept per module:

* :mod:`.conv_shape` — ``ConvShape``, ``parse_conv_shape`` (benchdnn conv descriptors)
* :mod:`.gemm_shape` — ``GemmShape``, ``parse_gemm_shape`` (``MxK:KxN``, ``m..n..k..``)
* :mod:`.data_types` — ``DataTypes``, ``parse_data_types`` (``--dt`` form)
* :mod:`.post_ops` — ``Eltwise``, ``Binary``, ``Sum``, ``Bias``, ``Scale`` and their parsers
* :mod:`.gemm_dims` — ``GemmDims``: how a problem maps onto a batched GEMM
* :mod:`.problem` — ``Problem`` and text helpers
* :mod:`.batch_file` — ``read_batch_file``: benchdnn batch files
* :mod:`.errors` — ``ProblemError``: every parse error, with a span

:mod:`.batch_file`'s names load it on first use (:mod:`kdd.core.lazy_exports`): a compile reads no batch file.
"""
from kdd.core.lazy_exports import lazy_exports

from .conv_shape import KEYS as CONV_KEYS
from .conv_shape import Axis, ConvShape, compute_out, compute_pad, parse_conv_shape, right_pad
from .data_types import DataTypes, parse_data_types, parse_element_type
from .errors import ProblemError
from .frozen_map import FrozenMap
from .gemm_dims import GemmDims
from .gemm_shape import GemmShape, parse_gemm_shape
from .post_ops import (Bias, Binary, Eltwise, PostOp, Scale, Sum, format_post_ops, parse_post_op,
                       parse_post_ops)
from .problem import OPS, PROPS, TENSORS, Problem, detect_op, parse_shape, problem_from_text

__all__ = [
    "Axis", "BatchEntry", "BatchFileError", "Bias", "Binary", "CONV_KEYS", "ConvShape", "DataTypes",
    "Eltwise", "FrozenMap", "GemmDims", "GemmShape", "OPS", "PROPS", "PostOp", "Problem",
    "ProblemError", "Scale", "Sum", "TENSORS", "compute_out", "compute_pad", "detect_op",
    "format_post_ops", "parse_batch", "parse_conv_shape", "parse_data_types", "parse_element_type",
    "parse_gemm_shape", "parse_post_op", "parse_post_ops", "parse_shape", "problem_from_options",
    "problem_from_text", "read_batch_file", "right_pad",
]

__getattr__ = lazy_exports(__name__, dict.fromkeys(
    ("BatchEntry", "BatchFileError", "parse_batch", "problem_from_options", "read_batch_file"), "batch_file"))
