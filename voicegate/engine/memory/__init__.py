"""Memory: declarations (``memory.yml``), the ``context.memory`` rules, and durable stores."""
