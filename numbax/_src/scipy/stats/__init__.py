"""numbax.scipy.stats' distributions and summaries, one module per family."""
