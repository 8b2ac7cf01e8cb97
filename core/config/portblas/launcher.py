"""A portBLAS ``Gemm_Launcher<...>``'s template arguments, named by position.

Two forms are read, told apart by their first argument:

- the seed's (SYCL-BLAS, ``doc/Gemm.md``): ``WgSize, DoubleBuffer, ConflictA, ConflictB, ClSize, TileT,
  TransA, TransB, GemmMemoryType, GemmAlgorithm, GemmVectorization, is_beta_zero, VectorSize, BatchType``;
- portBLAS's current headers (``include/interface/gemm_launcher.h``): the three container types first,
  then the same with ``SymmA, SymmB`` after ``TransB``; ``BatchType`` (default strided) and
  ``UseJointMatrix`` (default false) may be left out.

``TileT`` is ``Tile<ItemRows, ItemCols, WgRows, WgCols, SgRows, SgCols, TlRows, TlCols, ItemBatchs,
WgBatchs, jm_M, jm_N, jm_K, inp_jmT, out_jmT>`` with portBLAS's defaults for what is left out
(``include/operations/blas3_trees.h``). Values are checked for their kind here; what they mean for a
problem and a target is :mod:`.mapping`'s business.
"""
from __future__ import annotations

from dataclasses import dataclass

from kdd.core.config.errors import ConfigError

from .template_args import Arg, parse_args

CONTAINERS = ("container_0_t", "container_1_t", "container_2_t")
SEED_PARAMS = ("WgSize", "DoubleBuffer", "ConflictA", "ConflictB", "ClSize", "TileT", "TransA", "TransB",
               "GemmMemoryType", "GemmAlgorithm", "GemmVectorization", "is_beta_zero", "VectorSize", "BatchType")
CURRENT_PARAMS = (*CONTAINERS, *SEED_PARAMS[:8], "SymmA", "SymmB", *SEED_PARAMS[8:], "UseJointMatrix")
# (name, default) of Tile's parameters, blas3_trees.h
TILE_PARAMS = (("ItemRows", 8), ("ItemCols", 8), ("WgRows", 16), ("WgCols", 16), ("SgRows", 1), ("SgCols", 1),
               ("TlRows", 1), ("TlCols", 1), ("ItemBatchs", 1), ("WgBatchs", 1), ("jm_M", 1), ("jm_N", 1),
               ("jm_K", 1), ("inp_jmT", "float"), ("out_jmT", "float"))
ENUMS = {"GemmMemoryType": ("gemm_memory_t", ("local", "no_local", "subgroup")),
         "GemmAlgorithm": ("gemm_algorithm_t", ("naive", "standard", "tall_skinny")),
         "GemmVectorization": ("gemm_vectorization_t", ("none", "partial", "full")),
         "BatchType": ("gemm_batch_type_t", ("strided", "interleaved"))}
# The dispatcher's template parameters, bound from the problem (backend/*.hpp: `template <bool _t_a, ...>`)
VARIABLES = {"TransA": "_t_a", "TransB": "_t_b", "SymmA": "s_a", "SymmB": "s_b", "is_beta_zero": "is_beta_zero"}
BOOLS = ("DoubleBuffer", "ConflictA", "ConflictB", "TransA", "TransB", "SymmA", "SymmB", "is_beta_zero",
         "UseJointMatrix")
INTS = ("WgSize", "ClSize", "VectorSize")
DEFAULTS = {"BatchType": ("enum", ("gemm_batch_type_t", "strided")), "UseJointMatrix": ("bool", False),
            "SymmA": ("bool", False), "SymmB": ("bool", False)}


@dataclass(frozen=True)
class Launcher:
    """The arguments by parameter name (``args``), those left out at their defaults (``defaulted``),
    the Tile's values by parameter name (``tile``, defaults filled) and the Tile's written arguments."""

    text: str
    form: str                      # "seed" or "current"
    args: dict                     # parameter -> Arg
    tile: dict                     # Tile parameter -> int | str
    tile_args: dict                # Tile parameter -> Arg (written ones only)
    defaulted: tuple[str, ...]

    def value(self, name: str):
        """The argument's value: an int, a bool, an enum member name, or the dispatcher variable's name."""
        if name in self.args:
            a = self.args[name]
            return a.value[1] if a.kind == "enum" else a.value
        return DEFAULTS[name][1][1] if DEFAULTS[name][0] == "enum" else DEFAULTS[name][1]

    def span(self, name: str) -> tuple[int, int]:
        """Where parameter (or Tile parameter) ``name`` is written; the Tile, or the whole text, when it is not."""
        if name in self.args:
            return self.args[name].start, self.args[name].end
        if name in self.tile_args:
            return self.tile_args[name].start, self.tile_args[name].end
        if name in dict(TILE_PARAMS) and "TileT" in self.args:
            return self.args["TileT"].start, self.args["TileT"].end
        return 0, len(self.text)


