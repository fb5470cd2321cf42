"""Headless command line (never imports Qt). Each subcommand module exposes ``add_parser(subparsers)``."""
