"""PaddleClas-style evaluation entry: the trainer's --test-only."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.argv.append("--test-only")

import train  # noqa: E402

train.main()
