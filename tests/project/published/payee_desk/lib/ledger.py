"""In-memory bank data the tools read (stands in for a backend)."""

ACCOUNTS = {
    "C-100": [
        {"id": "CHK-1", "label": "Everyday checking", "balance": 1250.75},
        {"id": "SAV-2", "label": "Rainy-day savings", "balance": 8800.0},
    ]
}
PAYEES = {"C-100": {"alice smith", "bob jones"}}
