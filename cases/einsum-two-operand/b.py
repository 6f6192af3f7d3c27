"""Control: the same two-operand einsum with opt_einsum on (the default)."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import attention_scores

attention_scores()
