"""numbax.ad_checkpoint: what jax.checkpoint saves (policies, checkpoint_name, the policies'
answers) and print_saved_residuals to see it. checkpoint/remat themselves are numbax.checkpoint
and numbax.remat, as in JAX 0.10 (which removed them from this module)."""
from numbax._src.checkpoint_policies import (  # noqa: F401
    Offloadable,
    Recompute,
    Saveable,
    checkpoint_name,
    checkpoint_policies,
)
from numbax._src.saved_residuals import print_saved_residuals  # noqa: F401

__all__ = ["Offloadable", "Recompute", "Saveable", "checkpoint_name", "checkpoint_policies",
           "print_saved_residuals"]
