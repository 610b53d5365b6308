"""Planted model suites for the fork server's preload: packages a family's factories import."""
