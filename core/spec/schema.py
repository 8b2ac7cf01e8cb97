"""The schema of kernel config documents: which tables and keys exist, their types and docs.

One :class:`TableSpec` of :class:`KeySpec` per document table, all in
:data:`SCHEMA`. The ``[config]`` knobs are not listed here: they come from
:data:`kdd.core.config.knobs.KNOBS`, the single definition of the kernel
parameters, and :func:`knob_key` turns each into a key spec. ``docs/config.md``
documents the same keys for people.
"""
from __future__ import annotations

import typing
from dataclasses import dataclass, fields

from kdd.core.config import KNOBS, Buffering, Knob, Pipeline, Subtiles
from kdd.core.passes.kernel_pipeline import KERNEL_PIPELINE
from kdd.core.passes.trace_view import BUILD
from kdd.core.targets import TARGETS

# What [check] stage may name: the final IR, the builder's, or the IR after a pass.
ASM_STAGE = "asm"   # the assembled Xe kernel in the simulator (kdd check --asm)
CHECK_STAGES = ("final", ASM_STAGE, BUILD, *KERNEL_PIPELINE.names())

# Types a key can have, with the article used in messages ("must be an integer").
TYPE_NAMES = {
    "string": "a string",
    "integer": "an integer",
    "float": "a number",
    "boolean": "a boolean",
    "array": "an array",
    "table": "a table",
    "datetime": "a date/time",
}


@dataclass(frozen=True)
class KeySpec:
    """One key: the TOML types it takes, allowed values (empty: any), whether required, its doc.

    ``items`` is the type of array items; ``keys`` the sub-keys of a key
    whose value may be a table (``slm = { bufs = 3 }``), ``any_keys`` when
    that table takes any key (a tile: ``iter = { mb = 32, oc = 32 }``).
    ``aliases`` are other spellings people reach for (oneDNN's ``l`` for
    ``loop``), used for did-you-mean hints.
    """

    name: str
    types: tuple[str, ...]
    doc: str
    allowed: tuple = ()
    required: bool = False
    items: str | None = None
    keys: tuple["KeySpec", ...] = ()
    any_keys: bool = False
    example: str = ""
    aliases: tuple[str, ...] = ()

    @property
    def type_name(self) -> str:
        """The accepted types in words: "an integer or a table"."""
        return " or ".join(TYPE_NAMES[t] for t in self.types)

    def key(self, name: str) -> "KeySpec | None":
        return next((k for k in self.keys if k.name == name), None)


@dataclass(frozen=True)
class TableSpec:
    """One ``[table]`` (the root table has the empty name) and its keys."""

    name: str
    doc: str
    keys: tuple[KeySpec, ...]
    required: bool = False

    def key(self, name: str) -> KeySpec | None:
        return next((k for k in self.keys if k.name == name), None)


ROOT = TableSpec("", "Top-level keys, before any table.", (
    KeySpec("extends", ("string",),
            "Path of another kernel config, relative to this file, whose tables this file starts from; "
            "keys written here override the inherited ones, key by key.",
            example='"base.kernel.toml"'),
))

PROBLEM = TableSpec("problem", "The computation: a convolution or a GEMM, in benchdnn's terms.", (
    KeySpec("op", ("string",), "The primitive: `conv` (convolution) or `gemm` (matrix multiplication).",
            allowed=("conv", "gemm"), required=True, example='"conv"'),
    KeySpec("prop", ("string",),
            "Propagation kind, as benchdnn's `--dir`: `fwd` (forward), `bwd_d` (backward by data), "
            "`bwd_w` (backward by weights). Default `fwd`.",
            allowed=("fwd", "bwd_d", "bwd_w"), example='"fwd"'),
    KeySpec("shape", ("string",),
            "The problem descriptor in benchdnn's language: `mb32ic64ih56oc64oh56kh3ph1` for a convolution, "
            "`m512n512k256` or `512x256:256x512` for a GEMM.",
            required=True, example='"mb32ic64ih56oc64oh56kh3ph1"'),
    KeySpec("types", ("string",),
            "Data types as `src:wei:dst` (oneDNN's `--dt` order; a GEMM's `src:wei:dst` are A:B:C); "
            "one type alone applies to all three. Default `f32`.",
            example='"f16:f16:f16"'),
    KeySpec("src", ("string",), "Memory layout tag of the source (activations), e.g. `axb`, `abx`, `aBx16b`.",
            example='"axb"'),
    KeySpec("wei", ("string",), "Memory layout tag of the weights, e.g. `axcb`, `abx`, `ABx16a16b`.",
            example='"axcb"'),
    KeySpec("dst", ("string",), "Memory layout tag of the destination, e.g. `axb`.", example='"axb"'),
    KeySpec("post_ops", ("array",),
            "Post-operations applied to the destination in order, in benchdnn's `--attr-post-ops` syntax "
            "(`relu`, `sum`, `linear:2:1`, ...).",
            items="string", example='["relu"]'),
    KeySpec("scales", ("string",),
            "Grouped scales of integer GEMM weights, benchdnn's `--attr-scales` value "
            "`wei:per_ocic:TYPE:GKxGN`: one scale per GK rows (K) x GN columns (N) of the weights; or "
            "`wei:per_oc:TYPE`, one per output channel (a forward convolution's form).",
            example='"wei:per_ocic:f16:128x1"'),
    KeySpec("zero_points", ("string",),
            "Grouped zero points of integer GEMM weights (with `scales`), benchdnn's `--attr-zero-points` "
            "value `wei:per_ocic:u8:GKxGN` (or `wei:per_oc:u8`), subtracted from each weight before its scale.",
            example='"wei:per_ocic:u8:128x1"'),
    KeySpec("fpmath", ("string",),
            "The type decompressed weights are multiplied in, benchdnn's `--attr-fpmath` value `f16:true` "
            "(`:true`: it applies to integer weights).",
            example='"f16:true"'),
), required=True)

