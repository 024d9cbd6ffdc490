"""Reading a lowered program's text: the functions its driver calls.

`Lowered.as_text()` joins the program's module sources in build order: each kernel module
(a loop nest's `kernel` and, when it holds a prange, `kernel_serial`; control flow's
`kernel`), then the driver, which imports from each in the same order the function it calls
serially (k<j>_loop, k<j>_flow) and, where the thread runtime may run it in parallel, the
prange variant (k<j>_par). A row kernel over wide rows runs each row in a function of its own
(`kernel_row`, outline.row_functions), which `called` appends to its caller's source.
"""
import re

_IMPORT = re.compile(r"^from (\S+) import (\w+) as k(\d+)_(loop|flow|par)$", re.M)
_ROW_CALL = re.compile(r"^ +(kernel_row\w*)\(i0, ", re.M)


def modules(text: str) -> list[str]:
    """The module sources of a lowered program, the driver last."""
    starts = [m.start() for m in re.finditer(r"^# (?:driver \| )?numbax ", text, re.M)]
    return [text[a:b].rstrip("\n") for a, b in zip(starts, [*starts[1:], len(text)])]


def function(module: str, name: str) -> str:
    """The source of function `name` (its decorator line and body) in one module."""
    m = re.search(rf"^@njit\([^\n]*\)\ndef {name}\(.*?(?=^@njit|\Z)", module, re.M | re.S)
    assert m, f"no function {name} in module"
    return m.group(0)


def called(text: str, parallel: bool = True) -> list[str]:
    """Per kernel module, in order, the source of the function the driver calls: its prange
    variant where the driver may run one (unless `parallel` is False), else the serial one;
    followed by the row function it calls, if any."""
    *kernels, driver = modules(text)
    per_step: dict[int, dict[str, str]] = {}
    for m in _IMPORT.finditer(driver):
        per_step.setdefault(int(m.group(3)), {})[m.group(4)] = m.group(2)
    names = [fns.get("par") if parallel and "par" in fns else fns.get("loop", fns.get("flow"))
             for _, fns in sorted(per_step.items())]
    assert len(names) == len(kernels), (names, len(kernels))
    return [_with_row(src, function(src, name)) for src, name in zip(kernels, names, strict=True)]


def _with_row(module: str, caller: str) -> str:
    row = _ROW_CALL.search(caller)
    return caller if row is None else caller + function(module, row.group(1))


def called_text(text: str) -> str:
    """The functions the driver calls, and the driver, as one text."""
    return "\n\n".join([*called(text), modules(text)[-1]])
