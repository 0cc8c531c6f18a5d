"""Jinja2 templates of the generated modules (package data)."""
