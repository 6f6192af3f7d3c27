"""``python -m magneton.recorders`` (``magneton recorders``): the registered
recorders, whether each can run here and why not, and what each records."""

import sys

from magneton.recorders import registry

sys.exit(registry.main())
