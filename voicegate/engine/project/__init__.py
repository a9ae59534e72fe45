"""Agent projects: the folder layout of the contract, loaded into a :class:`Project`."""
