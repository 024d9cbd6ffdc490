"""JAX's sharding API on numbax's virtual devices: meshes, partition specs, shardings, sharded
arrays, explicit-sharding rules and jit on sharded arguments (parallel/ runs the blocks)."""
