"""Random edits of real kernel configs, for the tests that say no edit can break the document layer."""
from pathlib import Path

from hypothesis import strategies as st

# Characters that matter to TOML and to the values kdd reads, non-ASCII ones, and fragments that
# build or break structure.
PIECES = st.one_of(
    st.characters(),
    st.sampled_from(list("\"'[]{}=,.#\\\n\r\t :+-_0123456789xabcnhwkmo")),
    st.sampled_from(['"""', "'''", "é", "😀", "\r\n", "\n[config]\n", "\n[[x]]\n", "\n[target]\nhw = ", "x = ",
                     "a.b = 1\n", "true", "1e3", "1979-05-27", '"mb1ic1"', "{ bufs = 3 }", "[1, 2]", "simd = 8\n",
                     'tg = "oc8"\n', 'iter = "m16n8k16"\n', 'line = "T=oc2 i=mb8"\n', '"sm_90"', '"xehpc"',
                     '"aBx16b"', '"NChw32n32c"', '"relu:2"', "ic0", "kh9", "g3", "mb", "sh2",
                     'extends = "resnet50_3x3.kernel.toml"\n', "\n[config.unroll]\n", "\n[config.slm]\nbufs = 2\n",
                     "\n[problem.src]\n", "ih99999999999", 'tg = "oc99999ow99999"\n',
                     'iter = "mb9999999oc99999"\n']),
)


@st.composite
def edited(draw, texts: dict[str, str]):
    """``(name, text)``: one of ``texts`` with one to four characters or pieces inserted, deleted or replaced."""
    name = draw(st.sampled_from(sorted(texts)))
    text = texts[name]
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["insert", "delete", "replace"]))
        if op == "insert":
            text = text[:i] + draw(PIECES) + text[i:]
        elif op == "delete":
            text = text[:i] + text[i + draw(st.integers(1, 8)):]
        else:
            text = text[:i] + draw(PIECES) + text[i + 1:]
    return name, text


def reader(texts: dict[str, str]):
    """A ``read_text`` serving ``texts`` by file name from memory (an edited ``extends`` may name any file)."""
    def read(path):
        name = Path(path).name
        if name not in texts:
            raise FileNotFoundError(2, "No such file or directory", path)
        return texts[name]
    return read
