"""Records JAX's outputs (x64) for the small jax.scipy modules - optimize.minimize (BFGS),
ndimage.map_coordinates, interpolate.RegularGridInterpolator, cluster.vq.vq,
integrate.trapezoid, spatial.transform - into scipy_small_jax_reference.json:

    /work/jaxenv/bin/python tests/data/make_scipy_small_reference.py

tests/scipy/test_small_modules.py runs the same programs on numbax (the inputs below are
shared through `inputs()`, which needs numpy only) and compares."""
import json
import pathlib

import numpy as np

OUT = pathlib.Path(__file__).with_name("scipy_small_jax_reference.json")


def inputs() -> dict:
    rng = np.random.default_rng(11)
    image = np.arange(20.0).reshape(4, 5) ** 1.5
    coords = [np.array([0.5, 2.2, -0.3, 1.0, 3.7, 4.6, -1.2]),
              np.array([1.5, 3.9, 0.2, -1.0, 4.4, 2.0, 5.3])]
    quats = rng.normal(size=(6, 4))
    degenerate = np.array([[0.0, 0.0, 0.0, 1.0], [0.0, 0.7071067811865476, 0.0,
                                                    0.7071067811865476],
                           [0.5, 0.5, 0.5, 0.5], [1.0, 0.0, 0.0, 0.0]])
    return {
        "x0_rosen2": [-1.2, 1.0], "x0_rosen4": [-1.2, 1.0, 0.5, -0.3], "x0_quad": [3.0, -2.0, 1.0],
        "quad_center": [1.0, 2.0, 3.0], "quad_scale": [1.0, 10.0, 100.0],
        "image": image.tolist(), "coords": [c.tolist() for c in coords],
        "int_image": (np.arange(20).reshape(4, 5) * 7).tolist(),
        "grid_x": [0.0, 0.5, 1.5, 3.0], "grid_y": [-1.0, 0.0, 2.0],
        "grid_values": rng.normal(size=(4, 3, 2)).tolist(),
        "grid_points": (rng.uniform(-0.5, 3.5, size=(7, 2)) * [1, 1]).tolist(),
        "obs": rng.normal(size=(8, 3)).tolist(), "code_book": rng.normal(size=(4, 3)).tolist(),
        "y": rng.normal(size=(3, 6)).tolist(), "x": np.sort(rng.uniform(0, 5, 6)).tolist(),
        "quats": quats.tolist(), "degenerate": degenerate.tolist(),
        "vectors": rng.normal(size=(6, 3)).tolist(), "times": [0.0, 1.0, 2.5, 3.0, 4.0, 6.0],
        "slerp_times": [0.0, 0.4, 2.0, 2.75, 5.9, 6.0],
        "euler_angles": rng.uniform(-3, 3, size=(5, 3)).tolist(),
    }


def record() -> dict:
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from jax.scipy import integrate, interpolate, ndimage, optimize
    from jax.scipy.cluster import vq
    from jax.scipy.spatial.transform import Rotation, Slerp

    inp = {k: np.asarray(v) for k, v in inputs().items() if k != "coords"}
    coords = [np.asarray(c) for c in inputs()["coords"]]
    out: dict = {"jax_version": jax.__version__}

    def rosen(x):
        return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)

    def quad(x, center, scale):
        return jnp.sum(scale * (x - center) ** 2) + jnp.exp(0.1 * x[0])

    runs = {
        "rosen2": optimize.minimize(rosen, inp["x0_rosen2"], method="BFGS"),
        "rosen4": optimize.minimize(rosen, inp["x0_rosen4"], method="BFGS"),
        "rosen2_maxiter3": optimize.minimize(rosen, inp["x0_rosen2"], method="bfgs",
                                             options={"maxiter": 3}),
        "quad": optimize.minimize(quad, inp["x0_quad"], (inp["quad_center"], inp["quad_scale"]),
                                  method="BFGS", options={"gtol": 1e-8}),
    }
    out["minimize"] = {name: {k: np.asarray(v).tolist() for k, v in r._asdict().items()}
                       for name, r in runs.items()}
    out["map_coordinates"] = {
        f"{mode}-{order}": np.asarray(ndimage.map_coordinates(
            inp["image"], coords, order, mode=mode, cval=-1.5)).tolist()
        for mode in ("constant", "nearest", "wrap", "mirror", "reflect") for order in (0, 1)}
    out["map_coordinates_int"] = np.asarray(ndimage.map_coordinates(
        inp["int_image"], coords, 1, mode="nearest")).tolist()
    grid = (inp["grid_x"], inp["grid_y"])
    out["interp"] = {
        "linear": np.asarray(interpolate.RegularGridInterpolator(
            grid, inp["grid_values"])(inp["grid_points"])).tolist(),
        "nearest": np.asarray(interpolate.RegularGridInterpolator(
            grid, inp["grid_values"], method="nearest")(inp["grid_points"])).tolist(),
        "extrapolate": np.asarray(interpolate.RegularGridInterpolator(
            grid, inp["grid_values"], fill_value=None)(inp["grid_points"])).tolist(),
    }
    code, dist = vq.vq(inp["obs"], inp["code_book"])
    out["vq"] = [np.asarray(code).tolist(), np.asarray(dist).tolist()]
    out["trapezoid"] = [np.asarray(integrate.trapezoid(inp["y"])).tolist(),
                        np.asarray(integrate.trapezoid(inp["y"], inp["x"])).tolist(),
                        np.asarray(integrate.trapezoid(inp["y"], dx=0.5, axis=0)).tolist()]
    r = Rotation.from_quat(inp["quats"])
    d = Rotation.from_quat(inp["degenerate"])
    out["rotation"] = {
        "matrix": np.asarray(r.as_matrix()).tolist(),
        "rotvec": np.asarray(r.as_rotvec()).tolist(),
        "mrp": np.asarray(r.as_mrp()).tolist(),
        "magnitude": np.asarray(r.magnitude()).tolist(),
        "apply": np.asarray(r.apply(inp["vectors"])).tolist(),
        "apply_inv": np.asarray(r.apply(inp["vectors"], inverse=True)).tolist(),
        "mean": np.asarray(r.mean().as_quat(canonical=True)).tolist(),
        "canonical_scalar_first": np.asarray(r.as_quat(True, True)).tolist(),
        "from_euler_XYZ_deg": np.asarray(Rotation.from_euler(
            "XYZ", inp["euler_angles"], degrees=True).as_quat()).tolist(),
        "from_euler_zx": np.asarray(Rotation.from_euler(
            "zx", inp["euler_angles"][:, :2]).as_quat()).tolist(),
    }
    for seq in ("xyz", "ZYX", "xzx", "YXY", "zyx"):
        out["rotation"][f"euler_{seq}"] = np.asarray(r.as_euler(seq)).tolist()
        out["rotation"][f"euler_degenerate_{seq}"] = np.asarray(d.as_euler(seq)).tolist()
    slerp = Slerp.init(inp["times"], r)
    out["slerp"] = np.asarray(slerp(inp["slerp_times"]).as_quat(canonical=True)).tolist()
    return out


if __name__ == "__main__":
    data = record()
    text = json.dumps(data, allow_nan=True)
    OUT.write_text(text)
    print(f"{len(text) / 1024:.0f} KB -> {OUT}")
