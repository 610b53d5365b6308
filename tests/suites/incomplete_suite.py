"""A suite whose code imports a package its family does not install (as ppsci imports pandas)."""

import harness_planted_absent_package  # noqa: F401  - installed nowhere
