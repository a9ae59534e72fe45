"""The dialogue engine: projects, skills, memory, tools and the streaming turn interface."""
