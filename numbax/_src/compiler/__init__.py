"""numbax's compiler: jaxprs to Numba-compiled programs (api.py: compile). The package imports
nothing itself, so its modules import one another without cycles through it."""
