"""Settings of a run: options and ini resolved, the platform registry, layouts, packaged suites, YAML read safely."""
