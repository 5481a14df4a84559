"""What runs cost: the price table (``models.py``, its admin), the responses' usage read and priced (``costs.py``)."""