TARGET = TableSpec("target", "The hardware the kernel is generated for.", (
    KeySpec("hw", ("string",),
            "Target: `xehpg` (Intel Arc, DG2), `xehpc` (Intel Data Center GPU Max, PVC), `xe2` (Intel Arc B580), "
            "`sm_90` (NVIDIA Hopper).",
            allowed=tuple(TARGETS), required=True, example='"xehpg"'),
), required=True)

CHECK = TableSpec("check", "The correctness check run on save: the generated kernel against a reference.", (
    KeySpec("shape", ("string",),
            "A reduced problem descriptor for the check (same language as `[problem] shape`); "
            "default: the problem's own shape.",
            example='"mb2ic64ih8oc64oh8kh3ph1"'),
    KeySpec("seed", ("integer",), "Seed of the random inputs. Default 0.", example="0"),
    KeySpec("tol", ("float",),
            "Largest accepted relative error against the reference; default by destination type.",
            example="1e-3"),
    KeySpec("stage", ("string",),
            "What the check runs. Default: the code, the deepest artifact kdd runs (Xe: the assembled binary "
            "in kdd's instruction-level simulator; sm_90: the PTX in kdd's PTX simulator); `asm` says the "
            "same. An IR stage instead: `final` (after every pass), `build` (the builder's IR) or the name "
            "of a pass (the IR after it), run by the interpreter.",
            allowed=CHECK_STAGES, example='"build"'),
))


# The TOML forms of each knob kind, and the value class whose fields are the keys of its table form.
_KNOB_FORMS: dict[str, tuple[tuple[str, ...], type | None]] = {
    "choice": (("string",), None),
    "int": (("integer",), None),
    "tile": (("string", "table"), None),
    "buffering": (("integer", "table"), Buffering),
    "flags": (("string", "table"), Pipeline),
    "subtiles": (("string", "integer", "table"), Subtiles),
    "bool": (("boolean", "integer"), None),
    "walk": (("string",), None),
    "layout": (("string",), None),
}
_FIELD_TYPES = {"int": "integer", "bool": "boolean"}


def knob_key(knob: Knob) -> KeySpec:
    """The ``[config]`` key of one knob of :data:`KNOBS`."""
    types, table_form = _KNOB_FORMS[knob.kind]
    sub_keys = ()
    if table_form is not None:
        hints = typing.get_type_hints(table_form)
        # Prefetching has no GRF staging buffers nor SLM sync; its codec says so.
        names = [f.name for f in fields(table_form)
                 if f.name not in ("gmem", "sync") or getattr(knob.codec, "allow_gmem", True)]
        sub_keys = tuple(KeySpec(name, (_FIELD_TYPES[hints[name].__name__],),
                                 f"Field `{name}` of the table form of `{knob.key}`.") for name in names)
    line_value = knob.example.split("=", 1)[1]
    example = toml_literal(knob.codec.to_toml(knob.codec.parse(line_value)))
    return KeySpec(knob.key, types, knob.doc, allowed=tuple(getattr(knob.codec, "choices", ())), keys=sub_keys,
                   any_keys="table" in types and table_form is None, example=example,
                   aliases=tuple(k for k in knob.line_keys if k != knob.key))


def toml_literal(value) -> str:
    """``value`` written as TOML (the scalars and inline tables knob examples need)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml_literal(v)}" for k, v in value.items()) + " }"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(value)


LINE = KeySpec("line", ("string",),
               "A whole oneDNN kernel config line, `key=value` pairs separated by spaces "
               "(`simd=8 l=kh3kw3ic4 T=oc4ow4 i=mb32oc32ic16 bufs=3`). A knob is set either by its own key "
               "or in the line, not both.",
               example='"simd=8 l=kh3kw3ic4 T=oc4ow4 i=mb32oc32ic16 bufs=3"')

PORTBLAS = KeySpec("portblas", ("string",),
                   "The template arguments of a portBLAS `Gemm_Launcher<...>`, pasted from a backend header "
                   "(the seed's 14-argument form, or the current one starting with the container types); "
                   "the dispatcher's `_t_a`, `_t_b`, `s_a`, `s_b`, `is_beta_zero` are bound from [problem]. "
                   "It sets the knobs it maps to (docs/config.md, portBLAS launchers); hover shows the mapping.",
                   example='"64, false, false, false, 64, Tile<8, 8, 8, 8>, _t_a, _t_b, '
                           'static_cast<int>(gemm_memory_t::no_local), static_cast<int>(gemm_algorithm_t::standard), '
                           'static_cast<int>(gemm_vectorization_t::partial), is_beta_zero, 1, '
                           'static_cast<int>(gemm_batch_type_t::strided)"')

CONFIG = TableSpec("config", "Kernel parameters (knobs); every knob left out comes from the default heuristic.",
                   (*(knob_key(k) for k in KNOBS), LINE, PORTBLAS))

SCHEMA: tuple[TableSpec, ...] = (ROOT, PROBLEM, TARGET, CONFIG, CHECK)


def did_you_mean(name: str, candidates, aliases: dict[str, str] | None = None) -> str:
    """`` (did you mean 'x'?)`` for the closest candidate to ``name``, or an empty string.

    ``aliases`` maps other spellings to candidates; an exact alias wins.
    """
    if aliases and name in aliases:
        return f" (did you mean '{aliases[name]}'?)"
    import difflib  # only for a misspelt name: difflib costs every compile's start-up time

    close = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""
