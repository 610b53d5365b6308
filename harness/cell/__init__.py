"""Cell side: runs inside one Paddle environment (a nox venv or a container).

Imports ``paddle``; the host side must never import this package.
"""
