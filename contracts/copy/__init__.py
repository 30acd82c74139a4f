"""Cast contracts: the seed's copy tests, scoped by the platform registry."""
