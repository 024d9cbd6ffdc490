"""Records JAX's config option names with their defaults, and which top-level jax names are
config context managers, into config_jax_reference.json (run once, with jax):

    /work/jaxenv/bin/python tests/data/make_config_reference.py
"""
import enum
import json
import pathlib

import jax

OUT = pathlib.Path(__file__).with_name("config_jax_reference.json")


def plain(value):
    if isinstance(value, enum.Enum):
        return value.name.lower() if isinstance(value.value, int) else value.value
    return value


def main() -> None:
    defaults = {name: plain(value) for name, value in jax.config.values.items()}
    states = sorted(n for n in dir(jax) if type(getattr(jax, n)).__name__ == "State")
    OUT.write_text(json.dumps({"jax_version": jax.__version__, "defaults": defaults,
                               "states": states}, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
