"""Settings: YAML files parsed once at the edge into frozen dataclasses passed down."""
