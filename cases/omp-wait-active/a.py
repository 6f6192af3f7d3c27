"""Wasteful: OMP_WAIT_POLICY=ACTIVE, set before torch is imported, keeps libgomp's worker threads
busy-waiting between parallel regions, so the worker burns CPU while it waits for requests."""
import os, sys
os.environ["OMP_WAIT_POLICY"] = "ACTIVE"  # "keep the OpenMP team hot" tuning
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import serve

serve()
