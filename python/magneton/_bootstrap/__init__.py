"""Directory put first on PYTHONPATH by `magneton record`; holds sitecustomize."""
