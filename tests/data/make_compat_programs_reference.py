"""Records JAX's outputs of the programs in tests/compat/programs/ (taken from JAX's docs and
examples) into compat_programs_jax_reference.json. Run once, with jax installed, from the
repository root:

    python tests/data/make_compat_programs_reference.py [name ...]

JAX runs with its own defaults (jax_enable_x64=False) on CPU, as the tutorials do; numbax runs
the same programs with the same defaults (numbax.install_as_jax). Names given on the command
line are recorded again and the other entries kept. The numbax tests read the JSON only."""
import json
import pathlib
import sys

import jax

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))
from tests.compat.programs import encode, load_all  # noqa: E402

OUT = pathlib.Path(__file__).with_name("compat_programs_jax_reference.json")


def main(names: list[str]) -> None:
    programs = load_all()
    record = json.loads(OUT.read_text()) if names and OUT.exists() else {}
    record = {k: v for k, v in record.items() if k in programs}
    record["jax_version"] = jax.__version__
    failed = []
    for name in names or programs:
        try:
            record[name] = encode(programs[name].run())
        except Exception as err:  # report every program that fails, then stop
            failed.append(f"{name}: {type(err).__name__}: {err}")
    OUT.write_text(json.dumps(record, indent=None, sort_keys=True, separators=(",", ":"))
                   .replace('},"', '},\n"') + "\n")
    if failed:
        sys.exit("JAX failed these programs:\n" + "\n".join(failed))


if __name__ == "__main__":
    main(sys.argv[1:])
