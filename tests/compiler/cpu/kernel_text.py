"""Reading a lowered program's text: the functions its driver calls.

`Lowered.as_text()` joins the program's module sources in build order: each kernel module
(a loop nest's `kernel` and, when it holds a prange, `kernel_serial`; control flow's
`kernel`), then the driver, which imports the function it calls from each in the same order.
"""
import re

_IMPORT = re.compile(r"^from (\S+) import (\w+) as (k\d+_(?:loop|flow))$", re.M)


def modules(text: str) -> list[str]:
    """The module sources of a lowered program, the driver last."""
    starts = [m.start() for m in re.finditer(r"^# (?:driver \| )?numbax ", text, re.M)]
    return [text[a:b].rstrip("\n") for a, b in zip(starts, [*starts[1:], len(text)])]


def function(module: str, name: str) -> str:
    """The source of function `name` (its decorator line and body) in one module."""
    m = re.search(rf"^@njit\([^\n]*\)\ndef {name}\(.*?(?=^@njit|\Z)", module, re.M | re.S)
    assert m, f"no function {name} in module"
    return m.group(0)


def called(text: str) -> list[str]:
    """Per kernel module, in order, the source of the function the driver calls."""
    *kernels, driver = modules(text)
    names = [m.group(2) for m in _IMPORT.finditer(driver)]
    assert len(names) == len(kernels), (names, len(kernels))
    return [function(src, name) for src, name in zip(kernels, names, strict=True)]


def called_text(text: str) -> str:
    """The functions the driver calls, and the driver, as one text."""
    return "\n\n".join([*called(text), modules(text)[-1]])
