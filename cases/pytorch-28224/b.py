"""Efficient: wait on a blocking CUDA event; the thread sleeps in the driver."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import run

run(blocking_wait=True)
