"""The CPU backend: loop nests, row groups and control flow rendered as @njit modules, and the
Python driver that runs them (import-light: runtime/ holds what generated code imports)."""
