"""The command line: builds the object graph explicitly and holds no business logic."""
