"""Runtime: loading compiled modules, simulation, the numeric reference and the CLI."""
