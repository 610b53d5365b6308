"""A suite whose modules define one name twice, as installed packages do side by side (two ``_UNSET``
sentinels, two ``HTTPError`` classes) and whose module named ``logging`` sits beside the standard
library's: what a standalone script must keep apart in its one namespace."""