def parse_launcher(text: str, bindings: dict | None = None) -> Launcher:
    """Read ``text``, the template arguments of a ``Gemm_Launcher`` (or the whole ``Gemm_Launcher<...>``).

    ``bindings``: values of names a header defines before its launcher (``wg_size``); other names are
    allowed only where the dispatcher binds them. Errors are :class:`ConfigError` on the argument.
    """
    bindings = bindings or {}
    args = parse_args(text)
    current = args[0].kind not in ("int", "bool")
    params = CURRENT_PARAMS if current else SEED_PARAMS
    if current:
        rest = len(args) - 3
        if rest in (13, 14):                    # containers with the seed's order (no SymmA/SymmB)
            params = (*CONTAINERS, *SEED_PARAMS)
        elif rest < 15 or rest > 17:
            raise _count_error(args, "the three container types and 15 to 17 more template arguments "
                                     "(WgSize ... is_beta_zero, VectorSize, [BatchType, [UseJointMatrix]])")
    elif len(args) not in (13, 14):
        raise _count_error(args, "14 template arguments (WgSize ... BatchType), or the current form: "
                                 "container_0_t, container_1_t, container_2_t, then 15 to 17 more")
    named = dict(zip(params, args))
    for name, arg in named.items():
        named[name] = _checked(name, arg, bindings)
    tile_arg = named["TileT"]
    tile, tile_args = _tile(tile_arg, bindings)
    defaulted = tuple(p for p in CURRENT_PARAMS if p not in named and p in DEFAULTS)
    return Launcher(text, "current" if current else "seed", named, tile, tile_args, defaulted)


def _count_error(args: list[Arg], want: str) -> ConfigError:
    last = args[-1]
    return ConfigError(f"Gemm_Launcher takes {want}; this has {len(args)}", last.start, last.end)


def _bound_int(arg: Arg, what: str, bindings: dict) -> Arg:
    if arg.kind == "name" and arg.value in bindings:
        return Arg(arg.text, arg.start, arg.end, "int", int(bindings[arg.value]))
    if arg.kind != "int":
        hint = (f"; '{arg.text}' is not a name kdd binds: write its value" if arg.kind == "name" else "")
        raise ConfigError(f"{what} must be an integer, got '{arg.text}'{hint}", arg.start, arg.end)
    if arg.value < 1:
        raise ConfigError(f"{what} must be at least 1, got {arg.value}", arg.start, arg.end)
    return arg


def _checked(name: str, arg: Arg, bindings: dict) -> Arg:
    if name in CONTAINERS:
        if arg.kind not in ("name", "template", "enum"):
            raise ConfigError(f"{name} is a container type, got '{arg.text}'", arg.start, arg.end)
        return arg
    if name in INTS:
        return _bound_int(arg, name, bindings)
    if name in BOOLS:
        var = VARIABLES.get(name)
        if arg.kind == "bool" or (arg.kind == "name" and arg.value == var):
            return arg
        allowed = "true or false" + (f" or the dispatcher's '{var}'" if var else "")
        raise ConfigError(f"{name} must be {allowed}, got '{arg.text}'", arg.start, arg.end)
    if name in ENUMS:
        enum, members = ENUMS[name]
        if arg.kind == "enum" and arg.value[0] == enum and arg.value[1] in members:
            return arg
        if arg.kind == "int" and 0 <= arg.value < len(members):     # static_cast<int> already applied
            return Arg(arg.text, arg.start, arg.end, "enum", (enum, members[arg.value]))
        raise ConfigError(f"{name} must be static_cast<int>({enum}::{'|'.join(members)}), got '{arg.text}'",
                          arg.start, arg.end)
    if arg.kind != "template" or arg.value not in ("Tile", "blas::Tile"):
        raise ConfigError(f"TileT must be Tile<...>, got '{arg.text}'", arg.start, arg.end)
    return arg


def _tile(arg: Arg, bindings: dict) -> tuple[dict, dict]:
    if len(arg.args) > len(TILE_PARAMS):
        extra = arg.args[len(TILE_PARAMS)]
        raise ConfigError(f"Tile takes at most {len(TILE_PARAMS)} parameters, got {len(arg.args)}",
                          extra.start, extra.end)
    values, written = dict(TILE_PARAMS), {}
    for (name, default), a in zip(TILE_PARAMS, arg.args):
        if isinstance(default, str):
            values[name] = a.text.replace(" ", "")
        else:
            a = _bound_int(a, f"Tile's {name}", bindings)
            values[name] = a.value
        written[name] = a
    return values, written
