"""The differential fuzzer (issue 21): random programs over the primitive set, run eagerly, under
jit, grad, vmap and jvp, and checked against each other, numpy and finite differences.

ops.py        the operation table: numbax and numpy forms, dtypes, exactness, parameters
programs.py   programs as data (inputs, nodes, control flow), their two interpreters and the
              Python source of a standalone reproducer
strategies.py hypothesis strategies drawing well-typed programs
oracles.py    the checks and their tolerances
test_fuzz.py  the CI slice (fixed seed) and the regression tests of what the fuzzer found
benchmarks/fuzz_soak.py runs thousands of programs and prints hypothesis-shrunk reproducers.
"""
