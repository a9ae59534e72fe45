"""Sans-I/O provider dialects: ``receive(message) -> events``, ``send(command) -> messages``."""
