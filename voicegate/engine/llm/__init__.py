"""The language-model port and its implementations (scripted now; providers in issue 6)."""
