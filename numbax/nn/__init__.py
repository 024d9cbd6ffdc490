"""numbax.nn: neural-network activations, softmax family, one_hot; initializers submodule."""
from numbax._src.nn.functions import *  # noqa: F403
from numbax.nn import initializers  # noqa: F401
