"""numbax.nn: activations, softmax family, one_hot, attention; initializers submodule."""
from numbax._src.nn.attention import *  # noqa: F403
from numbax._src.nn.functions import *  # noqa: F403
from numbax.nn import initializers  # noqa: F401
